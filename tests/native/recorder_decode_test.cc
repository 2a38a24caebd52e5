// The flight recorder end to end without CUDA: tests/fixtures/recorder_driver
// loads libncclscope-recorder.so, drives its NCCL profiler plugin and CUPTI
// callback with a hang scenario, then sleeps; we decode its rings live and
// from a gcore and check the streams, chain, IPC handles and NCCL ops.
#define BOOST_TEST_MODULE recorder_decode
#include <boost/test/unit_test.hpp>

#include "cuda/recorder_decoder.h"
#include "target/core_file.h"
#include "target/live_process.h"
#include "target_test_support.h"

using nlohmann::json;
using nsc::testing::FixtureProcess;

namespace {

const json* find_by(const json& list, const std::string& key, const std::string& value) {
  for (const auto& item : list)
    if (item.contains(key) && item[key] == value) return &item;
  return nullptr;
}

void check_nccl_side(const json& recorder, const json& info) {
  BOOST_REQUIRE(recorder["found"].get<bool>());
  BOOST_TEST(recorder["address"] == info["region"]);
  BOOST_TEST(recorder["pid"] == info["pid"]);
  BOOST_TEST(recorder["schema_version"] == 1);
  BOOST_TEST(recorder["threads"].size() == 2u);
  // Profiler init announced the comm; AllGather seq 1 and a Send were recorded.
  BOOST_REQUIRE(recorder["comms"].size() == 1u);
  const json& comm = recorder["comms"][0];
  BOOST_TEST(comm["comm_hash"] == "0x6db0a96d9cb7fc37");
  BOOST_TEST(comm["nranks"] == 2);
  BOOST_TEST(comm["name"] == "driver-comm");
  BOOST_TEST(comm["last_seq"]["AllGather"] == 1);
  const json* coll = find_by(comm["ops"], "record", "nccl_coll");
  BOOST_REQUIRE(coll != nullptr);
  BOOST_TEST((*coll)["count"] == 1024);
  BOOST_TEST((*coll)["datatype"] == "ncclFloat32");
  BOOST_TEST((*coll)["algorithm"] == "RING");
  BOOST_TEST((*coll)["protocol"] == "LL");
  BOOST_TEST((*coll)["nchannels"] == 2);
  BOOST_TEST((*coll)["stream"] == info["nccl_stream"]);  // inherited from its API event
  const json* send = find_by(comm["ops"], "record", "nccl_p2p");
  BOOST_REQUIRE(send != nullptr);
  BOOST_TEST((*send)["collective"] == "Send");
  BOOST_TEST((*send)["peer"] == 1);
  BOOST_TEST((*send)["count"] == 256);
  BOOST_TEST((*send)["datatype"] == "ncclInt32");
  // The profiler asked NCCL for Coll, P2p, CollApi, P2pApi and KernelLaunch events.
  BOOST_TEST(info["activation_mask"] == (2 | 4 | 512 | 1024 | 2048));
}

void check_cuda_side(const json& recorder, const json& info) {
  const json* main_thread = find_by(recorder["threads"], "name", "rec-main");
  BOOST_REQUIRE(main_thread != nullptr);
  BOOST_TEST((*main_thread)["blocked_in"]["call"] == "cudaStreamSynchronize");
  BOOST_TEST((*main_thread)["blocked_in"]["stream"] == info["compute_stream"]);
  const json* worker = find_by(recorder["threads"], "name", "rec-worker");
  BOOST_REQUIRE(worker != nullptr);
  BOOST_TEST((*worker)["blocked_in"].is_null());  // its synchronize returned

  const json* compute = find_by(recorder["streams"], "stream", info["compute_stream"].get<std::string>());
  BOOST_REQUIRE(compute != nullptr);
  BOOST_TEST((*compute)["blocked_threads"].size() == 1u);
  // Runtime wait and a separate driver-level wait: both pending, both on E.
  BOOST_REQUIRE((*compute)["pending_event_waits"].size() == 2u);
  const json& wait = (*compute)["pending_event_waits"][0];
  BOOST_TEST(wait["event"] == info["event"]);
  BOOST_TEST(wait["event_recorded_on"] == info["nccl_stream"]);
  BOOST_TEST(wait["after_nccl_op"]["collective"] == "AllGather");
  BOOST_TEST(wait["after_nccl_op"]["seq"] == 1);

  // The chain a triage reads: thread -> compute waits E -> E on NCCL stream after AllGather seq 1.
  BOOST_REQUIRE(recorder["chains"].size() == 1u);
  const json& steps = recorder["chains"][0]["steps"];
  BOOST_REQUIRE(steps.size() >= 2u);
  BOOST_TEST(steps[0]["step"] == "host_thread_blocked");
  BOOST_TEST(steps[1]["step"] == "stream_waits_event");
  BOOST_TEST(steps[1]["event_recorded_on"] == info["nccl_stream"]);
  BOOST_TEST(steps[1]["after_nccl_op"]["comm_hash"] == "0x6db0a96d9cb7fc37");

  const json& ipc = recorder["ipc"];
  BOOST_REQUIRE(ipc["exported"].size() == 1u);
  BOOST_TEST(ipc["exported"][0]["address"] == "0x7f0000200000");
  BOOST_TEST(ipc["exported"][0]["owner_pid"] == info["pid"]);
  BOOST_TEST(ipc["imported"].size() == 2u);
  BOOST_REQUIRE(ipc["opened_never_closed"].size() == 1u);
  BOOST_TEST(ipc["opened_never_closed"][0]["address"] == "0x7f0000400000");
  // Handles are kept as fingerprints: the two imports had different bytes.
  BOOST_TEST(ipc["imported"][0]["handle_fingerprint"] != ipc["imported"][1]["handle_fingerprint"]);
  const json& cumem = ipc["cumem"];
  BOOST_TEST(cumem["created"][0]["size"] == 2u << 20);
  BOOST_TEST(cumem["exported"][0]["shareable"] == 42);
  BOOST_TEST(cumem["imported"][0]["shareable"] == 43);
  BOOST_TEST(cumem["mapped"][0]["address"] == "0x7f0000800000");
  BOOST_TEST(cumem["mapped"][0]["unmapped"] == false);
  BOOST_TEST(cumem["mapped"][0]["aligned_to_2mib"] == true);
}

// One driver for every case (decoding only reads it); its gcore made once, when gdb is here.
FixtureProcess& driver() {
  static FixtureProcess instance("recorder_driver");
  return instance;
}

struct DriverCore {
  std::string dir, path;
  bool made = false;
  DriverCore() {
    if (!nsc::testing::have_gdb()) return;
    dir = nsc::testing::make_temp_dir();
    path = dir + "/driver.core";
    made = nsc::testing::make_gcore(driver().pid(), path);
  }
  ~DriverCore() {
    std::remove(path.c_str());
    if (!dir.empty()) rmdir(dir.c_str());
  }
};

DriverCore& driver_core() {
  static DriverCore instance;
  return instance;
}

json recorder_of(nsc::Target& target) {
  json errors = json::array();
  json recorder = nsc::decode_recorder(target, &errors);
  BOOST_TEST(errors.empty(), errors.dump());
  return recorder;
}

// Cases whose input cannot be made here are skipped (reported), never passed empty.
boost::test_tools::assertion_result recorder_has_cupti(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(driver().info().value("cupti", false));
  if (!result) result.message() << "recorder built without CUPTI headers: no CUDA-side records";
  return result;
}

boost::test_tools::assertion_result gcore_made(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(driver_core().made);
  if (!result) result.message() << "no gcore of the driver (gdb missing or the dump failed)";
  return result;
}

boost::test_tools::assertion_result gcore_made_with_cupti(boost::unit_test::test_unit_id id) {
  boost::test_tools::assertion_result made = gcore_made(id);
  return made ? recorder_has_cupti(id) : made;
}

}  // namespace

BOOST_AUTO_TEST_CASE(decodes_a_live_process) {
  BOOST_REQUIRE(!driver().info().contains("error"));
  auto target = nsc::open_live(driver().pid(), false);
  check_nccl_side(recorder_of(*target), driver().info());
}

BOOST_AUTO_TEST_CASE(decodes_the_cuda_side_of_a_live_process, *boost::unit_test::precondition(recorder_has_cupti)) {
  auto target = nsc::open_live(driver().pid(), false);
  check_cuda_side(recorder_of(*target), driver().info());
}

BOOST_AUTO_TEST_CASE(decodes_a_gcore, *boost::unit_test::precondition(gcore_made)) {
  auto target = nsc::open_core(driver_core().path, "");
  check_nccl_side(recorder_of(*target), driver().info());
}

BOOST_AUTO_TEST_CASE(decodes_the_cuda_side_of_a_gcore, *boost::unit_test::precondition(gcore_made_with_cupti)) {
  auto target = nsc::open_core(driver_core().path, "");
  check_cuda_side(recorder_of(*target), driver().info());
}
