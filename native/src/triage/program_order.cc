// Program order per rank (docs/triage.md rule 3): the flight recorder's records by record id
// (PyTorch's FlightRecorder keeps one id counter per process, across every process group),
// else what NCCL's counters and the host thread say.
#include "triage/program_order.h"

#include <algorithm>

#include "torch/fr_records.h"

namespace nsc::triage {
namespace {

using nlohmann::json;

constexpr size_t kOpsShown = 8;       // the last records a node's program_order lists
constexpr size_t kLongestPeriod = 16;  // operations of the two kinds in one repeat, at most

// Why NCCL's counters never place an owed operation (docs/triage.md rule 3, "Not done"): a
// pipeline whose receiver moved its recv before the all_reduce reads the same counts as one whose
// sender skipped the send (tests/native/triage_order_test.cc, the counter-example).
constexpr const char* kCountsDoNotOrder =
    "NCCL counts each communicator's collectives and P2P operations apart, with no count per peer "
    "and no order between a send and a collective; the flight recorder (TORCH_FR_BUFFER_SIZE>0) orders them";

// A record's kind: its group's world ranks turn a send/receive's group ranks into world ranks.
OpKind kind_of(const torch::FrRankRecords& records, const torch::FrRecord& record, const std::string& group) {
  std::string name = records.text(record.profiling_name);
  int src = -1, dst = -1;
  if (!torch::fr_p2p_peers(name, &src, &dst)) return {group, "collective", -1};
  bool send = torch::fr_op_type(name) == "send";
  int peer = send ? dst : src;
  const torch::FrGroupConfig* config = records.group(group);
  if (config == nullptr || peer < 0 || static_cast<size_t>(peer) >= config->ranks.size()) return {"", send ? "send" : "recv", -1};
  return {"", send ? "send" : "recv", config->ranks[peer]};
}

OrderedOp ordered(const torch::FrRankRecords& records, const torch::FrRecord& record) {
  std::string group = records.text(record.pg_name);
  std::string name = records.text(record.profiling_name);
  return {record.record_id.value_or(0), kind_of(records, record, group), name.rfind("nccl:", 0) == 0 ? name.substr(5) : name,
          group, record.is_p2p ? record.p2p_seq : record.collective_seq, torch::fr_state_name(record.state)};
}

// Records are dumped oldest first (record id order); a record without an id has no place.
ProgramOrder from_records(const torch::FrRankRecords& records, bool whole) {
  ProgramOrder order;
  order.source = "flight-recorder";
  order.whole = whole;
  std::vector<const torch::FrRecord*> placed;
  for (const torch::FrRecord& record : records.records)
    if (record.record_id) placed.push_back(&record);
  std::stable_sort(placed.begin(), placed.end(),
                   [](const torch::FrRecord* a, const torch::FrRecord* b) { return *a->record_id < *b->record_id; });
  order.records = placed.size();
  size_t first = whole || placed.size() <= kOpsShown ? 0 : placed.size() - kOpsShown;
  for (size_t i = first; i < placed.size(); ++i) order.ops.push_back(ordered(records, *placed[i]));
  for (const torch::FrRecord* record : placed)
    if (record->state != torch::FrState::kCompleted) {
      order.sits_in = ordered(records, *record);
      break;
    }
  return order;
}

// The smallest period (with two whole repeats in view) of `history`, 0 when none.
size_t period_of(const std::vector<int>& history) {
  for (size_t period = 1; period <= kLongestPeriod && 2 * period <= history.size(); ++period) {
    size_t window = std::min(history.size(), 4 * period);
    bool repeats = true;
    for (size_t i = history.size() - window + period; i < history.size() && repeats; ++i)
      repeats = history[i] == history[i - period];
    if (repeats) return period;
  }
  return 0;
}

std::string op_text(const OrderedOp& op) {
  std::string text = op.name + (op.seq ? " #" + std::to_string(*op.seq) : "") + " on pg " + op.group;
  return text + " (record id " + std::to_string(op.record_id) + ")";
}

json op_json(const OrderedOp& op) {
  return {{"record_id", op.record_id}, {"group", op.group}, {"op", op.name},
          {"seq", op.seq ? json(*op.seq) : json(nullptr)}, {"state", op.state}};
}

const char* order_name(OwedOrder order) {
  return order == OwedOrder::kEarlier ? "earlier" : order == OwedOrder::kLater ? "later" : "unknown";
}

// NCCL's side, added to `out`: each communicator's launch counts (their order across
// communicators unknown) and the call its host thread is in. Moved in, never copied: one per rank.
void add_counts(const Job& job, int process, json* out) {
  const ProcessView& view = job.processes[process];
  json comms = json::array();
  for (const CommView& comm : view.comms) {
    auto group = job.group_of_hash.find(comm.comm_hash);
    std::string pg = group == job.group_of_hash.end() ? "" : job.comms[group->second].pg_name;
    Maybe<int64_t> launched = comm.total_launched();
    json& entry = comms.emplace_back(json::object());  // field by field: one per rank and communicator
    entry["comm_hash"] = comm.comm_hash_text;
    entry["pg"] = pg.empty() ? json(nullptr) : json(pg);
    entry["collectives_launched"] = launched ? json(*launched) : json(nullptr);
    entry["p2p_total"] = comm.p2p_total ? json(*comm.p2p_total) : json(nullptr);
    entry["work_in_flight"] = comm.has_proxy_work_in_flight();
    entry["work_planned"] = comm.has_planned_work();
  }
  const ThreadView* thread = view.principal();
  (*out)["communicators"] = std::move(comms);
  (*out)["host_call"] = thread && !thread->blocked_in.empty() ? json(thread->blocked_in) : json(nullptr);
  (*out)["order_across_groups"] = std::string("unknown: ") + kCountsDoNotOrder;
}

}  // namespace

ProgramOrder program_order_of(const Job& job, int process, bool whole) {
  const ProcessView& view = job.processes[process];
  if (view.fr_records && !view.fr_records->records.empty()) return from_records(*view.fr_records, whole);
  ProgramOrder order;
  order.source = view.comms.empty() ? "unknown" : "nccl-counts";
  return order;
}

OwedPlace place_owed(const ProgramOrder& order, const OpKind& owed) {
  if (order.source == "nccl-counts") return {OwedOrder::kUnknown, kCountsDoNotOrder};
  if (!order.whole || !order.sits_in || order.sits_in->kind == owed) return {};
  const OrderedOp& current = *order.sits_in;
  std::vector<int> history;  // 0: the owed kind, 1: the kind it sits in; oldest first
  for (const OrderedOp& op : order.ops) {
    if (op.record_id >= current.record_id) break;
    if (op.kind == owed) history.push_back(0);
    else if (op.kind == current.kind) history.push_back(1);
  }
  size_t period = period_of(history);
  if (period == 0) return {};
  auto window_begin = history.end() - static_cast<std::ptrdiff_t>(std::min(history.size(), 4 * period));
  if (std::count(window_begin, history.end(), 0) == 0 || std::count(window_begin, history.end(), 1) == 0) return {};
  std::string repeat = "its own records repeat every " + std::to_string(period) + " operations of the two kinds";
  if (history[history.size() - period] == 0)
    return {OwedOrder::kEarlier, repeat + " and put " + op_kind_text(owed) + " next, before the " + op_text(current) +
                                     " it sits in"};
  return {OwedOrder::kLater, repeat + " and put the " + op_text(current) + " it sits in before " + op_kind_text(owed)};
}

void keep_report_ops(ProgramOrder* order) {
  if (order->ops.size() > kOpsShown) order->ops.erase(order->ops.begin(), order->ops.end() - kOpsShown);
  order->whole = false;
}

std::string op_kind_text(const OpKind& kind) {
  if (kind.op == "collective") return "a collective on pg " + kind.group;
  return std::string(kind.op == "send" ? "a send to" : "a receive from") + " rank " + std::to_string(kind.peer);
}

json program_order_json(const Job& job, int process, const ProgramOrder& order,
                        const std::vector<std::pair<OpKind, OwedPlace>>& owed) {
  json out = json::object();
  out["source"] = order.source;
  if (order.source == "flight-recorder") {
    json ops = json::array();
    for (const OrderedOp& op : order.ops) ops.push_back(op_json(op));
    out["records"] = order.records;
    out["last_ops"] = std::move(ops);
    out["sits_in"] = order.sits_in ? op_json(*order.sits_in) : json(nullptr);
  } else if (order.source == "nccl-counts") {
    add_counts(job, process, &out);
  }
  json owed_json = json::array();
  for (const auto& [kind, place] : owed)
    owed_json.push_back({{"op", op_kind_text(kind)}, {"order", order_name(place.order)},
                         {"why", place.why.empty() ? json(nullptr) : json(place.why)}});
  out["owed"] = std::move(owed_json);
  return out;
}

}  // namespace nsc::triage
