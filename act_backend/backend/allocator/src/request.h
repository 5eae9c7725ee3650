// request.h: the placement request as validated C++ values.
//
// parse_request() owns every check on the JSON the backend sends: a request
// that passes it can be turned into a CP-SAT model without any arithmetic
// overflowing and without the solver rejecting it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace act_alloc {

// Largest magnitude accepted for any bound, size, time or constant. It keeps
// every sum the model forms far inside int64 (CP-SAT refuses models whose
// linear expressions could overflow).
inline constexpr std::int64_t kMaxMagnitude = std::int64_t{1} << 52;

// One addressing attribute to be chosen, within [lo, hi].
struct Variable {
    std::string name;
    std::int64_t lo = 0;
    std::int64_t hi = 0;
};

// coef * variables[var].
struct Term {
    std::size_t var = 0;
    std::int64_t coef = 0;
};

// sum(terms) + constant == 0.
struct Equality {
    std::vector<Term> terms;
    std::int64_t constant = 0;
};

// A value that lives in `buffer` at [start, start + size) during the
// half-open schedule interval [time_begin, time_end).
struct Block {
    std::string buffer;
    std::optional<std::int64_t> capacity;  // nullopt: unbounded (HBM)
    std::size_t start = 0;                 // index into Request::variables
    std::int64_t size = 0;
    std::int64_t time_begin = 0;
    std::int64_t time_end = 0;
};

// The solver budget. Deterministic time is what decides the answer, so the
// same request gives the same response on any machine.
struct Limits {
    double max_deterministic_time = 10.0;
    std::int32_t random_seed = 0;
};

struct Request {
    std::vector<Variable> variables;
    std::vector<Equality> equalities;
    std::vector<Block> blocks;
    std::vector<Term> objective;  // minimised
    Limits limits;
};

// A request that is not well formed. The message names the field, e.g.
// "blocks[2].size: expected an integer >= 0, found -4".
class InvalidRequest : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Parses and validates a request document; throws InvalidRequest.
Request parse_request(std::string_view json_text);

}  // namespace act_alloc
