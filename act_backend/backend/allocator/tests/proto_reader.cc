// proto_reader.cc: protozero readers for CpModelProto and SatParameters.
#include "proto_reader.h"

#include <protozero/pbf_reader.hpp>

namespace act_test {
namespace {

std::vector<std::int32_t> int32s(protozero::pbf_reader &reader) {
    const auto range = reader.get_packed_int32();
    return {range.begin(), range.end()};
}

std::vector<std::int64_t> int64s(protozero::pbf_reader &reader) {
    const auto range = reader.get_packed_int64();
    return {range.begin(), range.end()};
}

act_alloc::LinearExpr expression(protozero::pbf_reader reader) {
    act_alloc::LinearExpr decoded;
    while (reader.next()) {
        switch (reader.tag()) {
        case 1: decoded.vars = int32s(reader); break;
        case 2: decoded.coeffs = int64s(reader); break;
        case 3: decoded.offset = reader.get_int64(); break;
        default: reader.skip();
        }
    }
    return decoded;
}

act_alloc::LinearConstraint linear(protozero::pbf_reader reader) {
    act_alloc::LinearConstraint decoded;
    while (reader.next()) {
        switch (reader.tag()) {
        case 1: decoded.vars = int32s(reader); break;
        case 2: decoded.coeffs = int64s(reader); break;
        case 3: {
            const auto domain = int64s(reader);
            if (domain.size() == 2) {
                decoded.lo = domain[0];
                decoded.hi = domain[1];
            }
            break;
        }
        default: reader.skip();
        }
    }
    return decoded;
}

act_alloc::Interval interval(protozero::pbf_reader reader) {
    act_alloc::Interval decoded;
    while (reader.next()) {
        switch (reader.tag()) {
        case 4: decoded.start = expression(reader.get_message()); break;
        case 5: decoded.end = expression(reader.get_message()); break;
        case 6: decoded.size = expression(reader.get_message()); break;
        default: reader.skip();
        }
    }
    return decoded;
}

act_alloc::NoOverlap2D boxes(protozero::pbf_reader reader) {
    act_alloc::NoOverlap2D decoded;
    while (reader.next()) {
        switch (reader.tag()) {
        case 1: decoded.x_intervals = int32s(reader); break;
        case 2: decoded.y_intervals = int32s(reader); break;
        default: reader.skip();
        }
    }
    return decoded;
}

DecodedConstraint constraint(protozero::pbf_reader reader) {
    DecodedConstraint decoded;
    decoded.kind = "other";
    while (reader.next()) {
        switch (reader.tag()) {
        case 12:
            decoded.kind = "linear";
            decoded.linear = linear(reader.get_message());
            break;
        case 19:
            decoded.kind = "interval";
            decoded.interval = interval(reader.get_message());
            break;
        case 21:
            decoded.kind = "no_overlap_2d";
            decoded.boxes = boxes(reader.get_message());
            break;
        default: reader.skip();
        }
    }
    return decoded;
}

std::vector<std::int64_t> domain(protozero::pbf_reader reader) {
    std::vector<std::int64_t> decoded;
    while (reader.next()) {
        if (reader.tag() == 2) {
            decoded = int64s(reader);
        } else {
            reader.skip();
        }
    }
    return decoded;
}

act_alloc::Objective objective(protozero::pbf_reader reader) {
    act_alloc::Objective decoded;
    while (reader.next()) {
        switch (reader.tag()) {
        case 1: decoded.vars = int32s(reader); break;
        case 4: decoded.coeffs = int64s(reader); break;
        default: reader.skip();
        }
    }
    return decoded;
}

}  // namespace

DecodedModel decode_model(std::string_view bytes) {
    DecodedModel decoded;
    protozero::pbf_reader reader{bytes.data(), bytes.size()};
    while (reader.next()) {
        switch (reader.tag()) {
        case 2: decoded.domains.push_back(domain(reader.get_message())); break;
        case 3: decoded.constraints.push_back(constraint(reader.get_message())); break;
        case 4:
            decoded.has_objective = true;
            decoded.objective = objective(reader.get_message());
            break;
        default: reader.skip();
        }
    }
    return decoded;
}

DecodedParameters decode_parameters(std::string_view bytes) {
    DecodedParameters decoded;
    protozero::pbf_reader reader{bytes.data(), bytes.size()};
    while (reader.next()) {
        switch (reader.tag()) {
        case 31: decoded.random_seed = reader.get_int32(); break;
        case 36: decoded.max_time_in_seconds = reader.get_double(); break;
        case 67: decoded.max_deterministic_time = reader.get_double(); break;
        case 90: decoded.linearization_level = reader.get_int32(); break;
        case 206: decoded.num_workers = reader.get_int32(); break;
        default:
            ++decoded.unknown_fields;
            reader.skip();
        }
    }
    return decoded;
}

}  // namespace act_test
