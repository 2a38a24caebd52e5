// Wait-for graph: one node per process (and per absent rank), hyper-edges
// "these ranks wait on those" from the findings, cycles (deadlock) told apart
// from chains that end at a culprit.
#include <algorithm>
#include <functional>
#include <set>

#include "triage/analysis.h"
#include "triage/rank_set.h"

namespace nsc::triage {
namespace {

using nlohmann::json;

struct Edge {
  std::vector<int> from, to;
  const Finding* finding = nullptr;
  const CommGroup* comm = nullptr;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(const Job& job) : job_(job) {
    node_count_ = static_cast<int>(job.processes.size());
  }

  json build() {
    for (size_t g = 0; g < job_.comms.size(); ++g)
      for (const Finding& finding : job_.findings[g]) add_edge(job_.comms[g], finding);
    compute_adjacency();
    std::vector<std::vector<int>> cycles = find_cycles();
    json graph;
    graph["nodes"] = nodes_json();
    graph["edges"] = edges_json();
    graph["cycles"] = json::array();
    for (const auto& cycle : cycles) graph["cycles"].push_back(cycle);
    std::vector<int> sinks;
    for (int n = 0; n < node_count_; ++n)
      if (!in_edges_[n].empty() && out_edges_[n].empty()) sinks.push_back(n);
    graph["root_culprits"] = sinks;
    graph["longest_chain"] = longest_chain();
    return graph;
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

  void compute_adjacency() {
    out_edges_.assign(node_count_, {});
    in_edges_.assign(node_count_, {});
    for (size_t e = 0; e < edges_.size(); ++e) {
      for (int n : edges_[e].from) out_edges_[n].push_back(static_cast<int>(e));
      for (int n : edges_[e].to) in_edges_[n].push_back(static_cast<int>(e));
    }
  }

  // Tarjan's SCC, iterative, over nodes plus one vertex per hyper-edge
  // (node -> edge -> targets keeps it linear in the edge sizes).
  std::vector<std::vector<int>> find_cycles() const {
    const int total = node_count_ + static_cast<int>(edges_.size());
    auto successors = [&](int v) -> std::vector<int> {
      std::vector<int> next;
      if (v < node_count_) {
        for (int e : out_edges_[v]) next.push_back(node_count_ + e);
      } else {
        next = edges_[v - node_count_].to;
      }
      return next;
    };
    std::vector<int> index(total, -1), low(total, 0);
    std::vector<bool> on_stack(total, false);
    std::vector<int> stack;
    std::vector<std::vector<int>> cycles;
    int counter = 0;
    struct Frame {
      int vertex;
      std::vector<int> next;
      size_t position;
    };
    for (int start = 0; start < total; ++start) {
      if (index[start] >= 0) continue;
      std::vector<Frame> frames;
      auto open = [&](int v) {
        index[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = true;
        frames.push_back({v, successors(v), 0});
      };
      open(start);
      while (!frames.empty()) {
        Frame& frame = frames.back();
        if (frame.position < frame.next.size()) {
          int w = frame.next[frame.position++];
          if (index[w] < 0) open(w);
          else if (on_stack[w]) low[frame.vertex] = std::min(low[frame.vertex], index[w]);
          continue;
        }
        int v = frame.vertex;
        frames.pop_back();
        if (!frames.empty()) low[frames.back().vertex] = std::min(low[frames.back().vertex], low[v]);
        if (low[v] != index[v]) continue;
        std::vector<int> component;
        int w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          if (w < node_count_) component.push_back(w);
        } while (w != v);
        bool self_loop = false;
        if (component.size() == 1)
          for (int e : out_edges_[component[0]]) {
            const auto& to = edges_[e].to;
            self_loop = self_loop || std::find(to.begin(), to.end(), component[0]) != to.end();
          }
        if (component.size() > 1 || self_loop) {
          std::sort(component.begin(), component.end());
          cycles.push_back(component);
        }
      }
    }
    return cycles;
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

  std::string role_of(int n) const {
    if (n >= static_cast<int>(job_.processes.size())) return "absent";
    bool out = !out_edges_[n].empty(), in = !in_edges_[n].empty();
    if (out && in) return "waiting-culprit";
    if (out) return "waiting";
    if (in) return "culprit";
    return "idle";
  }

  json nodes_json() const {
    json nodes = json::array();
    for (size_t p = 0; p < job_.processes.size(); ++p) {
      const ProcessView& process = job_.processes[p];
      int n = static_cast<int>(p);
      json node = {{"id", n}, {"label", job_.process_label(n)}, {"kind", "process"},
                   {"world_rank", job_.world_rank[p] ? json(*job_.world_rank[p]) : json(nullptr)},
                   {"input", process.input_name}, {"role", role_of(n)}};
      json waits_in = json::array();
      if (const ThreadView* thread = process.principal()) {
        node["blocked_in"] = thread->blocked_in.empty() ? json(nullptr) : json(thread->blocked_in);
        node["doing"] = describe_thread(*thread);
        waits_in.push_back({{"what", "host-thread"}, {"tid", thread->tid ? json(*thread->tid) : json(nullptr)},
                            {"blocked_in", thread->blocked_in}});
      } else {
        node["blocked_in"] = nullptr;
        node["doing"] = "no host thread in its snapshot";
      }
      for (int e : out_edges_[n]) {
        const Edge& edge = edges_[e];
        waits_in.push_back({{"what", "comm-op"}, {"comm_hash", edge.comm->hash_text},
                            {"kind", edge.finding->kind},
                            {"collective", edge.finding->collective.empty() ? json(nullptr) : json(edge.finding->collective)},
                            {"seq", edge.finding->seq ? json(*edge.finding->seq) : json(nullptr)}});
      }
      node["waits_in"] = waits_in;
      nodes.push_back(node);
    }
    for (size_t a = 0; a < absent_nodes_.size(); ++a) {
      const auto& [comm, rank] = absent_nodes_[a];
      bool world = job_.world_comm >= 0 && comm == &job_.comms[job_.world_comm];
      int n = static_cast<int>(job_.processes.size() + a);
      std::string label = "rank " + std::to_string(rank) + (world ? "" : " of comm " + comm->hash_text) + " (no input)";
      nodes.push_back({{"id", n}, {"label", label}, {"kind", "absent"},
                       {"world_rank", world ? json(rank) : json(nullptr)}, {"input", nullptr},
                       {"comm_hash", comm->hash_text}, {"comm_rank", rank}, {"role", "absent"},
                       {"blocked_in", nullptr}, {"doing", absent_doing()},
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

  // "ring: rank 0 receives from rank 1 on channels 0-1" for small edges.
  json peer_relations(const Edge& edge) const {
    json relations = json::array();
    const Finding& finding = *edge.finding;
    if (finding.waiting.size() * finding.culprits.size() > 64) return relations;
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
        std::string w = "rank " + std::to_string(waiting), c = "rank " + std::to_string(culprit);
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

  json edges_json() const {
    json edges = json::array();
    for (const Edge& edge : edges_) {
      const Finding& finding = *edge.finding;
      std::string label = finding.collective.empty() ? finding.kind : finding.collective;
      if (finding.seq) label += " #" + std::to_string(*finding.seq);
      edges.push_back({{"from", edge.from}, {"to", edge.to}, {"kind", finding.edge_kind},
                       {"finding", finding.kind}, {"comm_hash", edge.comm->hash_text},
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
};

}  // namespace

json build_wait_graph(const Job& job) { return GraphBuilder(job).build(); }

}  // namespace nsc::triage
