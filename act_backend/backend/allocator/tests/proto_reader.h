// proto_reader.h: reads back the bytes cp_model.cc writes, for the
// round-trip tests. It restates the field numbers of cp_model.proto and
// sat_parameters.proto on its own rather than sharing the encoder's, so a
// mistyped number on one side shows up as a difference.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cp_model.h"

namespace act_test {

// One ConstraintProto; `kind` names the oneof case that was set.
struct DecodedConstraint {
    std::string kind;  // "linear", "interval", "no_overlap_2d" or "other"
    act_alloc::LinearConstraint linear;
    act_alloc::Interval interval;
    act_alloc::NoOverlap2D boxes;  // constraint indices, as written
};

struct DecodedModel {
    std::vector<std::vector<std::int64_t>> domains;
    std::vector<DecodedConstraint> constraints;
    act_alloc::Objective objective;
    bool has_objective = false;
};

struct DecodedParameters {
    std::int32_t random_seed = -1;
    double max_time_in_seconds = -1.0;
    double max_deterministic_time = -1.0;
    std::int32_t num_workers = -1;
    std::int32_t linearization_level = -1;
    int unknown_fields = 0;
};

DecodedModel decode_model(std::string_view bytes);
DecodedParameters decode_parameters(std::string_view bytes);

}  // namespace act_test
