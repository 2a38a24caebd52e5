// Work planned but not yet launched: the kernel planner's queued collective
// and P2P tasks, unlaunched plans, and whether the comm sits in a group; and
// work launched but not yet reclaimed (its tasks, with their buffers).
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "nccl/comm_decoder.h"
#include "nccl/nccl_names.h"
#include "util/strings.h"

namespace nsc {
namespace {

// Walks a `next`-linked list of `type` from head, bounded and cycle-safe.
// `unreadable`, when given, receives why the walk stopped at a node it could not read.
std::vector<ObjectView> walk_list(const ObjectView& owner, uint64_t head, const std::string& type,
                                  const std::string& what, FieldSink& out, uint64_t max_nodes = UINT64_MAX,
                                  std::string* unreadable = nullptr) {
  max_nodes = std::min(max_nodes, out.scope().limits.max_list_nodes);
  std::vector<ObjectView> nodes;
  const StructLayout* layout = owner.layout()->find_struct(type);
  if (layout == nullptr) return nodes;
  std::set<uint64_t> visited;
  for (uint64_t address = head; address != 0;) {
    if (!visited.insert(address).second) {
      out.warn(what + " list has a cycle at " + hex(address));
      break;
    }
    if (nodes.size() >= max_nodes) {
      out.warn(what + " list longer than " + std::to_string(nodes.size()) + " entries; stopped");
      break;
    }
    ObjectView node(owner.target(), owner.layout(), layout, address);
    nodes.push_back(node);
    auto next = node.pointer("next");
    if (!next.ok()) {
      out.warn(what + " list: " + next.unavailable);
      if (unreadable != nullptr) *unreadable = what + " list unreadable at " + hex(address) + ": " + next.unavailable;
      break;
    }
    address = *next.value;
  }
  return nodes;
}

// A buffer pointer as hex, null when unreadable; absent when the version has no such field.
void put_pointer(const ObjectView& task, const char* field, nlohmann::json& entry) {
  if (!task.has(field)) return;
  auto value = task.pointer(field);
  entry[field] = value.ok() ? nlohmann::json(hex(*value.value)) : nullptr;
}

// A queued collective: ncclTaskColl (2.22 and later: func, opHost) or ncclInfo (2.21: coll, op).
nlohmann::json describe_coll_task(const ObjectView& task) {
  const LayoutProfile& layout = *task.layout();
  nlohmann::json entry = {{"address", hex(task.address())}};
  auto func = task.integer(task.has("func") ? "func" : "coll");
  entry["collective"] = func.ok() ? nlohmann::json(collective_name(layout, *func.value)) : nullptr;
  auto count = task.unsigned_integer("count");
  entry["count"] = count.ok() ? nlohmann::json(*count.value) : nullptr;
  auto datatype = task.enum_name("datatype");
  entry["datatype"] = datatype.ok() ? nlohmann::json(*datatype.value) : nullptr;
  auto op = task.enum_name(task.has("opHost") ? "opHost" : "op");
  entry["op"] = op.ok() ? nlohmann::json(*op.value) : nullptr;
  auto root = task.integer("root");
  entry["root"] = root.ok() ? nlohmann::json(*root.value) : nullptr;
  put_pointer(task, "sendbuff", entry);
  put_pointer(task, "recvbuff", entry);
  return entry;
}

nlohmann::json describe_p2p_task(const ObjectView& task, const char* kind, int64_t peer) {
  nlohmann::json entry = {{"address", hex(task.address())}, {"kind", kind}, {"peer", peer}};
  auto count = task.unsigned_integer("count");
  entry["count"] = count.ok() ? nlohmann::json(*count.value) : nullptr;
  auto datatype = task.enum_name("datatype");
  entry["datatype"] = datatype.ok() ? nlohmann::json(*datatype.value) : nullptr;
  put_pointer(task, "buff", entry);
  return entry;
}

void decode_planned_colls(const ObjectView& planner, FieldSink& out) {
  nlohmann::json& colls = out.json()["colls"] = nlohmann::json::array();
  // ncclKernelPlanner's queues of ncclTaskColl; ncclTasks of 2.19-2.21 queue ncclInfo (linked by
  // its `next`), those of 2.18 ncclTaskColl again.
  const StructLayout* info = planner.layout()->find_struct("ncclInfo");
  bool queues_info = planner.type()->name == "ncclTasks" && info != nullptr && info->find("next") != nullptr;
  const char* task_type = queues_info ? "ncclInfo" : "ncclTaskColl";
  for (const char* queue : {"collSorter.head", "collTaskQueue.head", "collQueue.head"}) {
    auto head = planner.pointer(queue);
    if (!head.ok()) continue;  // field absent in this version: the other queue may exist
    for (const ObjectView& task : walk_list(planner, *head.value, task_type, queue, out))
      colls.push_back(describe_coll_task(task));
  }
}

// Peers are visited up to nranks (capped), but the walk ends once it has found
// n_tasks_p2p tasks (NCCL counts every queued P2P task there) or the node budget
// is spent, and at the first unreadable peer: garbage counts cost bounded work.
void decode_planned_p2p(const ObjectView& planner, int64_t nranks, int64_t n_tasks_p2p, FieldSink& out) {
  nlohmann::json& p2p = out.json()["p2p"] = nlohmann::json::array();
  auto peers = planner.pointer("peers");
  const StructLayout* peer_type = planner.layout()->find_struct(planner.type()->name + "::Peer");
  if (!peers.ok() || *peers.value == 0 || peer_type == nullptr || nranks <= 0) return;
  int64_t limit = std::min<int64_t>(nranks, static_cast<int64_t>(out.scope().limits.max_ranks));
  uint64_t budget = std::min<uint64_t>(static_cast<uint64_t>(n_tasks_p2p), out.scope().limits.max_list_nodes);
  for (int64_t peer = 0; peer < limit && p2p.size() < budget; ++peer) {
    ObjectView entry(planner.target(), planner.layout(), peer_type,
                     *peers.value + static_cast<uint64_t>(peer) * peer_type->size);
    for (auto [queue, kind] : {std::pair{"sendQueue.head", "send"}, {"recvQueue.head", "recv"}}) {
      if (p2p.size() >= budget) return;
      auto head = entry.pointer(queue);
      if (!head.ok()) {  // unreadable peers array: stop, do not report garbage
        out.warn("planner peers[" + std::to_string(peer) + "]." + queue + ": " + head.unavailable);
        return;
      }
      for (const ObjectView& task : walk_list(entry, *head.value, "ncclTaskP2p", queue, out, budget - p2p.size()))
        p2p.push_back(describe_p2p_task(task, kind, peer));
    }
  }
}

// Plans launched but not yet reclaimed: NCCL queues each plan on comm->callbackQueue (an MPSC
// queue, oldest at head) once its host task ran, and frees its tasks only when a later NCCL call
// polls that queue (v2.28.9 enqueue.cc reclaimPlan). The newest of them is what a hung rank's
// kernel is running. A plan must point back at this comm.
std::vector<ObjectView> plans_awaiting_reclaim(const ObjectView& comm, FieldSink& out) {
  std::vector<ObjectView> plans;
  auto head = comm.pointer("callbackQueue.head");
  if (!head.ok()) {
    out.put("plans_awaiting_reclaim", Fetched<int64_t>::missing(head.unavailable));
    return plans;
  }
  // Every callback on this queue is a plan's reclaimer (its first member): 2.23-2.30 enqueue.cc
  // pushes nothing else there. Memory a core did not save (a slice made before plans were kept)
  // is a gap, said as unavailable; a plan naming another comm is damage, a warning.
  const StructLayout* plan_type = comm.layout()->find_struct("ncclKernelPlan");
  std::set<uint64_t> visited;
  for (uint64_t address = *head.value; address != 0;) {
    if (!visited.insert(address).second || plans.size() >= 256) {
      out.warn("callbackQueue list has a cycle or over 256 plans at " + hex(address) + "; stopped");
      break;
    }
    ObjectView plan(comm.target(), comm.layout(), plan_type, address);
    auto owner = plan.pointer("comm");
    auto next = plan.pointer("reclaimer.next");
    if (!owner.ok() || !next.ok()) {
      const auto& gap = owner.ok() ? next : owner;
      // No read error (address 0): launched work is what numerics reads, not what decides a verdict.
      out.put("plans_awaiting_reclaim", Fetched<int64_t>::missing(gap.unavailable));
      return {};
    }
    if (*owner.value != comm.address()) {
      out.warn("callbackQueue entry " + hex(address) + " names comm " + hex(*owner.value) +
               ", not this one; stopped");
      break;
    }
    plans.push_back(plan);
    address = *next.value;
  }
  out.json()["plans_awaiting_reclaim"] = plans.size();
  return plans;
}

void add_plan_tasks(const ObjectView& plan, FieldSink& out) {
  nlohmann::json& colls = out.json()["colls"];
  nlohmann::json& p2p = out.json()["p2p"];
  auto coll_head = plan.pointer("collTaskQueue.head");
  if (coll_head.ok()) {
    for (const ObjectView& task : walk_list(plan, *coll_head.value, "ncclTaskColl", "plan collTaskQueue", out)) {
      colls.push_back(describe_coll_task(task));
      colls.back()["plan"] = hex(plan.address());
    }
  }
  auto p2p_head = plan.pointer("p2pTaskQueue.head");
  if (!p2p_head.ok()) return;
  for (const ObjectView& task : walk_list(plan, *p2p_head.value, "ncclTaskP2p", "plan p2pTaskQueue", out)) {
    auto func = task.integer("func");
    auto peer = task.integer("root");  // a P2P task's root is its peer (enqueue.cc p2pTaskAppend)
    std::string name = func.ok() ? collective_name(*task.layout(), *func.value) : "";
    p2p.push_back(describe_p2p_task(task, name == "Send" ? "send" : name == "Recv" ? "recv" : "unknown",
                                    peer.ok() ? *peer.value : -1));
    p2p.back()["plan"] = hex(plan.address());
  }
}

// Each launched collective's position: the newest of a type is seq_launched[type]; older ones count down.
void number_launched_colls(nlohmann::json& colls, const nlohmann::json& seq_launched) {
  std::map<std::string, int64_t> next;
  for (auto it = colls.rbegin(); it != colls.rend(); ++it) {
    nlohmann::json& entry = *it;
    const nlohmann::json& name = entry["collective"];
    if (!name.is_string() || !seq_launched.is_object()) { entry["seq"] = nullptr; continue; }
    auto launched = seq_launched.find(name.get<std::string>());
    if (launched == seq_launched.end() || !launched->is_number_integer()) { entry["seq"] = nullptr; continue; }
    auto [slot, fresh] = next.emplace(name.get<std::string>(), launched->get<int64_t>());
    entry["seq"] = slot->second >= 1 ? nlohmann::json(slot->second) : nullptr;
    --slot->second;
  }
}

}  // namespace

void decode_launched_work(const ObjectView& comm, FieldSink& out) {
  FieldSink sink = out.child("launched");
  const StructLayout* plan_type = comm.layout()->find_struct("ncclKernelPlan");
  if (!comm.has("callbackQueue") || plan_type == nullptr || plan_type->find("collTaskQueue") == nullptr) {
    sink.json() = nullptr;
    out.mark_unavailable("launched", not_in_version(*comm.layout(), "ncclKernelPlan keeps no collTaskQueue; NCCL 2.23 added it"), 0);
    return;
  }
  sink.json()["source"] = "callbackQueue";
  sink.json()["colls"] = nlohmann::json::array();
  sink.json()["p2p"] = nlohmann::json::array();
  for (const ObjectView& plan : plans_awaiting_reclaim(comm, sink)) add_plan_tasks(plan, sink);
  number_launched_colls(sink.json()["colls"], out.json().value("seq_launched", nlohmann::json()));
}

// Task counters of ncclKernelPlanner, each with the version that added it (checked in the
// tags' comm.h); older versions get "unavailable: not in NCCL X".
struct TaskCounter {
  const char* key;
  const char* field;
  const char* since;
};
constexpr TaskCounter kTaskCounters[] = {
    {"n_tasks_coll", "nTasksColl", nullptr},
    {"n_tasks_p2p", "nTasksP2p", nullptr},
    {"n_tasks_p2p_send", "nTasksP2pSend", "2.28"},
    {"n_tasks_p2p_recv", "nTasksP2pRecv", "2.28"},
    {"n_tasks_bcast", "nTasksBcast", "2.29"},
    {"n_tasks_rma", "nTasksRma", "2.29"},
};

void decode_task_counters(const ObjectView& planner, FieldSink& sink) {
  for (const TaskCounter& counter : kTaskCounters) {
    if (planner.has(counter.field) || counter.since == nullptr) {
      sink.put(counter.key, planner.integer(counter.field));
      continue;
    }
    sink.json()[counter.key] = nullptr;
    sink.mark_unavailable(counter.key,
                          not_in_version(*planner.layout(), planner.type()->name + " has no " +
                                                                counter.field + "; NCCL " + counter.since + " added it"),
                          0);
  }
}

void decode_planned_work(const ObjectView& comm, FieldSink& out) {
  // struct ncclKernelPlanner planner (2.22 and later), struct ncclTasks tasks (2.21 and older).
  ObjectView planner = comm.member("planner");
  if (!planner.valid()) planner = comm.member("tasks");
  FieldSink sink = out.child("planned");
  if (!planner.valid()) {
    sink.json() = nullptr;
    out.mark_unavailable("planned", not_in_version(*comm.layout(), "ncclComm has neither planner nor tasks"), 0);
    return;
  }
  sink.json()["planner_type"] = planner.type()->name;
  decode_task_counters(planner, sink);
  decode_planned_colls(planner, sink);
  const nlohmann::json& nranks = out.json()["nranks"];
  bool has_p2p = sink.json()["n_tasks_p2p"].is_number_integer() &&
                 sink.json()["n_tasks_p2p"].get<int64_t>() > 0;
  if (has_p2p && nranks.is_number_integer())
    decode_planned_p2p(planner, nranks.get<int64_t>(), sink.json()["n_tasks_p2p"].get<int64_t>(), sink);
  else sink.json()["p2p"] = nlohmann::json::array();

  auto unlaunched = planner.pointer("unlaunchedPlansHead");
  if (unlaunched.ok()) {
    std::string unreadable;
    auto plans = walk_list(planner, *unlaunched.value, "ncclKernelPlan", "unlaunched plans", sink, UINT64_MAX, &unreadable);
    // A plan that could not be read is no evidence of a plan: the count is unknown.
    if (unreadable.empty()) sink.json()["unlaunched_plans"] = plans.size();
    else sink.put("unlaunched_plans", Fetched<int64_t>::missing(unreadable));
  } else {
    sink.put("unlaunched_plans", unlaunched);
  }
  // groupNext[t] == 0x1 marks "not in any group list" (NCCL group.h).
  bool in_group = false;
  bool known = false;
  for (uint64_t t = 0; t < comm.array_length("groupNext"); ++t) {
    auto next = comm.pointer("groupNext[" + std::to_string(t) + "]");
    if (!next.ok()) continue;
    known = true;
    in_group = in_group || *next.value != 1;
  }
  if (known) sink.json()["in_group"] = in_group;
  else sink.put("in_group", Fetched<int64_t>::missing("groupNext unavailable"));
}

}  // namespace nsc
