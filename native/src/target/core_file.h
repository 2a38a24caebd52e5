// Core file target: an x86-64 Linux ELF core read with libelf over an mmap.
// PT_LOAD segments become regions, notes give mapped files, threads, pid.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "target/core_notes.h"
#include "target/target.h"

struct Elf;

namespace nsc {

// One PT_LOAD as found in the core, plus how many of its bytes the file holds.
struct CoreSegment {
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  uint64_t filesz = 0;     // p_filesz as written
  uint64_t offset = 0;     // p_offset
  uint64_t available = 0;  // bytes really present: min(filesz, file size - offset)
  uint32_t flags = 0;      // PF_R | PF_W | PF_X
  uint64_t align = 0;
  uint64_t end() const { return vaddr + memsz; }
};

class CoreFile : public Target {
 public:
  // Throws nsc::BadInput "core_open PATH: <why>" when the file is not a usable core.
  CoreFile(const std::string& path, const std::string& executable_hint);
  ~CoreFile() override;
  CoreFile(const CoreFile&) = delete;
  CoreFile& operator=(const CoreFile&) = delete;

  std::string describe() const override { return "core " + path_; }
  bool is_core() const override { return true; }
  int pid() const override { return notes_.pid; }
  bool read(uint64_t addr, void* buf, size_t len, ReadError* error) override;
  const uint8_t* direct(uint64_t addr, size_t len) override;
  const std::vector<MemoryRegion>& regions() const override { return regions_; }
  const std::vector<MappedFile>& mapped_files() const override { return notes_.files; }
  std::vector<ThreadInfo> threads() override { return notes_.threads; }
  std::string executable() const override { return executable_; }
  std::vector<std::string> warnings() const override { return warnings_; }
  std::vector<uint8_t> auxv() const override { return notes_.auxv_bytes; }
  Elf* core_elf() const override { return elf_; }
  std::optional<SignalInfo> fatal_signal() const override;
  std::string fatal_signal_unavailable() const override;

  // For tools that rewrite the core (slice): the raw pieces.
  const std::string& path() const { return path_; }
  const std::vector<CoreSegment>& segments() const { return segments_; }  // sorted by vaddr
  const CoreNotes& notes() const { return notes_; }
  // Each PT_NOTE's bytes as stored (clipped to the file), in program-header order.
  const std::vector<std::vector<uint8_t>>& note_segments() const { return note_segments_; }
  const uint8_t* file_bytes() const { return file_bytes_; }
  uint64_t file_size() const { return file_size_; }
  bool truncated() const { return truncated_; }

 private:
  void open_elf();
  void check_header();
  void load_program_headers();
  void add_segment(uint64_t vaddr, uint64_t memsz, uint64_t filesz, uint64_t offset,
                   uint32_t flags, uint64_t align);
  void add_note_segment(uint64_t offset, uint64_t filesz);
  void build_regions();
  void attach_file_paths();
  void add_undumped_file_regions();
  void choose_executable(const std::string& hint);
  const CoreSegment* segment_at(uint64_t addr) const;
  [[noreturn]] void fail(const std::string& why) const;

  std::string path_;
  int fd_ = -1;
  Elf* elf_ = nullptr;
  const uint8_t* file_bytes_ = nullptr;
  uint64_t file_size_ = 0;
  bool truncated_ = false;
  std::vector<CoreSegment> segments_;
  std::vector<std::vector<uint8_t>> note_segments_;
  std::vector<MemoryRegion> regions_;
  CoreNotes notes_;
  std::vector<MappedFile> sorted_files_;  // NT_FILE sorted by start
  std::string executable_;
  std::vector<std::string> warnings_;
};

// Opens a core file. executable_hint ("" if none) overrides the executable path
// found in the core. Throws nsc::BadInput naming the file when unusable.
std::unique_ptr<Target> open_core(const std::string& path, const std::string& executable_hint);
std::unique_ptr<CoreFile> open_core_file(const std::string& path,
                                         const std::string& executable_hint);

}  // namespace nsc
