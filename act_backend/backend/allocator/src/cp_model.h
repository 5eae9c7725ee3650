// cp_model.h: a CP-SAT model as plain C++ values, and its wire encoding.
//
// Only the parts of CpModelProto and SatParameters the allocator uses are
// represented. encode_model() / encode_parameters() write the protobuf bytes
// the CP-SAT C API reads; the field numbers live in cp_model.cc only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace act_alloc {

// sum(coeffs[i] * vars[i]) + offset.
struct LinearExpr {
    std::vector<std::int32_t> vars;
    std::vector<std::int64_t> coeffs;
    std::int64_t offset = 0;
};

// An integer variable whose domain is the single range [lo, hi].
struct IntVar {
    std::int64_t lo = 0;
    std::int64_t hi = 0;
};

// lo <= sum(coeffs[i] * vars[i]) <= hi.
struct LinearConstraint {
    std::vector<std::int32_t> vars;
    std::vector<std::int64_t> coeffs;
    std::int64_t lo = 0;
    std::int64_t hi = 0;
};

// The interval [start, end) with end == start + size.
struct Interval {
    LinearExpr start;
    LinearExpr size;
    LinearExpr end;
};

// Boxes x_intervals[i] * y_intervals[i] do not overlap pairwise. The
// entries index CpModel::intervals.
struct NoOverlap2D {
    std::vector<std::int32_t> x_intervals;
    std::vector<std::int32_t> y_intervals;
};

// minimise sum(coeffs[i] * vars[i]).
struct Objective {
    std::vector<std::int32_t> vars;
    std::vector<std::int64_t> coeffs;
};

struct CpModel {
    std::vector<IntVar> variables;
    std::vector<LinearConstraint> linear;
    std::vector<Interval> intervals;
    std::vector<NoOverlap2D> no_overlap_2d;
    Objective objective;  // a satisfaction problem when it has no variable
};

struct SolveParameters {
    double max_deterministic_time = 10.0;
    // A wall-clock safety net only: the deterministic budget is meant to
    // stop the search long before it, so that answers never depend on the
    // machine's speed.
    double max_time_in_seconds = 60.0;
    std::int32_t random_seed = 0;
    std::int32_t num_workers = 1;
    // 2 adds the cuts of the no-overlap constraints to the LP relaxation.
    // Measured on 40 blocks minimising the sum of their starts: the default
    // (1) ran out of a 2 s deterministic budget with a lower bound near 0;
    // 2 proved the optimum in under 0.05 s. Objectives on a single variable
    // (the end of the used memory) are as fast either way.
    std::int32_t linearization_level = 2;
};

// CpModelProto bytes. Constraints are written in the order linear,
// intervals, no_overlap_2d, so interval i is constraint linear.size() + i.
std::string encode_model(const CpModel &model);

// SatParameters bytes.
std::string encode_parameters(const SolveParameters &parameters);

}  // namespace act_alloc
