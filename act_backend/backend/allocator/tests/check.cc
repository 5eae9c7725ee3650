// check.cc: the registry and main() of the unit-test harness.
//
//   act_alloc_tests            runs every case
//   act_alloc_tests NAME...    runs the named cases (what ctest does)
//
// Exit status: 0 all passed, 1 a check failed, 2 an unknown case was named.
#include "check.h"

#include <iostream>
#include <map>

namespace act_test {
namespace {

std::map<std::string, TestFunction> &registry() {
    static std::map<std::string, TestFunction> cases;
    return cases;
}

int failures = 0;

}  // namespace

bool register_test(const char *name, TestFunction function) {
    return registry().emplace(name, function).second;
}

void record_failure(const char *file, int line, const std::string &what) {
    ++failures;
    std::cerr << file << ":" << line << ": " << what << "\n";
}

}  // namespace act_test

int main(int argc, char **argv) {
    auto &cases = act_test::registry();
    std::vector<std::string> selected;
    for (int i = 1; i < argc; ++i) {
        if (cases.count(argv[i]) == 0) {
            std::cerr << "no test case named '" << argv[i] << "'\n";
            return 2;
        }
        selected.emplace_back(argv[i]);
    }
    if (selected.empty()) {
        for (const auto &entry : cases) {
            selected.push_back(entry.first);
        }
    }
    for (const std::string &name : selected) {
        const int before = act_test::failures;
        cases[name]();
        std::cout << (act_test::failures == before ? "ok   " : "FAIL ") << name << "\n";
    }
    return act_test::failures == 0 ? 0 : 1;
}
