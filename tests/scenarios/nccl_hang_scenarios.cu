// Real NCCL hang scenarios for the ncclscope corpus (issue 3, item 1).
//
// One process per rank:
//   nccl_hang_scenarios --rank R --nranks N --id-file PATH --mode MODE [--device D]
//                       [--good-iters K] [--count C] [--id-timeout S] [--abort-how abort|exit]
// Rank 0 writes ncclGetUniqueId to PATH; the other ranks poll for it.
// Each rank prints one "GROUND_TRUTH {json}" line with what it expects, then
// "HANG_POINT_REACHED" once it sits where a debugger should find it, and blocks
// (cudaStreamSynchronize in the hung rank, pause() in the culprit).  When an
// operation that was expected to hang completes, it prints "COLLECTIVE_COMPLETED"
// and pauses too, so a core still shows the settled state.
#include <cuda_runtime.h>
#include <nccl.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "scenario_checks.h"

namespace {

const char* const kModes[] = {"skip-collective", "mismatched-collective", "mismatched-count",
                              "p2p-cycle",       "cross-stream",          "split-comm",
                              "abort"};

struct Options {
  int rank = -1;
  int nranks = 2;
  int device = 0;
  int good_iters = 3;
  size_t count = 1 << 20;  // floats per collective
  int id_timeout_s = 120;
  std::string id_file;
  std::string mode;
  std::string abort_how = "abort";  // abort: ncclCommAbort then pause; exit: _exit(0)
};

void usage(const char* argv0) {
  fprintf(stderr,
          "usage: %s --rank R --nranks N --id-file PATH --mode MODE [--device D]\n"
          "          [--good-iters K] [--count C] [--id-timeout S] [--abort-how abort|exit]\n"
          "modes:",
          argv0);
  for (const char* mode : kModes) fprintf(stderr, " %s", mode);
  fprintf(stderr, "\n");
}

bool known_mode(const std::string& mode) {
  for (const char* known : kModes)
    if (mode == known) return true;
  return false;
}

// Returns false (after printing why) when the command line is unusable.
bool parse_options(int argc, char** argv, Options* opts) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return false;
    if (i + 1 >= argc) {
      fprintf(stderr, "missing value for %s\n", arg.c_str());
      return false;
    }
    const char* value = argv[++i];
    if (arg == "--rank") opts->rank = atoi(value);
    else if (arg == "--nranks") opts->nranks = atoi(value);
    else if (arg == "--device") opts->device = atoi(value);
    else if (arg == "--good-iters") opts->good_iters = atoi(value);
    else if (arg == "--count") opts->count = strtoull(value, nullptr, 10);
    else if (arg == "--id-timeout") opts->id_timeout_s = atoi(value);
    else if (arg == "--id-file") opts->id_file = value;
    else if (arg == "--mode") opts->mode = value;
    else if (arg == "--abort-how") opts->abort_how = value;
    else {
      fprintf(stderr, "unknown option %s\n", arg.c_str());
      return false;
    }
  }
  if (opts->nranks < 2 || opts->rank < 0 || opts->rank >= opts->nranks) {
    fprintf(stderr, "need --nranks >= 2 and 0 <= --rank < nranks\n");
    return false;
  }
  if (opts->id_file.empty()) {
    fprintf(stderr, "need --id-file\n");
    return false;
  }
  if (!known_mode(opts->mode)) {
    fprintf(stderr, "unknown --mode '%s'\n", opts->mode.c_str());
    return false;
  }
  if (opts->abort_how != "abort" && opts->abort_how != "exit") {
    fprintf(stderr, "--abort-how must be abort or exit\n");
    return false;
  }
  if (opts->count < 1024 || opts->good_iters < 0) {
    fprintf(stderr, "need --count >= 1024 and --good-iters >= 0\n");
    return false;
  }
  return true;
}

// Rank 0 publishes the id atomically (write + rename) so readers never see half of it.
void publish_unique_id(const std::string& path, const ncclUniqueId& id) {
  std::string tmp = path + ".tmp";
  FILE* f = fopen(tmp.c_str(), "wb");
  if (!f || fwrite(&id, sizeof(id), 1, f) != 1 || fclose(f) != 0) {
    perror("writing id file");
    exit(4);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    perror("rename id file");
    exit(4);
  }
}

ncclUniqueId wait_for_unique_id(const std::string& path, int timeout_s) {
  ncclUniqueId id;
  for (int waited_ms = 0; waited_ms < timeout_s * 1000; waited_ms += 50) {
    FILE* f = fopen(path.c_str(), "rb");
    if (f) {
      size_t got = fread(&id, sizeof(id), 1, f);
      fclose(f);
      if (got == 1) return id;
    }
    usleep(50 * 1000);
  }
  fprintf(stderr, "timed out after %d s waiting for %s\n", timeout_s, path.c_str());
  exit(5);
}

// What this rank launched on one communicator, for the ground-truth line.
struct CommRecord {
  std::string name;
  ncclComm_t comm = nullptr;
  std::map<std::string, int> launched;  // NCCL function name -> collectives launched
  int p2p_sends = 0;
  int p2p_recvs = 0;
};

struct Scenario {
  Options opts;
  cudaStream_t nccl_stream = nullptr;
  float* send = nullptr;
  float* recv = nullptr;
  std::vector<CommRecord> comms;
  int expected_culprit = -1;  // -1: no single culprit (cycle / mismatch on both sides)
  std::string hang_collective;
  std::string hang_comm;
  std::string role;   // "waiter" (blocks in the GPU) or "culprit" (left the pattern)
  std::string notes;
};

CommRecord& record(Scenario& s, const std::string& name) {
  for (auto& c : s.comms)
    if (c.name == name) return c;
  fprintf(stderr, "no comm named %s\n", name.c_str());
  exit(6);
}

void all_reduce(Scenario& s, CommRecord& c, size_t count, cudaStream_t stream) {
  NCCL_CHECK(ncclAllReduce(s.send, s.recv, count, ncclFloat, ncclSum, c.comm, stream));
  c.launched["AllReduce"]++;
}

void all_gather(Scenario& s, CommRecord& c, size_t count_per_rank, cudaStream_t stream) {
  NCCL_CHECK(ncclAllGather(s.send, s.recv, count_per_rank, ncclFloat, c.comm, stream));
  c.launched["AllGather"]++;
}

void reduce_scatter(Scenario& s, CommRecord& c, size_t recv_count, cudaStream_t stream) {
  NCCL_CHECK(ncclReduceScatter(s.send, s.recv, recv_count, ncclFloat, ncclSum, c.comm, stream));
  c.launched["ReduceScatter"]++;
}

std::string json_escape(const std::string& in) {
  std::string out;
  for (char ch : in) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

void print_ground_truth(const Scenario& s) {
  const Options& o = s.opts;
  printf("GROUND_TRUTH {\"mode\":\"%s\",\"rank\":%d,\"nranks\":%d,\"pid\":%d,\"device\":%d,"
         "\"nccl_version\":%d,\"expected_culprit_rank\":%d,\"hang_collective\":\"%s\","
         "\"hang_comm\":\"%s\",\"role\":\"%s\",\"good_iters\":%d,\"count\":%zu,\"comms\":[",
         o.mode.c_str(), o.rank, o.nranks, (int)getpid(), o.device, NCCL_VERSION_CODE,
         s.expected_culprit, s.hang_collective.c_str(), s.hang_comm.c_str(), s.role.c_str(),
         o.good_iters, o.count);
  for (size_t i = 0; i < s.comms.size(); ++i) {
    const CommRecord& c = s.comms[i];
    int rank = -1, nranks = -1;
    ncclCommUserRank(c.comm, &rank);
    ncclCommCount(c.comm, &nranks);
    printf("%s{\"name\":\"%s\",\"address\":\"%p\",\"rank\":%d,\"nranks\":%d,\"launched\":{",
           i ? "," : "", c.name.c_str(), (void*)c.comm, rank, nranks);
    bool first = true;
    for (const auto& [func, n] : c.launched) {
      printf("%s\"%s\":%d", first ? "" : ",", func.c_str(), n);
      first = false;
    }
    printf("},\"p2p_sends\":%d,\"p2p_recvs\":%d}", c.p2p_sends, c.p2p_recvs);
  }
  printf("],\"notes\":\"%s\"}\n", json_escape(s.notes).c_str());
  fflush(stdout);
}

// The culprit (or a rank whose work is done) parks in user code for the capture.
[[noreturn]] void park_in_pause(const Scenario& s) {
  print_ground_truth(s);
  printf("HANG_POINT_REACHED rank=%d where=pause\n", s.opts.rank);
  fflush(stdout);
  for (;;) pause();
}

// The waiting rank blocks on the GPU; if the stream drains after all, say so and park.
[[noreturn]] void block_on_stream(Scenario& s, cudaStream_t stream, const char* what) {
  print_ground_truth(s);
  printf("HANG_POINT_REACHED rank=%d where=cudaStreamSynchronize(%s)\n", s.opts.rank, what);
  fflush(stdout);
  cudaError_t err = cudaStreamSynchronize(stream);
  printf("COLLECTIVE_COMPLETED rank=%d stream=%s cuda=%s\n", s.opts.rank, what,
         cudaGetErrorString(err));
  fflush(stdout);
  for (;;) pause();
}

// A few collectives every rank issues, each synchronised, so seqNumber is non-zero.
void good_iterations(Scenario& s, CommRecord& c, bool gather) {
  for (int i = 0; i < s.opts.good_iters; ++i) {
    if (gather) all_gather(s, c, s.opts.count / s.opts.nranks, s.nccl_stream);
    else all_reduce(s, c, s.opts.count, s.nccl_stream);
    CUDA_CHECK(cudaStreamSynchronize(s.nccl_stream));
  }
}

int culprit_rank(const Options& o) { return o.nranks - 1; }

void run_skip_collective(Scenario& s) {
  CommRecord& world = record(s, "world");
  good_iterations(s, world, false);
  s.expected_culprit = culprit_rank(s.opts);
  s.hang_collective = "AllReduce";
  s.hang_comm = "world";
  if (s.opts.rank == s.expected_culprit) {
    s.role = "culprit";
    s.notes = "skips the next AllReduce and sleeps in pause()";
    park_in_pause(s);
  }
  s.role = "waiter";
  all_reduce(s, world, s.opts.count, s.nccl_stream);
  block_on_stream(s, s.nccl_stream, "nccl");
}

void run_mismatched_collective(Scenario& s) {
  CommRecord& world = record(s, "world");
  good_iterations(s, world, false);
  s.expected_culprit = culprit_rank(s.opts);
  s.hang_comm = "world";
  if (s.opts.rank == s.expected_culprit) {
    s.role = "mismatched";
    s.hang_collective = "ReduceScatter";
    s.notes = "issues ReduceScatter where the others issue AllReduce";
    reduce_scatter(s, world, s.opts.count / s.opts.nranks, s.nccl_stream);
  } else {
    s.role = "waiter";
    s.hang_collective = "AllReduce";
    s.notes = "issues AllReduce; the culprit issues ReduceScatter at the same point";
    all_reduce(s, world, s.opts.count, s.nccl_stream);
  }
  block_on_stream(s, s.nccl_stream, "nccl");
}

void run_mismatched_count(Scenario& s) {
  CommRecord& world = record(s, "world");
  good_iterations(s, world, false);
  s.expected_culprit = culprit_rank(s.opts);
  s.hang_comm = "world";
  s.hang_collective = "AllReduce";
  size_t count = s.opts.count;
  if (s.opts.rank == s.expected_culprit) {
    count = s.opts.count / 2;  // the buffers stay large enough for the bigger count
    s.role = "mismatched";
    s.notes = "AllReduce with half the count of the other ranks; may complete silently";
  } else {
    s.role = "waiter";
    s.notes = "AllReduce with the full count; the culprit uses half; may complete silently";
  }
  all_reduce(s, world, count, s.nccl_stream);
  block_on_stream(s, s.nccl_stream, "nccl");
}

void run_p2p_cycle(Scenario& s) {
  CommRecord& world = record(s, "world");
  good_iterations(s, world, false);
  s.expected_culprit = -1;
  s.hang_comm = "world";
  s.hang_collective = "Send";
  s.role = "cycle";
  s.notes = "blocking ncclSend to the next rank (no group), recv only after the send completes";
  int next = (s.opts.rank + 1) % s.opts.nranks;
  int prev = (s.opts.rank + s.opts.nranks - 1) % s.opts.nranks;
  // Grouped exchanges first: NCCL connects P2P peers lazily, and an ungrouped send to a peer
  // that never connected its receive side fails in the connection exchange (seen:
  // "ncclSocketInit ... family 0" then ncclInternalError) instead of hanging.
  for (int i = 0; i < s.opts.good_iters; ++i) {
    NCCL_CHECK(ncclGroupStart());
    NCCL_CHECK(ncclSend(s.send, s.opts.count, ncclFloat, next, world.comm, s.nccl_stream));
    NCCL_CHECK(ncclRecv(s.recv, s.opts.count, ncclFloat, prev, world.comm, s.nccl_stream));
    NCCL_CHECK(ncclGroupEnd());
    world.p2p_sends++;
    world.p2p_recvs++;
    CUDA_CHECK(cudaStreamSynchronize(s.nccl_stream));
  }
  // The send is large so it cannot drain into the connection's buffers alone.
  NCCL_CHECK(ncclSend(s.send, s.opts.count, ncclFloat, next, world.comm, s.nccl_stream));
  world.p2p_sends++;
  print_ground_truth(s);
  printf("HANG_POINT_REACHED rank=%d where=cudaStreamSynchronize(nccl) after ncclSend\n",
         s.opts.rank);
  fflush(stdout);
  cudaError_t err = cudaStreamSynchronize(s.nccl_stream);
  printf("COLLECTIVE_COMPLETED rank=%d send cuda=%s\n", s.opts.rank, cudaGetErrorString(err));
  fflush(stdout);
  for (;;) pause();
}

__global__ void consume_kernel(const float* in, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 2.0f;
}

void run_cross_stream(Scenario& s) {
  CommRecord& world = record(s, "world");
  // Launch the consumer once now: CUDA loads modules lazily, and a first launch while an
  // NCCL kernel spins blocks in cudaLaunchKernel (seen), not in the stream wait we want.
  consume_kernel<<<1, 32, 0, s.nccl_stream>>>(s.recv, s.send, 32);
  CUDA_CHECK(cudaStreamSynchronize(s.nccl_stream));
  good_iterations(s, world, true);
  s.expected_culprit = culprit_rank(s.opts);
  s.hang_collective = "AllGather";
  s.hang_comm = "world";
  if (s.opts.rank == s.expected_culprit) {
    s.role = "culprit";
    s.notes = "skips the AllGather and sleeps in pause()";
    park_in_pause(s);
  }
  s.role = "waiter";
  s.notes = "host blocks on the compute stream, which waits on an event recorded after "
            "the AllGather on the NCCL stream";
  cudaStream_t compute;
  cudaEvent_t gathered;
  CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&gathered, cudaEventDisableTiming));
  all_gather(s, world, s.opts.count / s.opts.nranks, s.nccl_stream);
  CUDA_CHECK(cudaEventRecord(gathered, s.nccl_stream));
  CUDA_CHECK(cudaStreamWaitEvent(compute, gathered, 0));
  consume_kernel<<<(unsigned)((s.opts.count + 255) / 256), 256, 0, compute>>>(s.recv, s.send,
                                                                            s.opts.count);
  CUDA_CHECK(cudaGetLastError());
  block_on_stream(s, compute, "compute");
}

void run_split_comm(Scenario& s) {
  CommRecord& world = record(s, "world");
  // Every rank takes color 0, so "sub" spans the same ranks (key reverses the order).
  CommRecord sub;
  sub.name = "sub";
  int key = s.opts.nranks - 1 - s.opts.rank;
  NCCL_CHECK(ncclCommSplit(world.comm, 0, key, &sub.comm, nullptr));
  s.comms.push_back(sub);
  CommRecord& world_ref = record(s, "world");
  CommRecord& sub_ref = record(s, "sub");
  cudaStream_t sub_stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&sub_stream, cudaStreamNonBlocking));
  for (int i = 0; i < s.opts.good_iters; ++i) {
    all_reduce(s, world_ref, s.opts.count, s.nccl_stream);
    all_reduce(s, sub_ref, s.opts.count, sub_stream);
    CUDA_CHECK(cudaStreamSynchronize(s.nccl_stream));
    CUDA_CHECK(cudaStreamSynchronize(sub_stream));
  }
  // One more world AllReduce everyone completes: the world comm stays healthy.
  all_reduce(s, world_ref, s.opts.count, s.nccl_stream);
  CUDA_CHECK(cudaStreamSynchronize(s.nccl_stream));
  s.expected_culprit = culprit_rank(s.opts);  // world rank of the culprit
  s.hang_collective = "AllReduce";
  s.hang_comm = "sub";
  if (s.opts.rank == s.expected_culprit) {
    s.role = "culprit";
    s.notes = "skips the AllReduce on sub; world is idle and healthy";
    park_in_pause(s);
  }
  s.role = "waiter";
  s.notes = "AllReduce on sub hangs; world completed all its collectives";
  all_reduce(s, sub_ref, s.opts.count, sub_stream);
  block_on_stream(s, sub_stream, "sub");
}

void run_abort(Scenario& s) {
  CommRecord& world = record(s, "world");
  good_iterations(s, world, false);
  s.expected_culprit = culprit_rank(s.opts);
  s.hang_collective = "AllReduce";
  s.hang_comm = "world";
  if (s.opts.rank == s.expected_culprit) {
    s.role = "culprit";
    if (s.opts.abort_how == "exit") {
      s.notes = "exits without finalizing while the others wait";
      print_ground_truth(s);
      printf("HANG_POINT_REACHED rank=%d where=_exit\n", s.opts.rank);
      fflush(stdout);
      _exit(0);
    }
    s.notes = "calls ncclCommAbort (comm address now freed) then sleeps in pause()";
    sleep(1);  // let the waiter launch its AllReduce first
    print_ground_truth(s);  // before the abort: the comm is still valid for the rank query
    NCCL_CHECK(ncclCommAbort(world.comm));
    printf("HANG_POINT_REACHED rank=%d where=pause after ncclCommAbort\n", s.opts.rank);
    fflush(stdout);
    for (;;) pause();
  }
  s.role = "waiter";
  s.notes = "waits in AllReduce while the culprit aborts its communicator";
  all_reduce(s, world, s.opts.count, s.nccl_stream);
  block_on_stream(s, s.nccl_stream, "nccl");
}

}  // namespace

int main(int argc, char** argv) {
  Scenario s;
  if (!parse_options(argc, argv, &s.opts)) {
    usage(argv[0]);
    return 1;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const Options& o = s.opts;
  CUDA_CHECK(cudaSetDevice(o.device));
  ncclUniqueId id;
  if (o.rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    publish_unique_id(o.id_file, id);
  } else {
    id = wait_for_unique_id(o.id_file, o.id_timeout_s);
  }
  CommRecord world;
  world.name = "world";
  NCCL_CHECK(ncclCommInitRank(&world.comm, o.nranks, id, o.rank));
  s.comms.push_back(world);
  CUDA_CHECK(cudaStreamCreateWithFlags(&s.nccl_stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaMalloc(&s.send, o.count * o.nranks * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&s.recv, o.count * o.nranks * sizeof(float)));
  CUDA_CHECK(cudaMemset(s.send, 0, o.count * o.nranks * sizeof(float)));
  CUDA_CHECK(cudaDeviceSynchronize());
  printf("INIT_DONE rank=%d pid=%d comm=%p\n", o.rank, (int)getpid(), (void*)world.comm);

  if (o.mode == "skip-collective") run_skip_collective(s);
  else if (o.mode == "mismatched-collective") run_mismatched_collective(s);
  else if (o.mode == "mismatched-count") run_mismatched_count(s);
  else if (o.mode == "p2p-cycle") run_p2p_cycle(s);
  else if (o.mode == "cross-stream") run_cross_stream(s);
  else if (o.mode == "split-comm") run_split_comm(s);
  else if (o.mode == "abort") run_abort(s);
  return 0;
}
