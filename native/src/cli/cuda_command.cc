// `ncclscope cuda-streams` and `ncclscope cuda-ipc`: the flight recorder's
// view of CUDA streams, events and IPC handles in one process (live or core),
// plus, with --nccl, the streams and registrations each communicator holds.
// The ncclscope.cuda/1 document is built by snapshot/cuda_document.cc and rendered by
// snapshot/cuda_text.cc; this file parses options and prints.
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "snapshot/cuda_document.h"
#include "snapshot/cuda_text.h"

namespace nsc::cli {
namespace {

const char kCudaStreamsUsage[] =
    "usage: ncclscope cuda-streams (--core CORE | CORE | --pid PID) [options]\n"
    "  per CUDA stream: recent operations, pending event waits, blocked host threads,\n"
    "  and the cross-stream chains behind each blocked thread (needs the flight recorder,\n"
    "  libncclscope-recorder.so, loaded by CUDA_INJECTION64_PATH or NCCL_PROFILER_PLUGIN)\n"
    "  --exe PATH      the executable (cores)\n"
    "  --nccl          also decode the streams/events each NCCL communicator holds\n"
    "  --sysroot DIR, --solib-search-path D:D, --profile-path D:D   as for `ncclscope state` (--nccl)\n"
    "  --records       include the whole merged record timeline (JSON)\n"
    "  --json          print JSON\n";

const char kCudaIpcUsage[] =
    "usage: ncclscope cuda-ipc (--core CORE | CORE | --pid PID) [options]\n"
    "  CUDA IPC and cuMem handles exported and imported, mappings, handles opened and never\n"
    "  closed (from the flight recorder), and, with --nccl, the buffers NCCL registered\n"
    "  --exe PATH      the executable (cores)\n"
    "  --nccl          also decode each communicator's registrations and peer imports\n"
    "  --sysroot DIR, --solib-search-path D:D, --profile-path D:D   as for `ncclscope state` (--nccl)\n"
    "  --json          print JSON\n";

int run_cuda_command(const char* name, const char* usage, const std::vector<std::string>& args,
                     bool streams) {
  return run_guarded(name, nullptr, [&]() -> int {
    ParsedOptions options = parse_options(args, {"--core", "--pid", "--exe", "--sysroot", "--solib-search-path", "--profile-path"},
                                          {"--json", "--nccl", "--records", "--help", "-h"});
    if (options.has("--help") || options.has("-h")) {
      std::fputs(usage, stdout);
      return kExitOk;
    }
    CudaRequest request;
    request.target = target_request_from_options(options);
    request.with_nccl = options.has("--nccl");
    request.include_records = streams && options.has("--records");
    nlohmann::json document = build_cuda_document(request);
    if (options.has("--json"))
      std::cout << document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else
      std::cout << (streams ? render_cuda_streams_text(document) : render_cuda_ipc_text(document));
    return cuda_exit_code(document) == 0 ? kExitOk : kExitPartial;
  });
}

}  // namespace

int run_cuda_streams_command(const std::vector<std::string>& args) {
  return run_cuda_command("cuda-streams", kCudaStreamsUsage, args, true);
}

int run_cuda_ipc_command(const std::vector<std::string>& args) {
  return run_cuda_command("cuda-ipc", kCudaIpcUsage, args, false);
}

}  // namespace nsc::cli
