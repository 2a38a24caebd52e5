// Transparent huge pages for the heap of a thread other than the main one. glibc gives such a
// thread an arena of its own, in 64 MiB regions aligned to their size (HEAP_MAX_SIZE), grown
// with mprotect; glibc.malloc.hugetlb=1 (cli/main.cc) advises huge pages for the main heap only.
// On this kind of VM a fresh 4 KiB page costs about three times what its share of a huge page
// does (touching 1.2 GB: 3.3 s against 1.2-2.2 s), and triage's reading threads hold half of
// 100,000 ranks' summaries there. Advice only: a region glibc did not lay out this way is left
// as it was.
#pragma once

namespace nsc {

// Advises huge pages for the region of this thread's heap its allocations now come from, once
// per region; nothing on the main thread, nothing under AddressSanitizer (its own allocator).
// Cheap enough to call per work item (two small mallocs and frees).
void advise_huge_pages_for_thread_heap();

}  // namespace nsc
