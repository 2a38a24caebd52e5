// Replays the committed fuzz corpus (tests/fuzz/corpus/TARGET/*: real seeds
// and the reproducers of every crash the fuzzers found) through the same entry
// points as the libFuzzer targets, in the normal build: CI always runs it.
#define BOOST_TEST_MODULE hostile_seed_replay
#include <boost/test/unit_test.hpp>

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "../fuzz/fuzz_entry_points.h"

namespace {

using EntryPoint = int (*)(const uint8_t*, size_t);

std::vector<std::string> corpus_files(const std::string& target) {
  std::string directory = std::string(NCCLSCOPE_SOURCE_DIR) + "/tests/fuzz/corpus/" + target;
  std::vector<std::string> files;
  if (DIR* listing = opendir(directory.c_str())) {
    while (dirent* entry = readdir(listing))
      if (entry->d_name[0] != '.') files.push_back(directory + "/" + entry->d_name);
    closedir(listing);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// CPU seconds one seed may take here. The fuzz runs allow 1 s of CPU per input under ASan
// (scripts/fuzz.sh); an optimized build is several times faster, an ASan one is this build
// too (scripts/asan-tests.sh): CPU time, never wall-clock, so a loaded machine cannot fail it.
constexpr double kSeedCpuSeconds = 1.0;

// Every seed runs to completion within the CPU time a fuzzer allows one unit.
void replay(const std::string& target, EntryPoint entry, size_t minimum_seeds) {
  std::vector<std::string> files = corpus_files(target);
  BOOST_TEST(files.size() >= minimum_seeds, target << ": " << files.size() << " seeds");
  nsc::fuzz::real_profile();  // read once, before any seed is timed
  for (const std::string& path : files) {
    std::vector<uint8_t> bytes = file_bytes(path);
    double start = nsc::fuzz::process_cpu_seconds();
    BOOST_CHECK_NO_THROW(entry(bytes.data(), bytes.size()));
    double seconds = nsc::fuzz::process_cpu_seconds() - start;
    BOOST_TEST_MESSAGE(path << ": " << seconds << " s of CPU");
    BOOST_TEST(seconds < kSeedCpuSeconds, path << " took " << seconds << " s of CPU");
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(core_reader_seeds) { replay("core_reader", nsc::fuzz::run_core_reader, 2); }
BOOST_AUTO_TEST_CASE(layout_profile_seeds) { replay("layout_profile", nsc::fuzz::run_layout_profile, 1); }
BOOST_AUTO_TEST_CASE(comm_decoder_seeds) { replay("comm_decoders", nsc::fuzz::run_comm_decoders, 1); }
BOOST_AUTO_TEST_CASE(snapshot_reader_seeds) { replay("snapshot_reader", nsc::fuzz::run_snapshot_reader, 3); }
BOOST_AUTO_TEST_CASE(recorder_decoder_seeds) { replay("recorder_decoder", nsc::fuzz::run_recorder_decoder, 3); }
BOOST_AUTO_TEST_CASE(fr_dump_seeds) { replay("fr_dump", nsc::fuzz::run_fr_dump, 4); }

// The harness itself: a real sliced core seed is read and its comm found.
BOOST_AUTO_TEST_CASE(core_seed_holds_the_fixture_comm) {
  std::string path = std::string(NCCLSCOPE_SOURCE_DIR) + "/tests/fuzz/corpus/core_reader/fixture-sliced-writable.core";
  std::vector<uint8_t> bytes = file_bytes(path);
  BOOST_REQUIRE(!bytes.empty());
  nsc::fuzz::MemoryFile file(bytes.data(), bytes.size());
  auto core = nsc::open_core_file(file.path(), "");
  BOOST_REQUIRE(nsc::fuzz::real_profile() != nullptr);
  nsc::Discovery found = nsc::discover_communicators(*core, *nsc::fuzz::real_profile(), {});
  BOOST_REQUIRE(found.addresses.size() == 1u);
  nlohmann::json errors = nlohmann::json::array();
  nlohmann::json comm = nsc::decode_communicator(*core, *nsc::fuzz::real_profile(), found.addresses[0], &errors);
  BOOST_TEST(comm["comm_hash"] == "0x6db0a96d9cb7fc37");
  BOOST_TEST(comm["rank"] == 1);
  BOOST_TEST(comm["seq_launched"]["AllReduce"] == 7);
}

// The harness itself: the generated comm seed (make_comm_seed.py) decodes as
// the comm_fixture's communicator through the repeating fuzz memory.
BOOST_AUTO_TEST_CASE(comm_seed_holds_the_fixture_comm) {
  std::string path = std::string(NCCLSCOPE_SOURCE_DIR) + "/tests/fuzz/corpus/comm_decoders/fixture-comm-scan";
  std::vector<uint8_t> bytes = file_bytes(path);
  BOOST_REQUIRE(bytes.size() > 1);
  BOOST_REQUIRE(nsc::fuzz::real_profile() != nullptr);
  const nsc::LayoutProfile& layout = *nsc::fuzz::real_profile();
  nsc::fuzz::CyclicTarget target(bytes.data() + 1, bytes.size() - 1, nsc::fuzz::lowest_registry_symbol(layout));
  nlohmann::json errors = nlohmann::json::array();
  nlohmann::json comm = nsc::decode_communicator(target, layout, nsc::fuzz::CyclicTarget::kHeap, &errors);
  BOOST_TEST(comm["comm_hash"] == "0x6db0a96d9cb7fc37");
  BOOST_TEST(comm["rank"] == 1);
  BOOST_TEST(comm["nranks"] == 2);
  BOOST_TEST(comm["seq_launched"]["AllReduce"] == 7);
  BOOST_TEST(comm["channels"][1]["ring"]["user_ranks"] == nlohmann::json({1, 0}));
  BOOST_TEST(comm["p2p_op_count"]["total"] == 3);
  BOOST_REQUIRE(comm["proxy_ops"].size() == 1u);
  BOOST_TEST(comm["proxy_ops"][0]["op_count"] == 42);
  BOOST_TEST(comm["planned"]["colls"][0]["count"] == 1024);
  nsc::DiscoveryOptions options;
  options.force_scan = true;
  nsc::Discovery found = nsc::discover_communicators(target, layout, options);
  // The memory repeats, so the comm's echoes 16 periods apart validate too.
  BOOST_REQUIRE(!found.addresses.empty());
  BOOST_TEST(found.addresses.front() == nsc::fuzz::CyclicTarget::kHeap);
}

// Issue 37: a 34-byte cyclic input whose regCache population, capacity and slots are garbage
// that points back into the heap: 4,096 registrations (272 KB of JSON) were built and freed per
// execution, over libFuzzer's wall-clock limit on a loaded machine under ASan. Now the first
// 512 are decoded, and the comm's warnings say so.
BOOST_AUTO_TEST_CASE(cyclic_registrations_stop_at_the_cap) {
  std::string path = std::string(NCCLSCOPE_SOURCE_DIR) + "/tests/fuzz/corpus/comm_decoders/regress-cpu-registrations-cyclic-34";
  std::vector<uint8_t> bytes = file_bytes(path);
  BOOST_REQUIRE(bytes.size() == 34u);
  BOOST_REQUIRE(nsc::fuzz::real_profile() != nullptr);
  const nsc::LayoutProfile& layout = *nsc::fuzz::real_profile();
  nsc::fuzz::CyclicTarget target(bytes.data() + 1, bytes.size() - 1, nsc::fuzz::lowest_registry_symbol(layout));
  nlohmann::json errors = nlohmann::json::array();
  double start = nsc::fuzz::process_cpu_seconds();
  nlohmann::json comm = nsc::decode_communicator(target, layout, nsc::fuzz::CyclicTarget::kHeap, &errors);
  double seconds = nsc::fuzz::process_cpu_seconds() - start;
  BOOST_TEST(comm["cuda"]["registrations"]["buffers"].size() == 512u);
  BOOST_TEST(comm["warnings"].dump().find("regCache: only the first 512 slots decoded") != std::string::npos);
  BOOST_TEST(seconds < kSeedCpuSeconds, seconds << " s of CPU");
}

// The harness itself: the recorder seeds (make_recorder_seed.py, a real region
// of recorder_driver) decode as the driver's scenario in every mode.
BOOST_AUTO_TEST_CASE(recorder_seed_holds_the_driver_region) {
  std::string path = std::string(NCCLSCOPE_SOURCE_DIR) + "/tests/fuzz/corpus/recorder_decoder/recorder-driver-region";
  std::vector<uint8_t> bytes = file_bytes(path);
  BOOST_REQUIRE(bytes.size() > 1);
  for (uint8_t mode : {0, 1, 2}) {
    bytes[0] = mode;
    nsc::fuzz::RecorderFuzzTarget target(bytes.data() + 1, bytes.size() - 1, mode & 1, (mode & 2) != 0);
    nlohmann::json errors = nlohmann::json::array();
    nlohmann::json recorder = nsc::decode_recorder(target, &errors);
    BOOST_REQUIRE(recorder["found"] == true);
    BOOST_TEST(recorder["address"] == "0x7e0000000000");
    BOOST_TEST(recorder["records_per_ring"] == 64);
    BOOST_TEST(recorder["max_threads"] == 4);
    BOOST_TEST(recorder["threads"].size() == 2u);
    BOOST_REQUIRE(recorder["comms"].size() == 1u);
    BOOST_TEST(recorder["comms"][0]["comm_hash"] == "0x6db0a96d9cb7fc37");
    BOOST_TEST(recorder["comms"][0]["name"] == "driver-comm");
    BOOST_TEST(recorder["comms"][0]["last_seq"]["AllGather"] == 1);
    BOOST_TEST(errors.empty());
  }
}

// Finding 10 (recorder_decoder): valid_utf8 let overlong 3-byte forms through
// (a comm name "\xe0\x9c\x9c"), and the strict JSON writer then threw. Every
// form RFC 3629 forbids must come out as U+FFFD and dump strictly.
BOOST_AUTO_TEST_CASE(valid_utf8_output_always_dumps_strictly) {
  const std::string replacement = "\xef\xbf\xbd";
  for (std::string bad : {"\xe0\x9c\x9c", "\xed\xa0\x80", "\xf0\x80\x80\x80", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80"}) {
    std::string cleaned = nsc::valid_utf8(bad);
    BOOST_TEST(cleaned == replacement + replacement + replacement + (bad.size() == 4 ? replacement : ""));
    BOOST_CHECK_NO_THROW(nlohmann::json(cleaned).dump(-1, ' ', false, nlohmann::json::error_handler_t::strict));
  }
  for (std::string good : {"\xe0\xa0\x80", "\xed\x9f\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "caf\xc3\xa9"})
    BOOST_TEST(nsc::valid_utf8(good) == good);
}
