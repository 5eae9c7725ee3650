// verify.h: an independent check of a placement against the request.
//
// The allocator runs it on every solution before answering "solved": a
// mistake in the model encoding (a wrong field number makes CP-SAT ignore
// a constraint without complaint) then surfaces as an error instead of as
// two tensors sharing memory in emitted code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "request.h"

namespace act_alloc {

// The first rule `values` (one per request variable) breaks, if any.
std::optional<std::string> find_violation(const Request &request,
                                          const std::vector<std::int64_t> &values);

}  // namespace act_alloc
