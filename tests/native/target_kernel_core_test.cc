// The same checks on a core written by the kernel (SIGABRT with RLIMIT_CORE
// unlimited): unsaved mappings are PT_LOADs with p_filesz 0 and ELF objects
// keep only their first page. Skips when core_pattern pipes cores elsewhere.
#define BOOST_TEST_MODULE target_kernel_core
#include <boost/test/unit_test.hpp>

#include <memory>
#include <vector>

#include "target/build_ids.h"
#include "target/core_file.h"
#include "target/core_writer.h"
#include "target/slice_ranges.h"
#include "target_test_support.h"
#include "util/strings.h"

using namespace nsc;
using nsc::testing::FixtureProcess;

namespace {

constexpr uint64_t kSmallTag = 0x5A5A5A5A00000000ull;

struct KernelCoreSetup {
  std::string dir, core_path;
  nlohmann::json info;
  bool available = false;

  KernelCoreSetup() {
    dir = nsc::testing::make_temp_dir();
    FixtureProcess fixture("memory_fixture", dir, true);
    info = fixture.info();
    core_path = nsc::testing::kernel_core_path(dir, fixture.pid());
    available = fixture.abort_and_wait() && !core_path.empty() && access(core_path.c_str(), R_OK) == 0;
  }
  ~KernelCoreSetup() { std::system(("rm -rf " + dir).c_str()); }
  uint64_t address(const std::string& key) const {
    uint64_t value = 0;
    parse_u64(info.at(key).get<std::string>(), &value);
    return value;
  }
};

KernelCoreSetup& setup() {
  static KernelCoreSetup instance;
  return instance;
}


// Tests that need the core are skipped (not failed) when it could not be made.
boost::test_tools::assertion_result core_available(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(setup().available);
  if (!setup().available) result.message() << "no core of the fixture (gdb missing or the dump failed)";
  return result;
}


}  // namespace

BOOST_AUTO_TEST_CASE(reads_patterns_threads_and_files, *boost::unit_test::precondition(core_available)) {
  auto core = open_core_file(setup().core_path, "");
  BOOST_TEST(core->pid() == setup().info["pid"].get<int>());
  BOOST_TEST(core->threads().size() == 2u);
  BOOST_TEST(core->notes().command_name == "memory_fixture");
  BOOST_TEST(core->executable() == nsc::testing::fixture_path("memory_fixture"));
  uint64_t words[8];
  ReadError error;
  BOOST_REQUIRE(core->read(setup().address("small"), words, 64, &error));
  BOOST_TEST(words[7] == (kSmallTag | 7));
  auto text = read_c_string(*core, setup().address("string"), 64, &error);
  BOOST_TEST(text.value_or("") == "ncclscope memory fixture: hello");
}

BOOST_AUTO_TEST_CASE(library_text_is_mapped_but_not_saved, *boost::unit_test::precondition(core_available)) {
  auto core = open_core_file(setup().core_path, "");
  int checked = 0;
  for (const MappedFile& file : core->mapped_files()) {
    if (file.path.find("/libc.so.6") == std::string::npos || file.file_offset == 0) continue;
    const MemoryRegion* region = find_region(core->regions(), file.start);
    BOOST_REQUIRE(region);
    if (!region->executable) continue;
    BOOST_TEST(!region->saved);
    BOOST_TEST(region->path == file.path);
    uint64_t word;
    ReadError error;
    BOOST_TEST(!core->read_value(file.start + 64, &word, &error));
    BOOST_TEST(error.message() == hex(file.start + 64) + ": not saved in core");
    ++checked;
  }
  BOOST_TEST(checked == 1);
}

BOOST_AUTO_TEST_CASE(build_ids_from_the_first_pages, *boost::unit_test::precondition(core_available)) {
  auto core = open_core_file(setup().core_path, "");
  int checked = 0;
  for (const MappedObjectBuildId& object : mapped_object_build_ids(*core)) {
    BOOST_TEST_CONTEXT(object.path) {
      BOOST_REQUIRE_MESSAGE(object.build_id, object.unavailable_reason);
      BOOST_TEST(*object.build_id == build_id_of_file(object.path).value_or("?"));
      ++checked;
    }
  }
  BOOST_TEST(checked >= 5);
}

BOOST_AUTO_TEST_CASE(slice_of_a_kernel_core_reads_back, *boost::unit_test::precondition(core_available)) {
  auto core = open_core_file(setup().core_path, "");
  std::vector<AddressRange> keep = default_keep_ranges(*core, SliceKeepOptions{});
  uint64_t small = setup().address("small");
  keep.push_back({small, small + 64});
  std::string small_core = setup().dir + "/small.core";
  SliceStats stats = write_sliced_core(*core, keep, small_core);
  BOOST_TEST(stats.output_bytes * 10 < stats.input_bytes);
  auto sliced = open_core_file(small_core, "");
  uint64_t words[8];
  ReadError error;
  BOOST_REQUIRE(sliced->read(small, words, 64, &error));
  BOOST_TEST(words[3] == (kSmallTag | 3));
  BOOST_TEST(mapped_object_build_ids(*sliced).size() == mapped_object_build_ids(*core).size());
}
