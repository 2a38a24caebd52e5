#include "nccl/kernel_view.h"

#include <map>
#include <set>

#include "nccl/kernel_args.h"
#include "util/json_access.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

bool is_uint(const json& value) { return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0); }

// A wait the counters do not decide; `reason` names what is missing
// (snapshot/kernels_text.cc words it).
json unknown(const json& conn, const char* reason) {
  return {{"kind", "unknown"}, {"peer", conn.value("peer", json())}, {"unknown_reason", reason}};
}

// Slots of data already posted beyond `base` for this protocol, or null when unreadable.
json arrived_beyond(const json& conn, const std::string& protocol, uint64_t base) {
  if (protocol == "SIMPLE") {
    const json& tail = json_member(conn, "tail");
    if (!is_uint(tail)) return nullptr;
    return tail.get<uint64_t>() > base ? tail.get<uint64_t>() - base : 0;
  }
  const json& flags = json_member(conn, protocol == "LL" ? "ll" : "ll128");
  if (!is_uint(json_member(flags, "base")) || json_member(flags, "base").get<uint64_t>() != base) return nullptr;
  return json_member(flags, "arrived_beyond_base");
}

// The receiver's position is its published head when readable (exact); otherwise the
// step saved at launch is a lower bound, and "nothing arrived beyond it" still proves the wait.
json recv_wait(const json& conn, const std::string& protocol) {
  int64_t peer = json_member(conn, "peer").is_number_integer() ? json_member(conn, "peer").get<int64_t>() : -1;
  const json& head = json_member(conn, "head");
  const json& launch = json_member(conn, "step_at_launch");
  if (is_uint(head)) {
    uint64_t step = head.get<uint64_t>();
    json arrived = arrived_beyond(conn, protocol, step);
    if (!is_uint(arrived)) return unknown(conn, "peer-data-unreadable");
    json wait = {{"kind", arrived.get<uint64_t>() > 0 ? "ready" : "waiting-for-data"}, {"peer", peer},
                 {"step", step}, {"position_from", "head"}};
    if (is_uint(launch) && launch.get<uint64_t>() <= step) wait["steps_since_launch"] = step - launch.get<uint64_t>();
    return wait;
  }
  if (!is_uint(launch)) return unknown(conn, "position-unavailable");
  uint64_t step = launch.get<uint64_t>();
  json arrived = arrived_beyond(conn, protocol, step);
  if (!is_uint(arrived)) return unknown(conn, "peer-data-unreadable");
  if (arrived.get<uint64_t>() == 0)
    return {{"kind", "waiting-for-data"}, {"peer", peer}, {"step", step}, {"position_from", "step_at_launch"}};
  json wait = unknown(conn, "position-unreadable");
  wait["step_at_launch"] = step;
  wait["posted_since_launch"] = arrived;
  return wait;
}

// How far the peer consumed what this rank sent: the facts of every send-side wait.
json send_position(json wait, const json& conn, uint64_t freed) {
  wait["consumed_step"] = freed;
  const json& launch = json_member(conn, "step_at_launch");
  if (is_uint(launch)) wait["step_at_launch"] = launch;
  return wait;
}

json with_protocol(json wait, const std::string& protocol) {
  wait["protocol"] = protocol;
  return wait;
}

json send_wait(const json& conn, const std::string& protocol, uint64_t nccl_steps) {
  const json& head = conn.value("head", json());
  if (!is_uint(head)) return unknown(conn, "send-head-unavailable");
  uint64_t freed = head.get<uint64_t>();
  uint64_t in_flight;
  if (protocol == "SIMPLE") {
    const json& tail = conn.value("tail", json());
    if (!is_uint(tail)) return send_position(unknown(conn, "send-posted-unreadable"), conn, freed);
    in_flight = tail.get<uint64_t>() >= freed ? tail.get<uint64_t>() - freed : 0;
  } else {
    const json& flags = conn.value(protocol == "LL" ? "ll" : "ll128", json());
    if (!flags.is_object())
      return send_position(with_protocol(unknown(conn, "send-flags-unreadable"), protocol), conn, freed);
    const json& posted = json_member(flags, "posted_beyond_head");
    if (!is_uint(posted)) return with_protocol(unknown(conn, "send-posted-slots-unavailable"), protocol);
    in_flight = posted.get<uint64_t>();
  }
  json wait = {{"kind", in_flight < nccl_steps ? "ready" : "waiting-for-slot"}, {"peer", conn.value("peer", -1)},
               {"step", freed + in_flight}, {"in_flight", in_flight}, {"nccl_steps", nccl_steps}};
  return send_position(std::move(wait), conn, freed);
}

// Connections the running algorithm moves data on: ring prev->me->next, tree up/down.
bool used_by(const json& conn, const std::string& algorithm) {
  std::set<std::string> roles;
  for (const json& role : conn.value("roles", json::array())) roles.insert(role.get<std::string>());
  std::string direction = json_text(json_member(conn, "direction"));
  if (algorithm == "RING") return (direction == "recv" && roles.count("ring-prev")) ||
                                  (direction == "send" && roles.count("ring-next"));
  if (algorithm == "TREE") return roles.count("tree-up") || roles.count("tree-down");
  return true;
}

const json* find_communicator(const json& state, const json& kernel, std::string* match) {
  std::string dev_comm = json_text(json_member(kernel, "dev_comm"));
  const json& comms = json_member(state, "communicators");
  if (!comms.is_array()) {
    *match = "no communicators decoded";
    return nullptr;
  }
  if (!dev_comm.empty())
    for (const json& comm : comms)
      if (json_text(json_member(json_member(comm, "device"), "dev_comm")) == dev_comm) {
        *match = "kernel argument comm == ncclComm.devComm";
        return &comm;
      }
  std::vector<const json*> on_device;
  for (const json& comm : comms)
    if (json_member(comm, "cuda_dev") == json_member(kernel, "device")) on_device.push_back(&comm);
  if (on_device.size() == 1) {
    *match = "guess: the only communicator on device " + kernel.value("device", json()).dump();
    return on_device[0];
  }
  *match = on_device.empty() ? "no communicator on this device"
                             : std::to_string(on_device.size()) + " communicators on this device; kernel argument unreadable";
  return nullptr;
}

// Ring and tree neighbours of channel `id` from the host-side channel table.
json channel_peers(const json& comm, const json& id) {
  const json& channels = json_member(comm, "channels");
  if (!channels.is_array()) return nullptr;
  for (const json& channel : channels) {
    if (json_member(channel, "id") != id) continue;
    const json& ring = json_member(channel, "ring");
    const json& tree = json_member(channel, "tree");
    json down = json::array();
    if (json_member(tree, "down").is_array())
      for (const json& rank : json_member(tree, "down"))
        if (rank.is_number_integer() && rank.get<int64_t>() >= 0) down.push_back(rank);
    return {{"ring_prev", json_member(ring, "prev")}, {"ring_next", json_member(ring, "next")},
            {"tree_up", json_member(tree, "up")}, {"tree_down", down}};
  }
  return nullptr;
}

json block_view(const json& block, const json& kernel, const json* comm) {
  json out = {{"block", block.value("block", json())}, {"channel", block.value("channel", json())},
              {"channel_source", block.value("channel_source", json())},
              {"function", block.value("function", json())}, {"waits", json::array()}};
  if (block.contains("channel_in_shared")) out["channel_in_shared"] = block["channel_in_shared"];
  const json& running = block.value("running", kernel.value("nccl", json::object()));
  std::string algorithm = json_text(json_member(running, "algorithm")), protocol = json_text(json_member(running, "protocol"));
  out["algorithm"] = algorithm.empty() ? json(nullptr) : json(algorithm);
  out["protocol"] = protocol.empty() ? json(nullptr) : json(protocol);
  const json& channel_id = block.value("channel", json());
  if (comm == nullptr || !channel_id.is_number_integer()) {
    out["state"] = "unknown";
    out["reason"] = comm == nullptr ? "communicator not identified" : "channel of this block unknown";
    return out;
  }
  out["peers"] = channel_peers(*comm, channel_id);
  const json& device = json_member(*comm, "device");
  uint64_t steps = is_uint(json_member(device, "nccl_steps")) ? json_member(device, "nccl_steps").get<uint64_t>() : 0;
  const json* channel = nullptr;
  const json& channels = json_member(device, "channels");
  if (channels.is_array())
    for (const json& candidate : channels)
      if (json_member(candidate, "id") == channel_id) channel = &candidate;
  if (channel == nullptr || steps == 0) {
    out["state"] = "unknown";
    out["reason"] = "no device connection data for channel " + channel_id.dump();
    return out;
  }
  if (protocol != "LL" && protocol != "LL128" && protocol != "SIMPLE") {
    out["state"] = "unknown";
    out["reason"] = "protocol of the running function unknown";
    return out;
  }
  bool any_unknown = false;
  const json& connections = json_member(*channel, "connections");
  for (const json& conn : connections.is_array() ? connections : json::array()) {
    if (json_member(conn, "connected") == false || !used_by(conn, algorithm)) continue;
    json wait = json_member(conn, "connected") != true ? unknown(conn, "connection-state-unavailable")
                : json_text(json_member(conn, "direction")) == "recv"  ? recv_wait(conn, protocol)
                                                    : send_wait(conn, protocol, steps);
    wait["direction"] = conn.value("direction", json());
    any_unknown |= wait["kind"] == "unknown";
    out["waits"].push_back(std::move(wait));
  }
  bool waiting = false;
  for (const json& wait : out["waits"]) waiting |= json_text(json_member(wait, "kind")).rfind("waiting", 0) == 0;
  out["state"] = waiting ? "waiting" : (any_unknown || out["waits"].empty()) ? "unknown" : "not-waiting-on-peers";
  if (out["waits"].empty()) out["reason"] = "no connected connection of this channel decoded";
  return out;
}

// The peers the blocks wait on: per kind and peer, how many blocks wait so.
json kernel_summary(const json& blocks) {
  std::map<std::string, int> count;  // "kind peer" -> blocks (this order is the document's)
  for (const json& block : blocks)
    for (const json& wait : block.value("waits", json::array()))
      if (json_text(json_member(wait, "kind")).rfind("waiting", 0) == 0)
        ++count[json_text(json_member(wait, "kind")) + " " + std::to_string(wait.value("peer", -1))];
  json waits = json::array();
  for (const auto& [key, n] : count) {
    size_t space = key.find(' ');
    waits.push_back({{"kind", key.substr(0, space)}, {"peer", std::stoll(key.substr(space + 1))}, {"blocks", n}});
  }
  return waits;
}

// "at::cuda::(anonymous namespace)::spin_kernel(long)" -> "at::cuda::(anonymous namespace)::spin_kernel":
// the trailing parameter list cuda-gdb's Invocation column adds.
std::string function_name(const std::string& invocation) {
  if (invocation.empty() || invocation.back() != ')') return invocation;
  int depth = 0;
  for (size_t i = invocation.size(); i-- > 0;) {
    depth += invocation[i] == ')' ? 1 : invocation[i] == '(' ? -1 : 0;
    if (depth == 0) return invocation.substr(0, i);
  }
  return invocation;
}

// Addresses of the communicators whose kernels are resident.
std::set<std::string> busy_communicators(const json& nccl_view) {
  std::set<std::string> out;
  for (const json& kernel : nccl_view.is_array() ? nccl_view : json::array())
    if (const json* comm = find_json_member(kernel, "communicator"); comm != nullptr && comm->is_object())
      out.insert(json_text(json_member(*comm, "address")));
  return out;
}

// One communicator with no kernel of it resident on this device: what its host launched (the
// seqNumber counters move at enqueue). A plan with proxy ops reaches callbackQueue only once
// its stream got there (v2.28.9 enqueue.cc hostStreamPlanTask), so launched plans are not
// listed from it: the counters are what stays true whether the work ran or still waits.
json queued_work(const json& comm) {
  return {{"address", comm.value("address", json())}, {"comm_hash", comm.value("comm_hash", json())},
          {"rank", comm.value("rank", json())}, {"nranks", comm.value("nranks", json())},
          {"cuda_dev", comm.value("cuda_dev", json())}, {"seq_launched", comm.value("seq_launched", json())},
          {"nccl_kernel_resident", false}, {"relation", "inferred"}};
}

// Launched work counts when some launch counter of it is above 0.
bool has_launched_work(const json& comm) {
  for (const auto& [name, count] : json_member(comm, "seq_launched").items())
    if (count.is_number_integer() && count.get<int64_t>() > 0) return true;
  return false;
}

json queued_behind(const json& state, const json& device, const std::set<std::string>& busy) {
  json out = json::array();
  if (!device.is_number_integer()) return out;
  for (const json& comm : state.value("communicators", json::array())) {
    if (!comm.is_object() || json_member(comm, "cuda_dev") != device) continue;
    if (busy.count(json_text(json_member(comm, "address"))) || !has_launched_work(comm)) continue;
    out.push_back(queued_work(comm));
  }
  return out;
}

}  // namespace

json build_other_kernels(const json& state, const json& nccl_view, const json& rows) {
  json out = json::array();
  std::set<std::string> busy = busy_communicators(nccl_view);
  for (const json& row : rows.is_array() ? rows : json::array()) {
    if (!row.is_object()) continue;
    json kernel;
    for (const char* key : {"kernel", "device", "grid", "status", "grid_dim", "block_dim", "invocation", "focus"})
      kernel[key] = row.value(key, json());
    kernel["name"] = function_name(json_text(json_member(row, "invocation")));
    // What cuda-gdb 13's `info cuda kernels` does not print, said once per kernel.
    kernel["stream"] = nullptr;
    kernel["resident_since"] = nullptr;
    kernel["unavailable"] = {{"stream", "cuda-gdb's info cuda kernels shows no stream"},
                             {"resident_since", "cuda-gdb shows no launch time"}};
    kernel["queued_behind"] = queued_behind(state, json_member(row, "device"), busy);
    out.push_back(std::move(kernel));
  }
  return out;
}

json connection_wait(const json& connection, const std::string& protocol, uint64_t nccl_steps) {
  return json_text(json_member(connection, "direction")) == "recv" ? recv_wait(connection, protocol)
                                                : send_wait(connection, protocol, nccl_steps);
}

json build_kernel_view(const json& state, const json& kernels) {
  json out = json::array();
  for (const json& seen : kernels.is_array() ? kernels : json::array()) {
    if (!seen.is_object()) continue;
    json kernel = kernel_facts(seen);
    json view = kernel;
    view.erase("blocks");
    std::string match;
    const json* comm = find_communicator(state, kernel, &match);
    view["communicator"] = comm == nullptr ? json(nullptr)
                                           : json{{"address", comm->value("address", json())},
                                                  {"comm_hash", comm->value("comm_hash", json())},
                                                  {"rank", comm->value("rank", json())},
                                                  {"nranks", comm->value("nranks", json())}};
    view["communicator_match"] = match;
    json blocks = json::array();
    for (const json& block : kernel.value("blocks", json::array())) blocks.push_back(block_view(block, kernel, comm));
    view["waits"] = kernel_summary(blocks);
    view["blocks"] = blocks;
    out.push_back(std::move(view));
  }
  return out;
}

}  // namespace nsc
