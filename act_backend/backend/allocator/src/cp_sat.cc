// cp_sat.cc: SolveCpModelWithParameters, declared here because the OR-Tools
// builds we link (the PyPI wheel in particular) ship the library without
// its C++ headers; the C API only needs protobuf bytes in and out.
#include "cp_sat.h"

#include <climits>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include <protozero/exception.hpp>
#include <protozero/pbf_reader.hpp>

extern "C" {
// Part of OR-Tools' CP-SAT C API (ortools/sat/c_api/cp_solver_c.h). The
// response is allocated with malloc and owned by the caller.
void SolveCpModelWithParameters(const void *creq, int creq_len, const void *cparams,
                                int cparams_len, void **cres, int *cres_len);
}

namespace act_alloc {
namespace {

namespace response_field {  // CpSolverResponse
constexpr protozero::pbf_tag_type kStatus = 1;
constexpr protozero::pbf_tag_type kSolution = 2;
constexpr protozero::pbf_tag_type kObjectiveValue = 3;
constexpr protozero::pbf_tag_type kWallTime = 15;
constexpr protozero::pbf_tag_type kDeterministicTime = 17;
constexpr protozero::pbf_tag_type kSolutionInfo = 20;
}  // namespace response_field

SolverStatus status_from(std::int32_t value) {
    if (value < static_cast<std::int32_t>(SolverStatus::kUnknown) ||
        value > static_cast<std::int32_t>(SolverStatus::kOptimal)) {
        throw std::runtime_error("CP-SAT answered with unknown status " + std::to_string(value));
    }
    return static_cast<SolverStatus>(value);
}

struct FreeDeleter {
    void operator()(void *pointer) const { std::free(pointer); }
};

}  // namespace

SolverResponse decode_response(std::string_view bytes) {
    SolverResponse response;
    try {
        protozero::pbf_reader reader{bytes.data(), bytes.size()};
        while (reader.next()) {
            switch (reader.tag()) {
            case response_field::kStatus:
                response.status = status_from(reader.get_enum());
                break;
            case response_field::kSolution:
                // Packed is what proto3 writes, but a parser must accept both.
                if (reader.wire_type() == protozero::pbf_wire_type::length_delimited) {
                    for (std::int64_t value : reader.get_packed_int64()) {
                        response.solution.push_back(value);
                    }
                } else {
                    response.solution.push_back(reader.get_int64());
                }
                break;
            case response_field::kObjectiveValue:
                response.objective_value = reader.get_double();
                break;
            case response_field::kWallTime:
                response.wall_time = reader.get_double();
                break;
            case response_field::kDeterministicTime:
                response.deterministic_time = reader.get_double();
                break;
            case response_field::kSolutionInfo:
                response.solution_info = reader.get_string();
                break;
            default:
                reader.skip();
            }
        }
    } catch (const protozero::exception &error) {
        throw std::runtime_error(std::string("CP-SAT response could not be decoded: ") +
                                 error.what());
    }
    return response;
}

SolverResponse solve(const std::string &model, const std::string &parameters) {
    if (model.size() > static_cast<std::size_t>(INT_MAX) ||
        parameters.size() > static_cast<std::size_t>(INT_MAX)) {
        throw std::runtime_error("CP-SAT model of " + std::to_string(model.size()) +
                                 " bytes exceeds the 2 GiB the C API accepts");
    }
    void *raw = nullptr;
    int length = 0;
    SolveCpModelWithParameters(model.data(), static_cast<int>(model.size()), parameters.data(),
                               static_cast<int>(parameters.size()), &raw, &length);
    const std::unique_ptr<void, FreeDeleter> owned{raw};
    if (length < 0 || (raw == nullptr && length != 0)) {
        throw std::runtime_error("CP-SAT returned no response");
    }
    return decode_response(
        std::string_view{static_cast<const char *>(raw), static_cast<std::size_t>(length)});
}

}  // namespace act_alloc
