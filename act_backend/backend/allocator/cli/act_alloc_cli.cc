// act_alloc_cli.cc: runs the allocator on a request file and prints the
// response, for tests and for debugging a request the backend wrote.
//
//   act-alloc-cli [--dump-model FILE] [--dump-parameters FILE] [REQUEST.json | -]
//
// With no request path, or "-", the request is read from stdin. The dump
// options write the CpModelProto / SatParameters bytes sent to CP-SAT
// (empty files when the request was answered without a model). Exit status
// 0 means a response was printed, whatever its status; 2 means the command
// line or a file was wrong.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "allocator.h"

namespace {

const char *const kUsage =
    "usage: act-alloc-cli [--dump-model FILE] [--dump-parameters FILE] [REQUEST.json | -]\n";

int usage(const std::string &problem) {
    std::cerr << "act-alloc-cli: " << problem << "\n" << kUsage;
    return 2;
}

bool read_all(std::istream &in, std::string &text) {
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
    return !in.bad();
}

bool write_all(const std::string &path, const std::string &bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char **argv) {
    std::string request_path = "-";
    std::string model_path;
    std::string parameters_path;
    bool have_request = false;
    for (int i = 1; i < argc; ++i) {
        const std::string argument = argv[i];
        if (argument == "--dump-model" || argument == "--dump-parameters") {
            if (i + 1 == argc) {
                return usage(argument + " needs a file name");
            }
            (argument == "--dump-model" ? model_path : parameters_path) = argv[++i];
        } else if (argument == "-h" || argument == "--help") {
            std::cout << kUsage;
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

    act_alloc::Encoded encoded;
    const act_alloc::Response response = act_alloc::allocate(request, &encoded);
    if (!model_path.empty() && !write_all(model_path, encoded.model)) {
        return usage("cannot write the model to '" + model_path + "'");
    }
    if (!parameters_path.empty() && !write_all(parameters_path, encoded.parameters)) {
        return usage("cannot write the parameters to '" + parameters_path + "'");
    }
    std::cout << act_alloc::to_json(response) << "\n";
    return 0;
}
