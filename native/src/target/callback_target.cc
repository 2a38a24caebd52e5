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

bool CallbackTarget::read(uint64_t addr, void* buf, size_t len, ReadError* error) {
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
