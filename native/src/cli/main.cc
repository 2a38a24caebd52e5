// ncclscope: decode NCCL state from live processes and core dumps.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <malloc.h>
#include <unistd.h>

#include "cli/commands.h"
#include "util/phase_times.h"

namespace {

const char kUsage[] =
    "usage: ncclscope COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  state    --core CORE | --pid PID [--json]     every NCCL communicator of one process\n"
    "  triage   INPUT... [--json] [--dot FILE]        why a multi-rank job hangs (cores, snapshots, pids)\n"
    "  layout   extract LIB -o FILE | show LIB|FILE   struct layouts of a libnccl build\n"
    "  slice    CORE -o SMALL.core                    keep only what the decoders read\n"
    "  cuda-streams --core CORE | --pid PID           streams/events NCCL holds, flight recorder ops\n"
    "  cuda-ipc     --core CORE | --pid PID           IPC/cuMem handles: exported, imported, leaked\n"
    "  py-stacks    --core CORE | --pid PID           Python stack of every thread (CPython 3.11-3.14)\n"
    "  fr-dump      --core CORE | --pid PID -o F.pkl  PyTorch's flight-recorder dump, read from memory\n"
    "  numerics     --core CORE | --pid PID           NaN/Inf/subnormal counts of the stuck collective's buffers\n"
    "  audit    INPUT... | --pid PID [--json]         named invariants over the decoded state (docs/audit.md)\n"
    "\n"
    "Run 'ncclscope COMMAND --help' for the options of one command.\n"
    "Exit codes: 0 ok, 1 partial (some memory unreadable), 2 bad input, 64 usage.\n";

// A triage of many ranks spends a quarter of its CPU first-touching its heap, a fault per
// 4 KiB page on this kind of VM (docs/triage.md "Scale"). glibc asks for transparent huge pages
// for its heap only when the tunable is set at startup: run again with it, unless the user set
// tunables (and so this is that run). Where exec fails, or glibc or the kernel ignore the
// tunable, the command runs as it is.
void exec_with_huge_page_heap(char** argv) {
  if (std::getenv("GLIBC_TUNABLES") != nullptr) return;
  if (setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("GLIBC_TUNABLES");
}

// glibc keeps freed blocks of up to 160 bytes in "fast bins" and merges them all (malloc_consolidate)
// whenever a larger block is asked for; triage frees millions of small blocks between larger
// allocations (100,000 ranks: a tenth of the main thread's time in that merging, perf). Without
// fast bins a freed block goes to the per-thread cache or is merged once, as it is freed.
void disable_fast_bins() { mallopt(M_MXFAST, 0); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return nsc::cli::kExitUsage;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return nsc::cli::kExitOk;
  }
  if (command == "--version") {
    std::printf("ncclscope %s\n", NCCLSCOPE_VERSION);
    return nsc::cli::kExitOk;
  }
  if (command == "state") {
    int exit_code = nsc::cli::run_state_command(args);
    nsc::print_phase_times(stderr);
    return exit_code;
  }
  if (command == "triage") {
    exec_with_huge_page_heap(argv);
    disable_fast_bins();
    int exit_code = nsc::cli::run_triage_command(args);
    nsc::print_phase_times(stderr);
    return exit_code;
  }
  if (command == "layout") return nsc::cli::run_layout_command(args);
  if (command == "slice") return nsc::cli::run_slice_command(args);
  if (command == "cuda-streams") return nsc::cli::run_cuda_streams_command(args);
  if (command == "cuda-ipc") return nsc::cli::run_cuda_ipc_command(args);
  if (command == "py-stacks") return nsc::cli::run_py_stacks_command(args);
  if (command == "fr-dump") return nsc::cli::run_fr_dump_command(args);
  if (command == "numerics") return nsc::cli::run_numerics_command(args);
  if (command == "audit") return nsc::cli::run_audit_command(args);
  std::fprintf(stderr, "ncclscope: unknown command '%s'\n%s", command.c_str(), kUsage);
  return nsc::cli::kExitUsage;
}
