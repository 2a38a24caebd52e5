// Drives the triage steps and writes the `ncclscope.triage/1` document:
// merge -> findings -> wait-for graph -> stack classes -> verdict.
#include "triage/triage.h"

#include <algorithm>
#include <memory>
#include <set>

#include "triage/analysis.h"
#include "triage/finding_kinds.h"
#include "triage/fr_match.h"
#include "triage/headline.h"
#include "triage/rank_set.h"
#include "util/errors.h"
#include "util/json_access.h"
#include "util/json_raw.h"
#include "util/parallel.h"
#include "util/phase_times.h"
#include "util/schemas.h"

#ifndef NCCLSCOPE_VERSION
#define NCCLSCOPE_VERSION "0.0.0"
#endif

namespace nsc {
namespace {

using nlohmann::json;
using triage::CommGroup;
using triage::Finding;
using triage::Job;



// The verdict's blame (its culprits, or suspects), which alone decides who a finding may call
// culprit: processes by index, absent ranks by (comm hash, comm rank). Beside it, what each
// process waits on itself (its first edge in the wait-for graph), for `explained_by`.
struct VerdictBlame {
  std::set<int> processes;
  std::set<std::pair<std::string, int>> absent;
  std::vector<std::string> own_wait;  // per process: "waits on rank 3 (AllReduce #4 on 0x..)", or ""

  VerdictBlame(const Job& job, const json& graph) : own_wait(job.processes.size()) {
    for (const char* key : {"root_culprits", "suspects"})
      for (const json& id : graph[key]) {
        const json& node = graph["nodes"][id.get<size_t>()];
        if (id.get<size_t>() < job.processes.size()) processes.insert(id.get<int>());
        else if (node["comm_hash"].is_string()) absent.insert({node["comm_hash"].get<std::string>(), node["comm_rank"].get<int>()});
      }
    for (const json& edge : graph["edges"]) {
      std::vector<int> to;
      for (const json& id : edge["to"])
        if (const json& node = graph["nodes"][id.get<size_t>()]; node["world_rank"].is_number_integer())
          to.push_back(node["world_rank"].get<int>());
      std::string where = edge["comm_hash"].is_string() ? " on " + edge["comm_hash"].get<std::string>() : "";
      std::string text = "on " + triage::ranks_phrase(to) + " (" + json_text(edge["label"]) + where + ")";
      for (const json& id : edge["from"])
        if (id.get<size_t>() < own_wait.size() && own_wait[id.get<size_t>()].empty()) own_wait[id.get<size_t>()] = text;
    }
  }
  bool blames(const CommGroup& group, int rank) const {
    const triage::Member* member = group.find(rank);
    return member ? processes.count(member->process) > 0 : absent.count({group.hash_text, rank}) > 0;
  }
};

// A finding's ranks in world numbering where known; each rank whose world rank is unknown
// goes to `unnamed` with why (never a null in a rank list).
json world_ranks_json(const Job& job, const CommGroup& group, const std::vector<int>& ranks, json* unnamed) {
  json out = json::array();
  bool world = job.world_comm >= 0 && &job.comms[job.world_comm] == &group;
  for (int rank : ranks) {
    const triage::Member* member = group.find(rank);
    if (member != nullptr && job.world_rank[member->process]) out.push_back(*job.world_rank[member->process]);
    else if (world) out.push_back(rank);
    else if (unnamed->size() < 64)
      unnamed->push_back({{"comm_rank", rank},
                          {"why", member ? job.processes[member->process].input_name + " is in no world communicator"
                                         : "no input holds rank " + std::to_string(rank) + " of " + group.hash_text}});
  }
  return out;
}

// "ranks 0-2: wait on rank 3 (AllReduce #4 on 0x88..)": what each far rank the verdict does not
// blame waits on itself.
json explained_by_json(const Job& job, const CommGroup& group, const std::vector<int>& ranks, const VerdictBlame& blame) {
  std::map<std::string, std::vector<int>> ranks_by_wait;
  for (int rank : ranks) {
    const triage::Member* member = group.find(rank);
    if (member == nullptr || !job.world_rank[member->process] || blame.own_wait[member->process].empty()) continue;
    ranks_by_wait[blame.own_wait[member->process]].push_back(*job.world_rank[member->process]);
  }
  json out = json::array();
  for (const auto& [text, world] : ranks_by_wait)
    out.push_back({{"ranks", world}, {"text", std::string(world.size() == 1 ? "waits " : "wait ") + text}});
  return out;
}

json finding_json(const Job& job, const CommGroup& group, const Finding& finding, const VerdictBlame& blame) {
  const triage::FindingKind& kind = triage::finding_kind(finding.kind);
  std::vector<int> blamed, unblamed;
  for (int rank : finding.culprits) (kind.may_blame && blame.blames(group, rank) ? blamed : unblamed).push_back(rank);
  json unnamed = json::array();
  // Field by field, as the graph's nodes: a braced list copies every value and makes a pair of
  // each field first (37,533 communicators' findings at 100,000 ranks).
  json out = json::object();
  out["kind"] = finding.kind;
  out["collective"] = finding.collective.empty() ? json(nullptr) : json(finding.collective);
  out["seq"] = json_or_null(finding.seq);
  out["waiting_ranks"] = world_ranks_json(job, group, finding.waiting, &unnamed);
  out["waited_on_ranks"] = world_ranks_json(job, group, finding.culprits, &unnamed);
  out["culprit_ranks"] = world_ranks_json(job, group, blamed, &unnamed);
  out["waiting_comm_ranks"] = finding.waiting;
  out["waited_on_comm_ranks"] = finding.culprits;
  out["culprit_comm_ranks"] = std::move(blamed);
  out["waited_on_role"] = kind.far_role;
  out["culprits_absent"] = finding.culprits_absent;
  out["explains_hang"] = finding.explains_hang;
  out["evidence"] = finding.evidence;
  if (!finding.torch_op.empty()) out["pytorch_op"] = {{"op", finding.torch_op}, {"seq", json_or_null(finding.torch_seq)}};
  if (!unblamed.empty()) out["explained_by"] = explained_by_json(job, group, unblamed, blame);
  if (!unnamed.empty()) out["unnamed_ranks"] = unnamed;
  for (auto& [key, value] : finding.extra.items()) out[key] = value;
  if (!finding.kernel_waits.is_null()) out["kernel_waits"] = finding.kernel_waits;
  return out;
}

// Start-up findings name launcher ranks (the environment's RANK): no communicator exists.
json startup_json(const Finding& finding) {
  json out = {{"kind", finding.kind}, {"waiting_ranks", finding.waiting}, {"culprit_ranks", finding.culprits},
              {"explains_hang", finding.explains_hang}, {"evidence", finding.evidence}};
  for (auto& [key, value] : finding.extra.items()) out[key] = value;
  return out;
}

json communicator_json(const Job& job, size_t g, const VerdictBlame& blame) {
  const CommGroup& group = job.comms[g];
  json ranks_seen = json::array(), world_ranks = json::array();
  // Parallel to ranks_seen, the inputs' names and the HTML page's counter table: each written as
  // text (a raw value: 100,000 ranks' names or counters in one block, not 100,000 or 600,000 values).
  JsonText seq_launched, inputs;
  seq_launched.begin_array();
  inputs.begin_array();
  for (const triage::Member& member : group.members) {
    ranks_seen.push_back(member.rank);
    const triage::CommView& view = job.comm_of(member);
    seq_launched.begin_object();
    for (int c : triage::kCollectivesByName)
      seq_launched.key(triage::kCollectiveNames[c]).number_or_null(view.seq_launched[c]);
    seq_launched.end_object();
    const auto& world = job.world_rank[member.process];
    world_ranks.push_back(world ? json(*world) : json(nullptr));
    inputs.string(job.processes[member.process].input_name);
  }
  json findings = json::array();
  for (const Finding& finding : job.findings[g]) findings.push_back(finding_json(job, group, finding, blame));
  json out = json::object();  // field by field, as finding_json
  out["comm_hash"] = group.hash_text;
  out["nranks"] = group.nranks ? json(*group.nranks) : json(nullptr);
  out["is_world"] = static_cast<int>(g) == job.world_comm;
  out["process_group"] = group.pg_name.empty() ? json(nullptr) : json({{"name", group.pg_name}, {"desc", group.pg_desc}});
  out["ranks_seen"] = std::move(ranks_seen);
  out["world_ranks"] = std::move(world_ranks);
  out["inputs"] = raw_json(inputs.end_array().text());
  out["seq_launched"] = raw_json(seq_launched.end_array().text());
  out["missing_ranks"] = group.missing_ranks;
  out["duplicate_inputs"] = group.duplicates;
  out["warnings"] = group.warnings;
  out["findings"] = std::move(findings);
  return out;
}

// A mismatch PyTorch's or NCCL's flight recorder saw (host counters cannot see it).
bool is_recorded_mismatch(const Finding& finding) {
  return triage::finding_kind(finding.kind).effect == triage::VerdictEffect::kMismatch &&
         finding.extra.contains("source") && finding.seq;
}

// PyTorch dump files that do not belong with the others (another job's process groups, a
// second dump of one rank) are unusable inputs, named with why; the rest are triaged.
void set_aside_foreign_dumps(std::vector<triage::ProcessView>* processes, std::vector<TriageFailure>* failures) {
  std::vector<size_t> dumps;
  std::vector<const torch::FrRankRecords*> records;
  for (size_t p = 0; p < processes->size(); ++p)
    if ((*processes)[p].kind == "fr-dump" && (*processes)[p].fr_records) {
      dumps.push_back(p);
      records.push_back((*processes)[p].fr_records.get());
    }
  std::vector<std::string> why = triage::fr_dump_conflicts(records);
  std::map<int, std::string> first_of_rank;
  for (size_t d = 0; d < dumps.size(); ++d) {
    triage::ProcessView& process = (*processes)[dumps[d]];
    if (why[d].empty() && process.launcher_rank) {
      auto [found, added] = first_of_rank.emplace(*process.launcher_rank, process.input_name);
      if (!added) why[d] = "a second dump of rank " + std::to_string(*process.launcher_rank) + " (first: " + found->second + ")";
    }
    if (!why[d].empty()) process.kind = "fr-dump-set-aside";
    if (!why[d].empty()) failures->push_back({process.input_name, "fr-dump", process.input_name + ": " + why[d] + "; set aside"});
  }
  processes->erase(std::remove_if(processes->begin(), processes->end(),
                                  [](const triage::ProcessView& process) { return process.kind == "fr-dump-set-aside"; }),
                   processes->end());
}

std::string finding_sentence(const Job& job, size_t g, const Finding& finding) {
  return triage::finding_kind(finding.kind).sentence(job, g, finding);
}

// Culprits named in the verdict: the graph's root culprits (chain ends).
json culprits_json(const Job& job, const json& graph) {
  json culprits = json::array();
  for (const json& id : graph["root_culprits"]) {
    const json& node = graph["nodes"][id.get<size_t>()];
    culprits.push_back({{"node", id}, {"label", node["label"]}, {"world_rank", node["world_rank"]},
                        {"input", node["input"]}, {"doing", node["doing"]}});
  }
  (void)job;
  return culprits;
}

std::string describe_nodes(const json& graph, const std::vector<int>& ids) {
  std::map<std::string, std::vector<int>> by_doing;
  std::vector<std::string> others;
  for (int id : ids) {
    const json& node = graph["nodes"][id];
    if (node["world_rank"].is_number_integer())
      by_doing[node["doing"].get<std::string>()].push_back(node["world_rank"].get<int>());
    else
      others.push_back(node["label"].get<std::string>() + ": " + node["doing"].get<std::string>());
  }
  std::string text = triage::grouped_phrase(by_doing, 4);
  for (size_t i = 0; i < others.size() && i < 3; ++i) text += (text.empty() ? "" : "; ") + others[i];
  return text;
}

std::string node_ranks_phrase(const json& graph, const json& ids) {
  std::vector<int> ranks;
  std::string others;
  for (const json& id : ids) {
    const json& node = graph["nodes"][id.get<size_t>()];
    if (node["world_rank"].is_number_integer()) ranks.push_back(node["world_rank"].get<int>());
    else others += (others.empty() ? "" : ", ") + node["label"].get<std::string>();
  }
  std::string text = ranks.empty() ? "" : triage::ranks_phrase(ranks);
  return text + (text.empty() || others.empty() ? "" : ", ") + others;
}

// What blame decided about cycles and undecided chain ends, one sentence each (blame.h).
// `gpu_busy`: a gpu-busy finding explains the hang, so the cycle's breaker skipped nothing.
std::string blame_sentences(const json& graph, bool gpu_busy) {
  std::string text;
  auto cycle_holding = [&](const json& nodes) -> json {
    for (const json& cycle : graph["cycles"])
      for (const json& id : cycle)
        if (!nodes.empty() && id == nodes[0]) return cycle;
    return json::array();
  };
  for (const json& reason : graph["blame"]) {
    const std::string kind = reason["kind"];
    std::string who = node_ranks_phrase(graph, reason["nodes"]);
    bool one = reason["nodes"].size() == 1;
    if (kind == "skipped-in-cycle")
      text += " " + node_ranks_phrase(graph, cycle_holding(reason["nodes"])) + " wait on each other in a cycle; " + who +
              (one ? " alone explains" : " alone explain") + " every wait: " +
              (gpu_busy ? std::string(one ? "its GPU" : "their GPUs") + " never started an operation the others entered"
                        : std::string(one ? "it" : "they") + " skipped an operation the others issued") +
              ", and " + (one ? "its own wait follows" : "their own waits follow") + " from that.";
    else if (kind == "cycle-undecided")
      text += " Deadlock: " + node_ranks_phrase(graph, cycle_holding(reason["nodes"])) +
              " wait on each other in a cycle, and any one of " + who +
              " alone would explain it; the inputs do not say which skipped.";
    else if (kind == "order-inversion")
      text += " Deadlock: " + who + " wait on each other in a cycle, each in an operation it issued and owing the "
              "one the other waits in: they issued the two in opposite orders; nobody skipped.";
    else if (kind == "not-reached")
      text += " " + who + (one ? " is" : " are") + " waited on for an operation " + (one ? "it" : "they") +
              " issued but " + (one ? "its" : "their") + " GPU has not reached; what " + (one ? "it waits" : "they wait") +
              " on is not visible.";
  }
  return text;
}

std::string verdict_summary(const Job& job, const std::string& verdict, const json& graph) {
  if (verdict == "crash") return job.crash.summary;
  if (verdict == "error") {
    std::string text = "Error: nothing to triage.";
    if (!job.errors.empty()) text = "Error: " + job.errors.front() + ".";
    return text;
  }
  std::string text;
  if (verdict == "hang" || verdict == "deadlock") {
    text = verdict == "hang" ? "Hang." : "Deadlock.";
    bool gpu_busy = false;
    for (const std::vector<Finding>& findings : job.findings)
      for (const Finding& finding : findings) gpu_busy = gpu_busy || (finding.explains_hang && finding.kind == "gpu-busy");
    text += blame_sentences(graph, gpu_busy);
    for (const Finding& finding : job.startup)
      if (finding.explains_hang) text += " " + finding_sentence(job, 0, finding);
    // Findings whose culprits end a chain come first.
    std::set<int> roots;
    for (const json& id : graph["root_culprits"]) roots.insert(id.get<int>());
    std::vector<std::pair<int, std::string>> sentences;
    for (size_t g = 0; g < job.comms.size(); ++g)
      for (const Finding& finding : job.findings[g]) {
        if (!finding.explains_hang && !is_recorded_mismatch(finding)) continue;
        bool root = false;
        for (int rank : finding.culprits)
          if (const triage::Member* member = job.comms[g].find(rank)) root = root || roots.count(member->process);
        int priority = (root || finding.culprits_absent ? 0 : 1) * 10 + (finding.kind == "absent-ranks" ? 1 : 0);
        if (is_recorded_mismatch(finding)) priority = -1;  // what host state cannot see goes first
        sentences.emplace_back(priority, finding_sentence(job, g, finding));
      }
    for (const Finding& finding : job.torch_findings) {
      if (!finding.explains_hang) continue;
      bool root = false;
      for (int rank : finding.culprits)
        for (size_t p = 0; p < job.processes.size(); ++p)
          root = root || (job.world_rank[p] == rank && roots.count(static_cast<int>(p)));
      sentences.emplace_back(root ? 0 : 10, finding_sentence(job, 0, finding));
    }
    std::stable_sort(sentences.begin(), sentences.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t s = 0; s < sentences.size() && s < 3; ++s) text += " " + sentences[s].second;
    if (sentences.size() > 3) text += " (" + std::to_string(sentences.size() - 3) + " more findings below.)";
    // The flight recorder's chain behind the first waiting rank, when one joins a finding.
    if (!job.recorder.is_null())
      for (const json& chain : job.recorder["chains"])
        if (!chain["finding"].is_null()) {
          text += " Chain (flight recorder): " + chain["text"].get<std::string>() + ".";
          break;
        }
    text += job.kernel_sentence;
    std::vector<int> root_ids;
    for (const json& id : graph["root_culprits"]) root_ids.push_back(id.get<int>());
    if (!root_ids.empty()) text += " Culprit: " + describe_nodes(graph, root_ids) + ".";
    std::vector<int> suspect_ids;
    for (const json& id : graph["suspects"]) suspect_ids.push_back(id.get<int>());
    if (!suspect_ids.empty()) text += " Suspects (undecided): " + describe_nodes(graph, suspect_ids) + ".";
    std::vector<int> waiting_ids;
    for (const json& node : graph["nodes"])
      if (node["role"] == "waiting") waiting_ids.push_back(node["id"].get<int>());
    if (!waiting_ids.empty() && waiting_ids.size() <= 4096) text += " Waiting: " + describe_nodes(graph, waiting_ids) + ".";
    return text;
  }
  if (verdict == "mismatch") {
    text = "Mismatch: no hang is evident, but ranks launched the same collective with different arguments.";
    size_t told = 0;
    for (size_t g = 0; g < job.comms.size(); ++g)
      for (const Finding& finding : job.findings[g])
        if (is_recorded_mismatch(finding) && told++ < 3) text += " " + finding_sentence(job, g, finding);
    for (const Finding& finding : job.torch_findings)
      if (triage::finding_kind(finding.kind).effect == triage::VerdictEffect::kMismatch && told++ < 3)
        text += " " + finding_sentence(job, 0, finding);
    if (told > 3) text += " (" + std::to_string(told - 3) + " more findings below.)";
    return text + job.kernel_sentence + " NCCL does not check this: such a collective reads and writes different sizes on different "
                  "ranks and completes with wrong results or hangs.";
  }
  if (verdict == "incomplete") {
    text = "Incomplete: no culprit can be named from these inputs.";
    for (size_t g = 0; g < job.comms.size(); ++g)
      for (const Finding& finding : job.findings[g])
        if (triage::finding_kind(finding.kind).effect == triage::VerdictEffect::kIncomplete)
          text += " " + triage::evidence_sentence(job, g, finding);
    for (const Finding& finding : job.torch_findings)
      if (triage::finding_kind(finding.kind).effect == triage::VerdictEffect::kIncomplete)
        text += " " + finding_sentence(job, 0, finding);
    std::vector<int> gpu_waiting;
    for (size_t p = 0; p < job.processes.size(); ++p)
      if (const triage::ThreadView* thread = job.processes[p].principal())
        if (triage::is_gpu_wait(thread->blocked_in) || triage::is_nccl_host_call(thread->blocked_in) ||
            triage::guessed_gpu_wait(*thread))
          gpu_waiting.push_back(static_cast<int>(p));
    if (!gpu_waiting.empty())
      text += " Host threads still wait: " + describe_nodes(graph, gpu_waiting) + ".";
    std::vector<int> suspects;
    for (const char* key : {"root_culprits", "suspects"})
      for (const json& id : graph[key]) suspects.push_back(id.get<int>());
    if (!suspects.empty()) text += " Suspects: " + describe_nodes(graph, suspects) + ".";
    return text + job.kernel_sentence;
  }
  return "No hang evident: on every communicator all ranks launched the same collectives, and nothing is "
         "planned or in flight. Agreeing counters do not prove correctness (a size mismatch can complete "
         "silently), but triage reports no hang it cannot see." + job.kernel_sentence;
}

// The graph blames the crash's origin: its culprits and suspects, roles to match; a node the
// hang analysis blamed that is not the origin is only waiting.
void blame_crash_origin(const triage::CrashAnalysis& crash, json* graph) {
  (*graph)["root_culprits"] = crash.culprit_nodes;
  (*graph)["suspects"] = crash.suspect_nodes;
  std::set<int> culprits(crash.culprit_nodes.begin(), crash.culprit_nodes.end());
  std::set<int> suspects(crash.suspect_nodes.begin(), crash.suspect_nodes.end());
  for (json& node : (*graph)["nodes"]) {
    int id = node["id"].get<int>();
    if (culprits.count(id)) node["role"] = "culprit";
    else if (suspects.count(id)) node["role"] = "suspect";
    else if (node["role"] == "culprit" || node["role"] == "suspect" || node["role"] == "waiting-culprit") node["role"] = "waiting";
  }
}

// A graph node's waits_in, read back from its raw text to be added to.
json& waits_in_of(json* graph, size_t node) {
  json& waits_in = (*graph)["nodes"][node]["waits_in"];
  if (is_raw_json(waits_in)) waits_in = raw_json_value(waits_in);
  return waits_in;
}

bool has_order_inversion(const json& graph) {
  for (const json& reason : graph["blame"])
    if (reason["kind"] == "order-inversion") return true;
  return false;
}

std::string decide_verdict(const Job& job) {
  if (job.unrelated_jobs || job.processes.empty()) return "error";
  bool incomplete = false, mismatch = false;
  for (const Finding& finding : job.startup)
    if (finding.explains_hang) return "hang";
  if (!job.startup.empty()) incomplete = true;  // no communicator: never "no-hang"
  for (const Finding& finding : job.torch_findings) {  // dumps alone: PyTorch's records decide
    if (finding.explains_hang) return "hang";
    triage::VerdictEffect effect = triage::finding_kind(finding.kind).effect;
    mismatch = mismatch || effect == triage::VerdictEffect::kMismatch;
    incomplete = incomplete || effect == triage::VerdictEffect::kIncomplete;
  }
  for (size_t g = 0; g < job.comms.size(); ++g)
    for (const Finding& finding : job.findings[g]) {
      if (finding.explains_hang) return "hang";
      triage::VerdictEffect effect = triage::finding_kind(finding.kind).effect;
      mismatch = mismatch || effect == triage::VerdictEffect::kMismatch;
      incomplete = incomplete || effect == triage::VerdictEffect::kIncomplete;
    }
  if (mismatch) return "mismatch";
  // Dumps alone: never no-hang about ranks no dump holds, nor while records sit in an operation.
  if (job.comms.empty() && !triage::ranks_without_records(job).empty()) return "incomplete";
  for (bool unfinished : job.records_unfinished)
    if (job.comms.empty() && unfinished) return "incomplete";
  for (const triage::ProcessView& process : job.processes)
    if (const triage::ThreadView* thread = process.principal())
      incomplete = incomplete || triage::is_gpu_wait(thread->blocked_in) ||
                   triage::is_nccl_host_call(thread->blocked_in) || triage::guessed_gpu_wait(*thread);
  return incomplete ? "incomplete" : "no-hang";
}

// Threads are read by the graph, the verdict's sentences and the stack classes: freed after
// those, so that the sections built after them reuse the memory (about 1.6 KB a rank).
void release_threads(Job* job) {
  for (triage::ProcessView& process : job->processes) {
    std::vector<triage::ThreadView>().swap(process.threads);
    process.principal_thread = -1;
  }
}

// Each process's entry as compact text (util/json_raw.h): 100,000 of them as documents were
// about 0.1 GB at the peak and 0.4 s to build. Keys in nlohmann's (byte) order.
json input_entry(const Job& job, size_t p) {
  const triage::ProcessView& process = job.processes[p];
  std::vector<std::string> problems = triage::input_problems(process);
  JsonText entry;
  entry.begin_object().key("build_id_mismatch");
  if (process.build_id_mismatch) entry.boolean(*process.build_id_mismatch);
  else entry.null();
  entry.key("communicators").begin_array();
  for (const triage::CommView& comm : process.comms) entry.string(comm.comm_hash_text());
  entry.end_array().key("hostname").string_or_null(process.hostname);
  entry.key("kind").string(process.kind).key("name").string(process.input_name);
  entry.key("nccl_version").string_or_null(process.nccl_version).key("pid").number_or_null(process.pid);
  entry.key("problems").begin_array();
  for (const std::string& problem : problems) entry.string(problem);
  entry.end_array().key("snapshot_errors").number(static_cast<int64_t>(process.document_errors.size()));
  entry.key("stack_notes").begin_array();
  for (const std::string& note : process.stack_notes) entry.string(note);
  entry.end_array().key("status").string(problems.empty() ? "ok" : "partial");
  entry.key("world_rank").number_or_null(job.world_rank[p] ? std::optional<int64_t>(*job.world_rank[p]) : std::nullopt);
  return raw_json(entry.end_object().text());
}

// Kept reachable (LeakSanitizer counts it as in use), never destroyed.
void leave_to_exit(std::unique_ptr<Job> job) {
  static auto* kept = new std::vector<std::unique_ptr<Job>>;
  kept->push_back(std::move(job));
}

// Each process's entry: what it reads no phase after the merge changes.
json input_entries(const Job& job) {
  return parallel_json_array(job.processes.size(), [&](size_t p) { return input_entry(job, p); });
}

json inputs_json(json inputs, const std::vector<TriageFailure>& failures) {
  for (const TriageFailure& failure : failures)
    inputs.push_back({{"name", failure.name}, {"kind", failure.kind}, {"status", failure.status},
                      {failure.status == "error" ? "error" : "why", failure.error}});
  return inputs;
}

}  // namespace

nlohmann::json triage_processes(std::vector<triage::ProcessView> processes,
                                const std::vector<TriageFailure>& input_failures,
                                const TriageOptions& options, std::vector<triage::KernelView> kernel_views,
                                std::vector<triage::NumericsView> numerics_views) {
  std::vector<TriageFailure> failures = input_failures;
  auto analysis = std::make_unique<Job>();
  Job& job = *analysis;
  PhaseTimer communicators_timer("triage.communicators");
  set_aside_foreign_dumps(&processes, &failures);
  size_t kept = 0;  // the job's processes closed up in place: 100,000 ranks are not moved
  for (triage::ProcessView& process : processes) {
    triage::add_recorder_communicators(&process);
    // A process without NCCL still belongs to the job when its launcher gave it a rank
    // (a rank that never got as far as importing NCCL: a start-up hang's culprit).
    if (process.comms.empty() && !process.nccl_found && !process.launcher_rank) {
      failures.push_back({process.input_name, process.kind,
                          process.input_name + ": no NCCL in this process (no libnccl, no communicator)" +
                              triage::damage_suffix(process)});
      continue;
    }
    if (&processes[kept] != &process) processes[kept] = std::move(process);
    ++kept;
  }
  processes.erase(processes.begin() + static_cast<std::ptrdiff_t>(kept), processes.end());
  job.processes = std::move(processes);
  {
    PhaseTimer merge_timer("triage.communicators.merge");
    triage::merge_communicators(&job);
  }
  triage::find_unrelated_jobs(&job);
  // The stack classes read only the threads and the world ranks, which nothing changes from here
  // to release_threads: built on a pool thread, which then joins the findings (this thread
  // analyzes the world communicator alone meanwhile).
  BesideResult<json> stack_classes = run_beside([&job] {
    PhaseTimer classes_timer("triage.stack_classes");
    return triage::build_stack_classes(job);
  });
  PhaseTimer findings_timer("triage.communicators.findings");
  triage::analyze_communicators(&job);
  findings_timer.stop();
  triage::analyze_startup(&job);
  triage::add_duplicate_findings(&job);
  for (const triage::DuplicateInput& duplicate : job.duplicate_inputs)
    failures.push_back({duplicate.name, duplicate.kind,
                        duplicate.name + ": every communicator rank it holds is also in " + duplicate.kept +
                            " (kept by content): set aside as a duplicate",
                        "duplicate"});
  communicators_timer.stop();
  PhaseTimer joins_timer("triage.joins");
  triage::analyze_recorder(&job);
  triage::join_torch_records(&job);
  triage::match_torch_records(&job);
  triage::join_kernel_views(&job, std::move(kernel_views));
  triage::join_numerics(&job, std::move(numerics_views));
  joins_timer.stop();
  PhaseTimer verdict_timer("triage.verdict");
  json report = {{"schema", kTriageSchema},
                 {"tool", {{"name", "ncclscope"}, {"version", NCCLSCOPE_VERSION}}}};
  std::string verdict = decide_verdict(job);
  PhaseTimer graph_timer("triage.verdict.graph");
  json graph = triage::build_wait_graph(&job);
  graph_timer.stop();
  // Built on a pool thread while this one decides a crash and writes the headline and summary
  // (on one CPU; begun before the graph, they kept the pool from the graph's nodes).
  BesideResult<json> entries = run_beside([&job] { return input_entries(job); });
  // Absence is never evidence: a hang that blames only ranks without usable input is undecided.
  if (verdict == "hang" && graph["root_culprits"].empty() && !graph["no_input_suspects"].empty()) verdict = "incomplete";
  // A job that died: its origin replaces the chain ends (a timeout's origin is the hang's culprit).
  json hang_headline;  // the report's headline too when the verdict stays "hang" (nothing it reads changes)
  if (verdict != "error") {
    PhaseTimer crash_timer("triage.verdict.crash");
    if (verdict == "hang") hang_headline = triage::build_headline(job, verdict, graph);
    job.crash = triage::analyze_crash(job, verdict, graph, hang_headline);
    crash_timer.stop();
    if (job.crash.crashed) {
      verdict = "crash";
      blame_crash_origin(job.crash, &graph);
    }
  }
  // Two ranks each wait in an operation the other issued later, nobody skipped (blame.cc):
  // a lock-order inversion is its own verdict, with no culprit.
  if (verdict == "hang" && graph["root_culprits"].empty() && has_order_inversion(graph)) verdict = "deadlock";
  // Only a hang or a crash names culprits: elsewhere the chain ends are suspects, in the graph too.
  if (verdict != "hang" && verdict != "crash")
    for (json& node : graph["nodes"])
      if (node["role"] == "culprit") node["role"] = "suspect";
  report["verdict"] = verdict;
  verdict_timer.stop();
  PhaseTimer report_timer("triage.report");
  report["headline"] = verdict == "hang" && !hang_headline.is_null() ? std::move(hang_headline)
                                                                     : triage::build_headline(job, verdict, graph);
  report["summary"] = verdict_summary(job, verdict, graph);
  if (std::string note = triage::damaged_inputs_note(job.processes); !note.empty())
    report["summary"] = report["summary"].get<std::string>() + " " + note;
  json culprits = culprits_json(job, graph);
  json culprit_ranks = json::array();
  for (const json& culprit : culprits)
    if (culprit["world_rank"].is_number_integer()) culprit_ranks.push_back(culprit["world_rank"]);
  // Only a hang or a crash has culprits; otherwise the chain ends are suspects (e.g. a rank with no input).
  bool hang = verdict == "hang" || verdict == "crash";
  report["culprit_ranks"] = hang ? culprit_ranks : json::array();
  report["culprits"] = hang ? culprits : json::array();
  json suspect_ranks = json::array();
  for (const json& id : graph["suspects"]) {
    const json& node = graph["nodes"][id.get<size_t>()];
    if (node["world_rank"].is_number_integer()) suspect_ranks.push_back(node["world_rank"]);
  }
  if (!hang) suspect_ranks.insert(suspect_ranks.begin(), culprit_ranks.begin(), culprit_ranks.end());
  // By rank, whatever the input order (a crash's suspects keep their order: earliest failure first).
  if (verdict != "crash") std::sort(suspect_ranks.begin(), suspect_ranks.end());
  report["suspect_ranks"] = std::move(suspect_ranks);
  report["world_comm"] = job.world_comm >= 0 ? json(job.comms[job.world_comm].hash_text) : json(nullptr);
  VerdictBlame blame(job, graph);
  json startup = json::array();
  for (const Finding& finding : job.startup) startup.push_back(startup_json(finding));
  report["startup"] = std::move(startup);
  if (!job.recorder.is_null()) {
    // Each chain also says what its rank's node waits in.
    for (const json& chain : job.recorder["chains"])
      waits_in_of(&graph, chain["node"].get<size_t>())
          .push_back({{"what", "stream-chain"}, {"tid", chain["tid"]}, {"text", chain["text"]}});
    report["recorder"] = job.recorder;
  }
  if (!job.kernel_views.is_null()) {
    // Each rank's kernels are also what its graph node waits in.
    for (size_t p = 0; p < job.process_kernels.size(); ++p)
      for (const json& kernel : job.process_kernels[p]) waits_in_of(&graph, p).push_back(kernel);
    report["kernel_views"] = job.kernel_views;
  }
  if (!job.numerics.is_null()) report["numerics"] = job.numerics;
  if (!job.flight_recorder.is_null()) {
    json findings = json::array();
    for (const Finding& finding : job.torch_findings)
      findings.push_back({{"kind", finding.kind}, {"collective", finding.collective}, {"seq", json_or_null(finding.seq)},
                          {"process_group", finding.extra.value("pg", json(nullptr))},
                          {"waiting_ranks", finding.waiting}, {"waited_on_ranks", finding.culprits},
                          {"waited_on_role", triage::finding_kind(finding.kind).far_role},
                          {"explains_hang", finding.explains_hang}, {"evidence", finding.evidence},
                          {"sentence", finding_sentence(job, 0, finding)}});
    job.flight_recorder["findings"] = findings;
    job.flight_recorder["decides_verdict"] = job.comms.empty() && !job.torch_findings.empty();
    report["flight_recorder"] = job.flight_recorder;
  }
  report["crash"] = triage::crash_json(job.crash);
  report["graph"] = std::move(graph);
  report["stack_classes"] = stack_classes.get();
  // The threads' last readers are done: the communicators section, the largest built from here
  // on, reuses their memory (fresh memory costs more than the work put in it, docs/triage.md "Scale").
  // Freed once the inputs section's pool task is done: freed while it allocated, half the blocks
  // waited for its heap's lock (0.22 s against 0.1 s at 100,000 ranks).
  json inputs = entries.get();
  release_threads(&job);
  report["communicators"] =
      parallel_json_array(job.comms.size(), [&](size_t g) { return communicator_json(job, g, blame); }, 64);
  report_timer.stop();
  PhaseTimer inputs_timer("triage.inputs");
  report["inputs"] = inputs_json(std::move(inputs), failures);
  if (!job.kernel_views.is_null())
    for (const json& view : job.kernel_views["inputs"]) {
      bool joined = !view["joined_to"].is_null();
      json entry = {{"name", view["input"]}, {"kind", "kernels"}, {"status", joined ? "ok" : "not-joined"},
                    {"pid", view["pid"]}, {"joined_to", joined ? view["joined_to"]["input"] : json(nullptr)}};
      if (!joined) entry["why"] = view["warnings"].empty() ? json("") : view["warnings"][0];
      report["inputs"].push_back(entry);
    }
  if (!job.numerics.is_null())
    for (const json& view : job.numerics["inputs"])
      if (view["source"] == "input")
        report["inputs"].push_back({{"name", view["input"]}, {"kind", "numerics"},
                                    {"status", view["joined"].get<size_t>() > 0 ? "ok" : "not-joined"}});
  inputs_timer.stop();
  json errors = json::array();
  for (const TriageFailure& failure : failures)
    if (failure.status == "error") errors.push_back({{"input", failure.name}, {"message", failure.error}});
  for (const triage::ProcessView& process : job.processes)
    if (std::string damage = triage::damage_text(process); !damage.empty())
      errors.push_back({{"input", process.input_name}, {"message", process.input_name + ": " + damage}});
  for (const std::string& error : job.errors) errors.push_back({{"input", nullptr}, {"message", error}});
  if (job.processes.empty() && failures.empty())
    errors.push_back({{"input", nullptr}, {"message", "no input given"}});
  report["errors"] = errors;
  if (options.leave_analysis_to_exit) leave_to_exit(std::move(analysis));
  return report;
}

nlohmann::json triage_documents(const std::vector<TriageInput>& inputs, const TriageOptions& options) {
  std::vector<triage::ProcessView> processes;
  std::vector<TriageFailure> failures;
  std::vector<triage::KernelView> kernel_views;
  std::vector<triage::NumericsView> numerics_views;
  for (const TriageInput& input : inputs) {
    if (!input.error.empty()) {
      failures.push_back({input.name, input.kind, input.error});
      continue;
    }
    try {
      if (triage::is_kernel_view_document(input.document)) {
        kernel_views.push_back(triage::summarize_kernel_view(input.document, input.name));
        continue;
      }
      if (triage::is_numerics_document(input.document)) {
        numerics_views.push_back(triage::summarize_numerics_document(input.document, input.name, "input"));
        continue;
      }
      processes.push_back(triage::summarize_state_document(input.document, input.name, input.kind));
    } catch (const BadInput& error) {
      failures.push_back({input.name, input.kind, error.what()});
    }
  }
  return triage_processes(std::move(processes), failures, options, std::move(kernel_views),
                          std::move(numerics_views));
}

int triage_exit_code(const nlohmann::json& report) {
  if (report.value("verdict", "error") == "error") return 2;
  for (const json& input : report["inputs"]) {
    std::string status = json_string_member(input, "status").value_or("ok");
    if (status == "error" || status == "partial") return 1;
  }
  for (const json& comm : report["communicators"])
    if (!comm["duplicate_inputs"].empty()) return 1;
  return 0;
}

}  // namespace nsc
