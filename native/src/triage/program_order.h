// Each rank's program order across all its communicators (docs/triage.md, "Who is to blame"
// rule 3): from PyTorch's flight recorder, whose record ids run in one sequence per process
// across groups, else from NCCL's per-communicator counts plus the call the host thread is in.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "triage/analysis.h"
#include "triage/blame.h"

namespace nsc::triage {

// What kind of operation, as far as order goes: a collective on one process group (the next
// one there, whichever it is), or a send/receive to one world rank on any group.
struct OpKind {
  std::string group;  // the process group's name for a collective; "" for a send/receive
  std::string op;     // "collective", "send", "recv"
  int peer = -1;      // the world rank on the other side of a send/receive
  bool operator==(const OpKind& other) const { return group == other.group && op == other.op && peer == other.peer; }
};

struct OrderedOp {
  int64_t record_id = 0;
  OpKind kind;
  std::string name;   // PyTorch's: "all_reduce", "send 1->2"
  std::string group;  // the process group it was issued on
  std::optional<int64_t> seq;  // collective_seq_id or p2p_seq_id
  std::string state;  // "scheduled" | "started" | "completed" | "unknown"
};

struct ProgramOrder {
  std::string source;           // "flight-recorder" | "nccl-counts" | "unknown"
  size_t records = 0;           // flight recorder: how many records it holds
  // Flight recorder, by record id: every record (whole), else only the last few and the one
  // it sits in (enough for the report; 4,096 ranks x 2,000 records stay small).
  std::vector<OrderedOp> ops;
  bool whole = false;
  std::optional<OrderedOp> sits_in;  // the oldest record not completed; none or unknown
};

// One process's program order (job.processes[process]); `whole`: every record, for place_owed.
ProgramOrder program_order_of(const Job& job, int process, bool whole);

// Where an operation the rank owes falls against the one it sits in, by the rank's own
// history: its records, projected on the two kinds, repeat with a period; the one they put
// next is what the program issues next. `why` says it in a sentence. Needs a whole order.
// From NCCL's counts alone: unknown, and `why` says why they place nothing.
struct OwedPlace {
  OwedOrder order = OwedOrder::kUnknown;
  std::string why;
};
OwedPlace place_owed(const ProgramOrder& order, const OpKind& owed);

// After place_owed: only the records the report shows are kept.
void keep_report_ops(ProgramOrder* order);

// The node's "program_order": source, the last records (or each communicator's counts and
// the host thread's call), the operation it sits in, and each owed operation's place. A raw
// value (util/json_raw.h): one per rank, read by nothing in the process.
nlohmann::json program_order_json(const Job& job, int process, const ProgramOrder& order,
                                  const std::vector<std::pair<OpKind, OwedPlace>>& owed);

// "a send to rank 2", "a collective on pg 0".
std::string op_kind_text(const OpKind& kind);

}  // namespace nsc::triage
