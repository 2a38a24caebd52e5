#include "nccl/connection_decoder.h"

#include <map>
#include <optional>
#include <set>

#include "nccl/object_view.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

constexpr int kProtoLL = 0, kProtoLL128 = 1, kProtoSimple = 2;  // NCCL_PROTO_* (buffs[] index)
constexpr uint64_t kLL128FlagOffset = 120;  // the flag is the last u64 of a 128-byte LL128 line
constexpr uint64_t kLLFlag1Offset = 4;      // union ncclLLFifoLine {data1, flag1, data2, flag2}
constexpr uint64_t kMaxSteps = 64;          // NCCL_STEPS is 8; a larger layout value is not trusted

struct Peer {
  int64_t rank;
  std::set<std::string> roles;
};

// Ring and tree peers of one decoded channel, each with the roles it plays.
std::map<int64_t, Peer> channel_peers(const json& channel, int64_t nranks) {
  std::map<int64_t, Peer> peers;
  auto add = [&](const json& value, const char* role) {
    if (!value.is_number_integer()) return;
    int64_t rank = value.get<int64_t>();
    if (rank < 0 || rank >= nranks) return;
    peers[rank].rank = rank;
    peers[rank].roles.insert(role);
  };
  const json& ring = channel.value("ring", json::object());
  add(ring.value("prev", json()), "ring-prev");
  add(ring.value("next", json()), "ring-next");
  const json& tree = channel.value("tree", json::object());
  add(tree.value("up", json()), "tree-up");
  for (const json& down : tree.value("down", json::array())) add(down, "tree-down");
  return peers;
}

// Reads the u64 element `index` of a pointer array in host memory.
Fetched<uint64_t> pointer_element(Target& host, uint64_t array, uint64_t index) {
  if (array == 0) return Fetched<uint64_t>::missing("array pointer is NULL");
  return read_raw_integer(host, array + index * 8, 8);
}

struct ProtocolGeometry {
  uint64_t steps = 0;             // NCCL_STEPS: slots per connection buffer
  int64_t buff_sizes[3] = {0, 0, 0};  // comm->buffSizes per protocol
};

void put_counter(json& conn, json& unavailable, const char* key, Target& device, const Fetched<uint64_t>& pointer) {
  conn[key] = nullptr;
  if (!pointer.ok()) {
    unavailable[key] = "pointer unavailable: " + pointer.unavailable;
  } else if (*pointer.value == 0) {
    unavailable[key] = "pointer is NULL";
  } else {
    Fetched<uint64_t> value = read_raw_integer(device, *pointer.value, 8);
    if (value.ok()) conn[key] = *value.value;
    else unavailable[key] = value.unavailable + " at " + hex(*pointer.value);
  }
}

// The protocol flag of slot `step` in a connection buffer: LL keeps a u32 flag in every
// 16-byte line, LL128 a u64 in every 128-byte line; data of step s carries flag s+1.
Fetched<uint64_t> slot_flag(Target& device, uint64_t buffer, int protocol, uint64_t step,
                            const ProtocolGeometry& geometry) {
  uint64_t slot_bytes = static_cast<uint64_t>(geometry.buff_sizes[protocol]) / geometry.steps;
  uint64_t slot = buffer + (step % geometry.steps) * slot_bytes;
  if (protocol == kProtoLL) return read_raw_integer(device, slot + kLLFlag1Offset, 4);
  return read_raw_integer(device, slot + kLL128FlagOffset, 8);
}

uint64_t expected_flag(int protocol, uint64_t step) {
  return protocol == kProtoLL ? static_cast<uint32_t>(step + 1) : step + 1;
}

// Consecutive slots from step `base` whose protocol flag says their data is there (at most
// NCCL_STEPS); empty with the reason when not even the first slot could be read.
std::optional<uint64_t> flagged_slots(Target& device, uint64_t buffer, int protocol, uint64_t base,
                                      const ProtocolGeometry& geometry, std::string* why) {
  uint64_t count = 0;
  for (; count < geometry.steps; ++count) {
    Fetched<uint64_t> flag = slot_flag(device, buffer, protocol, base + count, geometry);
    if (!flag.ok()) {
      if (count == 0) {
        *why = flag.unavailable;
        return std::nullopt;
      }
      break;
    }
    if (*flag.value != expected_flag(protocol, base + count)) break;
  }
  return count;
}

// LL and LL128 flags from `base` on: the recv side counts what arrived beyond the receiver's
// position (its published head; when that lives in the peer's memory, as on P2P where cuda-gdb
// cannot read it, the step saved at launch is a lower bound); the send side counts what was
// posted beyond the head the peer published (LL senders publish no tail).
void put_protocol_flags(json& conn, json& unavailable, Target& device, const uint64_t buffers[3],
                        const ProtocolGeometry& geometry, bool recv) {
  const char* base_from = conn["head"].is_number_unsigned() ? "head"
                          : recv && conn["step_at_launch"].is_number_unsigned() ? "step_at_launch" : nullptr;
  if (base_from == nullptr) return;
  uint64_t base = conn[base_from].get<uint64_t>();
  for (int protocol : {kProtoLL, kProtoLL128}) {
    const char* key = protocol == kProtoLL ? "ll" : "ll128";
    if (buffers[protocol] == 0 || geometry.buff_sizes[protocol] <= 0) continue;
    std::string why;
    std::optional<uint64_t> count = flagged_slots(device, buffers[protocol], protocol, base, geometry, &why);
    if (!count) unavailable[key] = why;
    else if (recv) conn[key] = {{"base", base}, {"base_from", base_from}, {"arrived_beyond_base", *count}};
    else conn[key] = {{"posted_beyond_head", *count}};
  }
}

json decode_connection(Target& host, Target& device, const LayoutProfile& layout, uint64_t host_peer,
                       uint64_t device_peer, const std::string& device_peer_why, const char* direction, int index,
                       const ProtocolGeometry& geometry) {
  std::string side = std::string(direction) + "[" + std::to_string(index) + "]";
  json conn = {{"direction", direction}, {"conn_index", index}};
  json unavailable = json::object();
  ObjectView peer = ObjectView::of(host, layout, "ncclChannelPeer", host_peer);
  Fetched<int64_t> connected = peer.integer(side + ".connected");
  conn["connected"] = connected.ok() ? json(*connected.value != 0) : json(nullptr);
  if (!connected.ok()) unavailable["connected"] = connected.unavailable;
  uint64_t buffers[3] = {0, 0, 0};
  for (int protocol = 0; protocol < 3; ++protocol) {
    auto buffer = peer.pointer(side + ".conn.buffs[" + std::to_string(protocol) + "]");
    if (buffer.ok()) buffers[protocol] = *buffer.value;
  }
  auto tail = peer.pointer(side + ".conn.tail");
  auto head = peer.pointer(side + ".conn.head");
  conn["tail_address"] = tail.ok() ? json(hex(*tail.value)) : json(nullptr);
  conn["head_address"] = head.ok() ? json(hex(*head.value)) : json(nullptr);
  if (device_peer != 0) {
    ObjectView device_view = ObjectView::of(device, layout, "ncclDevChannelPeer", device_peer);
    Fetched<uint64_t> step = device_view.unsigned_integer(side + ".step");
    conn["step_at_launch"] = step.ok() ? json(*step.value) : json(nullptr);
    if (!step.ok()) unavailable["step_at_launch"] = step.unavailable;
  } else {
    conn["step_at_launch"] = nullptr;
    unavailable["step_at_launch"] = device_peer_why;
  }
  put_counter(conn, unavailable, "tail", device, tail);
  put_counter(conn, unavailable, "head", device, head);
  put_protocol_flags(conn, unavailable, device, buffers, geometry, std::string(direction) == "recv");
  conn["unavailable"] = unavailable;
  return conn;
}

ProtocolGeometry protocol_geometry(const ObjectView& comm, const LayoutProfile& layout) {
  ProtocolGeometry geometry;
  // NCCL_STEPS is not a symbol: it sizes ncclRecvMem::connFifo[NCCL_STEPS].
  if (const StructLayout* recv_mem = layout.find_struct("ncclRecvMem"))
    for (const MemberLayout& member : recv_mem->members)
      if (member.name == "connFifo" && !member.array_dims.empty()) geometry.steps = member.array_dims[0];
  for (int protocol = 0; protocol < 3; ++protocol) {
    auto size = comm.integer("buffSizes[" + std::to_string(protocol) + "]");
    if (size.ok()) geometry.buff_sizes[protocol] = *size.value;
  }
  return geometry;
}

json decode_channel(Target& host, Target& device, const LayoutProfile& layout, const ObjectView& comm,
                    const json& channel, int64_t nranks, const ProtocolGeometry& geometry) {
  int64_t id = channel.value("id", -1);
  std::string path = "channels[" + std::to_string(id) + "]";
  json out = {{"id", id}, {"connections", json::array()}};
  json unavailable = json::object();
  auto host_peers = comm.pointer(path + ".peers");
  auto device_peers = comm.pointer(path + ".devPeersHostPtr");
  if (!host_peers.ok() || !device_peers.ok()) {
    unavailable["peers"] = !host_peers.ok() ? host_peers.unavailable : device_peers.unavailable;
    out["unavailable"] = unavailable;
    return out;
  }
  for (const auto& [rank, peer] : channel_peers(channel, nranks)) {
    Fetched<uint64_t> host_peer = pointer_element(host, *host_peers.value, rank);
    Fetched<uint64_t> device_peer = pointer_element(host, *device_peers.value, rank);
    if (!host_peer.ok() || *host_peer.value == 0) {
      unavailable["peer " + std::to_string(rank)] =
          host_peer.ok() ? "peers[" + std::to_string(rank) + "] is NULL" : host_peer.unavailable;
      continue;
    }
    for (const char* direction : {"recv", "send"}) {
      uint64_t device_address = device_peer.ok() ? *device_peer.value : 0;
      std::string why = !device_peer.ok() ? "devPeersHostPtr entry unavailable: " + device_peer.unavailable
                                          : "devPeersHostPtr entry is NULL";
      json conn = decode_connection(host, device, layout, *host_peer.value, device_address, why, direction, 0,
                                    geometry);
      conn["peer"] = rank;
      conn["roles"] = std::vector<std::string>(peer.roles.begin(), peer.roles.end());
      out["connections"].push_back(std::move(conn));
    }
  }
  out["unavailable"] = unavailable;
  return out;
}

// Where a debugger finds the comm pointer and channel mask in a copy of the kernel's
// arguments (NCCL keeps one at the start of its shared memory, ncclShmem.args).
json kernel_args_layout(const LayoutProfile& layout) {
  const StructLayout* args = layout.find_struct("ncclDevKernelArgs");
  if (args == nullptr) return nullptr;
  json out = {{"size", args->size}};
  for (const MemberLayout& member : args->members) {
    if (member.name == "comm") out["comm_offset"] = member.offset;
    if (member.name == "channelMask") out["channel_mask_offset"] = member.offset;
  }
  return out;
}

}  // namespace

json decode_device_connections(Target& host, Target& device, const LayoutProfile& layout, uint64_t comm_address,
                               const json& comm_entry, const DecodeLimits& limits) {
  json out = {{"channels", json::array()}};
  json unavailable = json::object();
  ObjectView comm = ObjectView::of(host, layout, "ncclComm", comm_address);
  if (!comm.valid() || layout.find_struct("ncclDevChannelPeer") == nullptr) {
    out["unavailable"] = {{"device", "the layout lacks ncclComm or ncclDevChannelPeer"}};
    return out;
  }
  auto dev_comm = comm.pointer("devComm");
  out["dev_comm"] = dev_comm.ok() ? json(hex(*dev_comm.value)) : json(nullptr);
  if (!dev_comm.ok()) unavailable["dev_comm"] = dev_comm.unavailable;
  out["kernel_args"] = kernel_args_layout(layout);
  ProtocolGeometry geometry = protocol_geometry(comm, layout);
  out["nccl_steps"] = geometry.steps ? json(geometry.steps) : json(nullptr);
  out["buff_sizes"] = {geometry.buff_sizes[0], geometry.buff_sizes[1], geometry.buff_sizes[2]};
  if (geometry.steps == 0 || geometry.steps > kMaxSteps) {
    unavailable["nccl_steps"] = geometry.steps == 0 ? "the layout lacks ncclRecvMem.connFifo (NCCL_STEPS)"
                                                    : "ncclRecvMem.connFifo has " + std::to_string(geometry.steps) +
                                                          " slots: not a plausible NCCL_STEPS";
    out["nccl_steps"] = nullptr;
    out["unavailable"] = unavailable;
    return out;
  }
  int64_t nranks = comm_entry.value("nranks", json()).is_number_integer() ? comm_entry["nranks"].get<int64_t>() : 0;
  nranks = std::min<int64_t>(nranks, static_cast<int64_t>(limits.max_ranks));
  for (const json& channel : comm_entry.value("channels", json::array())) {
    if (out["channels"].size() >= limits.max_channels) break;
    out["channels"].push_back(decode_channel(host, device, layout, comm, channel, nranks, geometry));
  }
  out["unavailable"] = unavailable;
  return out;
}

}  // namespace nsc
