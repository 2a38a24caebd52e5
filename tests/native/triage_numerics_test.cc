// Buffer numerics (`ncclscope.numerics/1`) joined with triage (issue 20 item 1), on synthetic
// state documents: the sentence naming the rank, the buffer and the collective; underflow;
// unreadable device buffers; a document matching no rank; hostile documents; files.
#define BOOST_TEST_MODULE triage_numerics
#include <boost/test/unit_test.hpp>

#include <string>

#include "snapshot/numerics_text.h"
#include "temp_dir.h"
#include "triage/inputs.h"
#include "triage/triage.h"
#include "triage_synthetic.h"

using nlohmann::json;
using namespace synthetic;

namespace {

json stats(uint64_t read, uint64_t nan, uint64_t subnormal, uint64_t zero) {
  return {{"elements_read", read}, {"nan", nan}, {"pos_inf", 0u}, {"neg_inf", 0u}, {"subnormal", subnormal},
          {"zero", zero}, {"finite", read - nan}, {"max_abs", 1.5}};
}

json buffer(uint64_t hash, int rank, const std::string& role, json buffer_stats, uint64_t seq = 1) {
  json entry = {{"comm", "0x55bff057a010"}, {"comm_hash", nsc::hex(hash)}, {"rank", rank}, {"nranks", 2},
                {"stage", "launched"}, {"collective", "AllGather"}, {"seq", seq}, {"datatype", "ncclBfloat16"},
                {"element_type", "bf16"}, {"role", role}, {"address", "0x7f0000000000"}, {"elements", 4096u},
                {"read_from", "device"}, {"sampled", false}, {"stats", buffer_stats}};
  if (buffer_stats.is_null()) entry["unreadable"] = "not readable here (not saved in core): device memory?";
  return entry;
}

json numerics_document(json buffers) {
  if (!buffers.is_array()) buffers = json::array({buffers});  // {x} of one value: see triage_kernel_join_test
  return {{"schema", "ncclscope.numerics/1"}, {"buffers", buffers}, {"notes", json::array()}};
}

std::vector<nsc::TriageInput> with_numerics(const std::vector<json>& documents, const std::vector<json>& numerics) {
  std::vector<nsc::TriageInput> inputs = as_inputs(documents);
  for (size_t i = 0; i < numerics.size(); ++i)
    inputs.push_back({"rank" + std::to_string(i) + ".numerics.json", "snapshot", numerics[i], ""});
  return inputs;
}

}  // namespace

BOOST_AUTO_TEST_CASE(nan_buffer_is_named_by_rank_role_and_collective) {
  std::vector<json> documents = missing_collective(2, 1);
  json rank0 = numerics_document({buffer(kWorldHash, 0, "send", stats(4096, 4096, 0, 0)),
                                  buffer(kWorldHash, 0, "recv", stats(8192, 0, 0, 10))});
  json without = nsc::triage_documents(as_inputs(documents), {});
  json report = nsc::triage_documents(with_numerics(documents, {rank0}), {});
  // Evidence beside the verdict: the culprit is still the rank that skipped.
  BOOST_TEST(report["verdict"] == without["verdict"]);
  BOOST_TEST(report["culprit_ranks"] == without["culprit_ranks"]);
  const json& section = report["numerics"];
  BOOST_TEST(section["read"] == 2);
  BOOST_TEST(section["with_nan_or_inf"] == 1);
  BOOST_TEST(section["buffers"][0]["text"] == "rank 0's send buffer of AllGather #1 holds 4,096 NaN (bf16)");
  BOOST_TEST(section["buffers"][0]["world_rank"] == 0);
  BOOST_TEST(!section["buffers"][1].contains("text"));
  std::string text = nsc::render_triage_text(report);
  BOOST_TEST(text.find("Numerics (buffers of the collective each rank is in; 2 read, 0 not readable here):\n"
                       "  rank 0's send buffer of AllGather #1 holds 4,096 NaN (bf16)\n") != std::string::npos);
  BOOST_TEST(report["inputs"].back()["kind"] == "numerics");
  BOOST_TEST(report["inputs"].back()["status"] == "ok");
}

BOOST_AUTO_TEST_CASE(underflow_is_said_and_zero_buffers_are_not) {
  std::vector<json> documents = missing_collective(2, 1);
  json rank1 = numerics_document({buffer(kWorldHash, 1, "send", stats(4096, 0, 3000, 1000)),
                                  buffer(kWorldHash, 1, "recv", stats(4096, 0, 0, 4096))});
  json report = nsc::triage_documents(with_numerics(documents, {rank1}), {});
  const json& section = report["numerics"];
  BOOST_TEST(section["underflowed"] == 1);
  BOOST_TEST(section["buffers"][0]["text"] ==
             "rank 1's send buffer of AllGather #1 is mostly underflowed: 3,000 subnormal and 1,000 zero of 4,096 "
             "elements read (bf16)");
  BOOST_TEST(!section["buffers"][1].contains("text"));  // all zero, no subnormal: a zeroed buffer
}

BOOST_AUTO_TEST_CASE(device_buffers_unread_are_counted_and_pointed_to_cuda_gdb) {
  std::vector<json> documents = missing_collective(2, 1);
  json rank0 = numerics_document({buffer(kWorldHash, 0, "send", nullptr), buffer(kWorldHash, 0, "recv", nullptr)});
  json report = nsc::triage_documents(with_numerics(documents, {rank0}), {});
  BOOST_TEST(report["numerics"]["unreadable"] == 2);
  BOOST_TEST(report["numerics"]["read"] == 0);
  std::string text = nsc::render_triage_text(report);
  BOOST_TEST(text.find("run nccl-numerics --json under cuda-gdb") != std::string::npos);
  BOOST_TEST(text.find("no buffer read holds") == std::string::npos);  // none was read: no claim about them
}

BOOST_AUTO_TEST_CASE(no_numerics_no_section) {
  json report = nsc::triage_documents(as_inputs(missing_collective(2, 1)), {});
  BOOST_TEST(!report.contains("numerics"));
  BOOST_TEST(nsc::render_triage_text(report).find("Numerics") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(buffer_of_no_rank_is_not_joined_and_named_by_its_comm) {
  std::vector<json> documents = missing_collective(2, 1);
  json stray = numerics_document(buffer(kSubHash, 0, "send", stats(10, 10, 0, 0)));
  json report = nsc::triage_documents(with_numerics(documents, {stray}), {});
  BOOST_TEST(report["numerics"]["buffers"][0]["joined"] == false);
  BOOST_TEST(report["numerics"]["buffers"][0]["text"] ==
             "comm 0x1234abcd5678ef01 rank 0's send buffer of AllGather #1 holds 10 NaN (bf16)");
  BOOST_TEST(report["inputs"].back()["status"] == "not-joined");
}

BOOST_AUTO_TEST_CASE(hostile_documents_are_reduced_not_trusted) {
  std::vector<json> documents = missing_collective(2, 1);
  json hostile = numerics_document({{{"comm_hash", 42}, {"rank", -1}, {"role", std::string(5000, 'x')},
                                     {"stats", {{"nan", "many"}, {"elements_read", -5}}}},
                                    "not an object"});
  json report = nsc::triage_documents(with_numerics(documents, {hostile}), {});
  const json& entry = report["numerics"]["buffers"][0];
  BOOST_TEST(entry["role"].get<std::string>().size() == 203u);  // 200 characters and "..."
  BOOST_TEST(entry["stats"]["nan"].is_null());
  BOOST_TEST(entry["rank"].is_null());
  BOOST_TEST(report["numerics"]["buffers"].size() == 1u);
  nsc::render_triage_text(report);  // renders without throwing
}

BOOST_AUTO_TEST_CASE(files_load_numerics_documents) {
  TempDir dir("triage-numerics");
  std::vector<json> documents = missing_collective(2, 1);
  dir.write("rank-0.json", documents[0].dump());
  dir.write("rank-1.json", documents[1].dump());
  dir.write("rank0.numerics.json", numerics_document(buffer(kWorldHash, 0, "send", stats(4, 4, 0, 0))).dump());
  nsc::triage::LoadRequest request;
  request.paths = {dir.path};
  nsc::triage::LoadedInputs loaded = nsc::triage::load_triage_inputs(request);
  BOOST_TEST(loaded.processes.size() == 2u);
  BOOST_TEST(loaded.failures.empty());
  BOOST_REQUIRE(loaded.numerics_views.size() == 1u);
  BOOST_TEST(loaded.numerics_views[0].source == "input");
  std::string broken = dir.write("broken.numerics.json", "{\"schema\": \"ncclscope.numerics/1\", \"buffers\": [");
  nsc::triage::LoadRequest explicit_request;
  explicit_request.paths = {broken};
  nsc::triage::LoadedInputs second = nsc::triage::load_triage_inputs(explicit_request);
  BOOST_REQUIRE(second.failures.size() == 1u);
  BOOST_TEST(second.failures[0].error.find(broken + ": corrupt") == 0);
}

// Issue 36: NaN in rank 1's send buffer only; after the reduction every receive buffer holds it.
// The NaN entered through rank 1. The host-memory readings of the same device buffers (not
// readable) are superseded by cuda-gdb's documents, not counted as unreadable.
BOOST_AUTO_TEST_CASE(nan_entry_point_is_the_one_dirty_send_buffer) {
  std::vector<json> documents = missing_collective(3, 2);
  json rank0 = numerics_document({buffer(kWorldHash, 0, "send", stats(4096, 0, 0, 0)),
                                  buffer(kWorldHash, 0, "recv", stats(4096, 64, 0, 0))});
  json rank1 = numerics_document({buffer(kWorldHash, 1, "send", stats(4096, 64, 0, 0)),
                                  buffer(kWorldHash, 1, "recv", stats(4096, 64, 0, 0))});
  json host = numerics_document({buffer(kWorldHash, 0, "send", nullptr), buffer(kWorldHash, 1, "send", nullptr),
                                 buffer(kWorldHash, 2, "send", nullptr)});
  json report = nsc::triage_documents(with_numerics(documents, {rank0, rank1, host}), {});
  const json& section = report["numerics"];
  BOOST_TEST(section["read"] == 4);
  BOOST_TEST(section["unreadable"] == 1);  // rank 2's: nobody read it
  BOOST_TEST(section["entered_through"].size() == 1u);
  BOOST_TEST(section["entered_through"][0] ==
             "NaN/Inf entered AllGather #1 through rank 1's send buffer (rank 0's send buffer clean): receive buffers "
             "holding them got them through the reduction");
  BOOST_TEST(nsc::render_triage_text(report).find("  NaN/Inf entered AllGather #1 through rank 1's") != std::string::npos);
  // Every send buffer dirty: no entry point to name.
  json both = numerics_document({buffer(kWorldHash, 0, "send", stats(4096, 1, 0, 0))});
  json again = nsc::triage_documents(with_numerics(documents, {both, rank1}), {});
  BOOST_TEST(again["numerics"]["entered_through"].empty());
}

// Issue 36 (corefiles/gpu-numerics/overflow-f16): every send buffer read whole is finite, the
// receive buffers hold NaN/Inf: they arose in the reduction, not in one rank's input. A sampled
// send buffer could hide them: then nothing is said.
BOOST_AUTO_TEST_CASE(nan_from_the_reduction_when_every_send_buffer_is_clean) {
  std::vector<json> documents = missing_collective(3, 2);
  auto rank_doc = [](int rank, bool sampled) {
    json send = buffer(kWorldHash, rank, "send", stats(4096, 0, 0, 0));
    send["sampled"] = sampled;
    return numerics_document({send, buffer(kWorldHash, rank, "recv", stats(4096, 64, 0, 0))});
  };
  json report = nsc::triage_documents(with_numerics(documents, {rank_doc(0, false), rank_doc(1, false)}), {});
  BOOST_REQUIRE(report["numerics"]["entered_through"].size() == 1u);
  BOOST_TEST(report["numerics"]["entered_through"][0] ==
             "no send buffer of AllGather #1 read holds NaN/Inf (rank 0, rank 1, read whole) while receive buffers "
             "do: they arose in a reduction (a sum past the type's range), not in one rank's input");
  json sampled = nsc::triage_documents(with_numerics(documents, {rank_doc(0, false), rank_doc(1, true)}), {});
  BOOST_TEST(sampled["numerics"]["entered_through"].empty());
}
