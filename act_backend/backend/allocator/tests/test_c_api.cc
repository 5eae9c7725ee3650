// test_c_api.cc: the C entry points of act_alloc.h, as the Rust side uses
// them.
#include <cstring>
#include <string>

#include "act_alloc.h"
#include "check.h"

ACT_TEST(c_api_writes_a_response) {
    const char *request = R"({"variables": [{"name": "a", "lo": 3, "hi": 9}],
                              "objective": [[0, 1]]})";
    char *response = nullptr;
    CHECK_EQ(act_allocate(request, &response), 0);
    CHECK(response != nullptr);
    if (response != nullptr) {
        CHECK_EQ(std::string(response),
                 std::string(R"({"status":"solved","values":[3],"message":"optimal"})"));
    }
    act_allocate_free(response);

    // A malformed request is still a response, not a failure.
    response = nullptr;
    CHECK_EQ(act_allocate("not json", &response), 0);
    CHECK(response != nullptr && std::strstr(response, "\"status\":\"invalid\"") != nullptr);
    act_allocate_free(response);
}

ACT_TEST(c_api_refuses_null_pointers) {
    CHECK_EQ(act_allocate("{}", nullptr), 1);
    char *response = nullptr;
    CHECK_EQ(act_allocate(nullptr, &response), 0);
    CHECK(response != nullptr && std::strstr(response, "request: the pointer is NULL") != nullptr);
    act_allocate_free(response);
    act_allocate_free(nullptr);
}
