// Loading inputs: the SAX summary of a snapshot file equals the summary of the
// parsed document, bad files are named, directories expand in natural order.
#define BOOST_TEST_MODULE triage_inputs
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "../fuzz/summary_comparison.h"
#include "temp_dir.h"
#include "triage/inputs.h"
#include "triage/sax_summary.h"
#include "triage/triage.h"
#include "triage_synthetic.h"
#include "util/errors.h"

using nlohmann::json;
using namespace synthetic;

namespace {


// Every input kind the analysis reads, with nulls and notes.
std::vector<json> varied_documents() {
  std::vector<json> documents = missing_collective(4, 3);
  json& comm0 = documents[0]["communicators"][0];
  comm0["proxy_ops"].push_back(proxy_op("Recv", "ncclPatternRecv", 2, 1));
  comm0["planned"]["colls"].push_back({{"collective", "AllReduce"}, {"count", 8}});
  comm0["planned"]["p2p"].push_back({{"kind", "send"}, {"peer", 1}, {"count", 8}});
  comm0["planned"]["n_tasks_coll"] = 1;
  comm0["seq_launched"]["Reduce"] = nullptr;
  comm0["unavailable"]["seq_launched.Reduce"] = "0x10: not saved in core";
  comm0["p2p_op_count"] = {{"total", nullptr}, {"unavailable", {{"per_channel[1]", "not mapped"}}}};
  documents[1]["communicators"][0]["health"]["abort_flag"] = nullptr;
  documents[1]["communicators"][0]["health"]["async_result"] = "ncclRemoteError";
  documents[1]["threads"][0]["frames"][0] = {{"pc", "0x7f0001"}, {"function", nullptr},
                                              {"module", "libc.so.6 (build-id mismatch: core aa, file bb)"},
                                              {"offset", 1025270}};
  documents[1]["threads"][0]["frames"][1] = {{"pc", "0x7f0002"}, {"function", nullptr}, {"module", nullptr}};
  documents[2]["errors"].push_back({{"kind", "read"}, {"message", "ncclComm.abortFlag: not saved in core"}});
  documents[2]["communicators"].push_back(comm(kSubHash, 0, 2, {1, 0, 0, 0, 0}));
  documents[2]["communicators"].push_back({{"comm_hash", nullptr}, {"rank", 0}});
  documents[3]["threads"] = json::array();
  documents[0]["launcher"] = {{"variables", {{"RANK", "0"}, {"WORLD_SIZE", "4"}}}, {"rank", 0}, {"local_rank", nullptr},
                              {"world_size", 4}, {"rank_from", "RANK"}, {"unavailable", nullptr}};
  documents[1]["launcher"] = {{"variables", {{"RANK", "x"}}}, {"rank", nullptr}, {"world_size", nullptr},
                              {"rank_from", nullptr}, {"unavailable", "RANK=\"x\" is not a non-negative integer"}};
  documents[2]["launcher"] = {{"rank", "2"}, {"world_size", -4}, {"rank_from", 7}};  // wrong types: unknown
  return documents;
}

json without_names(json report) {
  report.erase("inputs");
  return report;
}

}  // namespace

BOOST_AUTO_TEST_CASE(sax_summary_equals_document_summary) {
  TempDir dir("triage-inputs");
  std::vector<json> documents = varied_documents();
  for (int nranks : {2, 8}) {
    std::vector<json> more = missing_collective(nranks, nranks - 1);
    documents.insert(documents.end(), more.begin(), more.end());
  }
  std::vector<nsc::triage::ProcessView> from_text, from_document;
  for (size_t i = 0; i < documents.size(); ++i) {
    std::string path = dir.write("doc-" + std::to_string(i) + ".json", documents[i].dump(2));
    from_text.push_back(nsc::triage::load_snapshot_file(path));
    from_document.push_back(nsc::triage::summarize_state_document(documents[i], path, "snapshot"));
  }
  // Summaries compared through everything triage writes about them.
  for (size_t i = 0; i < documents.size(); ++i) {
    json a = nsc::triage_processes({from_text[i]}, {}, nsc::TriageOptions{});
    json b = nsc::triage_processes({from_document[i]}, {}, nsc::TriageOptions{});
    BOOST_TEST(a.dump() == b.dump(), "document " << i);
    const auto& x = from_text[i];
    const auto& y = from_document[i];
    BOOST_TEST(nsc::fuzz::summary_json(x).dump() == nsc::fuzz::summary_json(y).dump(), "document " << i);
    BOOST_TEST(x.document_errors == y.document_errors, "document " << i);
    BOOST_TEST(x.stack_notes == y.stack_notes, "document " << i);
    BOOST_TEST((x.launcher_rank == y.launcher_rank), "document " << i);
    BOOST_TEST((x.launcher_world_size == y.launcher_world_size), "document " << i);
    BOOST_TEST(x.launcher_rank_from == y.launcher_rank_from, "document " << i);
    BOOST_REQUIRE_EQUAL(x.comms.size(), y.comms.size());
    for (size_t c = 0; c < x.comms.size(); ++c) {
      BOOST_TEST((x.comms[c].unavailable == y.comms[c].unavailable));
      BOOST_TEST(x.comms[c].planned_colls == y.comms[c].planned_colls);
      BOOST_TEST(x.comms[c].planned_p2p.size() == y.comms[c].planned_p2p.size());
      BOOST_TEST(x.comms[c].proxy_ops.size() == y.comms[c].proxy_ops.size());
      BOOST_TEST(x.comms[c].channels.size() == y.comms[c].channels.size());
      BOOST_TEST((x.comms[c].health.abort_flag == y.comms[c].health.abort_flag));
      BOOST_TEST((x.comms[c].p2p_total == y.comms[c].p2p_total));
    }
  }
  json all_text = nsc::triage_processes(from_text, {}, nsc::TriageOptions{});
  json all_document = nsc::triage_processes(from_document, {}, nsc::TriageOptions{});
  BOOST_TEST(all_text.dump() == all_document.dump());
  BOOST_TEST(from_text[1].stack_notes.size() == 1u);
  BOOST_TEST(from_text[1].threads[0].frames[0].label() == "libc.so.6+0xfa4f6");
  BOOST_TEST(from_text[1].threads[0].frames[1].label() == "0x7f0002");
  BOOST_TEST(from_text[2].document_errors.size() == 2u);  // the bad comm and the read error
  BOOST_TEST((from_text[0].launcher_rank == 0));
  BOOST_TEST((from_text[0].launcher_world_size == 4));
  BOOST_TEST(from_text[0].launcher_rank_from == "RANK");
  BOOST_TEST(!from_text[1].launcher_rank.has_value());
  BOOST_TEST(!from_text[2].launcher_rank.has_value());
  BOOST_TEST(!from_text[2].launcher_world_size.has_value());
  BOOST_TEST(from_text[2].launcher_rank_from == "");
  BOOST_TEST(!from_text[3].launcher_rank.has_value());
}

BOOST_AUTO_TEST_CASE(bad_files_are_named_with_the_problem) {
  TempDir dir("triage-inputs");
  std::string truncated = dir.write("rank-3.json", "{\"schema\": \"ncclscope.state/1\", \"threads\": [");
  try {
    nsc::triage::load_snapshot_file(truncated);
    BOOST_FAIL("no exception");
  } catch (const nsc::BadInput& error) {
    BOOST_TEST(std::string(error.what()) ==
               truncated + ": corrupt snapshot: parse error at line 1, column 45: syntax error while parsing "
                           "value - unexpected end of input; expected '[', '{', or a literal");
  }
  std::string other = dir.write("other.json", "{\"mode\": \"skip\"}");
  BOOST_CHECK_EXCEPTION(nsc::triage::load_snapshot_file(other), nsc::BadInput, [&](const nsc::BadInput& e) {
    return std::string(e.what()) == other + ": not an ncclscope.state/1 document (schema is missing)";
  });
  std::string list = dir.write("list.json", "[1, 2]");
  BOOST_CHECK_EXCEPTION(nsc::triage::load_snapshot_file(list), nsc::BadInput, [&](const nsc::BadInput& e) {
    return std::string(e.what()) == list + ": not an ncclscope.state/1 document (top level is not an object)";
  });
  std::string shape = dir.write("shape.json", "{\"schema\": \"ncclscope.state/1\", \"communicators\": {}}");
  BOOST_CHECK_EXCEPTION(nsc::triage::load_snapshot_file(shape), nsc::BadInput, [&](const nsc::BadInput& e) {
    return std::string(e.what()) == shape + ": communicators is not an array";
  });
}

BOOST_AUTO_TEST_CASE(directories_expand_in_natural_order_and_skip_other_json) {
  TempDir dir("triage-inputs");
  std::vector<json> documents = missing_collective(12, 11);
  for (size_t i = 0; i < documents.size(); ++i) dir.write("rank-" + std::to_string(i) + ".json", documents[i].dump());
  dir.write("rank0.ground_truth.json", "{\"expected_culprit_rank\": 11}");
  dir.write("README.md", "not an input");
  nsc::triage::LoadRequest request;
  request.paths = {dir.path};
  request.jobs = 3;
  nsc::triage::LoadedInputs loaded = nsc::triage::load_triage_inputs(request);
  BOOST_REQUIRE_EQUAL(loaded.processes.size(), 12u);
  BOOST_TEST(loaded.processes[2].input_name == dir.path + "/rank-2.json");
  BOOST_TEST(loaded.processes[10].input_name == dir.path + "/rank-10.json");
  BOOST_REQUIRE_EQUAL(loaded.failures.size(), 1u);
  BOOST_TEST(loaded.failures[0].status == "ignored");
  json report = nsc::triage_processes(std::move(loaded.processes), loaded.failures, nsc::TriageOptions{});
  BOOST_TEST(report["culprit_ranks"] == json::array({11}));
  BOOST_TEST(nsc::triage_exit_code(report) == 0);
}

// A file is opened once and its first 64 KiB read first: a larger snapshot is read on after
// them and summarized as a whole; one file named again (a symlink, a hard link) counts once.
BOOST_AUTO_TEST_CASE(large_snapshots_read_whole_and_one_file_named_twice_counts_once) {
  TempDir dir("triage-inputs");
  std::vector<json> documents = missing_collective(2, 1);
  documents[1]["padding"] = std::string(200000, 'x');  // a key triage does not read, past the first read
  std::string rank0 = dir.write("rank-0.json", documents[0].dump(2));
  std::string rank1 = dir.write("rank-1.json", documents[1].dump(2));
  std::string soft = dir.path + "/soft.json", hard = dir.path + "/hard.json";
  BOOST_REQUIRE(symlink(rank1.c_str(), soft.c_str()) == 0);
  BOOST_REQUIRE(link(rank0.c_str(), hard.c_str()) == 0);
  nsc::triage::LoadRequest request;
  request.paths = {rank0, rank1, soft, hard};
  nsc::triage::LoadedInputs loaded = nsc::triage::load_triage_inputs(request);
  BOOST_REQUIRE_EQUAL(loaded.processes.size(), 2u);
  BOOST_REQUIRE_EQUAL(loaded.failures.size(), 2u);
  BOOST_TEST(loaded.failures[0].error == soft + ": given twice (same file as an earlier input); ignored");
  BOOST_TEST(loaded.failures[1].error == hard + ": given twice (same file as an earlier input); ignored");
  nsc::triage::ProcessView whole = nsc::triage::summarize_state_document(documents[1], rank1, "snapshot");
  BOOST_TEST(nsc::fuzz::summary_json(loaded.processes[1]).dump() == nsc::fuzz::summary_json(whole).dump());
  json report = nsc::triage_processes(std::move(loaded.processes), {}, nsc::TriageOptions{});
  BOOST_TEST(report["culprit_ranks"] == json::array({1}));
}

BOOST_AUTO_TEST_CASE(cores_without_a_state_builder_are_reported) {
  TempDir dir("triage-inputs");
  std::string core = dir.write("core.1", std::string("\x7f" "ELF", 4) + std::string(60, '\0'));
  nsc::triage::LoadRequest request;
  request.paths = {core};
  nsc::triage::LoadedInputs loaded = nsc::triage::load_triage_inputs(request);
  BOOST_REQUIRE_EQUAL(loaded.failures.size(), 1u);
  BOOST_TEST(loaded.failures[0].error == core + ": cannot decode a core in this build (no state builder)");
  request.build_state = [](const nsc::StateRequest& state) -> json {
    throw nsc::BadInput("core " + state.core_path + ": no NCCL library mapped");
  };
  loaded = nsc::triage::load_triage_inputs(request);
  BOOST_REQUIRE_EQUAL(loaded.failures.size(), 1u);
  BOOST_TEST(loaded.failures[0].error == "core " + core + ": no NCCL library mapped");
}

namespace {

// Every value's JSON pointer in a document.
void collect_pointers(const json& value, const json::json_pointer& at, std::vector<json::json_pointer>* out) {
  out->push_back(at);
  if (value.is_object())
    for (auto& [key, child] : value.items()) collect_pointers(child, at / key, out);
  else if (value.is_array())
    for (size_t i = 0; i < value.size(); ++i) collect_pointers(value[i], at / i, out);
}

}  // namespace

// Wrong types and garbage anywhere: both summarizers agree, nothing crashes.
BOOST_AUTO_TEST_CASE(garbage_values_never_crash_and_both_paths_agree) {
  TempDir dir("triage-inputs");
  const json replacements[] = {nullptr, "x", 12345678901LL, -1, json::array(), json::object(), true,
                               json::array({-7, "y"}), 1.5, 18446744073709551615ULL};
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state](uint64_t bound) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state % bound;
  };
  std::vector<json> base = varied_documents();
  int compared = 0;
  for (int round = 0; round < 200; ++round) {
    json doc = base[round % base.size()];
    std::vector<json::json_pointer> pointers;
    collect_pointers(doc, json::json_pointer(), &pointers);
    for (int change = 0; change < 6; ++change) {
      const json::json_pointer& at = pointers[1 + next(pointers.size() - 1)];
      if (!doc.contains(at)) continue;  // under an earlier replacement
      doc[at] = replacements[next(std::size(replacements))];
    }
    std::string path = dir.write("fuzz.json", doc.dump());
    std::string from_text_error, from_document_error;
    nsc::triage::ProcessView from_text, from_document;
    try {
      from_text = nsc::triage::load_snapshot_file(path);
    } catch (const nsc::BadInput& error) {
      from_text_error = error.what();
    }
    try {
      from_document = nsc::triage::summarize_state_document(doc, path, "snapshot");
    } catch (const nsc::BadInput& error) {
      from_document_error = error.what();
    }
    BOOST_TEST(from_text_error.empty() == from_document_error.empty(), "round " << round << ": '" << from_text_error
                                                                               << "' vs '" << from_document_error << "'");
    if (!from_text_error.empty() || !from_document_error.empty()) continue;
    json a = nsc::triage_processes({from_text}, {}, nsc::TriageOptions{});
    json b = nsc::triage_processes({from_document}, {}, nsc::TriageOptions{});
    BOOST_TEST(a.dump() == b.dump(), "round " << round << ": " << json::diff(b, a).dump().substr(0, 400));
    nsc::render_triage_text(a);
    nsc::render_triage_dot(a, nsc::TriageOptions{});
    ++compared;
  }
  BOOST_TEST(compared > 100);
}
