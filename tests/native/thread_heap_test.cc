// Huge pages for a thread's glibc heap (util/thread_heap.h): the region a thread allocates from
// is made writable whole and advised, and nothing else is: not the main heap, not a thread's
// stack or its guard page; malloc goes on working over it.
#define BOOST_TEST_MODULE thread_heap
#include <boost/test/unit_test.hpp>

#include <sys/mman.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "util/sanitizer.h"
#include "util/thread_heap.h"

namespace {

struct Mapping {
  uintptr_t start = 0, stop = 0;
  std::string perms, name;
};

std::vector<Mapping> mappings() {
  std::vector<Mapping> out;
  FILE* maps = std::fopen("/proc/self/maps", "r");
  char line[512];
  while (maps && std::fgets(line, sizeof line, maps)) {
    Mapping m;
    char perms[5] = {};
    int name_at = 0;
    std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %*s %*s %*s %n", &m.start, &m.stop, perms, &name_at);
    m.perms = perms;
    m.name = line + name_at;
    out.push_back(m);
  }
  if (maps) std::fclose(maps);
  return out;
}

// The mappings overlapping [from, to).
std::vector<Mapping> overlapping(uintptr_t from, uintptr_t to) {
  std::vector<Mapping> out;
  for (const Mapping& m : mappings())
    if (m.stop > from && m.start < to) out.push_back(m);
  return out;
}

constexpr uintptr_t kRegion = uintptr_t{64} << 20;

}  // namespace

BOOST_AUTO_TEST_CASE(a_thread_heap_region_is_made_writable_whole_and_malloc_still_works) {
  uintptr_t region = 0;
  std::vector<Mapping> before_stack, after_stack;
  bool filled = true;
  std::thread worker([&] {
    int on_stack = 0;
    uintptr_t stack = reinterpret_cast<uintptr_t>(&on_stack);
    void* first = std::malloc(64);
    region = reinterpret_cast<uintptr_t>(first) & ~(kRegion - 1);
    std::free(first);
    before_stack = overlapping(stack - (uintptr_t{1} << 20), stack + 4096);
    std::vector<char*> blocks;
    for (int i = 0; i < 4000; ++i) {  // 16 MB in small blocks, advised as it goes
      nsc::advise_huge_pages_for_thread_heap();
      char* block = static_cast<char*>(std::malloc(4000));
      std::memset(block, i & 0xff, 4000);
      blocks.push_back(block);
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
      filled = filled && blocks[i][0] == static_cast<char>(i & 0xff) && blocks[i][3999] == static_cast<char>(i & 0xff);
      std::free(blocks[i]);
    }
    after_stack = overlapping(stack - (uintptr_t{1} << 20), stack + 4096);
  });
  worker.join();
  BOOST_TEST(filled);
  // glibc's layout (a heap region of its own): now writable whole. Another allocator: untouched.
  std::vector<Mapping> heap = overlapping(region, region + kRegion);
  BOOST_REQUIRE(!heap.empty());
  bool glibc_heap = heap.front().start <= region && heap.back().stop >= region + kRegion;
#ifdef NSC_UNDER_ASAN
  glibc_heap = false;  // the sanitizer's allocator: left alone
#endif
  if (glibc_heap) {
    for (const Mapping& m : heap) BOOST_TEST(m.perms == "rw-p");
    // glibc's own record (heap_info.mprotect_size, the 4th word of the region) says so too, or
    // it would go on calling mprotect at every growth: this checks the layout the code assumes.
    BOOST_TEST(reinterpret_cast<const size_t*>(region)[3] == kRegion);
  }
  // The thread's stack and its guard page as they were.
  BOOST_REQUIRE_EQUAL(before_stack.size(), after_stack.size());
  for (size_t i = 0; i < before_stack.size(); ++i) {
    BOOST_TEST(before_stack[i].start == after_stack[i].start);
    BOOST_TEST(before_stack[i].perms == after_stack[i].perms);
  }
}

BOOST_AUTO_TEST_CASE(the_main_thread_changes_nothing) {
  std::vector<Mapping> before = mappings();
  nsc::advise_huge_pages_for_thread_heap();
  std::vector<Mapping> after = mappings();
  BOOST_REQUIRE_EQUAL(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) BOOST_TEST(before[i].perms == after[i].perms);
}
