// Small libelf helpers on ELF files on disk (libnccl.so.2 and friends): GNU
// build-id, presence of DWARF, symbol values and the embedded NCCL version.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

typedef struct Elf Elf;

namespace nsc {

struct ElfSymbolValue {
  uint64_t value = 0;  // link-time address; offset in the TLS block for TLS symbols
  uint64_t size = 0;
  bool is_tls = false;
};

// An ELF file opened read-only over mmap. Throws nsc::BadInput when the file
// cannot be opened or is not ELF ("elf_open PATH: not an ELF file").
class ElfFile {
 public:
  explicit ElfFile(const std::string& path);
  ~ElfFile();
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  const std::string& path() const { return path_; }
  Elf* elf() const { return elf_; }

  std::optional<std::string> build_id() const;  // lower-case hex
  bool has_section(const std::string& name) const;
  // .debug_info, plain or SHF_COMPRESSED, or old-style GNU-compressed .zdebug_info (libdw reads all).
  bool has_debug_info() const { return has_section(".debug_info") || has_section(".zdebug_info"); }
  // Values of the named symbols from .symtab, else .dynsym. A C++ file-static
  // symbol matches its mangled form (_ZL18ncclLastProxyState). Absent names
  // are left out.
  std::map<std::string, ElfSymbolValue> symbols(const std::vector<std::string>& names) const;
  // "2.28.9+cuda13.0" from the "NCCL version ..." string in .rodata.
  std::optional<std::string> nccl_version_string() const;

 private:
  std::string path_;
  int fd_ = -1;
  Elf* elf_ = nullptr;
};

std::optional<std::string> read_build_id(const std::string& path);  // nullopt if none/unreadable
bool has_debug_info(const std::string& path);                      // false if unreadable
// Throws nsc::BadInput when the file cannot be opened or is not ELF. Answered once per run for
// one file (path, inode, size, mtime) and one list of names; later calls get the same answer.
std::map<std::string, ElfSymbolValue> read_symbols(const std::string& path,
                                                   const std::vector<std::string>& names);
std::optional<std::string> nccl_version_string(const std::string& path);
// "2.28.9+cuda13.0" -> "2.28.9" (the part before '+' or a space).
std::string nccl_version_number(const std::string& version_string);

}  // namespace nsc
