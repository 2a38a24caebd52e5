#define BOOST_TEST_MODULE slice_core
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <array>
#include <cstdio>
#include <memory>
#include <vector>

#include "target/core_file.h"
#include "target/core_notes.h"
#include "target/core_writer.h"
#include "target/slice_ranges.h"
#include "target_test_support.h"
#include "util/errors.h"
#include "util/strings.h"

using namespace nsc;
using nsc::testing::FixtureProcess;

namespace {

constexpr uint64_t kSmallTag = 0x5A5A5A5A00000000ull;

struct SliceSetup {
  std::unique_ptr<FixtureProcess> fixture;
  std::string dir, core_path, small_path;
  bool available = false;

  SliceSetup() {
    if (!nsc::testing::have_gdb()) return;
    fixture = std::make_unique<FixtureProcess>();
    dir = nsc::testing::make_temp_dir();
    core_path = dir + "/fixture.core";
    small_path = dir + "/fixture.small.core";
    available = nsc::testing::make_gcore(fixture->pid(), core_path);
  }
  ~SliceSetup() {
    if (!dir.empty()) std::system(("rm -rf " + dir).c_str());
  }
  // The fixture's pattern ranges: small words, the string, the cycle nodes, 8 KiB of big.
  std::vector<AddressRange> pattern_ranges() const {
    return {{fixture->address("small"), fixture->address("small") + 64},
            {fixture->address("string"), fixture->address("string") + 32},
            {fixture->address("cycle"), fixture->address("cycle") + 16},
            {fixture->address("big"), fixture->address("big") + 8192}};
  }
};

SliceSetup& setup() {
  static SliceSetup instance;
  return instance;
}


// Tests that need the core are skipped (not failed) when it could not be made.
boost::test_tools::assertion_result core_available(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(setup().available);
  if (!setup().available) result.message() << "no core of the fixture (gdb missing or the dump failed)";
  return result;
}


uint64_t file_size(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 ? info.st_size : 0;
}

std::string run_output(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return output;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  pclose(pipe);
  return output;
}

// The lines gdb prints for `x/4gx ADDR` (the memory dump only).
std::string gdb_examine(const std::string& core, uint64_t address) {
  std::string exe = nsc::testing::fixture_path("memory_fixture");
  std::string output = run_output("gdb -nx -batch -ex 'x/4gx " + hex(address) + "' " + exe + " " +
                                  core + " 2>/dev/null");
  size_t at = output.find(hex(address) + ":");
  return at == std::string::npos ? "(no dump)" : output.substr(at);
}

std::vector<AddressRange> keep_list() {
  auto core = open_core_file(setup().core_path, "");
  std::vector<AddressRange> keep = default_keep_ranges(*core, SliceKeepOptions{});
  for (const AddressRange& range : setup().pattern_ranges()) keep.push_back(range);
  return keep;
}

}  // namespace

BOOST_AUTO_TEST_CASE(sliced_core_keeps_the_patterns_and_is_small, *boost::unit_test::precondition(core_available)) {
  auto core = open_core_file(setup().core_path, "");
  SliceStats stats = write_sliced_core(*core, keep_list(), setup().small_path);
  BOOST_TEST(stats.output_bytes == file_size(setup().small_path));
  BOOST_TEST(stats.input_bytes == file_size(setup().core_path));
  BOOST_TEST_MESSAGE("sliced " << stats.input_bytes << " -> " << stats.output_bytes << " bytes");
  BOOST_TEST(stats.output_bytes * 10 < stats.input_bytes);  // 3 MiB buffer and 8 MiB stack dropped

  auto sliced = open_core_file(setup().small_path, "");
  BOOST_TEST(sliced->warnings().empty());
  uint64_t words[8];
  ReadError error;
  BOOST_REQUIRE(sliced->read(setup().fixture->address("small"), words, 64, &error));
  for (uint64_t i = 0; i < 8; ++i) BOOST_TEST(words[i] == (kSmallTag | i));
  auto text = read_c_string(*sliced, setup().fixture->address("string"), 64, &error);
  BOOST_REQUIRE(text);
  BOOST_TEST(*text == "ncclscope memory fixture: hello");
  uint64_t node = setup().fixture->address("cycle");
  for (int i = 0; i < 3; ++i) BOOST_REQUIRE(sliced->read_value(node, &node, &error));
  BOOST_TEST(node == setup().fixture->address("cycle"));
}

BOOST_AUTO_TEST_CASE(unkept_memory_stays_mapped_but_not_saved, *boost::unit_test::precondition(core_available)) {
  auto core = open_core_file(setup().core_path, "");
  write_sliced_core(*core, keep_list(), setup().small_path);
  auto sliced = open_core_file(setup().small_path, "");
  uint64_t far_into_big = setup().fixture->address("big") + (2u << 20);
  uint64_t word;
  ReadError error;
  BOOST_TEST(!sliced->read_value(far_into_big, &word, &error));
  BOOST_TEST(error.message() == hex(far_into_big) + ": not saved in core");
  BOOST_TEST(!sliced->read_value(0x10, &word, &error));
  BOOST_TEST(error.message() == "0x10: not mapped");
  // Same address space: every original segment is still covered, same notes.
  BOOST_TEST(sliced->segments().front().vaddr == core->segments().front().vaddr);
  BOOST_TEST(sliced->segments().back().end() == core->segments().back().end());
  BOOST_TEST(sliced->threads().size() == core->threads().size());
  BOOST_TEST(sliced->mapped_files().size() == core->mapped_files().size());
  BOOST_TEST(sliced->notes().auxv == core->notes().auxv);
  BOOST_TEST(sliced->executable() == core->executable());
  // The same notes but the FP/SIMD register contents (zeroed) and pr_psargs' values ('*').
  std::vector<std::vector<uint8_t>> shared_notes = core->note_segments();
  uint64_t zeroed = 0;
  for (std::vector<uint8_t>& segment : shared_notes) zeroed += nsc::redact_note_segment(segment.data(), segment.size());
  BOOST_TEST(zeroed > 0u);
  BOOST_TEST(sliced->note_segments() == shared_notes);
  // File offsets never go backwards, unsaved pieces included (libdwfl relies on it).
  for (size_t i = 1; i < sliced->segments().size(); ++i)
    BOOST_TEST(sliced->segments()[i].offset >= sliced->segments()[i - 1].offset);
}

BOOST_AUTO_TEST_CASE(refuses_to_overwrite_its_input, *boost::unit_test::precondition(core_available)) {
  auto core = open_core_file(setup().core_path, "");
  BOOST_CHECK_THROW(write_sliced_core(*core, keep_list(), setup().core_path), BadInput);
  BOOST_TEST(open_core_file(setup().core_path, "")->segments().size() == core->segments().size());
}

BOOST_AUTO_TEST_CASE(plan_splits_segments_on_page_boundaries, *boost::unit_test::precondition(core_available)) {
  auto core = open_core_file(setup().core_path, "");
  uint64_t small = setup().fixture->address("small");
  std::vector<SlicePiece> pieces = plan_slice(*core, {{small, small + 64}});
  int saved = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    BOOST_TEST(pieces[i].vaddr % 4096 == 0u);
    if (i > 0) BOOST_TEST(pieces[i].vaddr >= pieces[i - 1].vaddr + pieces[i - 1].memsz);
    if (pieces[i].saved) {
      ++saved;
      BOOST_TEST(pieces[i].vaddr == (small & ~4095ull));
      BOOST_TEST(pieces[i].memsz == 4096u);
    }
  }
  BOOST_TEST(saved == 1);
}

BOOST_AUTO_TEST_CASE(gdb_reads_the_same_bytes_from_the_sliced_core, *boost::unit_test::precondition(core_available)) {
  auto core = open_core_file(setup().core_path, "");
  write_sliced_core(*core, keep_list(), setup().small_path);
  for (const char* key : {"small", "cycle", "big"}) {
    uint64_t address = setup().fixture->address(key);
    std::string original = gdb_examine(setup().core_path, address);
    BOOST_TEST_CONTEXT(key) {
      BOOST_TEST(original.find("0x") != std::string::npos);
      BOOST_TEST(gdb_examine(setup().small_path, address) == original);
    }
  }
  std::string exe = nsc::testing::fixture_path("memory_fixture");
  std::string backtrace = run_output("gdb -nx -batch -ex 'thread apply all bt' " + exe + " " +
                                     setup().small_path + " 2>&1");
  BOOST_TEST(backtrace.find("worker_main") != std::string::npos);  // stacks and libraries kept
  BOOST_TEST(backtrace.find(" main ()") != std::string::npos);
}

boost::test_tools::assertion_result cli_available(boost::unit_test::test_unit_id id) {
  std::string cli = std::string(NCCLSCOPE_BINARY_DIR) + "/bin/ncclscope";
  if (access(cli.c_str(), X_OK) != 0) {
    boost::test_tools::assertion_result result(false);
    result.message() << cli << " not built";
    return result;
  }
  return core_available(id);
}

BOOST_AUTO_TEST_CASE(cli_slices_with_keep_regions, *boost::unit_test::precondition(cli_available)) {
  std::string cli = std::string(NCCLSCOPE_BINARY_DIR) + "/bin/ncclscope";
  uint64_t small = setup().fixture->address("small");
  std::string out = setup().dir + "/cli.core";
  std::string command = cli + " slice " + setup().core_path + " -o " + out + " --no-decode --json" +
                        " --keep-region " + hex(small) + "-" + hex(small + 64);
  auto figures = nlohmann::json::parse(run_output(command));
  BOOST_TEST(figures["output_bytes"].get<uint64_t>() == file_size(out));
  auto sliced = open_core_file(out, "");
  uint64_t word;
  ReadError error;
  BOOST_REQUIRE(sliced->read_value(small + 56, &word, &error));
  BOOST_TEST(word == (kSmallTag | 7));
  BOOST_TEST(std::system((cli + " slice " + setup().core_path + " -o " + out +
                          " --keep-region nonsense 2>/dev/null").c_str()) >> 8 == 64);
  BOOST_TEST(std::system((cli + " slice /bin/true -o " + out + " 2>/dev/null").c_str()) >> 8 == 2);
}
