// Blame over synthetic wait-for graphs (native/src/triage/blame.h): the shapes of the real
// multi-group hangs in corefiles/ (tpdp-*, ppdp-*), each reduced to its edges.
#define BOOST_TEST_MODULE triage_blame
#include <boost/test/unit_test.hpp>

#include "triage/blame.h"

using nsc::triage::assign_blame;
using nsc::triage::BlameResult;
using nsc::triage::WaitEdge;

namespace {

WaitEdge skip(std::vector<int> from, std::vector<int> to) { return {std::move(from), std::move(to), true}; }
WaitEdge queued(std::vector<int> from, std::vector<int> to) { return {std::move(from), std::move(to), false}; }
std::vector<int> v(std::initializer_list<int> ranks) { return ranks; }

}  // namespace

BOOST_AUTO_TEST_CASE(lone_skipper_is_the_culprit) {
  BlameResult blame = assign_blame(2, {skip({0}, {1})});
  BOOST_TEST(blame.culprits == v({1}));
  BOOST_TEST(blame.suspects.empty());
  BOOST_TEST(blame.cycles.empty());
}

BOOST_AUTO_TEST_CASE(chain_blames_its_end_not_its_middle) {
  // 0 waits on 1 (queued behind 1's own wait), 1 waits on 2, which skipped.
  BlameResult blame = assign_blame(3, {queued({0}, {1}), skip({1}, {2})});
  BOOST_TEST(blame.culprits == v({2}));
}

BOOST_AUTO_TEST_CASE(early_leaver_in_a_world_barrier_is_blamed_not_the_ranks_it_waits_for) {
  // tpdp-fewer-steps: rank 3 skipped step 4 (tp with 2, dp with 1) and waits in the world
  // barrier on 0-2; 0 waits on 2 in dp (queued behind 2's tp wait).
  BlameResult blame = assign_blame(4, {skip({2}, {3}), skip({1}, {3}), skip({3}, {0, 1, 2}), queued({0}, {2})});
  BOOST_TEST(blame.culprits == v({3}));
  BOOST_TEST(blame.suspects.empty());
  BOOST_REQUIRE_EQUAL(blame.cycles.size(), 1u);
  BOOST_TEST(blame.cycles[0] == v({0, 1, 2, 3}));
}

BOOST_AUTO_TEST_CASE(pipeline_sender_that_skipped_is_blamed_not_the_last_stage) {
  // ppdp-skip-send: 5 waits on 3's missing send; 3 waits in the world all_reduce on 4-7,
  // whose GPUs are queued behind 5; 7 waits on 5's send (queued), 4 and 6 on dp partners.
  BlameResult blame = assign_blame(8, {skip({5}, {3}), queued({0, 1, 2, 3}, {4, 5, 6, 7}), queued({7}, {5}),
                                       queued({4}, {5}), queued({6}, {7})});
  BOOST_TEST(blame.culprits == v({3}));
  BOOST_TEST(blame.suspects.empty());
}

BOOST_AUTO_TEST_CASE(symmetric_deadlock_names_suspects_never_a_culprit) {
  // p2p-cycle: both ranks send first; either alone explains the cycle.
  BlameResult blame = assign_blame(2, {skip({0}, {1}), skip({1}, {0})});
  BOOST_TEST(blame.culprits.empty());
  BOOST_TEST(blame.suspects == v({0, 1}));
  BOOST_REQUIRE_EQUAL(blame.reasons.size(), 1u);
  BOOST_TEST(blame.reasons[0].kind == "cycle-undecided");
}

BOOST_AUTO_TEST_CASE(rank_only_waited_on_through_queued_edges_is_a_suspect) {
  BlameResult blame = assign_blame(3, {queued({0, 1}, {2})});
  BOOST_TEST(blame.culprits.empty());
  BOOST_TEST(blame.suspects == v({2}));
  BOOST_TEST(blame.reasons[0].kind == "not-reached");
}

BOOST_AUTO_TEST_CASE(idle_and_isolated_nodes_are_neither_culprit_nor_suspect) {
  BlameResult blame = assign_blame(5, {skip({0}, {1})});
  BOOST_TEST(blame.culprits == v({1}));
  BOOST_TEST(blame.suspects.empty());
}

BOOST_AUTO_TEST_CASE(waiting_chain_into_a_cycle_does_not_blame_its_upstream) {
  // 4 waits on 0, which sits in the 0<->1 deadlock: 4 is a waiter, the cycle undecided.
  BlameResult blame = assign_blame(5, {skip({4}, {0}), skip({0}, {1}), skip({1}, {0})});
  BOOST_TEST(blame.culprits.empty());
  BOOST_TEST(blame.suspects == v({0, 1}));
}

BOOST_AUTO_TEST_CASE(queued_edges_alone_never_break_a_cycle) {
  // 0 and 1 wait on each other with queued edges only: nobody skipped anything visible.
  BlameResult blame = assign_blame(2, {queued({0}, {1}), queued({1}, {0})});
  BOOST_TEST(blame.culprits.empty());
  BOOST_TEST(blame.suspects == v({0, 1}));
  BOOST_REQUIRE_EQUAL(blame.reasons.size(), 1u);
  BOOST_TEST(blame.reasons[0].kind == "not-reached");
}

BOOST_AUTO_TEST_CASE(tree_waits_both_ways_do_not_hide_the_skipper) {
  // ppdp-skip-send as captured: tree all_reduce ranks 0<->4, 4<->6 wait for each other's
  // data (queued both ways); 5 waits on 3's missing send; 3 waits on 2 in the tree.
  BlameResult blame = assign_blame(8, {skip({5}, {3}), queued({4}, {0}), queued({0}, {4}), queued({4}, {6}),
                                       queued({6}, {4}), queued({1, 3}, {2}), queued({2}, {4}), queued({6, 7}, {5}),
                                       queued({4}, {5}), queued({6}, {7})});
  BOOST_TEST(blame.culprits == v({3}));
  BOOST_TEST(blame.suspects.empty());
}

BOOST_AUTO_TEST_CASE(large_graph_with_one_skipper_is_fast_and_right) {
  // 4,096 ranks: each tp group of 8 waits on its first rank; rank 0 skipped; the other
  // groups' first ranks wait on group 0 through a world hyper-edge (queued).
  const int n = 4096;
  std::vector<WaitEdge> edges;
  std::vector<int> leaders, world_waiting;
  for (int g = 0; g < n / 8; ++g) {
    std::vector<int> members;
    for (int r = g * 8 + 1; r < g * 8 + 8; ++r) members.push_back(r);
    edges.push_back(g == 0 ? skip(members, {0}) : queued(members, {g * 8}));
    if (g > 0) world_waiting.push_back(g * 8);
  }
  edges.push_back(queued(world_waiting, {1, 2, 3, 4, 5, 6, 7}));
  BlameResult blame = assign_blame(n, edges);
  BOOST_TEST(blame.culprits == v({0}));
}

BOOST_AUTO_TEST_CASE(two_ranks_waiting_in_what_they_issued_are_an_order_inversion) {
  // order-lock-inversion: 0 waits on 1 in grad_a, 1 on 0 in grad_b, both in torch.cuda.synchronize();
  // 2 and 3 wait on both in the world all_reduce. Nobody skipped.
  BlameResult blame = assign_blame(4, {skip({0}, {1}), skip({1}, {0}), skip({2, 3}, {0, 1})}, {}, {true, true, true, true});
  BOOST_TEST(blame.culprits.empty());
  BOOST_TEST(blame.suspects.empty());
  BOOST_REQUIRE_EQUAL(blame.reasons.size(), 1u);
  BOOST_TEST(blame.reasons[0].kind == "order-inversion");
  BOOST_TEST(blame.reasons[0].nodes == v({0, 1}));
}

BOOST_AUTO_TEST_CASE(a_rank_whose_thread_does_not_wait_keeps_the_cycle_undecided) {
  // Rank 1 sits in user code: it may yet issue what rank 0 waits for.
  BlameResult blame = assign_blame(2, {skip({0}, {1}), skip({1}, {0})}, {}, {true, false});
  BOOST_TEST(blame.suspects == v({0, 1}));
  BOOST_TEST(blame.reasons[0].kind == "cycle-undecided");
}

BOOST_AUTO_TEST_CASE(a_pair_that_also_waits_on_others_is_no_order_inversion) {
  // order-p2p-skip with receivers whose hosts block in their recv: 2 waits on 1's send, 3 on
  // 2's, 0 on 3 in embed, 1 on 0,2,3 in the world all_reduce they never issued: 1 or 2 alone
  // would explain it, but 1 also waits on 0 and 3: no pair waits on each other alone.
  BlameResult blame = assign_blame(4, {skip({2}, {1}), skip({3}, {2}), skip({0}, {3}), skip({1}, {0, 2, 3})}, {},
                                   {true, true, true, true});
  BOOST_TEST(blame.culprits.empty());
  BOOST_TEST(blame.suspects == v({1, 2}));
  BOOST_TEST(blame.reasons[0].kind == "cycle-undecided");
}

// order-p2p-skip with the receivers' hosts blocked in their recv: 2 waits on 1 (p2p), 1 on 2
// and 3 (world all_reduce #4, which they never issued) and on 0 (queued), 3 on 2 (p2p), 0 on
// 3 (embed). Rank 1 and rank 2 each alone break the cycle; program order decides.
std::vector<WaitEdge> blocked_receivers() {
  return {skip({2}, {1}), skip({0, 1}, {2, 3}), queued({1}, {0}), skip({3}, {2}), skip({0}, {3})};
}

BOOST_AUTO_TEST_CASE(program_order_picks_the_breaker_that_moved_past_what_it_owes) {
  using nsc::triage::OwedOrder;
  std::vector<OwedOrder> order = {OwedOrder::kUnknown, OwedOrder::kEarlier, OwedOrder::kLater, OwedOrder::kLater};
  BlameResult blame = assign_blame(4, blocked_receivers(), {}, {true, true, true, true}, order);
  BOOST_TEST(blame.culprits == v({1}));
  BOOST_TEST(blame.suspects.empty());
  BOOST_REQUIRE_EQUAL(blame.reasons.size(), 1u);
  BOOST_TEST(blame.reasons[0].kind == "skipped-in-cycle");
  BOOST_TEST(blame.reasons[0].by_program_order);
}

BOOST_AUTO_TEST_CASE(program_order_decides_only_when_every_other_breaker_is_explained) {
  using nsc::triage::OwedOrder;
  for (OwedOrder other : {OwedOrder::kUnknown, OwedOrder::kEarlier}) {
    std::vector<OwedOrder> order = {OwedOrder::kUnknown, OwedOrder::kEarlier, other, OwedOrder::kLater};
    BlameResult blame = assign_blame(4, blocked_receivers(), {}, {true, true, true, true}, order);
    BOOST_TEST(blame.culprits.empty());
    BOOST_TEST(blame.suspects == v({1, 2}));
  }
  BlameResult without = assign_blame(4, blocked_receivers());
  BOOST_TEST(without.suspects == v({1, 2}));
}

BOOST_AUTO_TEST_CASE(an_order_inversion_stays_a_deadlock_whatever_the_history_says) {
  // order-lock-inversion: rank 1 reversed its usual order, so its records put what it owes
  // first; two ranks waiting on each other alone, each in what it issued: nobody skipped.
  using nsc::triage::OwedOrder;
  BlameResult blame = assign_blame(4, {skip({0, 2, 3}, {1}), skip({1}, {0})}, {}, {true, true, true, true},
                                   {OwedOrder::kLater, OwedOrder::kEarlier, OwedOrder::kUnknown, OwedOrder::kUnknown});
  BOOST_TEST(blame.culprits.empty());
  BOOST_REQUIRE_EQUAL(blame.reasons.size(), 1u);
  BOOST_TEST(blame.reasons[0].kind == "order-inversion");
}
