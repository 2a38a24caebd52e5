// Real cases for `ncclscope audit` (issue 20 item 2; docs/audit.md): two ranks, one process each,
// that leave NCCL in the states the audit rules name. Run by scripts/device-audit-run.sh.
//
//   nccl_audit_scenarios --rank R --nranks 2 --id-file PATH --mode MODE [--device D] [--count C]
//
// Modes (rank 1 is the rank that leaves the pattern):
//   revoke-no-destroy   rank 1 calls ncclCommRevoke and parks without ncclCommDestroy
//                       -> revoked-comm-not-destroyed (warning) on rank 1
//   destroy-stuck       rank 0 parks; rank 1 launches an AllReduce rank 0 never joins, then
//                       calls ncclCommDestroy, which waits forever for that kernel
//                       -> on rank 1 destroyed-comm-holds-cuda-work (warning) when its
//                          kernel-finish callback is still queued; with one rank per GPU (P2P
//                          transport) ipc-import-from-dead-peer (error) on rank 0; seq-spread
//                          (info) at rank 0
//   peer-exit           rank 1 _exit()s while rank 0's proxy is receiving from it over the
//                       socket transport -> comm-async-error (error) on rank 0 once the proxy
//                       sees the closed connection
//   register-unaligned  both ranks ncclCommRegister a buffer 100 bytes into a cudaMalloc block;
//                       rank 1 then skips an AllReduce -> no registration finding: NCCL itself
//                       rounds the range out to whole pages (the GROUND_TRUTH line says where)
//   abort-stuck         rank 1 queues a kernel that never ends, then its AllReduce behind it on
//                       the same stream, then calls ncclCommAbort: the abort flag cannot stop a
//                       kernel that has not started, and commDestroySync waits for the stream, so
//                       the aborted comm is never finalized or freed -> abort-not-reclaimed
//                       (warning) on rank 1 (init.cc ncclCommAbort -> commReclaim -> commDestroySync)
//   register-leak       rank 1 ncclCommRegister's its receive buffer, never deregisters it, and
//                       destroys the comm while its AllReduce (rank 0 never joins) is stuck: the
//                       comm being destroyed still holds the registration (NCCL frees it only in
//                       commFree) -> destroyed-comm-holds-cuda-work, the registration listed
//
// Each rank prints "GROUND_TRUTH {json}" (what it did, what the audit should say), then
// "HANG_POINT_REACHED" where the capture should find it, and blocks there.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "scenario_checks.h"

namespace {

struct Options {
  int rank = -1, nranks = 2, device = 0;
  size_t count = 1 << 20;
  std::string id_file, mode;
};

struct Job {
  Options opts;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* recv = nullptr;
  int all_reduces = 0, all_gathers = 0;
};

bool parse_options(int argc, char** argv, Options* opts) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i], value = argv[i + 1];
    if (arg == "--rank") opts->rank = atoi(value.c_str());
    else if (arg == "--nranks") opts->nranks = atoi(value.c_str());
    else if (arg == "--device") opts->device = atoi(value.c_str());
    else if (arg == "--count") opts->count = strtoull(value.c_str(), nullptr, 10);
    else if (arg == "--id-file") opts->id_file = value;
    else if (arg == "--mode") opts->mode = value;
    else return false;
  }
  bool known = opts->mode == "revoke-no-destroy" || opts->mode == "destroy-stuck" || opts->mode == "peer-exit" ||
               opts->mode == "register-unaligned" || opts->mode == "abort-stuck" || opts->mode == "register-leak";
  return known && opts->rank >= 0 && opts->rank < opts->nranks && opts->nranks == 2 && !opts->id_file.empty();
}

// Rank 0 writes the id and renames it into place; rank 1 polls for it.
ncclUniqueId exchange_unique_id(const Options& opts) {
  ncclUniqueId id;
  if (opts.rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    std::string tmp = opts.id_file + ".tmp";
    FILE* file = fopen(tmp.c_str(), "wb");
    if (!file || fwrite(&id, sizeof id, 1, file) != 1 || fclose(file) != 0 || rename(tmp.c_str(), opts.id_file.c_str()))
      exit(4);
    return id;
  }
  for (int waited_ms = 0; waited_ms < 60000; waited_ms += 50) {
    FILE* file = fopen(opts.id_file.c_str(), "rb");
    if (file) {
      size_t got = fread(&id, sizeof id, 1, file);
      fclose(file);
      if (got == 1) return id;
    }
    usleep(50 * 1000);
  }
  exit(5);
}

void all_reduce(Job& job) {
  NCCL_CHECK(ncclAllReduce(job.send, job.recv, job.opts.count, ncclFloat, ncclSum, job.comm, job.stream));
  ++job.all_reduces;
}

void all_gather(Job& job) {
  NCCL_CHECK(ncclAllGather(job.send, job.recv, job.opts.count / job.opts.nranks, ncclFloat, job.comm, job.stream));
  ++job.all_gathers;
}

// Three collectives both ranks complete, so the comm has connected and run before the fault.
void good_iterations(Job& job) {
  for (int i = 0; i < 3; ++i) all_reduce(job);
  all_gather(job);
  CUDA_CHECK(cudaStreamSynchronize(job.stream));
}

void ground_truth(const Job& job, const char* expect, const std::string& extra = "") {
  printf("GROUND_TRUTH {\"mode\":\"%s\",\"rank\":%d,\"pid\":%d,\"comm\":\"%p\",\"all_reduces\":%d,"
         "\"all_gathers\":%d,\"expect\":\"%s\"%s}\n",
         job.opts.mode.c_str(), job.opts.rank, (int)getpid(), (void*)job.comm, job.all_reduces, job.all_gathers,
         expect, extra.c_str());
  fflush(stdout);
}

[[noreturn]] void park(const Job& job, const char* where) {
  printf("HANG_POINT_REACHED rank=%d where=%s\n", job.opts.rank, where);
  fflush(stdout);
  for (;;) pause();
}

// Rank 0 in every mode: an AllReduce rank 1 never joins, waited on from the host.
[[noreturn]] void wait_in_all_reduce(Job& job, const char* expect) {
  all_reduce(job);
  ground_truth(job, expect);
  printf("HANG_POINT_REACHED rank=%d where=cudaStreamSynchronize\n", job.opts.rank);
  fflush(stdout);
  cudaStreamSynchronize(job.stream);
  park(job, "pause after the stream returned");
}

void run_revoke_no_destroy(Job& job) {
  if (job.opts.rank == 0) wait_in_all_reduce(job, "waiter");
  sleep(1);
  NCCL_CHECK(ncclCommRevoke(job.comm, NCCL_REVOKE_DEFAULT));
  ground_truth(job, "revoked-comm-not-destroyed");
  park(job, "pause after ncclCommRevoke");
}

void run_destroy_stuck(Job& job) {
  if (job.opts.rank == 0) {
    ground_truth(job, "ipc-import-from-dead-peer with one rank per GPU (P2P)");
    park(job, "pause (never joins rank 1's AllReduce)");
  }
  all_reduce(job);  // rank 0 never joins: this kernel cannot finish
  sleep(1);
  ground_truth(job, "destroyed-comm-holds-cuda-work if its kernel-finish callback is queued");
  printf("HANG_POINT_REACHED rank=%d where=ncclCommDestroy\n", job.opts.rank);
  fflush(stdout);
  ncclCommDestroy(job.comm);  // waits in commDestroySync for the stuck kernel
  park(job, "pause after ncclCommDestroy returned");
}

void run_peer_exit(Job& job) {
  if (job.opts.rank == 0) wait_in_all_reduce(job, "comm-async-error");
  sleep(2);  // rank 0's AllReduce has posted its receives by now
  ground_truth(job, "exits");
  printf("HANG_POINT_REACHED rank=%d where=_exit\n", job.opts.rank);
  fflush(stdout);
  _exit(0);
}

void run_register_unaligned(Job& job) {
  char* base = reinterpret_cast<char*>(job.recv);
  void* handle = nullptr;
  size_t bytes = job.opts.count * sizeof(float) - 4096;
  NCCL_CHECK(ncclCommRegister(job.comm, base + 100, bytes, &handle));
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t begin = reinterpret_cast<uintptr_t>(base + 100) & -static_cast<uintptr_t>(page);
  uintptr_t end = (reinterpret_cast<uintptr_t>(base + 100) + bytes + page - 1) & -static_cast<uintptr_t>(page);
  char extra[160];
  snprintf(extra, sizeof extra, ",\"registered\":\"%p\",\"bytes\":%zu,\"expected_begin\":\"0x%zx\",\"expected_end\":\"0x%zx\"",
           (void*)(base + 100), bytes, (size_t)begin, (size_t)end);
  if (job.opts.rank == 0) {
    all_reduce(job);
    ground_truth(job, "no registration finding", extra);
    printf("HANG_POINT_REACHED rank=%d where=cudaStreamSynchronize\n", job.opts.rank);
    fflush(stdout);
    cudaStreamSynchronize(job.stream);
    park(job, "pause after the stream returned");
  }
  ground_truth(job, "no registration finding", extra);
  park(job, "pause (skipped the AllReduce)");
}

// One thread spinning until the process dies: a compute kernel that never finishes. The flag
// is never set; __nanosleep keeps the spin light on a GPU other ranks share.
__global__ void spin_forever(volatile int* flag) {
  while (*flag == 0) __nanosleep(100000);
}

void run_abort_stuck(Job& job) {
  if (job.opts.rank == 0) wait_in_all_reduce(job, "waiter");
  int* flag = nullptr;
  CUDA_CHECK(cudaMalloc(&flag, sizeof(int)));
  CUDA_CHECK(cudaMemset(flag, 0, sizeof(int)));
  CUDA_CHECK(cudaDeviceSynchronize());
  spin_forever<<<1, 1, 0, job.stream>>>(flag);
  CUDA_CHECK(cudaGetLastError());
  all_reduce(job);  // launched on the host, queued on the GPU behind the spinning kernel
  sleep(1);
  ground_truth(job, "abort-not-reclaimed");
  printf("HANG_POINT_REACHED rank=%d where=ncclCommAbort\n", job.opts.rank);
  fflush(stdout);
  ncclCommAbort(job.comm);  // waits in commDestroySync for the stream that never drains
  park(job, "pause after ncclCommAbort returned");
}

void run_register_leak(Job& job) {
  if (job.opts.rank == 0) {
    ground_truth(job, "waiter");
    park(job, "pause (never joins rank 1's AllReduce)");
  }
  void* handle = nullptr;
  size_t bytes = job.opts.count * sizeof(float);
  NCCL_CHECK(ncclCommRegister(job.comm, job.recv, bytes, &handle));
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t begin = reinterpret_cast<uintptr_t>(job.recv) & -static_cast<uintptr_t>(page);
  uintptr_t end = (reinterpret_cast<uintptr_t>(job.recv) + bytes + page - 1) & -static_cast<uintptr_t>(page);
  char extra[200];
  snprintf(extra, sizeof extra, ",\"registered\":\"%p\",\"handle\":\"%p\",\"bytes\":%zu,\"expected_begin\":\"0x%zx\","
           "\"expected_end\":\"0x%zx\"", (void*)job.recv, handle, bytes, (size_t)begin, (size_t)end);
  all_reduce(job);  // on the registered buffer; rank 0 never joins
  sleep(1);
  ground_truth(job, "destroyed comm still holds the registration", extra);
  printf("HANG_POINT_REACHED rank=%d where=ncclCommDestroy (registration never deregistered)\n", job.opts.rank);
  fflush(stdout);
  ncclCommDestroy(job.comm);  // never returns: the AllReduce kernel waits for rank 0
  park(job, "pause after ncclCommDestroy returned");
}

}  // namespace

int main(int argc, char** argv) {
  Job job;
  if (!parse_options(argc, argv, &job.opts)) {
    fprintf(stderr, "usage: %s --rank R --nranks 2 --id-file PATH --mode "
                    "revoke-no-destroy|destroy-stuck|peer-exit|register-unaligned|abort-stuck|register-leak [--device D] [--count C]\n", argv[0]);
    return 1;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  CUDA_CHECK(cudaSetDevice(job.opts.device));
  ncclUniqueId id = exchange_unique_id(job.opts);
  NCCL_CHECK(ncclCommInitRank(&job.comm, job.opts.nranks, id, job.opts.rank));
  CUDA_CHECK(cudaStreamCreateWithFlags(&job.stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaMalloc(&job.send, job.opts.count * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&job.recv, job.opts.count * sizeof(float)));
  CUDA_CHECK(cudaMemset(job.send, 0, job.opts.count * sizeof(float)));
  CUDA_CHECK(cudaDeviceSynchronize());
  printf("INIT_DONE rank=%d pid=%d comm=%p\n", job.opts.rank, (int)getpid(), (void*)job.comm);
  good_iterations(job);
  if (job.opts.mode == "revoke-no-destroy") run_revoke_no_destroy(job);
  else if (job.opts.mode == "destroy-stuck") run_destroy_stuck(job);
  else if (job.opts.mode == "peer-exit") run_peer_exit(job);
  else if (job.opts.mode == "register-unaligned") run_register_unaligned(job);
  else if (job.opts.mode == "abort-stuck") run_abort_stuck(job);
  else run_register_leak(job);
  return 0;
}
