#define BOOST_TEST_MODULE target_core
#include <boost/test/unit_test.hpp>

#include <elf.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "target/build_ids.h"
#include "target/core_file.h"
#include "target/library_resolver.h"
#include "target_test_support.h"
#include "util/errors.h"

using namespace nsc;
using nsc::testing::FixtureProcess;

namespace {

constexpr uint64_t kSmallTag = 0x5A5A5A5A00000000ull;
constexpr uint64_t kBigTag = 0xB16B16B100000000ull;

// One gcore of the fixture for the whole module (gdb takes a second or two).
struct CoreSetup {
  std::unique_ptr<FixtureProcess> fixture;
  std::string dir;
  std::string core_path;
  bool available = false;

  CoreSetup() {
    if (!nsc::testing::have_gdb()) return;
    fixture = std::make_unique<FixtureProcess>();
    dir = nsc::testing::make_temp_dir();
    core_path = dir + "/fixture.core";
    available = nsc::testing::make_gcore(fixture->pid(), core_path);
  }
  ~CoreSetup() {
    if (!dir.empty()) std::system(("rm -rf " + dir).c_str());
  }
};

CoreSetup& setup() {
  static CoreSetup instance;
  return instance;
}


// Tests that need the core are skipped (not failed) when it could not be made.
boost::test_tools::assertion_result core_available(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(setup().available);
  if (!setup().available) result.message() << "no core of the fixture (gdb missing or the dump failed)";
  return result;
}


std::string bad_input_message(const std::string& path) {
  try {
    open_core(path, "");
  } catch (const BadInput& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(reads_the_fixture_patterns, *boost::unit_test::precondition(core_available)) {
  const FixtureProcess& fixture = *setup().fixture;
  auto core = open_core(setup().core_path, "");
  BOOST_TEST(core->is_core());
  BOOST_TEST(core->pid() == fixture.pid());
  BOOST_TEST(core->describe() == "core " + setup().core_path);
  BOOST_TEST(core->warnings().empty());

  std::vector<uint64_t> small(8);
  ReadError error;
  BOOST_REQUIRE(core->read(fixture.address("small"), small.data(), 64, &error));
  for (uint64_t i = 0; i < 8; ++i) BOOST_TEST(small[i] == (kSmallTag | i));
  uint64_t big_words = fixture.info()["big_words"];
  std::vector<uint64_t> big(big_words);
  BOOST_REQUIRE(core->read(fixture.address("big"), big.data(), big_words * 8, &error));
  BOOST_TEST(big[big_words - 1] == (kBigTag | (big_words - 1)));
  auto text = read_c_string(*core, fixture.address("string"), 256, &error);
  BOOST_REQUIRE(text);
  BOOST_TEST(*text == "ncclscope memory fixture: hello");

  uint64_t node = fixture.address("cycle");
  for (int i = 0; i < 3; ++i) BOOST_REQUIRE(core->read_value(node, &node, &error));
  BOOST_TEST(node == fixture.address("cycle"));  // three steps around the cycle
}

BOOST_AUTO_TEST_CASE(direct_points_into_the_mapped_core, *boost::unit_test::precondition(core_available)) {
  auto core = open_core(setup().core_path, "");
  uint64_t small = setup().fixture->address("small");
  const uint8_t* bytes = core->direct(small, 64);
  BOOST_REQUIRE(bytes);
  uint64_t word;
  std::memcpy(&word, bytes + 8 * 5, 8);
  BOOST_TEST(word == (kSmallTag | 5));
  BOOST_TEST(core->direct(0x10, 8) == nullptr);
}

BOOST_AUTO_TEST_CASE(mapped_files_threads_and_executable, *boost::unit_test::precondition(core_available)) {
  const FixtureProcess& fixture = *setup().fixture;
  auto core = open_core(setup().core_path, "");
  BOOST_TEST(core->executable() == nsc::testing::fixture_path("memory_fixture"));
  bool has_libc = false, has_exe = false;
  for (const MappedFile& file : core->mapped_files()) {
    has_libc |= file.path.find("/libc.so.6") != std::string::npos;
    has_exe |= file.path == core->executable();
  }
  BOOST_TEST(has_libc);
  BOOST_TEST(has_exe);
  auto threads = core->threads();
  BOOST_REQUIRE_EQUAL(threads.size(), 2u);
  std::vector<int> tids = {threads[0].tid, threads[1].tid};
  std::sort(tids.begin(), tids.end());
  BOOST_TEST(tids[0] == fixture.pid());
  BOOST_TEST(tids[1] == fixture.info()["worker_tid"].get<int>());
  for (const ThreadInfo& thread : threads)
    BOOST_TEST(thread.name == (thread.tid == fixture.pid() ? "memory_fixture" : ""));
  for (const ThreadInfo& thread : threads) {
    auto sp = stack_pointer_of(thread);
    BOOST_REQUIRE(sp);
    const MemoryRegion* stack = find_region(core->regions(), *sp);
    BOOST_REQUIRE(stack);
    BOOST_TEST(stack->writable);
    BOOST_TEST(stack->saved);
  }
}

BOOST_AUTO_TEST_CASE(regions_are_sorted_with_paths, *boost::unit_test::precondition(core_available)) {
  auto core = open_core(setup().core_path, "");
  const auto& regions = core->regions();
  for (size_t i = 1; i < regions.size(); ++i) BOOST_TEST(regions[i - 1].end <= regions[i].start);
  const MemoryRegion* big = find_region(regions, setup().fixture->address("big"));
  BOOST_REQUIRE(big);
  BOOST_TEST(big->writable);
  BOOST_TEST(big->path == "");
  // gdb leaves libc's text out: mapped (NT_FILE) but not saved.
  for (const MappedFile& file : core->mapped_files()) {
    if (file.path.find("/libc.so.6") == std::string::npos || file.file_offset == 0) continue;
    uint64_t word;
    ReadError error;
    if (core->read(file.start, &word, 8, &error)) continue;
    BOOST_TEST(std::string(read_failure_text(error.reason)) == "not saved in core");
    const MemoryRegion* region = find_region(regions, file.start);
    BOOST_REQUIRE(region);
    BOOST_TEST(!region->saved);
    BOOST_TEST(region->path == file.path);
    break;
  }
}

BOOST_AUTO_TEST_CASE(reads_across_segment_boundaries, *boost::unit_test::precondition(core_available)) {
  auto core = open_core_file(setup().core_path, "");
  const auto& segments = core->segments();
  int crossed = 0;
  for (size_t i = 0; i + 1 < segments.size() && !crossed; ++i) {
    if (segments[i].end() != segments[i + 1].vaddr || !segments[i].available ||
        !segments[i + 1].available)
      continue;
    uint8_t across[32], left[16], right[16];
    ReadError error;
    BOOST_REQUIRE(core->read(segments[i].end() - 16, across, 32, &error));
    BOOST_REQUIRE(core->read(segments[i].end() - 16, left, 16, &error));
    BOOST_REQUIRE(core->read(segments[i + 1].vaddr, right, 16, &error));
    BOOST_TEST(std::memcmp(across, left, 16) == 0);
    BOOST_TEST(std::memcmp(across + 16, right, 16) == 0);
    BOOST_TEST(core->direct(segments[i].end() - 16, 32) == nullptr);  // not contiguous in the file
    ++crossed;
  }
  BOOST_TEST(crossed == 1);
}

BOOST_AUTO_TEST_CASE(unmapped_reads_say_not_mapped, *boost::unit_test::precondition(core_available)) {
  auto core = open_core(setup().core_path, "");
  uint64_t word;
  ReadError error;
  BOOST_TEST(!core->read(0x10, &word, 8, &error));
  BOOST_TEST(error.message() == "0x10: not mapped");
}

BOOST_AUTO_TEST_CASE(truncated_core_opens_with_a_warning, *boost::unit_test::precondition(core_available)) {
  const FixtureProcess& fixture = *setup().fixture;
  auto full = open_core_file(setup().core_path, "");
  uint64_t big = fixture.address("big");
  const CoreSegment* big_segment = nullptr;
  for (const CoreSegment& segment : full->segments())
    if (big >= segment.vaddr && big < segment.end()) big_segment = &segment;
  BOOST_REQUIRE(big_segment);
  // Cut the file 1 MiB into the big buffer's segment (gdb writes notes last: keep them
  // out of this check by testing only memory reads).
  uint64_t cut = big_segment->offset + (1 << 20);
  std::string truncated = setup().dir + "/truncated.core";
  nsc::testing::copy_file_prefix(setup().core_path, truncated, cut);
  auto core = open_core(truncated, "");
  BOOST_REQUIRE(!core->warnings().empty());
  BOOST_TEST(core->warnings()[0].find("core file truncated") != std::string::npos);
  uint64_t word;
  ReadError error;
  uint64_t first_missing = big_segment->vaddr + (1 << 20);
  BOOST_TEST(core->read_value(first_missing - 8, &word, &error));
  BOOST_TEST(!core->read_value(first_missing, &word, &error));
  BOOST_TEST(error.message() == hex(first_missing) + ": not saved in core (core file truncated)");
  BOOST_TEST(!core->read(first_missing - 8, &word, 16, &error));
  BOOST_TEST(error.address == first_missing);
  const MemoryRegion* region = find_region(core->regions(), first_missing);
  BOOST_REQUIRE(region);
  BOOST_TEST(!region->saved);
}

BOOST_AUTO_TEST_CASE(bad_files_are_bad_input_naming_the_file) {
  std::string dir = nsc::testing::make_temp_dir();
  std::string text_file = dir + "/notes.txt", empty = dir + "/empty", tiny = dir + "/tiny";
  std::ofstream(text_file) << "this is not an ELF file\n";
  std::ofstream{empty};
  BOOST_TEST(bad_input_message(text_file) == "core_open " + text_file + ": not an ELF file");
  BOOST_TEST(bad_input_message(empty) == "core_open " + empty + ": empty file");
  BOOST_TEST(bad_input_message(dir + "/missing") ==
             "core_open " + dir + "/missing: cannot open: No such file or directory");
  BOOST_TEST(bad_input_message(dir) == "core_open " + dir + ": is a directory");
  BOOST_TEST(bad_input_message("/bin/true").find("core_open /bin/true: not a core file (ELF type") == 0u);
  // An ELF header whose program headers were cut off.
  if (setup().available) {
    nsc::testing::copy_file_prefix(setup().core_path, tiny, 100);
    BOOST_TEST(bad_input_message(tiny) == "core_open " + tiny + ": program headers unreadable (truncated?)");
  }
  std::system(("rm -rf " + dir).c_str());
}

BOOST_AUTO_TEST_CASE(build_ids_from_the_dumped_headers, *boost::unit_test::precondition(core_available)) {
  auto core = open_core(setup().core_path, "");
  int checked = 0;
  for (const MappedObjectBuildId& object : mapped_object_build_ids(*core)) {
    BOOST_TEST_CONTEXT(object.path) {
      BOOST_REQUIRE_MESSAGE(object.build_id, object.unavailable_reason);
      BOOST_TEST(*object.build_id == build_id_of_file(object.path).value_or("?"));
      ++checked;
    }
  }
  BOOST_TEST(checked >= 5);  // exe, libc, libstdc++, libm, libgcc_s, ld.so
}

namespace {

std::string libc_path_in(Target& core) {
  for (const MappedFile& file : core.mapped_files())
    if (file.path.find("/libc.so.6") != std::string::npos) return file.path;
  return "";
}

std::string libm_path_in(Target& core) {
  for (const MappedFile& file : core.mapped_files())
    if (file.path.find("/libm.so.6") != std::string::npos) return file.path;
  return "";
}

void copy_whole(const std::string& from, const std::string& to) {
  std::system(("mkdir -p \"$(dirname " + to + ")\" && cp " + from + " " + to).c_str());
}

}  // namespace

BOOST_AUTO_TEST_CASE(library_resolution_with_sysroot_and_search_path, *boost::unit_test::precondition(core_available)) {
  auto core = open_core(setup().core_path, "");
  std::string libc = libc_path_in(*core);
  BOOST_REQUIRE(!libc.empty());
  std::string sysroot = setup().dir + "/sysroot", search = setup().dir + "/search";
  copy_whole(libc, sysroot + libc);
  copy_whole(libc, search + "/libc.so.6");

  LibrarySearch plain;
  ResolvedLibrary direct = resolve_mapped_library(*core, libc, plain);
  BOOST_TEST(direct.local_path == libc);
  BOOST_TEST(direct.build_id_in_target == build_id_of_file(libc).value_or("?"));
  BOOST_TEST(direct.build_id_of_file == direct.build_id_in_target);
  BOOST_TEST(direct.warning.empty());
  BOOST_TEST(direct.load_bias == first_mapping_of(*core, libc)->start);  // DSO: linked at 0

  LibrarySearch with_sysroot;
  with_sysroot.sysroot = sysroot;
  BOOST_TEST(resolve_mapped_library(*core, libc, with_sysroot).local_path == sysroot + libc);

  LibrarySearch with_search_path;
  with_search_path.solib_search_path = {setup().dir + "/nowhere", search};
  BOOST_TEST(resolve_mapped_library(*core, libc, with_search_path).local_path == search + "/libc.so.6");
}

BOOST_AUTO_TEST_CASE(library_build_id_mismatch_is_refused_unless_forced, *boost::unit_test::precondition(core_available)) {
  auto core = open_core(setup().core_path, "");
  std::string libc = libc_path_in(*core), libm = libm_path_in(*core);
  BOOST_REQUIRE(!libm.empty());
  std::string sysroot = setup().dir + "/wrong-sysroot";
  copy_whole(libm, sysroot + libc);  // a different library under libc's name
  std::string libc_id = build_id_of_file(libc).value(), libm_id = build_id_of_file(libm).value();
  LibrarySearch options;
  options.sysroot = sysroot;
  try {
    resolve_mapped_library(*core, libc, options);
    BOOST_FAIL("expected a build-id mismatch");
  } catch (const BadInput& error) {
    std::string message = error.what();
    BOOST_TEST(message.find("build-id mismatch") != std::string::npos);
    BOOST_TEST(message.find(libc_id) != std::string::npos);
    BOOST_TEST(message.find(libm_id) != std::string::npos);
    BOOST_TEST(message.find(sysroot + libc) != std::string::npos);
  }
  options.force_mismatch = true;
  ResolvedLibrary forced = resolve_mapped_library(*core, libc, options);
  BOOST_TEST(forced.local_path == sysroot + libc);
  BOOST_TEST(forced.build_id_of_file == libm_id);
  BOOST_TEST(forced.warning.find("mismatch") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(no_nccl_library_is_bad_input, *boost::unit_test::precondition(core_available)) {
  auto core = open_core(setup().core_path, "");
  try {
    resolve_nccl_library(*core, LibrarySearch{});
    BOOST_FAIL("expected BadInput");
  } catch (const BadInput& error) {
    BOOST_TEST(error.what() == "core " + setup().core_path + ": no NCCL library mapped");
  }
  BOOST_TEST(is_nccl_library_path("/opt/lib/libnccl.so.2"));
  BOOST_TEST(is_nccl_library_path("/x/libnccl.so.2.28.9 (deleted)"));
  BOOST_TEST(is_nccl_library_path("libnccl.so"));
  BOOST_TEST(!is_nccl_library_path("/x/libnccl-net.so"));
  BOOST_TEST(!is_nccl_library_path("/x/libnccl.so2"));
}

BOOST_AUTO_TEST_CASE(read_throughput_is_memory_speed, *boost::unit_test::precondition(core_available)) {
  auto core = open_core(setup().core_path, "");
  uint64_t big = setup().fixture->address("big");
  std::vector<uint8_t> buffer(64);
  ReadError error;
  auto start = std::chrono::steady_clock::now();
  constexpr int kReads = 1000000;
  uint64_t checksum = 0;
  for (int i = 0; i < kReads; ++i) {
    core->read(big + (i * 4096ull) % (3u << 20), buffer.data(), 64, &error);
    checksum += buffer[8];
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_MESSAGE("1e6 reads of 64 bytes: " << seconds << " s (checksum " << checksum << ")");
  BOOST_TEST(seconds < 1.0);  // a decoder does millions of small reads
}
