#include "triage/graph_groups.h"

#include <map>

#include "triage/rank_set.h"
#include "util/json_access.h"

namespace nsc::triage {

using nlohmann::json;

namespace {


}  // namespace

std::string GraphGroups::label(const json& nodes, size_t group) const {
  const std::vector<int>& ids = members[group];
  if (ids.size() == 1) return json_text(nodes[ids.front()]["label"]);
  std::vector<int> ranks;
  for (int n : ids) ranks.push_back(nodes[n]["world_rank"].get<int>());
  // Graphviz refuses a quoted string over 16,384 bytes (100,000 ranks: a group's set was longer),
  // and a long list is unreadable in a box anyway: its start, then the count.
  constexpr size_t kMaxRanksText = 160;
  return ranks_phrase_start(ranks, kMaxRanksText) + " (" + std::to_string(ranks.size()) + ")";
}

GraphGroups group_graph_nodes(const json& graph, size_t group_threshold) {
  GraphGroups groups;
  const json& nodes = graph["nodes"];
  const json& edges = graph["edges"];
  for (const json& cycle : graph["cycles"])
    for (const json& id : cycle) groups.in_cycle.insert(id.get<int>());
  std::vector<std::vector<int>> out_of(nodes.size()), in_of(nodes.size());
  for (size_t e = 0; e < edges.size(); ++e) {
    for (const json& id : edges[e]["from"]) out_of[id.get<size_t>()].push_back(static_cast<int>(e));
    for (const json& id : edges[e]["to"]) in_of[id.get<size_t>()].push_back(static_cast<int>(e));
  }
  bool grouping = nodes.size() > group_threshold;
  std::map<std::string, int> group_of_signature;
  groups.group_of_node.resize(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    std::string signature = std::to_string(n);
    if (grouping && nodes[n]["kind"] == "process" && nodes[n]["world_rank"].is_number_integer()) {
      signature = json_text(nodes[n]["role"]) + "|" + json_text(nodes[n]["doing"]) + "|" +
                  (groups.in_cycle.count(static_cast<int>(n)) ? "c" : "");
      for (int e : out_of[n]) signature += "|o" + std::to_string(e);
      for (int e : in_of[n]) signature += "|i" + std::to_string(e);
    }
    auto [it, inserted] = group_of_signature.emplace(signature, static_cast<int>(groups.members.size()));
    if (inserted) groups.members.emplace_back();
    groups.members[it->second].push_back(static_cast<int>(n));
    groups.group_of_node[n] = it->second;
  }
  return groups;
}

}  // namespace nsc::triage
