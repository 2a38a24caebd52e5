// A real hang whose buffers hold bad numbers (issue 20 item 1): every rank runs a few good
// AllReduces, the last rank then skips one and parks in pause(), the others block in it.
// Before the hang the injecting rank writes NaN into its send buffer (the NaN then reaches
// every rank's receive buffer through one good AllReduce: a cascade), or the fill underflows:
// values scaled below the datatype's smallest normal, converted on the GPU with CUDA's own
// rounding, or the sum overflows: every rank's values are finite (up to 3/4 of the largest
// finite value), the reduction of two or more ranks is +Inf. Each rank prints GROUND_TRUTH with its buffers' addresses and counts taken by an
// independent classifier (through float conversion), then HANG_POINT_REACHED.
//
//   nccl_numerics_hang --rank R --nranks N --id-file PATH [--dtype f32|bf16|f16|e4m3|e5m2]
//                      [--mode nan|underflow|overflow] [--count C] [--nan-count K] [--host-buffers]
//                      [--good-iters G] [--inject-rank R]
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "scenario_checks.h"

namespace {

enum class Dtype { f32, bf16, f16, e4m3, e5m2 };

struct Options {
  int rank = -1, nranks = 2, good_iters = 3, inject_rank = 0;
  size_t count = 1 << 20, nan_count = 4096;
  std::string id_file, mode = "nan", dtype = "bf16";
  bool host_buffers = false;
};

Dtype dtype_of(const std::string& name) {
  if (name == "f32") return Dtype::f32;
  if (name == "bf16") return Dtype::bf16;
  if (name == "f16") return Dtype::f16;
  if (name == "e4m3") return Dtype::e4m3;
  if (name == "e5m2") return Dtype::e5m2;
  fprintf(stderr, "unknown --dtype %s\n", name.c_str());
  exit(1);
}

size_t size_of(Dtype type) { return type == Dtype::f32 ? 4 : (type == Dtype::bf16 || type == Dtype::f16) ? 2 : 1; }

ncclDataType_t nccl_type(Dtype type) {
  switch (type) {
    case Dtype::f32: return ncclFloat32;
    case Dtype::bf16: return ncclBfloat16;
    case Dtype::f16: return ncclFloat16;
    case Dtype::e4m3: return ncclFloat8e4m3;
    case Dtype::e5m2: return ncclFloat8e5m2;
  }
  return ncclFloat32;
}

// The smallest normal magnitude of each format (for the independent classifier).
double min_normal(Dtype type) {
  switch (type) {
    case Dtype::f32: case Dtype::bf16: return std::ldexp(1.0, -126);
    case Dtype::f16: case Dtype::e5m2: return std::ldexp(1.0, -14);
    case Dtype::e4m3: return std::ldexp(1.0, -6);
  }
  return 0;
}

// A scale that puts (i % 1000 + 1) / 1000 below the smallest normal: underflow to
// subnormals, and to zero below half the smallest subnormal.
float underflow_scale(Dtype type) { return static_cast<float>(min_normal(type) * 0.5); }

// The largest finite magnitude of each format.
double max_finite(Dtype type) {
  switch (type) {
    case Dtype::f32: return 3.4028234663852886e38;
    case Dtype::bf16: return 3.3895313892515355e38;
    case Dtype::f16: return 65504.0;
    case Dtype::e4m3: return 448.0;
    case Dtype::e5m2: return 57344.0;
  }
  return 0;
}

// Values up to 3/4 of the largest finite one: each rank's finite, any sum of two overflows
// where (i % 1000 + 1) / 1000 > 2/3.
float overflow_scale(Dtype type) { return static_cast<float>(max_finite(type) * 0.75); }

__device__ void store(void* buffer, size_t i, Dtype type, float value) {
  switch (type) {
    case Dtype::f32: static_cast<float*>(buffer)[i] = value; break;
    case Dtype::bf16: static_cast<__nv_bfloat16*>(buffer)[i] = __float2bfloat16(value); break;
    case Dtype::f16: static_cast<__half*>(buffer)[i] = __float2half(value); break;
    case Dtype::e4m3: static_cast<__nv_fp8_e4m3*>(buffer)[i] = __nv_fp8_e4m3(value); break;
    case Dtype::e5m2: static_cast<__nv_fp8_e5m2*>(buffer)[i] = __nv_fp8_e5m2(value); break;
  }
}

// value(i) = scale * (i % 1000 + 1) / 1000; the first nan_count elements NaN when asked.
__global__ void fill(void* buffer, size_t n, Dtype type, float scale, size_t nan_count) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float value = scale * static_cast<float>(i % 1000 + 1) / 1000.0f;
    if (i < nan_count) value = nanf("");
    store(buffer, i, type, value);
  }
}

float to_float(const unsigned char* data, size_t i, Dtype type) {
  switch (type) {
    case Dtype::f32: { float v; memcpy(&v, data + 4 * i, 4); return v; }
    case Dtype::bf16: { __nv_bfloat16 v; memcpy(&v, data + 2 * i, 2); return __bfloat162float(v); }
    case Dtype::f16: { __half v; memcpy(&v, data + 2 * i, 2); return __half2float(v); }
    case Dtype::e4m3: { __nv_fp8_e4m3 v; memcpy(&v, data + i, 1); return static_cast<float>(v); }
    case Dtype::e5m2: { __nv_fp8_e5m2 v; memcpy(&v, data + i, 1); return static_cast<float>(v); }
  }
  return 0;
}

// Counts through float conversion: an independent check of ncclscope's bit-level classifier.
void print_counts(const char* role, const void* device_buffer, size_t n, Dtype type) {
  std::vector<unsigned char> host(n * size_of(type));
  CUDA_CHECK(cudaMemcpy(host.data(), device_buffer, host.size(), cudaMemcpyDefault));
  size_t nan = 0, pos_inf = 0, neg_inf = 0, subnormal = 0, zero = 0;
  double max_abs = 0;
  for (size_t i = 0; i < n; ++i) {
    float v = to_float(host.data(), i, type);
    if (std::isnan(v)) { ++nan; continue; }
    if (std::isinf(v)) { (v > 0 ? pos_inf : neg_inf)++; continue; }
    double magnitude = std::fabs(static_cast<double>(v));
    if (magnitude == 0) ++zero;
    else if (magnitude < min_normal(type)) ++subnormal;
    if (magnitude > max_abs) max_abs = magnitude;
  }
  printf("\"%s\":{\"address\":\"%p\",\"elements\":%zu,\"nan\":%zu,\"pos_inf\":%zu,\"neg_inf\":%zu,"
         "\"subnormal\":%zu,\"zero\":%zu,\"max_abs\":%.9g}",
         role, device_buffer, n, nan, pos_inf, neg_inf, subnormal, zero, max_abs);
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--host-buffers") { o->host_buffers = true; continue; }
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (arg == "--rank") o->rank = atoi(v);
    else if (arg == "--nranks") o->nranks = atoi(v);
    else if (arg == "--id-file") o->id_file = v;
    else if (arg == "--dtype") o->dtype = v;
    else if (arg == "--mode") o->mode = v;
    else if (arg == "--count") o->count = strtoull(v, nullptr, 10);
    else if (arg == "--nan-count") o->nan_count = strtoull(v, nullptr, 10);
    else if (arg == "--good-iters") o->good_iters = atoi(v);
    else if (arg == "--inject-rank") o->inject_rank = atoi(v);
    else return false;
  }
  bool known_mode = o->mode == "nan" || o->mode == "underflow" || o->mode == "overflow";
  return o->rank >= 0 && o->rank < o->nranks && !o->id_file.empty() && known_mode;
}

ncclUniqueId shared_id(const Options& o) {
  ncclUniqueId id;
  if (o.rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    std::string tmp = o.id_file + ".tmp";
    FILE* f = fopen(tmp.c_str(), "wb");
    if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0 || rename(tmp.c_str(), o.id_file.c_str()) != 0) exit(4);
    return id;
  }
  for (int waited = 0; waited < 2400; ++waited) {
    FILE* f = fopen(o.id_file.c_str(), "rb");
    if (f) {
      size_t got = fread(&id, sizeof id, 1, f);
      fclose(f);
      if (got == 1) return id;
    }
    usleep(50000);
  }
  exit(5);
}

void* allocate(size_t bytes, bool host) {
  void* p = nullptr;
  if (host) CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  else CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    fprintf(stderr, "usage: %s --rank R --nranks N --id-file PATH [--dtype f32|bf16|f16|e4m3|e5m2] "
                    "[--mode nan|underflow|overflow] [--count C] [--nan-count K] [--host-buffers] [--good-iters G] "
                    "[--inject-rank R]\n", argv[0]);
    return 1;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Dtype type = dtype_of(o.dtype);
  CUDA_CHECK(cudaSetDevice(0));
  ncclUniqueId id = shared_id(o);
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, o.nranks, id, o.rank));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  size_t bytes = o.count * size_of(type);
  void* send = allocate(bytes, o.host_buffers);
  void* recv = allocate(bytes, o.host_buffers);
  bool inject_nan = o.mode == "nan";
  float scale = o.mode == "underflow" ? underflow_scale(type) : o.mode == "overflow" ? overflow_scale(type) : 1.0f;
  fill<<<256, 256, 0, stream>>>(send, o.count, type, scale, 0);
  CUDA_CHECK(cudaMemsetAsync(recv, 0, bytes, stream));
  for (int i = 0; i < o.good_iters; ++i) {
    // The last good AllReduce carries the injected NaN to every rank's receive buffer.
    if (inject_nan && i == o.good_iters - 1 && o.rank == o.inject_rank)
      fill<<<256, 256, 0, stream>>>(send, o.count, type, scale, o.nan_count);
    NCCL_CHECK(ncclAllReduce(send, recv, o.count, nccl_type(type), ncclSum, comm, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  int culprit = o.nranks - 1;
  // The send buffer of the collective the waiters hang in: NaN on the injecting rank.
  fill<<<256, 256, 0, stream>>>(send, o.count, type, scale, inject_nan && o.rank == o.inject_rank ? o.nan_count : 0);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  printf("GROUND_TRUTH {\"rank\":%d,\"nranks\":%d,\"pid\":%d,\"comm\":\"%p\",\"dtype\":\"%s\",\"mode\":\"%s\","
         "\"host_buffers\":%s,\"count\":%zu,\"good_iters\":%d,\"culprit\":%d,\"role\":\"%s\",",
         o.rank, o.nranks, (int)getpid(), (void*)comm, o.dtype.c_str(), o.mode.c_str(),
         o.host_buffers ? "true" : "false", o.count, o.good_iters, culprit, o.rank == culprit ? "culprit" : "waiter");
  print_counts("send", send, o.count, type);
  printf(",");
  print_counts("recv", recv, o.count, type);
  printf("}\n");
  if (o.rank == culprit) {
    printf("HANG_POINT_REACHED rank=%d where=pause\n", o.rank);
    for (;;) pause();
  }
  NCCL_CHECK(ncclAllReduce(send, recv, o.count, nccl_type(type), ncclSum, comm, stream));
  printf("HANG_POINT_REACHED rank=%d where=cudaStreamSynchronize\n", o.rank);
  cudaError_t err = cudaStreamSynchronize(stream);
  printf("COLLECTIVE_COMPLETED rank=%d cuda=%s\n", o.rank, cudaGetErrorString(err));
  for (;;) pause();
}
