#include "nccl/comm_decoder.h"

#include "nccl/nccl_cuda_decoder.h"
#include "nccl/nccl_names.h"
#include "util/strings.h"

namespace nsc {
namespace {

constexpr size_t kMaxCommNameBytes = 256;

// Reads *pointer_field as a 32-bit flag (abortFlag lives in cudaHostAlloc memory).
Fetched<int64_t> read_pointed_flag(const ObjectView& comm, const std::string& pointer_field) {
  auto pointer = comm.pointer(pointer_field);
  if (!pointer.ok()) return Fetched<int64_t>::missing(pointer.unavailable, pointer.address);
  if (*pointer.value == 0) return Fetched<int64_t>::missing(pointer_field + " is NULL");
  auto raw = read_raw_integer(*comm.target(), *pointer.value, 4);
  Fetched<int64_t> fetched;
  fetched.address = raw.address;
  fetched.unavailable = raw.unavailable;
  if (raw.ok()) fetched.value = static_cast<int64_t>(*raw.value);
  return fetched;
}

// A decoded value outside [low, high]: null, "impossible value V (why)" as its reason and a
// warning, so no reader (triage, text views) takes it for real.
void check_range(FieldSink& out, const char* key, int64_t low, int64_t high, const std::string& why) {
  const nlohmann::json& value = out.json()[key];
  if (!value.is_number_integer()) return;
  int64_t number = value.get<int64_t>();
  if (number >= low && number <= high) return;
  std::string reason = "impossible value " + std::to_string(number) + " (" + why + ")";
  out.json()[key] = nullptr;
  out.mark_unavailable(key, reason, 0);
  out.warn(std::string(key) + ": " + reason);
}

// Identity against itself: ranks against nranks, nodes against nnodes, devices against
// what a host can hold (CUDA and NVML number at most a few hundred devices).
void check_identity_ranges(FieldSink& out, int64_t nranks) {
  constexpr int64_t kMaxDevices = 1023;
  std::string ranks = std::to_string(nranks);
  check_range(out, "rank", 0, nranks - 1, "nranks is " + ranks);
  check_range(out, "cuda_dev", 0, kMaxDevices, "a CUDA device is 0.." + std::to_string(kMaxDevices));
  check_range(out, "nvml_dev", 0, kMaxDevices, "an NVML device is 0.." + std::to_string(kMaxDevices));
  // 0 nodes / local ranks: not computed yet (a comm still in ncclCommInitRank is zero-filled).
  check_range(out, "nnodes", 0, nranks, "0..nranks (" + ranks + ") nodes; 0 before init sets it");
  check_range(out, "local_ranks", 0, nranks, "0..nranks (" + ranks + ") ranks on a node; 0 before init sets it");
  const nlohmann::json& nnodes = out.json()["nnodes"];
  if (nnodes.is_number_integer() && nnodes.get<int64_t>() > 0)
    check_range(out, "node", 0, nnodes.get<int64_t>() - 1, "nnodes is " + nnodes.dump());
  const nlohmann::json& local_ranks = out.json()["local_ranks"];
  if (local_ranks.is_number_integer() && local_ranks.get<int64_t>() > 0)
    check_range(out, "local_rank", 0, local_ranks.get<int64_t>() - 1, "local_ranks is " + local_ranks.dump());
}

// The name given at init: comm->commName (2.23-2.26), comm->config.commName (2.27 and later).
void decode_comm_name(const ObjectView& comm, FieldSink& out) {
  out.json()["comm_name"] = nullptr;
  const char* path = comm.has("config.commName") ? "config.commName" : comm.has("commName") ? "commName" : nullptr;
  if (path == nullptr) {
    out.mark_unavailable("comm_name", not_in_version(*comm.layout(), "neither ncclComm.commName nor config.commName; NCCL 2.23 added it"), 0);
    return;
  }
  auto pointer = comm.pointer(path);
  if (!pointer.ok()) {
    out.mark_unavailable("comm_name", pointer.unavailable, pointer.address);
    return;
  }
  if (*pointer.value == 0) return;  // no name was given: null is the real value
  ReadError error;
  std::optional<std::string> name = read_c_string(*comm.target(), *pointer.value, kMaxCommNameBytes, &error);
  if (name) out.json()["comm_name"] = valid_utf8(*name);
  else out.mark_unavailable("comm_name", std::string(path) + ": " + error.message(), *pointer.value);
}

// ncclCommGetAsyncError's second source (init.cc): the proxy thread stores its failures (a peer's
// closed socket) in proxyState->asyncResult, not in the comm's. Read beside the proxy ops; when
// unreadable it is only unavailable (the audit then says "not checked"), not a read error of its own.
void decode_proxy_async_result(const ObjectView& comm, FieldSink& health) {
  auto proxy = comm.deref("proxyState");
  Fetched<std::string> result =
      proxy.ok() ? proxy.value->enum_name("asyncResult") : Fetched<std::string>::missing(proxy.unavailable);
  if (result.ok()) health.json()["proxy_async_result"] = *result.value;
  else {
    health.json()["proxy_async_result"] = nullptr;
    health.mark_unavailable("proxy_async_result", result.unavailable, 0);
  }
}

}  // namespace

void decode_identity(const ObjectView& comm, FieldSink& out) {
  out.json()["address"] = hex(comm.address());
  out.put_hex("comm_hash", comm.unsigned_integer("commHash"));
  out.put("rank", comm.integer("rank"));
  out.put("nranks", comm.integer("nRanks"));
  out.put("cuda_dev", comm.integer("cudaDev"));
  out.put("nvml_dev", comm.integer("nvmlDev"));
  auto bus_id = comm.integer("busId");
  if (bus_id.ok()) out.json()["bus_id"] = bus_id_text(*bus_id.value);
  else out.put("bus_id", bus_id);
  out.put("node", comm.integer("node"));
  out.put("nnodes", comm.integer("nNodes"));
  out.put("local_rank", comm.integer("localRank"));
  out.put("local_ranks", comm.integer("localRanks"));
  decode_comm_name(comm, out);
  out.put("nchannels", comm.integer("nChannels"));
  out.put("p2p_nchannels", comm.integer("p2pnChannels"));

  const nlohmann::json& nranks = out.json()["nranks"];
  if (nranks.is_number_integer()) {
    int64_t n = nranks.get<int64_t>();
    if (n < 1 || static_cast<uint64_t>(n) > out.scope().limits.max_ranks)
      out.warn("nRanks is " + std::to_string(n) + ", not a plausible rank count");
    else
      check_identity_ranges(out, n);
  }
}

// Counters against each other: no collective type is launched more often than all together.
// seqNumber[] moves at enqueue, collOpCount at plan upload: one group may sit between them.
static void check_counters_against_total(FieldSink& out) {
  constexpr int64_t kMaxEnqueuedAheadOfTotal = 1 << 16;
  const nlohmann::json& total = out.json()["coll_op_count"];
  if (!total.is_number_integer()) return;
  FieldSink seq = out.child("seq_launched");
  for (auto& [name, count] : seq.json().items())
    if (count.is_number_integer() && count.get<int64_t>() - total.get<int64_t>() > kMaxEnqueuedAheadOfTotal)
      check_range(seq, name.c_str(), 0, total.get<int64_t>() + kMaxEnqueuedAheadOfTotal,
                  "more " + name + " launched than collectives in total: coll_op_count is " + total.dump());
}

void decode_counters(const ObjectView& comm, FieldSink& out) {
  FieldSink seq = out.child("seq_launched");
  seq.json() = nlohmann::json::object();
  uint64_t count = comm.array_length("seqNumber");
  if (count == 0)
    out.mark_unavailable("seq_launched", not_in_version(*comm.layout(), "ncclComm has no seqNumber[]; NCCL 2.23 added it"), 0);
  for (uint64_t func = 0; func < count; ++func)
    seq.put_count(collective_name(*comm.layout(), static_cast<int64_t>(func)),
                  comm.unsigned_integer("seqNumber[" + std::to_string(func) + "]"));
  if (comm.has("collOpCount")) {
    out.put_count("coll_op_count", comm.unsigned_integer("collOpCount"));
  } else {
    // NCCL 2.23 and older count collectives only in the shared resources (shared by split comms).
    auto shared = comm.deref("sharedRes");
    if (shared.ok()) out.put_count("coll_op_count", shared.value->unsigned_integer("collOpCount"));
    else out.put_count("coll_op_count", Fetched<uint64_t>::missing(shared.unavailable, shared.address));
    out.json()["coll_op_count_of"] = "ncclSharedResources";
    // Split comms with splitShare share one: triage compares the count only where it is the comm's own.
    out.json()["shared_resources"] = shared.ok() ? nlohmann::json(hex(shared.value->address())) : nullptr;
  }
  out.put_count("op_count", comm.unsigned_integer("opCount"));
  check_counters_against_total(out);

  // P2P operations are counted per channel in the shared resources.
  FieldSink p2p = out.child("p2p_op_count");
  auto shared = comm.deref("sharedRes");
  if (!shared.ok()) {
    p2p.json() = nullptr;
    out.mark_unavailable("p2p_op_count", shared.unavailable, shared.address);
    return;
  }
  const nlohmann::json& nchannels = out.json()["p2p_nchannels"];
  uint64_t channels = shared.value->array_length("p2pOpCount");
  if (nchannels.is_number_integer() && nchannels.get<int64_t>() >= 0)
    channels = std::min<uint64_t>(channels, nchannels.get<uint64_t>());
  int64_t total = 0;
  bool complete = true, overflow = false;
  p2p.json()["per_channel"] = nlohmann::json::array();
  for (uint64_t c = 0; c < channels; ++c) {
    auto value = shared.value->integer("p2pOpCount[" + std::to_string(c) + "]");
    if (value.ok() && *value.value < 0)  // a uint64 count beyond 2^63-1
      value = Fetched<int64_t>::missing(FieldSink::impossible_count_reason(static_cast<uint64_t>(*value.value)));
    if (value.ok()) {
      p2p.json()["per_channel"].push_back(*value.value);
      overflow = __builtin_add_overflow(total, *value.value, &total) || overflow;  // torn counters
    } else {
      p2p.json()["per_channel"].push_back(nullptr);
      p2p.mark_unavailable("per_channel[" + std::to_string(c) + "]", value.unavailable, value.address);
      complete = false;
    }
  }
  if (overflow) p2p.put("total", Fetched<int64_t>::missing("sum of per-channel counts overflows (corrupt)"));
  else if (complete) p2p.json()["total"] = total;
  else p2p.put("total", Fetched<int64_t>::missing("some channels unreadable"));
}

void decode_health(const ObjectView& comm, FieldSink& out) {
  FieldSink health = out.child("health");
  health.put("async_result", comm.enum_name("asyncResult"));
  health.put_bool("abort_flag", read_pointed_flag(comm, "abortFlag"));
  health.put_bool("destroy_flag", comm.integer("destroyFlag"));
  health.put("init_state", comm.enum_name("initState"));
  health.put_bool("finalize_called", comm.integer("finalizeCalled"));
  health.put_bool("revoked", comm.integer("revokedFlag"));
  auto blocking = comm.integer("config.blocking");
  health.put_bool("blocking", blocking);
  decode_proxy_async_result(comm, health);
}

nlohmann::json decode_last_error(Target& target, const LayoutProfile& layout, uint64_t load_bias) {
  constexpr size_t kLastErrorBytes = 1024;  // sizeof ncclLastError since 2.13
  auto symbol = layout.symbols.find("ncclLastError");
  if (symbol == layout.symbols.end())
    return {{"text", nullptr}, {"address", nullptr},
            {"unavailable", "no ncclLastError symbol in this libnccl's symbol table or layout profile (a stripped build)"}};
  uint64_t address = symbol->second + load_bias;
  ReadError error;
  std::optional<std::string> text = read_c_string(target, address, kLastErrorBytes, &error);
  if (!text) return {{"text", nullptr}, {"address", hex(address)}, {"unavailable", "ncclLastError: " + error.message()}};
  return {{"text", valid_utf8(*text)}, {"address", hex(address)}};
}

nlohmann::json decode_communicator(Target& target, const LayoutProfile& layout, uint64_t address,
                                   nlohmann::json* errors, const DecodeLimits& limits) {
  nlohmann::json entry = nlohmann::json::object();
  nlohmann::json unavailable = nlohmann::json::object();
  nlohmann::json warnings = nlohmann::json::array();
  DecodeScope scope{&unavailable, &warnings, errors, "comm " + hex(address), limits};
  FieldSink out(&entry, "", &scope);
  ObjectView comm = ObjectView::of(target, layout, "ncclComm", address);
  if (!comm.valid()) {
    entry["address"] = hex(address);
    out.warn("the layout has no struct ncclComm");
    entry["unavailable"] = unavailable;
    entry["warnings"] = warnings;
    return entry;
  }
  decode_identity(comm, out);
  decode_counters(comm, out);
  decode_health(comm, out);
  decode_channels(comm, out);
  decode_proxy_ops(comm, out);
  decode_planned_work(comm, out);
  decode_launched_work(comm, out);
  decode_cuda_resources(comm, out);  // streams, events, registered/imported memory NCCL holds
  entry["unavailable"] = unavailable;
  entry["warnings"] = warnings;
  return entry;
}

}  // namespace nsc
