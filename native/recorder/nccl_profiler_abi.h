// Our own declarations of NCCL's profiler plugin ABI, interface v5 (NCCL 2.28):
// NCCL looks up the symbol "ncclProfiler_v5" in NCCL_PROFILER_PLUGIN's library.
// Field order and types follow the documented ABI; names are ours.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nsc::recorder {

using NcclResult = int;  // ncclResult_t: 0 = ncclSuccess
constexpr NcclResult kNcclSuccess = 0;

// Event type bits of the profiler API.
enum : uint64_t {
  kProfileGroup = 1u << 0, kProfileColl = 1u << 1, kProfileP2p = 1u << 2,
  kProfileGroupApi = 1u << 8, kProfileCollApi = 1u << 9, kProfileP2pApi = 1u << 10,
  kProfileKernelLaunch = 1u << 11,
};

// Event descriptor, interface v5 (field order and types fixed by the ABI).
struct EventDescriptorV5 {
  uint64_t type;
  void* parent;
  int rank;
  union {
    struct { bool graph_captured; int group_depth; } group_api;
    struct { const char* func; size_t count; const char* datatype; int root; void* stream; bool graph_captured; } coll_api;
    struct { const char* func; size_t count; const char* datatype; void* stream; bool graph_captured; } p2p_api;
    struct { void* stream; } kernel_launch;
    struct {
      uint64_t seq; const char* func; const void* send_buffer; void* recv_buffer; size_t count;
      int root; const char* datatype; uint8_t nchannels; uint8_t nwarps; const char* algorithm;
      const char* protocol; void* parent_group;
    } coll;
    struct {
      const char* func; void* buffer; const char* datatype; size_t count; int peer;
      uint8_t nchannels; void* parent_group;
    } p2p;
  };
};

using LoggerFunction = void (*)(int, unsigned long, const char*, int, const char*, ...);

struct ProfilerV5 {
  const char* name;
  NcclResult (*init)(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name,
                     int nnodes, int nranks, int rank, LoggerFunction log);
  NcclResult (*start_event)(void* context, void** handle, EventDescriptorV5* descriptor);
  NcclResult (*stop_event)(void* handle);
  NcclResult (*record_event_state)(void* handle, int state, void* state_args);
  NcclResult (*finalize)(void* context);
};

}  // namespace nsc::recorder
