// Blame over a wait-for graph (docs/triage.md, "Who is to blame"): the nodes whose own
// skip explains every wait, or, where the graph cannot decide, suspects with the reason.
// Pure: nodes are 0..node_count-1, edges are hyper-edges "every `from` waits on `to`".
#pragma once

#include <string>
#include <vector>

namespace nsc::triage {

struct WaitEdge {
  std::vector<int> from, to;
  // true: `to` never issued the operation `from` waits for (missing, unmatched, never called,
  // absent, errored): `to` may have skipped it. false: `to` issued it but its GPU has not
  // reached it yet (queued behind its own earlier work): never a skip by itself.
  bool blames_target = true;
};

// Where, in a rank's own program order, the operations others wait on it for fall against the
// one it sits in (program_order.h): kEarlier, one comes before it (the rank moved past it);
// kLater, every one comes after it (its own wait explains them); kUnknown, the order does not say.
enum class OwedOrder : signed char { kUnknown, kEarlier, kLater };

struct BlameResult {
  std::vector<int> culprits;  // sorted node ids
  std::vector<int> suspects;  // sorted node ids, never overlapping culprits
  std::vector<std::vector<int>> cycles;  // strongly connected components holding a cycle
  // Per culprit or suspect group, one sentence: why (node ids are written as "#N").
  struct Reason {
    std::vector<int> nodes;
    // "skipped", "skipped-in-cycle", "order-inversion", "cycle-undecided", "not-reached", "no-input"
    std::string kind;
    bool by_program_order = false;  // the breaker was chosen by the nodes' program order
  };
  std::vector<Reason> reasons;
};

// Strongly connected components that hold a cycle (size > 1 or a self-loop), sorted.
std::vector<std::vector<int>> find_wait_cycles(int node_count, const std::vector<WaitEdge>& edges);

// Sink components of the graph decide: a lone node waited on through a blaming edge skipped;
// in a cycle, the unique smallest set of blamed nodes whose waits, once dropped, leave no
// cycle skipped (their waits are the consequence); several such sets: suspects.
// `no_input[n]`: node n has no usable input (absent, unreadable): what it does is unknown, so
// it is never a culprit, only a suspect ("no-input") whose input would decide.
// `waits_itself[n]`: node n's host thread waits in an operation it issued (on the GPU, inside
// an NCCL call): in its program order, what it has not issued comes after that wait. Two ranks
// of a cycle that each owe the other what the other waits in, and both wait so, issued the two
// operations in opposite orders: an "order-inversion", nobody skipped (docs/triage.md).
// `owed_order[n]`: node n's program order. Of several single-rank cycle breakers, the one whose
// owed operation comes before the one it sits in, when every other one's come after its own
// wait, skipped ("skipped-in-cycle", by_program_order).
BlameResult assign_blame(int node_count, const std::vector<WaitEdge>& edges,
                         const std::vector<bool>& no_input = {}, const std::vector<bool>& waits_itself = {},
                         const std::vector<OwedOrder>& owed_order = {});

}  // namespace nsc::triage
