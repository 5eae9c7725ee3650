// allocator.h: the allocator as a C++ function from request JSON to a
// response. The C entry points (allocate.cc) and the CLI are thin wrappers
// around it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace act_alloc {

// The values of Response::status.
inline constexpr const char *kSolved = "solved";
inline constexpr const char *kInfeasible = "infeasible";
inline constexpr const char *kOutOfBudget = "out_of_budget";
inline constexpr const char *kInvalid = "invalid";

struct Response {
    std::string status;
    std::vector<std::int64_t> values;  // one per request variable when solved, else empty
    std::string message;
};

// Solves the request. Never throws for a bad request or a solver failure:
// those become responses with status "invalid". When `encoded_model` is
// given it receives the CpModelProto bytes handed to CP-SAT (left empty if
// no model was built).
Response allocate(std::string_view request_json, std::string *encoded_model = nullptr);

// {"status": ..., "values": [...], "message": ...} on one line.
std::string to_json(const Response &response);

}  // namespace act_alloc
