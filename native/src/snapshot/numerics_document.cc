#include "snapshot/numerics_document.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "snapshot/element_stats.h"
#include "target/callback_target.h"
#include "util/json_access.h"
#include "util/schemas.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

// A string member, "" when absent or not a string (documents may come from snapshots).
constexpr uint64_t kReadBlock = 1ull << 20;  // bytes read at a time: bounded memory
// x86-64 user space is 2^47 bytes: a buffer larger than that is torn or corrupt memory.
constexpr uint64_t kMaxBufferBytes = 1ull << 47;

// "" when `elements` of `size` bytes can be a buffer, else why not (the product may overflow).
std::string impossible_size_reason(uint64_t elements, uint64_t size) {
  if (elements <= kMaxBufferBytes / size) return "";
  return "impossible size: " + std::to_string(elements) + " elements of " + std::to_string(size) +
         " bytes exceed the address space (corrupt count?); not read";
}

// Elements of a collective's send and receive buffers (nccl.h: count is per rank for
// AllGather's send and ReduceScatter's receive side).
std::pair<uint64_t, uint64_t> buffer_elements(const std::string& collective, uint64_t count, uint64_t nranks) {
  // Saturated: an overflowing product is an impossible size, said as such by the caller.
  uint64_t all = nranks != 0 && count > UINT64_MAX / nranks ? UINT64_MAX : count * nranks;
  if (collective == "AllGather") return {count, all};
  if (collective == "ReduceScatter") return {all, count};
  return {count, count};
}

// Where the buffer's bytes come from: the device reader when there is one (it also sees
// host memory mapped for the GPU), else the host target.
struct Readers {
  Target& host;
  Target* device;
};

// The byte ranges to read: the whole buffer, or evenly spaced chunks when it is too large.
std::vector<std::pair<uint64_t, uint64_t>> read_plan(uint64_t bytes, uint64_t element, const NumericsLimits& limits) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  if (bytes <= limits.full_read_bytes || limits.sample_chunks == 0) {
    ranges.push_back({0, bytes});
    return ranges;
  }
  uint64_t chunk = std::max<uint64_t>(element, limits.chunk_bytes / element * element);
  uint64_t stride = (bytes - chunk) / std::max<uint64_t>(1, limits.sample_chunks - 1) / element * element;
  for (uint64_t i = 0; i < limits.sample_chunks; ++i) ranges.push_back({i * stride, chunk});
  return ranges;
}

json stats_json(const ElementStats& stats, ElementType type) {
  json out = {{"elements_read", stats.elements}, {"zero", stats.zero}};
  if (is_floating(type)) {
    out["nan"] = stats.nan;
    out["pos_inf"] = stats.pos_inf;
    out["neg_inf"] = stats.neg_inf;
    out["subnormal"] = stats.subnormal;
  }
  out["finite"] = stats.finite;
  out["max_abs"] = stats.finite > 0 ? json(stats.max_abs) : json(nullptr);
  return out;
}

// Reads one range block by block into stats; false (with why) on the first unreadable byte.
bool read_range(Target& reader, uint64_t address, uint64_t bytes, ElementType type, ElementStats* stats,
                std::string* why) {
  std::vector<uint8_t> block(std::min(bytes, kReadBlock));
  for (uint64_t done = 0; done < bytes;) {
    uint64_t length = std::min<uint64_t>(block.size(), bytes - done);
    ReadError error;
    if (!reader.read(address + done, block.data(), length, &error)) {
      *why = error.message();
      return false;
    }
    stats->add(block.data(), length, type);
    done += length;
  }
  return true;
}

void measure_buffer(const Readers& readers, uint64_t address, uint64_t elements, ElementType type,
                    const NumericsLimits& limits, json* entry) {
  const uint64_t size = element_size(type);
  const uint64_t bytes = elements * size;
  auto ranges = read_plan(bytes, size, limits);
  Target& reader = readers.device != nullptr ? *readers.device : readers.host;
  (*entry)["read_from"] = readers.device != nullptr ? "device" : "host";
  ElementStats stats;
  std::string why;
  for (const auto& [offset, length] : ranges) {
    if (read_range(reader, address + offset, length, type, &stats, &why)) continue;
    (*entry)["stats"] = nullptr;
    (*entry)["unreadable"] = readers.device != nullptr
                                 ? "device memory unreadable: " + why
                                 : "not readable here (" + why + "): device memory? run under cuda-gdb (nccl-numerics)";
    return;
  }
  (*entry)["sampled"] = ranges.size() > 1;
  if (ranges.size() > 1)
    (*entry)["sample"] = {{"chunks", ranges.size()}, {"chunk_bytes", ranges.front().second},
                          {"elements", stats.elements}};
  (*entry)["stats"] = stats_json(stats, type);
}

json buffer_entry(const json& comm, const json& work, const char* stage, const char* role, uint64_t address,
                  uint64_t elements) {
  json entry = {{"comm", json_text(json_member(comm, "address"))}, {"comm_hash", json_text(json_member(comm, "comm_hash"))},
                {"rank", json_member(comm, "rank")}, {"nranks", json_member(comm, "nranks")},
                {"stage", stage}, {"collective", json_member(work, "collective")},
                {"seq", json_member(work, "seq")}, {"datatype", json_member(work, "datatype")},
                {"op", json_member(work, "op")}, {"role", role}, {"address", hex(address)},
                {"elements", elements}};
  return entry;
}

// One collective's (or P2P task's) buffers, measured.
void add_work(const Readers& readers, const json& comm, const json& work, const char* stage,
              const NumericsOptions& options, json* buffers) {
  const json& datatype = json_member(work, "datatype");
  const json& count = json_member(work, "count");
  auto type = datatype.is_string() ? element_type_of(datatype.get<std::string>()) : std::nullopt;
  std::vector<std::pair<const char*, std::pair<std::string, uint64_t>>> roles;
  uint64_t nranks = json_member(comm, "nranks").is_number_unsigned() ? json_member(comm, "nranks").get<uint64_t>() : 1;
  uint64_t n = count.is_number_unsigned() ? count.get<uint64_t>() : 0;
  if (work.contains("kind")) {  // P2P: one buffer
    roles.push_back({json_text(json_member(work, "kind")) == "send" ? "send" : "recv", {json_text(json_member(work, "buff")), n}});
  } else {
    auto [send, recv] = buffer_elements(json_text(json_member(work, "collective")), n, nranks);
    roles.push_back({"send", {json_text(json_member(work, "sendbuff")), send}});
    roles.push_back({"recv", {json_text(json_member(work, "recvbuff")), recv}});
  }
  for (const auto& [role, where] : roles) {
    uint64_t address = 0;
    json entry = buffer_entry(comm, work, stage, role, 0, where.second);
    if (!parse_u64(where.first, &address) || address == 0) {
      entry["address"] = nullptr;
      entry["stats"] = nullptr;
      entry["unreadable"] = "buffer address unavailable";
    } else if (!type || !count.is_number_unsigned()) {
      entry["address"] = hex(address);
      entry["stats"] = nullptr;
      entry["unreadable"] = "datatype or count unavailable";
    } else if (std::string why = impossible_size_reason(where.second, element_size(*type)); !why.empty()) {
      entry["address"] = hex(address);
      entry["stats"] = nullptr;
      entry["unreadable"] = why;
    } else {
      entry["address"] = hex(address);
      entry["element_type"] = element_type_name(*type);
      entry["bytes"] = where.second * element_size(*type);
      measure_buffer(readers, address, where.second, *type, options.limits, &entry);
    }
    buffers->push_back(std::move(entry));
  }
  if (roles.size() == 2 && roles[0].second.first == roles[1].second.first)
    for (auto it = buffers->end() - 2; it != buffers->end(); ++it) (*it)["in_place"] = true;
}

void add_comm(const Readers& readers, const json& comm, const NumericsOptions& options, json* buffers,
              json* notes) {
  const json& launched = json_member(comm, "launched");
  const json& colls = json_member(launched, "colls");
  if (colls.is_array() && !colls.empty()) {
    size_t first = options.all_launched ? 0 : colls.size() - 1;
    for (size_t i = first; i < colls.size(); ++i) add_work(readers, comm, colls[i], "launched", options, buffers);
  }
  const json& p2p = json_member(launched, "p2p");
  if (p2p.is_array())
    for (const json& task : p2p) add_work(readers, comm, task, "launched", options, buffers);
  const json& planned = json_member(comm, "planned");
  for (const char* queue : {"colls", "p2p"}) {
    const json& tasks = json_member(planned, queue);
    if (tasks.is_array())
      for (const json& task : tasks) add_work(readers, comm, task, "planned", options, buffers);
  }
  if (!launched.is_object())
    notes->push_back("comm " + json_text(json_member(comm, "address")) + ": launched work unavailable (" +
                     json_member(json_member(comm, "unavailable"), "launched").dump() + ")");
}

json limits_json(const NumericsLimits& limits) {
  return {{"full_read_bytes", limits.full_read_bytes}, {"sample_chunks", limits.sample_chunks},
          {"chunk_bytes", limits.chunk_bytes}};
}

}  // namespace

json numerics_of_state(const json& state, Target& host, Target* device, const NumericsOptions& options) {
  json document = {{"schema", kNumericsSchema}, {"target", json_member(state, "target")},
                   {"limits", limits_json(options.limits)}, {"buffers", json::array()},
                   {"notes", json::array()}};
  Readers readers{host, device};
  const json& comms = json_member(state, "communicators");
  if (comms.is_array())
    for (const json& comm : comms) add_comm(readers, comm, options, &document["buffers"], &document["notes"]);
  return document;
}

json build_numerics_document(const NumericsRequest& request, const json* earlier_state) {
  std::unique_ptr<Target> target = open_target(request.target);
  json state;
  if (earlier_state != nullptr && earlier_state->is_object()) {
    state = *earlier_state;
  } else {
    StateRequest state_request = request.target;
    state_request.target = target.get();
    state_request.stacks = false;
    state = build_state_document(state_request);
  }
  std::unique_ptr<Target> device;
  if (request.target.read_device_memory)
    device = std::make_unique<CallbackTarget>("device memory", target->pid(), request.target.read_device_memory,
                                              std::vector<MemoryRegion>{}, "");
  json document = numerics_of_state(state, *target, device.get(), request.options);
  const json& errors = json_member(state, "errors");
  document["errors"] = errors.is_array() ? errors : json::array();
  return document;
}

json numerics_of_target(const StateRequest& request, const json& state, const NumericsOptions& options) {
  StateRequest reopen = request;
  reopen.freeze = false;
  std::unique_ptr<Target> target = open_target(reopen);
  return numerics_of_state(state, *target, nullptr, options);
}

NumericsOptions triage_numerics_options() {
  NumericsOptions options;
  options.limits.full_read_bytes = 4ull << 20;
  options.limits.sample_chunks = 64;
  options.limits.chunk_bytes = 16ull << 10;
  return options;
}

int numerics_exit_code(const json& document) {
  const json& buffers = json_member(document, "buffers");
  if (!buffers.is_array()) return 1;
  for (const json& buffer : buffers)
    if (!json_member(buffer, "stats").is_object()) return 1;
  const json& errors = json_member(document, "errors");
  return errors.is_array() && !errors.empty() ? 1 : 0;
}

}  // namespace nsc
