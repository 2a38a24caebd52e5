// Triage findings on synthetic snapshots, one scenario per finding kind, at
// 1, 2, 8 and 4,096 ranks.
#define BOOST_TEST_MODULE triage_findings
#include <boost/test/unit_test.hpp>

#include "triage/triage.h"
#include "triage_synthetic.h"

using nlohmann::json;
using namespace synthetic;

namespace {

json run(const std::vector<json>& documents) { return triage_read_back(documents); }

const json& only_comm(const json& report) {
  BOOST_REQUIRE_EQUAL(report["communicators"].size(), 1u);
  return report["communicators"][0];
}

const json* find_kind(const json& comm, const std::string& kind) {
  for (const json& finding : comm["findings"])
    if (finding["kind"] == kind) return &finding;
  return nullptr;
}

std::vector<int> ints(const json& value) { return value.get<std::vector<int>>(); }

std::vector<int> all_but(int nranks, int skipped) {
  std::vector<int> ranks;
  for (int r = 0; r < nranks; ++r)
    if (r != skipped) ranks.push_back(r);
  return ranks;
}

}  // namespace

BOOST_AUTO_TEST_CASE(missing_collective_two_ranks_names_rank_1_and_allgather_1) {
  json report = run(missing_collective(2, 1));
  BOOST_TEST(report["schema"] == "ncclscope.triage/1");
  BOOST_TEST(report["verdict"] == "hang");
  const json& comm = only_comm(report);
  BOOST_TEST(comm["comm_hash"] == "0x6db0a96d9cb7fc37");
  BOOST_TEST(comm["nranks"] == 2);
  BOOST_TEST(ints(comm["ranks_seen"]) == (std::vector<int>{0, 1}));
  BOOST_TEST(comm["missing_ranks"].empty());
  const json* finding = find_kind(comm, "missing-collective");
  BOOST_REQUIRE(finding != nullptr);
  BOOST_TEST((*finding)["collective"] == "AllGather");
  BOOST_TEST((*finding)["seq"] == 1);
  BOOST_TEST(ints((*finding)["waiting_ranks"]) == (std::vector<int>{0}));
  BOOST_TEST(ints((*finding)["culprit_ranks"]) == (std::vector<int>{1}));
  BOOST_TEST(ints(report["culprit_ranks"]) == (std::vector<int>{1}));
  std::string evidence = (*finding)["evidence"][0];
  BOOST_TEST(evidence == "rank 0 launched AllGather 1 time; rank 1 launched AllGather 0 times");
  std::string summary = report["summary"];
  BOOST_TEST(summary.find("rank 1 never launched AllGather #1") != std::string::npos, summary);
  BOOST_TEST(summary.find("Culprit: rank 1: pause() called from main() [user-code]") != std::string::npos, summary);
  BOOST_TEST(report["graph"]["cycles"].empty());
  BOOST_TEST(nsc::triage_exit_code(report) == 0);
}

BOOST_AUTO_TEST_CASE(tree_children_keep_nccl_arity) {
  nsc::triage::TreeChildren children;
  for (int rank : {4, 9, 11, 12}) children.add(rank);  // a fourth child is not NCCL's: dropped
  BOOST_TEST(std::vector<int>(children.begin(), children.end()) == (std::vector<int>{4, 9, 11}));
}

BOOST_AUTO_TEST_CASE(missing_collective_eight_ranks_and_ring_relations) {
  json report = run(missing_collective(8, 5));
  const json* finding = find_kind(only_comm(report), "missing-collective");
  BOOST_REQUIRE(finding != nullptr);
  BOOST_TEST(ints((*finding)["culprit_ranks"]) == (std::vector<int>{5}));
  BOOST_TEST(ints((*finding)["waiting_ranks"]) == all_but(8, 5));
  const json& edge = report["graph"]["edges"][0];
  BOOST_TEST(ints(edge["to"]) == (std::vector<int>{5}));
  bool ring_relation = false;
  for (const json& relation : edge["peer_relations"])
    ring_relation = ring_relation || relation == "ring: rank 6 receives from rank 5 on channels 0,1";
  BOOST_TEST(ring_relation, edge["peer_relations"].dump());
  bool tree_relation = false;  // rank 2's tree children are 5 and 6 (triage_synthetic.h)
  for (const json& relation : edge["peer_relations"])
    tree_relation = tree_relation || relation == "tree: rank 5 is a child of rank 2 on channels 0,1";
  BOOST_TEST(tree_relation, edge["peer_relations"].dump());
  BOOST_TEST(report["stack_classes"]["summary"] ==
             "rank 5: pause() called from main() [user-code]; ranks 0-4,6,7: cudaStreamSynchronize() called "
             "from main() [cudaStreamSynchronize]");
}

BOOST_AUTO_TEST_CASE(missing_collective_4096_ranks) {
  json report = run(missing_collective(4096, 1234));
  BOOST_TEST(report["verdict"] == "hang");
  const json* finding = find_kind(only_comm(report), "missing-collective");
  BOOST_REQUIRE(finding != nullptr);
  BOOST_TEST(ints((*finding)["culprit_ranks"]) == (std::vector<int>{1234}));
  BOOST_TEST((*finding)["waiting_ranks"].size() == 4095u);
  BOOST_TEST((*finding)["evidence"][0] ==
             "ranks 0-1233,1235-4095 launched AllGather 1 time; rank 1234 launched AllGather 0 times");
  BOOST_TEST(ints(report["culprit_ranks"]) == (std::vector<int>{1234}));
}

BOOST_AUTO_TEST_CASE(no_hang_at_one_two_and_4096_ranks) {
  for (int nranks : {1, 2, 4096}) {
    json report = run(no_hang(nranks));
    BOOST_TEST(report["verdict"] == "no-hang", "nranks " << nranks);
    const json& comm = only_comm(report);
    BOOST_REQUIRE_EQUAL(comm["findings"].size(), 1u);
    BOOST_TEST(comm["findings"][0]["kind"] == "no-hang-evident");
    BOOST_TEST(report["culprit_ranks"].empty());
    std::string summary = report["summary"];
    BOOST_TEST(summary.find("a size mismatch can complete silently") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(collective_mismatch_same_total_different_types) {
  // Rank 1 of 2: AllReduce=3, ReduceScatter=1 where rank 0 has AllReduce=4.
  std::vector<json> documents = {rank_document(0, 2, {0, 0, 0, 0, 4}, waiting_thread(0)),
                                 rank_document(1, 2, {0, 0, 0, 1, 3}, waiting_thread(0))};
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "hang");
  const json& comm = only_comm(report);
  BOOST_TEST(find_kind(comm, "missing-collective") == nullptr);
  const json* finding = find_kind(comm, "collective-mismatch");
  BOOST_REQUIRE(finding != nullptr);
  BOOST_TEST((*finding)["collective"] == "AllReduce");
  BOOST_TEST((*finding)["seq"] == 4);
  BOOST_TEST(ints((*finding)["waiting_ranks"]) == (std::vector<int>{0}));
  BOOST_TEST(ints((*finding)["culprit_ranks"]) == (std::vector<int>{1}));
  BOOST_TEST((*finding)["groups"][0]["collective"] == "ReduceScatter");
  BOOST_TEST(ints(report["culprit_ranks"]) == (std::vector<int>{1}));
}

BOOST_AUTO_TEST_CASE(collective_mismatch_eight_ranks_majority_decides) {
  std::vector<json> documents;
  for (int rank = 0; rank < 8; ++rank)
    documents.push_back(rank_document(rank, 8, rank == 2 ? Counts{1, 0, 0, 0, 2} : Counts{0, 0, 0, 0, 3},
                                      waiting_thread(0)));
  json report = run(documents);
  const json* finding = find_kind(only_comm(report), "collective-mismatch");
  BOOST_REQUIRE(finding != nullptr);
  BOOST_TEST(ints((*finding)["culprit_ranks"]) == (std::vector<int>{2}));
  BOOST_TEST((*finding)["collective"] == "AllReduce");
  BOOST_TEST((*finding)["seq"] == 3);
  BOOST_TEST((*finding)["groups"][0]["collective"] == "Broadcast");
}

// Not a hang (nothing waits), but never "no-hang": the collectives differ (issue 13, item 5).
BOOST_AUTO_TEST_CASE(mismatch_without_anything_waiting_is_not_a_hang) {
  std::vector<json> documents = {
      rank_document(0, 2, {0, 0, 0, 0, 4}, thread(0, "sleep", {frame("nanosleep", "libc.so.6")})),
      rank_document(1, 2, {0, 0, 0, 1, 3}, thread(0, "sleep", {frame("nanosleep", "libc.so.6")}))};
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "mismatch");
  const json* finding = find_kind(only_comm(report), "collective-mismatch");
  BOOST_REQUIRE(finding != nullptr);
  BOOST_TEST((*finding)["explains_hang"] == false);
  BOOST_TEST(find_kind(only_comm(report), "no-hang-evident") == nullptr);  // no contradicting finding
}

BOOST_AUTO_TEST_CASE(aborted_and_errored_ranks) {
  std::vector<json> documents = missing_collective(4, 3);
  for (json& doc : documents) doc["communicators"][0]["seq_launched"]["AllGather"] = 1;
  documents[3]["communicators"][0]["health"]["abort_flag"] = true;
  documents[2]["communicators"][0]["health"]["async_result"] = "ncclUnhandledCudaError";
  documents[1]["communicators"][0]["health"]["async_result"] = "ncclRemoteError";
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "hang");
  const json& comm = only_comm(report);
  const json* aborted = find_kind(comm, "aborted-rank");
  const json* errored = find_kind(comm, "errored-rank");
  BOOST_REQUIRE(aborted != nullptr);
  BOOST_REQUIRE(errored != nullptr);
  BOOST_TEST(ints((*aborted)["culprit_ranks"]) == (std::vector<int>{3}));
  BOOST_TEST(ints((*errored)["culprit_ranks"]) == (std::vector<int>{2}));
  BOOST_TEST((*errored)["evidence"][0] == "rank 2: async_result is ncclUnhandledCudaError");
  // ncclRemoteError is a peer's failure seen (issue 32): a reaction, never an errored rank.
  const json* remote = find_kind(comm, "remote-error");
  BOOST_REQUIRE(remote != nullptr);
  BOOST_TEST(ints((*remote)["waiting_ranks"]) == (std::vector<int>{1}));
  BOOST_TEST(ints((*remote)["culprit_ranks"]).empty());  // every rank has input: no peer named
}

BOOST_AUTO_TEST_CASE(single_rank_aborted) {
  std::vector<json> documents = no_hang(1);
  documents[0]["communicators"][0]["health"]["abort_flag"] = true;
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(ints(report["culprit_ranks"]).empty());  // no one waits on it: not a chain end
  const json* aborted = find_kind(only_comm(report), "aborted-rank");
  BOOST_REQUIRE(aborted != nullptr);
  BOOST_TEST(ints((*aborted)["waited_on_ranks"]) == (std::vector<int>{0}));
  BOOST_TEST((*aborted)["waited_on_role"] == "aborted");
  BOOST_TEST(ints((*aborted)["culprit_ranks"]).empty());  // the verdict blames nobody: nor does the finding
}

BOOST_AUTO_TEST_CASE(absent_ranks_without_evidence_are_incomplete) {
  std::vector<json> documents = no_hang(8);
  for (json& doc : documents) doc["threads"][0] = waiting_thread(doc["target"]["pid"]);
  documents.resize(6);  // ranks 6 and 7 gave no input
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "incomplete");
  const json& comm = only_comm(report);
  BOOST_TEST(ints(comm["missing_ranks"]) == (std::vector<int>{6, 7}));
  const json* absent = find_kind(comm, "absent-ranks");
  BOOST_REQUIRE(absent != nullptr);
  BOOST_TEST(ints((*absent)["culprit_ranks"]) == (std::vector<int>{6, 7}));
  BOOST_TEST((*absent)["explains_hang"] == false);
}

BOOST_AUTO_TEST_CASE(absent_rank_whose_process_lost_its_communicator_is_the_culprit) {
  // The abort scenario: rank 1 called ncclCommAbort, its snapshot holds no comm.
  std::vector<json> documents = missing_collective(2, 1);
  documents[1]["communicators"] = json::array();
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "hang");
  const json* absent = find_kind(only_comm(report), "absent-ranks");
  BOOST_REQUIRE(absent != nullptr);
  BOOST_TEST((*absent)["explains_hang"] == true);
  BOOST_TEST((*absent)["possibly_inputs"][0] == "rank-1.json");
  BOOST_TEST(ints(report["culprit_ranks"]) == (std::vector<int>{1}));
}

BOOST_AUTO_TEST_CASE(p2p_cycle_is_a_deadlock_without_a_single_culprit) {
  std::vector<json> documents;
  for (int rank = 0; rank < 2; ++rank) {
    json doc = rank_document(rank, 2, {0, 0, 0, 0, 3}, waiting_thread(0));
    doc["communicators"][0]["proxy_ops"].push_back(proxy_op("Send", "ncclPatternSend", (rank + 1) % 2));
    documents.push_back(doc);
  }
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "deadlock");
  BOOST_REQUIRE_EQUAL(report["graph"]["cycles"].size(), 1u);
  BOOST_TEST(ints(report["graph"]["cycles"][0]) == (std::vector<int>{0, 1}));
  BOOST_TEST(report["culprit_ranks"].empty());
  std::string summary = report["summary"];
  BOOST_TEST(summary.find("Deadlock: ranks 0,1 wait on each other") != std::string::npos, summary);
  BOOST_TEST(summary.find("rank 0 waits in Send for a matching Recv that rank 1 never posted") != std::string::npos,
             summary);
  int unmatched = 0;
  for (const json& finding : only_comm(report)["findings"])
    if (finding["kind"] == "p2p-unmatched") {
      ++unmatched;
      BOOST_TEST(finding["collective"] == "Send");
    }
  BOOST_TEST(unmatched == 2);
}

BOOST_AUTO_TEST_CASE(p2p_recv_whose_peer_never_posted) {
  std::vector<json> documents = no_hang(8);
  documents[0]["threads"][0] = waiting_thread(1000);
  documents[0]["communicators"][0]["proxy_ops"].push_back(proxy_op("Recv", "ncclPatternRecv", 7, 3));
  // Rank 3 receives from 4 and rank 4 posted the send: no finding for that pair.
  documents[3]["communicators"][0]["proxy_ops"].push_back(proxy_op("Recv", "ncclPatternRecv", 4));
  documents[4]["communicators"][0]["proxy_ops"].push_back(proxy_op("Send", "ncclPatternSend", 3));
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "hang");
  const json* finding = find_kind(only_comm(report), "p2p-unmatched");
  BOOST_REQUIRE(finding != nullptr);
  BOOST_TEST(ints((*finding)["waiting_ranks"]) == (std::vector<int>{0}));
  BOOST_TEST(ints((*finding)["culprit_ranks"]) == (std::vector<int>{7}));
  BOOST_TEST((*finding)["collective"] == "Recv");
  BOOST_TEST((*finding)["evidence"][0] ==
             "rank 0: recv from rank 7 in flight on channel 3 (2 of 8 steps done); rank 7 has no matching send to "
             "rank 0 in flight or planned");
  BOOST_TEST(ints(report["culprit_ranks"]) == (std::vector<int>{7}));
}

BOOST_AUTO_TEST_CASE(stuck_before_launch_in_group_end) {
  // Counters equal; ranks 0-2 sit in ncclGroupEnd with AllReduce planned, rank 3 never called.
  std::vector<json> documents;
  for (int rank = 0; rank < 4; ++rank) {
    bool culprit = rank == 3;
    json doc = rank_document(rank, 4, {0, 0, 0, 0, 5}, culprit ? pausing_thread(0) : group_end_thread(0));
    if (!culprit) {
      json& planned = doc["communicators"][0]["planned"];
      planned["n_tasks_coll"] = 1;
      planned["colls"].push_back({{"collective", "AllReduce"}, {"count", 1024}, {"datatype", "ncclFloat32"},
                                  {"op", "ncclSum"}, {"root", 0}});
    }
    documents.push_back(doc);
  }
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "hang");
  const json* finding = find_kind(only_comm(report), "stuck-before-launch");
  BOOST_REQUIRE(finding != nullptr);
  BOOST_TEST((*finding)["collective"] == "AllReduce");
  BOOST_TEST((*finding)["seq"] == 6);
  BOOST_TEST(ints((*finding)["waiting_ranks"]) == (std::vector<int>{0, 1, 2}));
  BOOST_TEST(ints((*finding)["culprit_ranks"]) == (std::vector<int>{3}));
  BOOST_TEST(ints(report["culprit_ranks"]) == (std::vector<int>{3}));
}

BOOST_AUTO_TEST_CASE(split_communicator_reports_world_ranks) {
  // World idle and agreeing; "sub" reverses ranks; world rank 1 (sub rank 0) skipped AllReduce on sub.
  std::vector<json> documents;
  for (int rank = 0; rank < 2; ++rank) {
    int sub_rank = 1 - rank;
    bool culprit = rank == 1;
    json sub = comm(kSubHash, sub_rank, 2, {0, 0, 0, 0, culprit ? 3 : 4});
    json doc = document(1000 + rank, json::array({comm(kWorldHash, rank, 2, {0, 0, 0, 0, 4}), sub}),
                        json::array({culprit ? pausing_thread(1000 + rank) : waiting_thread(1000 + rank)}));
    documents.push_back(doc);
  }
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(report["world_comm"] == "0x6db0a96d9cb7fc37");
  BOOST_REQUIRE_EQUAL(report["communicators"].size(), 2u);
  const json& sub = report["communicators"][1];
  BOOST_TEST(sub["comm_hash"] == "0x1234abcd5678ef01");
  const json* finding = find_kind(sub, "missing-collective");
  BOOST_REQUIRE(finding != nullptr);
  BOOST_TEST(ints((*finding)["culprit_ranks"]) == (std::vector<int>{1}));       // world numbering
  BOOST_TEST(ints((*finding)["culprit_comm_ranks"]) == (std::vector<int>{0}));  // sub's own numbering
  BOOST_TEST(ints(report["culprit_ranks"]) == (std::vector<int>{1}));       // world numbering
  BOOST_TEST(find_kind(report["communicators"][0], "no-hang-evident") != nullptr);
  std::string summary = report["summary"];
  BOOST_TEST(summary.find("world rank 1 (rank 0 of that communicator) never launched AllReduce #4") !=
                 std::string::npos, summary);
}

BOOST_AUTO_TEST_CASE(unavailable_counters_are_never_zero) {
  std::vector<json> documents = no_hang(2);
  json& comm1 = documents[1]["communicators"][0];
  comm1["seq_launched"]["AllReduce"] = nullptr;
  comm1["unavailable"]["seq_launched.AllReduce"] = "0x7f00: not saved in core";
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "incomplete");
  const json* unknown = find_kind(only_comm(report), "counters-unavailable");
  BOOST_REQUIRE(unknown != nullptr);
  std::string evidence = (*unknown)["evidence"][0];
  BOOST_TEST(evidence.find("rank 1") != std::string::npos, evidence);
  BOOST_TEST(evidence.find("not saved in core") != std::string::npos, evidence);
  BOOST_TEST(find_kind(only_comm(report), "missing-collective") == nullptr);
}

BOOST_AUTO_TEST_CASE(duplicate_inputs_are_named) {
  std::vector<json> documents = no_hang(2);
  documents.push_back(documents[1]);
  json report = run(documents);
  const json& comm = only_comm(report);
  BOOST_REQUIRE_EQUAL(comm["duplicate_inputs"].size(), 1u);
  BOOST_TEST(comm["duplicate_inputs"][0]["kept"] == "rank-1.json");
  BOOST_TEST(comm["duplicate_inputs"][0]["ignored"] == "rank-2.json");
  BOOST_TEST(nsc::triage_exit_code(report) == 1);
}

BOOST_AUTO_TEST_CASE(unrelated_jobs_are_an_error) {
  std::vector<json> documents = no_hang(2);
  json other = rank_document(0, 2, {0, 0, 0, 0, 1}, waiting_thread(0));
  other["communicators"][0]["comm_hash"] = "0xdeadbeef";
  documents.push_back(other);
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "error");
  BOOST_TEST(nsc::triage_exit_code(report) == 2);
  std::string message = report["errors"][0]["message"];
  BOOST_TEST(message.find("inputs from unrelated jobs: 2 groups share no communicator") == 0u, message);
}

BOOST_AUTO_TEST_CASE(bad_documents_are_named) {
  std::vector<nsc::TriageInput> inputs = as_inputs(no_hang(2));
  inputs.push_back({"bogus.json", "snapshot", json{{"schema", "other/1"}}, ""});
  inputs.push_back({"nonccl.core", "core", document(7, json::array(), json::array()), ""});
  inputs.back().document["nccl"] = nullptr;
  json report = nsc::triage_documents(inputs, nsc::TriageOptions{});
  BOOST_TEST(report["verdict"] == "no-hang");
  BOOST_TEST(nsc::triage_exit_code(report) == 1);
  BOOST_REQUIRE_EQUAL(report["errors"].size(), 2u);
  BOOST_TEST(report["errors"][0]["message"] == "bogus.json: not an ncclscope.state/1 document (schema is \"other/1\")");
  BOOST_TEST(report["errors"][1]["message"] == "nonccl.core: no NCCL in this process (no libnccl, no communicator)");
  json nothing = nsc::triage_documents({inputs[2]}, nsc::TriageOptions{});
  BOOST_TEST(nothing["verdict"] == "error");
  BOOST_TEST(nsc::triage_exit_code(nothing) == 2);
}

BOOST_AUTO_TEST_CASE(chain_across_communicators_ends_at_the_root_culprit) {
  // World (3 ranks) agrees. Comm X = world {0,1}: rank 1 is behind on AllReduce.
  // Comm Y = world {1,2}: rank 2 is behind on AllGather, which rank 1 waits in.
  constexpr uint64_t kX = 0xaaaa0000000000a1ull, kY = 0xbbbb0000000000b2ull;
  std::vector<json> documents;
  for (int rank = 0; rank < 3; ++rank) {
    json comms = json::array({comm(kWorldHash, rank, 3, {0, 0, 0, 0, 2})});
    if (rank <= 1) comms.push_back(comm(kX, rank, 2, {0, 0, 0, 0, rank == 0 ? 5 : 4}));
    if (rank >= 1) comms.push_back(comm(kY, rank - 1, 2, {0, 0, rank == 1 ? 2 : 1, 0, 0}));
    documents.push_back(document(1000 + rank, comms,
                                 json::array({rank == 2 ? pausing_thread(1000 + rank) : waiting_thread(1000 + rank)})));
  }
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(report["world_comm"] == "0x6db0a96d9cb7fc37");
  BOOST_TEST(ints(report["culprit_ranks"]) == (std::vector<int>{2}));
  BOOST_TEST(ints(report["graph"]["longest_chain"]) == (std::vector<int>{0, 1, 2}));
  BOOST_TEST(report["graph"]["cycles"].empty());
  // The middle rank is behind on X only because it waits on Y: a waiter, never blamed.
  BOOST_TEST(report["graph"]["nodes"][1]["role"] == "waiting");
  BOOST_TEST(report["graph"]["nodes"][2]["role"] == "culprit");
  std::string summary = report["summary"];
  // The root culprit's finding comes first in the verdict.
  BOOST_TEST(summary.find("On communicator 0xbbbb0000000000b2 (2 ranks), world rank 2 (rank 1 of that communicator) "
                          "never launched AllGather #2") < summary.find("0xaaaa0000000000a1"), summary);
  std::string text = nsc::render_triage_text(report);
  BOOST_TEST(text.find("  longest chain: rank 0 -> rank 1 -> rank 2\n") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(implausible_nranks_is_ignored_not_enumerated) {
  std::vector<json> documents = no_hang(2);
  documents[1]["communicators"][0]["nranks"] = 2000000000;
  json report = run(documents);
  const json& comm = only_comm(report);
  BOOST_TEST(comm["nranks"] == 2);  // the other input's value
  BOOST_TEST(comm["missing_ranks"].empty());
  BOOST_TEST(comm["warnings"].back() == "rank-1.json: nranks 2000000000 is implausible; ignored");
  BOOST_TEST(report["verdict"] == "no-hang");
}

namespace {
// NCCL before 2.23: no seqNumber[], the collectives counted in total in ncclSharedResources.
void as_pre_2_23(json* comm, const std::string& shared_resources) {
  for (auto& [name, value] : (*comm)["seq_launched"].items()) value = nullptr;
  (*comm)["seq_launched"] = json::object();
  (*comm)["unavailable"]["seq_launched"] = "not in NCCL 2.20.5 (ncclComm has no seqNumber[]; NCCL 2.23 added it)";
  (*comm)["coll_op_count_of"] = "ncclSharedResources";
  (*comm)["shared_resources"] = shared_resources.empty() ? json(nullptr) : json(shared_resources);
}

// Two ranks, a world and a sub comm each; world rank 1 skipped one AllReduce on sub.
std::vector<json> split_pre_2_23(bool share) {
  std::vector<json> documents;
  for (int rank = 0; rank < 2; ++rank) {
    bool culprit = rank == 1;
    json world = comm(kWorldHash, rank, 2, {0, 0, 0, 0, 4});
    json sub = comm(kSubHash, 1 - rank, 2, {0, 0, 0, 0, culprit ? 3 : 4});
    as_pre_2_23(&world, "0x7f0000100000");
    as_pre_2_23(&sub, share ? "0x7f0000100000" : "0x7f0000200000");
    if (share) world["coll_op_count"] = sub["coll_op_count"] = culprit ? 7 : 8;  // one count for both
    documents.push_back(document(1000 + rank, json::array({world, sub}),
                                 json::array({culprit ? pausing_thread(1000 + rank) : waiting_thread(1000 + rank)})));
  }
  return documents;
}
}  // namespace

BOOST_AUTO_TEST_CASE(before_2_23_the_comms_own_total_names_the_rank_behind) {
  json report = run(split_pre_2_23(false));
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(ints(report["culprit_ranks"]) == (std::vector<int>{1}));
  const json* finding = find_kind(report["communicators"][1], "missing-collective");
  BOOST_REQUIRE(finding != nullptr);
  BOOST_TEST((*finding)["collective"].is_null());  // a total says nothing of the type
  BOOST_TEST((*finding)["seq"] == 4);
  BOOST_TEST(ints((*finding)["culprit_comm_ranks"]) == (std::vector<int>{0}));
  BOOST_TEST(find_kind(report["communicators"][0], "no-hang-evident") != nullptr);  // world: 4 = 4
  std::string summary = report["summary"];
  BOOST_TEST(summary.find("never launched collective #4 (of a type NCCL before 2.23 does not count)") != std::string::npos,
             summary);
}

BOOST_AUTO_TEST_CASE(before_2_23_a_count_shared_by_split_comms_names_both) {
  json report = run(split_pre_2_23(true));
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(ints(report["culprit_ranks"]) == (std::vector<int>{1}));
  for (const json& comm : report["communicators"]) {
    const json* finding = find_kind(comm, "missing-collective");
    BOOST_REQUIRE(finding != nullptr);
    BOOST_TEST((*finding)["seq"].is_null());  // 8 vs 7 counts two comms: no position on either
    BOOST_TEST((*finding)["evidence"].dump().find("shared with communicator") != std::string::npos);
  }
  std::string summary = report["summary"];
  BOOST_TEST(summary.find("(one count for both: splitShare)") != std::string::npos, summary);
}

BOOST_AUTO_TEST_CASE(before_2_23_a_total_that_may_be_shared_is_not_compared) {
  std::vector<json> documents = split_pre_2_23(false);
  for (json& document : documents)
    for (json& comm : document["communicators"]) comm["shared_resources"] = nullptr;  // older snapshot
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "incomplete");
  BOOST_TEST(report["culprit_ranks"].empty());
  BOOST_TEST(finding_of(report, "missing-collective") == nullptr);
  BOOST_TEST(finding_of(report, "counters-unavailable") != nullptr);
}
