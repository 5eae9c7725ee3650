// request.cc: JSON -> Request, with a message naming the field for every
// refusal. Unknown fields are refused too, so that a typo in the backend
// (say "sizes" for "size") is reported instead of silently ignored.
#include "request.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

namespace act_alloc {
namespace {

using json = nlohmann::json;

// The solver's linear sums must stay well below 2^63; 2^62 leaves CP-SAT
// room for its own intermediate arithmetic.
constexpr __int128 kMaxLinearMagnitude = static_cast<__int128>(1) << 62;

// A JSON value as it appears in a message, shortened to about 60 bytes
// without cutting a UTF-8 sequence in two.
std::string show(const json &value) {
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    constexpr std::size_t kLimit = 60;
    if (text.size() > kLimit) {
        std::size_t cut = kLimit - 3;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
            --cut;
        }
        text = text.substr(0, cut) + "...";
    }
    return text;
}

[[noreturn]] void fail(const std::string &path, const std::string &what) {
    throw InvalidRequest(path + ": " + what);
}

std::string item(const std::string &path, std::size_t index) {
    return path + "[" + std::to_string(index) + "]";
}

std::string field(const std::string &path, const char *key) {
    return path + "." + key;
}

const json &expect_object(const json &value, const std::string &path,
                          std::initializer_list<const char *> allowed) {
    if (!value.is_object()) {
        fail(path, "expected a JSON object, found " + show(value));
    }
    for (const auto &entry : value.items()) {
        bool known = false;
        for (const char *key : allowed) {
            known = known || entry.key() == key;
        }
        if (!known) {
            std::string accepted;
            for (const char *key : allowed) {
                accepted += accepted.empty() ? "" : ", ";
                accepted += key;
            }
            fail(path, "unknown field \"" + entry.key() + "\" (accepted: " + accepted + ")");
        }
    }
    return value;
}

const json &require(const json &object, const std::string &path, const char *key) {
    auto found = object.find(key);
    if (found == object.end()) {
        fail(field(path, key), "missing");
    }
    return *found;
}

const json &expect_array(const json &value, const std::string &path) {
    if (!value.is_array()) {
        fail(path, "expected a JSON array, found " + show(value));
    }
    return value;
}

std::int64_t integer(const json &value, const std::string &path, std::int64_t lo,
                     std::int64_t hi) {
    const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    if (!value.is_number_integer()) {
        fail(path, "expected an integer in " + range + ", found " + show(value));
    }
    // nlohmann/json keeps integers above INT64_MAX as unsigned; none is in range.
    const bool fits = !value.is_number_unsigned() ||
                      value.get<std::uint64_t>() <=
                          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    const std::int64_t number = fits ? value.get<std::int64_t>() : 0;
    if (!fits || number < lo || number > hi) {
        fail(path, "expected an integer in " + range + ", found " + show(value));
    }
    return number;
}

std::size_t variable_index(const json &value, const std::string &path, std::size_t count) {
    if (count == 0) {
        fail(path, "refers to a variable, but the request has no variables");
    }
    return static_cast<std::size_t>(integer(value, path, 0, static_cast<std::int64_t>(count) - 1));
}

Term term(const json &value, const std::string &path, std::size_t variable_count) {
    if (!value.is_array() || value.size() != 2) {
        fail(path, "expected a [variable, coefficient] pair, found " + show(value));
    }
    Term parsed;
    parsed.var = variable_index(value[0], item(path, 0), variable_count);
    parsed.coef = integer(value[1], item(path, 1), -kMaxMagnitude, kMaxMagnitude);
    return parsed;
}

std::vector<Term> terms(const json &value, const std::string &path, std::size_t variable_count) {
    std::vector<Term> parsed;
    expect_array(value, path);
    for (std::size_t i = 0; i < value.size(); ++i) {
        parsed.push_back(term(value[i], item(path, i), variable_count));
    }
    return parsed;
}

// Refuses a linear sum that could leave the range CP-SAT accepts.
void check_magnitude(const std::vector<Term> &sum, std::int64_t constant,
                     const std::vector<Variable> &variables, const std::string &path) {
    __int128 bound = constant < 0 ? -static_cast<__int128>(constant) : constant;
    for (const Term &t : sum) {
        const Variable &v = variables[t.var];
        // At least 1, so that coefficients summed over a fixed-zero variable
        // (merged when the model is built) stay bounded too.
        const __int128 reach = std::max({std::abs(v.lo), std::abs(v.hi), std::int64_t{1}});
        bound += static_cast<__int128>(std::abs(t.coef)) * reach;
        if (bound > kMaxLinearMagnitude) {
            fail(path, "its value can reach beyond 2^62 over the variable domains, which "
                       "the solver refuses; use smaller coefficients or domains");
        }
    }
}

Variable variable(const json &value, const std::string &path) {
    expect_object(value, path, {"name", "lo", "hi"});
    Variable parsed;
    const json &name = require(value, path, "name");
    if (!name.is_string()) {
        fail(field(path, "name"), "expected a string, found " + show(name));
    }
    parsed.name = name.get<std::string>();
    parsed.lo = integer(require(value, path, "lo"), field(path, "lo"), -kMaxMagnitude,
                        kMaxMagnitude);
    parsed.hi = integer(require(value, path, "hi"), field(path, "hi"), -kMaxMagnitude,
                        kMaxMagnitude);
    if (parsed.lo > parsed.hi) {
        fail(path, "variable \"" + parsed.name + "\" has lo " + std::to_string(parsed.lo) +
                       " above hi " + std::to_string(parsed.hi));
    }
    return parsed;
}

Equality equality(const json &value, const std::string &path,
                  const std::vector<Variable> &variables) {
    expect_object(value, path, {"terms", "const"});
    Equality parsed;
    parsed.terms = terms(require(value, path, "terms"), field(path, "terms"), variables.size());
    parsed.constant = integer(require(value, path, "const"), field(path, "const"),
                              -kMaxMagnitude, kMaxMagnitude);
    check_magnitude(parsed.terms, parsed.constant, variables, path);
    return parsed;
}

Block block(const json &value, const std::string &path, std::size_t variable_count) {
    expect_object(value, path, {"buffer", "capacity", "start", "size", "time"});
    Block parsed;
    const json &buffer = require(value, path, "buffer");
    if (!buffer.is_string() || buffer.get<std::string>().empty()) {
        fail(field(path, "buffer"), "expected a buffer name, found " + show(buffer));
    }
    parsed.buffer = buffer.get<std::string>();
    const json &capacity = require(value, path, "capacity");
    if (!capacity.is_null()) {
        parsed.capacity = integer(capacity, field(path, "capacity"), 0, kMaxMagnitude);
    }
    parsed.start = variable_index(require(value, path, "start"), field(path, "start"),
                                  variable_count);
    parsed.size = integer(require(value, path, "size"), field(path, "size"), 0, kMaxMagnitude);
    const std::string time_path = field(path, "time");
    const json &time = require(value, path, "time");
    if (!time.is_array() || time.size() != 2) {
        fail(time_path, "expected a [begin, end] pair, found " + show(time));
    }
    parsed.time_begin = integer(time[0], item(time_path, 0), -kMaxMagnitude, kMaxMagnitude);
    parsed.time_end = integer(time[1], item(time_path, 1), -kMaxMagnitude, kMaxMagnitude);
    if (parsed.time_end < parsed.time_begin) {
        fail(time_path, "ends at " + std::to_string(parsed.time_end) + " before it begins at " +
                            std::to_string(parsed.time_begin));
    }
    return parsed;
}

// Every block of one buffer must state the same capacity: a disagreement
// means the backend described the buffer twice, differently.
void check_capacities(const std::vector<Block> &blocks) {
    std::map<std::string, std::size_t> first_block;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        auto [it, inserted] = first_block.emplace(blocks[i].buffer, i);
        if (inserted) {
            continue;
        }
        const Block &first = blocks[it->second];
        if (first.capacity != blocks[i].capacity) {
            auto show_capacity = [](const std::optional<std::int64_t> &c) {
                return c ? std::to_string(*c) : std::string("null");
            };
            fail(field(item("blocks", i), "capacity"),
                 show_capacity(blocks[i].capacity) + " differs from " +
                     show_capacity(first.capacity) + " given for buffer \"" + first.buffer +
                     "\" by blocks[" + std::to_string(it->second) + "]");
        }
    }
}

Limits limits(const json &value) {
    const std::string path = "limits";
    expect_object(value, path, {"max_deterministic_time", "random_seed"});
    Limits parsed;
    if (auto found = value.find("max_deterministic_time"); found != value.end()) {
        const std::string time_path = field(path, "max_deterministic_time");
        if (!found->is_number() || !std::isfinite(found->get<double>()) ||
            found->get<double>() <= 0.0) {
            fail(time_path, "expected a finite number > 0, found " + show(*found));
        }
        parsed.max_deterministic_time = found->get<double>();
    }
    if (auto found = value.find("random_seed"); found != value.end()) {
        parsed.random_seed = static_cast<std::int32_t>(
            integer(*found, field(path, "random_seed"), std::numeric_limits<std::int32_t>::min(),
                    std::numeric_limits<std::int32_t>::max()));
    }
    return parsed;
}

}  // namespace

Request parse_request(std::string_view json_text) {
    json document;
    try {
        document = json::parse(json_text.begin(), json_text.end());
    } catch (const json::parse_error &error) {
        throw InvalidRequest(std::string("request: not valid JSON: ") + error.what());
    }
    expect_object(document, "request",
                  {"variables", "equalities", "blocks", "objective", "limits"});

    Request request;
    const json &variables = expect_array(require(document, "request", "variables"), "variables");
    for (std::size_t i = 0; i < variables.size(); ++i) {
        request.variables.push_back(variable(variables[i], item("variables", i)));
    }
    const std::size_t count = request.variables.size();
    if (count > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
        fail("variables", "more variables than the solver can index");
    }
    if (auto found = document.find("equalities"); found != document.end()) {
        expect_array(*found, "equalities");
        for (std::size_t i = 0; i < found->size(); ++i) {
            request.equalities.push_back(
                equality((*found)[i], item("equalities", i), request.variables));
        }
    }
    if (auto found = document.find("blocks"); found != document.end()) {
        expect_array(*found, "blocks");
        for (std::size_t i = 0; i < found->size(); ++i) {
            request.blocks.push_back(block((*found)[i], item("blocks", i), count));
        }
        check_capacities(request.blocks);
    }
    if (auto found = document.find("objective"); found != document.end()) {
        request.objective = terms(*found, "objective", count);
        check_magnitude(request.objective, 0, request.variables, "objective");
    }
    if (auto found = document.find("limits"); found != document.end()) {
        request.limits = limits(*found);
    }
    return request;
}

}  // namespace act_alloc
