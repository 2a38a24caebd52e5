// Blame over the wait-for graph: sink components decide who skipped (docs/triage.md).
#include "triage/blame.h"

#include <algorithm>
#include <set>

namespace nsc::triage {
namespace {

// Hyper-edges as a bipartite graph: vertex n < node_count is a node, node_count + e is edge e.
class WaitGraph {
 public:
  WaitGraph(int node_count, const std::vector<WaitEdge>& edges)
      : node_count_(node_count), edges_(edges), out_(node_count) {
    for (size_t e = 0; e < edges.size(); ++e)
      for (int n : edges[e].from) out_[n].push_back(static_cast<int>(e));
  }

  int node_count() const { return node_count_; }
  const std::vector<int>& out_edges(int node) const { return out_[node]; }
  const WaitEdge& edge(int e) const { return edges_[e]; }

  // Tarjan's SCC, iterative; the component id of every node.
  std::vector<int> components() const {
    const int total = node_count_ + static_cast<int>(edges_.size());
    std::vector<int> index(total, -1), low(total, 0), component(total, -1), stack;
    std::vector<bool> on_stack(total, false);
    int counter = 0, components = 0;
    struct Frame { int vertex; size_t position; };
    for (int start = 0; start < total; ++start) {
      if (index[start] >= 0) continue;
      std::vector<Frame> frames;
      auto open = [&](int v) {
        index[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = true;
        frames.push_back({v, 0});
      };
      open(start);
      while (!frames.empty()) {
        Frame& frame = frames.back();
        int next = successor(frame.vertex, frame.position);
        if (next >= 0) {
          ++frame.position;
          if (index[next] < 0) open(next);
          else if (on_stack[next]) low[frame.vertex] = std::min(low[frame.vertex], index[next]);
          continue;
        }
        int v = frame.vertex;
        frames.pop_back();
        if (!frames.empty()) low[frames.back().vertex] = std::min(low[frames.back().vertex], low[v]);
        if (low[v] != index[v]) continue;
        int w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          component[w] = components;
        } while (w != v);
        ++components;
      }
    }
    component.resize(node_count_);
    return component;
  }

  bool has_self_loop(int node) const {
    for (int e : out_[node])
      if (std::find(edges_[e].to.begin(), edges_[e].to.end(), node) != edges_[e].to.end()) return true;
    return false;
  }

  // Is there a cycle through a blaming edge among `members` once the waits of `dropped` are
  // left out? Cycles of queued edges alone (a tree's up and down phases both waiting) blame
  // nobody and do not count.
  bool has_blaming_cycle(const std::vector<int>& members, const std::set<int>& dropped) const {
    std::set<int> inside(members.begin(), members.end());
    for (int from : members) {
      if (dropped.count(from)) continue;
      for (int e : out_[from]) {
        if (!edges_[e].blames_target) continue;
        for (int to : edges_[e].to)
          if (inside.count(to) && !dropped.count(to) && reaches(to, from, inside, dropped)) return true;
      }
    }
    return false;
  }

 private:
  // Breadth-first: does `start` reach `goal` through nodes of `inside` not in `dropped`?
  bool reaches(int start, int goal, const std::set<int>& inside, const std::set<int>& dropped) const {
    std::vector<char> seen(node_count_ + edges_.size(), 0);
    std::vector<int> queue{start};
    seen[start] = 1;
    for (size_t head = 0; head < queue.size(); ++head) {
      int node = queue[head];
      if (node == goal) return true;
      if (dropped.count(node)) continue;
      for (int e : out_[node]) {
        if (seen[node_count_ + e]) continue;
        seen[node_count_ + e] = 1;
        for (int to : edges_[e].to)
          if (!seen[to] && inside.count(to)) {
            seen[to] = 1;
            queue.push_back(to);
          }
      }
    }
    return false;
  }

  // The position-th successor of a bipartite vertex, or -1.
  int successor(int vertex, size_t position) const {
    if (vertex < node_count_) {
      const auto& out = out_[vertex];
      return position < out.size() ? node_count_ + out[position] : -1;
    }
    const auto& to = edges_[vertex - node_count_].to;
    return position < to.size() ? to[position] : -1;
  }

  int node_count_;
  const std::vector<WaitEdge>& edges_;
  std::vector<std::vector<int>> out_;
};

struct Component {
  std::vector<int> members;
  bool cyclic = false;
  bool sink = true;
};

std::vector<Component> group_components(const WaitGraph& graph, const std::vector<int>& component_of) {
  int count = component_of.empty() ? 0 : *std::max_element(component_of.begin(), component_of.end()) + 1;
  std::vector<Component> components(count);
  for (int n = 0; n < graph.node_count(); ++n) components[component_of[n]].members.push_back(n);
  for (int n = 0; n < graph.node_count(); ++n)
    for (int e : graph.out_edges(n))
      for (int to : graph.edge(e).to)
        if (component_of[to] != component_of[n]) components[component_of[n]].sink = false;
  // Components of edge vertices alone hold no node: dropped.
  components.erase(std::remove_if(components.begin(), components.end(),
                                  [](const Component& c) { return c.members.empty(); }),
                   components.end());
  for (Component& component : components)
    component.cyclic = component.members.size() > 1 ||
                       (component.members.size() == 1 && graph.has_self_loop(component.members[0]));
  return components;
}

// Nodes of the component some member waits on through a blaming edge.
std::vector<int> blamed_members(const WaitGraph& graph, const Component& component) {
  std::set<int> inside(component.members.begin(), component.members.end()), blamed;
  for (int n : component.members)
    for (int e : graph.out_edges(n))
      if (graph.edge(e).blames_target)
        for (int to : graph.edge(e).to)
          if (inside.count(to)) blamed.insert(to);
  return {blamed.begin(), blamed.end()};
}

// Per node: waited on at all, and waited on through a blaming edge.
struct InEdges {
  std::vector<char> waited_on, blamed;
};

InEdges in_edges_of(const WaitGraph& graph) {
  InEdges in{std::vector<char>(graph.node_count(), 0), std::vector<char>(graph.node_count(), 0)};
  for (int n = 0; n < graph.node_count(); ++n)
    for (int e : graph.out_edges(n))
      for (int to : graph.edge(e).to) {
        in.waited_on[to] = 1;
        if (graph.edge(e).blames_target) in.blamed[to] = 1;
      }
  return in;
}

// The smallest sets of blamed members whose waits, once dropped, break every cycle.
// Singles always; pairs only for small candidate lists (the search is quadratic).
std::vector<std::set<int>> smallest_cycle_breakers(const WaitGraph& graph, const Component& component,
                                                   const std::vector<int>& candidates) {
  std::vector<std::set<int>> found;
  for (int candidate : candidates)
    if (!graph.has_blaming_cycle(component.members, {candidate})) found.push_back({candidate});
  if (!found.empty() || candidates.size() > 48) return found;
  for (size_t a = 0; a < candidates.size(); ++a)
    for (size_t b = a + 1; b < candidates.size(); ++b)
      if (!graph.has_blaming_cycle(component.members, {candidates[a], candidates[b]}))
        found.push_back({candidates[a], candidates[b]});
  return found;
}

// `from` waits on `to` through a blaming edge, and on nobody else.
bool waits_only_on(const WaitGraph& graph, int from, int to) {
  bool blamed = false;
  for (int e : graph.out_edges(from)) {
    const std::vector<int>& targets = graph.edge(e).to;
    if (std::any_of(targets.begin(), targets.end(), [to](int n) { return n != to; })) return false;
    blamed = blamed || graph.edge(e).blames_target;
  }
  return blamed;
}

// Two ranks, each alone a cycle breaker, waiting on each other only, each owing the other what
// the other waits in, both waiting in what they issued themselves: each issued its operation
// before the one it owes. A third rank in either's wait could be the one that skipped.
bool opposite_orders(const WaitGraph& graph, const std::vector<std::set<int>>& breakers,
                     const std::vector<bool>& waits_itself) {
  if (breakers.size() != 2 || breakers[0].size() != 1 || breakers[1].size() != 1) return false;
  int a = *breakers[0].begin(), b = *breakers[1].begin();
  auto waits = [&](int n) { return static_cast<size_t>(n) < waits_itself.size() && waits_itself[n]; };
  return waits(a) && waits(b) && waits_only_on(graph, a, b) && waits_only_on(graph, b, a);
}

// The one single-rank breaker that moved past an operation it owes, when every other breaker's
// owed operations come after its own wait (program order, rule 3); -1 when the order does not say.
int moved_past_owed(const std::vector<std::set<int>>& breakers, const std::vector<OwedOrder>& owed_order) {
  auto order = [&](int n) { return static_cast<size_t>(n) < owed_order.size() ? owed_order[n] : OwedOrder::kUnknown; };
  int found = -1;
  for (const std::set<int>& set : breakers) {
    if (set.size() != 1) return -1;
    int node = *set.begin();
    if (order(node) == OwedOrder::kEarlier) {
      if (found >= 0) return -1;
      found = node;
    } else if (order(node) != OwedOrder::kLater) {
      return -1;
    }
  }
  return found;
}

// A lone cycle breaker whose own records put everything it owes after the operation it sits in
// (rule 3): its missing operations follow from its own wait, so it is no culprit for them.
bool explained_by_own_wait(const std::set<int>& breaker, const std::vector<OwedOrder>& owed_order) {
  return breaker.size() == 1 && static_cast<size_t>(*breaker.begin()) < owed_order.size() &&
         owed_order[*breaker.begin()] == OwedOrder::kLater;
}

void decide_cycle(const WaitGraph& graph, const Component& component, const std::vector<bool>& waits_itself,
                  const std::vector<OwedOrder>& owed_order, BlameResult* result) {
  std::vector<int> candidates = blamed_members(graph, component);
  if (!graph.has_blaming_cycle(component.members, {})) {
    // Queued waits only (each waits for data another has not sent): nobody visibly skipped.
    result->suspects.insert(result->suspects.end(), component.members.begin(), component.members.end());
    result->reasons.push_back({component.members, "not-reached"});
    return;
  }
  std::vector<std::set<int>> breakers = smallest_cycle_breakers(graph, component, candidates);
  if (breakers.size() == 1 && !explained_by_own_wait(breakers[0], owed_order)) {
    result->culprits.insert(result->culprits.end(), breakers[0].begin(), breakers[0].end());
    result->reasons.push_back({{breakers[0].begin(), breakers[0].end()}, "skipped-in-cycle"});
    return;
  }
  if (breakers.size() == 1) {  // the lone breaker waits in what comes first: who moved is not told
    std::set<int> suspects(breakers[0].begin(), breakers[0].end());
    for (int n : component.members)
      if (static_cast<size_t>(n) < owed_order.size() && owed_order[n] == OwedOrder::kEarlier) suspects.insert(n);
    result->suspects.insert(result->suspects.end(), suspects.begin(), suspects.end());
    result->reasons.push_back({{suspects.begin(), suspects.end()}, "cycle-undecided"});
    return;
  }
  if (opposite_orders(graph, breakers, waits_itself)) {  // a deadlock by order: no culprit, no suspect
    result->reasons.push_back({{*breakers[0].begin(), *breakers[1].begin()}, "order-inversion"});
    return;
  }
  if (int culprit = moved_past_owed(breakers, owed_order); culprit >= 0) {
    result->culprits.push_back(culprit);
    result->reasons.push_back({{culprit}, "skipped-in-cycle", true});
    return;
  }
  std::set<int> suspects;
  for (const auto& set : breakers) suspects.insert(set.begin(), set.end());
  if (suspects.empty()) suspects.insert(candidates.begin(), candidates.end());
  if (suspects.empty()) suspects.insert(component.members.begin(), component.members.end());
  result->suspects.insert(result->suspects.end(), suspects.begin(), suspects.end());
  result->reasons.push_back({{suspects.begin(), suspects.end()}, "cycle-undecided"});
}

}  // namespace

std::vector<std::vector<int>> find_wait_cycles(int node_count, const std::vector<WaitEdge>& edges) {
  WaitGraph graph(node_count, edges);
  std::vector<std::vector<int>> cycles;
  for (const Component& component : group_components(graph, graph.components()))
    if (component.cyclic) cycles.push_back(component.members);
  std::sort(cycles.begin(), cycles.end());
  return cycles;
}

BlameResult assign_blame(int node_count, const std::vector<WaitEdge>& edges, const std::vector<bool>& no_input,
                         const std::vector<bool>& waits_itself, const std::vector<OwedOrder>& owed_order) {
  WaitGraph graph(node_count, edges);
  BlameResult result;
  InEdges in = in_edges_of(graph);
  for (const Component& component : group_components(graph, graph.components())) {
    if (component.cyclic) result.cycles.push_back(component.members);
    if (!component.sink) continue;  // it waits on something further down the chain
    if (component.cyclic) {
      std::vector<int> unknown;  // members without usable input: their waits are not all known
      for (int n : component.members)
        if (static_cast<size_t>(n) < no_input.size() && no_input[n]) unknown.push_back(n);
      if (unknown.empty()) {
        decide_cycle(graph, component, waits_itself, owed_order, &result);
      } else {
        result.suspects.insert(result.suspects.end(), unknown.begin(), unknown.end());
        result.reasons.push_back({unknown, "no-input"});
      }
      continue;
    }
    int node = component.members[0];
    if (!in.waited_on[node]) continue;  // idle: nobody waits on it
    if (static_cast<size_t>(node) < no_input.size() && no_input[node]) {
      // Absence is never evidence: it may have skipped, or wait like the others.
      result.suspects.push_back(node);
      result.reasons.push_back({{node}, "no-input"});
    } else if (in.blamed[node]) {
      result.culprits.push_back(node);
      result.reasons.push_back({{node}, "skipped"});
    } else {
      result.suspects.push_back(node);
      result.reasons.push_back({{node}, "not-reached"});
    }
  }
  std::sort(result.culprits.begin(), result.culprits.end());
  std::sort(result.suspects.begin(), result.suspects.end());
  std::sort(result.cycles.begin(), result.cycles.end());
  return result;
}

}  // namespace nsc::triage
