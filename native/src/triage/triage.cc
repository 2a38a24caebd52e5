// Drives the triage steps and writes the `ncclscope.triage/1` document:
// merge -> findings -> wait-for graph -> stack classes -> verdict.
#include "triage/triage.h"

#include <algorithm>
#include <set>

#include "triage/analysis.h"
#include "triage/rank_set.h"
#include "util/errors.h"
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

json maybe_json(const triage::Maybe<int64_t>& value) { return value ? json(*value) : json(nullptr); }

// World ranks (null when a rank's world rank is unknown); the communicator's own beside.
json world_ranks_json(const Job& job, const CommGroup& group, const std::vector<int>& ranks) {
  json out = json::array();
  bool world = job.world_comm >= 0 && &job.comms[job.world_comm] == &group;
  for (int rank : ranks) {
    const triage::Member* member = group.find(rank);
    if (member != nullptr && job.world_rank[member->process]) out.push_back(*job.world_rank[member->process]);
    else out.push_back(world ? json(rank) : json(nullptr));
  }
  return out;
}

json finding_json(const Job& job, const CommGroup& group, const Finding& finding) {
  std::vector<int> blamed = finding.blames_culprits ? finding.culprits : std::vector<int>{};
  json out = {{"kind", finding.kind},
              {"collective", finding.collective.empty() ? json(nullptr) : json(finding.collective)},
              {"seq", maybe_json(finding.seq)},
              {"waiting_ranks", world_ranks_json(job, group, finding.waiting)},
              {"culprit_ranks", world_ranks_json(job, group, blamed)},
              {"waiting_comm_ranks", finding.waiting},
              {"culprit_comm_ranks", blamed},
              {"culprits_absent", finding.culprits_absent},
              {"explains_hang", finding.explains_hang},
              {"evidence", finding.evidence}};
  if (!finding.blames_culprits) {
    out["waited_on_ranks"] = world_ranks_json(job, group, finding.culprits);
    out["waited_on_comm_ranks"] = finding.culprits;
  }
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

json communicator_json(const Job& job, size_t g) {
  const CommGroup& group = job.comms[g];
  json ranks_seen = json::array(), world_ranks = json::array(), inputs = json::array();
  json seq_launched = json::array();  // parallel to ranks_seen: the HTML page's counter table
  for (const triage::Member& member : group.members) {
    ranks_seen.push_back(member.rank);
    json counters = json::object();
    const triage::CommView& view = job.comm_of(member);
    for (int c = 0; c < triage::kNumCollectives; ++c)
      counters[triage::kCollectiveNames[c]] = view.seq_launched[c] ? json(*view.seq_launched[c]) : json(nullptr);
    seq_launched.push_back(counters);
    const auto& world = job.world_rank[member.process];
    world_ranks.push_back(world ? json(*world) : json(nullptr));
    inputs.push_back(job.processes[member.process].input_name);
  }
  json findings = json::array();
  for (const Finding& finding : job.findings[g]) findings.push_back(finding_json(job, group, finding));
  return {{"comm_hash", group.hash_text},
          {"nranks", group.nranks ? json(*group.nranks) : json(nullptr)},
          {"is_world", static_cast<int>(g) == job.world_comm},
          {"process_group", group.pg_name.empty() ? json(nullptr)
                                                  : json({{"name", group.pg_name}, {"desc", group.pg_desc}})},
          {"ranks_seen", ranks_seen},
          {"world_ranks", world_ranks},
          {"inputs", inputs},
          {"seq_launched", seq_launched},
          {"missing_ranks", group.missing_ranks},
          {"duplicate_inputs", group.duplicates},
          {"warnings", group.warnings},
          {"findings", findings}};
}

// "rank 1" in the world; "world rank 1 (rank 0 of this communicator)" elsewhere.
std::string comm_ranks_phrase(const Job& job, size_t g, const std::vector<int>& ranks, bool absent) {
  if (static_cast<int>(g) == job.world_comm || absent || ranks.empty()) {
    std::string text = triage::ranks_phrase(ranks);
    return static_cast<int>(g) == job.world_comm || ranks.empty() ? text : text + " of that communicator";
  }
  std::vector<int> world;
  for (int rank : ranks)
    if (const triage::Member* member = job.comms[g].find(rank))
      if (job.world_rank[member->process]) world.push_back(*job.world_rank[member->process]);
  std::string text = triage::ranks_phrase(ranks) + " of that communicator";
  if (world.size() == ranks.size()) text = "world " + triage::ranks_phrase(world) + " (" + text + ")";
  return text;
}

// A "<field>-mismatch" finding from the flight recorder (recorder_join.cc).
bool is_recorded_mismatch(const Finding& finding) {
  return finding.extra.contains("source") && finding.seq &&
         (finding.extra["source"] == "flight-recorder" || finding.extra["source"] == "pytorch-flight-recorder");
}

// "pg tp0" (PyTorch's description, else its name) of a communicator, "" when unknown.
std::string pg_label(const triage::CommGroup& group) {
  if (group.pg_name.empty()) return "";
  return "pg " + (group.pg_desc.empty() ? group.pg_name : group.pg_desc);
}

std::string finding_sentence(const Job& job, size_t g, const Finding& finding) {
  const CommGroup& group = job.comms[g];
  std::string pg = pg_label(group);
  std::string size = group.nranks ? std::to_string(*group.nranks) + " ranks" : "";
  std::string label = pg.empty() ? size : size.empty() ? pg : pg + ", " + size;
  std::string where = "On communicator " + group.hash_text + (label.empty() ? "" : " (" + label + ")");
  std::string culprits = comm_ranks_phrase(job, g, finding.culprits, finding.culprits_absent);
  std::string waiting = comm_ranks_phrase(job, g, finding.waiting, false);
  std::string op = finding.collective + (finding.seq ? " #" + std::to_string(*finding.seq) : "");
  if (finding.kind == "missing-collective" && finding.collective.empty())  // counted by collOpCount
    op = "collective" + (finding.seq ? " #" + std::to_string(*finding.seq) : "") + " (of a type NCCL before 2.23 does not count)";
  if (finding.kind == "missing-collective" && finding.extra.contains("counted_with")) {
    std::string others;
    for (const json& hash : finding.extra["counted_with"]) others += (others.empty() ? "" : ", ") + hash.get<std::string>();
    return where + ", " + culprits + " launched fewer collectives than " + waiting + " on it or on " +
           others + " (one count for both: splitShare), and " + waiting + " " + triage::verb_for(finding.waiting, "waits", "wait") + ".";
  }
  if (finding.kind == "missing-collective")
    return where + ", " + culprits + " never launched " + op + ", which " + waiting + " launched and " +
           triage::verb_for(finding.waiting, "waits", "wait") + " for.";
  if (finding.kind == "collective-mismatch") {
    std::string instead;
    if (finding.extra.contains("groups") && !finding.extra["groups"].empty())
      instead = finding.extra["groups"][0].value("collective", "");
    return where + ", " + culprits + " launched " + (instead.empty() ? "a different collective" : instead) +
           " where " + waiting + " launched " + op + " (same position, different collective).";
  }
  if (finding.kind == "p2p-unmatched") {
    std::string matching = finding.collective == "Send" ? "Recv" : finding.collective == "Recv" ? "Send" : "Send/Recv";
    return where + ", " + waiting + " " + triage::verb_for(finding.waiting, "waits", "wait") + " in " +
           finding.collective + " for a matching " + matching + " that " + culprits + " never posted.";
  }
  if (finding.kind == "stuck-before-launch")
    return where + ", " + waiting + " " + triage::verb_for(finding.waiting, "is", "are") + " stuck inside an NCCL call before launch" +
           (finding.collective.empty() ? "" : " (" + op + " planned)") + ", waiting for " + culprits +
           ", which never made that call.";
  if (finding.kind == "aborted-rank" || finding.kind == "errored-rank")
    return where + ", " + culprits + (finding.kind == "aborted-rank" ? " aborted" : " failed") +
           (finding.evidence.empty() ? "" : " (" + finding.evidence.front() + ")") +
           (finding.waiting.empty() ? "." : "; " + waiting + " " + triage::verb_for(finding.waiting, "waits", "wait") + " on it.");
  if (is_recorded_mismatch(finding) && finding.extra["source"] == "pytorch-flight-recorder") {
    std::string listing;
    for (const json& value : finding.extra["values"]) {
      std::string sizes;
      for (const json& tensor : value["sizes"]) sizes += (sizes.empty() ? "" : " ") + tensor.dump();
      listing += (listing.empty() ? "" : ", ") + job.process_label(group.find(value["rank"].get<int>())->process) +
                 " " + sizes + (value["frame"].get<std::string>().empty() ? "" : " from " + value["frame"].get<std::string>());
    }
    return where + ", PyTorch's flight recorder shows " + finding.collective + " #" + std::to_string(*finding.seq) +
           " issued with different input " + (finding.kind == "size-mismatch" ? "sizes" : "dtypes") + ": " + listing +
           (finding.culprits.empty() ? "" : "; " + culprits + " " + triage::verb_for(finding.culprits, "disagrees", "disagree") + " with the others") + ".";
  }
  if (is_recorded_mismatch(finding)) {
    std::string fields;
    for (const json& name : finding.extra["fields"]) fields += (fields.empty() ? "" : " and ") + name.get<std::string>();
    std::string listing;
    for (const json& value : finding.extra["values"]) {
      listing += (listing.empty() ? "" : ", ") + std::string("rank ") + std::to_string(value["rank"].get<int>()) +
                 " count " + (value["count"].is_number() ? std::to_string(value["count"].get<uint64_t>()) : "?") + " " +
                 (value["datatype"].is_string() ? value["datatype"].get<std::string>() : "?");
      if (value.contains("root") && finding.kind == "root-mismatch") listing += " root " + value["root"].dump();
    }
    return where + ", the ranks launched " + finding.collective + " #" + std::to_string(*finding.seq) + " (seq " +
           finding.extra["recorder_seq"].dump() + ") with different " + fields + ": " + listing +
           (finding.culprits.empty() ? "" : "; " + culprits + " " + triage::verb_for(finding.culprits, "disagrees", "disagree") + " with the others") +
           " (flight recorder).";
  }
  if (finding.kind == "kernel-wait") {
    // "the AllReduce kernel of rank 0 waits for data from rank 1 at step 24 on channels 0-23 (...)"
    std::string text = where + ", the " + finding.collective + " kernel" + (finding.waiting.size() == 1 ? "" : "s") +
                       " of " + waiting + " ";
    const json& first = finding.kernel_waits.empty() ? json() : finding.kernel_waits[0];
    if (finding.waiting.size() == 1 && first.is_object()) text += first.value("wait", "");
    else text += "wait on " + culprits + (first.is_object() ? " (" + first.value("text", "") + ")" : "");
    if (finding.culprits_absent) text += "; " + culprits + " has no input";
    return text + " (kernel view; host state alone did not name this peer).";
  }
  if (finding.kind == "absent-ranks")
    return where + ", " + culprits + " " + triage::verb_for(finding.culprits, "appears", "appear") +
           " in no input's communicator list (aborted, destroyed or exited) while " + waiting + " " +
           triage::verb_for(finding.waiting, "waits", "wait") + ".";
  return where + ": " + finding.kind + ".";
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

std::string startup_sentence(const Finding& finding) {
  std::string text = "Start-up hang: no communicator exists yet.";
  if (!finding.waiting.empty())
    text += " " + triage::ranks_phrase(finding.waiting) + " " + triage::verb_for(finding.waiting, "waits", "wait") +
            " in the rendezvous" + std::string(finding.extra.contains("guessed_ranks") ? " (a guess for " +
            triage::ranks_phrase(finding.extra["guessed_ranks"].get<std::vector<int>>()) + ": see the evidence)" : "");
  std::vector<int> never = finding.culprits;
  if (finding.extra.contains("missing_ranks"))
    for (const json& rank : finding.extra["missing_ranks"]) never.push_back(rank.get<int>());
  triage::normalize_ranks(&never);
  if (!never.empty())
    text += std::string(finding.waiting.empty() ? " " : "; ") + triage::ranks_phrase(never) + " never arrived";
  return text + ".";
}

// What blame decided about cycles and undecided chain ends, one sentence each (blame.h).
std::string blame_sentences(const json& graph) {
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
              (one ? " alone explains" : " alone explain") + " every wait: " + (one ? "it" : "they") +
              " skipped an operation the others issued, and " + (one ? "its own wait follows" : "their own waits follow") +
              " from that.";
    else if (kind == "cycle-undecided")
      text += " Deadlock: " + node_ranks_phrase(graph, cycle_holding(reason["nodes"])) +
              " wait on each other in a cycle, and any one of " + who +
              " alone would explain it; the inputs do not say which skipped.";
    else if (kind == "not-reached")
      text += " " + who + (one ? " is" : " are") + " waited on for an operation " + (one ? "it" : "they") +
              " issued but " + (one ? "its" : "their") + " GPU has not reached; what " + (one ? "it waits" : "they wait") +
              " on is not visible.";
  }
  return text;
}

std::string verdict_summary(const Job& job, const std::string& verdict, const json& graph) {
  if (verdict == "error") {
    std::string text = "Error: nothing to triage.";
    if (!job.errors.empty()) text = "Error: " + job.errors.front() + ".";
    return text;
  }
  std::string text;
  if (verdict == "hang") {
    text = "Hang.";
    text += blame_sentences(graph);
    for (const Finding& finding : job.startup)
      if (finding.explains_hang) text += " " + startup_sentence(finding);
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
    if (told > 3) text += " (" + std::to_string(told - 3) + " more findings below.)";
    return text + job.kernel_sentence + " NCCL does not check this: such a collective reads and writes different sizes on different "
                  "ranks and completes with wrong results or hangs.";
  }
  if (verdict == "incomplete") {
    text = "Incomplete: no culprit can be named from these inputs.";
    for (size_t g = 0; g < job.comms.size(); ++g)
      for (const Finding& finding : job.findings[g]) {
        if (finding.kind == "absent-ranks" || finding.kind == "counters-unavailable" ||
            finding.kind == "in-flight-consistent" || finding.kind == "stuck-before-launch")
          text += " Communicator " + job.comms[g].hash_text + ": " +
                  (finding.evidence.empty() ? finding.kind : finding.evidence.front()) +
                  (finding.evidence.size() > 1 ? "; " + finding.evidence.back() : "") + ".";
      }
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

std::string decide_verdict(const Job& job) {
  if (job.unrelated_jobs || job.processes.empty()) return "error";
  bool incomplete = false, mismatch = false;
  for (const Finding& finding : job.startup)
    if (finding.explains_hang) return "hang";
  if (!job.startup.empty()) incomplete = true;  // no communicator: never "no-hang"
  for (size_t g = 0; g < job.comms.size(); ++g)
    for (const Finding& finding : job.findings[g]) {
      if (finding.explains_hang) return "hang";
      mismatch = mismatch || is_recorded_mismatch(finding) || finding.kind == "collective-mismatch";
      if (finding.kind == "absent-ranks" || finding.kind == "counters-unavailable" ||
          finding.kind == "in-flight-consistent" || finding.kind == "stuck-before-launch" ||
          finding.kind == "queued-behind")
        incomplete = true;
    }
  if (mismatch) return "mismatch";
  for (const triage::ProcessView& process : job.processes)
    if (const triage::ThreadView* thread = process.principal())
      incomplete = incomplete || triage::is_gpu_wait(thread->blocked_in) ||
                   triage::is_nccl_host_call(thread->blocked_in) || triage::guessed_gpu_wait(*thread);
  return incomplete ? "incomplete" : "no-hang";
}

json inputs_json(const Job& job, const std::vector<TriageFailure>& failures) {
  json inputs = json::array();
  for (size_t p = 0; p < job.processes.size(); ++p) {
    const triage::ProcessView& process = job.processes[p];
    json comms = json::array();
    for (const triage::CommView& comm : process.comms) comms.push_back(comm.comm_hash_text);
    std::vector<std::string> problems = triage::input_problems(process);
    inputs.push_back({{"name", process.input_name}, {"kind", process.kind},
                      {"status", problems.empty() ? "ok" : "partial"}, {"problems", problems},
                      {"pid", maybe_json(process.pid)},
                      {"hostname", process.hostname.empty() ? json(nullptr) : json(process.hostname)},
                      {"world_rank", job.world_rank[p] ? json(*job.world_rank[p]) : json(nullptr)},
                      {"nccl_version", process.nccl_version.empty() ? json(nullptr) : json(process.nccl_version)},
                      {"build_id_mismatch", process.build_id_mismatch ? json(*process.build_id_mismatch) : json(nullptr)},
                      {"communicators", comms}, {"snapshot_errors", process.document_errors.size()},
                      {"stack_notes", process.stack_notes}});
  }
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
  (void)options;
  std::vector<TriageFailure> failures = input_failures;
  Job job;
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
    job.processes.push_back(std::move(process));
  }
  triage::merge_communicators(&job);
  triage::find_unrelated_jobs(&job);
  triage::analyze_communicators(&job);
  triage::analyze_startup(&job);
  triage::add_duplicate_findings(&job);
  for (const triage::DuplicateInput& duplicate : job.duplicate_inputs)
    failures.push_back({duplicate.name, duplicate.kind,
                        duplicate.name + ": every communicator rank it holds is also in " + duplicate.kept +
                            " (kept by content): set aside as a duplicate",
                        "duplicate"});
  triage::analyze_recorder(&job);
  triage::join_torch_records(&job);
  triage::join_kernel_views(&job, std::move(kernel_views));
  triage::join_numerics(&job, std::move(numerics_views));
  json report = {{"schema", kTriageSchema},
                 {"tool", {{"name", "ncclscope"}, {"version", NCCLSCOPE_VERSION}}}};
  std::string verdict = decide_verdict(job);
  json graph = triage::build_wait_graph(job);
  // Absence is never evidence: a hang that blames only ranks without usable input is undecided.
  if (verdict == "hang" && graph["root_culprits"].empty() && !graph["no_input_suspects"].empty()) verdict = "incomplete";
  report["verdict"] = verdict;
  report["summary"] = verdict_summary(job, verdict, graph);
  if (std::string note = triage::damaged_inputs_note(job.processes); !note.empty())
    report["summary"] = report["summary"].get<std::string>() + " " + note;
  json culprits = culprits_json(job, graph);
  json culprit_ranks = json::array();
  for (const json& culprit : culprits)
    if (culprit["world_rank"].is_number_integer()) culprit_ranks.push_back(culprit["world_rank"]);
  // Only a hang has culprits; otherwise the chain ends are suspects (e.g. a rank with no input).
  bool hang = verdict == "hang";
  report["culprit_ranks"] = hang ? culprit_ranks : json::array();
  report["culprits"] = hang ? culprits : json::array();
  json suspect_ranks = json::array();
  for (const json& id : graph["suspects"]) {
    const json& node = graph["nodes"][id.get<size_t>()];
    if (node["world_rank"].is_number_integer()) suspect_ranks.push_back(node["world_rank"]);
  }
  if (!hang) suspect_ranks.insert(suspect_ranks.begin(), culprit_ranks.begin(), culprit_ranks.end());
  report["suspect_ranks"] = suspect_ranks;
  report["world_comm"] = job.world_comm >= 0 ? json(job.comms[job.world_comm].hash_text) : json(nullptr);
  json communicators = json::array();
  for (size_t g = 0; g < job.comms.size(); ++g) communicators.push_back(communicator_json(job, g));
  report["communicators"] = communicators;
  json startup = json::array();
  for (const Finding& finding : job.startup) startup.push_back(startup_json(finding));
  report["startup"] = startup;
  if (!job.recorder.is_null()) {
    // Each chain also says what its rank's node waits in.
    for (const json& chain : job.recorder["chains"])
      graph["nodes"][chain["node"].get<size_t>()]["waits_in"].push_back(
          {{"what", "stream-chain"}, {"tid", chain["tid"]}, {"text", chain["text"]}});
    report["recorder"] = job.recorder;
  }
  if (!job.kernel_views.is_null()) {
    // Each rank's kernels are also what its graph node waits in.
    for (size_t p = 0; p < job.process_kernels.size(); ++p)
      for (const json& kernel : job.process_kernels[p]) graph["nodes"][p]["waits_in"].push_back(kernel);
    report["kernel_views"] = job.kernel_views;
  }
  if (!job.numerics.is_null()) report["numerics"] = job.numerics;
  report["graph"] = std::move(graph);
  report["stack_classes"] = triage::build_stack_classes(job);
  report["inputs"] = inputs_json(job, failures);
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
  for (const json& input : report["inputs"])
    if (input.value("status", "ok") == "error" || input.value("status", "ok") == "partial") return 1;
  for (const json& comm : report["communicators"])
    if (!comm["duplicate_inputs"].empty()) return 1;
  return 0;
}

}  // namespace nsc
