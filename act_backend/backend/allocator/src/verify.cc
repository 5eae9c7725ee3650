// verify.cc: domains, equalities, capacity and non-overlap, checked
// directly on the values (see verify.h).
#include "verify.h"

#include <map>

namespace act_alloc {
namespace {

std::string at(const char *list, std::size_t index) {
    return std::string(list) + "[" + std::to_string(index) + "]";
}

std::optional<std::string> check_domains(const Request &request,
                                         const std::vector<std::int64_t> &values) {
    for (std::size_t i = 0; i < request.variables.size(); ++i) {
        const Variable &variable = request.variables[i];
        if (values[i] < variable.lo || values[i] > variable.hi) {
            return "variable \"" + variable.name + "\" = " + std::to_string(values[i]) +
                   " lies outside [" + std::to_string(variable.lo) + ", " +
                   std::to_string(variable.hi) + "]";
        }
    }
    return std::nullopt;
}

std::optional<std::string> check_equalities(const Request &request,
                                            const std::vector<std::int64_t> &values) {
    for (std::size_t i = 0; i < request.equalities.size(); ++i) {
        const Equality &equality = request.equalities[i];
        __int128 sum = equality.constant;
        for (const Term &term : equality.terms) {
            sum += static_cast<__int128>(term.coef) * values[term.var];
        }
        if (sum != 0) {
            return at("equalities", i) + " does not hold";
        }
    }
    return std::nullopt;
}

std::optional<std::string> check_capacity(const Request &request,
                                          const std::vector<std::int64_t> &values) {
    for (std::size_t i = 0; i < request.blocks.size(); ++i) {
        const Block &block = request.blocks[i];
        const std::int64_t start = values[block.start];
        if (start < 0 || (block.capacity && start > *block.capacity - block.size)) {
            return at("blocks", i) + " at " + std::to_string(start) + " leaves buffer \"" +
                   block.buffer + "\"";
        }
    }
    return std::nullopt;
}

// Whether the half-open ranges share a point (an empty range shares none).
bool overlap(std::int64_t begin_a, std::int64_t end_a, std::int64_t begin_b,
             std::int64_t end_b) {
    return begin_a < end_a && begin_b < end_b && begin_a < end_b && begin_b < end_a;
}

std::optional<std::string> check_overlap(const Request &request,
                                         const std::vector<std::int64_t> &values) {
    std::map<std::string, std::vector<std::size_t>> by_buffer;
    for (std::size_t i = 0; i < request.blocks.size(); ++i) {
        by_buffer[request.blocks[i].buffer].push_back(i);
    }
    for (const auto &[buffer, blocks] : by_buffer) {
        for (std::size_t a = 0; a < blocks.size(); ++a) {
            for (std::size_t b = a + 1; b < blocks.size(); ++b) {
                const Block &first = request.blocks[blocks[a]];
                const Block &second = request.blocks[blocks[b]];
                const std::int64_t first_start = values[first.start];
                const std::int64_t second_start = values[second.start];
                if (overlap(first.time_begin, first.time_end, second.time_begin,
                            second.time_end) &&
                    overlap(first_start, first_start + first.size, second_start,
                            second_start + second.size)) {
                    return at("blocks", blocks[a]) + " and " + at("blocks", blocks[b]) +
                           " are live together and overlap in buffer \"" + buffer + "\"";
                }
            }
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> find_violation(const Request &request,
                                          const std::vector<std::int64_t> &values) {
    if (values.size() != request.variables.size()) {
        return std::to_string(values.size()) + " values for " +
               std::to_string(request.variables.size()) + " variables";
    }
    for (auto check : {check_domains, check_equalities, check_capacity, check_overlap}) {
        if (auto violation = check(request, values)) {
            return violation;
        }
    }
    return std::nullopt;
}

}  // namespace act_alloc
