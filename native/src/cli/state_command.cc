// `ncclscope state`: every NCCL communicator of one process, decoded.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "snapshot/state_document.h"
#include "snapshot/state_text.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc::cli {
namespace {

const char kStateUsage[] =
    "usage: ncclscope state (--core CORE | CORE | --pid PID) [options]\n"
    "  --exe PATH                 the executable (cores: improves stacks)\n"
    "  --sysroot DIR              prefix for library paths recorded in the core (gdb: set sysroot)\n"
    "  --solib-search-path D:D    directories searched for libraries by name (gdb: solib-search-path)\n"
    "  --profile-path D:D         extra directories of layout profiles (<build-id>.json)\n"
    "  --force-mismatch           use a libnccl whose build-id differs from the target's (warns)\n"
    "  --freeze                   live: stop all threads for a consistent read; always resumed\n"
    "  --no-stacks                do not unwind host threads (cores)\n"
    "  --stacks                   live: unwind host threads too (stops each thread for a few ms)\n"
    "  --json                     print the ncclscope.state/1 document\n";

StateRequest request_from_options(const ParsedOptions& options) {
  StateRequest request = target_request_from_options(options);
  request.stacks = !options.has("--no-stacks");
  request.live_stacks = options.has("--stacks");
  request.progress = isatty(STDERR_FILENO);
  return request;
}

}  // namespace

int run_state_command(const std::vector<std::string>& args) {
  return run_guarded("state", nullptr, [&]() -> int {
    ParsedOptions options = parse_options(
        args, {"--core", "--pid", "--exe", "--sysroot", "--solib-search-path", "--profile-path"},
        {"--json", "--force-mismatch", "--freeze", "--no-stacks", "--stacks", "--help", "-h"});
    if (options.has("--help") || options.has("-h")) {
      std::fputs(kStateUsage, stdout);
      return kExitOk;
    }
    nlohmann::json document = build_state_document(request_from_options(options));
    if (options.has("--json")) std::cout << document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else std::cout << render_state_text(document);
    return state_exit_code(document);
  });
}

}  // namespace nsc::cli
