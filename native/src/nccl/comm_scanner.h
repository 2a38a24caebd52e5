// Finding every struct ncclComm in a process: through NCCL's own registry
// (ncclComms/nNcclComms, when the library has symbols) or by scanning
// writable private memory for NCCL_MAGIC (2.21+) or, before it, for ncclSharedResources whose
// owner comm points back at them (2.18-2.20), validating each candidate.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "layout/layout.h"
#include "target/target.h"

namespace nsc {

constexpr uint64_t kNcclMagic = 0x0280028002800280ull;  // comm.h NCCL_MAGIC (2.21+)

using ScanProgress = std::function<void(uint64_t bytes_done, uint64_t bytes_total)>;

struct DiscoveryOptions {
  uint64_t load_bias = 0;      // libnccl's load bias, to place registry symbols
  bool force_scan = false;     // ignore the registry
  ScanProgress progress;       // may be empty
};

struct Discovery {
  std::string method;               // "registry" or "scan"
  std::string scan_anchor;          // what the scan looked for: "startMagic" or "sharedRes->owner"
  std::vector<uint64_t> addresses;  // validated communicators, ascending
  uint64_t regions_scanned = 0;
  uint64_t bytes_scanned = 0;
  uint64_t candidates = 0;
  nlohmann::json rejected = nlohmann::json::array();  // [{"address","why"}]
  std::string registry_note;        // why the registry was not used, if it was not
  // Regions a scan passed over although they could hold a comm (too large to be
  // an allocator arena): [{"start","size","reason"}], so the user sees them.
  nlohmann::json skipped_regions = nlohmann::json::array();
  // Comms whose library was not told apart by size (several layouts fit): [{"address","why"}].
  nlohmann::json attribution = nlohmann::json::array();
};

Discovery discover_communicators(Target& target, const LayoutProfile& layout,
                                 const DiscoveryOptions& options);

// One libnccl of a process that maps several (issue 17): each has its own layout and symbols.
struct LibraryForDiscovery {
  std::string name;                 // its path in the target, for notes
  const LayoutProfile* layout = nullptr;
  uint64_t load_bias = 0;           // places its registry symbols
  std::vector<MappedFile> image;    // its mappings: a comm holding pointers into them is its own
};

// One Discovery per library, in order. Each library's registry first; then one scan shared by
// the others. A candidate goes to the library whose layout accepts it; when several accept it
// (equal sizes), to the one whose image the comm points into most, else the first, with a
// note in `attribution`. A candidate no layout accepts is in the `rejected` of every library
// that examined it, each with its own reason. options.load_bias is not used (each has its own).
std::vector<Discovery> discover_communicators_of_libraries(Target& target,
                                                           const std::vector<LibraryForDiscovery>& libraries,
                                                           const DiscoveryOptions& options);

// Regions a heap-allocated comm can live in: readable, writable, private, saved.
bool is_scannable_region(const MemoryRegion& region);

// Why a scan skips a region that is otherwise a candidate (readable, writable,
// private, saved); empty when it is scanned or was never a candidate.
std::string scan_skip_reason(const MemoryRegion& region);

// Addresses A (aligned to `stride`) in scannable regions where the `value_size`-byte
// value at A + phase equals `value`. Returns how many bytes were examined.
uint64_t scan_for_value(Target& target, uint64_t value, unsigned value_size, uint64_t stride,
                        uint64_t phase, const ScanProgress& progress,
                        std::vector<uint64_t>* matches, uint64_t* regions_scanned);

// Empty when the candidate is a plausible ncclComm; otherwise why not.
std::string check_comm_candidate(Target& target, const LayoutProfile& layout, uint64_t address);

}  // namespace nsc
