#include "nccl/nccl_cuda_decoder.h"

#include <set>

#include "util/strings.h"

namespace nsc {
namespace {

constexpr uint64_t kPointerSize = 8;  // x86-64 targets only

// A `next`-linked list of `type`, bounded and cycle-safe; problems become warnings.
std::vector<ObjectView> follow_list(const ObjectView& owner, uint64_t head, const std::string& type,
                                    const std::string& what, FieldSink& out) {
  std::vector<ObjectView> nodes;
  const StructLayout* layout = owner.layout()->find_struct(type);
  if (layout == nullptr) {
    if (head != 0) out.warn(what + ": struct " + type + " not in layout");
    return nodes;
  }
  std::set<uint64_t> visited;
  for (uint64_t address = head; address != 0;) {
    if (!visited.insert(address).second) {
      out.warn(what + " list has a cycle at " + hex(address));
      break;
    }
    if (nodes.size() >= out.scope().limits.max_list_nodes) {
      out.warn(what + " list longer than " + std::to_string(nodes.size()) + " entries; stopped");
      break;
    }
    ObjectView node(owner.target(), owner.layout(), layout, address);
    auto next = node.pointer("next");
    if (!next.ok()) {
      out.mark_unavailable(what + "[" + std::to_string(nodes.size()) + "]", next.unavailable,
                           next.address);
      break;
    }
    nodes.push_back(node);
    address = *next.value;
  }
  return nodes;
}

// ncclStrongStream: the live stream, who holds it, its serial event, graph captures.
void decode_strong_stream(const ObjectView& stream, FieldSink out) {
  out.json() = nlohmann::json::object();
  if (!stream.valid()) {
    out.json() = nullptr;
    return;
  }
  out.put_hex("stream", stream.pointer("liveStream"));
  out.put_hex("acquired_by", stream.pointer("liveAcquiredBy"));
  out.put_bool("ever_captured", stream.integer("everCaptured"));
  out.put_hex("serial_event", stream.pointer("serialEvent"));
  nlohmann::json& captures = out.json()["captures"] = nlohmann::json::array();
  auto head = stream.pointer("captureHead");
  if (!head.ok()) {
    out.mark_unavailable("captures", head.unavailable, head.address);
    return;
  }
  for (const ObjectView& capture :
       follow_list(stream, *head.value, "ncclStrongStreamCapture", "captures", out)) {
    nlohmann::json entry = nlohmann::json::object();
    nlohmann::json unavailable = nlohmann::json::object();
    DecodeScope scope = out.scope();
    scope.unavailable = &unavailable;
    FieldSink sink(&entry, "", &scope);
    entry["address"] = hex(capture.address());
    sink.put_hex("graph", capture.pointer("graph"));
    sink.put("graph_id", capture.unsigned_integer("graphId"));
    sink.put_hex("capture_stream", capture.pointer("captureStream"));
    sink.put_hex("acquired_by", capture.pointer("acquiredBy"));
    if (!unavailable.empty()) entry["unavailable"] = unavailable;
    captures.push_back(entry);
  }
}

// ncclCudaGraph by value: null when graphId is ULLONG_MAX (no capture).
void decode_cuda_graph(const ObjectView& graph, FieldSink& out, const std::string& key) {
  auto graph_id = graph.unsigned_integer("graphId");
  if (!graph_id.ok()) {
    out.put(key, graph_id);
    return;
  }
  if (*graph_id.value == ~0ull) {
    out.json()[key] = nullptr;  // not capturing: a fact, not an unreadable field
    return;
  }
  FieldSink sink = out.child(key);
  sink.json()["graph_id"] = *graph_id.value;
  sink.put_hex("graph", graph.pointer("graph"));
  sink.put_hex("origin_stream", graph.pointer("origin"));
}

void decode_shared_streams(const ObjectView& comm, FieldSink& out) {
  auto shared = comm.deref("sharedRes");
  if (!shared.ok()) {
    for (const char* key : {"device_stream", "host_stream", "launch_event", "scratch_event"}) {
      out.json()[key] = nullptr;
      out.mark_unavailable(key, "sharedRes: " + shared.unavailable, shared.address);
    }
    return;
  }
  const ObjectView& resources = *shared.value;
  for (auto [key, field] : {std::pair{"device_stream", "deviceStream"},
                            std::pair{"host_stream", "hostStream"}}) {
    ObjectView stream = resources.member(field);
    if (stream.valid()) decode_strong_stream(stream, out.child(key));
    else out.put(key, Fetched<int64_t>::missing("ncclSharedResources has no " + std::string(field)));
  }
  out.put_hex("launch_event", resources.pointer("launchEvent"));
  out.put_hex("scratch_event", resources.pointer("scratchEvent"));
}

void decode_context(const ObjectView& comm, FieldSink& out) {
  auto context = comm.deref("context");
  if (!context.ok()) {
    out.put("context", Fetched<int64_t>::missing(context.unavailable, context.address));
    return;
  }
  FieldSink sink = out.child("context");
  sink.json()["address"] = hex(context.value->address());
  sink.put_hex("handle", context.value->pointer("hcontext"));
  sink.put("ref_count", context.value->integer("refCount"));
  ObjectView launch_order = context.value->member("launchOrder");
  if (launch_order.valid()) decode_strong_stream(launch_order, sink.child("launch_order"));
}

// The planner's user streams: the streams the current/last group's tasks were issued on.
void decode_user_streams(const ObjectView& comm, FieldSink& out) {
  ObjectView planner = comm.member("planner");
  nlohmann::json& streams = out.json()["user_streams"] = nlohmann::json::array();
  if (!planner.valid()) {
    out.json()["user_streams"] = nullptr;
    out.mark_unavailable("user_streams", "ncclComm has no planner in this NCCL version", 0);
    return;
  }
  auto head = planner.pointer("streams");
  if (!head.ok()) {
    out.json()["user_streams"] = nullptr;
    out.mark_unavailable("user_streams", head.unavailable, head.address);
  } else {
    for (const ObjectView& node :
         follow_list(planner, *head.value, "ncclCudaStreamList", "user_streams", out)) {
      auto stream = node.pointer("stream");
      streams.push_back(stream.ok() ? nlohmann::json(hex(*stream.value)) : nlohmann::json(nullptr));
    }
  }
  // streamRecent is meaningful only while the list is non-empty (NCCL's own rule).
  if (head.ok() && *head.value == 0)
    out.json()["stream_recent"] = nullptr;
  else
    out.put_hex("stream_recent", planner.pointer("streamRecent"));
  ObjectView graph = planner.member("capturingGraph");
  if (graph.valid()) decode_cuda_graph(graph, out, "capturing_graph");
}

// Events NCCL will poll before it frees resources (cleanup of finished launches).
void decode_event_callbacks(const ObjectView& comm, FieldSink& out) {
  nlohmann::json& events = out.json()["pending_event_callbacks"] = nlohmann::json::array();
  auto head = comm.pointer("eventCallbackQueue.head");
  if (!head.ok()) {
    out.json()["pending_event_callbacks"] = nullptr;
    out.mark_unavailable("pending_event_callbacks", head.unavailable, head.address);
    return;
  }
  for (const ObjectView& node : follow_list(comm, *head.value, "ncclCommEventCallback",
                                            "pending_event_callbacks", out)) {
    auto event = node.pointer("event");
    events.push_back({{"address", hex(node.address())},
                      {"event", event.ok() ? nlohmann::json(hex(*event.value)) : nullptr}});
  }
}

nlohmann::json describe_ipc_import(const ObjectView& info, uint64_t slot) {
  nlohmann::json entry = {{"slot", slot}, {"address", hex(info.address())}};
  auto peer = info.integer("peerRank");
  entry["peer_rank"] = peer.ok() ? nlohmann::json(*peer.value) : nullptr;
  auto base = info.pointer("baseAddr");
  entry["base_address"] = base.ok() ? nlohmann::json(hex(*base.value)) : nullptr;
  auto remote = info.pointer("impInfo.rmtRegAddr");
  entry["remote_address"] = remote.ok() ? nlohmann::json(hex(*remote.value)) : nullptr;
  auto offset = info.unsigned_integer("impInfo.offset");
  entry["offset"] = offset.ok() ? nlohmann::json(*offset.value) : nullptr;
  auto legacy = info.integer("impInfo.legacyIpcCap");
  entry["legacy_ipc"] = legacy.ok() ? nlohmann::json(*legacy.value != 0) : nullptr;
  for (const auto* key : {"peer_rank", "base_address", "remote_address"})
    if (entry[key].is_null()) entry["unavailable"] = "ncclIpcRegInfo unreadable at " + hex(info.address());
  return entry;
}

// `import_budget`: IPC import entries still allowed for the whole cache (garbage
// slots pointing at garbage registrations must not make the document explode).
nlohmann::json describe_registration(const ObjectView& reg, uint64_t page_size, uint64_t& import_budget,
                                     FieldSink& out) {
  nlohmann::json entry = {{"address", hex(reg.address())}};
  auto begin = reg.unsigned_integer("begAddr");
  auto end = reg.unsigned_integer("endAddr");
  if (!begin.ok() || !end.ok()) {
    entry["unavailable"] = begin.ok() ? end.unavailable : begin.unavailable;
    return entry;
  }
  entry["begin"] = hex(*begin.value);
  entry["end"] = hex(*end.value);
  uint64_t size = *end.value >= *begin.value ? *end.value - *begin.value : 0;
  entry["size"] = size;
  if (page_size != 0) entry["pages"] = size / page_size;
  if (*end.value < *begin.value) out.warn("registration " + hex(reg.address()) + " ends before it begins");
  auto local_refs = reg.integer("localRefs");
  entry["local_refs"] = local_refs.ok() ? nlohmann::json(*local_refs.value) : nullptr;
  auto graph_refs = reg.integer("graphRefs");
  entry["graph_refs"] = graph_refs.ok() ? nlohmann::json(*graph_refs.value) : nullptr;
  auto state = reg.unsigned_integer("state");
  entry["state"] = state.ok() ? registration_state_names(*state.value) : nullptr;
  auto mc_handle = reg.unsigned_integer("mcHandle");
  if (mc_handle.ok() && *mc_handle.value != 0) {
    entry["nvls"] = {{"multicast_handle", hex(*mc_handle.value)}};
    auto reg_address = reg.unsigned_integer("regAddr");
    if (reg_address.ok()) entry["nvls"]["address"] = hex(*reg_address.value);
    auto uc_size = reg.unsigned_integer("regUCSize");
    if (uc_size.ok()) entry["nvls"]["unicast_size"] = *uc_size.value;
  }
  nlohmann::json& imports = entry["ipc_imports"] = nlohmann::json::array();
  uint64_t slots = reg.array_length("ipcInfos");
  for (uint64_t slot = 0; slot < slots && import_budget > 0; ++slot) {
    auto info = reg.deref("ipcInfos[" + std::to_string(slot) + "]");
    if (info.ok()) imports.push_back(describe_ipc_import(*info.value, slot));
    else if (info.address != 0)
      imports.push_back({{"slot", slot}, {"unavailable", info.unavailable}});
    else continue;
    if (--import_budget == 0) out.warn("regCache: IPC imports past the first " +
                                       std::to_string(out.scope().limits.max_ipc_imports) + " not decoded");
  }
  return entry;
}

// comm->regCache: the buffers the user registered (ncclCommRegister) or NCCL registered for graphs.
void decode_registrations(const ObjectView& comm, FieldSink& out) {
  ObjectView cache = comm.member("regCache");
  if (!cache.valid()) {
    out.put("registrations", Fetched<int64_t>::missing("ncclComm has no regCache in this NCCL version"));
    return;
  }
  FieldSink sink = out.child("registrations");
  auto capacity = cache.integer("capacity");
  auto population = cache.integer("population");
  auto page_size = cache.unsigned_integer("pageSize");
  sink.put("capacity", capacity);
  sink.put("population", population);
  sink.put("page_size", page_size);
  nlohmann::json& buffers = sink.json()["buffers"] = nlohmann::json::array();
  auto slots = cache.pointer("slots");
  if (!slots.ok() || !population.ok()) {
    sink.json()["buffers"] = nullptr;
    sink.mark_unavailable("buffers", slots.ok() ? population.unavailable : slots.unavailable,
                          slots.ok() ? population.address : slots.address);
    return;
  }
  int64_t count = *population.value;
  if (capacity.ok() && count > *capacity.value) {
    sink.warn("regCache population " + std::to_string(count) + " exceeds capacity " +
              std::to_string(*capacity.value));
    count = *capacity.value;
  }
  if (count > 0 && *slots.value == 0) sink.warn("regCache has population but no slots");
  const StructLayout* reg_type = comm.layout()->find_struct("ncclReg");
  if (reg_type == nullptr && count > 0) {
    sink.mark_unavailable("buffers", "struct ncclReg not in layout", 0);
    return;
  }
  uint64_t limit = std::min<uint64_t>(count < 0 ? 0 : count, out.scope().limits.max_registrations);
  if (count > 0 && static_cast<uint64_t>(count) > limit) sink.warn("regCache: only the first " + std::to_string(limit) + " slots decoded");
  uint64_t import_budget = out.scope().limits.max_ipc_imports;
  for (uint64_t i = 0; i < limit && *slots.value != 0; ++i) {
    auto reg_address = read_raw_integer(*comm.target(), *slots.value + i * kPointerSize, kPointerSize);
    if (!reg_address.ok()) {
      buffers.push_back({{"slot", i}, {"unavailable", reg_address.unavailable}});
      continue;
    }
    if (*reg_address.value == 0) continue;
    ObjectView reg(comm.target(), comm.layout(), reg_type, *reg_address.value);
    nlohmann::json entry = describe_registration(reg, page_size.ok() ? *page_size.value : 0, import_budget, sink);
    entry["slot"] = i;
    buffers.push_back(entry);
  }
}

constexpr int64_t kTransportP2p = 0;      // TRANSPORT_P2P in NCCL's transport.h
constexpr uint64_t kMaxPeersPerChannel = 256;  // bounds the walk when localRankToRank is unreadable

// Ranks on this node (P2P transport peers): localRankToRank[0..localRanks), else the first ranks.
std::vector<int64_t> node_ranks(const ObjectView& comm, FieldSink& out) {
  std::vector<int64_t> ranks;
  auto local_ranks = comm.integer("localRanks");
  auto table = comm.pointer("localRankToRank");
  if (local_ranks.ok() && table.ok() && *table.value != 0 && *local_ranks.value > 0) {
    int64_t count = std::min<int64_t>(*local_ranks.value, kMaxPeersPerChannel);
    std::vector<int32_t> values(count);
    ReadError error;
    if (comm.target()->read(*table.value, values.data(), values.size() * sizeof(int32_t), &error)) {
      ranks.assign(values.begin(), values.end());
      return ranks;
    }
  }
  auto nranks = comm.integer("nRanks");
  int64_t count = nranks.ok() ? std::min<int64_t>(*nranks.value, kMaxPeersPerChannel) : 0;
  if (nranks.ok() && *nranks.value > count) out.warn("p2p imports: only the first " + std::to_string(count) + " ranks checked");
  for (int64_t rank = 0; rank < count; ++rank) ranks.push_back(rank);
  return ranks;
}

// One connected connector of the P2P transport: the peer memory it mapped in (IPC or cuMem).
struct Unreadable {
  uint64_t count = 0;
  std::string first;
  uint64_t first_address = 0;
  void note(const std::string& why, uint64_t address) {
    if (count++ == 0) {
      first = why;
      first_address = address;
    }
  }
};

void describe_p2p_connector(const ObjectView& connector, uint64_t channel, int64_t peer,
                            const char* direction, uint64_t index, nlohmann::json& imports,
                            Unreadable& unreadable) {
  auto connected = connector.integer("connected");
  if (!connected.ok()) return unreadable.note(connected.unavailable, connected.address);
  if (*connected.value != 1) return;
  auto connection = connector.deref("proxyConn.connection");
  if (!connection.ok()) return unreadable.note(connection.unavailable, connection.address);
  auto transport = connection.value->integer("transport");
  if (!transport.ok()) return unreadable.note(transport.unavailable, transport.address);
  if (*transport.value != kTransportP2p) return;
  nlohmann::json entry = {{"channel", channel}, {"peer", peer}, {"direction", direction},
                          {"connector", index}};
  auto same_process = connector.integer("proxyConn.sameProcess");
  entry["same_process"] = same_process.ok() ? nlohmann::json(*same_process.value != 0) : nullptr;
  auto resources = connector.deref("transportResources", "p2pResources");
  if (!resources.ok()) {
    entry["unavailable"] = resources.unavailable;
    imports.push_back(entry);
    return;
  }
  auto type = resources.value->enum_name("type");
  entry["type"] = type.ok() ? nlohmann::json(*type.value) : nullptr;
  for (auto [key, field] : {std::pair{"send_mem_ipc", "sendMemIpc"}, std::pair{"recv_mem_ipc", "recvMemIpc"}}) {
    auto pointer = resources.value->pointer(field);
    entry[key] = pointer.ok() ? nlohmann::json(hex(*pointer.value)) : nullptr;
  }
  if (!type.ok()) entry["unavailable"] = type.unavailable;
  imports.push_back(entry);
}

// P2P transport connections: buffers of same-node peers mapped into this process.
void decode_p2p_imports(const ObjectView& comm, FieldSink& out) {
  nlohmann::json& imports = out.json()["p2p_transport"] = nlohmann::json::array();
  if (comm.layout()->find_struct("p2pResources") == nullptr ||
      comm.layout()->find_struct("ncclProxyConnection") == nullptr) {
    out.json()["p2p_transport"] = nullptr;
    out.mark_unavailable("p2p_transport", "layout lacks p2pResources/ncclProxyConnection", 0);
    return;
  }
  auto nchannels = comm.integer("nChannels");
  if (!nchannels.ok()) {
    out.json()["p2p_transport"] = nullptr;
    out.mark_unavailable("p2p_transport", nchannels.unavailable, nchannels.address);
    return;
  }
  uint64_t channels = std::min<uint64_t>({uint64_t(std::max<int64_t>(*nchannels.value, 0)),
                                          comm.array_length("channels"), out.scope().limits.max_channels});
  std::vector<int64_t> ranks = node_ranks(comm, out);
  const StructLayout* peer_type = comm.layout()->find_struct("ncclChannelPeer");
  Unreadable unreadable;
  // Connectors looked at, connected or not: garbage makes every peer pointer valid.
  uint64_t visit_budget = 4 * out.scope().limits.max_p2p_connectors;
  bool stopped = false;
  for (uint64_t channel = 0; channel < channels && peer_type != nullptr && !stopped; ++channel) {
    auto peers = comm.pointer("channels[" + std::to_string(channel) + "].peers");
    if (!peers.ok() || *peers.value == 0) continue;
    for (int64_t rank : ranks) {
      if (imports.size() >= out.scope().limits.max_p2p_connectors || visit_budget == 0) {
        out.warn("p2p_transport: stopped at " + std::to_string(imports.size()) + " connectors (limit " +
                 std::to_string(out.scope().limits.max_p2p_connectors) + " entries, " +
                 std::to_string(4 * out.scope().limits.max_p2p_connectors) + " looked at)");
        stopped = true;
        break;
      }
      if (rank < 0) continue;
      auto peer_address = read_raw_integer(*comm.target(), *peers.value + uint64_t(rank) * kPointerSize, kPointerSize);
      if (!peer_address.ok()) {
        unreadable.note(peer_address.unavailable, peer_address.address);
        continue;
      }
      if (*peer_address.value == 0) continue;
      ObjectView peer(comm.target(), comm.layout(), peer_type, *peer_address.value);
      for (const char* direction : {"send", "recv"}) {
        uint64_t connectors = std::min(peer.array_length(direction), visit_budget);
        visit_budget -= connectors;
        for (uint64_t index = 0; index < connectors; ++index)
          describe_p2p_connector(peer.member(std::string(direction) + "[" + std::to_string(index) + "]"),
                                 channel, rank, direction, index, imports, unreadable);
      }
    }
  }
  // One line for all unreadable connectors (a sliced or filtered core lacks them all at once).
  if (unreadable.count > 0)
    out.mark_unavailable("p2p_transport", std::to_string(unreadable.count) +
                         " connectors unreadable, first: " + unreadable.first, unreadable.first_address);
}

}  // namespace

nlohmann::json registration_state_names(uint64_t state) {
  // Bit names of NCCL's registration state (register.h, 2.19+).
  static const std::pair<uint64_t, const char*> kBits[] = {
      {0x01, "NET_REG_COMPLETE"},    {0x02, "NVLS_REG_COMPLETE"}, {0x04, "NVLS_REG_POSSIBLE"},
      {0x08, "NVLS_REG_NO_SUPPORT"}, {0x10, "COLLNET_REG_COMPLETE"}, {0x20, "IPC_REG_COMPLETE"}};
  nlohmann::json names = nlohmann::json::array();
  uint64_t known = 0;
  for (auto [bit, name] : kBits) {
    known |= bit;
    if (state & bit) names.push_back(name);
  }
  if (state & ~known) names.push_back(hex(state & ~known));
  return names;
}

void decode_cuda_resources(const ObjectView& comm, FieldSink& out) {
  FieldSink cuda = out.child("cuda");
  cuda.json() = nlohmann::json::object();
  decode_context(comm, cuda);
  decode_shared_streams(comm, cuda);
  decode_user_streams(comm, cuda);
  decode_event_callbacks(comm, cuda);
  decode_registrations(comm, cuda);
  decode_p2p_imports(comm, cuda);
}

}  // namespace nsc
