#include "cuda/recorder_decoder.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "cuda/recorder_format.h"
#include "util/strings.h"

namespace nsc {
namespace {

using namespace nsc::recorder;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kTwoMiB = 2u << 20;

struct TimedRecord {
  Record record;
  int tid;
  uint32_t ring;
};

struct RingSummary {
  int tid = 0;
  std::string name;
  uint64_t written = 0;
  uint64_t kept = 0;
  uint64_t torn = 0;
};

const char* kind_name(RecordKind kind) {
  switch (kind) {
    case RecordKind::kContextCreate: return "context_create";
    case RecordKind::kContextDestroy: return "context_destroy";
    case RecordKind::kStreamCreate: return "stream_create";
    case RecordKind::kStreamDestroy: return "stream_destroy";
    case RecordKind::kStreamSynchronize: return "stream_synchronize";
    case RecordKind::kStreamQuery: return "stream_query";
    case RecordKind::kEventCreate: return "event_create";
    case RecordKind::kEventDestroy: return "event_destroy";
    case RecordKind::kEventRecord: return "event_record";
    case RecordKind::kStreamWaitEvent: return "stream_wait_event";
    case RecordKind::kEventSynchronize: return "event_synchronize";
    case RecordKind::kEventQuery: return "event_query";
    case RecordKind::kDeviceSynchronize: return "device_synchronize";
    case RecordKind::kContextSynchronize: return "context_synchronize";
    case RecordKind::kGraphLaunch: return "graph_launch";
    case RecordKind::kKernelLaunch: return "kernel_launch";
    case RecordKind::kIpcGetMemHandle: return "ipc_get_mem_handle";
    case RecordKind::kIpcOpenMemHandle: return "ipc_open_mem_handle";
    case RecordKind::kIpcCloseMemHandle: return "ipc_close_mem_handle";
    case RecordKind::kIpcGetEventHandle: return "ipc_get_event_handle";
    case RecordKind::kIpcOpenEventHandle: return "ipc_open_event_handle";
    case RecordKind::kMemCreate: return "mem_create";
    case RecordKind::kMemExport: return "mem_export";
    case RecordKind::kMemImport: return "mem_import";
    case RecordKind::kMemMap: return "mem_map";
    case RecordKind::kMemUnmap: return "mem_unmap";
    case RecordKind::kMemRelease: return "mem_release";
    case RecordKind::kMemAddressReserve: return "mem_address_reserve";
    case RecordKind::kMemAddressFree: return "mem_address_free";
    case RecordKind::kNcclCommInit: return "nccl_comm_init";
    case RecordKind::kNcclCommFinalize: return "nccl_comm_finalize";
    case RecordKind::kNcclGroupApi: return "nccl_group_api";
    case RecordKind::kNcclCollApi: return "nccl_coll_api";
    case RecordKind::kNcclP2pApi: return "nccl_p2p_api";
    case RecordKind::kNcclColl: return "nccl_coll";
    case RecordKind::kNcclP2p: return "nccl_p2p";
    case RecordKind::kNcclKernelLaunch: return "nccl_kernel_launch";
    case RecordKind::kNcclEventStop: return "nccl_event_stop";
    default: return "unknown";
  }
}

const char* phase_name(RecordPhase phase) {
  switch (phase) {
    case RecordPhase::kEnter: return "enter";
    case RecordPhase::kExit: return "exit";
    default: return "instant";
  }
}

const char* api_name(RecordApi api) {
  switch (api) {
    case RecordApi::kRuntime: return "runtime";
    case RecordApi::kDriver: return "driver";
    case RecordApi::kNcclProfiler: return "nccl_profiler";
    case RecordApi::kResource: return "resource";
    default: return "none";
  }
}

// The host call a thread blocked in a synchronize is sitting in.
const char* blocking_call_name(RecordKind kind, RecordApi api) {
  bool driver = api == RecordApi::kDriver;
  switch (kind) {
    case RecordKind::kStreamSynchronize: return driver ? "cuStreamSynchronize" : "cudaStreamSynchronize";
    case RecordKind::kEventSynchronize: return driver ? "cuEventSynchronize" : "cudaEventSynchronize";
    case RecordKind::kDeviceSynchronize: return "cudaDeviceSynchronize";
    case RecordKind::kContextSynchronize: return "cuCtxSynchronize";
    default: return nullptr;
  }
}

bool is_nccl_op(RecordKind kind) {
  return kind == RecordKind::kNcclColl || kind == RecordKind::kNcclP2p ||
         kind == RecordKind::kNcclCollApi || kind == RecordKind::kNcclP2pApi;
}

bool is_stream_op(RecordKind kind) {
  return kind == RecordKind::kEventRecord || kind == RecordKind::kStreamWaitEvent ||
         kind == RecordKind::kStreamSynchronize || kind == RecordKind::kGraphLaunch ||
         kind == RecordKind::kNcclColl || kind == RecordKind::kNcclP2p ||
         kind == RecordKind::kNcclCollApi || kind == RecordKind::kNcclP2pApi ||
         kind == RecordKind::kNcclKernelLaunch;
}

// The stream a record concerns, 0 when none.
uint64_t stream_of(const Record& record) {
  switch (record.kind) {
    case RecordKind::kEventRecord: return record.args[1];
    case RecordKind::kStreamWaitEvent: case RecordKind::kStreamSynchronize:
    case RecordKind::kStreamCreate: case RecordKind::kStreamDestroy:
      return record.args[0];
    case RecordKind::kGraphLaunch: return record.args[1];
    case RecordKind::kNcclColl: case RecordKind::kNcclP2p: case RecordKind::kNcclCollApi:
    case RecordKind::kNcclP2pApi: return record.args[3];
    case RecordKind::kNcclKernelLaunch: return record.args[3];
    default: return 0;
  }
}

std::string id_name(uint8_t id, const char* const* names, size_t count) {
  return id < count ? names[id] : "unknown";
}

// An NCCL op record as JSON (shared by per-comm lists, stream ops and chains).
nlohmann::json describe_nccl_op(const Record& record, int tid) {
  uint64_t details = record.args[4];
  auto func = NcclFunc(details & 0xff);
  auto type = NcclType((details >> 8) & 0xff);
  nlohmann::json op = {{"record", kind_name(record.kind)},
                       {"comm_hash", hex(record.args[0])},
                       {"collective", nccl_func_name(func)},
                       {"count", record.args[2]},
                       {"datatype", nccl_type_name(type)},
                       {"stream", record.args[3] ? nlohmann::json(hex(record.args[3])) : nullptr},
                       {"tid", tid},
                       {"time_ns", record.time}};
  if (record.kind == RecordKind::kNcclColl) {
    op["seq"] = record.args[1];
    op["root"] = record.aux;
    op["nchannels"] = (details >> 16) & 0xff;
    op["algorithm"] = id_name((details >> 24) & 0xff, kAlgorithmNames, std::size(kAlgorithmNames));
    op["protocol"] = id_name((details >> 32) & 0xff, kProtocolNames, std::size(kProtocolNames));
  } else if (record.kind == RecordKind::kNcclP2p) {
    op["peer"] = record.aux;
    op["nchannels"] = (details >> 16) & 0xff;
  } else if (record.kind == RecordKind::kNcclCollApi) {
    op["root"] = record.aux;
    op["graph_captured"] = ((details >> 40) & 1) != 0;
  } else if (record.kind == RecordKind::kNcclP2pApi) {
    op["graph_captured"] = ((details >> 40) & 1) != 0;
  }
  return op;
}

nlohmann::json describe_record(const TimedRecord& timed) {
  const Record& record = timed.record;
  if (is_nccl_op(record.kind)) {
    nlohmann::json op = describe_nccl_op(record, timed.tid);
    op["phase"] = phase_name(record.phase);
    return op;
  }
  nlohmann::json entry = {{"record", kind_name(record.kind)}, {"phase", phase_name(record.phase)},
                          {"api", api_name(record.api)}, {"tid", timed.tid},
                          {"time_ns", record.time}};
  const uint64_t* a = record.args;
  switch (record.kind) {
    case RecordKind::kEventRecord: entry["event"] = hex(a[0]); entry["stream"] = hex(a[1]); break;
    case RecordKind::kStreamWaitEvent: entry["stream"] = hex(a[0]); entry["event"] = hex(a[1]); break;
    case RecordKind::kStreamSynchronize: case RecordKind::kStreamCreate:
    case RecordKind::kStreamDestroy: entry["stream"] = hex(a[0]); break;
    case RecordKind::kEventSynchronize: case RecordKind::kEventCreate:
    case RecordKind::kEventDestroy: entry["event"] = hex(a[0]); break;
    case RecordKind::kGraphLaunch: entry["graph_exec"] = hex(a[0]); entry["stream"] = hex(a[1]); break;
    case RecordKind::kNcclKernelLaunch: entry["comm_hash"] = hex(a[0]); entry["stream"] = hex(a[3]); break;
    case RecordKind::kNcclEventStop:
      entry["comm_hash"] = hex(a[0]);
      entry["stopped"] = kind_name(RecordKind(a[4] >> 48));
      entry["seq"] = a[1];
      break;
    case RecordKind::kNcclCommInit: case RecordKind::kNcclCommFinalize:
      entry["comm_hash"] = hex(a[0]);
      break;
    default:
      entry["args"] = {hex(a[0]), hex(a[1]), hex(a[2]), hex(a[3]), hex(a[4])};
  }
  if (record.phase == RecordPhase::kExit && record.kind != RecordKind::kNcclEventStop &&
      record.kind != RecordKind::kMemMap)
    entry["result"] = a[3];
  return entry;
}

// A record's clock ticks as CLOCK_MONOTONIC nanoseconds of the recorded process.
uint64_t ticks_to_ns(const RecorderHeader& header, uint64_t ticks) {
  if (header.clock == kClockMonotonic || header.ticks_per_second == 0) return ticks;
  long double delta = (long double)(int64_t)(ticks - header.start_ticks);
  long double ns = delta * 1e9L / (long double)header.ticks_per_second;
  // A torn or hostile header (tiny ticks_per_second) puts this outside int64: converting it would be UB.
  constexpr long double kLimit = 9.2e18L;
  ns = std::max(-kLimit, std::min(kLimit, ns));
  return header.start_monotonic_ns + (int64_t)ns;
}

bool read_exact(Target& target, uint64_t address, void* buffer, size_t size, std::string* why) {
  ReadError error;
  if (target.read(address, buffer, size, &error)) return true;
  *why = error.message();
  return false;
}

// Header sanity: the layout this decoder knows, sizes that fit the region.
bool header_plausible(const RecorderHeader& header, uint64_t address, std::string* why) {
  if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0) return (*why = "no magic"), false;
  if (header.schema_version != kSchemaVersion)
    return (*why = "schema version " + std::to_string(header.schema_version) + " not understood"), false;
  if (header.record_size != sizeof(Record) || header.ring_header_size != sizeof(RingHeader) ||
      header.header_size != sizeof(RecorderHeader))
    return (*why = "record/header sizes differ from this decoder's"), false;
  if (header.self_address != address)
    return (*why = "header names itself " + hex(header.self_address) + ", found at " + hex(address)), false;
  uint32_t records = header.records_per_ring;
  if (records == 0 || (records & (records - 1)) != 0 || header.max_threads == 0 ||
      header.region_size != region_bytes(header.max_threads, records))
    return (*why = "ring geometry inconsistent"), false;
  return true;
}

bool region_may_hold_recorder(const MemoryRegion& region) {
  if (!region.readable || !region.writable || region.shared || !region.saved) return false;
  // Private anonymous memory only: file-backed mappings cannot hold the region.
  return region.path.empty() || region.path[0] == '[';
}

}  // namespace

namespace {

// True when a magic sits at `page`; false on no magic or an unreadable page (`unreadable` set).
bool magic_at(Target& target, uint64_t page, bool* unreadable) {
  char probe[sizeof(kMagic)];
  const uint8_t* direct = target.scan_direct(page, sizeof(probe));
  if (direct != nullptr) return std::memcmp(direct, kMagic, sizeof(kMagic)) == 0;
  ReadError error;
  if (!target.scan_read(page, probe, sizeof(probe), &error)) {
    *unreadable = true;
    return false;
  }
  return std::memcmp(probe, kMagic, sizeof(kMagic)) == 0;
}

// End of the run of back-to-back regions holding `address` (a sliced core splits one
// mapping into a kept segment and an unsaved one), or 0 when no region holds it.
uint64_t contiguous_end(const std::vector<MemoryRegion>& regions, uint64_t address) {
  const MemoryRegion* region = find_region(regions, address);
  if (region == nullptr) return 0;
  uint64_t end = region->end;
  for (const MemoryRegion* next = find_region(regions, end); next != nullptr && next->start == end;
       next = find_region(regions, end))
    end = next->end;
  return end;
}

// Validates a magic hit (the whole region must fit its mapping); records why a hit was rejected.
bool accept_header(Target& target, uint64_t page, std::vector<std::string>* rejected) {
  RecorderHeader header;
  std::string why;
  uint64_t mapping_end = contiguous_end(target.regions(), page);
  if (read_exact(target, page, &header, sizeof(header), &why) && header_plausible(header, page, &why)) {
    if (mapping_end == 0 || header.region_size <= mapping_end - page) return true;
    why = "region of " + std::to_string(header.region_size) + " bytes does not fit its mapping";
  }
  if (rejected) rejected->push_back(hex(page) + ": " + why);
  return false;
}

}  // namespace

std::vector<uint64_t> find_recorder_regions(Target& target, std::vector<std::string>* rejected) {
  std::vector<uint64_t> found;
  // Fast path: the region is its own mmap, so usually the start of a mapping.
  for (const MemoryRegion& region : target.regions()) {
    if (!region_may_hold_recorder(region) || region.size() < sizeof(RecorderHeader)) continue;
    bool unreadable = false;
    if (magic_at(target, region.start, &unreadable) && accept_header(target, region.start, rejected))
      found.push_back(region.start);
  }
  if (!found.empty()) return found;
  // A page-by-page sweep costs a read per page live: only when the library is (or may be) mapped.
  const auto& files = target.mapped_files();
  bool library_mapped = std::any_of(files.begin(), files.end(), [](const MappedFile& file) {
    return file.path.find("ncclscope-recorder") != std::string::npos;
  });
  if (!files.empty() && !library_mapped) return found;
  // The kernel may have merged it with a neighbouring anonymous mapping: try every page.
  for (const MemoryRegion& region : target.regions()) {
    if (!region_may_hold_recorder(region)) continue;
    uint64_t start = (region.start + kPage - 1) & ~(kPage - 1);
    for (uint64_t page = start + kPage; page + sizeof(RecorderHeader) <= region.end; page += kPage) {
      bool unreadable = false;
      if (magic_at(target, page, &unreadable)) {
        if (accept_header(target, page, rejected)) found.push_back(page);
      } else if (unreadable) {
        break;
      }
    }
  }
  return found;
}

namespace {

struct Timeline {
  std::vector<TimedRecord> records;
  std::vector<RingSummary> rings;
};

Timeline read_rings(Target& target, uint64_t address, const RecorderHeader& header,
                    const RecorderDecodeOptions& options, nlohmann::json& warnings,
                    nlohmann::json* errors) {
  Timeline timeline;
  uint64_t rings = std::min<uint64_t>({header.threads_claimed, header.max_threads, options.max_threads});
  uint64_t per_ring = std::min<uint64_t>(header.records_per_ring, options.max_records_per_ring);
  std::vector<Record> buffer(per_ring);
  for (uint32_t index = 0; index < rings; ++index) {
    uint64_t ring_address = address + ring_offset(index, header.records_per_ring);
    RingHeader ring;
    std::string why;
    if (!read_exact(target, ring_address, &ring, sizeof(ring), &why)) {
      if (errors) errors->push_back({{"kind", "read"}, {"subject", "recorder ring " + std::to_string(index)},
                                     {"address", hex(ring_address)}, {"reason", why}});
      continue;
    }
    if (ring.in_use != 1) continue;  // claimed but not yet initialised by its thread
    RingSummary summary;
    summary.tid = ring.tid;
    summary.name = valid_utf8(std::string(ring.thread_name, strnlen(ring.thread_name, sizeof(ring.thread_name))));
    summary.written = ring.written;
    uint64_t available = std::min<uint64_t>(ring.written, header.records_per_ring);
    uint64_t first = ring.written - available;
    if (!read_exact(target, ring_address + sizeof(RingHeader), buffer.data(),
                    std::min<uint64_t>(per_ring, header.records_per_ring) * sizeof(Record), &why)) {
      if (errors) errors->push_back({{"kind", "read"}, {"subject", "recorder ring " + std::to_string(index) + " records"},
                                     {"address", hex(ring_address + sizeof(RingHeader))}, {"reason", why}});
      timeline.rings.push_back(summary);
      continue;
    }
    // Live targets keep writing: a slot whose index the writer may have reached again while we
    // copied could be torn even with a matching sequence. Re-read `written` and drop those.
    RingHeader after;
    if (!target.is_core() && read_exact(target, ring_address, &after, sizeof(after), &why) &&
        after.written > ring.written) {
      uint64_t safe_from = after.written + 1 > header.records_per_ring ? after.written + 1 - header.records_per_ring : 0;
      if (safe_from > first) {
        summary.torn += std::min(safe_from, ring.written) - first;
        first = std::min(safe_from, ring.written);
      }
    }
    for (uint64_t i = first; i < ring.written; ++i) {
      uint64_t slot = i & (header.records_per_ring - 1);
      if (slot >= per_ring) continue;
      const Record& record = buffer[slot];
      // A slot overwritten after `written` was read, or torn mid-write: skip it.
      if (record.sequence != i + 1) {
        ++summary.torn;
        continue;
      }
      timeline.records.push_back({record, ring.tid, index});
      timeline.records.back().record.time = ticks_to_ns(header, record.time);
      ++summary.kept;
    }
    if (summary.torn > 1)
      warnings.push_back("thread " + std::to_string(ring.tid) + ": " + std::to_string(summary.torn) +
                         " records torn or overwritten during the read");
    timeline.rings.push_back(summary);
  }
  std::stable_sort(timeline.records.begin(), timeline.records.end(),
                   [](const TimedRecord& a, const TimedRecord& b) { return a.record.time < b.record.time; });
  return timeline;
}

nlohmann::json sources_of(uint32_t bits) {
  nlohmann::json names = nlohmann::json::array();
  if (bits & kSourceCupti) names.push_back("cupti");
  if (bits & kSourceNcclProfiler) names.push_back("nccl_profiler");
  if (bits & kSourceDirect) names.push_back("direct");
  return names;
}

struct StreamState {
  std::vector<nlohmann::json> recent;         // bounded, newest last
  std::vector<nlohmann::json> pending_waits;  // waits after the last completed synchronize
  std::vector<int> blocked_threads;
  nlohmann::json last_nccl_op;
  bool created = false, destroyed = false;
};

struct EventState {
  uint64_t stream = 0;  // last recorded on
  uint64_t time_ns = 0;
  nlohmann::json after_nccl_op;  // last NCCL op on that stream before the record
};

void push_bounded(std::vector<nlohmann::json>& list, nlohmann::json entry, uint64_t limit) {
  list.push_back(std::move(entry));
  if (list.size() > limit) list.erase(list.begin());
}

// Replays the merged timeline into streams, events, threads, comms and handles.
void replay(const Timeline& timeline, const RecorderHeader& header, const RecorderDecodeOptions& options,
            nlohmann::json& section) {
  std::map<uint64_t, StreamState> streams;
  std::map<uint64_t, EventState> events;
  std::map<int, const TimedRecord*> open_syncs;  // tid -> sync entered, not exited
  std::map<uint64_t, nlohmann::json> comm_ops;   // comm hash -> ops
  std::map<uint64_t, std::map<std::string, uint64_t>> comm_last_seq;
  nlohmann::json ipc_exported = nlohmann::json::array(), ipc_imported = nlohmann::json::array();
  std::map<uint64_t, size_t> open_imports;       // device address -> index in ipc_imported
  nlohmann::json cumem = {{"created", nlohmann::json::array()}, {"exported", nlohmann::json::array()},
                          {"imported", nlohmann::json::array()}, {"mapped", nlohmann::json::array()}};
  std::map<uint64_t, size_t> live_maps;           // address -> index in mapped
  std::set<uint64_t> released_handles;
  nlohmann::json contexts = nlohmann::json::array();

  for (const TimedRecord& timed : timeline.records) {
    const Record& r = timed.record;
    uint64_t stream = stream_of(r);
    if (stream != 0 || is_stream_op(r.kind)) {
      StreamState& state = streams[stream];
      if (is_stream_op(r.kind) && !(r.kind == RecordKind::kStreamSynchronize && r.phase == RecordPhase::kExit))
        push_bounded(state.recent, describe_record(timed), options.recent_ops_per_stream);
      if (r.kind == RecordKind::kStreamCreate) state.created = true;
      if (r.kind == RecordKind::kStreamDestroy) state.destroyed = true;
      if (r.kind == RecordKind::kNcclColl || r.kind == RecordKind::kNcclP2p)
        state.last_nccl_op = describe_nccl_op(r, timed.tid);
      if (r.kind == RecordKind::kStreamWaitEvent) {
        nlohmann::json wait = {{"event", hex(r.args[1])}, {"tid", timed.tid}, {"time_ns", r.time}};
        auto event = events.find(r.args[1]);
        if (event != events.end()) {
          wait["event_recorded_on"] = hex(event->second.stream);
          wait["event_recorded_ns"] = event->second.time_ns;
          wait["after_nccl_op"] = event->second.after_nccl_op;
        } else {
          wait["event_recorded_on"] = nullptr;  // recorded before the ring's window, or never
        }
        state.pending_waits.push_back(wait);
      }
      // A synchronize that returned success proves every earlier wait was satisfied.
      if (r.kind == RecordKind::kStreamSynchronize && r.phase == RecordPhase::kExit && r.args[3] == 0)
        state.pending_waits.clear();
    }
    switch (r.kind) {
      case RecordKind::kEventRecord: {
        EventState& event = events[r.args[0]];
        event.stream = r.args[1];
        event.time_ns = r.time;
        auto on = streams.find(r.args[1]);
        event.after_nccl_op = on != streams.end() ? on->second.last_nccl_op : nlohmann::json(nullptr);
        break;
      }
      case RecordKind::kStreamSynchronize: case RecordKind::kEventSynchronize:
      case RecordKind::kDeviceSynchronize: case RecordKind::kContextSynchronize:
        if (r.phase == RecordPhase::kEnter) open_syncs[timed.tid] = &timed;
        else open_syncs.erase(timed.tid);
        break;
      case RecordKind::kNcclColl: case RecordKind::kNcclP2p:
      case RecordKind::kNcclCollApi: case RecordKind::kNcclP2pApi: {
        nlohmann::json& ops = comm_ops[r.args[0]];
        if (!ops.is_array()) ops = nlohmann::json::array();
        ops.push_back(describe_nccl_op(r, timed.tid));
        if (ops.size() > options.ops_per_comm) ops.erase(ops.begin());
        if (r.kind == RecordKind::kNcclColl) {
          uint64_t& last = comm_last_seq[r.args[0]][nccl_func_name(NcclFunc(r.args[4] & 0xff))];
          last = std::max(last, r.args[1]);
        }
        break;
      }
      case RecordKind::kIpcGetMemHandle: case RecordKind::kIpcGetEventHandle:
        if (r.args[3] == 0)
          ipc_exported.push_back({{"kind", r.kind == RecordKind::kIpcGetMemHandle ? "cuda_ipc_mem" : "cuda_ipc_event"},
                                  {"address", hex(r.args[0])}, {"handle_fingerprint", hex(r.args[1])},
                                  {"owner_pid", header.pid}, {"tid", timed.tid}, {"time_ns", r.time}});
        break;
      case RecordKind::kIpcOpenMemHandle: case RecordKind::kIpcOpenEventHandle:
        if (r.args[3] == 0) {
          bool memory = r.kind == RecordKind::kIpcOpenMemHandle;
          ipc_imported.push_back({{"kind", memory ? "cuda_ipc_mem" : "cuda_ipc_event"},
                                  {"address", hex(r.args[0])}, {"handle_fingerprint", hex(r.args[1])},
                                  {"importer_pid", header.pid}, {"tid", timed.tid},
                                  {"time_ns", r.time}, {"closed", memory ? nlohmann::json(false) : nlohmann::json(nullptr)}});
          if (memory) open_imports[r.args[0]] = ipc_imported.size() - 1;
        }
        break;
      case RecordKind::kIpcCloseMemHandle: {
        auto open = open_imports.find(r.args[0]);
        if (open != open_imports.end()) {
          ipc_imported[open->second]["closed"] = true;
          ipc_imported[open->second]["closed_ns"] = r.time;
          open_imports.erase(open);
        }
        break;
      }
      case RecordKind::kMemCreate:
        if (r.args[3] == 0)
          cumem["created"].push_back({{"handle", hex(r.args[0])}, {"size", r.args[1]}, {"tid", timed.tid}, {"time_ns", r.time}});
        break;
      case RecordKind::kMemExport:
        if (r.args[3] == 0)
          cumem["exported"].push_back({{"handle", hex(r.args[0])}, {"handle_type", r.args[1]},
                                       {"shareable", r.args[1] == 1 ? nlohmann::json(r.args[2]) : nlohmann::json(hex(r.args[2]))},
                                       {"owner_pid", header.pid}, {"tid", timed.tid}, {"time_ns", r.time}});
        break;
      case RecordKind::kMemImport:
        if (r.args[3] == 0)
          cumem["imported"].push_back({{"handle", hex(r.args[0])}, {"handle_type", r.args[1]},
                                       {"shareable", r.args[1] == 1 ? nlohmann::json(r.args[2]) : nlohmann::json(hex(r.args[2]))},
                                       {"importer_pid", header.pid}, {"released", false}, {"tid", timed.tid}, {"time_ns", r.time}});
        break;
      case RecordKind::kMemMap:
        if (r.args[3] == 0) {
          cumem["mapped"].push_back({{"address", hex(r.args[0])}, {"size", r.args[1]}, {"offset", r.args[2]},
                                     {"handle", hex(r.args[4])}, {"unmapped", false}, {"tid", timed.tid}, {"time_ns", r.time},
                                     // cuMem maps must be multiples of the allocation granularity (2 MiB on current GPUs).
                                     {"aligned_to_2mib", r.args[0] % kTwoMiB == 0 && r.args[1] % kTwoMiB == 0 && r.args[2] % kTwoMiB == 0}});
          live_maps[r.args[0]] = cumem["mapped"].size() - 1;
        }
        break;
      case RecordKind::kMemUnmap: {
        auto map = live_maps.find(r.args[0]);
        if (map != live_maps.end() && r.args[3] == 0) {
          cumem["mapped"][map->second]["unmapped"] = true;
          live_maps.erase(map);
        }
        break;
      }
      case RecordKind::kMemRelease:
        if (r.args[3] == 0) released_handles.insert(r.args[0]);
        break;
      case RecordKind::kContextCreate:
        contexts.push_back({{"context", hex(r.args[0])}, {"destroyed", false}, {"time_ns", r.time}});
        break;
      case RecordKind::kContextDestroy:
        for (auto& context : contexts)
          if (context["context"] == hex(r.args[0])) context["destroyed"] = true;
        break;
      default:
        break;
    }
  }
  for (auto& imported : cumem["imported"])
    for (uint64_t handle : released_handles)
      if (imported["handle"] == hex(handle)) imported["released"] = true;

  // Threads, with what each is blocked in (a synchronize entered and never left).
  nlohmann::json threads = nlohmann::json::array();
  for (const RingSummary& ring : timeline.rings) {
    nlohmann::json thread = {{"tid", ring.tid}, {"name", ring.name}, {"records_written", ring.written},
                             {"records_kept", ring.kept}, {"blocked_in", nullptr}};
    auto open = open_syncs.find(ring.tid);
    if (open != open_syncs.end()) {
      const Record& r = open->second->record;
      nlohmann::json blocked = {{"call", blocking_call_name(r.kind, r.api)}, {"since_ns", r.time}};
      if (r.kind == RecordKind::kStreamSynchronize) {
        blocked["stream"] = hex(r.args[0]);
        streams[r.args[0]].blocked_threads.push_back(ring.tid);
      }
      if (r.kind == RecordKind::kEventSynchronize) {
        blocked["event"] = hex(r.args[0]);
        auto event = events.find(r.args[0]);
        if (event != events.end()) {
          blocked["event_recorded_on"] = hex(event->second.stream);
          blocked["event_recorded_ns"] = event->second.time_ns;
          blocked["after_nccl_op"] = event->second.after_nccl_op;
        }
      }
      thread["blocked_in"] = blocked;
    }
    threads.push_back(thread);
  }
  section["threads"] = threads;

  nlohmann::json stream_list = nlohmann::json::array();
  for (auto& [handle, state] : streams) {
    stream_list.push_back({{"stream", hex(handle)}, {"legacy_default", handle == 0},
                           {"created_in_window", state.created}, {"destroyed", state.destroyed},
                           {"recent_ops", state.recent}, {"pending_event_waits", state.pending_waits},
                           {"blocked_threads", state.blocked_threads}, {"last_nccl_op", state.last_nccl_op}});
  }
  section["streams"] = stream_list;

  nlohmann::json event_list = nlohmann::json::array();
  for (auto& [handle, state] : events)
    event_list.push_back({{"event", hex(handle)}, {"last_recorded_on", hex(state.stream)},
                          {"recorded_ns", state.time_ns}, {"after_nccl_op", state.after_nccl_op}});
  section["events"] = event_list;

  nlohmann::json never_closed = nlohmann::json::array();
  for (const auto& imported : ipc_imported)
    if (imported["closed"] == false) never_closed.push_back(imported);
  section["ipc"] = {{"exported", ipc_exported}, {"imported", ipc_imported},
                    {"opened_never_closed", never_closed}, {"cumem", cumem}};
  section["contexts"] = contexts;

  nlohmann::json comms = nlohmann::json::array();
  for (uint32_t i = 0; i < std::min<uint32_t>(header.comms_claimed, kMaxComms); ++i) {
    const CommEntry& entry = header.comms[i];
    if (entry.in_use == 0) continue;
    nlohmann::json comm = {{"comm_hash", hex(entry.comm_hash)}, {"rank", entry.rank},
                           {"nranks", entry.nranks}, {"nnodes", entry.nnodes},
                           {"name", valid_utf8(std::string(entry.name, strnlen(entry.name, kCommNameSize)))},
                           {"finalized", entry.in_use == 2}};
    comm["last_seq"] = nlohmann::json::object();
    for (auto& [func, seq] : comm_last_seq[entry.comm_hash]) comm["last_seq"][func] = seq;
    nlohmann::json& ops = comm_ops[entry.comm_hash];
    comm["ops"] = ops.is_array() ? ops : nlohmann::json::array();
    comms.push_back(comm);
  }
  section["comms"] = comms;
}

}  // namespace

nlohmann::json decode_recorder(Target& target, nlohmann::json* errors, const RecorderDecodeOptions& options) {
  nlohmann::json section = {{"found", false}};
  std::vector<std::string> rejected;
  std::vector<uint64_t> regions = find_recorder_regions(target, &rejected);
  if (!rejected.empty()) section["rejected"] = rejected;
  if (regions.empty()) {
    section["why"] = "no flight recorder region in this process (load libncclscope-recorder.so "
                     "with CUDA_INJECTION64_PATH or NCCL_PROFILER_PLUGIN)";
    return section;
  }
  nlohmann::json warnings = nlohmann::json::array();
  if (regions.size() > 1) warnings.push_back(std::to_string(regions.size()) + " recorder regions; decoding the first");
  uint64_t address = regions.front();
  RecorderHeader header;
  std::string why;
  if (!read_exact(target, address, &header, sizeof(header), &why)) {
    section["why"] = "header at " + hex(address) + ": " + why;
    return section;
  }
  section["found"] = true;
  section["address"] = hex(address);
  section["schema_version"] = header.schema_version;
  section["pid"] = header.pid;
  section["sources"] = sources_of(header.sources);
  section["start_realtime_ns"] = header.start_realtime_ns;
  section["start_monotonic_ns"] = header.start_monotonic_ns;
  section["clock"] = header.clock == kClockTsc ? "tsc" : "monotonic";
  section["ticks_per_second"] = header.ticks_per_second;
  section["records_per_ring"] = header.records_per_ring;
  section["max_threads"] = header.max_threads;
  section["threads_dropped"] = header.dropped_threads;
  if (header.dropped_threads > 0)
    warnings.push_back(std::to_string(header.dropped_threads) + " threads found no free ring and were not recorded");
  Timeline timeline = read_rings(target, address, header, options, warnings, errors);
  section["last_record_ns"] = timeline.records.empty() ? nlohmann::json(nullptr)
                                                       : nlohmann::json(timeline.records.back().record.time);
  replay(timeline, header, options, section);
  section["chains"] = build_stream_chains(section);
  if (options.include_records) {
    nlohmann::json records = nlohmann::json::array();
    for (const TimedRecord& timed : timeline.records) records.push_back(describe_record(timed));
    section["records"] = records;
  }
  section["warnings"] = warnings;
  return section;
}

namespace {

// Host time of a record field, or "no bound" when absent (older documents).
uint64_t time_or_unbounded(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number_unsigned() ? it->get<uint64_t>() : UINT64_MAX;
}

// The last wait on `stream` enqueued before `before_ns`, or nullptr.
const nlohmann::json* last_wait_before(const nlohmann::json& stream, uint64_t before_ns) {
  const nlohmann::json* last = nullptr;
  for (const auto& wait : stream["pending_event_waits"])
    if (time_or_unbounded(wait, "time_ns") < before_ns || before_ns == UINT64_MAX) last = &wait;
  return last;
}

}  // namespace

// Follows stream order backwards from what a host thread waits for. At each
// stream only work enqueued before the point that matters counts (the
// synchronize, or the event record the previous hop waits for): its last NCCL
// operation, and its last event wait. Whichever was enqueued later is what that
// point waits behind: an NCCL operation ends the chain (the triage says what it
// waits for); a wait leads to the stream its event was recorded on. This keeps
// NCCL's own join waits (the user stream waiting on the internal stream before
// the kernel launch) out of the chain: they precede the operation.
nlohmann::json build_stream_chains(const nlohmann::json& recorder) {
  nlohmann::json chains = nlohmann::json::array();
  if (!recorder.contains("threads") || !recorder.contains("streams")) return chains;
  std::map<std::string, const nlohmann::json*> streams;
  for (const auto& stream : recorder["streams"]) streams[stream["stream"].get<std::string>()] = &stream;
  for (const auto& thread : recorder["threads"]) {
    const nlohmann::json& blocked = thread["blocked_in"];
    if (!blocked.is_object()) continue;
    nlohmann::json chain = nlohmann::json::array();
    chain.push_back({{"step", "host_thread_blocked"}, {"tid", thread["tid"]}, {"call", blocked["call"]},
                     {"stream", blocked.value("stream", nlohmann::json(nullptr))},
                     {"event", blocked.value("event", nlohmann::json(nullptr))}});
    nlohmann::json current = blocked.value("stream", nlohmann::json(nullptr));
    uint64_t before_ns = time_or_unbounded(blocked, "since_ns");
    nlohmann::json shown_op;  // the NCCL op the last step already named ("after ...")
    if (blocked.contains("event_recorded_on")) {
      chain.push_back({{"step", "event_recorded"}, {"event", blocked["event"]},
                       {"stream", blocked["event_recorded_on"]}, {"after_nccl_op", blocked["after_nccl_op"]}});
      current = blocked["event_recorded_on"];
      before_ns = time_or_unbounded(blocked, "event_recorded_ns");
      shown_op = blocked["after_nccl_op"];
    }
    std::set<std::pair<std::string, uint64_t>> seen;  // (stream, point in its order)
    for (int hop = 0; hop < 8 && current.is_string() && seen.insert({current.get<std::string>(), before_ns}).second;
         ++hop) {
      auto stream = streams.find(current.get<std::string>());
      if (stream == streams.end()) break;
      nlohmann::json op = shown_op;
      if (!op.is_object()) {
        const nlohmann::json& last = (*stream->second)["last_nccl_op"];
        if (last.is_object() && time_or_unbounded(last, "time_ns") < before_ns) op = last;
      }
      const nlohmann::json* wait = last_wait_before(*stream->second, before_ns);
      bool op_is_later = op.is_object() &&
                         (wait == nullptr || time_or_unbounded(op, "time_ns") > time_or_unbounded(*wait, "time_ns"));
      if (wait == nullptr || op_is_later) {
        if (op.is_object() && !shown_op.is_object())
          chain.push_back({{"step", "stream_runs_nccl_op"}, {"stream", current}, {"nccl_op", op}});
        break;
      }
      chain.push_back({{"step", "stream_waits_event"}, {"stream", current}, {"event", (*wait)["event"]},
                       {"event_recorded_on", (*wait)["event_recorded_on"]},
                       {"after_nccl_op", wait->value("after_nccl_op", nlohmann::json(nullptr))}});
      current = (*wait)["event_recorded_on"];
      before_ns = time_or_unbounded(*wait, "event_recorded_ns");
      shown_op = wait->value("after_nccl_op", nlohmann::json(nullptr));
    }
    chains.push_back({{"tid", thread["tid"]}, {"steps", chain}});
  }
  return chains;
}

}  // namespace nsc
