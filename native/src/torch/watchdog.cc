#include "torch/watchdog.h"

#include <algorithm>
#include <map>

#include "target/core_notes.h"
#include "torch/torch_build.h"
#include "torch/torch_layout.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc {
namespace {

using json = nlohmann::json;

// Itanium C++ ABI: an object's vptr is its vtable symbol + 16 (offset-to-top, typeinfo).
constexpr uint64_t kVtableHeader = 16;
// libstdc++'s std::tuple<void (C::*)(), C*> keeps its last element first: in the thread's
// _State_impl the C* is the word after the vptr (checked against the wheel's headers by
// scripts/heartbeat-offsets.cpp; the process group's pointer back confirms each object).
constexpr uint64_t kStateObjectOffset = 8;

// Readable regions sorted by start, for "does this word point at memory".
class RegionIndex {
 public:
  explicit RegionIndex(const std::vector<MemoryRegion>& regions) {
    for (const MemoryRegion& region : regions)
      if (region.readable) regions_.push_back(&region);
    std::sort(regions_.begin(), regions_.end(), [](auto* a, auto* b) { return a->start < b->start; });
  }
  const MemoryRegion* find(uint64_t address) const {
    auto it = std::upper_bound(regions_.begin(), regions_.end(), address,
                               [](uint64_t value, const MemoryRegion* region) { return value < region->start; });
    if (it == regions_.begin()) return nullptr;
    --it;
    return address < (*it)->end ? *it : nullptr;
  }

 private:
  std::vector<const MemoryRegion*> regions_;
};

std::optional<uint64_t> read_word(Target& target, uint64_t address) {
  uint64_t value = 0;
  ReadError error;
  if (!target.read_value(address, &value, &error)) return std::nullopt;
  return value;
}

// The outermost word on the thread's stack (from its stack pointer up: the TCB's start
// argument, else execute_native_thread_routine's frame) that points at an object starting
// with one of the vptrs; outermost, so that a stale copy in a deeper frame never wins.
struct StateHit {
  int tid = 0;
  uint64_t slot = 0, state = 0, vptr = 0;
  uint64_t below_top = 0;  // bytes from the slot to its stack's end
};
std::optional<StateHit> find_thread_state(Target& target, const RegionIndex& regions, uint64_t stack_pointer,
                                          const std::vector<uint64_t>& vptrs) {
  const MemoryRegion* stack = regions.find(stack_pointer);
  if (stack == nullptr) return std::nullopt;
  uint64_t start = stack_pointer & ~uint64_t{7};
  uint64_t length = std::min(stack->end - start, kWatchdogStackScanBytes);
  std::vector<uint64_t> words(length / 8);
  ReadError error;
  if (!target.scan_read(start, words.data(), words.size() * 8, &error)) return std::nullopt;
  for (size_t i = words.size(); i-- > 0;) {
    uint64_t word = words[i];
    if (word == 0 || word % 16 != 0) continue;  // malloc'd: 16-aligned
    const MemoryRegion* region = regions.find(word);
    if (region == nullptr || !region->writable) continue;
    std::optional<uint64_t> first = read_word(target, word);
    if (first && std::find(vptrs.begin(), vptrs.end(), *first) != vptrs.end())
      return StateHit{0, start + 8 * i, word, *first, stack->end - (start + 8 * i)};
  }
  return std::nullopt;
}

// An integer member read by its DWARF offset and size (atomics, durations, time points and
// bools are plain integers in memory).
// Why a member is missing: the profile's struct lacks it (a torch build without that member).
std::string absent_member(const ObjectView& view, const std::string& path) {
  return "not in this torch build (" + (view.type() ? view.type()->name : std::string("the struct")) + " has no member " +
         path + ")";
}

Fetched<int64_t> member_integer(const ObjectView& view, const std::string& path) {
  std::string why;
  std::optional<ResolvedField> field = view.resolve(path, &why);
  if (!field) return Fetched<int64_t>::missing(absent_member(view, path));
  uint64_t size = field->member->size;
  if (size != 1 && size != 2 && size != 4 && size != 8)
    return Fetched<int64_t>::missing(path + ": " + std::to_string(size) + " bytes, not an integer");
  Fetched<uint64_t> raw = read_raw_integer(*view.target(), view.address() + field->offset, size);
  if (!raw.ok()) return Fetched<int64_t>::missing(raw.unavailable, raw.address);
  Fetched<int64_t> out;
  out.value = sign_extend(*raw.value, size);
  out.address = raw.address;
  return out;
}

// The first word of a member (unique_ptr, intrusive_ptr, shared_ptr, exception_ptr).
Fetched<uint64_t> member_word(const ObjectView& view, const std::string& path) {
  std::string why;
  std::optional<ResolvedField> field = view.resolve(path, &why);
  if (!field) return Fetched<uint64_t>::missing(absent_member(view, path));
  return read_raw_integer(*view.target(), view.address() + field->offset, 8);
}

// The process group of a Watchdog / HeartbeatMonitor, believed only when it points back.
std::string check_points_back(const ObjectView& group, const std::string& member, uint64_t object) {
  Fetched<uint64_t> back = member_word(group, member);
  if (!back.ok()) return "ProcessGroupNCCL at " + hex(group.address()) + ": " + member + ": " + back.unavailable;
  if (*back.value != object)
    return "ProcessGroupNCCL at " + hex(group.address()) + ": " + member + " is " + hex(*back.value) + ", not " + hex(object) +
           " (layout does not fit, or a stale object)";
  return "";
}

class LivenessDecoder {
 public:
  LivenessDecoder(Target& target, const LayoutProfile& layout, TorchLiveness* out)
      : target_(target), layout_(layout), out_(out) {}

  // The process group `object` belongs to, as a view; an error line when not believed.
  std::optional<ObjectView> group_of(const char* type, uint64_t object, const char* back_member, uint64_t* group_address) {
    ObjectView view = ObjectView::of(target_, layout_, type, object);
    Fetched<uint64_t> pg = member_word(view, "pg_");
    if (!pg.ok()) {
      out_->errors.push_back(std::string(type) + " at " + hex(object) + ": pg_: " + pg.unavailable);
      return std::nullopt;
    }
    *group_address = *pg.value;
    ObjectView group = ObjectView::of(target_, layout_, kTorchProcessGroupStruct, *pg.value);
    std::string problem = check_points_back(group, back_member, object);
    if (!problem.empty()) {
      out_->errors.push_back(std::string(type) + " at " + hex(object) + ": " + problem);
      return std::nullopt;
    }
    return group;
  }

  void add_watchdog(int tid, const StateHit& hit, uint64_t object) {
    TorchWatchdog dog;
    dog.tid = tid;
    dog.stack_slot = hit.slot;
    dog.thread_state = hit.state;
    dog.watchdog = object;
    std::optional<ObjectView> group = group_of(kTorchWatchdogStruct, object, "watchdog_", &dog.process_group);
    if (!group) return;
    ObjectView view = ObjectView::of(target_, layout_, kTorchWatchdogStruct, object);
    dog.heartbeat = member_integer(view, "heartbeat_");
    dog.exception_stored = pointer_is_set(member_word(view, "watchDogException_"));
    dog.pg_uid = member_integer(*group, "local_id_");
    dog.pg_rank = member_integer(*group, "rank_");
    dog.pg_size = member_integer(*group, "size_");
    dog.terminating = member_integer(*group, "terminateProcessGroup_");
    dog.error = group->has("error_") ? group->enum_name("error_") : Fetched<std::string>::missing(absent_member(*group, "error_"));
    dog.timeout_ms = timeout_of(*group);
    out_->watchdogs.push_back(std::move(dog));
  }

  void add_monitor(int tid, const StateHit& hit, uint64_t object) {
    TorchHeartbeatMonitor monitor;
    monitor.tid = tid;
    monitor.stack_slot = hit.slot;
    monitor.thread_state = hit.state;
    monitor.monitor = object;
    std::optional<ObjectView> group = group_of(kTorchMonitorStruct, object, "heartbeatMonitor_", &monitor.process_group);
    if (!group) return;
    ObjectView view = ObjectView::of(target_, layout_, kTorchMonitorStruct, object);
    monitor.pg_uid = member_integer(*group, "local_id_");
    monitor.heartbeat_timeout_s = member_integer(view, "heartbeatTimeoutInSec_");
    monitor.dump_timeout_ms = member_integer(view, "waitTimeoutDumpInMilSec_");
    monitor.monitoring_enabled = member_integer(view, "watchdogHeartbeatMonitorEnabled_");
    monitor.terminate_requested = member_integer(view, "terminateHeartbeatMonitorThread_");
    monitor.last_work_list_update_ns = member_integer(view, "lastWorkListUpdateTime_");
    out_->monitors.push_back(std::move(monitor));
  }

 private:
  static Fetched<int64_t> pointer_is_set(const Fetched<uint64_t>& word) {
    if (!word.ok()) return Fetched<int64_t>::missing(word.unavailable, word.address);
    Fetched<int64_t> out;
    out.value = *word.value != 0;
    out.address = word.address;
    return out;
  }

  Fetched<int64_t> timeout_of(const ObjectView& group) {
    Fetched<uint64_t> options = member_word(group, "options_");
    if (!options.ok()) return Fetched<int64_t>::missing("options_: " + options.unavailable);
    if (*options.value == 0) return Fetched<int64_t>::missing("options_ is NULL");
    return member_integer(ObjectView::of(target_, layout_, kTorchPgOptionsStruct, *options.value), "timeout");
  }

  Target& target_;
  const LayoutProfile& layout_;
  TorchLiveness* out_;
};

std::optional<uint64_t> scan_start(const ThreadInfo& thread) {
  if (std::optional<uint64_t> sp = stack_pointer_of(thread)) return sp;
  return thread.syscall_stack_pointer;
}

}  // namespace

namespace {

// "" when the profile and symbols can decode; else why not.
std::string cannot_decode(const LayoutProfile& layout, const TorchLivenessSymbols& symbols) {
  for (const char* type : {kTorchProcessGroupStruct, kTorchWatchdogStruct, kTorchMonitorStruct, kTorchPgOptionsStruct})
    if (layout.find_struct(type) == nullptr)
      return std::string("the torch profile has no layout of ") + type +
             " (made before the watchdog was decoded: scripts/torch-profile-add-watchdog.py adds it)";
  if (symbols.watchdog_state_vtable == 0 || symbols.monitor_state_vtable == 0)
    return "no symbol of the watchdog's std::thread state vtable (not in the profile nor in a local copy of libtorch_cuda.so)";
  return "";
}

Fetched<int64_t> read_should_dump(Target& target, uint64_t address) {
  if (address == 0) return Fetched<int64_t>::missing("no symbol ProcessGroupNCCL::shouldDump_");
  Fetched<uint64_t> flag = read_raw_integer(target, address, 1);
  if (!flag.ok()) return Fetched<int64_t>::missing(flag.unavailable, flag.address);
  return Fetched<int64_t>{static_cast<int64_t>(*flag.value), "", flag.address};
}

// Each thread's std::thread state, by state address. A state belongs to one thread: where two
// stacks point at it, the slot nearer its stack's top (the owner's outermost frame) wins.
std::map<uint64_t, StateHit> find_thread_states(Target& target, const std::vector<ThreadInfo>& threads,
                                                const std::vector<uint64_t>& vptrs, TorchLiveness* out) {
  RegionIndex regions(target.regions());
  std::map<uint64_t, StateHit> hits;
  for (const ThreadInfo& thread : threads) {
    std::optional<uint64_t> sp = scan_start(thread);
    if (!sp) {
      ++out->threads_without_stack_pointer;
      continue;
    }
    ++out->threads_scanned;
    std::optional<StateHit> hit = find_thread_state(target, regions, *sp, vptrs);
    if (!hit) continue;
    hit->tid = thread.tid;
    read_word(target, hit->slot);  // an ordinary read: a slice keeps the word (scan reads are not recorded)
    auto [it, fresh] = hits.emplace(hit->state, *hit);
    if (!fresh && hit->below_top < it->second.below_top) it->second = *hit;
  }
  return hits;
}

}  // namespace

TorchLiveness decode_torch_liveness(Target& target, const LayoutProfile& layout, const TorchLivenessSymbols& symbols,
                                    const std::vector<ThreadInfo>& threads) {
  TorchLiveness out;
  out.unavailable = cannot_decode(layout, symbols);
  if (!out.unavailable.empty()) return out;
  out.should_dump = read_should_dump(target, symbols.should_dump);
  uint64_t watchdog_vptr = symbols.watchdog_state_vtable + kVtableHeader;
  uint64_t monitor_vptr = symbols.monitor_state_vtable + kVtableHeader;
  LivenessDecoder decoder(target, layout, &out);
  for (const auto& [state, hit] : find_thread_states(target, threads, {watchdog_vptr, monitor_vptr}, &out)) {
    std::optional<uint64_t> object = read_word(target, state + kStateObjectOffset);
    if (!object || *object == 0) {
      out.errors.push_back("std::thread state at " + hex(state) + " (thread " + std::to_string(hit.tid) + "): no object pointer");
      continue;
    }
    if (hit.vptr == watchdog_vptr)
      decoder.add_watchdog(hit.tid, hit, *object);
    else
      decoder.add_monitor(hit.tid, hit, *object);
  }
  return out;
}

std::optional<TorchLiveness> read_torch_liveness(Target& target, const RecorderSearch& search) {
  TorchBuild build = identify_torch_build(target, search.library);
  if (build.library.empty()) return std::nullopt;
  TorchProfileChoice choice = choose_torch_profile(target, build, torch_profile_dirs(search.profile_path));
  if (!choice.profile) {
    TorchLiveness out;
    out.unavailable = "no torch layout profile for " + build.library;
    return out;
  }
  std::map<std::string, uint64_t> values = torch_symbol_values(build, *choice.profile, torch_liveness_symbols());
  auto absolute = [&](const char* name) { return values.count(name) ? values.at(name) + build.resolved.load_bias : 0; };
  TorchLivenessSymbols symbols{absolute(kTorchWatchdogStateVtableSymbol), absolute(kTorchMonitorStateVtableSymbol),
                               absolute(kTorchShouldDumpSymbol)};
  return decode_torch_liveness(target, *choice.profile, symbols, target.threads());
}

namespace {

json fetched_json(const Fetched<int64_t>& value) { return value.ok() ? json(*value.value) : json(nullptr); }
json fetched_json(const Fetched<std::string>& value) { return value.ok() ? json(*value.value) : json(nullptr); }
json flag_json(const Fetched<int64_t>& value) { return value.ok() ? json(*value.value != 0) : json(nullptr); }

// {"field": "why"} for each field that could not be read.
template <typename... Named>
json unavailable_json(const Named&... named) {
  json out = json::object();
  auto add = [&](const auto& pair) {
    if (!pair.second->ok()) out[pair.first] = valid_utf8(pair.second->unavailable);
  };
  (add(named), ...);
  return out;
}

json watchdog_json(const TorchWatchdog& dog) {
  json out = {{"tid", dog.tid},
              {"watchdog", hex(dog.watchdog)},
              {"process_group", hex(dog.process_group)},
              {"thread_state", hex(dog.thread_state)},
              {"pg_uid", fetched_json(dog.pg_uid)},
              {"pg_rank", fetched_json(dog.pg_rank)},
              {"pg_size", fetched_json(dog.pg_size)},
              {"heartbeat", fetched_json(dog.heartbeat)},
              {"timeout_ms", fetched_json(dog.timeout_ms)},
              {"error", fetched_json(dog.error)},
              {"terminating", flag_json(dog.terminating)},
              {"exception_stored", flag_json(dog.exception_stored)}};
  out["unavailable"] = unavailable_json(std::pair{"pg_uid", &dog.pg_uid}, std::pair{"pg_rank", &dog.pg_rank},
                                        std::pair{"pg_size", &dog.pg_size}, std::pair{"heartbeat", &dog.heartbeat},
                                        std::pair{"timeout_ms", &dog.timeout_ms}, std::pair{"error", &dog.error},
                                        std::pair{"terminating", &dog.terminating},
                                        std::pair{"exception_stored", &dog.exception_stored});
  return out;
}

json monitor_json(const TorchHeartbeatMonitor& monitor) {
  json out = {{"tid", monitor.tid},
              {"monitor", hex(monitor.monitor)},
              {"process_group", hex(monitor.process_group)},
              {"pg_uid", fetched_json(monitor.pg_uid)},
              {"heartbeat_timeout_s", fetched_json(monitor.heartbeat_timeout_s)},
              {"dump_timeout_ms", fetched_json(monitor.dump_timeout_ms)},
              {"monitoring_enabled", flag_json(monitor.monitoring_enabled)},
              {"terminate_requested", flag_json(monitor.terminate_requested)},
              {"last_work_list_update_steady_ns", fetched_json(monitor.last_work_list_update_ns)}};
  out["unavailable"] = unavailable_json(
      std::pair{"pg_uid", &monitor.pg_uid}, std::pair{"heartbeat_timeout_s", &monitor.heartbeat_timeout_s},
      std::pair{"dump_timeout_ms", &monitor.dump_timeout_ms}, std::pair{"monitoring_enabled", &monitor.monitoring_enabled},
      std::pair{"terminate_requested", &monitor.terminate_requested},
      std::pair{"last_work_list_update_steady_ns", &monitor.last_work_list_update_ns});
  return out;
}

}  // namespace

json torch_liveness_json(const TorchLiveness& liveness) {
  if (!liveness.unavailable.empty()) return {{"unavailable", valid_utf8(liveness.unavailable)}};
  json watchdogs = json::array(), monitors = json::array(), errors = json::array();
  for (const TorchWatchdog& dog : liveness.watchdogs) watchdogs.push_back(watchdog_json(dog));
  for (const TorchHeartbeatMonitor& monitor : liveness.monitors) monitors.push_back(monitor_json(monitor));
  for (const std::string& error : liveness.errors) errors.push_back(valid_utf8(error));
  json out = {{"watchdogs", watchdogs},
              {"heartbeat_monitors", monitors},
              {"should_dump", flag_json(liveness.should_dump)},
              {"threads_scanned", liveness.threads_scanned},
              {"threads_without_stack_pointer", liveness.threads_without_stack_pointer},
              {"errors", errors}};
  if (!liveness.should_dump.ok()) out["should_dump_unavailable"] = valid_utf8(liveness.should_dump.unavailable);
  return out;
}

}  // namespace nsc
