// cp_model.cc: protobuf encoding of CpModel and SolveParameters.
//
// The field numbers below are those of OR-Tools 9.x cp_model.proto and
// sat_parameters.proto. CP-SAT aborts the whole process on bytes it cannot
// parse, so every message is written with protozero's typed adders (packed
// repeated scalars, as proto3 writes them) and nothing else.
#include "cp_model.h"

#include <protozero/pbf_writer.hpp>

namespace act_alloc {
namespace {

namespace model_field {  // CpModelProto
constexpr protozero::pbf_tag_type kVariables = 2;
constexpr protozero::pbf_tag_type kConstraints = 3;
constexpr protozero::pbf_tag_type kObjective = 4;
}  // namespace model_field

namespace variable_field {  // IntegerVariableProto
constexpr protozero::pbf_tag_type kDomain = 2;
}  // namespace variable_field

namespace constraint_field {  // ConstraintProto (a oneof of the kinds below)
constexpr protozero::pbf_tag_type kLinear = 12;
constexpr protozero::pbf_tag_type kInterval = 19;
constexpr protozero::pbf_tag_type kNoOverlap2D = 21;
}  // namespace constraint_field

namespace linear_field {  // LinearConstraintProto
constexpr protozero::pbf_tag_type kVars = 1;
constexpr protozero::pbf_tag_type kCoeffs = 2;
constexpr protozero::pbf_tag_type kDomain = 3;
}  // namespace linear_field

namespace expression_field {  // LinearExpressionProto
constexpr protozero::pbf_tag_type kVars = 1;
constexpr protozero::pbf_tag_type kCoeffs = 2;
constexpr protozero::pbf_tag_type kOffset = 3;
}  // namespace expression_field

namespace interval_field {  // IntervalConstraintProto
constexpr protozero::pbf_tag_type kStart = 4;
constexpr protozero::pbf_tag_type kEnd = 5;
constexpr protozero::pbf_tag_type kSize = 6;
}  // namespace interval_field

namespace no_overlap_2d_field {  // NoOverlap2DConstraintProto
constexpr protozero::pbf_tag_type kXIntervals = 1;
constexpr protozero::pbf_tag_type kYIntervals = 2;
}  // namespace no_overlap_2d_field

namespace objective_field {  // CpObjectiveProto
constexpr protozero::pbf_tag_type kVars = 1;
constexpr protozero::pbf_tag_type kCoeffs = 4;
}  // namespace objective_field

namespace parameter_field {  // SatParameters
constexpr protozero::pbf_tag_type kRandomSeed = 31;
constexpr protozero::pbf_tag_type kMaxTimeInSeconds = 36;
constexpr protozero::pbf_tag_type kMaxDeterministicTime = 67;
constexpr protozero::pbf_tag_type kLinearizationLevel = 90;
constexpr protozero::pbf_tag_type kNumWorkers = 206;
}  // namespace parameter_field

// The offset is always written, even when zero, so that no expression is an
// empty message: protozero drops empty sub-messages, and a dropped interval
// constraint would shift the indices the no_overlap_2d constraints use.
void write_expression(protozero::pbf_writer &parent, protozero::pbf_tag_type tag,
                      const LinearExpr &expression) {
    protozero::pbf_writer writer{parent, tag};
    writer.add_packed_int32(expression_field::kVars, expression.vars.begin(),
                            expression.vars.end());
    writer.add_packed_int64(expression_field::kCoeffs, expression.coeffs.begin(),
                            expression.coeffs.end());
    writer.add_int64(expression_field::kOffset, expression.offset);
}

void write_variable(protozero::pbf_writer &model, const IntVar &variable) {
    protozero::pbf_writer writer{model, model_field::kVariables};
    const std::int64_t domain[] = {variable.lo, variable.hi};
    writer.add_packed_int64(variable_field::kDomain, std::begin(domain), std::end(domain));
}

void write_linear(protozero::pbf_writer &model, const LinearConstraint &linear) {
    protozero::pbf_writer constraint{model, model_field::kConstraints};
    protozero::pbf_writer writer{constraint, constraint_field::kLinear};
    writer.add_packed_int32(linear_field::kVars, linear.vars.begin(), linear.vars.end());
    writer.add_packed_int64(linear_field::kCoeffs, linear.coeffs.begin(), linear.coeffs.end());
    const std::int64_t domain[] = {linear.lo, linear.hi};
    writer.add_packed_int64(linear_field::kDomain, std::begin(domain), std::end(domain));
}

void write_interval(protozero::pbf_writer &model, const Interval &interval) {
    protozero::pbf_writer constraint{model, model_field::kConstraints};
    protozero::pbf_writer writer{constraint, constraint_field::kInterval};
    write_expression(writer, interval_field::kStart, interval.start);
    write_expression(writer, interval_field::kEnd, interval.end);
    write_expression(writer, interval_field::kSize, interval.size);
}

void write_no_overlap_2d(protozero::pbf_writer &model, const NoOverlap2D &boxes,
                         std::int32_t first_interval) {
    std::vector<std::int32_t> x;
    std::vector<std::int32_t> y;
    for (std::int32_t index : boxes.x_intervals) {
        x.push_back(first_interval + index);
    }
    for (std::int32_t index : boxes.y_intervals) {
        y.push_back(first_interval + index);
    }
    protozero::pbf_writer constraint{model, model_field::kConstraints};
    protozero::pbf_writer writer{constraint, constraint_field::kNoOverlap2D};
    writer.add_packed_int32(no_overlap_2d_field::kXIntervals, x.begin(), x.end());
    writer.add_packed_int32(no_overlap_2d_field::kYIntervals, y.begin(), y.end());
}

void write_objective(protozero::pbf_writer &model, const Objective &objective) {
    protozero::pbf_writer writer{model, model_field::kObjective};
    writer.add_packed_int32(objective_field::kVars, objective.vars.begin(),
                            objective.vars.end());
    writer.add_packed_int64(objective_field::kCoeffs, objective.coeffs.begin(),
                            objective.coeffs.end());
}

}  // namespace

std::string encode_model(const CpModel &model) {
    std::string bytes;
    protozero::pbf_writer writer{bytes};
    for (const IntVar &variable : model.variables) {
        write_variable(writer, variable);
    }
    for (const LinearConstraint &linear : model.linear) {
        write_linear(writer, linear);
    }
    for (const Interval &interval : model.intervals) {
        write_interval(writer, interval);
    }
    const auto first_interval = static_cast<std::int32_t>(model.linear.size());
    for (const NoOverlap2D &boxes : model.no_overlap_2d) {
        write_no_overlap_2d(writer, boxes, first_interval);
    }
    if (!model.objective.vars.empty()) {
        write_objective(writer, model.objective);
    }
    return bytes;
}

std::string encode_parameters(const SolveParameters &parameters) {
    std::string bytes;
    protozero::pbf_writer writer{bytes};
    writer.add_int32(parameter_field::kRandomSeed, parameters.random_seed);
    writer.add_double(parameter_field::kMaxTimeInSeconds, parameters.max_time_in_seconds);
    writer.add_double(parameter_field::kMaxDeterministicTime, parameters.max_deterministic_time);
    writer.add_int32(parameter_field::kLinearizationLevel, parameters.linearization_level);
    writer.add_int32(parameter_field::kNumWorkers, parameters.num_workers);
    return bytes;
}

}  // namespace act_alloc
