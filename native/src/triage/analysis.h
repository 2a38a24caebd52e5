// Internal model shared by the triage steps: merged communicators, findings,
// and the per-process facts the graph and the renderers need.
#pragma once

#include <algorithm>

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "triage/kernel_join.h"
#include "triage/process_view.h"

namespace nsc::triage {

// One process's membership in a communicator.
struct Member {
  int process = 0;  // index into Job::processes
  int comm = 0;     // index into ProcessView::comms
  int rank = 0;     // rank inside this communicator
};

struct CommGroup {
  uint64_t hash = 0;
  std::string hash_text;
  Maybe<int> nranks;
  std::vector<std::string> warnings;   // e.g. inputs disagree on nranks
  std::vector<Member> members;         // sorted by rank, one per rank
  std::vector<nlohmann::json> duplicates;
  std::vector<int> missing_ranks;
  double mean_position = 0;  // registry order: the world comm is usually created first
  // PyTorch's process group for this communicator (torch_join.cc), "" when unknown.
  std::string pg_name, pg_desc;

  // By position: members are sorted by rank, one per rank, and usually every rank is there,
  // so a rank is its own index (100,000 ranks: no table of 400,000 memberships to hash).
  const Member* find(int rank) const {
    if (rank >= 0 && static_cast<size_t>(rank) < members.size() && members[rank].rank == rank) return &members[rank];
    auto found = std::lower_bound(members.begin(), members.end(), rank,
                                  [](const Member& member, int r) { return member.rank < r; });
    return found != members.end() && found->rank == rank ? &*found : nullptr;
  }
};

struct Finding {
  Finding() = default;
  explicit Finding(std::string kind_name, std::string collective_name = "")
      : kind(std::move(kind_name)), collective(std::move(collective_name)) {}

  std::string kind;
  std::string collective;   // "" -> null
  Maybe<int64_t> seq;
  // Ranks of this communicator: the waiting side, and the far side it waits on (whose local
  // role finding_kinds.h names; the verdict alone decides whether they are to blame).
  std::vector<int> waiting, culprits;
  std::vector<std::string> evidence;
  bool explains_hang = false;
  bool culprits_absent = false;  // the culprits have no input (absent ranks)
  // PyTorch's name and per-group sequence number of the operation (torch_join.cc: the first
  // the waiting ranks' flight recorders hold beyond the far side's last), "" / null without one.
  std::string torch_op;
  Maybe<int64_t> torch_seq;
  std::string edge_kind;    // graph edge kind: collective, p2p, host-call, error, absent
  nlohmann::json extra = nlohmann::json::object();
  // Kernel views: the device-side waits of a waiting rank on a culprit (rank, peer,
  // channels, steps); null without kernel views, so the report keeps its old shape.
  nlohmann::json kernel_waits;
};

// An input set aside before the merge: every (communicator, rank) it holds is held by an
// input before it in name order, so input order never decides which copy counts.
struct DuplicateInput {
  std::string name, kind;
  std::string kept;  // the input whose copy counts
  // Per communicator it holds: {"comm_hash", "rank", "kept", "ignored", "differs": [...]}.
  std::vector<nlohmann::json> copies;
};

// How one rank failed, for the crash verdict (crash.cc). Per process, then per rank without
// input that its peers' remote errors point to.
struct RankFailure {
  int node = -1;           // wait-for graph node: the process index, or an absent rank's node
  Maybe<int> world_rank;
  std::string kind;        // fault | abort | cuda-error | watchdog-abort | fault-on-exit | remote-error | gone | none
  bool failed = false;     // the process failed (its own fatal signal), or is gone
  bool reaction = false;   // explained by another rank's failure (it saw ncclRemoteError)
  bool health_known = false;  // it holds a decoded communicator (PyTorch's abort may free them all)
  std::string text;        // "SIGSEGV (SEGV_MAPERR, address 0x0) in thread 7 at crash() in libx.so (user code)"
  std::string brief;       // the headline's: "aborted by PyTorch's watchdog after ncclRemoteError"
  std::string pgs;         // where it saw ncclRemoteError: "pg dp0, tp1" ("" none)
  std::string pending;     // its oldest unfinished recorded collective: "all_reduce #4 on pg tp1" ("" none)
  bool located = false;    // `text` names where it failed (the signal's site or Python line)
};

struct CrashAnalysis {
  bool crashed = false;           // some input shows its process failing by itself
  std::vector<RankFailure> ranks;
  std::vector<int> culprit_nodes;  // the origin, from its own input
  std::vector<int> suspect_nodes;  // the origin without input, or undecided between these
  // local-failure | no-input | timeout | watchdog-first | undecided
  std::string rule;
  std::string timed_out;  // the work the flight recorders show timed out ("" when not used)
  std::vector<std::string> headline;  // the verdict's first lines (headline.cc fits them)
  std::string summary;
};

struct Job {
  std::vector<ProcessView> processes;
  std::vector<DuplicateInput> duplicate_inputs;  // not in processes: their threads do not count
  std::vector<CommGroup> comms;
  std::unordered_map<uint64_t, size_t> group_of_hash;  // comm hash -> index in comms
  std::vector<std::vector<Finding>> findings;  // parallel to comms
  int world_comm = -1;
  std::vector<Maybe<int>> world_rank;          // per process: rank in the world comm
  std::vector<int> commless_processes;         // usable inputs holding no communicator
  std::vector<std::string> errors;             // job-level error lines
  std::vector<Finding> startup;                // no communicator anywhere yet (startup.cc)
  // PyTorch's flight recorder matched across ranks (fr_match.cc): the report's
  // "flight_recorder" section; null without records. Its findings name world ranks and
  // decide the verdict only where no input holds an NCCL communicator (dumps alone).
  nlohmann::json flight_recorder;
  std::vector<Finding> torch_findings;
  std::vector<std::string> recorded_site;  // per process: its records' current operation, or ""
  std::vector<bool> waits_from_records;    // per process: its records say what it waits on
  std::vector<bool> records_unfinished;    // per process: its records hold an operation not completed
  // Per process: its rank came from the launcher's environment, not from a communicator.
  std::vector<bool> rank_from_launcher;
  bool unrelated_jobs = false;
  // The report's "recorder" section (chains, mismatches); null when no input had a recorder.
  nlohmann::json recorder;
  // Kernel views (kernel_join.cc): the report's "kernel_views" section (null when none was
  // given), per process its kernels for the graph node's waits_in, the verdict's sentence.
  nlohmann::json kernel_views;
  std::vector<nlohmann::json> process_kernels;
  std::string kernel_sentence;
  // Buffer numerics (numerics_join.cc): the report's "numerics" section, null when none.
  nlohmann::json numerics;
  CrashAnalysis crash;  // crash.cc, after the wait-for graph

  const CommView& comm_of(const Member& member) const {
    return processes[member.process].comms[member.comm];
  }
  // "rank 3" (world rank) or the input name when the process is not in the world comm.
  std::string process_label(int process) const;
};

// Steps, in order (triage.cc drives them).
void merge_communicators(Job* job);  // sets duplicate inputs aside first
// After analyze_communicators: a "duplicate-rank-disagrees" finding for each rank two inputs
// hold with different values, naming both inputs and the fields.
void add_duplicate_findings(Job* job);
void find_unrelated_jobs(Job* job);
void analyze_communicators(Job* job);
void analyze_startup(Job* job);  // start-up hang: ranks in the rendezvous, ranks elsewhere
// Nodes, edges, cycles, culprits. The last reader of the channels: it frees them.
nlohmann::json build_wait_graph(Job* job);
nlohmann::json build_stack_classes(const Job& job);
// Flight recorder data (recorder_join.cc): communicators only the recorder knows, before
// the merge; cross-rank argument mismatches and cross-stream chains, after the findings.
void add_recorder_communicators(ProcessView* process);
void analyze_recorder(Job* job);
// PyTorch's flight recorder (torch_join.cc), after the findings: process-group names on the
// communicators, size/dtype mismatches, each named rank's last record on the group.
void join_torch_records(Job* job);
// PyTorch's records of every rank matched as torchfrtrace does (fr_match.cc), after the
// findings; its findings join the verdict only when no input holds a communicator.
void match_torch_records(Job* job);
// Dumps alone: members of a recorded process group that no input holds (no dump, or an unusable
// one), ascending; what they do is unknown, so no verdict is "no-hang" about them.
std::vector<int> ranks_without_records(const Job& job);
// Kernel views (kernel_join.cc), after the findings: attached to processes by comm hash and
// rank, evidence on the findings, "kernel-wait" findings for peers host state did not name.
void join_kernel_views(Job* job, std::vector<KernelView> views);

// A job that died (crash.cc): how each rank failed and the origin, from the findings, the
// graph (its absent nodes, and its culprits when the watchdog aborted a hang) and each input's
// fatal signal. `hang_headline`: the headline the hang verdict would have (build_headline).
CrashAnalysis analyze_crash(const Job& job, const std::string& verdict, const nlohmann::json& graph,
                            const nlohmann::json& hang_headline);
// The report's "crash" section; null when the job did not crash.
nlohmann::json crash_json(const CrashAnalysis& crash);

// "rank 1: X; ranks 0,2-7: Y" from text -> ranks.
std::string grouped_phrase(const std::map<std::string, std::vector<int>>& ranks_by_text,
                           size_t max_groups = 6);
// What a process's application thread is doing, one line.
std::string process_doing(const Job& job, int process);

}  // namespace nsc::triage
