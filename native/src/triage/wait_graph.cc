// Wait-for graph: one node per process (and per absent rank), hyper-edges
// "these ranks wait on those" from the findings, cycles (deadlock) told apart
// from chains that end at a culprit.
#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "triage/analysis.h"
#include "triage/finding_kinds.h"
#include "triage/blame.h"
#include "triage/program_order.h"
#include "util/json_raw.h"
#include "triage/rank_set.h"
#include "util/parallel.h"
#include "util/phase_times.h"

namespace nsc::triage {
namespace {

using nlohmann::json;

struct Edge {
  std::vector<int> from, to;
  const Finding* finding = nullptr;
  const CommGroup* comm = nullptr;
  bool records = false;  // from PyTorch's records (torch_findings): no communicator
};

class GraphBuilder {
 public:
  explicit GraphBuilder(const Job& job) : job_(job) {
    node_count_ = static_cast<int>(job.processes.size());
  }

  // The graph but its nodes: edges, blame, cycles, chains (the nodes come last, from nodes()).
  json build_without_nodes() {
    for (size_t g = 0; g < job_.comms.size(); ++g)
      for (const Finding& finding : job_.findings[g]) add_edge(job_.comms[g], finding);
    for (const Finding& finding : job_.startup) add_startup_edge(finding);
    for (const Finding& finding : job_.torch_findings) add_record_edge(finding);
    compute_adjacency();
    std::vector<WaitEdge> wait_edges;
    for (const Edge& edge : edges_) wait_edges.push_back({edge.from, edge.to, finding_kind(edge.finding->kind).may_blame});
    place_owed_operations();
    blame_ = assign_blame(node_count_, wait_edges, no_input_nodes(), nodes_waiting_themselves(), owed_order_);
    json graph;
    graph["edges"] = edges_json();
    graph["cycles"] = blame_.cycles;
    graph["root_culprits"] = blame_.culprits;
    graph["suspects"] = blame_.suspects;
    graph["blame"] = blame_json();
    // Suspects only because no usable input holds them: their inputs would decide (verdict
    // `incomplete` unless the ranks present prove a culprit on their own).
    json undecided = json::array();
    for (const BlameResult::Reason& reason : blame_.reasons)
      if (reason.kind == "no-input")
        for (int node : reason.nodes) undecided.push_back(node);
    graph["no_input_suspects"] = undecided;
    graph["longest_chain"] = longest_chain();
    return graph;
  }

  // One node per process, then one per absent rank (built last: see build_wait_graph).
  json nodes() const {
    PhaseTimer nodes_timer("triage.verdict.graph.nodes");
    return nodes_json();
  }

 private:
  int absent_node(const CommGroup& comm, int rank) {
    auto key = std::make_pair(comm.hash, rank);
    auto found = absent_ids_.find(key);
    if (found != absent_ids_.end()) return found->second;
    int id = node_count_++;
    absent_ids_[key] = id;
    absent_nodes_.push_back({&comm, rank});
    return id;
  }

  int node_of(const CommGroup& comm, int rank) {
    if (const Member* member = comm.find(rank)) return member->process;
    // A rank without input on a subgroup is the world's only rank without input, if there
    // is exactly one: every other process is accounted for.
    if (job_.world_comm >= 0 && &comm != &job_.comms[job_.world_comm]) {
      const CommGroup& world = job_.comms[job_.world_comm];
      if (world.missing_ranks.size() == 1) return absent_node(world, world.missing_ranks[0]);
    }
    return absent_node(comm, rank);
  }

  void add_edge(const CommGroup& comm, const Finding& finding) {
    if (finding.waiting.empty() || finding.culprits.empty()) return;
    Edge edge;
    edge.finding = &finding;
    edge.comm = &comm;
    for (int rank : finding.waiting) edge.from.push_back(node_of(comm, rank));
    for (int rank : finding.culprits) edge.to.push_back(node_of(comm, rank));
    edges_.push_back(std::move(edge));
  }

  // Start-up: no communicator; ranks are the launcher's, missing ones become absent nodes.
  void add_startup_edge(const Finding& finding) {
    std::map<int, int> process_of_rank;
    for (size_t p = 0; p < job_.processes.size(); ++p)
      if (job_.world_rank[p]) process_of_rank[*job_.world_rank[p]] = static_cast<int>(p);
    Edge edge;
    edge.finding = &finding;
    for (int rank : finding.waiting) edge.from.push_back(process_of_rank.at(rank));
    for (int rank : finding.culprits) edge.to.push_back(process_of_rank.at(rank));
    if (finding.extra.contains("missing_ranks"))
      for (const json& rank : finding.extra["missing_ranks"]) edge.to.push_back(absent_startup_node(rank.get<int>()));
    if (!edge.from.empty() && !edge.to.empty()) edges_.push_back(std::move(edge));
  }

  // A wait PyTorch's records show (fr_match.cc): world ranks; a rank no input holds is absent.
  void add_record_edge(const Finding& finding) {
    std::map<int, int> process_of_rank;
    for (size_t p = 0; p < job_.processes.size(); ++p)
      if (job_.world_rank[p]) process_of_rank.emplace(*job_.world_rank[p], static_cast<int>(p));
    auto node = [&](int rank) {
      auto found = process_of_rank.find(rank);
      return found != process_of_rank.end() ? found->second : absent_world_node(rank);
    };
    Edge edge;
    edge.finding = &finding;
    edge.records = true;
    for (int rank : finding.waiting) edge.from.push_back(node(rank));
    for (int rank : finding.culprits) edge.to.push_back(node(rank));
    if (!edge.from.empty() && !edge.to.empty()) edges_.push_back(std::move(edge));
  }

  int absent_world_node(int rank) {
    auto key = std::make_pair(uint64_t{0}, rank);
    auto found = absent_ids_.find(key);
    if (found != absent_ids_.end()) return found->second;
    int id = node_count_++;
    absent_ids_[key] = id;
    absent_nodes_.push_back({nullptr, rank});
    return id;
  }

  // Nodes with no usable input: absent ranks (unless every process was given and some hold no
  // communicator: a comm-less input stands for them, e.g. after ncclCommAbort), inputs that
  // could not be read (triage::unreadable_reason) and those whose host thread is unknown.
  std::vector<bool> no_input_nodes() const {
    std::vector<bool> no_input(node_count_, false);
    // A process whose host thread is unknown may wait on anyone: it never "waits on nobody".
    for (size_t p = 0; p < job_.processes.size(); ++p)
      no_input[p] = !unreadable_reason(job_.processes[p]).empty() ||
                    (!host_thread_known(job_.processes[p]) && !records_tell_waits(p));
    for (size_t a = 0; a < absent_nodes_.size(); ++a) {
      const CommGroup* comm = absent_nodes_[a].first;
      bool stood_for = comm != nullptr && job_.commless_processes.size() >= comm->missing_ranks.size();
      no_input[job_.processes.size() + a] = !stood_for;
    }
    return no_input;
  }

  // Nodes whose host thread waits in an operation the process issued (GPU wait, NCCL call), or,
  // for a dump, whose records end in an operation not completed: what it has not issued comes
  // later in its program order (blame.h, order-inversion).
  std::vector<bool> nodes_waiting_themselves() const {
    std::vector<bool> waits(node_count_, false);
    for (size_t p = 0; p < job_.processes.size(); ++p) {
      const ThreadView* thread = job_.processes[p].principal();
      waits[p] = thread != nullptr ? is_gpu_wait(thread->blocked_in) || is_nccl_host_call(thread->blocked_in) ||
                                         guessed_gpu_wait(*thread)
                                   : records_tell_waits(p);
    }
    return waits;
  }

  // A dump file has no host thread, but its records say what the rank waits in (or that
  // every operation it issued completed): as good as a thread for "waits on nobody".
  bool records_tell_waits(size_t p) const {
    return job_.processes[p].kind == "fr-dump" && p < job_.waits_from_records.size() && job_.waits_from_records[p];
  }

  // The operations the ranks waiting on `edge` need from its far side; nullopt where the
  // finding does not name one (a collective on a communicator no process group is joined to).
  std::optional<std::vector<OpKind>> owed_kinds(const Edge& edge) const {
    std::string what = edge.finding->collective;
    std::transform(what.begin(), what.end(), what.begin(), ::tolower);
    if (what == "send" || what == "recv") {
      std::vector<OpKind> kinds;
      for (int from : edge.from) {
        if (from >= static_cast<int>(job_.processes.size()) || !job_.world_rank[from]) return std::nullopt;
        kinds.push_back({"", what == "recv" ? "send" : "recv", *job_.world_rank[from]});
      }
      return kinds;
    }
    std::string group = edge.comm ? edge.comm->pg_name : edge.finding->extra.value("pg", std::string());
    if (what.empty() || what.find('/') != std::string::npos || group.empty()) return std::nullopt;
    return std::vector<OpKind>{{group, "collective", -1}};
  }

  // Per process: its program order and where each operation others wait on it for falls in it.
  void place_owed_operations() {
    owed_order_.assign(node_count_, OwedOrder::kUnknown);
    orders_.reserve(job_.processes.size());
    owed_.reserve(job_.processes.size());
    for (size_t p = 0; p < job_.processes.size(); ++p) {
      // The whole order only where others wait on it: the rest keep the report's few records.
      bool blamed = std::any_of(in_edges_[p].begin(), in_edges_[p].end(),
                                [this](int e) { return finding_kind(edges_[e].finding->kind).may_blame; });
      orders_.push_back(program_order_of(job_, static_cast<int>(p), blamed));
      owed_.emplace_back();
      bool all_later = true;
      for (int e : in_edges_[p]) {
        const Edge& edge = edges_[e];
        if (!finding_kind(edge.finding->kind).may_blame) continue;
        std::optional<std::vector<OpKind>> kinds = owed_kinds(edge);
        if (!kinds) all_later = false;
        for (const OpKind& kind : kinds.value_or(std::vector<OpKind>{})) {
          auto same = [&kind](const std::pair<OpKind, OwedPlace>& o) { return o.first == kind; };
          if (std::any_of(owed_[p].begin(), owed_[p].end(), same)) continue;
          owed_[p].push_back({kind, place_owed(orders_[p], kind)});
        }
      }
      for (const auto& owed : owed_[p]) {
        if (owed.second.order == OwedOrder::kEarlier) owed_order_[p] = OwedOrder::kEarlier;
        all_later = all_later && owed.second.order == OwedOrder::kLater;
      }
      if (owed_order_[p] == OwedOrder::kUnknown && all_later && !owed_[p].empty()) owed_order_[p] = OwedOrder::kLater;
      keep_report_ops(&orders_[p]);
    }
  }

  // "rank 1: its own records repeat ... ": why program order picked this culprit.
  json program_order_evidence(const std::vector<int>& nodes) const {
    json lines = json::array();
    for (int n : nodes)
      for (const auto& owed : owed_[n])
        if (owed.second.order == OwedOrder::kEarlier) lines.push_back(job_.process_label(n) + ": " + owed.second.why);
    return lines;
  }

  int absent_startup_node(int rank) {
    int id = node_count_++;
    absent_nodes_.push_back({nullptr, rank});
    return id;
  }

  void compute_adjacency() {
    out_edges_.assign(node_count_, {});
    in_edges_.assign(node_count_, {});
    for (size_t e = 0; e < edges_.size(); ++e) {
      for (int n : edges_[e].from) out_edges_[n].push_back(static_cast<int>(e));
      for (int n : edges_[e].to) in_edges_[n].push_back(static_cast<int>(e));
    }
  }

  // The longest wait chain (ignoring edges back into nodes being visited).
  json longest_chain() const {
    std::vector<int> depth(node_count_, -1), next(node_count_, -1);
    std::vector<bool> visiting(node_count_, false);
    std::function<int(int)> visit = [&](int n) -> int {
      if (depth[n] >= 0) return depth[n];
      if (visiting[n]) return 0;
      visiting[n] = true;
      int best = 0;
      for (int e : out_edges_[n])
        for (int to : edges_[e].to) {
          if (visiting[to]) continue;
          int d = 1 + visit(to);
          if (d > best) best = d, next[n] = to;
        }
      visiting[n] = false;
      return depth[n] = best;
    };
    int start = -1, best = 0;
    for (int n = 0; n < node_count_; ++n)
      if (in_edges_[n].empty() && !out_edges_[n].empty() && visit(n) > best) best = depth[n], start = n;
    json chain = json::array();
    std::set<int> seen;
    for (int n = start; n >= 0 && seen.insert(n).second; n = next[n]) chain.push_back(n);
    return chain;
  }

  // culprit / suspect (blame), else waiting (it waits on someone), waited-on, idle; absent.
  std::string role_of(int n) const {
    if (std::binary_search(blame_.culprits.begin(), blame_.culprits.end(), n)) return "culprit";
    if (std::binary_search(blame_.suspects.begin(), blame_.suspects.end(), n)) return "suspect";
    if (n >= static_cast<int>(job_.processes.size())) return "absent";
    if (!out_edges_[n].empty()) return "waiting";
    if (!in_edges_[n].empty()) return "waited-on";
    return "idle";
  }

  // One entry per blame decision: the nodes, the kind, and the rule that decided it.
  json blame_json() const {
    static const std::map<std::string, std::string> kRules = {
        {"skipped", "waited on, waits on nobody: it did not issue what the others wait for"},
        {"not-reached", "waited on only by ranks whose operation it issued but its GPU has not reached; "
                        "what it waits on is not visible"},
        {"skipped-in-cycle", "the ranks wait on each other in a cycle; these alone, taken as having "
                             "skipped, explain every wait (their own waits follow from the skip)"},
        {"order-inversion", "the two ranks wait on each other in a cycle, each in an operation it issued and "
                            "owing the one the other waits in: they issued the two in opposite orders; nobody "
                            "skipped (a deadlock, no culprit)"},
        {"cycle-undecided", "the ranks wait on each other in a cycle and more than one rank alone would "
                            "explain every wait: the inputs do not say which skipped"},
        {"no-input", "waited on, but no usable input holds it: whether it skipped or waits like the others "
                     "is unknown (absence is never evidence); its input would decide"}};
    bool any_no_input = std::any_of(blame_.reasons.begin(), blame_.reasons.end(),
                                    [](const BlameResult::Reason& r) { return r.kind == "no-input"; });
    json out = json::array();
    for (const BlameResult::Reason& reason : blame_.reasons) {
      json entry = {{"nodes", reason.nodes}, {"kind", reason.kind}, {"rule", kRules.at(reason.kind)}};
      // A culprit beside ranks without input: say that the ranks present decided it alone.
      if (any_no_input && (reason.kind == "skipped" || reason.kind == "skipped-in-cycle"))
        entry["evidence"] = proven_by_present(reason.nodes);
      if (reason.by_program_order) {
        entry["rule"] = "the ranks wait on each other in a cycle and several ranks alone would explain every wait; "
                        "program order decides: this one sits in an operation later than one it owes, each other's "
                        "owed operations come after the wait it sits in";
        entry["program_order"] = program_order_evidence(reason.nodes);
      }
      out.push_back(entry);
    }
    return out;
  }

  // "decided by the ranks present: ranks 0-2 wait on it (missing-collective) and it waits on no
  // rank without input".
  std::string proven_by_present(const std::vector<int>& culprits) const {
    std::set<std::string> kinds;
    std::vector<int> waiting;
    for (int culprit : culprits)
      for (int e : in_edges_[culprit]) {
        if (!finding_kind(edges_[e].finding->kind).may_blame) continue;
        kinds.insert(edges_[e].finding->kind);
        for (int from : edges_[e].from)
          if (job_.world_rank.size() > static_cast<size_t>(from) && job_.world_rank[from]) waiting.push_back(*job_.world_rank[from]);
      }
    normalize_ranks(&waiting);
    std::string kind_list;
    for (const std::string& kind : kinds) kind_list += (kind_list.empty() ? "" : ", ") + kind;
    return "decided by the inputs present alone: " + (waiting.empty() ? std::string("ranks present") : ranks_phrase(waiting)) +
           " wait on it (" + kind_list + ") and it waits on no rank without input";
  }

  json nodes_json() const {
    // One node per process, built over the CPUs (100,000 ranks: seconds on one).
    json nodes = parallel_json_array(job_.processes.size(), [&](size_t p) {
      const ProcessView& process = job_.processes[p];
      int n = static_cast<int>(p);
      // Field by field: a braced list builds a two-element array per field first (twice the time).
      json node = json::object();
      node["id"] = n;
      node["label"] = job_.process_label(n);
      node["kind"] = "process";
      node["world_rank"] = job_.world_rank[p] ? json(*job_.world_rank[p]) : json(nullptr);
      node["input"] = process.input_name;
      node["role"] = role_of(n);
      // What the rank waits in: a raw value (util/json_raw.h), read by nothing in the process.
      thread_local JsonText waits_in;
      waits_in.clear();
      waits_in.begin_array();
      if (const ThreadView* thread = process.principal()) {
        node["blocked_in"] = thread->blocked_in.empty() ? json(nullptr) : json(thread->blocked_in);
        node["doing"] = describe_thread(*thread);
        json python = json::array();  // the HTML page's per-rank panel: innermost first
        for (const FrameView& frame : thread->frames)
          if (frame.python && python.size() < 24) python.push_back(frame_text(frame));
        node["python_stack"] = std::move(python);
        waits_in.begin_object().key("blocked_in").string(thread->blocked_in).key("tid").number_or_null(thread->tid);
        waits_in.key("what").string("host-thread").end_object();
      } else if (p < job_.recorded_site.size() && !job_.recorded_site[p].empty()) {
        node["blocked_in"] = nullptr;
        node["doing"] = job_.recorded_site[p];
      } else {
        node["blocked_in"] = nullptr;
        node["doing"] = "no host thread in its snapshot";
      }
      for (int e : out_edges_[n]) {  // keys in nlohmann's order
        const Edge& edge = edges_[e];
        waits_in.begin_object().key("collective").string_or_null(edge.finding->collective);
        waits_in.key("comm_hash");
        if (edge.comm) waits_in.string(edge.comm->hash_text);
        else waits_in.null();
        waits_in.key("kind").string(edge.finding->kind).key("seq").number_or_null(edge.finding->seq);
        waits_in.key("what").string(edge.comm ? "comm-op" : edge.records ? "pg-op" : "rendezvous").end_object();
      }
      node["waits_in"] = raw_json(waits_in.end_array().text());
      node["program_order"] = program_order_json(job_, n, orders_[p], owed_[p]);
      return node;
    });
    for (size_t a = 0; a < absent_nodes_.size(); ++a) {
      const auto& [comm, rank] = absent_nodes_[a];
      bool world = comm == nullptr || (job_.world_comm >= 0 && comm == &job_.comms[job_.world_comm]);
      int n = static_cast<int>(job_.processes.size() + a);
      std::string label = "rank " + std::to_string(rank) + (world ? "" : " of comm " + comm->hash_text) + " (no input)";
      nodes.push_back({{"id", n}, {"label", label}, {"kind", "absent"},
                       {"world_rank", world ? json(rank) : json(nullptr)}, {"input", nullptr},
                       {"comm_hash", comm ? json(comm->hash_text) : json(nullptr)}, {"comm_rank", rank},
                       {"role", role_of(n)},
                       {"blocked_in", nullptr},
                       {"doing", comm ? absent_doing()
                                 : job_.torch_findings.empty() ? "no input holds this rank (WORLD_SIZE counts it)"
                                                               : "no input holds this rank (its process groups name it)"},
                       {"waits_in", json::array()}});
    }
    return nodes;
  }

  // An absent rank may be a given process that lost its communicators (ncclCommAbort).
  std::string absent_doing() const {
    if (job_.commless_processes.empty()) return "no input holds this rank";
    int p = job_.commless_processes.front();
    std::string text = "no input holds this rank; " + job_.processes[p].input_name +
                       " holds no usable communicator" + rejected_comms_note(job_.processes[p]) +
                       " and may be it: " + process_doing(job_, p);
    if (job_.commless_processes.size() > 1)
      text += " (and " + std::to_string(job_.commless_processes.size() - 1) + " more such inputs)";
    return text;
  }

  // "rank 5" (world), "rank 5 (comm rank 1)" where the communicator's own rank differs.
  std::string rank_label(const CommGroup& comm, int rank) const {
    const Member* member = comm.find(rank);
    bool world = job_.world_comm >= 0 && &job_.comms[job_.world_comm] == &comm;
    if (member == nullptr || !job_.world_rank[member->process])
      return "rank " + std::to_string(rank) + (world ? "" : " of comm " + comm.hash_text);
    int w = *job_.world_rank[member->process];
    return "rank " + std::to_string(w) + (w == rank ? "" : " (comm rank " + std::to_string(rank) + ")");
  }

  // "ring: rank 0 receives from rank 1 on channels 0-1" for small edges.
  json peer_relations(const Edge& edge) const {
    json relations = json::array();
    const Finding& finding = *edge.finding;
    if (edge.comm == nullptr || finding.waiting.size() * finding.culprits.size() > 64) return relations;
    for (int waiting : finding.waiting) {
      const Member* member = edge.comm->find(waiting);
      if (member == nullptr) continue;
      const CommView& comm = job_.comm_of(*member);
      for (int culprit : finding.culprits) {
        std::vector<int> ring_from, ring_to, tree_parent, tree_child;
        for (const ChannelView& channel : comm.channels) {
          if (channel.ring_prev && *channel.ring_prev == culprit) ring_from.push_back(channel.id);
          if (channel.ring_next && *channel.ring_next == culprit) ring_to.push_back(channel.id);
          if (channel.tree_up && *channel.tree_up == culprit) tree_parent.push_back(channel.id);
          if (std::find(channel.tree_down.begin(), channel.tree_down.end(), culprit) != channel.tree_down.end())
            tree_child.push_back(channel.id);
        }
        std::string w = rank_label(*edge.comm, waiting), c = rank_label(*edge.comm, culprit);
        auto channels = [](const std::vector<int>& ids) {
          return (ids.size() == 1 ? " on channel " : " on channels ") + format_rank_set(ids);
        };
        if (!ring_from.empty()) relations.push_back("ring: " + w + " receives from " + c + channels(ring_from));
        if (!ring_to.empty()) relations.push_back("ring: " + w + " sends to " + c + channels(ring_to));
        if (!tree_parent.empty()) relations.push_back("tree: " + c + " is the parent of " + w + channels(tree_parent));
        if (!tree_child.empty()) relations.push_back("tree: " + c + " is a child of " + w + channels(tree_child));
      }
    }
    return relations;
  }

  // PyTorch's description of a records finding's process group ("tp1"), else its name; null.
  static json record_group_label(const Finding& finding) {
    if (!finding.extra.contains("pg")) return nullptr;
    std::string desc = finding.extra.value("pg_desc", std::string());
    return desc.empty() || desc == "undefined" ? finding.extra["pg"] : json(desc);
  }

  json edges_json() const {
    json edges = json::array();
    for (const Edge& edge : edges_) {
      const Finding& finding = *edge.finding;
      std::string label = finding.collective.empty() ? finding.kind : finding.collective;
      if (finding.seq) label += " #" + std::to_string(*finding.seq);
      edges.push_back({{"from", edge.from}, {"to", edge.to}, {"kind", finding.edge_kind},
                       {"finding", finding.kind},
                       {"comm_hash", edge.comm ? json(edge.comm->hash_text) : json(nullptr)},
                       {"process_group", record_group_label(finding)},
                       {"collective", finding.collective.empty() ? json(nullptr) : json(finding.collective)},
                       {"seq", finding.seq ? json(*finding.seq) : json(nullptr)},
                       {"label", label}, {"peer_relations", peer_relations(edge)}});
      // Kernel views: what the waiting ranks' kernels wait for on these culprits.
      if (!finding.kernel_waits.is_null()) edges.back()["kernel"] = finding.kernel_waits;
    }
    return edges;
  }

  const Job& job_;
  int node_count_ = 0;
  std::vector<Edge> edges_;
  std::map<std::pair<uint64_t, int>, int> absent_ids_;
  std::vector<std::pair<const CommGroup*, int>> absent_nodes_;
  std::vector<std::vector<int>> out_edges_, in_edges_;
  BlameResult blame_;
  std::vector<ProgramOrder> orders_;                                // per process
  std::vector<std::vector<std::pair<OpKind, OwedPlace>>> owed_;     // per process
  std::vector<OwedOrder> owed_order_;                               // per node
};

// The channels' ring and tree neighbours are read by the edges' peer relations alone: freed
// before the nodes are built, so that the nodes reuse their memory (1.4 KB a rank; at 100,000
// ranks fresh memory costs more than the work put in it, docs/triage.md "Scale").
void release_channels(Job* job) {
  for (ProcessView& process : job->processes)
    for (CommView& comm : process.comms) std::vector<ChannelView>().swap(comm.channels);
}

}  // namespace

json build_wait_graph(Job* job) {
  GraphBuilder builder(*job);
  json graph = builder.build_without_nodes();
  release_channels(job);
  graph["nodes"] = builder.nodes();
  return graph;
}

}  // namespace nsc::triage
