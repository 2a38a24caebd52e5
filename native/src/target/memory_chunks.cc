#include "target/memory_chunks.h"

#include <algorithm>

namespace nsc {
namespace {

constexpr uint64_t kPage = 4096;
constexpr size_t kMaxRecordedFailures = 16;

uint64_t page_after(uint64_t addr) { return (addr / kPage + 1) * kPage; }

// Where to continue after a fault: past the whole unsaved/unmapped stretch when
// the regions tell us its extent, else past the failing page.
uint64_t resume_after_fault(const Target& target, uint64_t fault) {
  const std::vector<MemoryRegion>& regions = target.regions();
  if (const MemoryRegion* region = find_region(regions, fault))
    return region->saved && region->readable ? page_after(fault) : region->end;
  auto next = std::upper_bound(regions.begin(), regions.end(), fault,
                               [](uint64_t a, const MemoryRegion& r) { return a < r.start; });
  return next == regions.end() ? UINT64_MAX : next->start;
}

void note_failure(const ReadError& error, uint64_t skipped, ChunkScanStats* stats) {
  if (!stats) return;
  stats->bytes_unreadable += skipped;
  if (stats->failures.size() < kMaxRecordedFailures) stats->failures.push_back(error);
}

}  // namespace

void for_each_chunk(Target& target, uint64_t start, uint64_t end, size_t chunk_size,
                    const ChunkVisitor& visit, ChunkScanStats* stats) {
  std::vector<uint8_t> buffer;
  uint64_t at = start;
  while (at < end) {
    size_t size = std::min<uint64_t>(chunk_size, end - at);
    if (const uint8_t* bytes = target.scan_direct(at, size)) {
      visit(at, bytes, size);
    } else {
      buffer.resize(std::max(buffer.size(), size));
      ReadError error;
      if (!target.scan_read(at, buffer.data(), size, &error)) {
        // Deliver the readable prefix, then skip the failing page.
        uint64_t fault = std::clamp<uint64_t>(error.address, at, at + size);
        size_t prefix = fault - at;
        if (prefix > 0 && target.scan_read(at, buffer.data(), prefix, nullptr)) {
          visit(at, buffer.data(), prefix);
          if (stats) stats->bytes_visited += prefix;
        }
        uint64_t resume = std::min<uint64_t>(std::max(resume_after_fault(target, fault), fault + 1), end);
        note_failure(error, resume - fault, stats);
        at = resume;
        continue;
      }
      visit(at, buffer.data(), size);
    }
    if (stats) stats->bytes_visited += size;
    at += size;
  }
}

}  // namespace nsc
