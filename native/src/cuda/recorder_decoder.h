// Reads the flight recorder's region (cuda/recorder_format.h) out of a live
// process or a core: finds it by its magic, checks the header, collects every
// intact record of every thread's ring, and builds the "recorder" section:
// streams with their recent operations, pending event waits and blocked host
// threads; IPC and cuMem handles exported, imported, opened and never closed;
// NCCL operations per communicator; and cross-stream wait chains.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "target/target.h"

namespace nsc {

struct RecorderDecodeOptions {
  uint64_t recent_ops_per_stream = 16;
  uint64_t ops_per_comm = 64;
  bool include_records = false;  // the whole merged timeline (large)
  uint64_t max_threads = 4096;
  uint64_t max_records_per_ring = 1u << 20;
};

// Addresses of recorder region headers (magic at a page start in private
// writable memory, header self-consistent). Usually one.
std::vector<uint64_t> find_recorder_regions(Target& target, std::vector<std::string>* rejected);

// The "recorder" section (docs/recorder.md); {"found": false, ...} when no region.
// Read failures go to `errors` (document "errors" array) when non-null.
nlohmann::json decode_recorder(Target& target, nlohmann::json* errors,
                               const RecorderDecodeOptions& options = {});

// Cross-stream chains from a decoded "recorder" section: host thread blocked in a
// synchronize -> stream waits on event -> event recorded on another stream after
// an NCCL operation. Also part of decode_recorder's output ("chains").
nlohmann::json build_stream_chains(const nlohmann::json& recorder);

}  // namespace nsc
