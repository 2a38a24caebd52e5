// Findings per communicator: who is behind, mismatched, errored, absent, stuck
// before launch, waiting on a P2P peer; or plainly that no hang is evident.
#include <algorithm>
#include <array>
#include <optional>
#include <set>

#include "triage/analysis.h"
#include "triage/finding_kinds.h"
#include "triage/rank_set.h"
#include "util/parallel.h"
#include "util/strings.h"

namespace nsc::triage {
namespace {

constexpr const char* kRemoteError = "ncclRemoteError";

std::string times(int64_t count) {
  return std::to_string(count) + (count == 1 ? " time" : " times");
}

std::string plural(size_t count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

// Per member, computed once: what its application thread waits in.
struct MemberState {
  bool gpu_wait = false;      // host thread blocked on the GPU
  bool gpu_wait_guessed = false;  // ... inferred from unnamed libcuda frames (guessed_gpu_wait)
  bool in_host_call = false;  // inside an NCCL call before launch (planned work / group end)
  bool proxy_in_flight = false;
  bool waiting() const { return gpu_wait || in_host_call || proxy_in_flight; }
};

class CommAnalyzer {
 public:
  CommAnalyzer(const Job& job, const CommGroup& group) : job_(job), group_(group) {
    for (const Member& member : group.members) states_.push_back(state_of(member));
  }

  std::vector<Finding> run() {
    find_health();
    find_remote_errors();
    bool counters_differ = find_counter_differences();
    find_p2p_waits();
    if (!counters_differ) find_stuck_before_launch();
    find_split_vs_collective();
    find_queued_waits();
    find_absent_ranks();
    if (std::none_of(findings_.begin(), findings_.end(),
                     [](const Finding& f) { return f.explains_hang; }))
      conclude_without_culprit();
    return std::move(findings_);
  }

 private:
  // World ranks everywhere, the communicator's own rank in parentheses where it differs.
  std::optional<int> world_of(int rank) const {
    const Member* member = group_.find(rank);
    if (member == nullptr) return is_world() ? std::optional<int>(rank) : std::nullopt;
    return job_.world_rank[member->process];
  }
  bool is_world() const { return job_.world_comm >= 0 && &job_.comms[job_.world_comm] == &group_; }

  std::string members_phrase(const std::vector<int>& ranks) const {
    std::vector<int> world;
    bool differs = false;
    for (int rank : ranks) {
      std::optional<int> w = world_of(rank);
      if (!w) return ranks_phrase(ranks) + " of this communicator";
      world.push_back(*w);
      differs = differs || *w != rank;
    }
    if (!differs) return ranks_phrase(ranks);
    return ranks_phrase(world) + " (" + ranks_phrase(ranks) + " of this communicator)";
  }
  std::string member_phrase(int rank) const { return members_phrase({rank}); }

  // "rank 1: X; ranks 0,2-7: Y" with world ranks (grouped_phrase on communicator ranks).
  std::string members_grouped(const std::map<std::string, std::vector<int>>& ranks_by_text) const {
    std::map<std::string, std::vector<int>> world_by_text;
    for (const auto& [text, ranks] : ranks_by_text)
      for (int rank : ranks) {
        std::optional<int> w = world_of(rank);
        if (!w) return grouped_phrase(ranks_by_text) + " (ranks of this communicator)";
        world_by_text[text].push_back(*w);
      }
    return grouped_phrase(world_by_text);
  }

  MemberState state_of(const Member& member) const {
    const ProcessView& process = job_.processes[member.process];
    const CommView& comm = process.comms[member.comm];
    MemberState state;
    const ThreadView* thread = process.principal();
    std::string blocked = thread ? thread->blocked_in : "";
    state.gpu_wait = is_gpu_wait(blocked);
    if (!state.gpu_wait && thread != nullptr && guessed_gpu_wait(*thread))
      state.gpu_wait = state.gpu_wait_guessed = true;
    state.proxy_in_flight = comm.has_proxy_work_in_flight();
    if (comm.has_planned_work()) state.in_host_call = true;
    // Blocked in an NCCL host call: charge it to this comm unless another comm
    // of the process is known to hold the planned work.
    if (is_nccl_host_call(blocked) && !state.in_host_call) {
      bool other_has_work = false, all_known = true;
      for (const CommView& other : process.comms) {
        if (&other == &comm) continue;
        other_has_work = other_has_work || other.has_planned_work();
        all_known = all_known && other.planned_known;
      }
      state.in_host_call = !other_has_work && (!comm.planned_known || !all_known ||
                                               process.comms.size() == 1);
    }
    return state;
  }

  const CommView& comm_at(size_t m) const { return job_.comm_of(group_.members[m]); }
  int rank_at(size_t m) const { return group_.members[m].rank; }
  int process_at(size_t m) const { return group_.members[m].process; }

  std::string doing_phrase(const std::vector<int>& ranks) const {
    std::map<std::string, std::vector<int>> by_doing;
    for (int rank : ranks)
      if (const Member* member = group_.find(rank))
        by_doing[process_doing(job_, member->process)].push_back(rank);
    return members_grouped(by_doing);
  }

  void add_doing_evidence(Finding* finding) const {
    if (!finding->culprits.empty() && !finding->culprits_absent) {
      std::string doing = doing_phrase(finding->culprits);
      if (!doing.empty()) finding->evidence.push_back("waited-on host threads: " + doing);
    }
    if (!finding->waiting.empty()) {
      std::string doing = doing_phrase(finding->waiting);
      if (!doing.empty()) finding->evidence.push_back("waiting host threads: " + doing);
    }
  }

  // --- aborted / errored ranks -------------------------------------------
  void find_health() {
    Finding aborted{"aborted-rank"}, errored{"errored-rank"};
    std::vector<std::string> reactions;  // aborts that react to another rank's failure: never blamed
    for (size_t m = 0; m < group_.members.size(); ++m) {
      const HealthView& health = comm_at(m).health;
      int rank = rank_at(m);
      bool abort_flag = health.abort_flag.value_or(false), revoked = health.revoked.value_or(false);
      // Only for a set flag: it reads every frame of the process (a tenth of the analysis at 100,000 ranks).
      std::string reaction = abort_flag || revoked ? abort_reaction(m) : "";
      for (const auto& [set, what] : {std::pair{abort_flag, "abort flag is set"}, std::pair{revoked, "communicator revoked"}}) {
        if (!set) continue;
        if (!reaction.empty()) {
          reactions.push_back(member_phrase(rank) + ": " + what + ", " + reaction + ": a reaction, not blamed");
          continue;
        }
        aborted.culprits.push_back(rank);
        aborted.evidence.push_back(member_phrase(rank) + ": " + what);
      }
      for (const auto* field : {&health.async_result, &health.init_state}) {
        if (!*field || **field == "ncclSuccess" || **field == "ncclInProgress") continue;
        if (**field == kRemoteError) continue;  // a peer's failure, not its own: find_remote_errors
        errored.culprits.push_back(rank);
        errored.evidence.push_back(member_phrase(rank) + ": " +
                                   (field == &health.async_result ? "async_result" : "init_state") +
                                   " is " + **field);
      }
    }
    aborted.evidence.insert(aborted.evidence.end(), reactions.begin(), reactions.end());
    if (aborted.culprits.empty() && !reactions.empty()) findings_.push_back(aborted);  // said; explains nothing
    for (Finding* finding : {&aborted, &errored}) {
      if (finding->culprits.empty()) continue;
      normalize_ranks(&finding->culprits);
      for (const Member& member : group_.members)
        if (!std::binary_search(finding->culprits.begin(), finding->culprits.end(), member.rank))
          finding->waiting.push_back(member.rank);
      finding->explains_hang = true;
      finding->edge_kind = "error";
      add_doing_evidence(finding);
      findings_.push_back(std::move(*finding));
    }
  }

  // Why member m's abort reacts to another rank's failure, "" when nothing says so (an abort
  // of its own, e.g. ncclCommAbort or abort() in user code, may be blamed): NCCL saw a peer
  // fail on one of its process's communicators, or PyTorch aborted it (its watchdog's abort(),
  // ProcessGroupNCCL's abort on a stack: after a peer's error or a timeout).
  std::string abort_reaction(size_t m) const {
    const ProcessView& process = job_.processes[process_at(m)];
    for (const CommView& comm : process.comms)
      if (comm.health.async_result == kRemoteError || comm.health.proxy_async_result == kRemoteError)
        return "after ncclRemoteError (a peer failed)";
    const Maybe<FatalSignalView>& signal = process.fatal_signal;
    if (signal && signal->origin == "abort" && (signal->torch_watchdog || signal->site_in == "PyTorch"))
      return "aborted by PyTorch (its watchdog, or abort() in libtorch)";
    for (const ThreadView& thread : process.threads)
      for (const FrameView& frame : thread.frames)
        if (frame.label().find("ProcessGroupNCCL") != std::string::npos && frame.label().find("abort") != std::string::npos)
          return "aborted by PyTorch (ProcessGroupNCCL's abort on a stack)";
    return "";
  }

  // --- a peer's failure seen: ncclRemoteError --------------------------------
  // NCCL sets ncclRemoteError where a peer's connection failed (its process died, its socket
  // closed): in the comm's asyncResult or, from the proxy thread, in proxyState->asyncResult
  // (ncclCommGetAsyncError reads both). The ranks that see it react; the far side is the
  // communicator's one rank without input (a rank that died leaves no core). The verdict
  // decides whether it is blamed (a crash's origin; in a hang, absence is never evidence).
  void find_remote_errors() {
    Finding remote{"remote-error"};
    for (size_t m = 0; m < group_.members.size(); ++m) {
      const HealthView& health = comm_at(m).health;
      std::vector<std::string> fields;
      if (health.async_result == kRemoteError) fields.push_back("async_result");
      if (health.proxy_async_result == kRemoteError) fields.push_back("proxy_async_result");
      if (fields.empty()) continue;
      remote.waiting.push_back(rank_at(m));
      remote.evidence.push_back(member_phrase(rank_at(m)) + ": " + (fields.size() == 2 ? fields[0] + " and " + fields[1] : fields[0]) + " " +
                                (fields.size() == 1 ? "is " : "are ") + kRemoteError);
      const std::string& last_error = job_.processes[process_at(m)].nccl_last_error;
      if (!last_error.empty())
        remote.evidence.push_back(member_phrase(rank_at(m)) + ": NCCL's last error: \"" + escape_for_terminal(last_error) + "\"");
    }
    if (remote.waiting.empty()) return;
    normalize_ranks(&remote.waiting);
    // One rank without input: the peer whose connections failed. Several: which one is not told.
    if (group_.missing_ranks.size() == 1) {
      remote.culprits = group_.missing_ranks;
      remote.culprits_absent = true;
      remote.evidence.push_back(members_phrase(remote.culprits) + " has no input");
    } else if (!group_.missing_ranks.empty()) {
      remote.evidence.push_back(members_phrase(group_.missing_ranks) + " have no input: which one failed is not told");
    }
    remote.edge_kind = "error";
    findings_.push_back(std::move(remote));
  }

  // --- a split the others never entered ------------------------------------
  // Ranks that "never launched" a collective because they sit in a call creating a
  // communicator from this one (ncclCommSplit: PyTorch's new_group) wait for the ranks that
  // launched the collective instead: those skipped the split (issue 33).
  bool creating_communicator(int rank) const {
    const Member* member = group_.find(rank);
    const ThreadView* thread = member ? job_.processes[member->process].principal() : nullptr;
    return thread != nullptr && in_communicator_creation(*thread);
  }

  // The ranks of `ranks` that sit in a communicator-creating call, and the others.
  void split_by_creation(const std::vector<int>& ranks, std::vector<int>* creating, std::vector<int>* others) const {
    for (int rank : ranks) (creating_communicator(rank) ? creating : others)->push_back(rank);
  }

  // Two shapes: the others launched the collective (missing-collective: the ranks in the split
  // never did), or they sit inside the collective's NCCL call with it planned (stuck-before-
  // launch with every rank inside a call: counters agree). A stuck-before-launch source is
  // replaced: its reading ("every rank is inside the call: NCCL's own setup") is the one the
  // split disproves.
  void find_split_vs_collective() {
    std::vector<Finding> found;
    std::vector<bool> superseded(findings_.size(), false);
    for (size_t i = 0; i < findings_.size(); ++i) {
      const Finding& source = findings_[i];
      std::vector<int> creating, others;
      if (source.kind == "missing-collective" && !source.culprits_absent) {
        split_by_creation(source.culprits, &creating, &others);
        if (!others.empty() || std::any_of(source.waiting.begin(), source.waiting.end(),
                                           [&](int rank) { return creating_communicator(rank); }))
          continue;
        others = source.waiting;
      } else if (source.kind == "stuck-before-launch" && !source.collective.empty() && !source.culprits_absent) {
        // Ranks in the split whose thread the call's class missed (unnamed libnccl frames) are its far side.
        std::vector<int> far_side_in_call;
        split_by_creation(source.culprits, &creating, &far_side_in_call);
        if (!far_side_in_call.empty()) continue;
        split_by_creation(source.waiting, &creating, &others);
      } else {
        continue;
      }
      if (creating.empty() || others.empty()) continue;
      Finding finding{"split-vs-collective", source.collective};
      finding.seq = source.seq;
      finding.waiting = creating;
      finding.culprits = others;
      finding.explains_hang = true;
      finding.edge_kind = "host-call";
      finding.evidence.push_back(members_phrase(finding.waiting) + " " + verb_for(finding.waiting, "sits", "sit") +
                                 " in a call that creates a communicator from this one and needs every rank of it: " +
                                 doing_phrase(finding.waiting));
      finding.evidence.push_back(members_phrase(finding.culprits) + " " +
                                 (source.kind == "missing-collective" ? std::string("launched ")
                                                                     : std::string(verb_for(finding.culprits, "sits", "sit")) +
                                                                           " inside the NCCL call of ") +
                                 source.collective + (source.seq ? " #" + std::to_string(*source.seq) : "") +
                                 " on this communicator instead and " + verb_for(finding.culprits, "is", "are") +
                                 " not in that call: " + doing_phrase(finding.culprits));
      found.push_back(std::move(finding));
      superseded[i] = source.kind == "stuck-before-launch";
    }
    std::vector<Finding> kept;
    for (size_t i = 0; i < findings_.size(); ++i)
      if (!superseded[i]) kept.push_back(std::move(findings_[i]));
    findings_ = std::move(kept);
    for (Finding& finding : found) findings_.push_back(std::move(finding));
  }

  // --- launched counters ---------------------------------------------------
  bool find_counter_differences() {
    std::vector<int> differing;
    for (int c = 0; c < kNumCollectives; ++c) {
      std::set<int64_t> values;
      for (size_t m = 0; m < group_.members.size(); ++m)
        if (comm_at(m).seq_launched[c]) values.insert(*comm_at(m).seq_launched[c]);
      if (values.size() > 1) differing.push_back(c);
    }
    if (differing.empty()) return find_total_difference();
    bool totals_equal = true;
    std::set<int64_t> totals;
    for (size_t m = 0; m < group_.members.size(); ++m) {
      auto total = comm_at(m).total_launched();
      if (!total) totals_equal = false;
      else totals.insert(*total);
    }
    if (totals_equal && totals.size() == 1) report_mismatch(*totals.begin());
    else
      for (int c : differing) report_missing(c);
    return true;
  }

  // --- collectives in total (NCCL before 2.23: no seqNumber[], only collOpCount) ----
  bool has_type_counters(size_t m) const {
    const CommView& comm = comm_at(m);
    return std::any_of(comm.seq_launched.begin(), comm.seq_launched.end(), [](const auto& v) { return v.has_value(); });
  }

  // The other communicators of member m's process that share its ncclSharedResources, and so
  // its collOpCount (splitShare). nullopt when that cannot be told (the address is unknown).
  std::optional<std::set<uint64_t>> sharing_comms(size_t m) const {
    const CommView& comm = comm_at(m);
    std::set<uint64_t> sharing;
    if (!comm.coll_op_count_shared_resources) return sharing;
    if (comm.shared_resources.empty()) return std::nullopt;
    for (const CommView& other : job_.processes[group_.members[m].process].comms)
      if (&other != &comm && other.shared_resources == comm.shared_resources) sharing.insert(other.comm_hash);
    return sharing;
  }

  // Only where no rank has per-type counters. Each rank's total counts this communicator, or the
  // same set of communicators on every rank (resources shared by splitShare): a lower total is a
  // rank behind, on this communicator or, when shared, on one of the set.
  bool find_total_difference() {
    std::map<int64_t, std::vector<int>> ranks_by_total;
    std::optional<std::set<uint64_t>> shared_with;
    for (size_t m = 0; m < group_.members.size(); ++m) {
      auto sharing = sharing_comms(m);
      if (has_type_counters(m) || !comm_at(m).coll_op_count || !sharing) return false;
      if (shared_with && *shared_with != *sharing) return false;  // counts of different sets
      shared_with = sharing;
      ranks_by_total[*comm_at(m).coll_op_count].push_back(rank_at(m));
    }
    if (ranks_by_total.size() < 2) return false;
    int64_t behind = ranks_by_total.begin()->first;
    Finding finding{"missing-collective"};
    finding.culprits = ranks_by_total.begin()->second;
    for (auto it = std::next(ranks_by_total.begin()); it != ranks_by_total.end(); ++it)
      finding.waiting.insert(finding.waiting.end(), it->second.begin(), it->second.end());
    normalize_ranks(&finding.waiting);
    std::string counts;
    for (auto it = ranks_by_total.rbegin(); it != ranks_by_total.rend(); ++it)
      counts += (counts.empty() ? "" : "; ") + members_phrase(it->second) + " launched " + plural(static_cast<size_t>(it->first), "collective");
    std::string version = job_.processes[group_.members[0].process].nccl_version;
    finding.evidence.push_back(counts + " (collOpCount: NCCL " + (version.empty() ? "before 2.23" : version) +
                               " counts collectives, not their types)");
    finding.extra["counted_by"] = "coll_op_count";
    if (shared_with->empty()) {
      finding.seq = behind + 1;
      finding.evidence.push_back(members_phrase(finding.culprits) + " never launched collective #" + std::to_string(behind + 1) +
                                 " on this communicator, which " + members_phrase(finding.waiting) +
                                 " launched and cannot finish without " + (finding.culprits.size() == 1 ? "it" : "them"));
    } else {
      std::string others;
      for (uint64_t hash : *shared_with) others += (others.empty() ? "" : ", ") + hex(hash);
      finding.extra["counted_with"] = nlohmann::json::array();
      for (uint64_t hash : *shared_with) finding.extra["counted_with"].push_back(hex(hash));
      finding.evidence.push_back("the count is shared with communicator " + others + " (split with splitShare: one "
                                 "ncclSharedResources): " + members_phrase(finding.culprits) + " launched fewer "
                                 "collectives on this communicator or on " + others + ", which of them is not told apart");
    }
    add_culprit_context(&finding);
    finding.explains_hang = true;
    finding.edge_kind = "collective";
    add_doing_evidence(&finding);
    findings_.push_back(std::move(finding));
    return true;
  }

  void add_unknown_counter_evidence(int c, Finding* finding) const {
    std::map<std::string, std::vector<int>> by_reason;
    for (size_t m = 0; m < group_.members.size(); ++m) {
      if (comm_at(m).seq_launched[c]) continue;
      std::string reason = comm_at(m).unavailable_reason(std::string("seq_launched.") + kCollectiveNames[c]);
      by_reason[reason.empty() ? "unavailable" : "unavailable (" + reason + ")"].push_back(rank_at(m));
    }
    if (!by_reason.empty())
      finding->evidence.push_back(std::string(kCollectiveNames[c]) + " counter " + members_grouped(by_reason) +
                                  ": those ranks are left out, not counted as 0");
  }

  void report_missing(int c) {
    std::map<int64_t, std::vector<int>> ranks_by_value;
    for (size_t m = 0; m < group_.members.size(); ++m)
      if (auto value = comm_at(m).seq_launched[c]) ranks_by_value[*value].push_back(rank_at(m));
    int64_t behind = ranks_by_value.begin()->first;
    Finding finding{"missing-collective", kCollectiveNames[c]};
    finding.seq = behind + 1;
    finding.culprits = ranks_by_value.begin()->second;
    for (auto it = std::next(ranks_by_value.begin()); it != ranks_by_value.end(); ++it)
      finding.waiting.insert(finding.waiting.end(), it->second.begin(), it->second.end());
    normalize_ranks(&finding.waiting);
    std::string counts;
    for (auto it = ranks_by_value.rbegin(); it != ranks_by_value.rend(); ++it) {
      if (!counts.empty()) counts += "; ";
      counts += members_phrase(it->second) + " launched " + kCollectiveNames[c] + " " + times(it->first);
    }
    finding.evidence.push_back(counts);
    finding.evidence.push_back(members_phrase(finding.culprits) + " never launched " + kCollectiveNames[c] +
                               " #" + std::to_string(behind + 1) + " on this communicator, which " +
                               members_phrase(finding.waiting) + " launched and cannot finish without " +
                               (finding.culprits.size() == 1 ? "it" : "them"));
    add_unknown_counter_evidence(c, &finding);
    add_culprit_context(&finding);
    finding.explains_hang = true;
    finding.edge_kind = "collective";
    add_doing_evidence(&finding);
    findings_.push_back(std::move(finding));
  }

  // Same total, different types: at the same position ranks launched different collectives.
  void report_mismatch(int64_t total) {
    using Counts = std::array<int64_t, kNumCollectives>;
    std::map<Counts, std::vector<int>> ranks_by_counts;
    for (size_t m = 0; m < group_.members.size(); ++m) {
      Counts counts{};
      for (int c = 0; c < kNumCollectives; ++c) counts[c] = *comm_at(m).seq_launched[c];
      ranks_by_counts[counts].push_back(rank_at(m));
    }
    // Reference: the largest group; a tie goes to the group holding the lowest rank.
    auto reference = ranks_by_counts.begin();
    bool tie = false;
    for (auto it = ranks_by_counts.begin(); it != ranks_by_counts.end(); ++it) {
      if (it == reference) continue;
      if (it->second.size() > reference->second.size() ||
          (it->second.size() == reference->second.size() && it->second.front() < reference->second.front()))
        reference = it;
    }
    for (auto it = ranks_by_counts.begin(); it != ranks_by_counts.end(); ++it)
      if (it != reference && it->second.size() == reference->second.size()) tie = true;
    Finding finding{"collective-mismatch"};
    finding.waiting = reference->second;
    const Counts& ref = reference->first;
    std::string breakdown;
    nlohmann::json by_group = nlohmann::json::array();
    for (const auto& [counts, ranks] : ranks_by_counts) {
      std::string types;
      for (int c = 0; c < kNumCollectives; ++c)
        if (counts[c] != 0 || ref[c] != 0) types += (types.empty() ? "" : ", ") + std::string(kCollectiveNames[c]) + "=" + std::to_string(counts[c]);
      breakdown += (breakdown.empty() ? "" : "; ") + members_phrase(ranks) + ": " + types;
      if (&ranks == &reference->second) continue;
      finding.culprits.insert(finding.culprits.end(), ranks.begin(), ranks.end());
      int expected = -1, instead = -1;
      for (int c = 0; c < kNumCollectives; ++c) {
        if (counts[c] < ref[c] && expected < 0) expected = c;
        if (counts[c] > ref[c] && instead < 0) instead = c;
      }
      if (finding.collective.empty() && expected >= 0) {
        finding.collective = kCollectiveNames[expected];
        finding.seq = counts[expected] + 1;
      }
      by_group.push_back({{"ranks", ranks},
                          {"collective", instead >= 0 ? kCollectiveNames[instead] : ""},
                          {"instead_of", expected >= 0 ? kCollectiveNames[expected] : ""}});
      if (expected >= 0 && instead >= 0)
        finding.evidence.push_back(members_phrase(ranks) + " launched " + kCollectiveNames[instead] + " #" +
                                   std::to_string(counts[instead]) + " where " + members_phrase(reference->second) +
                                   " launched " + kCollectiveNames[expected] + " #" + std::to_string(ref[expected]));
    }
    normalize_ranks(&finding.culprits);
    finding.evidence.insert(finding.evidence.begin(),
                            "every rank launched " + plural(static_cast<size_t>(total), "collective") +
                                " in total, but not of the same types: " + breakdown);
    if (tie)
      finding.evidence.push_back("no majority: the group holding the lowest rank is taken as the reference; "
                                 "the mismatch is mutual and either side may be the one at fault");
    finding.extra["groups"] = by_group;
    // Ranks without input could outvote the reference: absence never picks the side at fault.
    if (!group_.missing_ranks.empty() && reference->second.size() * 2 <= static_cast<size_t>(group_.nranks.value_or(0))) {
      finding.evidence.push_back(members_phrase(group_.missing_ranks) + " without input could outvote " +
                                 members_phrase(reference->second) + ": no side is blamed");
      finding.culprits.clear();
    }
    bool anything_waits = false;
    for (size_t m = 0; m < states_.size(); ++m) anything_waits = anything_waits || states_[m].waiting();
    finding.explains_hang = anything_waits && !finding.culprits.empty();
    add_guessed_wait_evidence(&finding);
    if (!anything_waits)
      finding.evidence.push_back("no rank waits on the GPU and no proxy operation is in flight: the "
                                 "mismatched collectives may have completed silently with wrong results");
    finding.edge_kind = "collective";
    add_culprit_context(&finding);
    add_doing_evidence(&finding);
    findings_.push_back(std::move(finding));
  }

  // Say which GPU waits were read from unnamed libcuda frames rather than a known symbol.
  void add_guessed_wait_evidence(Finding* finding) const {
    std::vector<int> guessed;
    for (size_t m = 0; m < states_.size(); ++m)
      if (states_[m].gpu_wait_guessed) guessed.push_back(rank_at(m));
    if (!guessed.empty())
      finding->evidence.push_back("guess: " + members_phrase(guessed) + " " + verb_for(guessed, "waits", "wait") +
                                  " on the GPU (the host thread sits in libcuda frames without symbols; "
                                  "--exe names the call)");
  }

  // Planned work and finalize/destroy flags say what the culprits did instead.
  void add_culprit_context(Finding* finding) const {
    for (int rank : finding->culprits) {
      const Member* member = group_.find(rank);
      if (member == nullptr) continue;
      const CommView& comm = job_.comm_of(*member);
      std::string who = member_phrase(rank);
      if (!comm.planned_colls.empty())
        finding->evidence.push_back(who + " has " + comm.planned_colls.front() +
                                    " planned but not launched (inside an NCCL call on the host)");
      if (comm.health.finalize_called.value_or(false))
        finding->evidence.push_back(who + " called ncclCommFinalize on this communicator");
      if (comm.health.destroy_flag.value_or(false))
        finding->evidence.push_back(who + " is destroying this communicator");
      if (finding->culprits.size() > 8) break;  // a handful is enough to read
    }
  }

  // --- P2P -------------------------------------------------------------------
  struct P2pWait {
    int rank, peer;
    P2pDirection direction;
    std::string detail;
  };

  // Does `peer` hold an op (in flight or planned) to `rank` in direction `direction`?
  bool peer_posted(int peer, int rank, P2pDirection direction) const {
    const Member* member = group_.find(peer);
    if (member == nullptr) return false;
    const CommView& comm = job_.comm_of(*member);
    for (const ProxyOpView& op : comm.proxy_ops)
      if (op.direction == direction)
        for (const ProxySubView& sub : op.subs)
          if (sub.peer && *sub.peer == rank) return true;
    for (const PlannedP2pView& task : comm.planned_p2p)
      if (task.direction == direction && task.peer == rank) return true;
    return false;
  }

  bool peer_p2p_known(int peer) const {
    const Member* member = group_.find(peer);
    return member != nullptr && job_.comm_of(*member).proxy_ops_known;
  }

  void find_p2p_waits() {
    std::vector<P2pWait> waits;
    for (size_t m = 0; m < group_.members.size(); ++m) {
      const CommView& comm = comm_at(m);
      std::set<std::pair<int, int>> seen;  // (peer, direction)
      for (const ProxyOpView& op : comm.proxy_ops) {
        if (op.direction == P2pDirection::kNone) continue;
        for (const ProxySubView& sub : op.subs) {
          if (!sub.peer || sub.finished()) continue;
          if (!seen.insert({*sub.peer, static_cast<int>(op.direction)}).second) continue;
          std::string detail = std::string(op.direction == P2pDirection::kSend ? "send to" : "recv from") +
                               " " + member_phrase(*sub.peer) + " in flight";
          if (sub.channel) detail += " on channel " + std::to_string(*sub.channel);
          if (sub.nsteps && sub.done) detail += " (" + std::to_string(*sub.done) + " of " + std::to_string(*sub.nsteps) + " steps done)";
          waits.push_back({rank_at(m), *sub.peer, op.direction, detail});
        }
      }
    }
    std::map<int, Finding> by_culprit;
    for (const P2pWait& wait : waits) {
      P2pDirection needed = wait.direction == P2pDirection::kSend ? P2pDirection::kRecv : P2pDirection::kSend;
      bool absent = group_.find(wait.peer) == nullptr;
      if (!absent && (peer_posted(wait.peer, wait.rank, needed) || !peer_p2p_known(wait.peer))) continue;
      Finding& finding = by_culprit[wait.peer];
      if (finding.kind.empty()) {
        finding.kind = "p2p-unmatched";
        finding.culprits = {wait.peer};
        finding.culprits_absent = absent;
        finding.edge_kind = "p2p";
        finding.explains_hang = true;
      }
      std::string op = wait.direction == P2pDirection::kSend ? "Send" : "Recv";
      if (finding.collective.empty()) finding.collective = op;
      else if (finding.collective != op) finding.collective = "Send/Recv";
      finding.waiting.push_back(wait.rank);
      finding.evidence.push_back(member_phrase(wait.rank) + ": " + wait.detail + "; " + member_phrase(wait.peer) +
                                 (absent ? " has no input"
                                         : std::string(" has no matching ") +
                                               (needed == P2pDirection::kSend ? "send to" : "recv from") +
                                               " " + member_phrase(wait.rank) + " in flight or planned"));
    }
    for (auto& [peer, finding] : by_culprit) {
      normalize_ranks(&finding.waiting);
      if (finding.evidence.size() > 8) {
        size_t extra = finding.evidence.size() - 8;
        finding.evidence.resize(8);
        finding.evidence.push_back("... and " + std::to_string(extra) + " more waits on " + member_phrase(peer));
      }
      add_doing_evidence(&finding);
      findings_.push_back(std::move(finding));
    }
  }

  // --- issued everywhere, not sent yet ------------------------------------------
  // A rank whose proxy waits for data from a peer that holds the matching send in flight
  // but has sent nothing of it: the peer issued the operation and its GPU has not reached
  // it (queued behind earlier work of its own). An edge, never a blame (blame.h).
  struct DataWait {
    int channel = -1;
    int64_t received = 0, nsteps = 0;
    std::string collective;
  };

  // The peer's in-flight send toward `rank`, if any: how much of it the peer has sent.
  std::optional<int64_t> peer_sent(int peer, int rank) const {
    const Member* member = group_.find(peer);
    if (member == nullptr) return std::nullopt;
    std::optional<int64_t> sent;
    for (const ProxyOpView& op : job_.comm_of(*member).proxy_ops)
      for (const ProxySubView& sub : op.subs)
        if (sub.send.value_or(false) && sub.peer && *sub.peer == rank && !sub.finished())
          sent = std::max(sent.value_or(0), sub.transmitted.value_or(0));
    return sent;
  }

  void find_queued_waits() {
    // (peer, collective) -> waiting rank -> its first wait
    std::map<std::pair<int, std::string>, std::map<int, DataWait>> waits_on;
    for (size_t m = 0; m < group_.members.size(); ++m)
      for (const ProxyOpView& op : comm_at(m).proxy_ops)
        for (const ProxySubView& sub : op.subs) {
          if (sub.send.value_or(true) || !sub.peer || !sub.nsteps || sub.finished()) continue;
          if (sub.received.value_or(0) >= *sub.nsteps) continue;  // its data is all here
          std::optional<int64_t> sent = peer_sent(*sub.peer, rank_at(m));
          if (!sent || *sent > 0) continue;  // no matching send in flight, or it is sending
          waits_on[{*sub.peer, op.collective}].emplace(rank_at(m), DataWait{sub.channel.value_or(-1), sub.received.value_or(0),
                                                           *sub.nsteps, op.collective});
        }
    for (const auto& [key, waiters] : waits_on) {
      int peer = key.first;
      Finding finding{"data-wait", key.second};
      finding.culprits = {peer};
      finding.edge_kind = "queued";
      for (const auto& [rank, wait] : waiters) {
        finding.waiting.push_back(rank);
        if (finding.evidence.size() < 8)
          finding.evidence.push_back(member_phrase(rank) + " waits for data from " + member_phrase(peer) + " in " +
                                     (wait.collective.empty() ? "an operation" : wait.collective) +
                                     (wait.channel >= 0 ? " on channel " + std::to_string(wait.channel) : "") + " (" +
                                     std::to_string(wait.received) + " of " + std::to_string(wait.nsteps) +
                                     " steps received)");
      }
      finding.evidence.push_back(member_phrase(peer) + " holds the matching send in flight but has sent nothing of "
                                 "it: its GPU has not reached the operation (queued behind its own earlier work)");
      add_doing_evidence(&finding);
      findings_.push_back(std::move(finding));
    }
  }

  // --- stuck inside an NCCL call before launch ---------------------------------
  void find_stuck_before_launch() {
    Finding finding{"stuck-before-launch"};
    std::vector<int> idle;
    std::map<std::string, std::vector<int>> planned_by_text;
    for (size_t m = 0; m < group_.members.size(); ++m) {
      if (!states_[m].in_host_call) {
        idle.push_back(rank_at(m));
        continue;
      }
      finding.waiting.push_back(rank_at(m));
      const CommView& comm = comm_at(m);
      std::string planned;
      for (const std::string& coll : comm.planned_colls) planned += (planned.empty() ? "" : ", ") + coll;
      for (const PlannedP2pView& task : comm.planned_p2p)
        planned += (planned.empty() ? "" : ", ") + std::string(task.direction == P2pDirection::kSend ? "Send to " : "Recv from ") +
                   std::to_string(task.peer);
      if (planned.empty() && comm.unlaunched_plans.value_or(0) > 0)
        planned = plural(static_cast<size_t>(*comm.unlaunched_plans), "unlaunched plan");
      if (planned.empty()) planned = comm.planned_known ? "nothing planned on this communicator"
                                                        : "planned work unavailable";
      planned_by_text[planned].push_back(rank_at(m));
      if (finding.collective.empty() && !comm.planned_colls.empty()) {
        finding.collective = comm.planned_colls.front();
        for (int c = 0; c < kNumCollectives; ++c)
          if (finding.collective == kCollectiveNames[c] && comm.seq_launched[c])
            finding.seq = *comm.seq_launched[c] + 1;
      } else if (finding.collective.empty() && !comm.planned_p2p.empty()) {
        finding.collective = comm.planned_p2p.front().direction == P2pDirection::kSend ? "Send" : "Recv";
      }
    }
    if (finding.waiting.empty()) return;
    finding.evidence.push_back("launched counters agree on every rank present; " + members_phrase(finding.waiting) +
                               " " + verb_for(finding.waiting, "sits", "sit") + " inside an NCCL call on the host without launching: " +
                               members_grouped(planned_by_text));
    finding.edge_kind = "host-call";
    if (!idle.empty()) {
      finding.culprits = idle;
      finding.explains_hang = true;
      finding.evidence.push_back(members_phrase(idle) + " never made that call (nothing planned, not inside NCCL): "
                                 "the waiting ranks need them, e.g. for lazy connection setup");
    } else if (!group_.missing_ranks.empty()) {
      finding.culprits = group_.missing_ranks;
      finding.culprits_absent = true;
      finding.evidence.push_back("every rank present is inside the call; " + members_phrase(group_.missing_ranks) +
                                 " " + verb_for(group_.missing_ranks, "has", "have") + " no input and may be the one(s) that never made it");
    } else {
      finding.evidence.push_back("every rank is inside the call and none is missing: the hang is in NCCL's "
                                 "own setup (bootstrap/proxy threads, network); see the stack classes");
    }
    add_doing_evidence(&finding);
    findings_.push_back(std::move(finding));
  }

  // --- absent ranks -------------------------------------------------------------
  void find_absent_ranks() {
    if (group_.missing_ranks.empty()) return;
    Finding finding{"absent-ranks"};
    finding.culprits = group_.missing_ranks;
    finding.culprits_absent = true;
    finding.edge_kind = "absent";
    for (size_t m = 0; m < group_.members.size(); ++m)
      if (states_[m].waiting()) finding.waiting.push_back(rank_at(m));
    finding.evidence.push_back("nranks is " + std::to_string(*group_.nranks) + "; inputs hold " +
                               (group_.members.empty() ? std::string("no rank") : members_phrase(ranks_present())) +
                               "; " + members_phrase(group_.missing_ranks) + " " + verb_for(group_.missing_ranks, "has", "have") + " no input holding this communicator");
    size_t commless = job_.commless_processes.size();
    if (commless > 0) {
      std::string names, rejected;
      for (size_t i = 0; i < commless && i < 4; ++i) {
        names += (i ? ", " : "") + job_.processes[job_.commless_processes[i]].input_name;
        rejected += rejected_comms_note(job_.processes[job_.commless_processes[i]]);
      }
      finding.evidence.push_back(plural(commless, "input") + (commless == 1 ? " holds" : " hold") + " no communicator at all (" + names +
                                 (rejected.empty() ? "): such a process aborted or destroyed its communicators, or never created them"
                                                   : ")" + rejected));
      finding.extra["possibly_inputs"] = nlohmann::json::array();
      for (int p : job_.commless_processes) finding.extra["possibly_inputs"].push_back(job_.processes[p].input_name);
    }
    // Every process was given, some lost this comm, and the others wait: the absent ranks hold it up.
    finding.explains_hang = commless >= group_.missing_ranks.size() && !finding.waiting.empty();
    if (!finding.explains_hang)
      finding.evidence.push_back(finding.waiting.empty()
                                     ? "no rank present is waiting on this communicator"
                                     : "the ranks present wait; without inputs for " + members_phrase(group_.missing_ranks) +
                                           " triage cannot tell whether they are behind");
    findings_.push_back(std::move(finding));
  }

  std::vector<int> ranks_present() const {
    std::vector<int> ranks;
    for (const Member& member : group_.members) ranks.push_back(member.rank);
    return ranks;
  }

  // --- nothing explains a hang ----------------------------------------------------
  void conclude_without_culprit() {
    std::vector<int> unknown, gpu_waiting, proxy_busy;
    std::string example_reason;
    for (size_t m = 0; m < group_.members.size(); ++m) {
      bool any_unknown = false;
      for (int c = 0; c < kNumCollectives; ++c)
        if (!comm_at(m).seq_launched[c]) {
          any_unknown = true;
          if (example_reason.empty())
            example_reason = comm_at(m).unavailable_reason(std::string("seq_launched.") + kCollectiveNames[c]);
        }
      auto sharing = sharing_comms(m);  // before 2.23: the total stands in when it is the comm's own
      bool total_known = comm_at(m).coll_op_count && sharing && sharing->empty() && !has_type_counters(m);
      if (any_unknown && !total_known) unknown.push_back(rank_at(m));
      if (states_[m].gpu_wait) gpu_waiting.push_back(rank_at(m));
      if (states_[m].proxy_in_flight) proxy_busy.push_back(rank_at(m));
    }
    if (!unknown.empty()) {
      Finding finding{"counters-unavailable"};
      finding.culprits = {};
      finding.evidence.push_back("launched counters unavailable on " + members_phrase(unknown) +
                                 (example_reason.empty() ? "" : " (" + example_reason + ")") +
                                 ": whether those ranks are behind is unknown, not assumed");
      findings_.push_back(std::move(finding));
    }
    std::string agreed = agreed_counts();
    bool queued = std::any_of(findings_.begin(), findings_.end(), [](const Finding& f) { return !finding_kind(f.kind).may_blame && !f.culprits.empty(); });
    if (queued) return;
    if (!proxy_busy.empty()) {
      Finding finding{"in-flight-consistent"};
      finding.waiting = proxy_busy;
      finding.evidence.push_back("launched counters agree (" + agreed + ") but " + members_phrase(proxy_busy) +
                                 " " + verb_for(proxy_busy, "has", "have") + " proxy operations in flight");
      finding.evidence.push_back("nobody is visibly behind in host state: a count, datatype or root mismatch at the "
                                 "same position can hang or complete silently; device step counters "
                                 "(cuda-gdb) or the network tell more");
      findings_.push_back(std::move(finding));
      return;
    }
    if (!unknown.empty() && unknown.size() == group_.members.size()) return;
    // "every rank present agrees" would contradict a finding already made here.
    for (const Finding& made : findings_)
      if (made.kind != "counters-unavailable" && made.kind != "absent-ranks") return;
    Finding finding{"no-hang-evident"};
    finding.evidence.push_back("every rank present agrees: " + agreed + "; nothing planned and no proxy "
                               "operation in flight on this communicator");
    if (!gpu_waiting.empty())
      finding.evidence.push_back(members_phrase(gpu_waiting) + " " + verb_for(gpu_waiting, "waits", "wait") + " on the GPU (" +
                                 doing_phrase(gpu_waiting) + "), perhaps for another communicator or for "
                                 "their own kernels");
    finding.evidence.push_back("agreeing counters are not proof of correctness: a size mismatch can complete "
                               "silently; triage never reports a hang it cannot see");
    findings_.push_back(std::move(finding));
  }

  std::string agreed_counts() const {
    std::string text;
    if (group_.members.empty()) return "no rank";
    const CommView& first = comm_at(0);
    if (!has_type_counters(0))
      return first.coll_op_count ? plural(static_cast<size_t>(*first.coll_op_count), "collective") + " in total"
                                 : "no counter known";
    for (int c = 0; c < kNumCollectives; ++c)
      if (first.seq_launched[c] && *first.seq_launched[c] != 0)
        text += (text.empty() ? "" : ", ") + std::string(kCollectiveNames[c]) + "=" + std::to_string(*first.seq_launched[c]);
    return text.empty() ? "no collective launched" : text;
  }

  const Job& job_;
  const CommGroup& group_;
  std::vector<MemberState> states_;
  std::vector<Finding> findings_;
};

}  // namespace

void analyze_communicators(Job* job) {
  // Each communicator's findings read the job and nothing else: made over the CPUs.
  std::vector<std::vector<Finding>> findings(job->comms.size());
  for_each_range(job->comms.size(), 64, [&](size_t begin, size_t end) {
    for (size_t g = begin; g < end; ++g) findings[g] = CommAnalyzer(*job, job->comms[g]).run();
  });
  job->findings = std::move(findings);
}

}  // namespace nsc::triage
