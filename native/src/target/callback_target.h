// CallbackTarget: memory supplied by a front end (gdb, cuda-gdb, a remote
// target) through a callback; regions and file mappings given by the caller.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "target/target.h"

namespace nsc {

using ReadThroughCallback =
    std::function<bool(uint64_t address, void* buffer, uint64_t length, std::string* why)>;

class CallbackTarget : public Target {
 public:
  CallbackTarget(std::string description, int pid, ReadThroughCallback read_memory,
                 std::vector<MemoryRegion> regions, std::string executable);

  std::string describe() const override { return description_; }
  bool is_core() const override { return false; }
  int pid() const override { return pid_; }
  bool read(uint64_t addr, void* buf, size_t len, ReadError* error) override;
  const std::vector<MemoryRegion>& regions() const override { return regions_; }
  const std::vector<MappedFile>& mapped_files() const override { return mapped_files_; }
  std::vector<ThreadInfo> threads() override { return {}; }
  std::string executable() const override { return executable_; }

 private:
  std::optional<uint64_t> unsaved_byte(uint64_t addr, size_t len) const;

  std::string description_;
  int pid_;
  ReadThroughCallback read_memory_;
  std::vector<MemoryRegion> regions_;
  std::vector<MappedFile> mapped_files_;
  std::string executable_;
};

}  // namespace nsc
