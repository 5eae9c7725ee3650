// cp_sat.h: the call into CP-SAT through its C API, and the decoding of the
// CpSolverResponse it returns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace act_alloc {

// CpSolverStatus, with the values of cp_model.proto.
enum class SolverStatus : std::int32_t {
    kUnknown = 0,       // the budget ran out before any answer
    kModelInvalid = 1,  // the model was refused (a bug on our side)
    kFeasible = 2,      // a solution, optimality not proven
    kInfeasible = 3,
    kOptimal = 4,
};

struct SolverResponse {
    SolverStatus status = SolverStatus::kUnknown;
    std::vector<std::int64_t> solution;  // one value per model variable
    double objective_value = 0.0;
    double wall_time = 0.0;           // seconds
    double deterministic_time = 0.0;  // CP-SAT's machine-independent work units
    std::string solution_info;        // the solver's explanation, e.g. why a model is invalid
};

// Decodes CpSolverResponse bytes. Throws std::runtime_error on bytes that
// are not a response.
SolverResponse decode_response(std::string_view bytes);

// Solves an encoded CpModelProto under encoded SatParameters.
SolverResponse solve(const std::string &model, const std::string &parameters);

}  // namespace act_alloc
