#include "triage/finding_kinds.h"

#include <stdexcept>

#include "triage/rank_set.h"

namespace nsc::triage {
namespace {

using nlohmann::json;

struct Phrases {
  std::string where, far, waiting, op;
};

// The pieces every sentence uses: where, the far side, the waiting side, "AllReduce #4".
Phrases phrases_of(const Job& job, size_t g, const Finding& finding) {
  const CommGroup& group = job.comms[g];
  std::string pg = pg_label(group);
  std::string size = group.nranks ? std::to_string(*group.nranks) + " ranks" : "";
  std::string label = pg.empty() ? size : size.empty() ? pg : pg + ", " + size;
  return {"On communicator " + group.hash_text + (label.empty() ? "" : " (" + label + ")"),
          comm_ranks_phrase(job, g, finding.culprits, finding.culprits_absent),
          comm_ranks_phrase(job, g, finding.waiting, false),
          finding.collective + (finding.seq ? " #" + std::to_string(*finding.seq) : "")};
}

const char* waits(const std::vector<int>& ranks) { return verb_for(ranks, "waits", "wait"); }

std::string missing_collective(const Job& job, size_t g, const Finding& finding) {
  Phrases p = phrases_of(job, g, finding);
  if (finding.extra.contains("counted_with")) {
    std::string others;
    for (const json& hash : finding.extra["counted_with"]) others += (others.empty() ? "" : ", ") + hash.get<std::string>();
    return p.where + ", " + p.far + " launched fewer collectives than " + p.waiting + " on it or on " + others +
           " (one count for both: splitShare), and " + p.waiting + " " + waits(finding.waiting) + ".";
  }
  if (finding.collective.empty())  // counted by collOpCount
    p.op = "collective" + (finding.seq ? " #" + std::to_string(*finding.seq) : "") +
           " (of a type NCCL before 2.23 does not count)";
  return p.where + ", " + p.far + " never launched " + p.op + ", which " + p.waiting + " launched and " +
         waits(finding.waiting) + " for.";
}

std::string gpu_busy(const Job& job, size_t g, const Finding& finding) {
  Phrases p = phrases_of(job, g, finding);
  return p.where + ", " + p.far + "'s GPU runs " + finding.extra.value("kernel", std::string("another kernel")) +
         " (not NCCL); its " + p.op + " never started, which " + p.waiting + " entered and " + waits(finding.waiting) +
         " in (kernel view).";
}

std::string collective_mismatch(const Job& job, size_t g, const Finding& finding) {
  Phrases p = phrases_of(job, g, finding);
  std::string instead;
  if (finding.extra.contains("groups") && !finding.extra["groups"].empty())
    instead = finding.extra["groups"][0].value("collective", "");
  return p.where + ", " + p.far + " launched " + (instead.empty() ? "a different collective" : instead) + " where " +
         p.waiting + " launched " + p.op + " (same position, different collective).";
}

std::string p2p_unmatched(const Job& job, size_t g, const Finding& finding) {
  Phrases p = phrases_of(job, g, finding);
  std::string matching = finding.collective == "Send" ? "Recv" : finding.collective == "Recv" ? "Send" : "Send/Recv";
  return p.where + ", " + p.waiting + " " + waits(finding.waiting) + " in " + finding.collective + " for a matching " +
         matching + " that " + p.far + " never posted.";
}

std::string stuck_before_launch(const Job& job, size_t g, const Finding& finding) {
  Phrases p = phrases_of(job, g, finding);
  return p.where + ", " + p.waiting + " " + verb_for(finding.waiting, "is", "are") +
         " stuck inside an NCCL call before launch" + (finding.collective.empty() ? "" : " (" + p.op + " planned)") +
         ", waiting for " + p.far + ", which never made that call.";
}

std::string split_vs_collective(const Job& job, size_t g, const Finding& finding) {
  Phrases p = phrases_of(job, g, finding);
  return p.where + ", " + p.waiting + " " + verb_for(finding.waiting, "sits", "sit") +
         " in a call that creates a communicator from it (ncclCommSplit, ncclCommInitRank, PyTorch new_group) and " +
         waits(finding.waiting) + " for " + p.far + ", which issued " + p.op + " on it instead.";
}

std::string failed_rank(const Job& job, size_t g, const Finding& finding) {
  Phrases p = phrases_of(job, g, finding);
  if (finding.culprits.empty() && !finding.evidence.empty())  // aborts that react to a peer's failure
    return p.where + ", " + finding.evidence.front() + (finding.evidence.size() > 1 ? " (and more)." : ".");
  return p.where + ", " + p.far + (finding.kind == "aborted-rank" ? " aborted" : " failed") +
         (finding.evidence.empty() ? "" : " (" + finding.evidence.front() + ")") +
         (finding.waiting.empty() ? "." : "; " + p.waiting + " " + waits(finding.waiting) + " on it.");
}

std::string torch_mismatch(const Job& job, size_t g, const Finding& finding) {
  Phrases p = phrases_of(job, g, finding);
  std::string listing;
  for (const json& value : finding.extra["values"]) {
    std::string sizes;
    for (const json& tensor : value["sizes"]) sizes += (sizes.empty() ? "" : " ") + tensor.dump();
    const Member* member = job.comms[g].find(value["rank"].get<int>());
    std::string who = member ? job.process_label(member->process) : "rank " + value["rank"].dump() + " of it";
    listing += (listing.empty() ? "" : ", ") + who + " " + sizes +
               (value["frame"].get<std::string>().empty() ? "" : " from " + value["frame"].get<std::string>());
  }
  return p.where + ", PyTorch's flight recorder shows " + p.op + " issued with different input " +
         (finding.kind == "size-mismatch" ? "sizes" : "dtypes") + ": " + listing +
         (finding.culprits.empty() ? "" : "; " + p.far + " " + verb_for(finding.culprits, "disagrees", "disagree") +
                                               " with the others") + ".";
}

std::string recorded_mismatch(const Job& job, size_t g, const Finding& finding) {
  Phrases p = phrases_of(job, g, finding);
  std::string fields;
  for (const json& name : finding.extra["fields"]) fields += (fields.empty() ? "" : " and ") + name.get<std::string>();
  std::string listing;
  for (const json& value : finding.extra["values"]) {
    listing += (listing.empty() ? "" : ", ") + std::string("rank ") + std::to_string(value["rank"].get<int>()) +
               " count " + (value["count"].is_number() ? std::to_string(value["count"].get<uint64_t>()) : "?") + " " +
               (value["datatype"].is_string() ? value["datatype"].get<std::string>() : "?");
    if (value.contains("root") && finding.kind == "root-mismatch") listing += " root " + value["root"].dump();
  }
  return p.where + ", the ranks launched " + p.op + " (seq " + finding.extra["recorder_seq"].dump() +
         ") with different " + fields + ": " + listing +
         (finding.culprits.empty() ? "" : "; " + p.far + " " + verb_for(finding.culprits, "disagrees", "disagree") +
                                               " with the others") + " (flight recorder).";
}

std::string mismatch_sentence(const Job& job, size_t g, const Finding& finding) {
  bool torch = finding.extra.value("source", "") == "pytorch-flight-recorder";
  return torch ? torch_mismatch(job, g, finding) : recorded_mismatch(job, g, finding);
}

std::string kernel_wait(const Job& job, size_t g, const Finding& finding) {
  Phrases p = phrases_of(job, g, finding);
  // "the AllReduce kernel of rank 0 waits for data from rank 1 at step 24 on channels 0-23 (...)"
  std::string text = p.where + ", the " + finding.collective + " kernel" + (finding.waiting.size() == 1 ? "" : "s") +
                     " of " + p.waiting + " ";
  const json& first = finding.kernel_waits.empty() ? json() : finding.kernel_waits[0];
  if (finding.waiting.size() == 1 && first.is_object()) text += first.value("wait", "");
  else text += "wait on " + p.far + (first.is_object() ? " (" + first.value("text", "") + ")" : "");
  if (finding.culprits_absent) text += "; " + p.far + " has no input";
  return text + " (kernel view; host state alone did not name this peer).";
}

std::string absent_ranks(const Job& job, size_t g, const Finding& finding) {
  Phrases p = phrases_of(job, g, finding);
  return p.where + ", " + p.far + " " + verb_for(finding.culprits, "appears", "appear") +
         " in no input's communicator list (aborted, destroyed or exited) while " + p.waiting + " " +
         waits(finding.waiting) + ".";
}

std::string remote_error(const Job& job, size_t g, const Finding& finding) {
  Phrases p = phrases_of(job, g, finding);
  std::string text = p.where + ", " + p.waiting + " " + verb_for(finding.waiting, "reports", "report") +
                     " ncclRemoteError: a peer's connection failed";
  if (!finding.culprits.empty())
    text += "; " + p.far + " " + verb_for(finding.culprits, "has", "have") + " no input (a rank that died leaves no core)";
  return text + ".";
}

std::string data_wait(const Job& job, size_t g, const Finding& finding) {
  Phrases p = phrases_of(job, g, finding);
  return p.where + ", " + p.waiting + " " + waits(finding.waiting) + " for data from " + p.far + " in " +
         finding.collective + ", which " + p.far + " issued but " + verb_for(finding.culprits, "has", "have") +
         " not reached on " + verb_for(finding.culprits, "its", "their") + " GPU (queued behind earlier work).";
}

std::string startup_hang(const Job&, size_t, const Finding& finding) {
  std::string text = "Start-up hang: no communicator exists yet.";
  if (!finding.waiting.empty())
    text += " " + ranks_phrase(finding.waiting) + " " + waits(finding.waiting) + " in the rendezvous" +
            std::string(finding.extra.contains("guessed_ranks")
                            ? " (a guess for " + ranks_phrase(finding.extra["guessed_ranks"].get<std::vector<int>>()) +
                                  ": see the evidence)"
                            : "");
  std::vector<int> never = finding.culprits;
  if (finding.extra.contains("missing_ranks"))
    for (const json& rank : finding.extra["missing_ranks"]) never.push_back(rank.get<int>());
  normalize_ranks(&never);
  if (!never.empty()) text += std::string(finding.waiting.empty() ? " " : "; ") + ranks_phrase(never) + " never arrived";
  return text + ".";
}

// --- PyTorch's records alone (fr_match.cc): world ranks, a process group, no communicator ---

std::string record_where(const Finding& finding) {
  std::string desc = finding.extra.value("pg_desc", std::string()), name = finding.extra.value("pg", std::string());
  return "In pg " + (desc.empty() || desc == "undefined" ? name : desc) + " (PyTorch's flight recorder)";
}

std::string record_op(const Finding& finding) {
  return finding.collective + (finding.seq ? " #" + std::to_string(*finding.seq) : "");
}

std::string record_not_issued(const Job&, size_t, const Finding& finding) {
  return record_where(finding) + ", " + ranks_phrase(finding.culprits) + " never issued " + record_op(finding) + ", which " +
         ranks_phrase(finding.waiting) + " issued and " + waits(finding.waiting) + " in.";
}

std::string record_p2p_unmatched(const Job&, size_t, const Finding& finding) {
  std::string matching = finding.collective == "send" ? "recv" : "send";
  return record_where(finding) + ", " + ranks_phrase(finding.waiting) + " " + waits(finding.waiting) + " in " +
         record_op(finding) + " for the matching " + matching + " that " + ranks_phrase(finding.culprits) +
         " never issued.";
}

std::string record_no_input(const Job&, size_t, const Finding& finding) {
  return record_where(finding) + ", " + ranks_phrase(finding.waiting) + " " + waits(finding.waiting) + " in " +
         record_op(finding) + " with " + ranks_phrase(finding.culprits) + ", whose records no input holds.";
}

std::string record_queued(const Job&, size_t, const Finding& finding) {
  return record_where(finding) + ", " + ranks_phrase(finding.waiting) + " " + waits(finding.waiting) + " in " +
         record_op(finding) + ", which " + ranks_phrase(finding.culprits) + " issued behind " +
         verb_for(finding.culprits, "its", "their") + " own unfinished operations.";
}

std::string record_mismatch(const Job&, size_t, const Finding& finding) {
  std::string field = finding.kind == "pg-type-mismatch" ? "collectives" : finding.kind == "pg-size-mismatch" ? "sizes" : "dtypes";
  std::string text = record_where(finding) + ", the ranks issued " + record_op(finding) + " with different " + field;
  if (!finding.culprits.empty()) text += "; " + ranks_phrase(finding.culprits) + " differ from the majority";
  return text + ".";
}

using VE = VerdictEffect;

}  // namespace

const std::vector<FindingKind>& finding_kinds() {
  static const std::vector<FindingKind> kinds = {
      {"missing-collective", VE::kNone, true, "never launched it", missing_collective},
      {"collective-mismatch", VE::kMismatch, true, "launched another collective there", collective_mismatch},
      {"aborted-rank", VE::kNone, true, "aborted", failed_rank},
      {"errored-rank", VE::kNone, true, "failed", failed_rank},
      {"absent-ranks", VE::kIncomplete, true, "no input holds it", absent_ranks},
      {"remote-error", VE::kNone, true, "no input holds it (its peers saw its connection fail)", remote_error},
      {"p2p-unmatched", VE::kNone, true, "never posted the matching operation", p2p_unmatched},
      {"stuck-before-launch", VE::kIncomplete, true, "never made that call", stuck_before_launch},
      {"split-vs-collective", VE::kNone, true, "issued a collective on it instead of entering the split",
       split_vs_collective},
      {"data-wait", VE::kNone, false, "issued it, its GPU has not reached it", data_wait},
      {"queued-behind", VE::kIncomplete, false, "", evidence_sentence},
      {"kernel-wait", VE::kNone, true, "waited on by a kernel", kernel_wait},
      {"gpu-busy", VE::kNone, true, "never started it on its GPU (a non-NCCL kernel runs there)", gpu_busy},
      {"count-mismatch", VE::kMismatch, true, "disagrees with the others", mismatch_sentence},
      {"datatype-mismatch", VE::kMismatch, true, "disagrees with the others", mismatch_sentence},
      {"root-mismatch", VE::kMismatch, true, "disagrees with the others", mismatch_sentence},
      {"size-mismatch", VE::kMismatch, true, "disagrees with the others", mismatch_sentence},
      {"dtype-mismatch", VE::kMismatch, true, "disagrees with the others", mismatch_sentence},
      {"duplicate-rank-disagrees", VE::kNone, false, "", evidence_sentence},
      {"counters-unavailable", VE::kIncomplete, false, "", evidence_sentence},
      {"in-flight-consistent", VE::kIncomplete, false, "", evidence_sentence},
      {"no-hang-evident", VE::kNone, false, "", evidence_sentence},
      {"startup-hang", VE::kIncomplete, true, "never arrived", startup_hang},
      {"pg-not-issued", VE::kNone, true, "never issued it (its records end before)", record_not_issued},
      {"pg-p2p-unmatched", VE::kNone, true, "never issued the matching send or recv", record_p2p_unmatched},
      {"pg-no-input", VE::kIncomplete, true, "no input holds its records", record_no_input},
      {"pg-queued", VE::kNone, false, "issued it behind its own unfinished work", record_queued},
      {"pg-type-mismatch", VE::kMismatch, true, "issued another collective there", record_mismatch},
      {"pg-size-mismatch", VE::kMismatch, true, "disagrees with the others", record_mismatch},
      {"pg-dtype-mismatch", VE::kMismatch, true, "disagrees with the others", record_mismatch},
  };
  return kinds;
}

const FindingKind& finding_kind(const std::string& name) {
  for (const FindingKind& kind : finding_kinds())
    if (name == kind.name) return kind;
  throw std::logic_error("finding kind '" + name + "' is not in finding_kinds()");
}

std::string evidence_sentence(const Job& job, size_t g, const Finding& finding) {
  std::string text = "Communicator " + job.comms[g].hash_text + ": " +
                     (finding.evidence.empty() ? finding.kind : finding.evidence.front());
  if (finding.evidence.size() > 1) text += "; " + finding.evidence.back();
  return text + ".";
}

std::string pg_label(const CommGroup& group) {
  if (group.pg_name.empty()) return "";
  return "pg " + (group.pg_desc.empty() ? group.pg_name : group.pg_desc);
}

std::string comm_ranks_phrase(const Job& job, size_t g, const std::vector<int>& ranks, bool absent) {
  bool world = static_cast<int>(g) == job.world_comm;
  if (world || absent || ranks.empty()) {
    std::string text = ranks_phrase(ranks);
    return world || ranks.empty() ? text : text + " of that communicator";
  }
  std::vector<int> world_ranks;
  for (int rank : ranks)
    if (const Member* member = job.comms[g].find(rank))
      if (job.world_rank[member->process]) world_ranks.push_back(*job.world_rank[member->process]);
  std::string text = ranks_phrase(ranks) + " of that communicator";
  if (world_ranks.size() == ranks.size()) text = "world " + ranks_phrase(world_ranks) + " (" + text + ")";
  return text;
}

}  // namespace nsc::triage
