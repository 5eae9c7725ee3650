// test_cp_model.cc: the CP-SAT wire format: what cp_model.cc writes reads
// back as the model it was given, and cp_sat.cc decodes what CP-SAT says.
#include <protozero/pbf_writer.hpp>

#include "check.h"
#include "cp_model.h"
#include "cp_sat.h"
#include "proto_reader.h"

using act_alloc::CpModel;
using act_alloc::LinearExpr;

namespace {

LinearExpr expr(std::vector<std::int32_t> vars, std::vector<std::int64_t> coeffs,
                std::int64_t offset) {
    LinearExpr e;
    e.vars = std::move(vars);
    e.coeffs = std::move(coeffs);
    e.offset = offset;
    return e;
}

void check_expr(const LinearExpr &actual, const LinearExpr &expected) {
    CHECK_EQ(actual.vars, expected.vars);
    CHECK_EQ(actual.coeffs, expected.coeffs);
    CHECK_EQ(actual.offset, expected.offset);
}

}  // namespace

ACT_TEST(model_encoding_round_trips) {
    CpModel model;
    model.variables = {{0, 127}, {-5, 64}};
    model.linear.push_back({{0, 1}, {1, -2}, -7, -7});
    // Two boxes: x = time [3, 9) and [5, 6); y = var0 + [0, 64), var1 + [0, 1).
    model.intervals = {
        {expr({}, {}, 3), expr({}, {}, 6), expr({}, {}, 9)},
        {expr({0}, {1}, 0), expr({}, {}, 64), expr({0}, {1}, 64)},
        {expr({}, {}, 5), expr({}, {}, 1), expr({}, {}, 6)},
        {expr({1}, {1}, 0), expr({}, {}, 1), expr({1}, {1}, 1)},
    };
    model.no_overlap_2d.push_back({{0, 2}, {1, 3}});
    model.objective.vars = {1, 0};
    model.objective.coeffs = {3, -1};

    const auto decoded = act_test::decode_model(act_alloc::encode_model(model));

    CHECK_EQ(decoded.domains.size(), std::size_t{2});
    CHECK_EQ(decoded.domains[0], (std::vector<std::int64_t>{0, 127}));
    CHECK_EQ(decoded.domains[1], (std::vector<std::int64_t>{-5, 64}));
    // Order: linear constraints, then intervals, then no_overlap_2d.
    CHECK_EQ(decoded.constraints.size(), std::size_t{6});
    CHECK_EQ(decoded.constraints[0].kind, std::string("linear"));
    CHECK_EQ(decoded.constraints[0].linear.vars, (std::vector<std::int32_t>{0, 1}));
    CHECK_EQ(decoded.constraints[0].linear.coeffs, (std::vector<std::int64_t>{1, -2}));
    CHECK_EQ(decoded.constraints[0].linear.lo, -7);
    CHECK_EQ(decoded.constraints[0].linear.hi, -7);
    for (std::size_t i = 0; i < 4; ++i) {
        const auto &c = decoded.constraints[1 + i];
        CHECK_EQ(c.kind, std::string("interval"));
        check_expr(c.interval.start, model.intervals[i].start);
        check_expr(c.interval.size, model.intervals[i].size);
        check_expr(c.interval.end, model.intervals[i].end);
    }
    // Interval i is constraint 1 + i: the references are shifted past the
    // single linear constraint.
    CHECK_EQ(decoded.constraints[5].kind, std::string("no_overlap_2d"));
    CHECK_EQ(decoded.constraints[5].boxes.x_intervals, (std::vector<std::int32_t>{1, 3}));
    CHECK_EQ(decoded.constraints[5].boxes.y_intervals, (std::vector<std::int32_t>{2, 4}));
    CHECK(decoded.has_objective);
    CHECK_EQ(decoded.objective.vars, (std::vector<std::int32_t>{1, 0}));
    CHECK_EQ(decoded.objective.coeffs, (std::vector<std::int64_t>{3, -1}));
}

ACT_TEST(parameters_encoding_round_trips) {
    act_alloc::SolveParameters parameters;
    parameters.max_deterministic_time = 2.5;
    parameters.random_seed = 17;
    const auto decoded = act_test::decode_parameters(act_alloc::encode_parameters(parameters));
    CHECK_EQ(decoded.random_seed, 17);
    CHECK_EQ(decoded.max_deterministic_time, 2.5);
    CHECK_EQ(decoded.max_time_in_seconds, 60.0);
    CHECK_EQ(decoded.num_workers, 1);
    CHECK_EQ(decoded.linearization_level, 2);
    CHECK_EQ(decoded.unknown_fields, 0);
}

ACT_TEST(solver_response_decodes_packed_and_unpacked_solutions) {
    std::string bytes;
    {
        protozero::pbf_writer writer{bytes};
        writer.add_enum(1, 4);  // OPTIMAL
        const std::int64_t packed[] = {3, -5};
        writer.add_packed_int64(2, std::begin(packed), std::end(packed));
        writer.add_int64(2, 7);  // an unpacked element of the same field
        writer.add_double(3, 2.5);
        writer.add_string(20, "why");
        writer.add_int64(10, 99);  // a field the allocator does not read
    }
    const auto response = act_alloc::decode_response(bytes);
    CHECK(response.status == act_alloc::SolverStatus::kOptimal);
    CHECK_EQ(response.solution, (std::vector<std::int64_t>{3, -5, 7}));
    CHECK_EQ(response.objective_value, 2.5);
    CHECK_EQ(response.solution_info, std::string("why"));
}

ACT_TEST(solver_reports_a_model_it_refuses) {
    CpModel model;
    model.variables = {{5, 1}};  // an empty domain: CP-SAT refuses the model
    const auto response = act_alloc::solve(act_alloc::encode_model(model),
                                           act_alloc::encode_parameters({}));
    CHECK(response.status == act_alloc::SolverStatus::kModelInvalid);
    CHECK(!response.solution_info.empty());
}
