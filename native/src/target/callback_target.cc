#include "target/callback_target.h"

#include <algorithm>

namespace nsc {

CallbackTarget::CallbackTarget(std::string description, int pid, ReadThroughCallback read_memory,
                               std::vector<MemoryRegion> regions, std::string executable)
    : description_(std::move(description)),
      pid_(pid),
      read_memory_(std::move(read_memory)),
      regions_(std::move(regions)),
      executable_(std::move(executable)) {
  std::sort(regions_.begin(), regions_.end(),
            [](const MemoryRegion& a, const MemoryRegion& b) { return a.start < b.start; });
  for (const MemoryRegion& region : regions_)
    if (!region.path.empty() && region.path[0] == '/')
      mapped_files_.push_back({region.start, region.end, region.file_offset, region.path});
}

// The first byte of [addr, addr+len) in a region the caller says holds no bytes (a core's
// segment without contents: gdb reads those as zeros, which must not pass for data).
std::optional<uint64_t> CallbackTarget::unsaved_byte(uint64_t addr, size_t len) const {
  uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
  auto it = std::upper_bound(regions_.begin(), regions_.end(), addr,
                             [](uint64_t address, const MemoryRegion& region) { return address < region.start; });
  if (it != regions_.begin()) --it;
  for (; it != regions_.end() && it->start < end; ++it)
    if (!it->saved && it->end > addr) return std::max(addr, it->start);
  return std::nullopt;
}

bool CallbackTarget::read(uint64_t addr, void* buf, size_t len, ReadError* error) {
  if (auto unsaved = unsaved_byte(addr, len)) {
    if (error != nullptr) {
      error->address = *unsaved;
      error->reason = ReadFailure::kNotSavedInCore;
    }
    return false;
  }
  std::string why;
  if (read_memory_(addr, buf, len, &why)) return true;
  if (error != nullptr) {
    error->address = addr;
    error->reason = ReadFailure::kIoError;
    error->detail = why.empty() ? "front end could not read memory" : why;
  }
  return false;
}

}  // namespace nsc
