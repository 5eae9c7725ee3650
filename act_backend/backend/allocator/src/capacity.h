// capacity.h: a quick necessary condition for a placement to exist.
//
// Blocks of one buffer that are live at the same time need disjoint
// address ranges inside [0, capacity), so their sizes must add up to at
// most the capacity. Checking this before the search turns the solver's
// bare "infeasible" into a message that names the buffer, the time and the
// blocks that do not fit.
#pragma once

#include <optional>
#include <string>

#include "request.h"

namespace act_alloc {

// Why the live blocks of some buffer overflow its capacity, if they do.
std::optional<std::string> capacity_conflict(const Request &request);

}  // namespace act_alloc
