// Proxy operations in flight: proxyState->progressState.active, walked along
// `next` (ops being progressed) and `nextPeer` (ops queued behind them).
#include <set>

#include "nccl/comm_decoder.h"
#include "nccl/nccl_names.h"
#include "util/strings.h"

namespace nsc {
namespace {

nlohmann::json decode_sub(const ObjectView& sub, const std::string& path, FieldSink& out) {
  nlohmann::json entry = nlohmann::json::object();
  FieldSink sink(&entry, path + ".", &out.scope());
  sink.put("channel", sub.integer("channelId"));
  sink.put("peer", sub.integer("peer"));
  sink.put("nsteps", sub.integer("nsteps"));
  sink.put("nbytes", sub.integer("nbytes"));
  for (const char* counter : {"base", "posted", "received", "transmitted", "done", "end"})
    sink.put_count(counter, sub.unsigned_integer(counter));
  // The connection says which side this sub progresses: send (GPU -> network) or receive.
  // Its transport says which counters that side advances (net.cc, p2p.cc, shm.cc differ).
  auto connection = sub.deref("connection");
  if (!connection.ok()) {
    sink.put("send", Fetched<int64_t>::missing(connection.unavailable, connection.address));
    sink.put("transport", Fetched<int64_t>::missing(connection.unavailable));  // one error is enough
    return entry;
  }
  auto send = connection.value->integer("send");
  sink.put_bool("send", send);
  // Beside `send` in one struct: when that was unreadable, one error says so for both.
  auto transport = send.ok() ? connection.value->integer("transport") : Fetched<int64_t>::missing(send.unavailable);
  if (transport.ok()) entry["transport"] = transport_name(*transport.value);
  else sink.put("transport", transport);
  return entry;
}

nlohmann::json decode_args(const ObjectView& args, const std::string& path, FieldSink& out) {
  const LayoutProfile& layout = *args.layout();
  nlohmann::json entry = {{"address", hex(args.address())}};
  FieldSink sink(&entry, path + ".", &out.scope());
  sink.put_count("op_count", args.unsigned_integer("opCount"));
  auto coll = args.integer("coll");
  if (coll.ok()) entry["collective"] = collective_name(layout, *coll.value);
  auto pattern = args.integer("pattern");
  if (pattern.ok()) entry["pattern"] = enum_value_name(layout, "ncclPattern_t", *pattern.value);
  auto protocol = args.integer("protocol");
  if (protocol.ok()) entry["protocol"] = protocol_name(*protocol.value);
  sink.put("state", args.integer("state"));
  sink.put("done", args.integer("done"));
  auto nsubs = args.integer("nsubs");
  sink.put("nsubs", nsubs);
  entry["subs"] = nlohmann::json::array();
  if (!nsubs.ok()) return entry;
  uint64_t capacity = std::min<uint64_t>(args.array_length("subs"), out.scope().limits.max_subs);
  if (*nsubs.value < 0 || static_cast<uint64_t>(*nsubs.value) > capacity) {
    sink.warn("proxy op " + hex(args.address()) + " nsubs is " + std::to_string(*nsubs.value));
    return entry;
  }
  for (int64_t s = 0; s < *nsubs.value; ++s)
    entry["subs"].push_back(decode_sub(args.member("subs[" + std::to_string(s) + "]"),
                                       path + ".subs[" + std::to_string(s) + "]", out));
  return entry;
}

}  // namespace

void decode_proxy_ops(const ObjectView& comm, FieldSink& out) {
  nlohmann::json& ops = out.json()["proxy_ops"] = nlohmann::json::array();
  auto proxy_state = comm.deref("proxyState");
  if (!proxy_state.ok()) {
    out.mark_unavailable("proxy_ops", proxy_state.unavailable, proxy_state.address);
    out.json()["proxy_ops"] = nullptr;
    return;
  }
  ObjectView progress = proxy_state.value->member("progressState");
  auto head = progress.pointer("active");
  if (!head.ok()) {
    out.mark_unavailable("proxy_ops", head.unavailable, head.address);
    out.json()["proxy_ops"] = nullptr;
    return;
  }
  const LayoutProfile& layout = *comm.layout();
  const StructLayout* args_type = layout.find_struct("ncclProxyArgs");
  std::set<uint64_t> visited;
  std::vector<uint64_t> pending{*head.value};
  while (!pending.empty()) {
    uint64_t address = pending.back();
    pending.pop_back();
    if (address == 0) continue;
    if (!visited.insert(address).second) {
      out.warn("proxy op list revisits " + hex(address) + " (cycle); each op shown once");
      continue;
    }
    if (visited.size() > out.scope().limits.max_list_nodes) {
      out.warn("proxy op list longer than " + std::to_string(out.scope().limits.max_list_nodes) +
               " entries (cycle or corruption); stopped");
      break;
    }
    ObjectView args(comm.target(), &layout, args_type, address);
    ops.push_back(decode_args(args, "proxy_ops[" + std::to_string(ops.size()) + "]", out));
    for (const char* link : {"nextPeer", "next"}) {
      auto next = args.pointer(link);
      if (next.ok()) pending.push_back(*next.value);
    }
  }
}

}  // namespace nsc
