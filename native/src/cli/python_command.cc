// `ncclscope py-stacks`: the Python stack of every thread of one process (core
// or live; live reads do not stop the process unless --freeze), optionally
// merged with the native stacks (--native: cores, or live with a brief ptrace stop).
// The ncclscope.python/1 document and its text come from snapshot/python_document.cc
// and snapshot/python_text.cc; this file parses options and prints.
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "snapshot/python_document.h"
#include "snapshot/python_text.h"

namespace nsc::cli {
namespace {

const char kPyStacksUsage[] =
    "usage: ncclscope py-stacks (--core CORE | CORE | --pid PID) [options]\n"
    "  --exe PATH, --sysroot DIR, --solib-search-path D:D   where the interpreter's file is (cores)\n"
    "  --profile-path D:D         extra directories of layout profiles (<build-id>.json)\n"
    "  --freeze                   live: stop all threads while reading; always resumed\n"
    "  --native                   merge with native stacks (live: stops each thread for a few ms)\n"
    "  --json                     print an ncclscope.python/1 document\n";

}  // namespace

int run_py_stacks_command(const std::vector<std::string>& args) {
  return run_guarded("py-stacks", nullptr, [&]() -> int {
    ParsedOptions options = parse_options(
        args, {"--core", "--pid", "--exe", "--sysroot", "--solib-search-path", "--profile-path"},
        {"--json", "--freeze", "--native", "--help", "-h"});
    if (options.has("--help") || options.has("-h")) {
      std::fputs(kPyStacksUsage, stdout);
      return kExitOk;
    }
    PythonRequest request;
    request.target = target_request_from_options(options);
    request.merge_native = options.has("--native");
    nlohmann::json document = build_python_document(request);
    if (options.has("--json")) std::cout << document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else std::cout << render_python_text(document);
    return python_exit_code(document) == 0 ? kExitOk : kExitPartial;
  });
}

}  // namespace nsc::cli
