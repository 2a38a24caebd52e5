#include "util/bulk_memory.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace nsc {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kChunkBytes = size_t{64} << 20;
constexpr size_t kSmallest = size_t{64} << 10;  // below: malloc (a huge page would be mostly empty)
constexpr size_t kAlignment = 64;

struct Chunk {
  char* base = nullptr;
  size_t size = 0, used = 0, live = 0;  // live: arrays not yet freed
};

std::mutex chunks_mutex;
std::vector<Chunk> chunks;  // the last one is carved from; the others only wait to empty

size_t round_up(size_t bytes, size_t unit) { return (bytes + unit - 1) / unit * unit; }

// `bytes` (a multiple of kHugePage) at a huge-page boundary, huge pages advised.
char* map_huge(size_t bytes) {
  size_t span = bytes + kHugePage;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  uintptr_t start = reinterpret_cast<uintptr_t>(raw), aligned = round_up(start, kHugePage);
  if (aligned > start) munmap(raw, aligned - start);
  if (size_t tail = start + span - (aligned + bytes)) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);  // advice: plain pages without THP
  return reinterpret_cast<char*>(aligned);
}

}  // namespace

void* bulk_allocate(size_t bytes) {
  if (bytes < kSmallest) {
    if (void* pointer = std::malloc(bytes)) return pointer;
    throw std::bad_alloc();
  }
  bytes = round_up(bytes, kAlignment);
  std::lock_guard<std::mutex> lock(chunks_mutex);
  if (bytes > kChunkBytes / 4) {  // its own mapping, kept before the chunk carved from
    size_t size = round_up(bytes, kHugePage);
    Chunk own{map_huge(size), size, size, 1};
    chunks.insert(chunks.empty() ? chunks.end() : chunks.end() - 1, own);
    return own.base;
  }
  if (chunks.empty() || chunks.back().size - chunks.back().used < bytes)
    chunks.push_back({map_huge(kChunkBytes), kChunkBytes, 0, 0});
  Chunk& chunk = chunks.back();
  void* pointer = chunk.base + chunk.used;
  chunk.used += bytes;
  ++chunk.live;
  return pointer;
}

void bulk_free(void* pointer, size_t bytes) {
  if (pointer == nullptr) return;
  if (bytes < kSmallest) {
    std::free(pointer);
    return;
  }
  std::lock_guard<std::mutex> lock(chunks_mutex);
  char* at = static_cast<char*>(pointer);
  for (size_t i = 0; i < chunks.size(); ++i) {
    Chunk& chunk = chunks[i];
    if (at < chunk.base || at >= chunk.base + chunk.size) continue;
    if (--chunk.live > 0) return;
    if (i + 1 == chunks.size() && chunk.size == kChunkBytes) {
      chunk.used = 0;  // the chunk carved from: reused from its start
    } else {
      munmap(chunk.base, chunk.size);
      chunks.erase(chunks.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return;
  }
}

}  // namespace nsc
