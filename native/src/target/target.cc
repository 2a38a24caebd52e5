#include "target/target.h"

#include <algorithm>
#include <cstring>

#include "util/strings.h"

namespace nsc {

const char* read_failure_text(ReadFailure reason) {
  switch (reason) {
    case ReadFailure::kNone: return "no error";
    case ReadFailure::kNotMapped: return "not mapped";
    case ReadFailure::kNotSavedInCore: return "not saved in core";
    case ReadFailure::kPermissionDenied: return "permission denied";
    case ReadFailure::kShortRead: return "short read";
    case ReadFailure::kIoError: return "I/O error";
  }
  return "unknown read failure";
}

std::string ReadError::message() const {
  std::string text = hex(address) + ": " + read_failure_text(reason);
  if (!detail.empty()) text += " (" + detail + ")";
  return text;
}

const MemoryRegion* find_region(const std::vector<MemoryRegion>& regions, uint64_t addr) {
  auto after = std::upper_bound(regions.begin(), regions.end(), addr,
                                [](uint64_t a, const MemoryRegion& r) { return a < r.start; });
  if (after == regions.begin()) return nullptr;
  const MemoryRegion& candidate = *(after - 1);
  return addr < candidate.end ? &candidate : nullptr;
}

std::optional<std::string> read_c_string(Target& target, uint64_t addr, size_t max_len,
                                         ReadError* error) {
  constexpr uint64_t kPage = 4096;
  std::string text;
  char block[kPage];
  while (text.size() < max_len) {
    // Stop each read at a page end: the string may end just before an unmapped page.
    size_t want = std::min<uint64_t>(kPage - (addr % kPage), max_len - text.size());
    ReadError block_error;
    if (!target.read(addr, block, want, &block_error)) {
      if (error) *error = block_error;
      if (text.empty()) return std::nullopt;
      return text;  // what was readable before the fault
    }
    const char* nul = static_cast<const char*>(std::memchr(block, 0, want));
    if (nul) return text.append(block, nul - block);
    text.append(block, want);
    addr += want;
  }
  return text;
}

}  // namespace nsc
