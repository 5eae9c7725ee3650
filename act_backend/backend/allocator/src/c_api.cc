// c_api.cc: the C entry points of act_alloc.h. No C++ exception crosses
// them: the caller is Rust.
#include "act_alloc.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "allocator.h"

extern "C" int act_allocate(const char *request_json, char **response_json) {
    if (response_json == nullptr) {
        return 1;
    }
    *response_json = nullptr;
    try {
        const act_alloc::Response response =
            request_json != nullptr
                ? act_alloc::allocate(request_json)
                : act_alloc::Response{act_alloc::kInvalid, {}, "request: the pointer is NULL"};
        const std::string text = act_alloc::to_json(response);
        auto *copy = static_cast<char *>(std::malloc(text.size() + 1));
        if (copy == nullptr) {
            return 2;
        }
        std::memcpy(copy, text.c_str(), text.size() + 1);
        *response_json = copy;
        return 0;
    } catch (...) {
        // Only memory exhaustion gets here: allocate() turns every other
        // failure into an "invalid" response.
        return 2;
    }
}

extern "C" void act_allocate_free(char *response_json) { std::free(response_json); }
