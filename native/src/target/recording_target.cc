#include "target/recording_target.h"

#include <algorithm>

namespace nsc {

std::vector<AddressRange> merge_ranges(std::vector<AddressRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const AddressRange& a, const AddressRange& b) { return a.start < b.start; });
  std::vector<AddressRange> merged;
  for (const AddressRange& range : ranges) {
    if (range.end <= range.start) continue;
    if (!merged.empty() && range.start <= merged.back().end)
      merged.back().end = std::max(merged.back().end, range.end);
    else
      merged.push_back(range);
  }
  return merged;
}

std::vector<AddressRange> without_range(const std::vector<AddressRange>& ranges, AddressRange cut) {
  std::vector<AddressRange> out;
  for (const AddressRange& range : ranges) {
    if (range.end <= cut.start || range.start >= cut.end) {
      out.push_back(range);
      continue;
    }
    if (range.start < cut.start) out.push_back({range.start, cut.start});
    if (range.end > cut.end) out.push_back({cut.end, range.end});
  }
  return out;
}

void RecordingTarget::record(uint64_t addr, size_t len) {
  ++read_count_;
  if (len == 0) return;
  // Decoders read neighbouring fields one after another: extend the last range.
  if (!recorded_.empty() && addr >= recorded_.back().start && addr <= recorded_.back().end) {
    recorded_.back().end = std::max(recorded_.back().end, addr + len);
    return;
  }
  recorded_.push_back(AddressRange{addr, addr + len});
  // Keep memory bounded under millions of scattered reads.
  if (recorded_.size() >= merge_threshold_) {
    recorded_ = merge_ranges(std::move(recorded_));
    if (recorded_.size() > merge_threshold_ / 2) merge_threshold_ *= 2;
  }
}

bool RecordingTarget::read(uint64_t addr, void* buf, size_t len, ReadError* error) {
  bool ok = inner_.read(addr, buf, len, error);
  if (ok) record(addr, len);
  return ok;
}

const uint8_t* RecordingTarget::direct(uint64_t addr, size_t len) {
  const uint8_t* bytes = inner_.direct(addr, len);
  if (bytes) record(addr, len);
  return bytes;
}

}  // namespace nsc
