// test_request.cc: every malformed request is answered "invalid" with a
// message that names the field at fault.
#include "allocator.h"
#include "check.h"

namespace {

struct Case {
    const char *request;
    const char *message_part;
};

const char *const kVariables = R"("variables": [{"name": "a", "lo": 0, "hi": 127}])";

std::string with_variables(const std::string &rest) {
    return std::string("{") + kVariables + (rest.empty() ? "" : ", " + rest) + "}";
}

}  // namespace

ACT_TEST(malformed_requests_name_the_field) {
    const std::string block_fields = R"("buffer": "d1", "capacity": 128, "start": 0, "size": 4)";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"{\"variables\": [", "request: not valid JSON"},
        {"[1, 2]", "request: expected a JSON object, found [1,2]"},
        {"{}", "request.variables: missing"},
        {R"({"variables": [], "blocks": [], "extra": 1})", "request: unknown field \"extra\""},
        {R"({"variables": {}})", "variables: expected a JSON array"},
        {R"({"variables": [{"name": "a", "lo": 0.5, "hi": 3}]})",
         "variables[0].lo: expected an integer"},
        {R"({"variables": [{"name": "a", "lo": 0, "hi": 18446744073709551615}]})",
         "variables[0].hi: expected an integer in"},
        {R"({"variables": [{"name": 7, "lo": 0, "hi": 3}]})",
         "variables[0].name: expected a string, found 7"},
        {R"({"variables": [{"name": "a", "lo": 9, "hi": 3}]})",
         "variables[0]: variable \"a\" has lo 9 above hi 3"},
        {R"({"variables": [{"name": "a", "lo": 0, "hi": 3, "size": 1}]})",
         "variables[0]: unknown field \"size\" (accepted: name, lo, hi)"},
        {with_variables(R"("equalities": [{"terms": [[0, 1, 2]], "const": 0}])"),
         "equalities[0].terms[0]: expected a [variable, coefficient] pair"},
        {with_variables(R"("equalities": [{"terms": [[1, 1]], "const": 0}])"),
         "equalities[0].terms[0][0]: expected an integer in [0, 0], found 1"},
        {with_variables(R"("equalities": [{"terms": [[0, 1]]}])"), "equalities[0].const: missing"},
        {R"({"variables": [{"name": "a", "lo": 0, "hi": 4503599627370496}],
             "equalities": [{"terms": [[0, 1024], [0, 1024]], "const": 1}]})",
         "equalities[0]: its value can reach beyond 2^62"},
        {with_variables(R"("blocks": [{)" + block_fields + R"(, "time": [5, 2]}])"),
         "blocks[0].time: ends at 2 before it begins at 5"},
        {with_variables(R"("blocks": [{)" + block_fields + R"(, "time": [5]}])"),
         "blocks[0].time: expected a [begin, end] pair, found [5]"},
        {with_variables(R"("blocks": [{"buffer": "", "capacity": 1, "start": 0, "size": 1, "time": [0, 1]}])"),
         "blocks[0].buffer: expected a buffer name"},
        {with_variables(R"("blocks": [{"buffer": "d1", "capacity": 1, "start": 0, "size": -1, "time": [0, 1]}])"),
         "blocks[0].size: expected an integer in [0, "},
        {with_variables(R"("blocks": [{)" + block_fields + R"(, "time": [0, 1]}, {"buffer": "d1", "capacity": 64, "start": 0, "size": 4, "time": [0, 1]}])"),
         "blocks[1].capacity: 64 differs from 128 given for buffer \"d1\" by blocks[0]"},
        {R"({"variables": [], "objective": [[0, 1]]})",
         "objective[0][0]: refers to a variable, but the request has no variables"},
        {with_variables(R"("limits": {"max_deterministic_time": -1})"),
         "limits.max_deterministic_time: expected a finite number > 0, found -1"},
        {with_variables(R"("limits": {"random_seed": 4294967296})"),
         "limits.random_seed: expected an integer in [-2147483648, 2147483647]"},
        {with_variables(R"("limits": {"max_time_in_seconds": 5})"),
         "limits: unknown field \"max_time_in_seconds\""},
    };
    for (const auto &[request, message_part] : cases) {
        const auto response = act_alloc::allocate(request);
        CHECK_EQ(response.status, std::string("invalid"));
        CHECK(response.values.empty());
        CHECK_CONTAINS(response.message, message_part);
    }
}
