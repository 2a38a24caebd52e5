// The wait-for graph as the renderers draw it (DOT and the HTML page's SVG): above a
// threshold of nodes, ranks in the same situation (role, activity, edges, cycle) share one
// drawn node, so a 2,048-rank hang draws as a handful of boxes.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nsc::triage {

struct GraphGroups {
  std::vector<std::vector<int>> members;  // per drawn node: the graph's node ids, in id order
  std::vector<int> group_of_node;         // per graph node: its drawn node
  std::set<int> in_cycle;                 // graph node ids on a cycle (deadlock)

  // "rank 3", or "ranks 0,2-7 (7)" for a group.
  std::string label(const nlohmann::json& nodes, size_t group) const;
};

// `graph` is the triage document's "graph" object.
GraphGroups group_graph_nodes(const nlohmann::json& graph, size_t group_threshold);

}  // namespace nsc::triage
