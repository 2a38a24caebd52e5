// The crash verdict (issue 32): how each rank failed, and the origin, the rank(s) whose failure
// no other rank's explains. A rank that saw ncclRemoteError reacts to a peer's failure (its own
// abort by PyTorch's watchdog, a fault while exiting after it): never the origin. The origin
// is, in this order: a local failure in an input (a fault, abort() outside the watchdog, a CUDA
// error: NCCL recorded it, the exception PyTorch rethrew names it, or a failed CUDA check is on a
// stack); else the ranks without input that the remote errors point to (a rank
// that died leaves no core); else, when PyTorch's watchdog
// aborted ranks after a timeout, the rank the hang analysis blames for never issuing the
// collective that timed out; else, as suspects only, the ranks the watchdog aborted not after a
// peer's error (a timeout is a reaction to the rank waited on; a CUDA error is not recorded).
// A rank without input is the origin only on its peers' evidence: the one rank without input
// of a communicator where others report ncclRemoteError (findings.cc: remote-error).
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "snapshot/field_text.h"
#include "triage/analysis.h"
#include "triage/finding_kinds.h"
#include "triage/headline.h"
#include "triage/rank_set.h"
#include "util/json_access.h"

namespace nsc::triage {
namespace {

using nlohmann::json;

constexpr const char* kRemoteError = "ncclRemoteError";
constexpr const char* kCudaError = "ncclUnhandledCudaError";

// "CUDA error: an illegal memory access was encountered": the text from "CUDA error" on in the
// quoted first line of an exception's sentence (stacks/cxx_exception.h: `terminate: T: "..."`;
// c10's CUDA checks, and PyTorch's watchdog rethrowing them, say it so); "" none.
std::string cuda_error_in(const std::string& exception) {
  size_t at = exception.find("CUDA error");
  if (at == std::string::npos) return "";
  std::string text = exception.substr(at, exception.find('"', at) - at);
  if (text.size() > 3 && text.compare(text.size() - 3, 3, "...") == 0) text.resize(text.size() - 3);
  return text;
}

// A failed CUDA check on a thread's stack: c10::cuda::c10_cuda_check_implementation returns at
// once on cudaSuccess and calls out only to build the c10::Error of a failure. "" when none.
std::string failed_cuda_check(const ProcessView& process) {
  for (const ThreadView& thread : process.threads)
    for (size_t f = 1; f < thread.frames.size(); ++f) {
      if (thread.frames[f].label().find("c10_cuda_check_implementation") == std::string::npos) continue;
      std::string where = thread.tid ? " in thread " + std::to_string(*thread.tid) : "";
      for (size_t caller = f + 1; caller < thread.frames.size(); ++caller)
        if (thread.frames[caller].python) {
          where += " at " + thread.frames[caller].label();
          break;
        }
      return "a failed CUDA check (c10_cuda_check_implementation building its error" + where +
             "; the error's text is not in memory)";
    }
  return "";
}

// What says the process hit a CUDA error: the exception it died of, else a failed check.
std::string cuda_error_evidence(const ProcessView& process) {
  std::string from_message = process.fatal_signal ? cuda_error_in(process.fatal_signal->exception) : "";
  return from_message.empty() ? failed_cuda_check(process) : from_message;
}

bool is_local(const RankFailure& failure) {
  return failure.failed && !failure.reaction && failure.kind != "watchdog-abort" && failure.kind != "gone";
}

class CrashAnalyzer {
 public:
  CrashAnalyzer(const Job& job, const std::string& verdict, const json& graph, const json& hang_headline)
      : job_(job), verdict_(verdict), graph_(graph), hang_headline_(hang_headline) {}

  CrashAnalysis run() {
    CrashAnalysis crash;
    // Nobody failed by itself (a rank fails only by its own fatal signal): the hang verdicts
    // decide, and no rank's failure is described (100,000 ranks: 0.1 s).
    if (std::none_of(job_.processes.begin(), job_.processes.end(), failed_by_itself)) return crash;
    group_processes();
    for (size_t p = 0; p < job_.processes.size(); ++p) crash.ranks.push_back(process_failure(static_cast<int>(p)));
    crash.crashed = true;
    add_gone_ranks(&crash);
    decide_origin(&crash);
    crash.headline = headline(crash);
    crash.summary = summary(crash);
    return crash;
  }

 private:
  // --- per rank --------------------------------------------------------------------------

  static bool failed_by_itself(const ProcessView& process) {
    return process.fatal_signal && process.fatal_signal->failure;
  }

  // groups_of_: each process's memberships, for the sentences that name its communicators.
  void group_processes() {
    groups_of_.assign(job_.processes.size(), {});
    for (size_t g = 0; g < job_.comms.size(); ++g)
      for (const Member& member : job_.comms[g].members)
        if (member.process >= 0 && static_cast<size_t>(member.process) < groups_of_.size())
          groups_of_[member.process].push_back({g, member});
  }

  // "pg dp0, tp1": the communicators of process p whose health reads `result`.
  std::string comms_with(int p, const char* result, bool proxy_too) const {
    std::vector<std::string> where;
    for (const auto& [g, member] : groups_of_[p]) {
      const HealthView& health = job_.comm_of(member).health;
      if (health.async_result == result || (proxy_too && health.proxy_async_result == result)) {
        std::string label = pg_label(job_.comms[g]);
        where.push_back(label.empty() ? "communicator " + job_.comms[g].hash_text : label);
      }
    }
    std::string text;
    for (const std::string& part : where) text += (text.empty() ? "" : ", ") + part;
    return text;
  }

  RankFailure process_failure(int p) const {
    const ProcessView& process = job_.processes[p];
    RankFailure failure;
    failure.node = p;
    failure.world_rank = job_.world_rank[p];
    failure.pgs = comms_with(p, kRemoteError, true);
    failure.health_known = std::any_of(process.comms.begin(), process.comms.end(),
                                       [](const CommView& comm) { return !comm.from_recorder; });
    bool remote = !failure.pgs.empty();
    const Maybe<FatalSignalView>& signal = process.fatal_signal;
    if (failed_by_itself(process)) {
      failure.failed = true;
      classify_failed(process, *signal, remote, &failure);
    } else if (remote) {
      failure.kind = "remote-error";
      failure.reaction = true;
      failure.text = "alive, its NCCL calls failed with ncclRemoteError on " + failure.pgs;
      failure.brief = "ncclRemoteError, still running";
    } else {
      failure.kind = "none";
      failure.text = signal ? "no failure of its own (" + signal->text + ")" : "no failure in its input";
      failure.brief = "no failure";
    }
    return failure;
  }

  void classify_failed(const ProcessView& process, const FatalSignalView& signal, bool remote, RankFailure* failure) const {
    std::string cuda = comms_with(failure->node, kCudaError, false);
    // PyTorch aborted it: its watchdog thread, or abort() called from libtorch itself (its
    // heartbeat monitor or watchdog after a timeout, frames unsymbolized): a reaction or a timeout.
    if (signal.origin == "abort" && (signal.torch_watchdog || signal.site_in == "PyTorch")) {
      std::string by = ran_heartbeat_monitor(process, signal) ? "PyTorch's heartbeat monitor"
                       : signal.torch_watchdog                 ? "PyTorch's watchdog"
                                                               : "PyTorch (abort() in libtorch)";
      std::string watchdog_error = watchdog_recorded_error(process);
      std::string cuda_error = remote ? "" : cuda_error_evidence(process);
      if (!cuda_error.empty()) {  // its own CUDA error, which PyTorch turned into an abort
        failure->kind = "cuda-error";
        failure->text = cuda_error + "; then " + by + " aborted it";
        failure->brief = cuda_error_in(cuda_error).empty() ? "a failed CUDA check" : cuda_error;
        failure->located = cuda_error_in(cuda_error).empty();  // a failed check names its thread's line
        return;
      }
      failure->kind = remote ? "watchdog-abort" : !cuda.empty() ? "cuda-error" : "watchdog-abort";
      failure->reaction = remote;
      if (const json* entry = oldest_unfinished(process)) failure->pending = entry_name(*entry);
      std::string exception = signal.exception.empty() ? "" : signal.exception + "; ";  // what the watchdog rethrew, first
      if (!failure->health_known && !watchdog_error.empty()) {  // communicators freed; the watchdog's own record says why
        failure->reaction = watchdog_error.find("REMOTE_ERROR") != std::string::npos;  // a peer signalled its error
        failure->text = exception + "aborted by " + by + " after " + watchdog_error + pending_work(process);
        failure->brief = "aborted by " + by + " after " + watchdog_error.substr(0, watchdog_error.find(" ("));
        return;
      }
      if (!failure->health_known) {  // its communicators were aborted and freed: no health to read
        failure->text = exception + "aborted by " + by + "; it holds no communicator (aborted), so whether after a "
                        "peer's error is not told" + pending_work(process);
        failure->brief = "aborted by " + by + " (communicators gone)";
        return;
      }
      if (!remote && cuda.empty() && !watchdog_error.empty()) {
        failure->text = exception + "aborted by " + by + " after " + watchdog_error + pending_work(process);
        failure->brief = "aborted by " + by + " after " + watchdog_error.substr(0, watchdog_error.find(" ("));
        return;
      }
      failure->text = exception + "aborted by " + by +
                      (remote ? " after ncclRemoteError on " + failure->pgs
                              : !cuda.empty() ? " after a CUDA error (" + std::string(kCudaError) + " on " + cuda + ")"
                                              : ", not after a peer's error (a timeout or a CUDA error" + pending_work(process) + ")");
      failure->brief = remote ? "aborted by " + by + " after ncclRemoteError"
                              : !cuda.empty() ? "a CUDA error, then PyTorch's watchdog aborted it"
                                              : "aborted by " + by + ", not after a peer's error";
      return;
    }
    if (signal.during_exit && remote) {
      failure->kind = "fault-on-exit";
      failure->reaction = true;
      failure->text = signal.name + " while exiting after ncclRemoteError on " + failure->pgs;
      failure->brief = signal.name + " while exiting after ncclRemoteError";
      return;
    }
    failure->kind = signal.origin == "abort" ? "abort" : "fault";
    // Its text names where it failed: the signal's site or Python line, or the principal thread took it.
    const ThreadView* principal = process.principal();
    failure->located = signal.python_located || !signal.site_in.empty() ||
                       (principal && principal->tid && signal.tid && *principal->tid == *signal.tid);
    failure->reaction = remote && signal.origin == "abort";  // abort() after NCCL reported a peer's failure
    failure->text = signal.text + (remote ? "; it saw ncclRemoteError on " + failure->pgs : "");
    failure->brief = failure->reaction ? "abort() after ncclRemoteError" : failure->text;
  }

  // PyTorch's watchdog memory (torch.liveness, torch/watchdog.h): the first process group whose
  // watchdog recorded an error, "a watchdog TIMEOUT (80000 ms timeout, pg 0)"; "" when none did.
  static std::string watchdog_recorded_error(const ProcessView& process) {
    for (const json& dog : array_or_empty(json_member(json_member(process.torch, "liveness"), "watchdogs"))) {
      const json& error = json_member(dog, "error");
      if (!error.is_string() || error == "SUCCESS") continue;
      const json& timeout = json_member(dog, "timeout_ms");
      return "a watchdog " + error.get<std::string>() + " (" +
             (timeout.is_number() ? timeout.dump() + " ms timeout, " : std::string()) + "pg " +
             (json_member(dog, "pg_uid").is_number() ? json_member(dog, "pg_uid").dump() : std::string("unknown")) + ")";
    }
    return "";
  }

  // The signal's thread is a ProcessGroupNCCL heartbeat monitor (torch.liveness).
  static bool ran_heartbeat_monitor(const ProcessView& process, const FatalSignalView& signal) {
    if (!signal.tid) return false;
    for (const json& monitor : array_or_empty(json_member(json_member(process.torch, "liveness"), "heartbeat_monitors")))
      if (json_member(monitor, "tid").is_number_integer() && json_member(monitor, "tid").get<int64_t>() == *signal.tid) return true;
    return false;
  }

  // The oldest collective the flight recorder has not seen complete: the candidate for the work
  // that timed out (PyTorch's watchdog checks its works oldest first). nullptr when none.
  static const json* oldest_unfinished(const ProcessView& process) {
    const json& entries = json_member(process.torch, "entries");
    if (!entries.is_array()) return nullptr;
    for (const json& entry : entries)
      if (json_member(entry, "state").is_string() && entry["state"] != "completed" && json_member(entry, "is_p2p") != true)
        return &entry;
    return nullptr;
  }

  static std::string pg_name_of(const json& entry) {
    const json& pg = json_member(entry, "process_group");
    return pg.is_array() && pg.size() == 2 && pg[0].is_string() ? pg[0].get<std::string>() : "";
  }

  // "all_reduce #4 on pg dp1".
  static std::string entry_name(const json& entry) {
    std::string name = json_text(json_member(entry, "profiling_name"));
    if (name.rfind("nccl:", 0) == 0) name = name.substr(5);
    const json& pg = json_member(entry, "process_group");
    if (json_member(entry, "collective_seq_id").is_number()) name += " #" + entry["collective_seq_id"].dump();
    if (pg.is_array() && pg.size() == 2 && pg[1].is_string()) name += " on pg " + pg[1].get<std::string>();
    return name;
  }

  // "timeout 15000 ms" ("" without one).
  static std::string entry_timeout(const json& entry) {
    const json& timeout = json_member(entry, "timeout_ms");
    return timeout.is_number() && timeout.get<uint64_t>() > 0 ? "timeout " + timeout.dump() + " ms" : "";
  }

  // "all_reduce #4 on pg dp1, timeout 15000 ms (started)".
  static std::string entry_text(const json& entry) {
    std::string timeout = entry_timeout(entry);
    return entry_name(entry) + (timeout.empty() ? "" : ", " + timeout) + " (" + json_text(entry["state"]) + ")";
  }

  static std::string pending_work(const ProcessView& process) {
    const json* entry = oldest_unfinished(process);
    return entry ? "; oldest unfinished: " + entry_text(*entry) + entry_timing(*entry) : "";
  }

  // "13:02:11.123 UTC" of a system-clock time in ns (the recorder's c10::getTime()).
  static std::string utc_time(uint64_t ns) {
    time_t seconds = static_cast<time_t>(ns / 1000000000u);
    struct tm parts {};
    char text[32];
    if (gmtime_r(&seconds, &parts) == nullptr || std::strftime(text, sizeof text, "%H:%M:%S", &parts) == 0) return "";
    char millis[8];
    std::snprintf(millis, sizeof millis, ".%03u", static_cast<unsigned>(ns / 1000000u % 1000u));
    return std::string(text) + millis + " UTC";
  }

  // ", created 13:02:11.123 UTC: with timeout 15000 ms, timed out at 13:02:26.123 UTC or later":
  // the entry's own times (PyTorch measures a work's timeout from its creation); "" without them.
  static std::string entry_timing(const json& entry) {
    const json& created = json_member(entry, "time_created_ns");
    if (!created.is_number_unsigned() || created.get<uint64_t>() == 0) return "";
    uint64_t at = created.get<uint64_t>();
    std::string text = ", created " + utc_time(at);
    const json& timeout = json_member(entry, "timeout_ms");
    if (timeout.is_number_unsigned() && timeout.get<uint64_t>() > 0 && timeout.get<uint64_t>() < (1ull << 40))
      text += ": with that timeout, timed out at " + utc_time(at + timeout.get<uint64_t>() * 1000000u) + " or later";
    return text;
  }

  // Without counters (the watchdog aborted the communicators: ncclCommAbort frees them), the
  // flight recorders decide: the members of the timed-out work's group whose recorder holds no
  // entry that far on that group never issued it. `text` gets "all_reduce #4 on pg dp1 ...".
  std::vector<int> never_issued(const CrashAnalysis& crash, std::string* text) const {
    std::set<int> culprits;
    for (const RankFailure& failure : crash.ranks) {
      if (failure.kind != "watchdog-abort" || failure.reaction || failure.node >= static_cast<int>(job_.processes.size())) continue;
      const json* entry = oldest_unfinished(job_.processes[failure.node]);
      if (entry == nullptr || !json_member(*entry, "collective_seq_id").is_number()) continue;
      std::string pg = pg_name_of(*entry);
      uint64_t seq = (*entry)["collective_seq_id"].get<uint64_t>();
      for (int member : group_ranks(job_.processes[failure.node], pg)) {
        int q = process_of_world_rank(member);
        if (q < 0) continue;  // no input: absence is never evidence
        std::optional<uint64_t> last = last_seq_on(job_.processes[q], pg);
        if (last && *last < seq) {
          culprits.insert(q);
          std::string timeout = entry_timeout(*entry);
          if (text->empty()) *text = entry_name(*entry) + (timeout.empty() ? "" : " (" + timeout + ")");
        }
      }
    }
    return std::vector<int>(culprits.begin(), culprits.end());
  }

  static std::vector<int> group_ranks(const ProcessView& process, const std::string& pg) {
    for (const json& group : json_member(process.torch, "process_groups"))
      if (json_member(group, "name") == pg) return group["ranks"].get<std::vector<int>>();
    return {};
  }

  int process_of_world_rank(int rank) const {
    for (size_t p = 0; p < job_.processes.size(); ++p)
      if (job_.world_rank[p] == rank) return static_cast<int>(p);
    return -1;
  }

  // The largest collective seq id the process's recorder holds on `pg`; nullopt without a recorder.
  static std::optional<uint64_t> last_seq_on(const ProcessView& process, const std::string& pg) {
    const json& entries = json_member(process.torch, "entries");
    if (!entries.is_array()) return std::nullopt;
    uint64_t last = 0;
    for (const json& entry : entries)
      if (pg_name_of(entry) == pg && json_member(entry, "is_p2p") != true && json_member(entry, "collective_seq_id").is_number())
        last = std::max(last, entry["collective_seq_id"].get<uint64_t>());
    return last;
  }

  // Ranks without input that ranks reporting ncclRemoteError point to (remote-error edges).
  void add_gone_ranks(CrashAnalysis* crash) const {
    std::set<int> gone;
    for (const json& edge : graph_["edges"])
      if (edge["finding"] == "remote-error")
        for (const json& id : edge["to"])
          if (id.get<size_t>() >= job_.processes.size()) gone.insert(id.get<int>());
    for (int id : gone) {
      const json& node = graph_["nodes"][static_cast<size_t>(id)];
      RankFailure failure;
      failure.node = id;
      if (node["world_rank"].is_number_integer()) failure.world_rank = node["world_rank"].get<int>();
      failure.kind = "gone";
      failure.failed = true;
      failure.brief = "no input; its peers saw its connections fail";
      failure.text = "no input, and its peers saw its connections fail (ncclRemoteError): its process likely "
                     "died without a core (SIGKILL, the OOM killer)";
      crash->ranks.push_back(failure);
    }
  }

  // --- the origin ------------------------------------------------------------------------

  void decide_origin(CrashAnalysis* crash) const {
    auto nodes_where = [&](auto predicate) {
      std::vector<int> nodes;
      for (const RankFailure& failure : crash->ranks)
        if (predicate(failure)) nodes.push_back(failure.node);
      return nodes;
    };
    auto aborted_first = nodes_where([](const RankFailure& f) {
      return f.kind == "watchdog-abort" && !f.reaction && f.health_known;
    });
    if (auto local = nodes_where(is_local); !local.empty()) {
      crash->rule = "local-failure";
      crash->culprit_nodes = local;
    } else if (auto gone = nodes_where([](const RankFailure& f) { return f.kind == "gone"; }); !gone.empty()) {
      // The evidence is its peers' errors, not its absence. Several gone: a survivor that died of
      // its own reaction looks the same to its peers, so which was first is not told. Neither is
      // it beside a rank with input that PyTorch aborted not after a peer's error.
      crash->rule = "no-input";
      if (gone.size() == 1 && aborted_first.empty()) {
        crash->culprit_nodes = gone;
      } else {
        crash->suspect_nodes = aborted_first;
        crash->suspect_nodes.insert(crash->suspect_nodes.end(), gone.begin(), gone.end());
      }
    } else if (verdict_ == "hang" && job_.startup.empty() && !graph_["root_culprits"].empty()) {
      // The hang the watchdog timed out on, from the communicators (a start-up analysis, which
      // no communicator anywhere also triggers after aborts freed them all, is not that).
      crash->rule = "timeout";
      for (const json& id : graph_["root_culprits"]) crash->culprit_nodes.push_back(id.get<int>());
    } else if (auto skipped = never_issued(*crash, &crash->timed_out); !skipped.empty()) {
      crash->rule = "timeout";
      crash->culprit_nodes = skipped;
    } else if (const std::vector<int>& first = aborted_first; !first.empty()) {
      // A timeout (then the rank it waited on is the origin) or a CUDA error NCCL did not
      // record: a watchdog abort is a reaction to a timeout, so these are suspects only.
      // One such rank whose peers all failed after ncclRemoteError (its connections closing)
      // failed first: the origin. Otherwise which rank a timeout waited on is not told.
      crash->rule = "watchdog-first";
      bool peers_reacted = std::all_of(crash->ranks.begin(), crash->ranks.end(), [&](const RankFailure& f) {
        return f.node == first.front() || !f.failed || f.reaction;
      }) && std::any_of(crash->ranks.begin(), crash->ranks.end(), [](const RankFailure& f) { return f.reaction; });
      (first.size() == 1 && peers_reacted ? crash->culprit_nodes : crash->suspect_nodes) = first;
    } else {
      // Only reactions: the origin is among the hang analysis's chain ends (ranks without
      // input, typically), else among the failed ranks that did not react to a peer.
      crash->rule = "undecided";
      crash->suspect_nodes = nodes_where([](const RankFailure& f) { return f.failed && !f.reaction; });
      if (crash->suspect_nodes.empty())
        for (const char* key : {"root_culprits", "suspects"})
          for (const json& id : graph_[key]) crash->suspect_nodes.push_back(id.get<int>());
    }
  }

  // --- text ------------------------------------------------------------------------------

  std::string label(int node) const { return json_text(graph_["nodes"][static_cast<size_t>(node)]["label"]); }

  const RankFailure* failure_of(const CrashAnalysis& crash, int node) const {
    for (const RankFailure& failure : crash.ranks)
      if (failure.node == node) return &failure;
    return nullptr;
  }

  // "rank 1: <text>; ranks 0,2: <text>" for the nodes (grouped by text; the short text for the
  // headline's reactions).
  std::string grouped(const CrashAnalysis& crash, const std::vector<int>& nodes, bool brief = false) const {
    std::map<std::string, std::vector<int>> ranks_by_text;
    std::vector<std::string> unranked;
    for (int node : nodes) {
      const RankFailure* failure = failure_of(crash, node);
      if (failure == nullptr) continue;
      const std::string& text = brief ? failure->brief : failure->text;
      if (failure->world_rank) ranks_by_text[text].push_back(*failure->world_rank);
      else unranked.push_back(label(node) + " " + text);
    }
    std::string text = grouped_phrase(ranks_by_text);
    for (const std::string& part : unranked) text += (text.empty() ? "" : "; ") + part;
    return text;
  }

  std::vector<int> reaction_nodes(const CrashAnalysis& crash) const {
    std::set<int> origin(crash.culprit_nodes.begin(), crash.culprit_nodes.end());
    origin.insert(crash.suspect_nodes.begin(), crash.suspect_nodes.end());
    std::vector<int> nodes;
    for (const RankFailure& failure : crash.ranks)
      if (!origin.count(failure.node) && failure.kind != "none") nodes.push_back(failure.node);
    return nodes;
  }

  std::string hang_line(size_t index) const {
    const json& lines = hang_headline_["lines"];
    return lines.is_array() && lines.size() > index ? json_text(lines[index]) : "";
  }

  // "rank 3, in sleep at train.py:177": a rank with input and where its program is.
  std::string rank_at(int node) const {
    std::string who = origin_phrase({node});
    return node < static_cast<int>(job_.processes.size()) ? who + ", in " + node_site(job_, node) : who;
  }

  // "rank 0: SIGSEGV ... Python f at x.py:160; rank 3, in sleep at x.py:9: <text>": each origin
  // with its own Python line (the failing thread's when the signal names it, else the program's).
  std::string culprits_text(const CrashAnalysis& crash, const std::vector<int>& nodes) const {
    std::string text;
    for (int node : nodes) {
      const RankFailure* failure = failure_of(crash, node);
      if (failure == nullptr) continue;
      std::string detail = failure->kind == "watchdog-abort"
                               ? "no peer's error preceded its abort by PyTorch (a timeout or a CUDA error)"
                               : failure->text;
      text += (text.empty() ? "" : "; ") + (failure->located ? origin_phrase({node}) : rank_at(node)) + ": " + detail;
    }
    return text;
  }

  // " in all_reduce #4 on pg tp1": what the single origin's recorder left unfinished.
  std::string pending_of(const CrashAnalysis& crash, const std::vector<int>& nodes) const {
    const RankFailure* failure = nodes.size() == 1 ? failure_of(crash, nodes.front()) : nullptr;
    return failure && !failure->pending.empty() ? " in " + failure->pending : "";
  }

  std::vector<std::string> headline(const CrashAnalysis& crash) const {
    std::vector<std::string> lines;
    std::vector<int> origin = crash.culprit_nodes.empty() ? crash.suspect_nodes : crash.culprit_nodes;
    std::string who = origin_phrase(origin);
    if (crash.rule == "timeout" && !crash.timed_out.empty()) {  // from the flight recorders
      lines.push_back("CRASH after a watchdog timeout: " + crash.timed_out + " never issued by " + who + ".");
      std::string sites;
      for (int node : origin) sites += (sites.empty() ? "" : "; ") + rank_at(node);
      lines.push_back("Culprit: " + sites + ": its flight recorder holds nothing that far on that group.");
    } else if (crash.rule == "timeout") {
      std::string hang = hang_line(0);
      if (hang.rfind("HANG ", 0) == 0) hang = hang.substr(5);
      lines.push_back("CRASH after a watchdog timeout: " + hang);
      lines.push_back(hang_line(1));
    } else if (crash.rule == "no-input" && crash.culprit_nodes.empty()) {
      lines.push_back("CRASH: " + who + " gone (no input) while their peers report ncclRemoteError.");
      lines.push_back("Undecided between " + who + ": each could have died first; their inputs would tell.");
    } else if (crash.rule == "no-input") {
      lines.push_back("CRASH: " + who + " gone (no input) while its peers report ncclRemoteError.");
      lines.push_back("Culprit: " + who + ": its peers saw its connections fail; no core (SIGKILL, OOM or an exit).");
    } else if (crash.rule == "watchdog-first" && !crash.culprit_nodes.empty()) {
      lines.push_back("CRASH: PyTorch aborted " + who + pending_of(crash, origin) +
                      " first, not after a peer's error; the others reacted to it.");
      lines.push_back("Culprit: " + culprits_text(crash, origin) + ".");
    } else if (crash.rule == "watchdog-first") {
      lines.push_back("CRASH: PyTorch's watchdog aborted " + who + " first, not after a peer's error.");
      lines.push_back("Suspect: " + who + ": a timeout (the rank it waited on is the origin) or an unrecorded CUDA "
                      "error; the waited-on rank's input would decide.");
    } else if (crash.rule == "undecided") {
      lines.push_back("CRASH: which rank failed first is not in the memory read.");
      lines.push_back("Undecided between " + (who.empty() ? std::string("no rank") : who) + ": " +
                      (failure_of(crash, origin.empty() ? -1 : origin.front()) ? grouped(crash, origin)
                                                                               : "no input holds them; their inputs would tell") + ".");
    } else if (all_cuda_errors(crash, origin)) {
      lines.push_back("CRASH: " + who + " hit a CUDA error first; no other rank's failure explains it.");
      lines.push_back("Culprit: " + culprits_text(crash, origin) + ".");
    } else {
      lines.push_back("CRASH: " + who + " failed first; no other rank's failure explains it.");
      lines.push_back("Culprit: " + culprits_text(crash, origin) + ".");
    }
    std::vector<int> reactions = reaction_nodes(crash);
    if (!reactions.empty()) lines.push_back("Reactions: " + grouped(crash, reactions, true) + ".");
    return lines;
  }

  bool all_cuda_errors(const CrashAnalysis& crash, const std::vector<int>& nodes) const {
    return !nodes.empty() && std::all_of(nodes.begin(), nodes.end(), [&](int node) {
      const RankFailure* failure = failure_of(crash, node);
      return failure != nullptr && failure->kind == "cuda-error";
    });
  }

  std::string origin_phrase(const std::vector<int>& nodes) const {
    std::vector<int> ranks;
    std::string unranked;
    for (int node : nodes) {
      const json& n = graph_["nodes"][static_cast<size_t>(node)];
      if (n["world_rank"].is_number_integer()) ranks.push_back(n["world_rank"].get<int>());
      else unranked += (unranked.empty() ? "" : ", ") + json_text(n["label"]);
    }
    std::string text = ranks.empty() ? "" : ranks_phrase(ranks);
    return text + (text.empty() || unranked.empty() ? "" : ", ") + unranked;
  }

  // The last time a process's flight recorder saw anything happen (an entry created, started
  // or completed; system-clock ns); nullopt without entries.
  static std::optional<uint64_t> last_activity_ns(const ProcessView& process) {
    std::optional<uint64_t> last;
    for (const json& entry : json_member(process.torch, "entries"))
      for (const char* key : {"time_created_ns", "time_discovered_started_ns", "time_discovered_completed_ns"})
        if (json_member(entry, key).is_number_unsigned() && entry[key].get<uint64_t>() > 0)
          last = std::max(last.value_or(0), entry[key].get<uint64_t>());
    return last;
  }

  // With several origins: which one's recorder went quiet first, a hint at which failed first
  // (labelled: the failure's own time is not in memory). "" when not every origin has one.
  std::string time_order(const std::vector<int>& nodes) const {
    std::vector<std::pair<uint64_t, int>> times;
    for (int node : nodes) {
      if (node >= static_cast<int>(job_.processes.size())) return "";
      std::optional<uint64_t> last = last_activity_ns(job_.processes[node]);
      if (!last) return "";
      times.push_back({*last, node});
    }
    if (times.size() < 2) return "";
    std::sort(times.begin(), times.end());
    std::string text = " By the flight recorders' last activity (a hint, not the failure's time): " + label(times[0].second) + " first";
    for (size_t i = 1; i < times.size(); ++i)
      text += ", " + label(times[i].second) + " " + std::to_string((times[i].first - times[0].first) / 1000000) + " ms later";
    return text + ".";
  }

  std::string summary(const CrashAnalysis& crash) const {
    std::vector<int> all;
    for (const RankFailure& failure : crash.ranks) all.push_back(failure.node);
    static const std::map<std::string, std::string> kRule = {
        {"local-failure", "the origin is the failure of its own that no other rank's explains"},
        {"no-input", "the origin is the rank without input that the others' ncclRemoteError points to (their errors are the evidence, not its absence)"},
        {"timeout", "PyTorch's watchdog aborted ranks after a timeout: the origin is the rank that never issued the collective that timed out"},
        {"watchdog-first", "PyTorch aborted these ranks not after a peer's error: the origin when every other failure reacted to it (ncclRemoteError), else suspects (a timeout reacts to the rank it waited on)"},
        {"undecided", "no failure is local and nothing in memory orders them"}};
    return "Crash. " + grouped(crash, all) + ". Origin: " + kRule.at(crash.rule) + "." +
           time_order(crash.culprit_nodes.empty() ? crash.suspect_nodes : crash.culprit_nodes);
  }

  const Job& job_;
  const std::string& verdict_;
  const json& graph_;
  const json& hang_headline_;
  // Per process: the groups it is a member of, in group order (one pass, not one per process).
  std::vector<std::vector<std::pair<size_t, Member>>> groups_of_;
};

}  // namespace

CrashAnalysis analyze_crash(const Job& job, const std::string& verdict, const json& graph, const json& hang_headline) {
  // Only a process's own fatal signal makes a crash (process_failure): without one, nothing per
  // rank is worked out (100,000 hung ranks: a quarter of a second).
  if (std::none_of(job.processes.begin(), job.processes.end(),
                   [](const ProcessView& p) { return p.fatal_signal && p.fatal_signal->failure; }))
    return CrashAnalysis{};
  return CrashAnalyzer(job, verdict, graph, hang_headline).run();
}

json crash_json(const CrashAnalysis& crash) {
  if (!crash.crashed) return nullptr;
  json ranks = json::array();
  for (const RankFailure& failure : crash.ranks)
    ranks.push_back({{"node", failure.node},
                     {"world_rank", failure.world_rank ? json(*failure.world_rank) : json(nullptr)},
                     {"kind", failure.kind},
                     {"failed", failure.failed},
                     {"reaction", failure.reaction},
                     {"remote_error_on", failure.pgs.empty() ? json(nullptr) : json(failure.pgs)},
                     {"text", failure.text}});
  return {{"rule", crash.rule}, {"origin_nodes", crash.culprit_nodes}, {"suspect_nodes", crash.suspect_nodes},
          {"ranks", ranks}};
}

}  // namespace nsc::triage
