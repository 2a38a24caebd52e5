// `ncclscope numerics`: NaN/Inf/subnormal/zero counts of the buffers of the collective each
// communicator is in, where those buffers are in host memory (pinned, or saved in a core).
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "snapshot/numerics_document.h"
#include "snapshot/numerics_text.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc::cli {
namespace {

const char kNumericsUsage[] =
    "usage: ncclscope numerics (--core CORE | CORE | --pid PID) [options]\n"
    "  --exe PATH, --sysroot DIR, --solib-search-path D:D, --profile-path D:D   as for state\n"
    "  --all                      every launched collective not yet reclaimed, not only the newest\n"
    "  --full-read-bytes N        read buffers up to N bytes whole (default 67108864), else sample\n"
    "  --sample-chunks N          chunks read from a larger buffer (default 256)\n"
    "  --chunk-bytes N            bytes per chunk (default 65536)\n"
    "  --json                     print the ncclscope.numerics/1 document\n"
    "Device memory is not in a core or readable from another process: run nccl-numerics under\n"
    "cuda-gdb for buffers allocated with cudaMalloc.\n";

uint64_t positive_number(const ParsedOptions& options, const std::string& name, uint64_t fallback) {
  if (!options.has(name)) return fallback;
  uint64_t value = 0;
  if (!parse_u64(options.value(name), &value) || value == 0)
    throw UsageError(name + " " + options.value(name) + ": not a positive number");
  return value;
}

}  // namespace

int run_numerics_command(const std::vector<std::string>& args) {
  return run_guarded("numerics", nullptr, [&]() -> int {
    ParsedOptions options = parse_options(
        args, {"--core", "--pid", "--exe", "--sysroot", "--solib-search-path", "--profile-path",
               "--full-read-bytes", "--sample-chunks", "--chunk-bytes"},
        {"--json", "--force-mismatch", "--freeze", "--all", "--help", "-h"});
    if (options.has("--help") || options.has("-h")) {
      std::fputs(kNumericsUsage, stdout);
      return kExitOk;
    }
    NumericsRequest request;
    request.target = target_request_from_options(options);
    request.target.progress = false;
    request.options.all_launched = options.has("--all");
    NumericsLimits& limits = request.options.limits;
    limits.full_read_bytes = positive_number(options, "--full-read-bytes", limits.full_read_bytes);
    limits.sample_chunks = positive_number(options, "--sample-chunks", limits.sample_chunks);
    limits.chunk_bytes = positive_number(options, "--chunk-bytes", limits.chunk_bytes);
    nlohmann::json document = build_numerics_document(request);
    if (options.has("--json")) std::cout << document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else std::cout << render_numerics_text(document);
    return numerics_exit_code(document);
  });
}

}  // namespace nsc::cli
