// NCCL profiler plugin (NCCL_PROFILER_PLUGIN=<this .so>): NCCL 2.28 looks up
// the symbol "ncclProfiler_v5" and calls init once per communicator, then
// startEvent/stopEvent for every collective and P2P operation.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "recorder.h"

#include "nccl_profiler_abi.h"

namespace nsc::recorder {
namespace {

// What a started event remembers so its children and its stop can refer to it.
// Slots are reused round-robin per thread: no allocation on the hot path.
struct EventSlot {
  const CommEntry* comm;
  RecordKind kind;
  int32_t aux;
  uint64_t seq;
  uint64_t count;
  uint64_t stream;
  uint64_t details;
};
// More than the collectives one group can hold in practice: a parent handle must outlive its children.
constexpr uint32_t kSlotsPerThread = 1024;
thread_local EventSlot t_slots[kSlotsPerThread];
thread_local uint32_t t_next_slot = 0;

EventSlot* next_slot() { return &t_slots[t_next_slot++ % kSlotsPerThread]; }

// NCCL passes pointers to its own static strings: remember the last few by address.
template <typename Id, typename Parse>
Id cached_lookup(const char* name, const char* (&keys)[8], Id (&ids)[8], Parse parse) {
  size_t bucket = (reinterpret_cast<uintptr_t>(name) >> 3) & 7;
  if (keys[bucket] == name && name != nullptr) return ids[bucket];
  Id id = parse(name);
  keys[bucket] = name;
  ids[bucket] = id;
  return id;
}

NcclFunc parse_func_slow(const char* name) {
  if (name == nullptr) return NcclFunc::kUnknown;
  for (uint8_t id = 0; id <= uint8_t(NcclFunc::kAllGatherV); ++id)
    if (strcmp(name, nccl_func_name(NcclFunc(id))) == 0) return NcclFunc(id);
  return NcclFunc::kUnknown;
}

NcclType parse_type_slow(const char* name) {
  if (name == nullptr) return NcclType::kUnknown;
  for (uint8_t id = 0; id <= uint8_t(NcclType::kFloat8e5m2); ++id)
    if (strcmp(name, nccl_type_name(NcclType(id))) == 0) return NcclType(id);
  return NcclType::kUnknown;
}

thread_local const char* t_func_keys[8];
thread_local NcclFunc t_func_ids[8];
thread_local const char* t_type_keys[8];
thread_local NcclType t_type_ids[8];

NcclFunc parse_func(const char* name) { return cached_lookup(name, t_func_keys, t_func_ids, parse_func_slow); }
NcclType parse_type(const char* name) { return cached_lookup(name, t_type_keys, t_type_ids, parse_type_slow); }

template <size_t N>
uint8_t parse_name(const char* name, const char* const (&names)[N]) {
  if (name == nullptr) return kUnknownId;
  for (size_t i = 0; i < N; ++i)
    if (strcmp(name, names[i]) == 0) return uint8_t(i);
  return kUnknownId;
}

thread_local const char* t_algorithm_keys[8];
thread_local uint8_t t_algorithm_ids[8];
thread_local const char* t_protocol_keys[8];
thread_local uint8_t t_protocol_ids[8];

uint8_t parse_algorithm(const char* name) {
  return cached_lookup(name, t_algorithm_keys, t_algorithm_ids, [](const char* n) { return parse_name(n, kAlgorithmNames); });
}
uint8_t parse_protocol(const char* name) {
  return cached_lookup(name, t_protocol_keys, t_protocol_ids, [](const char* n) { return parse_name(n, kProtocolNames); });
}

uint64_t hash_of(const CommEntry* comm) { return comm ? comm->comm_hash : 0; }
uint64_t pointer_value(const void* pointer) { return reinterpret_cast<uint64_t>(pointer); }

// Stream of the API event that parents a Coll/P2p event (the user's stream).
// NCCL passes back only handles we returned (we return none for groups).
uint64_t parent_stream(void* parent) {
  return parent != nullptr ? static_cast<const EventSlot*>(parent)->stream : 0;
}

NcclResult plugin_init(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name,
                       int nnodes, int nranks, int rank, LoggerFunction) {
  mark_source(kSourceNcclProfiler);
  CommEntry* entry = claim_comm(comm_id, rank, nranks, nnodes, comm_name);
  *context = entry;
  record(RecordKind::kNcclCommInit, RecordPhase::kInstant, RecordApi::kNcclProfiler, rank, comm_id,
         uint64_t(nranks), uint64_t(nnodes));
  *activation_mask |= int(kProfileColl | kProfileP2p | kProfileCollApi | kProfileP2pApi |
                          kProfileKernelLaunch);
  return kNcclSuccess;
}

NcclResult plugin_start_event(void* context, void** handle, EventDescriptorV5* event) {
  const auto* comm = static_cast<const CommEntry*>(context);
  EventSlot* slot = next_slot();
  *slot = EventSlot{comm, RecordKind::kNone, 0, 0, 0, 0, 0};
  switch (event->type) {
    case kProfileCollApi: {
      const auto& api = event->coll_api;
      *slot = EventSlot{comm, RecordKind::kNcclCollApi, api.root, 0, api.count, pointer_value(api.stream),
                        pack_nccl_details(parse_func(api.func), parse_type(api.datatype), 0,
                                          kUnknownId, kUnknownId, api.graph_captured)};
      break;
    }
    case kProfileP2pApi: {
      const auto& api = event->p2p_api;
      *slot = EventSlot{comm, RecordKind::kNcclP2pApi, -1, 0, api.count, pointer_value(api.stream),
                        pack_nccl_details(parse_func(api.func), parse_type(api.datatype), 0,
                                          kUnknownId, kUnknownId, api.graph_captured)};
      break;
    }
    case kProfileColl: {
      const auto& coll = event->coll;
      *slot = EventSlot{comm, RecordKind::kNcclColl, coll.root, coll.seq, coll.count,
                        parent_stream(event->parent),
                        pack_nccl_details(parse_func(coll.func), parse_type(coll.datatype),
                                          coll.nchannels, parse_algorithm(coll.algorithm),
                                          parse_protocol(coll.protocol), false)};
      break;
    }
    case kProfileP2p: {
      const auto& p2p = event->p2p;
      *slot = EventSlot{comm, RecordKind::kNcclP2p, p2p.peer, 0, p2p.count, parent_stream(event->parent),
                        pack_nccl_details(parse_func(p2p.func), parse_type(p2p.datatype),
                                          p2p.nchannels, kUnknownId, kUnknownId, false)};
      break;
    }
    case kProfileKernelLaunch:
      *slot = EventSlot{comm, RecordKind::kNcclKernelLaunch, 0, 0, 0,
                        pointer_value(event->kernel_launch.stream), 0};
      break;
    default:
      *handle = nullptr;  // not an event we asked for: NCCL then never calls stop for it
      return kNcclSuccess;
  }
  record(slot->kind, RecordPhase::kEnter, RecordApi::kNcclProfiler, slot->aux, hash_of(comm),
         slot->seq, slot->count, slot->stream, slot->details);
  *handle = slot;
  return kNcclSuccess;
}

NcclResult plugin_stop_event(void* handle) {
  const auto* slot = static_cast<const EventSlot*>(handle);
  if (slot == nullptr) return kNcclSuccess;
  // args[4] keeps the details and carries the started kind in bits 48-63.
  record(RecordKind::kNcclEventStop, RecordPhase::kExit, RecordApi::kNcclProfiler, slot->aux,
         hash_of(slot->comm), slot->seq, slot->count, slot->stream,
         (slot->details & 0xffffffffffffull) | uint64_t(slot->kind) << 48);
  return kNcclSuccess;
}

NcclResult plugin_record_event_state(void*, int, void*) { return kNcclSuccess; }

NcclResult plugin_finalize(void* context) {
  auto* comm = static_cast<CommEntry*>(context);
  record(RecordKind::kNcclCommFinalize, RecordPhase::kInstant, RecordApi::kNcclProfiler,
         comm ? comm->rank : -1, hash_of(comm));
  if (comm != nullptr) __atomic_store_n(&comm->in_use, 2, __ATOMIC_RELEASE);  // 2 = finalized
  return kNcclSuccess;
}

}  // namespace
}  // namespace nsc::recorder

extern "C" {
__attribute__((visibility("default"))) nsc::recorder::ProfilerV5 ncclProfiler_v5 = {
    "ncclscope-recorder",
    nsc::recorder::plugin_init,
    nsc::recorder::plugin_start_event,
    nsc::recorder::plugin_stop_event,
    nsc::recorder::plugin_record_event_state,
    nsc::recorder::plugin_finalize,
};
}  // extern "C"
