// A user CUDA kernel that writes to an address no allocation holds (issue 32,
// crash-cuda-illegal-address): loaded by tests/scenarios/torch_crash_order.py through ctypes
// and launched on PyTorch's current stream. Built on the GPU machine by
// scripts/device-torch-multigroup.sh: nvcc -O2 -shared -Xcompiler -fPIC -arch=sm_90.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void ncclscope_demo_scatter(float *out, const int64_t *index, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[index[i]] = 1.0f;  // index[i] is far past the end of out
}

// out: n floats of device memory; index: n int64 of device memory. Returns the launch's error.
extern "C" int ncclscope_demo_launch_bad_scatter(void *out, void *index, int n, void *stream)
{
  ncclscope_demo_scatter<<<(n + 127) / 128, 128, 0, (cudaStream_t)stream>>>(
      (float *)out, (const int64_t *)index, n);
  return (int)cudaGetLastError();
}
