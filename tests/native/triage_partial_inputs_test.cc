// Issue 37 on synthetic snapshots: absent, unreadable and impossible inputs never make a
// culprit; snapshots are validated on load; duplicates are decided by content.
#define BOOST_TEST_MODULE triage_partial_inputs
#include <boost/test/unit_test.hpp>

#include "triage/triage.h"
#include "triage_synthetic.h"

using nlohmann::json;
using namespace synthetic;

namespace {

json run(const std::vector<json>& documents) {
  return nsc::triage_documents(as_inputs(documents), nsc::TriageOptions{});
}

std::vector<int> ints(const json& value) { return value.get<std::vector<int>>(); }

// The skip-collective shape: rank 0 launched AllReduce #4 and waits, rank 1 (the culprit) is
// in pause() after 3.
std::vector<json> skip_collective() {
  return {rank_document(0, 2, {0, 0, 0, 0, 4}, waiting_thread(0)),
          rank_document(1, 2, {0, 0, 0, 0, 3}, pausing_thread(0))};
}

json with_launcher(json document, int rank, int world_size) {
  document["launcher"] = {{"rank", rank}, {"world_size", world_size}, {"rank_from", "RANK"}};
  return document;
}

bool status_partial(const json& report, const std::string& name) {
  for (const json& input : nsc::readable_inputs(report))
    if (input["name"] == name) return input["status"] == "partial";
  return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_peer_without_input_is_a_suspect_not_the_culprit) {
  // ppdp-skip-send without rank 5's core: rank 7 waits in Recv from 5, which has no input.
  json waiter = rank_document(0, 2, {0, 0, 0, 0, 4}, waiting_thread(0));
  waiter["communicators"][0]["proxy_ops"].push_back(proxy_op("Recv", "ncclPatternRecv", 1));
  json report = run({waiter});
  BOOST_TEST(report["verdict"] == "incomplete");
  BOOST_TEST(report["culprit_ranks"].empty());
  BOOST_TEST(ints(report["suspect_ranks"]) == (std::vector<int>{1}));
  BOOST_TEST(report["graph"]["blame"][0]["kind"] == "no-input");
}

BOOST_AUTO_TEST_CASE(a_culprit_the_ranks_present_prove_is_named_with_that_evidence) {
  std::vector<json> documents = missing_collective(8, 5);
  documents.erase(documents.begin() + 2);  // rank 2 gave no input
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(ints(report["culprit_ranks"]) == (std::vector<int>{5}));
  BOOST_TEST(ints(report["suspect_ranks"]) == (std::vector<int>{2}));
  bool said = false;
  for (const json& entry : report["graph"]["blame"])
    if (entry["kind"] == "skipped")
      said = entry.value("evidence", "").find("decided by the inputs present alone: ranks 0,1,3,4,6,7 wait on it "
                                               "(missing-collective)") == 0;
  BOOST_TEST(said, report["graph"]["blame"].dump());
}

BOOST_AUTO_TEST_CASE(a_damaged_input_without_communicators_is_unreadable_not_aborted) {
  // A core cut at 128 KiB: libnccl found, no communicator, the target reported truncated.
  std::vector<json> documents = skip_collective();
  documents[1]["communicators"] = json::array();
  documents[1]["errors"] = {{{"kind", "target"}, {"subject", "core rank1.core"},
                             {"reason", "core_open rank1.core: core file truncated"}}};
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "incomplete");
  BOOST_TEST(report["culprit_ranks"].empty());
  BOOST_TEST(ints(report["suspect_ranks"]) == (std::vector<int>{1}));
}

BOOST_AUTO_TEST_CASE(a_communicator_rejected_as_corrupt_is_unreadable_not_aborted) {
  std::vector<json> documents = skip_collective();
  documents[1]["communicators"] = json::array();
  documents[1]["errors"] = {{{"kind", "discovery"}, {"subject", "communicator candidate 0x7f0000001000"},
                             {"reason", "found but rejected as corrupt: endMagic is 0"}}};
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "incomplete");
  BOOST_TEST(report["culprit_ranks"].empty());
}

BOOST_AUTO_TEST_CASE(a_null_communicator_list_is_unknown_not_destroyed) {
  std::vector<json> documents = skip_collective();
  documents[1]["communicators"] = nullptr;
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "incomplete");
  BOOST_TEST(report["culprit_ranks"].empty());
  BOOST_TEST(status_partial(report, "rank-1.json"));
}

BOOST_AUTO_TEST_CASE(a_libnccl_whose_build_id_matches_nothing_is_unreadable_not_a_startup_hang) {
  std::vector<json> documents;
  for (int rank = 0; rank < 2; ++rank) {
    json doc = with_launcher(rank_document(rank, 2, {0, 0, 0, 0, 0},
                                           rank == 0 ? pausing_thread(0) : thread(0, "poll/epoll", {frame("poll", "/lib/x86_64-linux-gnu/libc.so.6")})),
                             rank, 2);
    doc["communicators"] = json::array();
    doc["nccl"]["build_id_mismatch"] = true;
    documents.push_back(doc);
  }
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "incomplete");
  BOOST_TEST(report["culprit_ranks"].empty());
  BOOST_TEST(status_partial(report, "rank-0.json"));
  BOOST_TEST(status_partial(report, "rank-1.json"));
}

BOOST_AUTO_TEST_CASE(a_startup_rank_without_input_is_never_the_culprit) {
  // tpdp-startup without rank 0: ranks 1,2 wait in the rendezvous, rank 3 is elsewhere.
  std::vector<json> documents;
  for (int rank = 1; rank < 4; ++rank) {
    json main = rank == 3 ? pausing_thread(0)
                          : thread(0, "unknown", {frame("c10d::TCPStore::wait", "/opt/torch/lib/libtorch_cpu.so")});
    json doc = with_launcher(rank_document(rank, 4, {0, 0, 0, 0, 0}, main), rank, 4);
    doc["communicators"] = json::array();
    documents.push_back(doc);
  }
  json report = run(documents);
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(ints(report["culprit_ranks"]) == (std::vector<int>{3}));
  BOOST_TEST(ints(report["suspect_ranks"]) == (std::vector<int>{0}));
  documents.pop_back();  // and without rank 3: nobody present is elsewhere
  report = run(documents);
  BOOST_TEST(report["verdict"] == "incomplete");
  BOOST_TEST(report["culprit_ranks"].empty());
}

BOOST_AUTO_TEST_CASE(impossible_counters_below_2_63_are_flagged_and_left_out) {
  for (int64_t impossible : {int64_t{0xffffffff}, (int64_t{1} << 40) + 3, int64_t{1} << 62}) {
    std::vector<json> documents = skip_collective();
    documents[1]["communicators"][0]["seq_launched"]["AllReduce"] = impossible;  // coll_op_count stays 3
    json report = run(documents);
    BOOST_TEST(report["culprit_ranks"].empty(), impossible << ": " << report["summary"]);
    BOOST_TEST(report["verdict"] == "incomplete", impossible);
    BOOST_TEST(status_partial(report, "rank-1.json"));
  }
  std::vector<json> documents = skip_collective();
  documents[1]["communicators"][0]["seq_launched"]["Reduce"] = int64_t{2400000000000000000};  // on the culprit
  json report = run(documents);
  BOOST_TEST(report["graph"]["cycles"].empty(), report["summary"]);  // no "deadlock"
  BOOST_TEST(ints(report["culprit_ranks"]) == (std::vector<int>{1}), report["summary"]);  // AllReduce still decides
}

BOOST_AUTO_TEST_CASE(snapshot_rank_outside_nranks_is_refused_on_load) {
  std::vector<json> documents = skip_collective();
  documents[1]["communicators"][0]["rank"] = 2;  // "rank 2" of a 2-rank communicator
  json report = run(documents);
  BOOST_TEST(report["culprit_ranks"].empty(), report["summary"]);
  BOOST_TEST(status_partial(report, "rank-1.json"));
  documents = skip_collective();
  documents[1]["communicators"][0]["nranks"] = 3;  // nranks 3 against 2: rank 2 has no input
  report = run(documents);
  for (const json& rank : report["culprit_ranks"]) BOOST_TEST(rank != 2, report["summary"]);
}

BOOST_AUTO_TEST_CASE(a_p2p_peer_outside_nranks_is_refused) {
  json waiter = rank_document(0, 2, {0, 0, 0, 0, 4}, waiting_thread(0));
  waiter["communicators"][0]["proxy_ops"].push_back(proxy_op("Recv", "ncclPatternRecv", 1099511));
  json report = run({waiter, rank_document(1, 2, {0, 0, 0, 0, 4}, waiting_thread(0))});
  BOOST_TEST(report["culprit_ranks"].empty(), report["summary"]);
  BOOST_TEST(status_partial(report, "rank-0.json"));
}

BOOST_AUTO_TEST_CASE(two_copies_of_one_rank_are_decided_by_content_not_file_names) {
  std::vector<json> documents = skip_collective();
  json caught_up = documents[1];
  caught_up["communicators"][0]["seq_launched"]["AllReduce"] = 4;
  caught_up["communicators"][0]["coll_op_count"] = 4;
  std::vector<std::string> verdicts;
  for (bool swap : {false, true}) {
    std::vector<nsc::TriageInput> inputs = {{"rank-0.json", "snapshot", documents[0], ""},
                                            {swap ? "z_both.json" : "a_both.json", "snapshot", documents[1], ""},
                                            {swap ? "a_both.json" : "z_both.json", "snapshot", caught_up, ""}};
    json report = nsc::triage_documents(inputs, nsc::TriageOptions{});
    verdicts.push_back(report["verdict"].get<std::string>() + " " + report["culprit_ranks"].dump() + " " +
                       report["suspect_ranks"].dump());
  }
  BOOST_TEST(verdicts[0] == verdicts[1]);
}
