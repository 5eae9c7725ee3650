// allocator.cc: request -> model -> CP-SAT -> checked response.
#include "allocator.h"

#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "capacity.h"
#include "cp_model.h"
#include "cp_sat.h"
#include "formulate.h"
#include "request.h"
#include "verify.h"

namespace act_alloc {
namespace {

Response answer(const char *status, std::string message,
                std::vector<std::int64_t> values = {}) {
    return Response{status, std::move(values), std::move(message)};
}

std::string show_number(double value) { return nlohmann::json(value).dump(); }

// Whether the wall-clock safety net, not the deterministic budget, ended
// the search: only then may two runs answer differently. The solver stops
// close to the limit, not exactly on it, hence the margin.
bool stopped_by_safety_net(const SolverResponse &solved, const SolveParameters &parameters) {
    return solved.wall_time >= 0.95 * parameters.max_time_in_seconds;
}

}  // namespace

Response from_solver(const Request &request, const SolverResponse &solved,
                     const SolveParameters &parameters) {
    const std::string budget =
        "max_deterministic_time " + show_number(parameters.max_deterministic_time);
    const std::string safety_net = "the " + show_number(parameters.max_time_in_seconds) +
                                   " s wall-clock safety net stopped the search";
    const std::string may_differ = " (this answer may differ between runs)";
    const bool wall_clock = stopped_by_safety_net(solved, parameters);
    switch (solved.status) {
    case SolverStatus::kOptimal:
    case SolverStatus::kFeasible:
        if (auto violation = find_violation(request, solved.solution)) {
            return answer(kInvalid, "CP-SAT returned a placement that breaks the request (" +
                                        *violation +
                                        "); the allocator encoded the model wrongly");
        }
        if (solved.status == SolverStatus::kOptimal) {
            return answer(kSolved, "optimal", solved.solution);
        }
        return answer(kSolved,
                      wall_clock ? "feasible; " + safety_net +
                                       " before optimality was proven" + may_differ
                                 : "feasible; " + budget +
                                       " ran out before optimality was proven",
                      solved.solution);
    case SolverStatus::kInfeasible:
        return answer(kInfeasible, "no placement satisfies the variable domains, the "
                                   "equalities and the non-overlap of live blocks together");
    case SolverStatus::kUnknown:
        return answer(kOutOfBudget, wall_clock ? "no placement found before " + safety_net +
                                                     may_differ
                                               : "no placement found within " + budget);
    case SolverStatus::kModelInvalid:
        return answer(kInvalid, "CP-SAT refused the model the allocator built (a bug in the "
                                "allocator): " +
                                    (solved.solution_info.empty() ? std::string("no reason given")
                                                                  : solved.solution_info));
    }
    return answer(kInvalid, "CP-SAT answered with an unhandled status");
}

Response allocate(std::string_view request_json, Encoded *encoded) {
    if (encoded != nullptr) {
        *encoded = Encoded{};
    }
    try {
        const Request request = parse_request(request_json);
        const Formulation formulation = formulate(request);
        if (formulation.infeasible) {
            return answer(kInfeasible, *formulation.infeasible);
        }
        if (auto conflict = capacity_conflict(request)) {
            return answer(kInfeasible, *conflict);
        }
        SolveParameters parameters;
        parameters.max_deterministic_time = request.limits.max_deterministic_time;
        parameters.random_seed = request.limits.random_seed;
        Encoded sent{encode_model(formulation.model), encode_parameters(parameters)};
        const SolverResponse solved = solve(sent.model, sent.parameters);
        if (encoded != nullptr) {
            *encoded = std::move(sent);
        }
        return from_solver(request, solved, parameters);
    } catch (const InvalidRequest &error) {
        return answer(kInvalid, error.what());
    } catch (const std::bad_alloc &) {
        throw;
    } catch (const std::exception &error) {
        return answer(kInvalid, std::string("allocator failure: ") + error.what());
    }
}

std::string to_json(const Response &response) {
    nlohmann::ordered_json document;
    document["status"] = response.status;
    document["values"] = response.values;
    document["message"] = response.message;
    // replace: a solver message is not guaranteed to be valid UTF-8, and a
    // response must be written whatever it holds.
    return document.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace act_alloc
