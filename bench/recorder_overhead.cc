// Per-record cost of the flight recorder, measured on the built library
// (dlopen'd as a job would load it): the CUPTI callback for one recorded API
// call (enter + exit callbacks, as CUPTI invokes them), and one NCCL profiler
// collective (API event + launched op + stops). Prints JSON, one line per case.
// Usage: recorder_overhead [ITERATIONS] [THREADS]
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nccl_profiler_abi.h"

#ifdef NCCLSCOPE_HAVE_CUPTI
#include <cupti.h>
#endif

namespace {

using nsc::recorder::EventDescriptorV5;
using nsc::recorder::ProfilerV5;

ProfilerV5* g_profiler = nullptr;
void* g_context = nullptr;
uint64_t g_iterations = 1000000;

uint64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

#ifdef NCCLSCOPE_HAVE_CUPTI
using CuptiCallback = void (*)(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*);
CuptiCallback g_cupti = nullptr;

// cudaEventRecord(event, stream): two callbacks, one record (written at enter).
double cupti_event_record_ns() {
  cudaEventRecord_v3020_params params{reinterpret_cast<cudaEvent_t>(0x1000), reinterpret_cast<cudaStream_t>(0x2000)};
  int result = 0;
  CUpti_CallbackData data{};
  data.functionParams = &params;
  data.functionReturnValue = &result;
  uint64_t start = now_ns();
  for (uint64_t i = 0; i < g_iterations; ++i) {
    data.callbackSite = CUPTI_API_ENTER;
    g_cupti(nullptr, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, &data);
    data.callbackSite = CUPTI_API_EXIT;
    g_cupti(nullptr, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, &data);
  }
  return double(now_ns() - start) / double(g_iterations);
}

// cudaStreamSynchronize(stream): two callbacks, two records (enter and exit).
double cupti_stream_sync_ns() {
  cudaStreamSynchronize_v3020_params params{reinterpret_cast<cudaStream_t>(0x2000)};
  int result = 0;
  CUpti_CallbackData data{};
  data.functionParams = &params;
  data.functionReturnValue = &result;
  uint64_t start = now_ns();
  for (uint64_t i = 0; i < g_iterations; ++i) {
    data.callbackSite = CUPTI_API_ENTER;
    g_cupti(nullptr, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &data);
    data.callbackSite = CUPTI_API_EXIT;
    g_cupti(nullptr, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &data);
  }
  return double(now_ns() - start) / double(g_iterations);
}
#endif

// One ncclAllReduce as NCCL 2.28 reports it: CollApi start, Coll start, 2 stops (4 records).
double nccl_collective_ns() {
  EventDescriptorV5 api{};
  api.type = nsc::recorder::kProfileCollApi;
  api.coll_api.func = "AllReduce";
  api.coll_api.count = 1 << 20;
  api.coll_api.datatype = "ncclBfloat16";
  api.coll_api.stream = reinterpret_cast<void*>(0x2000);
  EventDescriptorV5 coll{};
  coll.type = nsc::recorder::kProfileColl;
  coll.coll.func = "AllReduce";
  coll.coll.count = 1 << 20;
  coll.coll.datatype = "ncclBfloat16";
  coll.coll.algorithm = "RING";
  coll.coll.protocol = "Simple";
  uint64_t start = now_ns();
  for (uint64_t i = 0; i < g_iterations; ++i) {
    void* api_handle = nullptr;
    void* coll_handle = nullptr;
    g_profiler->start_event(g_context, &api_handle, &api);
    coll.parent = api_handle;
    coll.coll.seq = i;
    g_profiler->start_event(g_context, &coll_handle, &coll);
    g_profiler->stop_event(coll_handle);
    g_profiler->stop_event(api_handle);
  }
  return double(now_ns() - start) / double(g_iterations);
}

// The noise floor: 4 calls into the plugin that record nothing (recordEventState).
double baseline_ns() {
  uint64_t start = now_ns();
  for (uint64_t i = 0; i < g_iterations; ++i)
    for (int call = 0; call < 4; ++call) g_profiler->record_event_state(reinterpret_cast<void*>(i + 1), 0, nullptr);
  return double(now_ns() - start) / double(g_iterations);
}

// The clock a record reads (rdtsc when the CPU has an invariant TSC).
double rdtsc_ns() {
  uint64_t sink = 0, start = now_ns();
  for (uint64_t i = 0; i < g_iterations; ++i) sink += __builtin_ia32_rdtsc();
  double cost = double(now_ns() - start) / double(g_iterations);
  return sink == 1 ? 0 : cost;
}

void* threaded(void* out) {
  *static_cast<double*>(out) = nccl_collective_ns();
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_iterations = strtoull(argv[1], nullptr, 10);
  int threads = argc > 2 ? atoi(argv[2]) : 2;
  void* library = dlopen(NCCLSCOPE_RECORDER_LIBRARY, RTLD_NOW);
  if (library == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", NCCLSCOPE_RECORDER_LIBRARY, dlerror());
    return 1;
  }
  g_profiler = static_cast<ProfilerV5*>(dlsym(library, "ncclProfiler_v5"));
  int mask = 0;
  g_profiler->init(&g_context, 0x1234, &mask, "bench", 1, 8, 0, nullptr);
  // Warm up: claims this thread's ring and faults its pages in.
  uint64_t wanted = g_iterations;
  g_iterations = 100000;
  nccl_collective_ns();
  g_iterations = wanted;
#ifdef NCCLSCOPE_HAVE_CUPTI
  g_cupti = reinterpret_cast<CuptiCallback>(dlsym(library, "ncclscope_recorder_cupti_callback"));
  double event_record = cupti_event_record_ns();
  double stream_sync = cupti_stream_sync_ns();
  std::printf("{\"case\": \"cupti cudaEventRecord (enter+exit callbacks, 1 record)\", \"ns_per_call\": %.1f}\n", event_record);
  std::printf("{\"case\": \"cupti cudaStreamSynchronize (enter+exit callbacks, 2 records)\", \"ns_per_call\": %.1f, \"ns_per_record\": %.1f}\n",
              stream_sync, stream_sync / 2);
#endif
  std::printf("{\"case\": \"baseline: 4 plugin calls that record nothing\", \"ns_per_call\": %.1f}\n", baseline_ns());
  std::printf("{\"case\": \"rdtsc alone\", \"ns_per_call\": %.1f}\n", rdtsc_ns());
  double collective = nccl_collective_ns();
  std::printf("{\"case\": \"nccl profiler collective (2 starts + 2 stops, 4 records)\", \"ns_per_call\": %.1f, \"ns_per_record\": %.1f}\n",
              collective, collective / 4);
  std::vector<pthread_t> workers(threads);
  std::vector<double> results(threads);
  for (int t = 0; t < threads; ++t) pthread_create(&workers[t], nullptr, threaded, &results[t]);
  double worst = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(workers[t], nullptr);
    if (results[t] > worst) worst = results[t];
  }
  std::printf("{\"case\": \"nccl profiler collective, %d threads at once (worst thread)\", \"ns_per_call\": %.1f, \"ns_per_record\": %.1f}\n",
              threads, worst, worst / 4);
  return 0;
}
