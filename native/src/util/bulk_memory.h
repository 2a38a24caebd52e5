// Memory for large arrays of plain records that live until triage ends (a rank's 2,000
// flight-recorder entries, times 4,096 ranks): carved from 64 MiB chunks the kernel is asked
// to back with huge pages (madvise MADV_HUGEPAGE). On this VM a first touch of each fresh 4 KiB
// page costs a fault; reading 4,096 dumps into malloc'd vectors spent about a third of its
// time in them. Small requests go to malloc. Thread-safe; a chunk is unmapped once every
// array in it is freed.
#pragma once

#include <cstddef>
#include <new>

namespace nsc {

void* bulk_allocate(size_t bytes);
void bulk_free(void* pointer, size_t bytes);

// std::vector<T, BulkAllocator<T>>: reserve the final size first; a grown vector leaves its
// old array's space unused until its chunk empties.
template <class T>
struct BulkAllocator {
  using value_type = T;
  BulkAllocator() = default;
  template <class U>
  BulkAllocator(const BulkAllocator<U>&) {}
  T* allocate(size_t count) {
    if (count > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(bulk_allocate(count * sizeof(T)));
  }
  void deallocate(T* pointer, size_t count) { bulk_free(pointer, count * sizeof(T)); }
  template <class U>
  bool operator==(const BulkAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const BulkAllocator<U>&) const { return false; }
};

}  // namespace nsc
