// Two libnccl in one process (issue 17, item 4): a real hang for the per-library decoders.
//
//   nccl_two_libraries --rank R --id-dir DIR --lib-a PATH --lib-b PATH [--device D]
//
// Two ranks. Each process dlopens two different libnccl files by path (RTLD_LOCAL: each keeps
// its own symbols, the way a framework and a plugin can each bring their own NCCL), makes one
// 2-rank communicator with each, and runs a few all-reduces on both. Then rank 1 skips the next
// all-reduce on library B's communicator and sleeps; rank 0 blocks in it. Rank 0 writes both
// unique ids into DIR (a.id, b.id). Prints "GROUND_TRUTH {json}" (each communicator's address,
// library, version and collectives launched), then "HANG_POINT_REACHED".
// Never linked against libnccl: only nccl.h's types and the two dlopen'ed libraries.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>

namespace {

constexpr int kRanks = 2;
constexpr int kGoodIterations = 3;
constexpr size_t kCount = 1 << 18;

[[noreturn]] void fail(const std::string& what) {
  fprintf(stderr, "nccl_two_libraries: %s\n", what.c_str());
  exit(2);
}

void cuda_check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorString(error));
}

// The entry points this program calls, from one library.
struct NcclLibrary {
  std::string path;
  void* handle = nullptr;
  ncclResult_t (*get_version)(int*) = nullptr;
  ncclResult_t (*get_unique_id)(ncclUniqueId*) = nullptr;
  ncclResult_t (*comm_init_rank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*all_reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t) = nullptr;
  ncclComm_t comm = nullptr;
  int version = 0;
  int launched = 0;
};

template <typename Function>
void bind(NcclLibrary& library, Function* function, const char* name) {
  *function = reinterpret_cast<Function>(dlsym(library.handle, name));
  if (*function == nullptr) fail(library.path + ": no symbol " + name);
}

void open_library(NcclLibrary& library) {
  library.handle = dlopen(library.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library.handle == nullptr) fail(std::string("dlopen: ") + dlerror());
  bind(library, &library.get_version, "ncclGetVersion");
  bind(library, &library.get_unique_id, "ncclGetUniqueId");
  bind(library, &library.comm_init_rank, "ncclCommInitRank");
  bind(library, &library.all_reduce, "ncclAllReduce");
  library.get_version(&library.version);
}

void nccl_check(const NcclLibrary& library, ncclResult_t result, const char* what) {
  if (result != ncclSuccess) fail(library.path + ": " + what + " returned " + std::to_string(result));
}

// Rank 0 writes the id (write + rename: readers never see half of it); rank 1 polls for it.
ncclUniqueId exchange_id(NcclLibrary& library, int rank, const std::string& path) {
  ncclUniqueId id;
  if (rank == 0) {
    nccl_check(library, library.get_unique_id(&id), "ncclGetUniqueId");
    std::string temporary = path + ".tmp";
    FILE* file = fopen(temporary.c_str(), "wb");
    if (!file || fwrite(&id, sizeof id, 1, file) != 1 || fclose(file) != 0) fail("cannot write " + temporary);
    if (rename(temporary.c_str(), path.c_str()) != 0) fail("cannot rename " + temporary);
    return id;
  }
  for (int waited_ms = 0; waited_ms < 120000; waited_ms += 50) {
    FILE* file = fopen(path.c_str(), "rb");
    if (file) {
      size_t got = fread(&id, sizeof id, 1, file);
      fclose(file);
      if (got == 1) return id;
    }
    usleep(50 * 1000);
  }
  fail("timed out waiting for " + path);
}

void all_reduce(NcclLibrary& library, float* buffer, cudaStream_t stream) {
  nccl_check(library, library.all_reduce(buffer, buffer, kCount, ncclFloat, ncclSum, library.comm, stream),
             "ncclAllReduce");
  ++library.launched;
}

void print_ground_truth(int rank, const NcclLibrary* libraries, const char* role) {
  printf("GROUND_TRUTH {\"mode\":\"two-libraries\",\"rank\":%d,\"nranks\":%d,\"pid\":%d,"
         "\"expected_culprit_rank\":1,\"hang_comm\":\"b\",\"role\":\"%s\",\"comms\":[",
         rank, kRanks, (int)getpid(), role);
  for (int i = 0; i < 2; ++i)
    printf("%s{\"name\":\"%c\",\"library\":\"%s\",\"nccl_version\":%d,\"address\":\"%p\",\"rank\":%d,"
           "\"nranks\":%d,\"launched\":{\"AllReduce\":%d}}",
           i ? "," : "", 'a' + i, libraries[i].path.c_str(), libraries[i].version, (void*)libraries[i].comm, rank,
           kRanks, libraries[i].launched);
  printf("]}\n");
}

}  // namespace

int main(int argc, char** argv) {
  int rank = -1, device = 0;
  std::string id_dir;
  NcclLibrary libraries[2];
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string option = argv[i], value = argv[i + 1];
    if (option == "--rank") rank = atoi(value.c_str());
    else if (option == "--id-dir") id_dir = value;
    else if (option == "--lib-a") libraries[0].path = value;
    else if (option == "--lib-b") libraries[1].path = value;
    else if (option == "--device") device = atoi(value.c_str());
    else fail("unknown option " + option);
  }
  if (rank < 0 || rank >= kRanks || id_dir.empty() || libraries[0].path.empty() || libraries[1].path.empty())
    fail("usage: nccl_two_libraries --rank 0|1 --id-dir DIR --lib-a PATH --lib-b PATH [--device D]");
  setvbuf(stdout, nullptr, _IOLBF, 0);
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  for (int i = 0; i < 2; ++i) {
    NcclLibrary& library = libraries[i];
    open_library(library);
    ncclUniqueId id = exchange_id(library, rank, id_dir + "/" + char('a' + i) + ".id");
    nccl_check(library, library.comm_init_rank(&library.comm, kRanks, id, rank), "ncclCommInitRank");
  }
  cudaStream_t stream;
  float* buffer;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_check(cudaMalloc(&buffer, kCount * sizeof(float)), "cudaMalloc");
  cuda_check(cudaMemset(buffer, 0, kCount * sizeof(float)), "cudaMemset");
  for (int iteration = 0; iteration < kGoodIterations; ++iteration)
    for (NcclLibrary& library : libraries) {
      all_reduce(library, buffer, stream);
      cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
  if (rank == 1) {  // the culprit: skips library B's next all-reduce
    print_ground_truth(rank, libraries, "culprit");
    printf("HANG_POINT_REACHED rank=1 where=pause\n");
    for (;;) pause();
  }
  all_reduce(libraries[1], buffer, stream);
  print_ground_truth(rank, libraries, "waiter");
  printf("HANG_POINT_REACHED rank=0 where=cudaStreamSynchronize\n");
  cudaError_t error = cudaStreamSynchronize(stream);
  printf("COLLECTIVE_COMPLETED rank=0 cuda=%s\n", cudaGetErrorString(error));
  for (;;) pause();
}
