// allocator.h: the allocator as a C++ function from request JSON to a
// response. The C entry points (c_api.cc) and the CLI are thin wrappers
// around it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cp_model.h"
#include "cp_sat.h"
#include "request.h"

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

// The protobuf bytes handed to CP-SAT, kept for inspection (act-alloc-cli
// --dump-model / --dump-parameters); empty when no model was built.
struct Encoded {
    std::string model;       // CpModelProto
    std::string parameters;  // SatParameters
};

// Solves the request. Never throws for a bad request or a solver failure:
// those become responses with status "invalid". When `encoded` is given it
// receives what was sent to CP-SAT.
Response allocate(std::string_view request_json, Encoded *encoded = nullptr);

// The response to CP-SAT's answer for `request` solved under `parameters`:
// the status mapped, a solution checked against the request, the stop
// reason said. Part of allocate(), separate so that every answer can be
// tested without making the solver give it.
Response from_solver(const Request &request, const SolverResponse &solved,
                     const SolveParameters &parameters);

// {"status": ..., "values": [...], "message": ...} on one line.
std::string to_json(const Response &response);

}  // namespace act_alloc
