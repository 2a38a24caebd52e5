// CallbackTarget: memory supplied by a front end (gdb, cuda-gdb, a remote
// target) through a callback; regions, file mappings and threads (with the registers
// the front end read: stacks are unwound over read() and those) given by the caller.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
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
  std::vector<ThreadInfo> threads() override { return threads_; }
  std::string executable() const override { return executable_; }
  std::optional<SignalInfo> fatal_signal() const override { return signal_; }
  std::string fatal_signal_unavailable() const override {
    return signal_ ? "" : "memory supplied by the front end, which sent no signal (gdb: $_siginfo)";
  }
  // The signal the front end read (a core's $_siginfo in gdb), with the thread that took it.
  void set_fatal_signal(const SignalInfo& signal) { signal_ = signal; }

  // The threads as the front end listed them: each with a prstatus built from its registers
  // (prstatus_from_registers), or registers_unavailable saying why not.
  void set_threads(std::vector<ThreadInfo> threads) { threads_ = std::move(threads); }

 private:
  std::optional<uint64_t> unsaved_byte(uint64_t addr, size_t len) const;

  std::optional<SignalInfo> signal_;
  std::string description_;
  int pid_;
  ReadThroughCallback read_memory_;
  std::vector<MemoryRegion> regions_;
  std::vector<MappedFile> mapped_files_;
  std::string executable_;
  std::vector<ThreadInfo> threads_;
};

}  // namespace nsc
