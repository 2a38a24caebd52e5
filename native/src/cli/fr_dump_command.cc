// `ncclscope fr-dump`: PyTorch's flight-recorder dump (the pickle of
// torch._C._distributed_c10d._dump_nccl_trace()) of a process that never wrote one, read
// from its memory (live, without stopping it, or from a core), for torchfrtrace.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "snapshot/state_document.h"
#include "torch/fr_pickle.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc::cli {
namespace {

const char kFrDumpUsage[] =
    "usage: ncclscope fr-dump (--core CORE | CORE | --pid PID) -o FILE.pkl [options]\n"
    "  -o, --output FILE          where the pickle goes (\"-\": stdout)\n"
    "  --exe PATH, --sysroot DIR, --solib-search-path D:D, --profile-path D:D   as for `state`\n"
    "  --freeze                   live: stop all threads for a consistent read; always resumed\n"
    "Feed the files of every rank to PyTorch's analyzer: python -m torch.distributed.flight_recorder.fr_trace DIR\n";

void write_output(const std::string& path, const std::string& bytes) {
  if (path == "-") {
    std::cout.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    throw BadInput(path + ": cannot write the dump");
}

}  // namespace

int run_fr_dump_command(const std::vector<std::string>& args) {
  return run_guarded("fr-dump", nullptr, [&]() -> int {
    ParsedOptions options = parse_options(
        args, {"--core", "--pid", "--exe", "--sysroot", "--solib-search-path", "--profile-path", "-o", "--output"},
        {"--freeze", "--help", "-h"});
    if (options.has("--help") || options.has("-h")) {
      std::fputs(kFrDumpUsage, stdout);
      return kExitOk;
    }
    std::string output = options.has("-o") ? options.value("-o") : options.has("--output") ? options.value("--output") : "";
    if (output.empty()) throw UsageError("missing -o FILE");
    StateRequest request = target_request_from_options(options);
    request.stacks = false;
    nlohmann::json document = build_state_document(request);
    write_output(output, flight_recorder_pickle(document.value("torch", nlohmann::json())));
    return kExitOk;
  });
}

}  // namespace nsc::cli
