// Live process target: /proc/PID/maps for regions, process_vm_readv for reads
// (pread on /proc/PID/mem when that is refused). Never writes, never stops the
// process unless asked to freeze it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "target/ptrace_freezer.h"
#include "target/target.h"

namespace nsc {

class LiveProcess : public Target {
 public:
  // Throws nsc::BadInput "pid N: no such process" / "pid N: may not trace (...)".
  LiveProcess(int pid, bool freeze);
  ~LiveProcess() override;

  std::string describe() const override { return "pid " + std::to_string(pid_); }
  bool is_core() const override { return false; }
  bool is_local_process() const override { return true; }
  int pid() const override { return pid_; }
  bool read(uint64_t addr, void* buf, size_t len, ReadError* error) override;
  const std::vector<MemoryRegion>& regions() const override { return regions_; }
  const std::vector<MappedFile>& mapped_files() const override { return mapped_files_; }
  std::vector<ThreadInfo> threads() override;
  std::string executable() const override { return executable_; }
  std::vector<std::string> warnings() const override { return warnings_; }

  bool frozen() const { return freezer_ != nullptr; }
  void resume() override;  // ends the freeze early (the destructor does it otherwise)
  // Reads through /proc/PID/mem even where process_vm_readv works (tests the fallback).
  void set_use_proc_mem(bool use) { use_proc_mem_ = use; }
  // Small reads go through a cache of whole pages (a syscall costs microseconds;
  // decoders read neighbouring fields). Drop it to see fresh memory.
  void set_page_cache(bool enabled) { page_cache_enabled_ = enabled; drop_page_cache(); }
  void drop_page_cache() { page_tags_.assign(page_tags_.size(), kNoPage); }

 private:
  void check_exists() const;
  void load_maps();
  void probe_access();
  bool read_uncached(uint64_t addr, void* buf, size_t len, ReadError* error);
  bool read_through_page_cache(uint64_t addr, void* buf, size_t len);
  const uint8_t* cached_page(uint64_t page);
  bool read_with_vm_readv(uint64_t addr, void* buf, size_t len, ReadError* error);
  bool read_with_proc_mem(uint64_t addr, void* buf, size_t len, ReadError* error);
  ReadError classify_failure(uint64_t fail_addr, size_t bytes_done, int error_number) const;
  ThreadInfo thread_info(int tid) const;

  int pid_;
  int mem_fd_ = -1;
  bool use_proc_mem_ = false;  // process_vm_readv refused (EPERM/ENOSYS)
  std::vector<MemoryRegion> regions_;
  std::vector<MappedFile> mapped_files_;
  std::string executable_;
  std::vector<std::string> warnings_;
  std::unique_ptr<ThreadFreezer> freezer_;
  static constexpr uint64_t kNoPage = ~0ull;
  bool page_cache_enabled_ = true;
  std::vector<uint64_t> page_tags_;   // direct-mapped: slot -> page address cached there
  std::vector<uint8_t> page_bytes_;   // slot * 4096 -> that page's bytes
};

std::unique_ptr<Target> open_live(int pid, bool freeze);

}  // namespace nsc
