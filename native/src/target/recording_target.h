// A Target wrapper that forwards to an inner target and records every range
// read successfully (read, direct) so `ncclscope slice` can keep exactly what
// the decoders used. Bulk scans (scan_read/scan_direct) are not recorded.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "target/target.h"

namespace nsc {

struct AddressRange {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
};

// Sorts and merges overlapping or touching ranges.
std::vector<AddressRange> merge_ranges(std::vector<AddressRange> ranges);
// ranges with every byte of `cut` removed (a range that straddles it is split in two).
std::vector<AddressRange> without_range(const std::vector<AddressRange>& ranges, AddressRange cut);

class RecordingTarget : public Target {
 public:
  explicit RecordingTarget(Target& inner) : inner_(inner) {}

  std::string describe() const override { return inner_.describe(); }
  bool is_core() const override { return inner_.is_core(); }
  bool is_local_process() const override { return inner_.is_local_process(); }
  int pid() const override { return inner_.pid(); }
  bool read(uint64_t addr, void* buf, size_t len, ReadError* error) override;
  const uint8_t* direct(uint64_t addr, size_t len) override;
  bool scan_read(uint64_t addr, void* buf, size_t len, ReadError* error) override {
    return inner_.scan_read(addr, buf, len, error);
  }
  const uint8_t* scan_direct(uint64_t addr, size_t len) override {
    return inner_.scan_direct(addr, len);
  }
  const std::vector<MemoryRegion>& regions() const override { return inner_.regions(); }
  const std::vector<MappedFile>& mapped_files() const override { return inner_.mapped_files(); }
  std::vector<ThreadInfo> threads() override { return inner_.threads(); }
  std::string executable() const override { return inner_.executable(); }
  std::vector<std::string> warnings() const override { return inner_.warnings(); }
  std::vector<uint8_t> auxv() const override { return inner_.auxv(); }
  Elf* core_elf() const override { return inner_.core_elf(); }  // the unwinder's reads are not recorded
  void resume() override { inner_.resume(); }

  // Everything read so far, sorted and merged.
  std::vector<AddressRange> recorded_ranges() const { return merge_ranges(recorded_); }
  uint64_t read_count() const { return read_count_; }

 private:
  void record(uint64_t addr, size_t len);

  Target& inner_;
  std::vector<AddressRange> recorded_;
  uint64_t read_count_ = 0;
  size_t merge_threshold_ = 1u << 20;
};

}  // namespace nsc
