// test_answers.cc: how each CP-SAT outcome is answered, driven with made-up
// solver responses so that outcomes the solver gives rarely (the wall-clock
// safety net, a placement that breaks the request) are covered too.
#include "allocator.h"
#include "check.h"

using act_alloc::SolverResponse;
using act_alloc::SolverStatus;

namespace {

// Two blocks of 64 rows of a 128-row buffer, live together.
act_alloc::Request two_tiles() {
    return act_alloc::parse_request(R"({
        "variables": [{"name": "a", "lo": 0, "hi": 127}, {"name": "b", "lo": 0, "hi": 127}],
        "blocks": [{"buffer": "d1", "capacity": 128, "start": 0, "size": 64, "time": [0, 4]},
                   {"buffer": "d1", "capacity": 128, "start": 1, "size": 64, "time": [2, 6]}]})");
}

SolverResponse solver_said(SolverStatus status, std::vector<std::int64_t> solution,
                           double wall_time) {
    SolverResponse response;
    response.status = status;
    response.solution = std::move(solution);
    response.wall_time = wall_time;
    return response;
}

act_alloc::Response answer_to(const SolverResponse &solved) {
    act_alloc::SolveParameters parameters;
    parameters.max_deterministic_time = 10.0;
    parameters.max_time_in_seconds = 60.0;
    return act_alloc::from_solver(two_tiles(), solved, parameters);
}

}  // namespace

ACT_TEST(each_solver_outcome_has_its_answer) {
    auto r = answer_to(solver_said(SolverStatus::kOptimal, {64, 0}, 0.1));
    CHECK_EQ(r.status, std::string("solved"));
    CHECK_EQ(r.values, (std::vector<std::int64_t>{64, 0}));
    CHECK_EQ(r.message, std::string("optimal"));

    r = answer_to(solver_said(SolverStatus::kFeasible, {0, 64}, 3.0));
    CHECK_EQ(r.status, std::string("solved"));
    CHECK_EQ(r.message,
             std::string("feasible; max_deterministic_time 10.0 ran out before optimality was "
                         "proven"));

    r = answer_to(solver_said(SolverStatus::kUnknown, {}, 3.0));
    CHECK_EQ(r.status, std::string("out_of_budget"));
    CHECK_EQ(r.message, std::string("no placement found within max_deterministic_time 10.0"));

    r = answer_to(solver_said(SolverStatus::kInfeasible, {}, 0.1));
    CHECK_EQ(r.status, std::string("infeasible"));
    CHECK(r.values.empty());

    SolverResponse refused = solver_said(SolverStatus::kModelInvalid, {}, 0.0);
    refused.solution_info = "var #0 has no domain";
    r = answer_to(refused);
    CHECK_EQ(r.status, std::string("invalid"));
    CHECK_CONTAINS(r.message, "a bug in the allocator): var #0 has no domain");
}

ACT_TEST(a_wall_clock_stop_says_the_answer_may_differ) {
    auto r = answer_to(solver_said(SolverStatus::kFeasible, {0, 64}, 60.02));
    CHECK_EQ(r.status, std::string("solved"));
    CHECK_CONTAINS(r.message, "the 60.0 s wall-clock safety net stopped the search");
    CHECK_CONTAINS(r.message, "may differ between runs");

    r = answer_to(solver_said(SolverStatus::kUnknown, {}, 59.8));
    CHECK_EQ(r.status, std::string("out_of_budget"));
    CHECK_CONTAINS(r.message, "no placement found before the 60.0 s wall-clock safety net");
}

ACT_TEST(a_placement_that_breaks_the_request_is_never_solved) {
    // Overlapping tiles: what CP-SAT would return had a constraint been
    // encoded wrongly and ignored.
    auto r = answer_to(solver_said(SolverStatus::kOptimal, {0, 32}, 0.1));
    CHECK_EQ(r.status, std::string("invalid"));
    CHECK(r.values.empty());
    CHECK_CONTAINS(r.message, "blocks[0] and blocks[1] are live together and overlap");

    r = answer_to(solver_said(SolverStatus::kOptimal, {100, 0}, 0.1));
    CHECK_EQ(r.status, std::string("invalid"));
    CHECK_CONTAINS(r.message, "blocks[0] at 100 leaves buffer \"d1\"");

    r = answer_to(solver_said(SolverStatus::kFeasible, {0}, 0.1));
    CHECK_EQ(r.status, std::string("invalid"));
    CHECK_CONTAINS(r.message, "1 values for 2 variables");
}
