// Stack classes, STAT-style: every thread's frames merged into a prefix tree
// (outermost frame first) with the set of ranks at each node, plus the classes
// of each rank's application thread, so the odd rank stands out.
#include <algorithm>
#include <unordered_map>

#include "triage/analysis.h"
#include "triage/rank_set.h"

namespace nsc::triage {
namespace {

using nlohmann::json;

constexpr size_t kMaxFramesPerThread = 256;  // deeper stacks are cut: recursion or garbage

struct TrieNode {
  int label = -1;
  std::vector<int> ranks;
  size_t threads = 0;
  std::vector<int> children;
};

class StackTrie {
 public:
  StackTrie() { nodes_.emplace_back(); }

  void insert(const ThreadView& thread, int rank) {
    int node = 0;
    touch(node, rank);
    size_t depth = std::min(thread.frames.size(), kMaxFramesPerThread);
    for (size_t f = depth; f-- > 0;) {  // frames are innermost first
      node = child(node, intern(thread.frames[f].label()));
      touch(node, rank);
    }
  }

  json to_json(int node = 0) {
    TrieNode& entry = nodes_[node];
    normalize_ranks(&entry.ranks);
    json out = {{"frame", entry.label < 0 ? "all threads" : labels_[entry.label]},
                {"rank_set", format_rank_set(entry.ranks)}, {"nranks", entry.ranks.size()},
                {"threads", entry.threads}};
    json children = json::array();
    for (int c : entry.children) children.push_back(to_json(c));
    out["children"] = std::move(children);  // a copy here was quadratic in the stack depth
    return out;
  }

 private:
  int intern(const std::string& label) {
    auto [it, inserted] = label_ids_.try_emplace(label, static_cast<int>(labels_.size()));  // no node made for a known label
    if (inserted) labels_.push_back(label);
    return it->second;
  }

  int child(int parent, int label) {
    for (int c : nodes_[parent].children)
      if (nodes_[c].label == label) return c;
    int id = static_cast<int>(nodes_.size());
    nodes_.emplace_back();
    nodes_.back().label = label;
    nodes_[parent].children.push_back(id);
    return id;
  }

  void touch(int node, int rank) {
    TrieNode& entry = nodes_[node];
    ++entry.threads;
    if (rank >= 0 && (entry.ranks.empty() || entry.ranks.back() != rank)) entry.ranks.push_back(rank);
  }

  std::vector<TrieNode> nodes_;
  std::vector<std::string> labels_;
  std::unordered_map<std::string, int> label_ids_;
};

}  // namespace

json build_stack_classes(const Job& job) {
  // Ranks in world order so each node's rank list grows sorted.
  std::vector<int> order(job.processes.size());
  for (size_t p = 0; p < order.size(); ++p) order[p] = static_cast<int>(p);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return job.world_rank[a].value_or(INT32_MAX) < job.world_rank[b].value_or(INT32_MAX);
  });
  StackTrie trie;
  struct PrincipalClass {
    std::vector<int> ranks;
    std::vector<std::string> inputs;
    const ThreadView* example;
  };
  std::map<std::string, PrincipalClass> classes;
  for (int p : order) {
    const ProcessView& process = job.processes[p];
    int rank = job.world_rank[p].value_or(-1);
    for (const ThreadView& thread : process.threads) trie.insert(thread, rank);
    const ThreadView* principal = process.principal();
    if (principal == nullptr) continue;
    std::string key = principal->blocked_in;
    for (const FrameView& frame : principal->frames) key += "\n" + frame.label();
    PrincipalClass& entry = classes.try_emplace(key, PrincipalClass{{}, {}, principal}).first->second;
    if (rank >= 0) entry.ranks.push_back(rank);
    else entry.inputs.push_back(process.input_name);
  }
  json principal = json::array();
  std::map<std::string, std::vector<int>> by_description;
  std::vector<const PrincipalClass*> sorted;
  for (const auto& [key, entry] : classes) sorted.push_back(&entry);
  std::stable_sort(sorted.begin(), sorted.end(), [](const PrincipalClass* a, const PrincipalClass* b) {
    return a->ranks.size() + a->inputs.size() < b->ranks.size() + b->inputs.size();
  });
  std::string summary;
  for (const PrincipalClass* entry : sorted) {
    std::string description = describe_thread(*entry->example);
    json frames = json::array();
    for (size_t f = entry->example->frames.size(); f-- > 0;) frames.push_back(entry->example->frames[f].label());
    principal.push_back({{"ranks", entry->ranks}, {"rank_set", format_rank_set(entry->ranks)},
                         {"inputs", entry->inputs}, {"description", description},
                         {"blocked_in", entry->example->blocked_in}, {"frames", frames}});
    std::string who = entry->ranks.empty() ? "" : ranks_phrase(entry->ranks);
    if (!entry->inputs.empty())
      who += (who.empty() ? "" : " and ") + std::string("input") + (entry->inputs.size() > 1 ? "s " : " ") +
             entry->inputs.front() + (entry->inputs.size() > 1 ? ",..." : "");
    summary += (summary.empty() ? "" : "; ") + who + ": " + description;
  }
  return {{"principal", principal}, {"summary", summary}, {"tree", trie.to_json()}};
}

}  // namespace nsc::triage
