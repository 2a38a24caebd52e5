// Program order per rank (docs/triage.md rule 3): the flight recorder's records by record id
// (PyTorch's FlightRecorder keeps one id counter per process, across every process group),
// else what NCCL's counters and the host thread say.
#include "triage/program_order.h"

#include <algorithm>

#include "torch/fr_records.h"
#include "util/json_raw.h"

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

// Keys in nlohmann's order (JsonText): group, op, record_id, seq, state.
void add_op(const OrderedOp& op, JsonText* out) {
  out->begin_object().key("group").string(op.group).key("op").string(op.name).key("record_id").number(op.record_id);
  out->key("seq").number_or_null(op.seq).key("state").string(op.state).end_object();
}

const char* order_name(OwedOrder order) {
  return order == OwedOrder::kEarlier ? "earlier" : order == OwedOrder::kLater ? "later" : "unknown";
}

// NCCL's side: each communicator's launch counts (their order across communicators unknown)
// and the call its host thread is in. Keys in nlohmann's order: communicators, host_call,
// order_across_groups.
void add_counts(const Job& job, int process, JsonText* out) {
  const ProcessView& view = job.processes[process];
  out->key("communicators").begin_array();
  for (const CommView& comm : view.comms) {
    auto group = job.group_of_hash.find(comm.comm_hash);
    std::string_view pg;  // of the group's own name: never of a temporary
    if (group != job.group_of_hash.end()) pg = job.comms[group->second].pg_name;
    out->begin_object().key("collectives_launched").number_or_null(comm.total_launched());
    out->key("comm_hash").string(comm.comm_hash_text()).key("p2p_total").number_or_null(comm.p2p_total);
    out->key("pg").string_or_null(pg).key("work_in_flight").boolean(comm.has_proxy_work_in_flight());
    out->key("work_planned").boolean(comm.has_planned_work()).end_object();
  }
  out->end_array();
  const ThreadView* thread = view.principal();
  out->key("host_call").string_or_null(thread ? std::string_view(thread->blocked_in) : std::string_view());
  static const std::string unknown_order = std::string("unknown: ") + kCountsDoNotOrder;
  out->key("order_across_groups").string(unknown_order);
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
  // Written as text (one per rank; no reader in the process): keys in nlohmann's order.
  thread_local JsonText out;  // ranks are built over the CPUs; no allocation per rank
  out.clear();
  out.begin_object();
  if (order.source == "flight-recorder") {
    out.key("last_ops").begin_array();
    for (const OrderedOp& op : order.ops) add_op(op, &out);
    out.end_array();
  } else if (order.source == "nccl-counts") {
    add_counts(job, process, &out);
  }
  out.key("owed").begin_array();
  for (const auto& [kind, place] : owed) {
    out.begin_object().key("op").string(op_kind_text(kind)).key("order").string(order_name(place.order));
    out.key("why").string_or_null(place.why).end_object();
  }
  out.end_array();
  if (order.source == "flight-recorder") {
    out.key("records").number(static_cast<int64_t>(order.records)).key("sits_in");
    if (order.sits_in) add_op(*order.sits_in, &out);
    else out.null();
  }
  out.key("source").string(order.source).end_object();
  return raw_json(out.text());
}

}  // namespace nsc::triage
