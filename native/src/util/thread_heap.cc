#include "util/thread_heap.h"
#include "util/sanitizer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

extern "C" char end;  // the end of the program's data: the main heap (brk) lies above it

namespace nsc {
namespace {

constexpr uintptr_t kHeapRegion = uintptr_t{64} << 20;  // glibc's HEAP_MAX_SIZE on 64-bit
#ifdef NSC_UNDER_ASAN
constexpr bool kGlibcHeaps = false;  // the sanitizer's allocator: not glibc's heaps
#else
constexpr bool kGlibcHeaps = true;
#endif

bool in_main_heap(uintptr_t address) {
  return address >= reinterpret_cast<uintptr_t>(&end) && address < reinterpret_cast<uintptr_t>(sbrk(0));
}

// Where the reserved (PROT_NONE) tail of the heap region at `region` starts, or 0 when the
// region is not laid out as glibc lays out a heap: anonymous mappings covering it whole,
// read-write first, then reserved. A thread's stack (its guard page below it) or anything
// else never matches.
uintptr_t reserved_tail(uintptr_t region) {
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return 0;
  uintptr_t covered = region, tail = 0;
  bool ok = true;
  char line[512];
  while (ok && covered < region + kHeapRegion && std::fgets(line, sizeof line, maps)) {
    uintptr_t start = 0, stop = 0;
    char perms[5] = {};
    unsigned long long offset = 0, inode = 0;
    int name_at = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %llx %*s %llu %n", &start, &stop, perms, &offset, &inode,
                    &name_at) < 5)
      ok = false;
    if (!ok || stop <= covered) continue;
    bool anonymous = inode == 0 && (line[name_at] == '\n' || line[name_at] == '\0');
    bool writable = std::string_view(perms) == "rw-p", reserved = std::string_view(perms) == "---p";
    ok = start <= covered && anonymous && (writable || reserved) && !(writable && tail != 0);
    if (reserved && tail == 0) tail = std::max(start, region);
    covered = stop;
  }
  std::fclose(maps);
  return ok && covered >= region + kHeapRegion ? tail : 0;
}

// The head of each glibc heap region (malloc/arena.c, `heap_info`, unchanged in this part since
// glibc 2.3): the arena, the previous heap, the size in use, the size glibc has made writable.
struct GlibcHeapHead {
  void* arena;
  void* previous;
  size_t size;
  size_t writable_size;
};

// glibc makes a heap region writable on demand: one mprotect call per growth, a page or two at a
// time (at 100,000 ranks, 90,000 system calls). Once the whole region is writable, glibc is
// told so, where its own record agrees with what /proc/self/maps showed (the writable part
// ends at `tail`) and so is surely that record.
void record_region_writable(uintptr_t region, uintptr_t tail) {
  auto* head = reinterpret_cast<GlibcHeapHead*>(region);
  if (head->writable_size == tail - region && head->size <= head->writable_size) head->writable_size = kHeapRegion;
}

}  // namespace

void advise_huge_pages_for_thread_heap() {
  // Once per thread: the main thread's heap is brk's, advised by glibc.malloc.hugetlb=1.
  thread_local const bool main_thread = gettid() == getpid();
  if (!kGlibcHeaps || sizeof(void*) != 8 || main_thread) return;
  thread_local std::vector<uintptr_t> seen;
  // A small block may come back from a region the arena has left; one past the per-thread cache
  // comes from where it carves now.
  for (size_t bytes : {size_t{64}, size_t{4096}}) {
    void* probe = std::malloc(bytes);
    uintptr_t address = reinterpret_cast<uintptr_t>(probe);
    std::free(probe);
    if (probe == nullptr || in_main_heap(address)) continue;
    uintptr_t region = address & ~(kHeapRegion - 1);
    if (std::find(seen.begin(), seen.end(), region) != seen.end()) continue;
    seen.push_back(region);
    // glibc makes the region writable a few pages at a time as the heap grows, so no fault ever
    // sees a whole 2 MiB block writable and every page stays 4 KiB: the reserved tail is made
    // writable now (nothing is committed until touched), and glibc told so.
    uintptr_t tail = reserved_tail(region);
    if (tail == 0) continue;
    if (tail < region + kHeapRegion) {
      if (mprotect(reinterpret_cast<void*>(tail), region + kHeapRegion - tail, PROT_READ | PROT_WRITE) != 0) continue;
      record_region_writable(region, tail);
    }
    madvise(reinterpret_cast<void*>(region), kHeapRegion, MADV_HUGEPAGE);
  }
}

}  // namespace nsc
