// formulate.cc: Request -> CpModel (see formulate.h for the model).
#include "formulate.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <vector>

namespace act_alloc {
namespace {

std::int32_t index32(std::size_t index) { return static_cast<std::int32_t>(index); }

// Sums the coefficients of repeated variables and drops zero terms, in
// variable order, so the model does not depend on how terms were listed.
std::map<std::size_t, std::int64_t> merge(const std::vector<Term> &terms) {
    std::map<std::size_t, std::int64_t> merged;
    for (const Term &term : terms) {
        merged[term.var] += term.coef;
    }
    for (auto it = merged.begin(); it != merged.end();) {
        it = it->second == 0 ? merged.erase(it) : std::next(it);
    }
    return merged;
}

std::string range(std::int64_t lo, std::int64_t hi) {
    return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

// Narrows each block's start variable to [0, capacity - size]; returns why
// a domain became empty, if one did.
std::optional<std::string> restrict_domains(const Request &request, CpModel &model) {
    for (std::size_t i = 0; i < request.blocks.size(); ++i) {
        const Block &block = request.blocks[i];
        IntVar &domain = model.variables[block.start];
        const std::int64_t highest = block.capacity
                                         ? *block.capacity - block.size
                                         : std::numeric_limits<std::int64_t>::max();
        const std::int64_t lo = std::max<std::int64_t>(domain.lo, 0);
        const std::int64_t hi = std::min(domain.hi, highest);
        if (lo > hi) {
            const Variable &variable = request.variables[block.start];
            std::string message = "blocks[" + std::to_string(i) + "] (size " +
                                  std::to_string(block.size) + " in buffer \"" + block.buffer +
                                  "\"";
            message += block.capacity ? " of capacity " + std::to_string(*block.capacity) : "";
            message += ") has no valid start: variable \"" + variable.name + "\" allows " +
                       range(domain.lo, domain.hi);
            if (domain.lo != variable.lo || domain.hi != variable.hi) {
                message += " (narrowed by other blocks from " + range(variable.lo, variable.hi) +
                           ")";
            }
            if (!block.capacity) {
                message += " but the block needs a start >= 0";
            } else if (highest < 0) {
                message += " but the block is larger than the buffer";
            } else {
                message += " but the block needs " + range(0, highest);
            }
            return message;
        }
        domain.lo = lo;
        domain.hi = hi;
    }
    return std::nullopt;
}

std::optional<std::string> add_equalities(const Request &request, CpModel &model) {
    for (std::size_t i = 0; i < request.equalities.size(); ++i) {
        const Equality &equality = request.equalities[i];
        const auto merged = merge(equality.terms);
        if (merged.empty()) {
            if (equality.constant != 0) {
                return "equalities[" + std::to_string(i) + "] has no variable left and states " +
                       std::to_string(equality.constant) + " == 0";
            }
            continue;
        }
        LinearConstraint linear;
        for (const auto &[var, coef] : merged) {
            linear.vars.push_back(index32(var));
            linear.coeffs.push_back(coef);
        }
        linear.lo = -equality.constant;
        linear.hi = -equality.constant;
        model.linear.push_back(std::move(linear));
    }
    return std::nullopt;
}

LinearExpr constant(std::int64_t value) {
    LinearExpr expression;
    expression.offset = value;
    return expression;
}

LinearExpr variable_plus(std::size_t var, std::int64_t offset) {
    LinearExpr expression;
    expression.vars.push_back(index32(var));
    expression.coeffs.push_back(1);
    expression.offset = offset;
    return expression;
}

void add_boxes(const Request &request, CpModel &model) {
    // std::map: buffers in name order, so the model is the same whatever
    // order the blocks arrive in across buffers.
    std::map<std::string, NoOverlap2D> by_buffer;
    for (const Block &block : request.blocks) {
        // A block that holds no address, or is never live, cannot collide.
        if (block.size == 0 || block.time_begin == block.time_end) {
            continue;
        }
        const auto time = index32(model.intervals.size());
        model.intervals.push_back({constant(block.time_begin),
                                   constant(block.time_end - block.time_begin),
                                   constant(block.time_end)});
        const auto address = index32(model.intervals.size());
        model.intervals.push_back({variable_plus(block.start, 0), constant(block.size),
                                   variable_plus(block.start, block.size)});
        NoOverlap2D &boxes = by_buffer[block.buffer];
        boxes.x_intervals.push_back(time);
        boxes.y_intervals.push_back(address);
    }
    for (auto &[buffer, boxes] : by_buffer) {
        if (boxes.x_intervals.size() > 1) {
            model.no_overlap_2d.push_back(std::move(boxes));
        }
    }
}

}  // namespace

Formulation formulate(const Request &request) {
    Formulation formulation;
    CpModel &model = formulation.model;
    for (const Variable &variable : request.variables) {
        model.variables.push_back({variable.lo, variable.hi});
    }
    formulation.infeasible = restrict_domains(request, model);
    if (formulation.infeasible) {
        return formulation;
    }
    formulation.infeasible = add_equalities(request, model);
    if (formulation.infeasible) {
        return formulation;
    }
    add_boxes(request, model);
    for (const auto &[var, coef] : merge(request.objective)) {
        model.objective.vars.push_back(index32(var));
        model.objective.coeffs.push_back(coef);
    }
    return formulation;
}

}  // namespace act_alloc
