// Sweeps a target's memory in large chunks for scanners (e.g. the comm magic
// search): zero-copy on cores, one process_vm_readv per chunk live. Uses
// Target::scan_read/scan_direct, so recording wrappers do not keep these bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "target/target.h"

namespace nsc {

struct ChunkScanStats {
  uint64_t bytes_visited = 0;
  uint64_t bytes_unreadable = 0;
  std::vector<ReadError> failures;  // first few only
};

constexpr size_t kDefaultScanChunk = 4u << 20;

using ChunkVisitor = std::function<void(uint64_t address, const uint8_t* bytes, size_t size)>;

// Calls visit for each readable piece of [start, end). Chunks start at `start`
// and are chunk_size long (keep it a multiple of 4096 so aligned patterns never
// straddle two chunks). Unreadable pages are skipped and counted.
void for_each_chunk(Target& target, uint64_t start, uint64_t end, size_t chunk_size,
                    const ChunkVisitor& visit, ChunkScanStats* stats);

}  // namespace nsc
