#include "layout/elf_file.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string_view>
#include <tuple>

#include "util/errors.h"
#include "util/file_identity.h"
#include "util/input_file.h"

namespace nsc {

namespace {

std::string hex_bytes(const unsigned char* bytes, size_t length) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  text.reserve(length * 2);
  for (size_t i = 0; i < length; ++i) {
    text.push_back(digits[bytes[i] >> 4]);
    text.push_back(digits[bytes[i] & 0xf]);
  }
  return text;
}

// Looks for an NT_GNU_BUILD_ID note in one note buffer.
std::optional<std::string> build_id_in_notes(Elf_Data* data) {
  if (data == nullptr) return std::nullopt;
  GElf_Nhdr header;
  size_t name_offset = 0, desc_offset = 0;
  size_t offset = 0;
  while (offset < data->d_size &&
         (offset = gelf_getnote(data, offset, &header, &name_offset, &desc_offset)) > 0) {
    const char* base = static_cast<const char*>(data->d_buf);
    if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 &&
        std::memcmp(base + name_offset, "GNU", 4) == 0 && header.n_descsz > 0)
      return hex_bytes(reinterpret_cast<const unsigned char*>(base + desc_offset), header.n_descsz);
  }
  return std::nullopt;
}

// True when `symbol` names `wanted` plainly or as a mangled file-static (_ZL<len><name>).
bool symbol_matches(std::string_view symbol, const std::string& wanted) {
  if (symbol == wanted) return true;
  std::string mangled = "_ZL" + std::to_string(wanted.size()) + wanted;
  return symbol == mangled;
}

Elf_Scn* find_section(Elf* elf, const std::string& wanted, GElf_Shdr* header_out) {
  size_t string_index = 0;
  if (elf_getshdrstrndx(elf, &string_index) != 0) return nullptr;
  for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
       section = elf_nextscn(elf, section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr) continue;
    const char* name = elf_strptr(elf, string_index, header.sh_name);
    if (name != nullptr && wanted == name) {
      if (header_out != nullptr) *header_out = header;
      return section;
    }
  }
  return nullptr;
}

void collect_symbols(Elf* elf, Elf64_Word section_type, const std::vector<std::string>& names,
                     std::map<std::string, ElfSymbolValue>* found) {
  for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
       section = elf_nextscn(elf, section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr || header.sh_type != section_type) continue;
    Elf_Data* data = elf_getdata(section, nullptr);
    if (data == nullptr || header.sh_entsize == 0) continue;
    size_t count = header.sh_size / header.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym symbol;
      if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr) break;
      if (symbol.st_shndx == SHN_UNDEF) continue;
      const char* raw_name = elf_strptr(elf, header.sh_link, symbol.st_name);
      if (raw_name == nullptr || raw_name[0] == '\0') continue;
      for (const std::string& wanted : names) {
        if (found->count(wanted) || !symbol_matches(raw_name, wanted)) continue;
        ElfSymbolValue value;
        value.value = symbol.st_value;
        value.size = symbol.st_size;
        value.is_tls = GELF_ST_TYPE(symbol.st_info) == STT_TLS;
        (*found)[wanted] = value;
      }
    }
  }
}

// Finds "NCCL version X" (X starting with a digit) and returns X up to a NUL or space.
std::optional<std::string> version_in_bytes(const char* bytes, size_t length) {
  static const std::string_view marker = "NCCL version ";
  std::string_view haystack(bytes, length);
  for (size_t at = haystack.find(marker); at != std::string_view::npos;
       at = haystack.find(marker, at + 1)) {
    size_t start = at + marker.size();
    if (start >= length || bytes[start] < '0' || bytes[start] > '9') continue;
    size_t end = start;
    while (end < length && end - start < 64 && bytes[end] != '\0' && bytes[end] != ' ' &&
           bytes[end] != '\n' && bytes[end] != '%')
      ++end;
    return std::string(bytes + start, end - start);
  }
  return std::nullopt;
}

}  // namespace

ElfFile::ElfFile(const std::string& path) : path_(path) {
  elf_version(EV_CURRENT);
  fd_ = open_regular_file(path, "elf_open " + path).release();
  elf_ = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
  if (elf_ == nullptr || elf_kind(elf_) != ELF_K_ELF) {
    if (elf_ != nullptr) elf_end(elf_);
    ::close(fd_);
    elf_ = nullptr;
    fd_ = -1;
    throw BadInput("elf_open " + path + ": not an ELF file");
  }
}

ElfFile::~ElfFile() {
  if (elf_ != nullptr) elf_end(elf_);
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::string> ElfFile::build_id() const {
  for (Elf_Scn* section = elf_nextscn(elf_, nullptr); section != nullptr;
       section = elf_nextscn(elf_, section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr || header.sh_type != SHT_NOTE) continue;
    if (auto id = build_id_in_notes(elf_getdata(section, nullptr))) return id;
  }
  // No section headers (e.g. a file rebuilt from memory): try PT_NOTE segments.
  size_t segment_count = 0;
  if (elf_getphdrnum(elf_, &segment_count) != 0) return std::nullopt;
  for (size_t i = 0; i < segment_count; ++i) {
    GElf_Phdr segment;
    if (gelf_getphdr(elf_, static_cast<int>(i), &segment) == nullptr ||
        segment.p_type != PT_NOTE)
      continue;
    Elf_Data* data = elf_getdata_rawchunk(elf_, segment.p_offset, segment.p_filesz, ELF_T_NHDR);
    if (auto id = build_id_in_notes(data)) return id;
  }
  return std::nullopt;
}

bool ElfFile::has_section(const std::string& name) const {
  GElf_Shdr header;
  Elf_Scn* section = find_section(elf_, name, &header);
  return section != nullptr && header.sh_type != SHT_NOBITS && header.sh_size > 0;
}

std::map<std::string, ElfSymbolValue> ElfFile::symbols(
    const std::vector<std::string>& names) const {
  std::map<std::string, ElfSymbolValue> found;
  collect_symbols(elf_, SHT_SYMTAB, names, &found);
  if (found.size() < names.size()) collect_symbols(elf_, SHT_DYNSYM, names, &found);
  return found;
}

std::optional<std::string> ElfFile::nccl_version_string() const {
  GElf_Shdr header;
  if (Elf_Scn* rodata = find_section(elf_, ".rodata", &header)) {
    Elf_Data* data = elf_rawdata(rodata, nullptr);
    if (data != nullptr && data->d_buf != nullptr)
      return version_in_bytes(static_cast<const char*>(data->d_buf), data->d_size);
  }
  // No .rodata section header: search the whole file image.
  size_t size = 0;
  const char* image = elf_rawfile(elf_, &size);
  if (image == nullptr) return std::nullopt;
  return version_in_bytes(image, size);
}

std::optional<std::string> read_build_id(const std::string& path) {
  try {
    return ElfFile(path).build_id();
  } catch (const BadInput&) {
    return std::nullopt;
  }
}

bool has_debug_info(const std::string& path) {
  try {
    return ElfFile(path).has_debug_info();
  } catch (const BadInput&) {
    return false;
  }
}

std::map<std::string, ElfSymbolValue> read_symbols(const std::string& path,
                                                   const std::vector<std::string>& names) {
  // A pass over libtorch_cuda.so's .symtab (10^5-10^6 symbols) per rank was the cost: once per
  // file and names per run (issue 35).
  static std::mutex mutex;
  static std::map<std::tuple<std::string, FileIdentity, std::vector<std::string>>, std::map<std::string, ElfSymbolValue>> found;
  std::optional<FileIdentity> identity = file_identity(path);
  if (!identity) return ElfFile(path).symbols(names);  // throws the one-line reason
  auto key = std::make_tuple(path, *identity, names);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto cached = found.find(key);
    if (cached != found.end()) return cached->second;
  }
  std::map<std::string, ElfSymbolValue> symbols = ElfFile(path).symbols(names);
  std::lock_guard<std::mutex> lock(mutex);
  return found.emplace(std::move(key), std::move(symbols)).first->second;
}

std::optional<std::string> nccl_version_string(const std::string& path) {
  try {
    return ElfFile(path).nccl_version_string();
  } catch (const BadInput&) {
    return std::nullopt;
  }
}

std::string nccl_version_number(const std::string& version_string) {
  size_t end = version_string.find_first_of("+ ");
  return version_string.substr(0, end);
}

}  // namespace nsc
