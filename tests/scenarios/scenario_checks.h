// The scenario programs' error checks: a failed CUDA call exits 2, a failed NCCL call 3, each
// naming the call, file and line (the device scripts read these exit codes).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>

#define CUDA_CHECK(call)                                                           \
  do {                                                                             \
    cudaError_t err_ = (call);                                                     \
    if (err_ != cudaSuccess) {                                                     \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__, __LINE__,  \
              cudaGetErrorString(err_));                                           \
      exit(2);                                                                     \
    }                                                                              \
  } while (0)

#define NCCL_CHECK(call)                                                           \
  do {                                                                             \
    ncclResult_t res_ = (call);                                                    \
    if (res_ != ncclSuccess) {                                                     \
      fprintf(stderr, "NCCL error %s at %s:%d: %s\n", #call, __FILE__, __LINE__,  \
              ncclGetErrorString(res_));                                           \
      exit(3);                                                                     \
    }                                                                              \
  } while (0)
