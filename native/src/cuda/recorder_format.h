// The flight recorder's memory format (schema 1), shared by the recorder
// library (writer, native/recorder/) and the decoder (reader). Plain C++
// layout, no pointers the reader must follow: the whole region is one private
// anonymous mapping that starts with RecorderHeader, then `max_threads` rings.
// Each ring: RingHeader, then `records_per_ring` fixed-size Records.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nsc::recorder {

// 16 bytes at the start of the region (and nowhere else: written once at init).
inline constexpr char kMagic[16] = {'N', 'C', 'C', 'L', 'S', 'C', 'O', 'P',
                                    'E', '-', 'R', 'E', 'C', '/', '1', '\0'};
inline constexpr uint32_t kSchemaVersion = 1;
inline constexpr uint32_t kMaxComms = 64;
inline constexpr size_t kCommNameSize = 32;

// One communicator announced by NCCL's profiler init.
struct CommEntry {
  uint64_t comm_hash;
  int32_t rank, nranks, nnodes;
  uint32_t in_use;  // written last (release) so a reader sees a whole entry
  char name[kCommNameSize];
};

struct RecorderHeader {
  char magic[16];
  uint32_t schema_version;
  uint32_t header_size;        // sizeof(RecorderHeader)
  uint32_t ring_header_size;   // sizeof(RingHeader)
  uint32_t record_size;        // sizeof(Record)
  uint32_t max_threads;
  uint32_t records_per_ring;   // a power of two
  uint64_t region_size;
  uint64_t self_address;       // address of this header in the process (validates a magic hit)
  int64_t pid;
  uint64_t start_realtime_ns;  // CLOCK_REALTIME at init
  uint64_t start_monotonic_ns; // CLOCK_MONOTONIC at init (records carry monotonic times)
  uint32_t sources;            // RecorderSource bits that initialised
  uint32_t threads_claimed;    // rings handed out (may exceed max_threads: the excess dropped)
  uint64_t dropped_threads;    // threads that found no free ring
  uint32_t comms_claimed;
  uint32_t clock;              // RecorderClock: what Record::time holds
  uint64_t start_ticks;        // the clock's value at start_monotonic_ns
  uint64_t ticks_per_second;   // kClockTsc: measured at init; kClockMonotonic: 1e9
  CommEntry comms[kMaxComms];
};

enum RecorderClock : uint32_t {
  kClockMonotonic = 0,  // Record::time is CLOCK_MONOTONIC ns
  kClockTsc = 1,        // Record::time is the invariant TSC (cheaper to read than the vDSO clock)
};

enum RecorderSource : uint32_t {
  kSourceCupti = 1u << 0,
  kSourceNcclProfiler = 1u << 1,
  kSourceDirect = 1u << 2,  // test driver calling the handlers itself
};

// RingHeader::in_use values.
inline constexpr uint32_t kRingFree = 0, kRingInUse = 1, kRingInherited = 3;  // 3: a forked child's copy of a parent thread's ring

struct RingHeader {
  int32_t tid;
  uint32_t in_use;
  uint64_t written;   // records ever written by the owner thread (release store after each)
  char thread_name[16];
  uint64_t reserved[4];
};

// What a record describes. Values are part of the format: append only.
enum class RecordKind : uint16_t {
  kNone = 0,
  kContextCreate = 1, kContextDestroy = 2,
  kStreamCreate = 10, kStreamDestroy = 11, kStreamSynchronize = 12, kStreamQuery = 13,
  kEventCreate = 20, kEventDestroy = 21, kEventRecord = 22, kStreamWaitEvent = 23,
  kEventSynchronize = 24, kEventQuery = 25,
  kDeviceSynchronize = 30, kContextSynchronize = 31,
  kGraphLaunch = 40, kKernelLaunch = 41,
  kIpcGetMemHandle = 50, kIpcOpenMemHandle = 51, kIpcCloseMemHandle = 52,
  kIpcGetEventHandle = 53, kIpcOpenEventHandle = 54,
  kMemCreate = 60, kMemExport = 61, kMemImport = 62, kMemMap = 63, kMemUnmap = 64,
  kMemRelease = 65, kMemAddressReserve = 66, kMemAddressFree = 67,
  kNcclCommInit = 80, kNcclCommFinalize = 81, kNcclGroupApi = 82, kNcclCollApi = 83,
  kNcclP2pApi = 84, kNcclColl = 85, kNcclP2p = 86, kNcclKernelLaunch = 87, kNcclEventStop = 88,
};

// Where in the call the record was written.
enum class RecordPhase : uint8_t { kInstant = 0, kEnter = 1, kExit = 2 };

// Which API produced the record.
enum class RecordApi : uint8_t { kNone = 0, kRuntime = 1, kDriver = 2, kNcclProfiler = 3, kResource = 4 };

// NCCL function ids (NCCL's own ncclFunc_t order for the first five).
enum class NcclFunc : uint8_t {
  kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4,
  kSendRecv = 5, kSend = 6, kRecv = 7, kAllToAll = 8, kGather = 9, kScatter = 10,
  kAllGatherV = 11, kUnknown = 255,
};

// NCCL datatypes (ncclDataType_t order), kUnknown when the name was unexpected.
enum class NcclType : uint8_t {
  kInt8 = 0, kUint8 = 1, kInt32 = 2, kUint32 = 3, kInt64 = 4, kUint64 = 5, kFloat16 = 6,
  kFloat32 = 7, kFloat64 = 8, kBfloat16 = 9, kFloat8e4m3 = 10, kFloat8e5m2 = 11, kUnknown = 255,
};

// 64 bytes. `sequence` = ring index + 1, stored last: a reader trusts a slot only
// when its sequence matches the index it expects (no torn or stale records).
struct Record {
  uint64_t sequence;
  uint64_t time;         // RecorderHeader::clock ticks; the decoder converts to ns
  RecordKind kind;
  RecordPhase phase;
  RecordApi api;
  int32_t aux;           // CUDA records: CUPTI callback id; NCCL op records: root or peer
  uint64_t args[5];      // meaning per kind: see docs/recorder.md
};

static_assert(sizeof(Record) == 64, "recorder records are 64 bytes");
static_assert(sizeof(RingHeader) == 64, "ring headers are 64 bytes");

// NCCL op records pack small fields into args[4]:
//   bits 0-7 func (NcclFunc), 8-15 datatype (NcclType), 16-23 nChannels,
//   24-31 algorithm id, 32-39 protocol id, 40-47 graph captured.
inline uint64_t pack_nccl_details(NcclFunc func, NcclType type, uint8_t channels, uint8_t algo,
                                  uint8_t proto, bool graph) {
  return uint64_t(func) | uint64_t(type) << 8 | uint64_t(channels) << 16 | uint64_t(algo) << 24 |
         uint64_t(proto) << 32 | uint64_t(graph ? 1 : 0) << 40;
}

// Algorithm and protocol names as NCCL spells them; the index is the id stored.
inline constexpr const char* kAlgorithmNames[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                                  "NVLS", "NVLS_TREE", "PAT"};
inline constexpr const char* kProtocolNames[] = {"LL", "LL128", "Simple"};
inline constexpr uint8_t kUnknownId = 255;

inline size_t ring_bytes(uint32_t records_per_ring) {
  return sizeof(RingHeader) + size_t(records_per_ring) * sizeof(Record);
}
inline size_t region_bytes(uint32_t max_threads, uint32_t records_per_ring) {
  size_t header = (sizeof(RecorderHeader) + 63) & ~size_t(63);
  return header + size_t(max_threads) * ring_bytes(records_per_ring);
}
inline size_t ring_offset(uint32_t index, uint32_t records_per_ring) {
  size_t header = (sizeof(RecorderHeader) + 63) & ~size_t(63);
  return header + size_t(index) * ring_bytes(records_per_ring);
}

// Names shared by the writer (parsing NCCL's strings) and the reader (printing).
inline const char* nccl_func_name(NcclFunc func) {
  switch (func) {
    case NcclFunc::kBroadcast: return "Broadcast";
    case NcclFunc::kReduce: return "Reduce";
    case NcclFunc::kAllGather: return "AllGather";
    case NcclFunc::kReduceScatter: return "ReduceScatter";
    case NcclFunc::kAllReduce: return "AllReduce";
    case NcclFunc::kSendRecv: return "SendRecv";
    case NcclFunc::kSend: return "Send";
    case NcclFunc::kRecv: return "Recv";
    case NcclFunc::kAllToAll: return "AlltoAll";
    case NcclFunc::kGather: return "Gather";
    case NcclFunc::kScatter: return "Scatter";
    case NcclFunc::kAllGatherV: return "AllGatherV";
    default: return "unknown";
  }
}
inline const char* nccl_type_name(NcclType type) {
  switch (type) {
    case NcclType::kInt8: return "ncclInt8";
    case NcclType::kUint8: return "ncclUint8";
    case NcclType::kInt32: return "ncclInt32";
    case NcclType::kUint32: return "ncclUint32";
    case NcclType::kInt64: return "ncclInt64";
    case NcclType::kUint64: return "ncclUint64";
    case NcclType::kFloat16: return "ncclFloat16";
    case NcclType::kFloat32: return "ncclFloat32";
    case NcclType::kFloat64: return "ncclFloat64";
    case NcclType::kBfloat16: return "ncclBfloat16";
    case NcclType::kFloat8e4m3: return "ncclFloat8e4m3";
    case NcclType::kFloat8e5m2: return "ncclFloat8e5m2";
    default: return "unknown";
  }
}

}  // namespace nsc::recorder
