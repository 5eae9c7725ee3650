// test_allocate.cc: placement problems solved end to end through
// act_alloc::allocate(), each answer checked against the rules directly.
#include <nlohmann/json.hpp>

#include "allocator.h"
#include "check.h"

using json = nlohmann::json;

namespace {

json variable(const std::string &name, std::int64_t lo, std::int64_t hi) {
    return {{"name", name}, {"lo", lo}, {"hi", hi}};
}

json block(const std::string &buffer, json capacity, int start, std::int64_t size,
           std::int64_t begin, std::int64_t end) {
    return {{"buffer", buffer}, {"capacity", capacity}, {"start", start},
            {"size", size},     {"time", {begin, end}}};
}

act_alloc::Response run(const json &request) { return act_alloc::allocate(request.dump()); }

bool disjoint(std::int64_t a, std::int64_t size_a, std::int64_t b, std::int64_t size_b) {
    return a + size_a <= b || b + size_b <= a;
}

}  // namespace

ACT_TEST(live_blocks_get_disjoint_addresses) {
    const json request = {
        {"variables", {variable("a", 0, 127), variable("b", 0, 127), variable("c", 0, 127)}},
        {"blocks",
         {block("d1", 128, 0, 64, 0, 4), block("d1", 128, 1, 32, 2, 6),
          block("d1", 128, 2, 32, 3, 5)}},
    };
    const auto response = run(request);
    CHECK_EQ(response.status, std::string("solved"));
    CHECK_EQ(response.values.size(), std::size_t{3});
    if (response.values.size() == 3) {
        const auto &v = response.values;
        CHECK(v[0] >= 0 && v[0] + 64 <= 128);
        CHECK(v[1] >= 0 && v[1] + 32 <= 128);
        CHECK(v[2] >= 0 && v[2] + 32 <= 128);
        CHECK(disjoint(v[0], 64, v[1], 32));
        CHECK(disjoint(v[0], 64, v[2], 32));
        CHECK(disjoint(v[1], 32, v[2], 32));
    }
}

ACT_TEST(blocks_live_at_different_times_share_addresses) {
    // [0, 4) and [4, 8) do not overlap (half-open), so both fit at 0 in a
    // buffer that holds only one of them, and minimising puts both there.
    const json request = {
        {"variables", {variable("a", 0, 127), variable("b", 0, 127)}},
        {"blocks", {block("d1", 128, 0, 128, 0, 4), block("d1", 128, 1, 128, 4, 8)}},
        {"objective", {{0, 1}, {1, 1}}},
    };
    const auto response = run(request);
    CHECK_EQ(response.status, std::string("solved"));
    CHECK_EQ(response.values, (std::vector<std::int64_t>{0, 0}));
}

ACT_TEST(live_blocks_beyond_capacity_are_infeasible) {
    const json request = {
        {"variables", {variable("a", 0, 127), variable("b", 0, 127)}},
        {"blocks", {block("d1", 128, 0, 64, 0, 5), block("d1", 128, 1, 96, 3, 9)}},
    };
    const auto response = run(request);
    CHECK_EQ(response.status, std::string("infeasible"));
    CHECK(response.values.empty());
    CHECK_CONTAINS(response.message, "buffer \"d1\" has capacity 128");
    CHECK_CONTAINS(response.message, "at time 3 need 160");
}

ACT_TEST(equalities_that_force_an_overlap_are_infeasible) {
    // The sizes fit (64 + 64 <= 128), but a == b puts both blocks at the
    // same address while they are live together: only the search finds it.
    const json request = {
        {"variables", {variable("a", 0, 127), variable("b", 0, 127)}},
        {"equalities", {{{"terms", {{0, 1}, {1, -1}}}, {"const", 0}}}},
        {"blocks", {block("d1", 128, 0, 64, 0, 5), block("d1", 128, 1, 64, 3, 9)}},
    };
    const auto response = run(request);
    CHECK_EQ(response.status, std::string("infeasible"));
    CHECK_CONTAINS(response.message, "no placement satisfies");
}

ACT_TEST(a_block_larger_than_its_buffer_is_infeasible) {
    const json request = {
        {"variables", {variable("i3.addr_out", 0, 127)}},
        {"blocks", {block("d2", 64, 0, 65, 0, 1)}},
    };
    const auto response = run(request);
    CHECK_EQ(response.status, std::string("infeasible"));
    CHECK_CONTAINS(response.message, "blocks[0] (size 65 in buffer \"d2\" of capacity 64)");
    CHECK_CONTAINS(response.message, "\"i3.addr_out\"");
}

ACT_TEST(equalities_are_honoured) {
    // b = a + 64 and c = 2 * a (written with a repeated term); a is fixed
    // to 16 by its own equality, leaving exactly one answer.
    const json request = {
        {"variables", {variable("a", 0, 1000), variable("b", 0, 1000), variable("c", 0, 1000)}},
        {"equalities",
         {{{"terms", {{1, 1}, {0, -1}}}, {"const", -64}},
          {{"terms", {{2, 1}, {0, -1}, {0, -1}}}, {"const", 0}},
          {{"terms", {{0, 1}}}, {"const", -16}}}},
    };
    const auto response = run(request);
    CHECK_EQ(response.status, std::string("solved"));
    CHECK_EQ(response.values, (std::vector<std::int64_t>{16, 80, 32}));
}

ACT_TEST(objective_is_minimised) {
    // Three blocks live together; the least sum of starts stacks them from
    // the smallest up: 0 + 10 + 30.
    const json request = {
        {"variables", {variable("big", 0, 99), variable("small", 0, 99), variable("mid", 0, 99)}},
        {"blocks",
         {block("d1", 100, 0, 30, 0, 9), block("d1", 100, 1, 10, 0, 9),
          block("d1", 100, 2, 20, 0, 9)}},
        {"objective", {{0, 1}, {1, 1}, {2, 1}}},
    };
    const auto response = run(request);
    CHECK_EQ(response.status, std::string("solved"));
    CHECK_EQ(response.message, std::string("optimal"));
    CHECK_EQ(response.values, (std::vector<std::int64_t>{30, 0, 10}));
}

ACT_TEST(unbounded_buffer_has_no_upper_limit) {
    // HBM (capacity null): only start >= 0 and the non-overlap hold.
    const json request = {
        {"variables", {variable("x", -50, 1 << 20), variable("y", 0, 1 << 20)}},
        {"blocks", {block("d0", nullptr, 0, 4096, 0, 3), block("d0", nullptr, 1, 4096, 1, 2)}},
        {"objective", {{0, -1}, {1, 1}}},
    };
    const auto response = run(request);
    CHECK_EQ(response.status, std::string("solved"));
    CHECK_EQ(response.values, (std::vector<std::int64_t>{1 << 20, 0}));
}

ACT_TEST(empty_blocks_are_ignored) {
    // A zero-size block and a never-live block collide with nothing, but a
    // zero-size block still has to start inside its buffer.
    const json request = {
        {"variables", {variable("a", 0, 127), variable("b", 0, 127), variable("c", 0, 200)}},
        {"blocks",
         {block("d1", 128, 0, 128, 0, 9), block("d1", 128, 1, 128, 4, 4),
          block("d1", 128, 2, 0, 0, 9)}},
        {"objective", {{2, -1}}},
    };
    const auto response = run(request);
    CHECK_EQ(response.status, std::string("solved"));
    CHECK_EQ(response.values.size(), std::size_t{3});
    if (response.values.size() == 3) {
        CHECK_EQ(response.values[0], 0);
        CHECK_EQ(response.values[2], 128);
    }
}

namespace {

// 24 blocks crowded into a few time steps, weighted sum of starts: hard
// enough that a small deterministic budget ends the search early.
json crowded_request(double budget) {
    json variables = json::array();
    json blocks = json::array();
    json objective = json::array();
    for (int i = 0; i < 24; ++i) {
        variables.push_back(variable("v" + std::to_string(i), 0, 4096));
        blocks.push_back(block("d1", 4096, i, 64 + 32 * (i % 5), i % 7, i % 7 + 3 + i % 4));
        objective.push_back({i, 1 + i % 3});
    }
    return {{"variables", variables},
            {"blocks", blocks},
            {"objective", objective},
            {"limits", {{"max_deterministic_time", budget}, {"random_seed", 3}}}};
}

}  // namespace

ACT_TEST(same_request_gives_same_response) {
    // The budget runs out before optimality is proven: where the search
    // stops must still not depend on the machine or the run.
    const json request = crowded_request(0.2);
    const auto first = act_alloc::to_json(run(request));
    const auto second = act_alloc::to_json(run(request));
    CHECK_CONTAINS(first, "\"status\":\"solved\"");
    CHECK_CONTAINS(first, "ran out before optimality was proven");
    CHECK_EQ(first, second);
}

ACT_TEST(a_spent_budget_is_not_infeasibility) {
    const auto response = run(crowded_request(1e-6));
    CHECK_EQ(response.status, std::string("out_of_budget"));
    CHECK(response.values.empty());
    CHECK_CONTAINS(response.message, "no placement found within max_deterministic_time 1e-06");
}
