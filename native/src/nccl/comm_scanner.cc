#include "nccl/comm_scanner.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "layout/header_profile.h"
#include "nccl/object_view.h"
#include "util/strings.h"

namespace nsc {
namespace {

constexpr uint64_t kChunkBytes = 4u << 20;   // live reads: 4 MiB at a time
constexpr int64_t kMaxPlausibleRanks = 1 << 20;
constexpr int64_t kMaxRegistryEntries = 1 << 16;
constexpr int64_t kMaxSharedResourcesRefs = 1 << 16;  // comms sharing one ncclSharedResources
constexpr size_t kMaxOwnerCache = 1 << 20;            // owner scan: C->sharedRes values kept

// Scans one contiguous buffer that starts at target address `base`.
void scan_buffer(const uint8_t* bytes, uint64_t length, uint64_t base, uint64_t value,
                 unsigned value_size, uint64_t stride, uint64_t phase,
                 std::vector<uint64_t>* matches) {
  uint64_t first = (base + stride - 1) / stride * stride - base;  // first aligned offset
  for (uint64_t offset = first; offset + phase + value_size <= length; offset += stride) {
    if (value_size == 8) {
      uint64_t word;
      std::memcpy(&word, bytes + offset + phase, 8);
      if (word == value) matches->push_back(base + offset);
    } else {
      uint32_t word;
      std::memcpy(&word, bytes + offset + phase, 4);
      if (word == static_cast<uint32_t>(value)) matches->push_back(base + offset);
    }
  }
}

// Reads a region in chunks when the target cannot hand out its bytes directly.
// `chunk` is the caller's buffer, reused across regions: no zero-fill, no fresh
// 4 MiB allocation per region (each is page-faulted in again).
void scan_region_by_reads(Target& target, const MemoryRegion& region, uint64_t value,
                          unsigned value_size, uint64_t stride, uint64_t phase,
                          std::vector<uint64_t>* matches, std::unique_ptr<uint8_t[]>* chunk,
                          uint64_t* chunk_size) {
  uint64_t needed = std::min(kChunkBytes, region.size()) + phase + value_size;  // overlap: a value across chunks
  if (*chunk_size < needed) {
    chunk->reset(new uint8_t[needed]);
    *chunk_size = needed;
  }
  for (uint64_t start = region.start; start < region.end; start += kChunkBytes) {
    uint64_t length = std::min(kChunkBytes, region.end - start);
    uint64_t readable = std::min<uint64_t>(length + phase + value_size, region.end - start);
    ReadError error;
    if (!target.scan_read(start, chunk->get(), readable, &error)) return;  // unreadable: skip region
    std::vector<uint64_t> found;
    scan_buffer(chunk->get(), readable, start, value, value_size, stride, phase, &found);
    for (uint64_t address : found)
      if (address < start + length) matches->push_back(address);
  }
}

bool registry_available(const LayoutProfile& layout) {
  return layout.symbols.count("ncclComms") && layout.symbols.count("nNcclComms");
}

// Reads NCCL's registry of live comms (2.24+, RAS). Empty with a note when unusable.
std::vector<uint64_t> read_registry(Target& target, const LayoutProfile& layout, uint64_t load_bias,
                                    std::string* note) {
  uint64_t array_pointer = 0;
  int32_t capacity = 0;
  ReadError error;
  if (!target.read_value(layout.symbols.at("ncclComms") + load_bias, &array_pointer, &error) ||
      !target.read_value(layout.symbols.at("nNcclComms") + load_bias, &capacity, &error)) {
    *note = "registry unreadable: " + error.message();
    return {};
  }
  if (array_pointer == 0 || capacity <= 0 || capacity > kMaxRegistryEntries) {
    *note = "registry empty (ncclComms=" + hex(array_pointer) + ", nNcclComms=" +
            std::to_string(capacity) + ")";
    return {};
  }
  std::vector<uint64_t> slots(static_cast<size_t>(capacity));
  if (!target.read(array_pointer, slots.data(), slots.size() * 8, &error)) {
    *note = "registry array unreadable: " + error.message();
    return {};
  }
  slots.erase(std::remove(slots.begin(), slots.end(), 0), slots.end());
  return slots;
}

constexpr size_t kMaxRejectedListed = 256;  // rejected candidates listed in the document

}  // namespace

// Larger private mappings are address-space reservations (sanitizer shadow: 14 TiB),
// not allocator arenas: sweeping one never ends and faults page tables into a live target.
constexpr uint64_t kMaxScannedRegion = 64ull << 30;

namespace {
bool may_hold_heap_comm(const MemoryRegion& region) {
  return region.readable && region.writable && !region.shared && region.saved && region.end > region.start;
}
}  // namespace

bool is_scannable_region(const MemoryRegion& region) {
  return may_hold_heap_comm(region) && (region.size() <= kMaxScannedRegion || region.path == "[heap]");
}

std::string scan_skip_reason(const MemoryRegion& region) {
  if (!may_hold_heap_comm(region) || is_scannable_region(region)) return "";
  return "private mapping larger than " + std::to_string(kMaxScannedRegion >> 30) +
         " GiB: an address-space reservation (e.g. sanitizer shadow), not an allocator arena";
}

namespace {
// Lists what a scan passed over: a comm allocated there would be missed.
nlohmann::json skipped_regions_of(Target& target) {
  nlohmann::json skipped = nlohmann::json::array();
  for (const MemoryRegion& region : target.regions()) {
    std::string reason = scan_skip_reason(region);
    if (!reason.empty())
      skipped.push_back({{"start", hex(region.start)}, {"size", region.size()}, {"reason", reason}});
  }
  return skipped;
}
}  // namespace

uint64_t scan_for_value(Target& target, uint64_t value, unsigned value_size, uint64_t stride,
                        uint64_t phase, const ScanProgress& progress,
                        std::vector<uint64_t>* matches, uint64_t* regions_scanned) {
  uint64_t total = 0;
  for (const MemoryRegion& region : target.regions())
    if (is_scannable_region(region)) total += region.size();
  uint64_t done = 0;
  std::unique_ptr<uint8_t[]> chunk;
  uint64_t chunk_size = 0;
  for (const MemoryRegion& region : target.regions()) {
    if (!is_scannable_region(region)) continue;
    if (const uint8_t* bytes = target.scan_direct(region.start, region.size()))
      scan_buffer(bytes, region.size(), region.start, value, value_size, stride, phase, matches);
    else
      scan_region_by_reads(target, region, value, value_size, stride, phase, matches, &chunk, &chunk_size);
    done += region.size();
    ++*regions_scanned;
    if (progress) progress(done, total);
  }
  return done;
}

namespace {
// Where the target's own endMagic is: the first NCCL_MAGIC after startMagic, within twice the
// profile's sizeof(ncclComm). Measures the comm's size without DWARF; nullopt when none is read.
std::optional<uint64_t> measured_end_magic_offset(Target& target, uint64_t start_magic_address,
                                                  uint64_t profile_size) {
  constexpr uint64_t kPage = 4096;  // page by page: a sliced core keeps only some pages
  uint64_t limit = start_magic_address + std::max<uint64_t>(profile_size * 2, 64 * 1024);
  std::vector<uint64_t> words(kPage / 8);
  for (uint64_t page = (start_magic_address + 8) & ~(kPage - 1); page < limit; page += kPage) {
    ReadError error;
    bool whole_page = target.read(page, words.data(), kPage, &error);
    for (uint64_t i = 0; i < kPage / 8; ++i) {
      uint64_t address = page + i * 8;
      // A page saved only in part (a slice's ranges, an odd mapping): word by word.
      if (!whole_page && !target.read(address, &words[i], 8, &error)) continue;
      if (address > start_magic_address && address < limit && words[i] == kNcclMagic)
        return address - start_magic_address;
    }
  }
  return std::nullopt;
}

// A header-built profile is checked by sizes: its endMagic must be the target's.
std::string header_profile_size_check(Target& target, const LayoutProfile& layout, uint64_t address) {
  const StructLayout* type = layout.find_struct("ncclComm");
  const MemberLayout* start = type->find("startMagic");
  const MemberLayout* end = type->find("endMagic");
  if (start == nullptr || end == nullptr) return "";
  std::string expected = "sizeof check failed: header profile (NCCL " + layout.nccl_version +
                         ") has sizeof(ncclComm) = " + std::to_string(type->size) +
                         " with endMagic at +" + std::to_string(end->offset - start->offset) +
                         " from startMagic";
  auto measured = measured_end_magic_offset(target, address + start->offset, type->size);
  if (!measured) return expected + "; the target's comm at " + hex(address) + " has no endMagic within +" +
                        std::to_string(std::max<uint64_t>(type->size * 2, 64 * 1024));
  return expected + "; the target's comm at " + hex(address) + " has it at +" + std::to_string(*measured) +
         " (sizeof(ncclComm) = " + std::to_string(type->size - (end->offset - start->offset) + *measured) + ")";
}
}  // namespace

namespace {
// NCCL 2.18-2.20 have no NCCL_MAGIC. Their comm calloc's its ncclSharedResources and sets
// sharedRes->owner = comm (v2.20.5 src/init.cc commAlloc); a split comm sharing resources
// (splitShare) points at its parent's, whose owner is a comm pointing at them too.
std::string check_shared_resources_owner(const ObjectView& comm, uint64_t address) {
  auto shared = comm.deref("sharedRes");
  if (!shared.ok()) return "sharedRes: " + shared.unavailable;
  auto ref_count = shared.value->integer("refCount");
  if (!ref_count.ok()) return "sharedRes->refCount: " + ref_count.unavailable;
  if (*ref_count.value < 1 || *ref_count.value > kMaxSharedResourcesRefs)
    return "sharedRes->refCount is " + std::to_string(*ref_count.value);
  auto owner = shared.value->unsigned_integer("owner");
  if (!owner.ok()) return "sharedRes->owner: " + owner.unavailable;
  if (*owner.value == address) return "";
  ObjectView owner_comm = ObjectView::of(*comm.target(), *comm.layout(), "ncclComm", *owner.value);
  auto owners_shared = owner_comm.unsigned_integer("sharedRes");
  if (owners_shared.ok() && *owners_shared.value == shared.value->address()) return "";
  return "sharedRes->owner is " + hex(*owner.value) + ", neither this comm nor one sharing its resources";
}
}  // namespace

std::string check_comm_candidate(Target& target, const LayoutProfile& layout, uint64_t address) {
  ObjectView comm = ObjectView::of(target, layout, "ncclComm", address);
  if (!comm.valid()) return "layout has no struct ncclComm";
  if (comm.has("startMagic")) {
    auto start = comm.unsigned_integer("startMagic");
    if (!start.ok()) return "startMagic: " + start.unavailable;
    if (*start.value != kNcclMagic) return "startMagic is " + hex(*start.value);
    auto end = comm.unsigned_integer("endMagic");
    if (!end.ok()) return "endMagic: " + end.unavailable;
    if (*end.value != kNcclMagic) {
      if (is_header_profile(layout)) return header_profile_size_check(target, layout, address);
      return "endMagic is " + hex(*end.value) + " (torn or freed comm)";
    }
  } else {
    std::string why = check_shared_resources_owner(comm, address);
    if (!why.empty()) return why;
  }
  auto rank = comm.integer("rank");
  auto nranks = comm.integer("nRanks");
  if (!rank.ok() || !nranks.ok()) return "rank/nRanks unreadable";
  if (*nranks.value < 1 || *nranks.value > kMaxPlausibleRanks)
    return "nRanks is " + std::to_string(*nranks.value);
  if (*rank.value < 0 || *rank.value >= *nranks.value)
    return "rank " + std::to_string(*rank.value) + " outside 0.." + std::to_string(*nranks.value - 1);
  return "";
}

namespace {

void push_rejected(Discovery* discovery, uint64_t address, const std::string& why) {
  if (discovery->rejected.size() < kMaxRejectedListed)  // `candidates` keeps the count
    discovery->rejected.push_back({{"address", hex(address)}, {"why", why}});
}

// True when the library's own registry named at least one valid comm: no scan needed for it.
bool discover_by_registry(Target& target, const LibraryForDiscovery& library, bool force_scan,
                          Discovery* discovery) {
  if (force_scan) return false;
  if (!registry_available(*library.layout)) {
    discovery->registry_note = "library has no ncclComms/nNcclComms symbols";
    return false;
  }
  auto slots = read_registry(target, *library.layout, library.load_bias, &discovery->registry_note);
  discovery->candidates = slots.size();
  for (uint64_t address : slots) {
    std::string why = check_comm_candidate(target, *library.layout, address);
    if (why.empty()) discovery->addresses.push_back(address);
    else push_rejected(discovery, address, why);
  }
  if (discovery->addresses.empty()) {
    discovery->rejected = nlohmann::json::array();
    return false;
  }
  discovery->method = "registry";
  std::sort(discovery->addresses.begin(), discovery->addresses.end());
  return true;
}

// What a scan looks for: startMagic (2.21+) at its offset, or (2.18-2.20, no NCCL_MAGIC) a
// sharedRes->owner pointing back at a comm whose sharedRes points at it.
struct ScanKey {
  uint64_t value = 0;
  unsigned size = 0;
  uint64_t phase = 0;
  bool by_owner = false;             // the 2.18-2.20 anchor: offsets below
  uint64_t shared_res_offset = 0;    // ncclComm.sharedRes
  uint64_t owner_offset = 0;         // ncclSharedResources.owner
  uint64_t ref_count_offset = 0;     // ncclSharedResources.refCount
  bool operator<(const ScanKey& other) const {
    return std::tie(value, size, phase, by_owner, shared_res_offset, owner_offset, ref_count_offset) <
           std::tie(other.value, other.size, other.phase, other.by_owner, other.shared_res_offset,
                    other.owner_offset, other.ref_count_offset);
  }
  std::string anchor() const { return by_owner ? "sharedRes->owner" : "startMagic"; }
};

std::optional<ScanKey> scan_key_of(const LayoutProfile& layout) {
  const StructLayout* comm_type = layout.find_struct("ncclComm");
  if (comm_type == nullptr) return std::nullopt;
  if (const MemberLayout* start = comm_type->find("startMagic")) return ScanKey{kNcclMagic, 8, start->offset};
  const StructLayout* shared_type = layout.find_struct("ncclSharedResources");
  const MemberLayout* shared_res = comm_type->find("sharedRes");
  if (shared_type == nullptr || shared_res == nullptr) return std::nullopt;
  const MemberLayout* owner = shared_type->find("owner");
  const MemberLayout* ref_count = shared_type->find("refCount");
  if (owner == nullptr || ref_count == nullptr || ref_count->size != 4) return std::nullopt;
  ScanKey key;
  key.by_owner = true;
  key.shared_res_offset = shared_res->offset;
  key.owner_offset = owner->offset;
  key.ref_count_offset = ref_count->offset;
  return key;
}

struct ScanResult {
  std::set<uint64_t> matches;
  uint64_t bytes_scanned = 0;
  uint64_t regions_scanned = 0;
};

// Calls visit(bytes, available, base, positions) over every scannable region, directly or in
// chunks: objects start in the first `positions` bytes and may extend `overlap` bytes past them
// (to `available`). Returns the bytes examined.
template <typename Visit>
uint64_t visit_scannable(Target& target, uint64_t overlap, const ScanProgress& progress,
                         uint64_t* regions_scanned, Visit visit) {
  uint64_t total = 0, done = 0;
  for (const MemoryRegion& region : target.regions())
    if (is_scannable_region(region)) total += region.size();
  std::vector<uint8_t> chunk;
  for (const MemoryRegion& region : target.regions()) {
    if (!is_scannable_region(region)) continue;
    if (const uint8_t* bytes = target.scan_direct(region.start, region.size())) {
      visit(bytes, region.size(), region.start, region.size());
    } else {
      for (uint64_t start = region.start; start < region.end; start += kChunkBytes) {
        uint64_t readable = std::min<uint64_t>(kChunkBytes + overlap, region.end - start);
        chunk.resize(readable);
        ReadError error;
        if (!target.scan_read(start, chunk.data(), readable, &error)) break;  // unreadable: skip region
        visit(chunk.data(), readable, start, std::min<uint64_t>(kChunkBytes, readable));
      }
    }
    done += region.size();
    ++*regions_scanned;
    if (progress) progress(done, total);
  }
  return done;
}

// The scannable region holding [address, address + length), or null.
const MemoryRegion* scannable_region_of(const std::vector<const MemoryRegion*>& regions, uint64_t address,
                                        uint64_t length) {
  auto it = std::upper_bound(regions.begin(), regions.end(), address,
                             [](uint64_t a, const MemoryRegion* region) { return a < region->start; });
  if (it == regions.begin()) return nullptr;
  const MemoryRegion* region = *std::prev(it);
  return address + length <= region->end ? region : nullptr;
}

// 2.18-2.20: every 16-aligned S whose refCount is plausible and whose owner word C is a
// 16-aligned address in scannable memory is a candidate; C is a comm when C->sharedRes == S.
// Then the comms sharing a found S (splitShare children) by a second, exact-value pass.
ScanResult scan_for_owner(Target& target, const ScanKey& key, const ScanProgress& progress) {
  ScanResult result;
  std::vector<const MemoryRegion*> regions;
  for (const MemoryRegion& region : target.regions())
    if (is_scannable_region(region)) regions.push_back(&region);
  std::sort(regions.begin(), regions.end(), [](auto* a, auto* b) { return a->start < b->start; });
  uint64_t span = std::max(key.owner_offset, key.ref_count_offset) + 8;
  // C->sharedRes by C, read once: most candidates are other objects' headers (a count, then a
  // type pointer: every Python object) naming few distinct C. Bounded: cleared when full.
  std::unordered_map<uint64_t, uint64_t> shared_res_of;
  std::set<uint64_t> owned;
  auto points_back = [&](uint64_t comm, uint64_t shared) {
    auto known = shared_res_of.find(comm);
    if (known == shared_res_of.end()) {
      if (shared_res_of.size() >= kMaxOwnerCache) shared_res_of.clear();
      uint64_t word = 0;
      ReadError error;
      if (!target.read(comm + key.shared_res_offset, &word, 8, &error)) word = 0;
      known = shared_res_of.emplace(comm, word).first;
    }
    return known->second == shared;
  };
  result.bytes_scanned = visit_scannable(
      target, span, progress, &result.regions_scanned,
      [&](const uint8_t* bytes, uint64_t available, uint64_t base, uint64_t positions) {
        for (uint64_t at = (base + 15) / 16 * 16 - base; at < positions && at + span <= available; at += 16) {
          uint64_t comm;
          int32_t ref_count;
          std::memcpy(&comm, bytes + at + key.owner_offset, 8);
          std::memcpy(&ref_count, bytes + at + key.ref_count_offset, 4);
          if (ref_count < 1 || ref_count > kMaxSharedResourcesRefs || comm == 0 || comm % 16 != 0) continue;
          if (scannable_region_of(regions, comm + key.shared_res_offset, 8) == nullptr) continue;
          if (points_back(comm, base + at)) {
            result.matches.insert(comm);
            owned.insert(base + at);
          }
        }
      });
  if (owned.empty()) return result;
  uint64_t unused = 0;
  uint64_t reach = key.shared_res_offset + 8;
  visit_scannable(target, reach, {}, &unused, [&](const uint8_t* bytes, uint64_t available, uint64_t base,
                                                  uint64_t positions) {
    for (uint64_t at = (base + 15) / 16 * 16 - base; at < positions && at + reach <= available; at += 16) {
      uint64_t word;
      std::memcpy(&word, bytes + at + key.shared_res_offset, 8);
      if (owned.count(word)) result.matches.insert(base + at);
    }
  });
  return result;
}

ScanResult scan_for(Target& target, const ScanKey& key, const ScanProgress& progress) {
  if (key.by_owner) return scan_for_owner(target, key, progress);
  ScanResult result;
  std::vector<uint64_t> matches;
  result.bytes_scanned =
      scan_for_value(target, key.value, key.size, 16, key.phase, progress, &matches, &result.regions_scanned);
  result.matches.insert(matches.begin(), matches.end());
  return result;
}

uint64_t comm_size(const LayoutProfile& layout) {
  const StructLayout* comm_type = layout.find_struct("ncclComm");
  return comm_type == nullptr ? 0 : comm_type->size;
}

bool points_into(const LibraryForDiscovery& library, uint64_t word) {
  for (const MappedFile& file : library.image)
    if (word >= file.start && word < file.end) return true;
  return false;
}

// The comms of several libraries, told apart by layout, then by pointers into each image.
class LibraryDiscoveries {
 public:
  LibraryDiscoveries(Target& target, const std::vector<LibraryForDiscovery>& libraries)
      : target_(target), libraries_(libraries), results_(libraries.size()) {}

  std::vector<Discovery> run(const DiscoveryOptions& options) {
    std::vector<size_t> scanning;
    for (size_t i = 0; i < libraries_.size(); ++i) {
      if (discover_by_registry(target_, libraries_[i], options.force_scan, &results_[i]))
        from_registry_.insert(results_[i].addresses.begin(), results_[i].addresses.end());
      else
        scanning.push_back(i);
    }
    if (!scanning.empty()) scan(scanning, options.progress);
    drop_overlapping();
    drop_end_magic_echoes();
    return results_;
  }

 private:
  // One scan per distinct key (usually one for all), then each candidate to its library.
  void scan(const std::vector<size_t>& scanning, const ScanProgress& progress) {
    std::map<size_t, ScanKey> keys;
    std::map<ScanKey, ScanResult> scans;
    for (size_t i : scanning)
      if (auto key = scan_key_of(*libraries_[i].layout)) keys[i] = *key;
    for (const auto& [library, key] : keys)
      if (!scans.count(key)) scans[key] = scan_for(target_, key, progress);
    nlohmann::json skipped = skipped_regions_of(target_);
    std::set<uint64_t> candidates;
    for (size_t i : scanning) {
      results_[i].method = "scan";
      results_[i].skipped_regions = skipped;
      if (!keys.count(i)) continue;
      results_[i].scan_anchor = keys.at(i).anchor();
      const ScanResult& result = scans.at(keys.at(i));
      results_[i].bytes_scanned = result.bytes_scanned;
      results_[i].regions_scanned = result.regions_scanned;
      results_[i].candidates = result.matches.size();
      candidates.insert(result.matches.begin(), result.matches.end());
    }
    for (uint64_t address : candidates) {
      if (from_registry_.count(address)) continue;
      std::vector<size_t> examiners;
      for (const auto& [library, key] : keys)
        if (scans.at(key).matches.count(address)) examiners.push_back(library);
      attribute(address, examiners);
    }
  }

  void attribute(uint64_t address, const std::vector<size_t>& examiners) {
    std::vector<size_t> accepting;
    std::vector<std::pair<size_t, std::string>> refusals;
    for (size_t i : examiners) {
      std::string why = check_comm_candidate(target_, *libraries_[i].layout, address);
      if (why.empty()) accepting.push_back(i);
      else refusals.emplace_back(i, why);
    }
    if (accepting.empty()) {
      for (const auto& [library, why] : refusals) push_rejected(&results_[library], address, why);
      return;
    }
    std::string note;
    size_t owner = choose_owner(address, accepting, &note);
    results_[owner].addresses.push_back(address);
    if (!note.empty()) results_[owner].attribution.push_back({{"address", hex(address)}, {"why", note}});
  }

  // Of the libraries whose layouts all accept the comm: the one whose image it points into most.
  size_t choose_owner(uint64_t address, const std::vector<size_t>& accepting, std::string* note) {
    if (accepting.size() == 1) return accepting[0];
    uint64_t length = UINT64_MAX;
    std::string names;
    for (size_t i : accepting) {
      length = std::min(length, comm_size(*libraries_[i].layout));
      names += (names.empty() ? "" : ", ") + libraries_[i].name;
    }
    std::vector<uint64_t> counts = pointers_into_images(address, length, accepting);
    size_t best = 0;
    bool tie = false;
    for (size_t i = 1; i < counts.size(); ++i) {
      if (counts[i] > counts[best]) {
        best = i;
        tie = false;
      } else if (counts[i] == counts[best]) {
        tie = true;
      }
    }
    *note = "the layouts of " + names + " all fit; " +
            (tie ? "its pointers do not tell them apart (" + std::to_string(counts[best]) +
                       " into each image): attributed to " + libraries_[accepting[best]].name
                 : "attributed by its pointers: " + std::to_string(counts[best]) + " into the image of " +
                       libraries_[accepting[best]].name);
    return accepting[best];
  }

  // How many 8-byte words of [address, address + length) point into each library's image.
  std::vector<uint64_t> pointers_into_images(uint64_t address, uint64_t length, const std::vector<size_t>& which) {
    constexpr uint64_t kPage = 4096;
    std::vector<uint64_t> counts(which.size()), words(kPage / 8);
    for (uint64_t at = address; at < address + length; at += kPage) {
      uint64_t bytes = std::min(kPage, address + length - at) & ~uint64_t{7};
      ReadError error;
      if (!target_.read(at, words.data(), bytes, &error)) continue;  // an unsaved page tells nothing
      for (uint64_t word = 0; word < bytes / 8; ++word)
        for (size_t i = 0; i < which.size(); ++i) counts[i] += points_into(libraries_[which[i]], words[word]);
    }
    return counts;
  }

  // Real comms never overlap: a valid-looking candidate inside an accepted comm is repeated
  // memory (hostile or torn), and decoding each would multiply the work. A registry's are kept.
  void drop_overlapping() {
    std::vector<std::pair<uint64_t, size_t>> comms;  // address, library
    for (size_t i = 0; i < results_.size(); ++i)
      for (uint64_t address : results_[i].addresses) comms.emplace_back(address, i);
    std::sort(comms.begin(), comms.end());
    std::vector<std::vector<uint64_t>> kept(results_.size());
    uint64_t last = 0, last_end = 0;
    for (const auto& [address, library] : comms) {
      if (address < last_end && !from_registry_.count(address)) {
        push_rejected(&results_[library], address, "inside comm " + hex(last));
        continue;
      }
      kept[library].push_back(address);
      last = address;
      last_end = address + comm_size(*libraries_[library].layout);
    }
    for (size_t i = 0; i < results_.size(); ++i) results_[i].addresses = kept[i];
  }

  // A comm whose size is a multiple of 16 has its endMagic 16-aligned too: that second hit is
  // part of a found comm (of any library), not a rejected candidate.
  void drop_end_magic_echoes() {
    std::set<uint64_t> echoes;  // a set: hostile memory can hold 10^5 candidates
    for (size_t i = 0; i < results_.size(); ++i) {
      const StructLayout* comm_type = libraries_[i].layout->find_struct("ncclComm");
      const MemberLayout* end_magic = comm_type ? comm_type->find("endMagic") : nullptr;
      if (end_magic == nullptr) continue;
      for (uint64_t comm : results_[i].addresses) echoes.insert(comm + end_magic->offset);
    }
    for (Discovery& discovery : results_) {
      nlohmann::json kept = nlohmann::json::array();
      for (const auto& rejected : discovery.rejected) {
        uint64_t address = 0;
        parse_u64(rejected["address"].get<std::string>(), &address);
        if (!echoes.count(address)) kept.push_back(rejected);
      }
      discovery.rejected = kept;
    }
  }

  Target& target_;
  const std::vector<LibraryForDiscovery>& libraries_;
  std::vector<Discovery> results_;
  std::set<uint64_t> from_registry_;
};

}  // namespace

std::vector<Discovery> discover_communicators_of_libraries(Target& target,
                                                           const std::vector<LibraryForDiscovery>& libraries,
                                                           const DiscoveryOptions& options) {
  return LibraryDiscoveries(target, libraries).run(options);
}

Discovery discover_communicators(Target& target, const LayoutProfile& layout,
                                 const DiscoveryOptions& options) {
  LibraryForDiscovery library;
  library.layout = &layout;
  library.load_bias = options.load_bias;
  return discover_communicators_of_libraries(target, {library}, options).front();
}

}  // namespace nsc
