// act_alloc_cli.cc: runs the allocator on a request file and prints the
// response, for tests and for debugging a request the backend wrote.
//
//   act-alloc-cli [--dump-model FILE] [REQUEST.json | -]
//
// With no request path, or "-", the request is read from stdin. Exit status
// 0 means a response was printed (whatever its status); 2 means the command
// line or a file was wrong.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "allocator.h"

namespace {

int usage(const std::string &problem) {
    std::cerr << "act-alloc-cli: " << problem << "\n"
              << "usage: act-alloc-cli [--dump-model FILE] [REQUEST.json | -]\n";
    return 2;
}

bool read_all(std::istream &in, std::string &text) {
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
    return !in.bad();
}

}  // namespace

int main(int argc, char **argv) {
    std::string request_path = "-";
    std::string model_path;
    bool have_request = false;
    for (int i = 1; i < argc; ++i) {
        const std::string argument = argv[i];
        if (argument == "--dump-model") {
            if (i + 1 == argc) {
                return usage("--dump-model needs a file name");
            }
            model_path = argv[++i];
        } else if (argument == "-h" || argument == "--help") {
            std::cout << "usage: act-alloc-cli [--dump-model FILE] [REQUEST.json | -]\n";
            return 0;
        } else if (!have_request && (argument == "-" || argument.rfind('-', 0) != 0)) {
            request_path = argument;
            have_request = true;
        } else {
            return usage("unexpected argument '" + argument + "'");
        }
    }

    std::string request;
    if (request_path == "-") {
        if (!read_all(std::cin, request)) {
            return usage("cannot read the request from stdin");
        }
    } else {
        std::ifstream file(request_path, std::ios::binary);
        if (!file || !read_all(file, request)) {
            return usage("cannot read request file '" + request_path + "'");
        }
    }

    std::string model;
    const act_alloc::Response response =
        act_alloc::allocate(request, model_path.empty() ? nullptr : &model);
    if (!model_path.empty()) {
        std::ofstream out(model_path, std::ios::binary);
        out.write(model.data(), static_cast<std::streamsize>(model.size()));
        if (!out) {
            return usage("cannot write the model to '" + model_path + "'");
        }
    }
    std::cout << act_alloc::to_json(response) << "\n";
    return 0;
}
