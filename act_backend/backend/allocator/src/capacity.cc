// capacity.cc: the live-size sweep of capacity.h.
#include "capacity.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace act_alloc {
namespace {

// Live totals are kept in 128 bits: thousands of blocks of up to 2^52
// addresses each can exceed int64.
using Wide = __int128;

std::string wide_to_string(Wide value) {
    if (value == 0) {
        return "0";
    }
    const bool negative = value < 0;
    std::string digits;
    while (value != 0) {
        const int digit = static_cast<int>(value % 10);
        digits.push_back(static_cast<char>('0' + (negative ? -digit : digit)));
        value /= 10;
    }
    if (negative) {
        digits.push_back('-');
    }
    std::reverse(digits.begin(), digits.end());
    return digits;
}

// The first time at which the blocks live in one buffer need more than
// `capacity`, and how much they need then.
struct Overflow {
    std::int64_t time = 0;
    Wide total = 0;
};

std::optional<Overflow> first_overflow(const Request &request,
                                       const std::vector<std::size_t> &blocks,
                                       std::int64_t capacity) {
    // Events (time, +size at a begin / -size at an end). A block live over
    // [begin, end) counts from its begin to its end exclusive, so all events
    // of one time are applied before the total is compared.
    std::vector<std::pair<std::int64_t, std::int64_t>> events;
    for (std::size_t index : blocks) {
        const Block &block = request.blocks[index];
        events.emplace_back(block.time_begin, block.size);
        events.emplace_back(block.time_end, -block.size);
    }
    std::sort(events.begin(), events.end());
    Wide total = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
        total += events[i].second;
        const bool last_of_time = i + 1 == events.size() || events[i + 1].first != events[i].first;
        if (last_of_time && total > capacity) {
            return Overflow{events[i].first, total};
        }
    }
    return std::nullopt;
}

std::string describe(const Request &request, const std::string &buffer,
                     const std::vector<std::size_t> &blocks, std::int64_t capacity,
                     const Overflow &overflow) {
    std::string live;
    std::size_t count = 0;
    for (std::size_t index : blocks) {
        const Block &block = request.blocks[index];
        if (block.time_begin <= overflow.time && overflow.time < block.time_end) {
            live += (live.empty() ? "" : ", ") + std::to_string(index) + " (size " +
                    std::to_string(block.size) + ")";
            ++count;
        }
    }
    return "buffer \"" + buffer + "\" has capacity " + std::to_string(capacity) + " but the " +
           std::to_string(count) + " blocks live at time " + std::to_string(overflow.time) +
           " need " + wide_to_string(overflow.total) + " together: blocks " + live;
}

}  // namespace

std::optional<std::string> capacity_conflict(const Request &request) {
    std::map<std::string, std::vector<std::size_t>> by_buffer;
    for (std::size_t i = 0; i < request.blocks.size(); ++i) {
        const Block &block = request.blocks[i];
        if (block.capacity && block.size > 0 && block.time_begin < block.time_end) {
            by_buffer[block.buffer].push_back(i);
        }
    }
    for (const auto &[buffer, blocks] : by_buffer) {
        const std::int64_t capacity = *request.blocks[blocks.front()].capacity;
        if (const auto overflow = first_overflow(request, blocks, capacity)) {
            return describe(request, buffer, blocks, capacity, *overflow);
        }
    }
    return std::nullopt;
}

}  // namespace act_alloc
