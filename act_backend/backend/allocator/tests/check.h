// check.h: the unit tests' harness. ACT_TEST(name) registers a case; the
// CHECK macros record a failure with file:line and let the case go on, so
// one run reports every broken expectation of a case.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace act_test {

using TestFunction = void (*)();

bool register_test(const char *name, TestFunction function);
void record_failure(const char *file, int line, const std::string &what);

template <typename T> std::string show(const T &value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

template <typename T> std::string show(const std::vector<T> &values) {
    std::string text = "[";
    for (std::size_t i = 0; i < values.size(); ++i) {
        text += (i == 0 ? "" : ", ") + show(values[i]);
    }
    return text + "]";
}

}  // namespace act_test

#define ACT_TEST(name)                                                                     \
    static void name();                                                                    \
    [[maybe_unused]] static const bool name##_registered = act_test::register_test(#name, name); \
    static void name()

#define CHECK(condition)                                                                   \
    do {                                                                                   \
        if (!(condition)) {                                                                \
            act_test::record_failure(__FILE__, __LINE__, "CHECK(" #condition ")");         \
        }                                                                                  \
    } while (0)

#define CHECK_EQ(actual, expected)                                                         \
    do {                                                                                   \
        const auto &act_actual_ = (actual);                                                \
        const auto &act_expected_ = (expected);                                            \
        if (!(act_actual_ == act_expected_)) {                                             \
            act_test::record_failure(__FILE__, __LINE__,                                   \
                                     "CHECK_EQ(" #actual ", " #expected "): " +            \
                                         act_test::show(act_actual_) + " != " +            \
                                         act_test::show(act_expected_));                   \
        }                                                                                  \
    } while (0)

#define CHECK_CONTAINS(text, part)                                                         \
    do {                                                                                   \
        const std::string act_text_ = (text);                                              \
        const std::string act_part_ = (part);                                              \
        if (act_text_.find(act_part_) == std::string::npos) {                              \
            act_test::record_failure(__FILE__, __LINE__,                                   \
                                     "\"" + act_text_ + "\" does not contain \"" +         \
                                         act_part_ + "\"");                                \
        }                                                                                  \
    } while (0)
