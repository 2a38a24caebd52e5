// Triage with flight recorder sections in the state documents (issue 7), on
// synthetic documents: mismatch findings next to real NCCL counters, chains
// joined to the missing-collective finding (seq 3 is #4), hostile sections,
// the SAX and document summaries agreeing, and no "recorder" key without one.
#define BOOST_TEST_MODULE recorder_triage
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

#include "triage/analysis.h"
#include "triage/inputs.h"
#include "triage/process_view.h"
#include "triage/triage.h"
#include "triage_synthetic.h"

using nlohmann::json;
using namespace synthetic;

namespace {

json coll_op(uint64_t hash, const std::string& collective, uint64_t seq, uint64_t count,
             const std::string& datatype = "ncclFloat32") {
  return {{"record", "nccl_coll"}, {"comm_hash", nsc::hex(hash)}, {"collective", collective}, {"seq", seq},
          {"count", count}, {"datatype", datatype}, {"root", 0}, {"stream", "0x5b000020"}, {"tid", 1000}};
}

// A decode_recorder-shaped section: one thread, one comm, its ops, optional chains.
json recorder_section(int pid, uint64_t hash, int rank, int nranks, json ops, json chains = json::array(),
                      uint64_t written = 12, uint64_t kept = 12) {
  // {x} of one json value is that value under clang, an array of it under gcc: normalise.
  if (!ops.is_array()) ops = json::array({ops});
  if (!chains.is_array()) chains = json::array({chains});
  json last = json::object();
  for (const json& op : ops)
    last[op["collective"].get<std::string>()] =
        std::max<uint64_t>(last.value(op["collective"].get<std::string>(), 0), op["seq"].get<uint64_t>());
  json blocked = chains.empty() ? json(nullptr)
                                : json({{"call", "cudaStreamSynchronize"}, {"stream", "0x5a000010"}, {"since_ns", 1}});
  return {{"found", true}, {"pid", pid}, {"threads_dropped", 0},
          {"threads", {{{"tid", pid}, {"name", "python"}, {"records_written", written}, {"records_kept", kept},
                        {"blocked_in", blocked}}}},
          {"comms", {{{"comm_hash", nsc::hex(hash)}, {"rank", rank}, {"nranks", nranks}, {"nnodes", 1},
                      {"name", ""}, {"finalized", false}, {"last_seq", last}, {"ops", ops}}}},
          {"chains", chains}};
}

// host thread blocked in cudaStreamSynchronize(compute) -> compute waits on E -> E after `op`.
json chain_to(const json& op, int tid) {
  return json::array({{{"tid", tid},
                       {"steps", {{{"step", "host_thread_blocked"}, {"tid", tid}, {"call", "cudaStreamSynchronize"},
                                   {"stream", "0x5a000010"}, {"event", nullptr}},
                                  {{"step", "stream_waits_event"}, {"stream", "0x5a000010"}, {"event", "0x5c000030"},
                                   {"event_recorded_on", "0x5b000020"}, {"after_nccl_op", op}},
                                  {{"step", "stream_runs_nccl_op"}, {"stream", "0x5b000020"}, {"nccl_op", op}}}}}});
}

}  // namespace

BOOST_AUTO_TEST_CASE(no_recorder_no_recorder_key) {
  json report = nsc::triage_documents(as_inputs(missing_collective(2, 1)), {});
  BOOST_TEST(!report.contains("recorder"));
  BOOST_TEST(nsc::render_triage_text(report).find("Flight recorder") == std::string::npos);
  // A section that says "not found" is no recorder either.
  std::vector<json> documents = missing_collective(2, 1);
  documents[0]["recorder"] = {{"found", false}, {"why", "no flight recorder region"}};
  BOOST_TEST(nsc::triage_documents(as_inputs(documents), {}).dump() == report.dump());
}

BOOST_AUTO_TEST_CASE(chain_ends_at_the_rank_that_never_launched) {
  // NCCL counters: rank 0 launched AllGather 4 times, rank 1 3 times: #4 is missing on rank 1.
  std::vector<json> documents = {rank_document(0, 2, {0, 0, 4, 0, 7}, waiting_thread(0)),
                                 rank_document(1, 2, {0, 0, 3, 0, 7}, pausing_thread(0))};
  // The recorder saw rank 0's thread wait on an event recorded after AllGather seq 3 (the 4th).
  json op = coll_op(kWorldHash, "AllGather", 3, 1024);
  documents[0]["recorder"] = recorder_section(1000, kWorldHash, 0, 2, {op}, chain_to(op, 1000));
  documents[1]["recorder"] = recorder_section(1001, kWorldHash, 1, 2, {coll_op(kWorldHash, "AllGather", 2, 1024)});
  json report = nsc::triage_documents(as_inputs(documents), {});
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(report["culprit_ranks"] == json::array({1}));
  const std::string chain =
      "rank 0: host thread 1000 blocked in cudaStreamSynchronize(0x5a000010) -> 0x5a000010 waits on event "
      "0x5c000030 -> 0x5c000030 recorded on 0x5b000020 after AllGather #4 (seq 3) count 1024 ncclFloat32 on comm "
      "0x6db0a96d9cb7fc37 -> 0x5b000020 last ran that AllGather -> that AllGather waits for rank 1 (it has "
      "launched AllGather 3 times)";
  BOOST_REQUIRE_EQUAL(report["recorder"]["chains"].size(), 1u);
  BOOST_TEST(report["recorder"]["chains"][0]["text"] == chain);
  BOOST_TEST(report["recorder"]["chains"][0]["waits_for_ranks"] == json::array({1}));
  BOOST_TEST(report["recorder"]["chains"][0]["finding"]["seq"] == 4);
  const json* missing = finding_of(report, "missing-collective");
  BOOST_REQUIRE(missing != nullptr);
  BOOST_TEST((*missing)["seq"] == 4);
  BOOST_TEST((*missing)["evidence"].back() == "flight recorder chain, " + chain);
  BOOST_TEST(report["summary"].get<std::string>().find("Chain (flight recorder): " + chain + ".") != std::string::npos);
  // Counters came from NCCL state here: no recorder-only warning.
  BOOST_TEST(report["communicators"][0]["warnings"].empty());
  // Both ranks recorded AllGather, at different seqs: nothing to compare.
  BOOST_TEST(report["recorder"]["compared_collectives"] == 0);
  BOOST_TEST(nsc::render_triage_text(report).find("  chain: " + chain + "\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(chain_to_an_op_every_rank_launched) {
  std::vector<json> documents = {rank_document(0, 2, {0, 0, 4, 0, 7}, waiting_thread(0)),
                                 rank_document(1, 2, {0, 0, 3, 0, 7}, pausing_thread(0))};
  json op = coll_op(kWorldHash, "AllGather", 2, 1024);  // #3: both ranks launched it
  documents[0]["recorder"] = recorder_section(1000, kWorldHash, 0, 2, {op}, chain_to(op, 1000));
  json report = nsc::triage_documents(as_inputs(documents), {});
  const json& chain = report["recorder"]["chains"][0];
  BOOST_TEST(chain["waits_for_ranks"].empty());
  BOOST_TEST(chain["finding"].is_null());
  BOOST_TEST(chain["text"].get<std::string>().find("-> every rank given launched that AllGather: the wait is on the GPU or network") !=
             std::string::npos);
  BOOST_TEST(report["recorder"]["inputs_without_recorder"] == json({"rank-1.json"}));
}

BOOST_AUTO_TEST_CASE(mismatch_next_to_nccl_counters_leads_the_hang_verdict) {
  // Counters agree (AllReduce=7 on all 3 ranks), rank 0 waits on the GPU: host state alone says nothing.
  std::vector<json> documents;
  for (int rank = 0; rank < 3; ++rank) {
    documents.push_back(rank_document(rank, 3, {0, 0, 0, 0, 7}, rank == 0 ? waiting_thread(0) : pausing_thread(0)));
    uint64_t count = rank == 1 ? 4096 : 8192;  // the 7th AllReduce (seq 6): rank 1 passed half the count
    documents.back()["recorder"] = recorder_section(1000 + rank, kWorldHash, rank, 3,
                                                    {coll_op(kWorldHash, "AllReduce", 5, 8192),
                                                     coll_op(kWorldHash, "AllReduce", 6, count)});
  }
  json report = nsc::triage_documents(as_inputs(documents), {});
  BOOST_TEST(report["verdict"] == "hang");
  const json& first = report["communicators"][0]["findings"][0];
  BOOST_TEST(first["kind"] == "count-mismatch");
  BOOST_TEST(first["seq"] == 7);
  BOOST_TEST(first["recorder_seq"] == 6);
  BOOST_TEST(first["culprit_ranks"] == json::array({1}));
  BOOST_TEST(first["waiting_ranks"] == json::array({0, 2}));
  BOOST_TEST(first["explains_hang"] == true);
  BOOST_TEST(first["evidence"][0] ==
             "count-mismatch: comm 0x6db0a96d9cb7fc37 AllReduce seq 6 (#7, the 7th AllReduce): rank 0 count 8192 "
             "ncclFloat32, rank 1 count 4096 ncclFloat32, rank 2 count 8192 ncclFloat32");
  BOOST_TEST(report["culprit_ranks"] == json::array({1}));
  BOOST_TEST(report["summary"].get<std::string>().rfind(
                 "Hang. On communicator 0x6db0a96d9cb7fc37 (3 ranks), the ranks launched AllReduce #7 (seq 6) with "
                 "different count: rank 0 count 8192 ncclFloat32, rank 1 count 4096 ncclFloat32, rank 2 count 8192 "
                 "ncclFloat32; rank 1 disagrees with the others (flight recorder).",
                 0) == 0);
  BOOST_TEST(report["recorder"]["compared_collectives"] == 2);
  // The graph has the mismatch edge: the agreeing ranks wait on the odd one.
  bool edge = false;
  for (const json& e : report["graph"]["edges"]) edge = edge || (e["kind"] == "mismatch" && e["to"] == json::array({1}));
  BOOST_TEST(edge);
}

BOOST_AUTO_TEST_CASE(wrapped_rings_leave_unrecorded_counters_unknown) {
  // No NCCL communicator in memory, rings wrapped: only the recorded AllReduce count is known.
  std::vector<json> documents = {document(2000, json::array(), json::array({waiting_thread(2000)})),
                                 document(2001, json::array(), json::array({pausing_thread(2001)}))};
  documents[0]["recorder"] = recorder_section(2000, kSubHash, 0, 2, {coll_op(kSubHash, "AllReduce", 9, 64)}, json::array(),
                                              9000, 4096);
  documents[1]["recorder"] = recorder_section(2001, kSubHash, 1, 2, {coll_op(kSubHash, "AllReduce", 8, 64)});
  json report = nsc::triage_documents(as_inputs(documents), {});
  const json* missing = finding_of(report, "missing-collective");
  BOOST_REQUIRE(missing != nullptr);
  BOOST_TEST((*missing)["seq"] == 10);  // rank 1 recorded seq 8 (9 launched), rank 0 seq 9 (10 launched)
  BOOST_TEST((*missing)["culprit_ranks"] == json::array({1}));
  bool unknown_said = false;
  for (const json& line : (*missing)["evidence"])
    unknown_said = unknown_said || line.get<std::string>().find("none in the flight recorder's window") != std::string::npos;
  BOOST_TEST(!unknown_said);  // only AllReduce differs; the unknown ones are other collectives
  BOOST_TEST(report["recorder"]["inputs"][0]["complete_history"] == false);
  // The summaries themselves: wrapped rank 0 knows only AllReduce; complete rank 1 knows all five.
  for (int rank : {0, 1}) {
    nsc::triage::ProcessView process = nsc::triage::summarize_state_document(documents[rank], "r", "snapshot");
    nsc::triage::add_recorder_communicators(&process);
    BOOST_REQUIRE_EQUAL(process.comms.size(), 1u);
    const nsc::triage::CommView& comm = process.comms[0];
    BOOST_TEST(comm.from_recorder);
    BOOST_TEST(*comm.seq_launched[4] == (rank == 0 ? 10 : 9));
    BOOST_TEST(comm.seq_launched[2].has_value() == (rank == 1));
    if (rank == 1) BOOST_TEST(*comm.seq_launched[2] == 0);
    else BOOST_TEST(comm.unavailable_reason("seq_launched.AllGather") == "none in the flight recorder's window (its rings wrapped)");
    BOOST_TEST(comm.unavailable_reason("health").find("flight recorder data only") != std::string::npos);
  }
  BOOST_TEST(report["communicators"][0]["warnings"].size() == 2u);
}

BOOST_AUTO_TEST_CASE(hostile_sections_are_ignored_not_fatal) {
  std::vector<json> variants = {
      json("recorder"), json::array(), json({{"found", "yes"}}), json({{"found", true}, {"comms", 7}}),
      json({{"found", true}, {"comms", {{{"comm_hash", 5}, {"rank", "0"}}}}, {"chains", {{{"steps", "x"}}}}}),
      json({{"found", true}, {"threads", {{{"records_written", -1}}}},
            {"comms", {{{"comm_hash", "0x6db0a96d9cb7fc37"}, {"rank", 0}, {"last_seq", {{"AllReduce", "a"}}},
                        {"ops", {{{"record", "nccl_coll"}, {"comm_hash", "zz"}, {"seq", -3}},
                                 {{"record", "nccl_coll"}, {"comm_hash", "0x6db0a96d9cb7fc37"}, {"collective", 4}, {"seq", 1}}}}}}},
            {"chains", {{{"tid", "x"}, {"steps", {{{"step", 3}, {"after_nccl_op", {{"seq", "1"}}}}}}}}}})};
  for (const json& variant : variants) {
    std::vector<json> documents = missing_collective(2, 1);
    documents[0]["recorder"] = variant;
    documents[1]["recorder"] = variant;
    json report;
    BOOST_CHECK_NO_THROW(report = nsc::triage_documents(as_inputs(documents), {}));
    BOOST_TEST(report["verdict"] == "hang", variant.dump());
    BOOST_CHECK_NO_THROW(nsc::render_triage_text(report));
  }
}

BOOST_AUTO_TEST_CASE(snapshot_text_and_document_summaries_agree) {
  std::vector<json> documents = {rank_document(0, 2, {0, 0, 4, 0, 7}, waiting_thread(0)),
                                 rank_document(1, 2, {0, 0, 3, 0, 7}, pausing_thread(0))};
  json op = coll_op(kWorldHash, "AllGather", 3, 1024);
  documents[0]["recorder"] = recorder_section(1000, kWorldHash, 0, 2, {op, coll_op(kWorldHash, "AllReduce", 6, 10)},
                                              chain_to(op, 1000));
  documents[1]["recorder"] = recorder_section(1001, kWorldHash, 1, 2, {coll_op(kWorldHash, "AllReduce", 6, 20)});
  documents[1]["recorder"]["records"] = json::array({{{"record", "event_record"}}});  // --records: ignored
  char pattern[] = "/tmp/recorder-triage-XXXXXX";
  std::string dir = mkdtemp(pattern);
  std::vector<nsc::triage::ProcessView> from_text, from_document;
  for (size_t i = 0; i < documents.size(); ++i) {
    std::string path = dir + "/rank-" + std::to_string(i) + ".json";
    std::ofstream(path) << documents[i].dump(1);
    from_text.push_back(nsc::triage::load_snapshot_file(path));
    from_document.push_back(nsc::triage::summarize_state_document(documents[i], path, "snapshot"));
    BOOST_TEST(from_text.back().recorder.dump() == from_document.back().recorder.dump());
  }
  std::system(("rm -rf '" + dir + "'").c_str());
  json a = nsc::triage_processes(from_text, {}, {});
  json b = nsc::triage_processes(from_document, {}, {});
  BOOST_TEST(a.dump() == b.dump());
  BOOST_TEST(a["recorder"]["mismatches"].size() == 1u);
  BOOST_TEST(a["recorder"]["mismatches"][0]["kind"] == "count-mismatch");
}
