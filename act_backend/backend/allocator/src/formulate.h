// formulate.h: the placement request as a CP-SAT model.
//
// Model variable i is request variable i. Each block that occupies memory
// (size > 0) during a non-empty time range becomes a box: a fixed interval
// in time (x) and an interval of `size` addresses from its start variable
// (y). The boxes of one buffer go into one no_overlap_2d constraint, so
// blocks that are live together never share an address. Capacity is the
// start variable's domain: [0, capacity - size].
#pragma once

#include <optional>
#include <string>

#include "cp_model.h"
#include "request.h"

namespace act_alloc {

struct Formulation {
    CpModel model;
    // Set when the request is infeasible before any search (a domain left
    // empty, an equality without variables that does not hold); says why.
    std::optional<std::string> infeasible;
};

Formulation formulate(const Request &request);

}  // namespace act_alloc
