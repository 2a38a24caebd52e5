// Range checks on a summarized input: each impossible value becomes unavailable with a
// warning naming it, so the comparisons leave it out and the input reads as partial.
#include "triage/range_checks.h"

#include "triage/summary_helpers.h"

namespace nsc::triage {
namespace {

// collOpCount advances when a plan is uploaded, seqNumber[] when a collective is enqueued:
// one group's collectives may sit between the two. A type counter further above the total
// than this is torn or flipped memory, not a count.
constexpr int64_t kMaxEnqueuedAheadOfTotal = 1 << 16;

void flag(CommView* comm, const std::string& field, const std::string& reason) {
  comm->unavailable.emplace_back(field, reason);
  if (comm->warnings.size() < kMaxCommWarnings)
    comm->warnings.push_back(refused_value_warning(comm->position, field, reason));
}

void check_rank(CommView* comm) {
  if (!comm->rank || !comm->nranks || *comm->rank < *comm->nranks) return;
  flag(comm, "rank", "impossible value " + std::to_string(*comm->rank) + " (nranks is " +
                         std::to_string(*comm->nranks) + ": a rank is 0.." + std::to_string(*comm->nranks - 1) + ")");
  comm->rank.reset();
}

// Counters against each other: no collective type can be launched more often than all
// collectives together. Which of the two is wrong is unknown: both are left out.
void check_counters(CommView* comm) {
  if (!comm->coll_op_count) return;
  int64_t total = *comm->coll_op_count;
  bool impossible = false;
  for (int c = 0; c < kNumCollectives; ++c) {
    const Maybe<int64_t>& count = comm->seq_launched[c];
    if (!count || *count - total <= kMaxEnqueuedAheadOfTotal) continue;
    impossible = true;
    flag(comm, std::string("seq_launched.") + kCollectiveNames[c],
         "impossible value " + std::to_string(*count) + " (more " + kCollectiveNames[c] +
             " launched than collectives in total: coll_op_count is " + std::to_string(total) + ")");
    comm->seq_launched[c].reset();
  }
  if (!impossible) return;
  flag(comm, "coll_op_count", "contradicts seq_launched (value " + std::to_string(total) + "): left out with it");
  comm->coll_op_count.reset();
}

void check_peers(CommView* comm) {
  if (!comm->nranks) return;
  int nranks = *comm->nranks;
  for (ProxyOpView& op : comm->proxy_ops)
    for (ProxySubView& sub : op.subs)
      if (sub.peer && *sub.peer >= nranks) {
        flag(comm, "proxy_ops.subs.peer", "impossible value " + std::to_string(*sub.peer) + " (nranks is " +
                                              std::to_string(nranks) + ")");
        sub.peer.reset();
      }
  for (PlannedP2pView& task : comm->planned_p2p)
    if (task.peer >= nranks) {
      flag(comm, "planned.p2p.peer", "impossible value " + std::to_string(task.peer) + " (nranks is " +
                                         std::to_string(nranks) + ")");
      task.peer = -1;
    }
}

}  // namespace

void check_ranges(ProcessView* process) {
  for (CommView& comm : process->comms) {
    check_rank(&comm);
    check_counters(&comm);
    check_peers(&comm);
    sort_comm_notes(&comm);
  }
}

}  // namespace nsc::triage
