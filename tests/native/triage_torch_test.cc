// Triage with PyTorch flight-recorder ("torch") sections in the state documents (issue 16),
// on synthetic documents shaped like torch/flight_recorder.cc's output: the process group's
// name on the communicator, a size mismatch PyTorch recorded where NCCL's counters agree, each
// named rank's last record (op, sizes, Python line) on a hang finding, hostile sections, and
// the SAX and document summaries agreeing.
#define BOOST_TEST_MODULE triage_torch
#include <boost/test/unit_test.hpp>

#include <string>

#include "triage/analysis.h"
#include "triage/inputs.h"
#include "triage/process_view.h"
#include "triage/sax_summary.h"
#include "triage/triage.h"
#include "triage_synthetic.h"

using nlohmann::json;
using namespace synthetic;

namespace {

json entry(uint64_t seq, const std::string& pg_name, const std::string& pg_desc, int64_t elements,
           const std::string& state, int line) {
  return {{"process_group", {pg_name, pg_desc}}, {"collective_seq_id", seq}, {"p2p_seq_id", 0},
          {"profiling_name", "nccl:all_reduce"}, {"input_sizes", {{elements}}}, {"input_dtypes", {"Float"}},
          {"output_sizes", {{elements}}}, {"output_dtypes", {"Float"}}, {"state", state}, {"is_p2p", false},
          {"frames", {{{"name", "all_reduce"}, {"filename", "/venv/torch/distributed/distributed_c10d.py"}, {"line", 3068}},
                      {{"name", "train_step"}, {"filename", "/job/train.py"}, {"line", line}}}}};
}

// The torch section of one rank: pg "3"/"dp1" joined uniquely to the synthetic comm's address.
json torch_section(int rank, json entries, const std::string& match = "unique") {
  return {{"process_groups", {{{"name", "3"}, {"desc", "dp1"}, {"ranks", {0, 1}}, {"pg_id", 2}, {"comm_rank", rank},
                               {"communicator", "0x7f0000001000"}, {"match", match}}}},
          {"entries", entries}};
}

std::vector<json> size_mismatch_job() {
  // NCCL counters agree (AllReduce 4 on both), nothing waits: the mismatch completed silently.
  std::vector<json> documents = no_hang(2);
  json rank0 = json::array(), rank1 = json::array();
  for (uint64_t seq = 1; seq <= 4; ++seq) {
    rank0.push_back(entry(seq, "3", "dp1", 65536, "completed", 161));
    rank1.push_back(entry(seq, "3", "dp1", seq == 4 ? 131072 : 65536, "completed", 161));
  }
  documents[0]["torch"] = torch_section(0, rank0);
  documents[1]["torch"] = torch_section(1, rank1);
  return documents;
}

}  // namespace

BOOST_AUTO_TEST_CASE(size_mismatch_recorded_by_pytorch_is_a_mismatch_verdict) {
  json report = nsc::triage_documents(as_inputs(size_mismatch_job()), {});
  BOOST_TEST(report["verdict"] == "mismatch");
  const json* finding = finding_of(report, "size-mismatch");
  BOOST_REQUIRE(finding != nullptr);
  BOOST_TEST((*finding)["seq"] == 4);
  BOOST_TEST((*finding)["culprit_ranks"].empty());  // two ranks: no majority
  BOOST_TEST(report["communicators"][0]["process_group"]["desc"] == "dp1");
  std::string text = nsc::render_triage_text(report);
  BOOST_TEST(text.find("pg dp1") != std::string::npos);
  BOOST_TEST(text.find("[131072]") != std::string::npos);
  BOOST_TEST(text.find("train_step (train.py:161)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(without_torch_sections_the_same_job_shows_no_hang) {
  std::vector<json> documents = size_mismatch_job();
  for (json& document : documents) document.erase("torch");
  json report = nsc::triage_documents(as_inputs(documents), {});
  BOOST_TEST(report["verdict"] == "no-hang");
  BOOST_TEST(report["communicators"][0]["process_group"].is_null());
}

BOOST_AUTO_TEST_CASE(hang_finding_gains_each_ranks_last_record) {
  std::vector<json> documents = missing_collective(2, 1);  // rank 1 never launched AllReduce #4
  json rank0 = json::array(), rank1 = json::array();
  for (uint64_t seq = 1; seq <= 4; ++seq) rank0.push_back(entry(seq, "3", "dp1", 65536, seq == 4 ? "scheduled" : "completed", 161));
  for (uint64_t seq = 1; seq <= 3; ++seq) rank1.push_back(entry(seq, "3", "dp1", 65536, "completed", 161));
  documents[0]["torch"] = torch_section(0, rank0);
  documents[1]["torch"] = torch_section(1, rank1);
  json report = nsc::triage_documents(as_inputs(documents), {});
  BOOST_TEST(report["verdict"] == "hang");
  std::string text = nsc::render_triage_text(report);
  BOOST_TEST(text.find("rank 0 last issued all_reduce #4 [65536] Float (scheduled) from train_step (train.py:161)") !=
             std::string::npos);
  BOOST_TEST(text.find("rank 1 last issued all_reduce #3") != std::string::npos);
  BOOST_TEST(text.find("(pg dp1, 2 ranks)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(ambiguous_join_names_no_group) {
  std::vector<json> documents = size_mismatch_job();
  documents[0]["torch"]["process_groups"][0]["match"] = "ambiguous";
  documents[1]["torch"]["process_groups"][0]["match"] = "ambiguous";
  json report = nsc::triage_documents(as_inputs(documents), {});
  BOOST_TEST(report["communicators"][0]["process_group"].is_null());
  BOOST_TEST(finding_of(report, "size-mismatch") == nullptr);
}

BOOST_AUTO_TEST_CASE(hostile_torch_sections_are_bounded_and_type_checked) {
  std::vector<json> documents = size_mismatch_job();
  documents[0]["torch"]["entries"][0]["input_sizes"] = "not a list";
  documents[0]["torch"]["entries"][1]["collective_seq_id"] = -5;
  documents[0]["torch"]["entries"][2]["process_group"] = {1, 2, 3};
  documents[1]["torch"]["process_groups"][0]["ranks"] = {-1, "x", 1};
  json big = json::array();
  for (int i = 0; i < 10000; ++i) big.push_back(entry(i + 1, "3", "dp1", 1, "completed", 1));
  documents[1]["torch"]["entries"] = big;
  json report = nsc::triage_documents(as_inputs(documents), {});  // must not throw
  BOOST_TEST(report["verdict"].is_string());
  json sanitized = nsc::triage::sanitize_torch_section(documents[1]["torch"]);
  BOOST_TEST(sanitized["entries"].size() == 4096u);
  BOOST_TEST(sanitized["process_groups"][0]["ranks"] == json::array({1}));
  BOOST_TEST(nsc::triage::sanitize_torch_section(json("x")).is_null());
}

BOOST_AUTO_TEST_CASE(sax_and_document_summaries_agree) {
  std::vector<json> documents = size_mismatch_job();
  for (const json& document : documents) {
    nsc::triage::ProcessView dom = nsc::triage::summarize_state_document(document, "in", "snapshot");
    nsc::triage::ProcessView sax;
    std::string schema;
    BOOST_REQUIRE(nsc::triage::summarize_state_text(document.dump(), "in", "snapshot", &sax, &schema));
    BOOST_TEST(dom.torch.dump() == sax.torch.dump());
    BOOST_TEST(!dom.torch.is_null());
  }
}

namespace {

// Rank 0 enqueued all_reduce #4 on dp1 (recorder pg id 2) and on tp1 (pg id 1); the watchdog's
// pg status says which the GPU started (last_started -1: TORCH_NCCL_ENABLE_TIMING off).
std::vector<json> two_groups_on_rank0(int64_t dp_started, int64_t tp_started) {
  std::vector<json> documents = no_hang(2);
  json dp = entry(4, "3", "dp1", 65536, "scheduled", 161), tp = entry(4, "2", "tp1", 65536, "scheduled", 160);
  dp["pg_id"] = 2;
  tp["pg_id"] = 1;
  documents[0]["torch"] = torch_section(0, {tp, dp});
  documents[0]["torch"]["pg_status"] = {
      {{"pg_id", 1}, {"last_enqueued_collective", 4}, {"last_started_collective", tp_started}, {"last_completed_collective", 3}},
      {{"pg_id", 2}, {"last_enqueued_collective", 4}, {"last_started_collective", dp_started}, {"last_completed_collective", 3}}};
  return documents;
}

}  // namespace

BOOST_AUTO_TEST_CASE(collective_enqueued_not_started_is_queued_behind_the_started_one) {
  json report = nsc::triage_documents(as_inputs(two_groups_on_rank0(3, 4)), {});
  const json* finding = finding_of(report, "queued-behind");
  BOOST_REQUIRE(finding != nullptr);
  BOOST_TEST((*finding)["seq"] == 4);
  BOOST_TEST((*finding)["waiting_ranks"] == json::array({0}));
  BOOST_TEST((*finding)["explains_hang"] == false);
  std::string evidence = (*finding)["evidence"].dump();
  BOOST_TEST(evidence.find("has not started it (last started #3)") != std::string::npos);
  BOOST_TEST(evidence.find("behind all_reduce #4 [65536] Float from train_step (train.py:160) on pg tp1") !=
             std::string::npos);
  BOOST_TEST(evidence.find("scheduled") == std::string::npos);  // the recorder's own state is stale
}

BOOST_AUTO_TEST_CASE(without_recorder_timing_nothing_is_said_about_started) {
  json report = nsc::triage_documents(as_inputs(two_groups_on_rank0(-1, -1)), {});
  BOOST_TEST(finding_of(report, "queued-behind") == nullptr);
}
