#include "triage/headline.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "triage/call_site.h"
#include "triage/finding_kinds.h"
#include "triage/rank_set.h"
#include "util/json_access.h"
#include "util/json_raw.h"

namespace nsc::triage {
namespace {

using nlohmann::json;

// A finding and the communicator it belongs to.
struct Located {
  size_t comm = 0;
  const Finding* finding = nullptr;
};


std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// "ranks 0-2", or for a long set its start and its size: "ranks 16,17,19-23,48,... (2,880 ranks)".
std::string compact_ranks(const std::vector<int>& ranks) {
  std::string text = ranks_phrase_start(ranks, 40);
  bool cut = text.size() > 4 && text.compare(text.size() - 4, 4, ",...") == 0;
  return cut ? text + " (" + std::to_string(ranks.size()) + " ranks)" : text;
}

size_t word_count(const std::string& text) {
  std::istringstream words(text);
  size_t count = 0;
  for (std::string word; words >> word;) ++count;
  return count;
}

class Headline {
 public:
  Headline(const Job& job, const std::string& verdict, const json& graph)
      : job_(job), verdict_(verdict), graph_(graph) {
    for (const char* key : {"root_culprits", "suspects"})
      for (const json& id : graph_[key]) (std::string(key) == "suspects" ? suspects_ : culprits_).push_back(id.get<int>());
    if (verdict_ != "hang" && verdict_ != "crash") {  // only a hang or a crash has culprits: elsewhere chain ends are suspects
      suspects_.insert(suspects_.begin(), culprits_.begin(), culprits_.end());
      culprits_.clear();
    }
  }

  json build() {
    std::vector<std::string> lines;
    std::string what = verdict_;
    if (verdict_ == "error") {
      lines.push_back("ERROR: " + (job_.errors.empty() ? std::string("nothing to triage") : job_.errors.front()) + ".");
    } else if (verdict_ == "crash") {
      lines = job_.crash.headline;
    } else if (verdict_ == "hang" || verdict_ == "deadlock") {
      what = hang_lines(&lines);
    } else if (verdict_ == "mismatch") {
      mismatch_lines(&lines);
    } else if (verdict_ == "incomplete") {
      incomplete_lines(&lines);
    } else {
      lines.push_back("NO HANG evident: on every communicator all ranks launched the same collectives; "
                      "nothing is planned or in flight.");
      add_others_line("Ranks", {}, &lines);
    }
    fit(&lines);
    std::string text;
    for (const std::string& line : lines) text += (text.empty() ? "" : "\n") + line;
    return {{"what", what}, {"lines", lines}, {"text", text}};
  }

 private:
  // --- who is where --------------------------------------------------------------------

  const json& node(int id) const { return graph_["nodes"][static_cast<size_t>(id)]; }
  bool is_process(int id) const { return id < static_cast<int>(job_.processes.size()); }

  std::string site_of(int id) const { return node_site(job_, id); }

  // "ranks 0-2 in cudaStreamSynchronize at train.py:186; rank 5 in sleep at x.py:3": nodes
  // grouped by where they are, at most `max_groups` groups (then "+N more").
  std::string grouped_sites(const std::vector<int>& ids, size_t max_groups, const char* joiner = " in ") const {
    std::map<std::string, std::vector<int>> ranks_by_site;
    std::vector<std::string> unranked;
    for (int id : ids) {
      std::string rank = node(id)["world_rank"].is_number_integer() ? "rank " + node(id)["world_rank"].dump()
                                                                    : json_text(node(id)["label"]);
      if (!is_process(id)) unranked.push_back(rank + " (" + site_of(id) + ")");
      else if (node(id)["world_rank"].is_number_integer()) ranks_by_site[site_of(id)].push_back(node(id)["world_rank"].get<int>());
      else unranked.push_back(rank + joiner + site_of(id));
    }
    std::vector<std::pair<std::string, std::vector<int>>> groups(ranks_by_site.begin(), ranks_by_site.end());
    std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
    std::vector<std::string> parts;
    for (const auto& [site, ranks] : groups) parts.push_back(compact_ranks(ranks) + joiner + site);
    parts.insert(parts.end(), unranked.begin(), unranked.end());
    std::string text;
    for (size_t i = 0; i < parts.size() && i < max_groups; ++i) text += (text.empty() ? "" : "; ") + parts[i];
    if (parts.size() > max_groups) text += " (+" + std::to_string(parts.size() - max_groups) + " more groups)";
    return text;
  }

  // World ranks of a finding's communicator ranks; "rank 1 of pg dp1" where none is known.
  std::string ranks_of(size_t g, const std::vector<int>& comm_ranks) const {
    std::vector<int> world;
    bool world_comm = static_cast<int>(g) == job_.world_comm;
    for (int rank : comm_ranks) {
      const Member* member = job_.comms[g].find(rank);
      if (member == nullptr && world_comm) {
        world.push_back(rank);
      } else if (member == nullptr || !job_.world_rank[member->process]) {
        std::string where = pg_label(job_.comms[g]);
        return ranks_phrase(comm_ranks) + " of " + (where.empty() ? "communicator " + job_.comms[g].hash_text : where);
      } else {
        world.push_back(*job_.world_rank[member->process]);
      }
    }
    return compact_ranks(world);
  }

  std::string where_of(const std::vector<size_t>& comms) const {
    std::vector<std::string> names;
    for (size_t g : comms) {
      const CommGroup& group = job_.comms[g];
      std::string name = group.pg_name.empty() ? (comms.size() == 1 ? "communicator " : "") + group.hash_text
                                               : (group.pg_desc.empty() ? group.pg_name : group.pg_desc);
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    bool pg = !job_.comms[comms.front()].pg_name.empty();
    std::string text = pg ? "pg " : names.size() > 1 ? "communicators " : "";
    for (size_t i = 0; i < names.size() && i < 3; ++i) text += (i ? ", " : "") + names[i];
    if (names.size() > 3) text += " (+" + std::to_string(names.size() - 3) + " more)";
    if (comms.size() == 1 && job_.comms[comms.front()].nranks)
      text += " (" + std::to_string(*job_.comms[comms.front()].nranks) + " ranks)";
    return text;
  }

  // "all_reduce #4" (PyTorch's per-group number) or "AllReduce #4 (NCCL launch count)".
  static std::string operation(const Finding& finding) {
    if (!finding.torch_op.empty() && finding.torch_seq) return finding.torch_op + " #" + std::to_string(*finding.torch_seq);
    if (finding.collective.empty()) return finding.seq ? "collective #" + std::to_string(*finding.seq) + " (NCCL count)" : "a collective";
    return finding.collective + (finding.seq ? " #" + std::to_string(*finding.seq) + " (NCCL launch count)" : "");
  }

  // --- hang ----------------------------------------------------------------------------

  bool blames_root(const Located& located) const {
    for (int rank : located.finding->culprits)
      if (const Member* member = job_.comms[located.comm].find(rank))
        if (std::count(culprits_.begin(), culprits_.end(), member->process)) return true;
    return located.finding->culprits_absent && !culprits_.empty();
  }

  // The finding that explains the hang and names a root culprit, else any that explains it.
  std::optional<Located> primary_finding() const {
    std::optional<Located> any;
    for (size_t g = 0; g < job_.comms.size(); ++g)
      for (const Finding& finding : job_.findings[g]) {
        if (!finding.explains_hang) continue;
        Located located{g, &finding};
        if (!finding_kind(finding.kind).may_blame) continue;
        if (blames_root(located)) return located;
        if (!any) any = located;
      }
    return any;
  }

  // The communicators whose finding says the same as the primary one (same kind, operation
  // and far side): "pg dp1, tp1".
  std::vector<size_t> same_findings(const Located& primary) const {
    std::vector<size_t> comms = {primary.comm};
    auto far = [&](size_t g, const Finding& f) { return ranks_of(g, f.culprits); };
    for (size_t g = 0; g < job_.comms.size(); ++g)
      for (const Finding& finding : job_.findings[g])
        if (g != primary.comm && finding.explains_hang && finding.kind == primary.finding->kind &&
            operation(finding) == operation(*primary.finding) && far(g, finding) == far(primary.comm, *primary.finding))
          comms.push_back(g);
    return comms;
  }

  std::string event_of(const Located& located) const {
    const Finding& f = *located.finding;
    std::string far = ranks_of(located.comm, f.culprits), waiting = ranks_of(located.comm, f.waiting);
    const std::string& kind = f.kind;
    if (kind == "missing-collective") return operation(f) + " never issued by " + far;
    if (kind == "p2p-unmatched")
      return waiting + " " + verb_for(f.waiting, "waits", "wait") + " in " + f.collective + " for a " +
             (f.collective == "Recv" ? "Send" : "Recv") + " " + far + " never posted";
    if (kind == "collective-mismatch") return far + " issued another collective where the others issued " + operation(f);
    if (kind == "aborted-rank") return far + " aborted its communicator";
    if (kind == "errored-rank") return far + " failed" + (f.evidence.empty() ? "" : " (" + f.evidence.front() + ")");
    if (kind == "absent-ranks") return far + " left the communicator (aborted, destroyed or exited)";
    if (kind == "stuck-before-launch") return waiting + " stuck in " + operation(f) + ", a call " + far + " never made";
    if (kind == "kernel-wait") return waiting + "'s " + f.collective + " kernel waits on " + far;
    if (kind == "gpu-busy")
      return far + "'s GPU runs " + f.extra.value("kernel", std::string("another kernel")) + "; its " + operation(f) +
             " never started";
    if (kind == "split-vs-collective")
      return waiting + " " + verb_for(f.waiting, "waits", "wait") + " in " + creating_call(located) + " for " + far +
             ", which issued " + operation(f) + " on the parent instead";
    return operation(f) + " issued with different arguments";
  }

  // What the waiting side of a split-vs-collective called: "new_group", else "ncclCommSplit".
  std::string creating_call(const Located& located) const {
    const Member* member = located.finding->waiting.empty() ? nullptr : job_.comms[located.comm].find(located.finding->waiting.front());
    const ThreadView* thread = member ? job_.processes[member->process].principal() : nullptr;
    CallSite site = thread ? user_call_site(*thread) : CallSite{};
    return site.call.empty() || site.call == "ncclCommInitRank" ? "ncclCommSplit" : site.call;
  }

  std::string startup_event() const {
    for (const Finding& finding : job_.startup) {
      if (!finding.explains_hang) continue;
      std::vector<int> never = finding.culprits;
      if (finding.extra.contains("missing_ranks"))
        for (const json& rank : finding.extra["missing_ranks"]) never.push_back(rank.get<int>());
      normalize_ranks(&never);
      return "START-UP HANG: no communicator exists yet; " +
             (never.empty() ? std::string("the rendezvous never completed") : ranks_phrase(never) + " never reached the rendezvous") + ".";
    }
    return "";
  }

  // --- PyTorch's records alone (dump files: no communicator) ----------------------------

  bool blames_root(const Finding& finding) const {
    for (int rank : finding.culprits)
      for (int id : culprits_)
        if (node(id)["world_rank"] == rank) return true;
    return false;
  }

  const Finding* primary_record_finding() const {
    const Finding* any = nullptr;
    for (const Finding& finding : job_.torch_findings) {
      if (!finding.explains_hang || !finding_kind(finding.kind).may_blame) continue;
      if (blames_root(finding)) return &finding;
      if (any == nullptr) any = &finding;
    }
    return any;
  }

  static std::string record_pg(const Finding& finding) {
    std::string desc = finding.extra.value("pg_desc", std::string());
    return desc.empty() || desc == "undefined" ? finding.extra.value("pg", std::string()) : desc;
  }

  // "HANG in pg dp1, tp1: all_reduce #4 never issued by rank 3."
  std::string record_event(const Finding& primary) const {
    std::vector<std::string> pgs;
    for (const Finding& finding : job_.torch_findings)
      if (finding.kind == primary.kind && finding.collective == primary.collective && finding.seq == primary.seq &&
          finding.culprits == primary.culprits && !std::count(pgs.begin(), pgs.end(), record_pg(finding)))
        pgs.push_back(record_pg(finding));
    std::string where;
    for (size_t i = 0; i < pgs.size() && i < 3; ++i) where += (i ? ", " : "") + pgs[i];
    std::string op = primary.collective + (primary.seq ? " #" + std::to_string(*primary.seq) : "");
    std::string far = compact_ranks(primary.culprits), waiting = compact_ranks(primary.waiting);
    std::string event = primary.kind == "pg-p2p-unmatched"
                            ? waiting + " " + verb_for(primary.waiting, "waits", "wait") + " in " + op + " for the " +
                                  (primary.collective == "send" ? "recv " : "send ") + far + " never issued"
                        : primary.kind == "pg-no-input" ? waiting + " " + verb_for(primary.waiting, "waits", "wait") + " in " +
                                                              op + " on " + far + ", whose records no input holds"
                                                        : op + " never issued by " + far;
    return "HANG in pg " + where + " (PyTorch's flight recorder): " + event + ".";
  }

  const json* reason_of(int id) const {
    for (const json& reason : graph_["blame"])
      for (const json& node_id : reason["nodes"])
        if (node_id == id) return &reason;
    return nullptr;
  }

  // Deadlock: a cycle that no single skip explains (blame: cycle-undecided, order-inversion), nobody blamed.
  bool undecided_cycle() const {
    if (!culprits_.empty()) return false;
    for (const json& reason : graph_["blame"])
      if (reason["kind"] == "cycle-undecided" || reason["kind"] == "order-inversion") return true;
    return false;
  }

  // The two ranks blame found waiting on each other in opposite orders, else none.
  std::vector<int> inverted_nodes() const {
    std::vector<int> ids;
    for (const json& reason : graph_["blame"])
      if (reason["kind"] == "order-inversion")
        for (const json& id : reason["nodes"]) ids.push_back(id.get<int>());
    return ids;
  }

  // The first edge on which `from` waits on `to`.
  const json* edge_between(int from, int to) const {
    for (const json& edge : graph_["edges"])
      if (std::count(edge["from"].begin(), edge["from"].end(), from) && std::count(edge["to"].begin(), edge["to"].end(), to))
        return &edge;
    return nullptr;
  }

  // What an edge waits in: its process group ("grad_a0"), else "AllReduce #4 on 0x..".
  std::string waited_in(const json& edge) const {
    if (!edge["process_group"].is_null()) return json_text(edge["process_group"]);
    for (const CommGroup& comm : job_.comms)
      if (edge["comm_hash"] == comm.hash_text)
        return comm.pg_name.empty() ? json_text(edge["label"]) + " on " + comm.hash_text
                                    : (comm.pg_desc.empty() ? comm.pg_name : comm.pg_desc);
    return json_text(edge["label"]);
  }

  // " at torch_crash_order.py:261" (the user's line a node waits at), else " (its call site)".
  std::string line_of(int id) const {
    const ThreadView* thread = is_process(id) ? job_.processes[id].principal() : nullptr;
    CallSite site = thread ? user_call_site(*thread) : CallSite{};
    return site.location.empty() ? " (" + site_of(id) + ")" : " at " + site.location;
  }

  // "DEADLOCK in pg grad_a0, grad_b0: ranks 0 and 1 issued grad_a0 and grad_b0 in opposite
  // orders (lock-order inversion)." then each rank's wait; nobody skipped.
  bool inversion_lines(std::vector<std::string>* lines) const {
    std::vector<int> ids = inverted_nodes();
    if (ids.size() != 2) return false;
    const json* first = edge_between(ids[0], ids[1]);
    const json* second = edge_between(ids[1], ids[0]);
    if (first == nullptr || second == nullptr) return false;
    std::string a = nodes_ranks({ids[0]}), b = nodes_ranks({ids[1]});
    std::string pair = nodes_ranks(ids);  // "ranks 0,1"
    if (node(ids[0])["world_rank"].is_number_integer() && node(ids[1])["world_rank"].is_number_integer())
      pair = "ranks " + node(ids[0])["world_rank"].dump() + " and " + node(ids[1])["world_rank"].dump();
    if ((*first)["kind"] == "p2p" && (*second)["kind"] == "p2p")
      lines->push_back("DEADLOCK" + cycle_where() + ": " + pair + " each wait in a " + json_text((*first)["collective"]) +
                       " to the other before posting the matching one (lock-order inversion).");
    else
      lines->push_back("DEADLOCK" + cycle_where() + ": " + pair + " issued " + waited_in(*first) + " and " +
                       waited_in(*second) + " in opposite orders (lock-order inversion).");
    lines->push_back("No culprit: " + a + " waits in " + waited_in(*first) + line_of(ids[0]) + ", " + b + " in " +
                     waited_in(*second) + line_of(ids[1]) + "; nobody skipped.");
    return true;
  }

  std::string hang_lines(std::vector<std::string>* lines) {
    std::string what = undecided_cycle() ? "deadlock" : "hang";
    std::string head = what == "deadlock" ? "DEADLOCK" : "HANG";
    std::optional<Located> primary = primary_finding();
    if (std::string startup = startup_event(); !startup.empty() && (!primary || job_.comms.empty())) {
      lines->push_back(startup);
      what = "start-up";
    } else if (what == "deadlock" && inversion_lines(lines)) {
      std::vector<int> others = role_nodes("waiting"), pair = inverted_nodes();
      others.erase(std::remove_if(others.begin(), others.end(), [&](int id) { return std::count(pair.begin(), pair.end(), id) > 0; }),
                   others.end());
      add_others_line("Waiting", others, lines);
      return what;
    } else if (what == "deadlock") {
      lines->push_back("DEADLOCK" + cycle_where() + ": " + nodes_ranks(cycle_nodes()) + " wait on each other in a cycle" +
                       (primary ? " (" + primary->finding->collective + ")" : "") + ".");
    } else if (primary) {
      lines->push_back(head + " in " + where_of(same_findings(*primary)) + ": " + event_of(*primary) + ".");
    } else if (const Finding* recorded = primary_record_finding()) {
      lines->push_back(record_event(*recorded));
    } else {
      lines->push_back("HANG: ranks wait on one another; no finding names the operation.");
    }
    bool gpu_busy = primary && primary->finding->kind == "gpu-busy";
    lines->push_back(culprits_.empty() ? undecided_line() : culprit_line(gpu_busy));
    add_others_line("Waiting", role_nodes("waiting"), lines);
    return what;
  }

  // " in pg a, b": the communicators of the edges inside the cycles.
  std::string cycle_where() const {
    std::vector<int> cycle = cycle_nodes();
    std::set<int> nodes(cycle.begin(), cycle.end());
    std::vector<size_t> comms;
    for (const json& edge : graph_["edges"]) {
      bool inside = std::all_of(edge["from"].begin(), edge["from"].end(),
                                [&](const json& id) { return nodes.count(id.get<int>()) > 0; });
      for (size_t g = 0; g < job_.comms.size() && inside; ++g)
        if (edge["comm_hash"] == job_.comms[g].hash_text && !std::count(comms.begin(), comms.end(), g)) comms.push_back(g);
    }
    return comms.empty() ? "" : " in " + where_of(comms);
  }

  std::string nodes_ranks(const std::vector<int>& ids) const {
    std::vector<int> ranks;
    std::string others;
    for (int id : ids) {
      if (node(id)["world_rank"].is_number_integer()) ranks.push_back(node(id)["world_rank"].get<int>());
      else others += (others.empty() ? "" : ", ") + json_text(node(id)["label"]);
    }
    std::string text = ranks.empty() ? "" : compact_ranks(ranks);
    return text + (text.empty() || others.empty() ? "" : ", ") + others;
  }

  std::vector<int> cycle_nodes() const {
    std::vector<int> ids;
    for (const json& cycle : graph_["cycles"])
      for (const json& id : cycle) ids.push_back(id.get<int>());
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
  }

  // `gpu_busy`: the first line says the culprit's GPU runs another kernel, so it skipped nothing.
  std::string culprit_line(bool gpu_busy = false) const {
    std::string text = "Culprit: " + grouped_sites(culprits_, 3, ", in ");
    const json* reason = reason_of(culprits_.front());
    bool one = culprits_.size() == 1;
    if (gpu_busy)
      text += std::string("; ") + (one ? "its host launched" : "their hosts launched") + " the collective, " +
              (one ? "its GPU never started it" : "their GPUs never started it");
    else if (reason != nullptr && (*reason)["kind"] == "skipped-in-cycle")
      text += std::string("; ") + (one ? "its own wait follows" : "their own waits follow") + " from the skip";
    return text + ".";
  }

  // "Undecided between ranks 0 and 1: <the fact that would decide>."
  std::string undecided_line() const {
    if (suspects_.empty()) return "Undecided: no rank is provably behind; " + deciding_fact(nullptr) + ".";
    const json* reason = reason_of(suspects_.front());
    std::string who = grouped_sites(suspects_, 3, ", in ");
    return (suspects_.size() == 1 ? "Suspect: " + who + "; " : "Undecided between " + who + ": ") + deciding_fact(reason) + ".";
  }

  // Every node of the blame entry has only NCCL's counts for its program order (no records).
  bool orders_from_counts(const json& reason) const {
    for (const json& id : reason["nodes"])
      if (raw_json_value(node(id.get<int>()).value("program_order", json::object())).value("source", "") != "nccl-counts")
        return false;
    return true;
  }

  std::string deciding_fact(const json* reason) const {
    std::string kind = reason ? json_text((*reason)["kind"]) : "";
    if (kind == "cycle-undecided" && orders_from_counts(*reason))
      return "PyTorch's flight recorder (TORCH_FR_BUFFER_SIZE>0) would decide: NCCL's counts say what each rank issued, "
             "not in which order";
    if (kind == "cycle-undecided")
      return "each waits for the other's matching operation; the order the program issues them in decides which is wrong";
    if (kind == "not-reached") return "what its GPU runs (cuda-gdb nccl-kernels) would decide";
    // Ranks with no usable input (absent, unreadable, no host thread): their input decides.
    std::vector<int> no_input;
    for (const json& id : graph_.value("no_input_suspects", json::array()))
      no_input.push_back(id.get<int>());
    if (!no_input.empty()) return "a readable input of " + nodes_ranks(no_input) + " would decide";
    std::vector<int> missing;
    if (job_.world_comm >= 0) missing = job_.comms[job_.world_comm].missing_ranks;
    if (!missing.empty()) return "the input of " + ranks_phrase(missing) + " would decide";
    if (job_.comms.empty()) missing = ranks_without_records(job_);
    if (!missing.empty()) return "the dumps, cores or live state of " + ranks_phrase(missing) + " would decide";
    if (job_.comms.empty()) return "the ranks' cores or live state (host stacks, cuda-gdb nccl-kernels) would decide";
    return "device state (cuda-gdb nccl-kernels) or PyTorch's flight recorder would decide";
  }

  std::vector<int> role_nodes(const std::string& role) const {
    std::vector<int> ids;
    for (const json& n : graph_["nodes"])
      if (n["role"] == role) ids.push_back(n["id"].get<int>());
    return ids;
  }

  // "Waiting: ranks 0-2 in cudaStreamSynchronize at train.py:186." Without `ids`: every
  // process node not already named.
  void add_others_line(const std::string& label, std::vector<int> ids, std::vector<std::string>* lines) const {
    if (ids.empty() && label != "Waiting")  // every process the lines above did not name
      for (size_t p = 0; p < job_.processes.size(); ++p)
        if (!std::count(suspects_.begin(), suspects_.end(), static_cast<int>(p))) ids.push_back(static_cast<int>(p));
    if (ids.empty()) return;
    std::vector<int> remote = remote_error_ranks(ids);
    std::string reacting = remote.empty() ? "" : compact_ranks(remote) + " saw ncclRemoteError (a peer's connection failed); ";
    lines->push_back(label + ": " + reacting + grouped_sites(ids, 3) + ".");  // first: fit() cuts the last "; " parts
  }

  // The world ranks among process nodes `ids` that saw ncclRemoteError (remote-error findings'
  // waiting side): they react to a peer's failure.
  std::vector<int> remote_error_ranks(const std::vector<int>& ids) const {
    std::vector<int> ranks;
    for (size_t g = 0; g < job_.comms.size(); ++g)
      for (const Finding& finding : job_.findings[g]) {
        if (finding.kind != "remote-error") continue;
        for (const Member& member : job_.comms[g].members)
          if (std::count(finding.waiting.begin(), finding.waiting.end(), member.rank) &&
              std::count(ids.begin(), ids.end(), member.process) && job_.world_rank[member.process])
            ranks.push_back(*job_.world_rank[member.process]);
      }
    normalize_ranks(&ranks);
    return ranks;
  }

  // --- mismatch and incomplete ---------------------------------------------------------

  std::optional<Located> first_of_effect(VerdictEffect effect) const {
    for (size_t g = 0; g < job_.comms.size(); ++g)
      for (const Finding& finding : job_.findings[g])
        if (finding_kind(finding.kind).effect == effect) return Located{g, &finding};
    return std::nullopt;
  }

  // The ranks whose arguments a mismatch finding compares.
  static std::vector<int> compared_ranks(const Located& located) {
    std::vector<int> ranks = located.finding->waiting;
    ranks.insert(ranks.end(), located.finding->culprits.begin(), located.finding->culprits.end());
    if (located.finding->extra.contains("values"))
      for (const json& value : located.finding->extra["values"])
        if (value.contains("rank") && value["rank"].is_number_integer()) ranks.push_back(value["rank"].get<int>());
    normalize_ranks(&ranks);
    return ranks;
  }

  void mismatch_lines(std::vector<std::string>* lines) const {
    std::optional<Located> found = first_of_effect(VerdictEffect::kMismatch);
    const Finding* recorded = first_record_of_effect(VerdictEffect::kMismatch);
    if (!found && recorded) {
      std::string field = recorded->kind == "pg-type-mismatch" ? "collectives" : recorded->kind == "pg-size-mismatch" ? "sizes" : "dtypes";
      lines->push_back("MISMATCH in pg " + record_pg(*recorded) + " (PyTorch's flight recorder): " + operation(*recorded) +
                       " issued with different " + field + "; nothing waits yet, results may be wrong.");
    } else if (!found) {
      lines->push_back("MISMATCH: ranks issued the same collective with different arguments.");
    } else {
      const Finding& f = *found->finding;
      std::string field = f.kind == "collective-mismatch" ? "collectives"
                          : f.kind == "size-mismatch"     ? "sizes"
                          : f.kind == "dtype-mismatch"    ? "dtypes"
                                                          : f.kind.substr(0, f.kind.find('-')) + "s";
      std::string op = operation(f);
      lines->push_back("MISMATCH in " + where_of({found->comm}) + ": " + op + " issued with different " + field +
                       "; nothing waits yet, results may be wrong.");
    }
    if (!suspects_.empty()) lines->push_back("Suspect (differs from the majority): " + grouped_sites(suspects_, 3, ", in ") + ".");
    else if (found) lines->push_back("Undecided between " + ranks_of(found->comm, compared_ranks(*found)) +
                                     ": no majority; which arguments the program meant decides.");
    else if (recorded) lines->push_back("Undecided between " + compact_ranks(record_ranks(*recorded)) +
                                        ": no majority; which arguments the program meant decides.");
    add_others_line("Others", {}, lines);
  }

  const Finding* first_record_of_effect(VerdictEffect effect) const {
    for (const Finding& finding : job_.torch_findings)
      if (finding_kind(finding.kind).effect == effect) return &finding;
    return nullptr;
  }

  // The ranks a records mismatch compares (its evidence values).
  static std::vector<int> record_ranks(const Finding& finding) {
    std::vector<int> ranks;
    for (const json& value : finding.extra.value("values", json::array()))
      if (value.contains("rank") && value["rank"].is_number_integer()) ranks.push_back(value["rank"].get<int>());
    normalize_ranks(&ranks);
    return ranks;
  }

  void incomplete_lines(std::vector<std::string>* lines) const {
    std::optional<Located> found = first_of_effect(VerdictEffect::kIncomplete);
    std::string why = "ranks wait on the GPU, but no communicator shows who is behind";
    const Finding* recorded = first_record_of_effect(VerdictEffect::kIncomplete);
    if (!found && recorded && recorded->kind == "pg-no-input") {
      why = compact_ranks(recorded->waiting) + " " + verb_for(recorded->waiting, "waits", "wait") + " in " +
            operation(*recorded) + " on pg " + record_pg(*recorded) + " for " + compact_ranks(recorded->culprits) +
            ", whose records no input holds";
    } else if (found) {
      const Finding& f = *found->finding;
      std::string where = where_of({found->comm});
      if (f.kind == "absent-ranks") why = ranks_of(found->comm, f.culprits) + " of " + where + " has no input";
      else if (f.kind == "counters-unavailable") why = "counters on " + where + " could not be read";
      else if (f.kind == "in-flight-consistent") why = "counters agree on " + where + " but operations are still in flight";
      else if (f.kind == "stuck-before-launch") why = ranks_of(found->comm, f.waiting) + " stuck in an NCCL call on " + where;
      else if (f.kind == "queued-behind") why = ranks_of(found->comm, f.waiting) + "'s work on " + where + " is queued behind its own";
    } else if (!job_.startup.empty()) {
      why = "no communicator exists yet";
    } else if (std::vector<int> unrecorded = ranks_without_records(job_); job_.comms.empty() && !unrecorded.empty()) {
      why = compact_ranks(unrecorded) + " left no usable flight-recorder dump, the others' records show no wait";
    } else if (job_.comms.empty()) {
      why = "recorded operations are issued but not completed";
    }
    lines->push_back("INCOMPLETE: no culprit can be named; " + why + ".");
    lines->push_back(undecided_line());
    add_others_line("Others", {}, lines);
  }

  // --- at most 3 lines and kHeadlineMaxWords words ----------------------------------------

  // The last "; " outside parentheses (npos if none): where a trailing part may be dropped.
  static size_t last_part_break(const std::string& line) {
    size_t found = std::string::npos;
    int depth = 0;
    for (size_t i = 0; i + 1 < line.size(); ++i) {
      depth += line[i] == '(' ? 1 : line[i] == ')' ? -1 : 0;
      if (depth == 0 && line[i] == ';' && line[i + 1] == ' ') found = i;
    }
    return found;
  }

  static void fit(std::vector<std::string>* lines) {
    if (lines->size() > 3) lines->resize(3);
    auto total = [&] {
      size_t words = 0;
      for (const std::string& line : *lines) words += word_count(line);
      return words;
    };
    // Drop trailing "; group" parts of the last lines first, then cut words.
    for (size_t l = lines->size(); l-- > 0 && total() > kHeadlineMaxWords;) {
      std::string& line = (*lines)[l];
      for (size_t cut; total() > kHeadlineMaxWords && (cut = last_part_break(line)) != std::string::npos;)
        line = line.substr(0, cut) + " (and more).";
    }
    for (size_t l = lines->size(); l-- > 0 && total() > kHeadlineMaxWords;) {
      std::istringstream words((*lines)[l]);
      std::vector<std::string> kept;
      for (std::string word; words >> word;) kept.push_back(word);
      size_t excess = total() - kHeadlineMaxWords;
      size_t keep = kept.size() > excess + 1 ? kept.size() - excess - 1 : 1;
      std::string text;
      for (size_t w = 0; w < keep; ++w) text += (w ? " " : "") + kept[w];
      (*lines)[l] = text + " ...";
    }
  }

  const Job& job_;
  const std::string& verdict_;
  const json& graph_;
  std::vector<int> culprits_, suspects_;
};

}  // namespace

std::string node_site(const Job& job, int id) {
  if (id < 0) return "no input holds it";
  if (static_cast<size_t>(id) >= job.processes.size()) {
    if (job.commless_processes.size() != 1) return "no input holds it";
    int p = job.commless_processes.front();  // the one input with no communicator left
    return "no input holds it; " + base_name(job.processes[p].input_name) + " has no communicator and may be it, in " +
           node_site(job, p);
  }
  const ThreadView* thread = job.processes[id].principal();
  if (thread == nullptr && static_cast<size_t>(id) < job.recorded_site.size() && !job.recorded_site[id].empty())
    return job.recorded_site[id];
  if (thread == nullptr) return "no host thread in its input";
  CallSite site = user_call_site(*thread);
  if (site.found()) return site.text();
  return thread->blocked_in.empty() ? "no user frame in its stack" : thread->blocked_in + " (no user frame in its stack)";
}

json build_headline(const Job& job, const std::string& verdict, const json& graph) {
  return Headline(job, verdict, graph).build();
}

}  // namespace nsc::triage
