#include "target/build_ids.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "util/input_file.h"
#include "util/strings.h"

namespace nsc {
namespace {

constexpr size_t kMaxNoteBytes = 64 * 1024;  // build-id notes are tiny; cap odd PT_NOTEs
constexpr uint16_t kMaxProgramHeaders = 256;

std::string hex_bytes(const uint8_t* bytes, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (size_t i = 0; i < size; ++i) {
    text += digits[bytes[i] >> 4];
    text += digits[bytes[i] & 15];
  }
  return text;
}

bool is_device_or_shm(const std::string& path) {
  return path.rfind("/dev/", 0) == 0 || path.rfind("/SYSV", 0) == 0 ||
         path.rfind("/memfd:", 0) == 0;
}

// Reads the program headers; fills result->unavailable_reason on failure.
bool read_program_headers(Target& target, const Elf64_Ehdr& header, MappedObjectBuildId* result,
                          std::vector<Elf64_Phdr>* phdrs) {
  if (header.e_phnum == 0 || header.e_phnum > kMaxProgramHeaders ||
      header.e_phentsize != sizeof(Elf64_Phdr)) {
    result->unavailable_reason = "implausible program header table at " + hex(result->mapping_start);
    return false;
  }
  phdrs->resize(header.e_phnum);
  ReadError error;
  if (target.read(result->mapping_start + header.e_phoff, phdrs->data(),
                  phdrs->size() * sizeof(Elf64_Phdr), &error))
    return true;
  result->unavailable_reason = "program headers unreadable: " + error.message();
  return false;
}

uint64_t load_bias_of(const std::vector<Elf64_Phdr>& phdrs, uint64_t mapping_start) {
  for (const Elf64_Phdr& phdr : phdrs)
    if (phdr.p_type == PT_LOAD) return mapping_start - (phdr.p_vaddr - phdr.p_offset);
  return mapping_start;
}

void find_build_id_note(Target& target, const std::vector<Elf64_Phdr>& phdrs,
                        MappedObjectBuildId* result) {
  result->unavailable_reason = "no NT_GNU_BUILD_ID note";
  for (const Elf64_Phdr& phdr : phdrs) {
    if (phdr.p_type != PT_NOTE || phdr.p_memsz == 0) continue;
    std::vector<uint8_t> notes(std::min<uint64_t>(phdr.p_memsz, kMaxNoteBytes));
    ReadError error;
    if (!target.read(result->load_bias + phdr.p_vaddr, notes.data(), notes.size(), &error)) {
      result->unavailable_reason = "build-id note unreadable: " + error.message();
      continue;
    }
    if ((result->build_id = find_gnu_build_id(notes.data(), notes.size()))) return;
  }
}

std::optional<std::string> build_id_from_elf(Elf* elf) {
  size_t count = 0;
  if (elf_getphdrnum(elf, &count) == 0) {
    for (size_t i = 0; i < count; ++i) {
      GElf_Phdr phdr;
      if (!gelf_getphdr(elf, static_cast<int>(i), &phdr) || phdr.p_type != PT_NOTE) continue;
      Elf_Data* data = elf_getdata_rawchunk(elf, phdr.p_offset, phdr.p_filesz, ELF_T_NHDR);
      if (data && data->d_buf)
        if (auto id = find_gnu_build_id(static_cast<uint8_t*>(data->d_buf), data->d_size)) return id;
    }
  }
  // Separate debug files have no PT_NOTE in their headers: try the sections.
  for (Elf_Scn* section = elf_nextscn(elf, nullptr); section; section = elf_nextscn(elf, section)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(section, &shdr) || shdr.sh_type != SHT_NOTE) continue;
    Elf_Data* data = elf_rawdata(section, nullptr);
    if (data && data->d_buf)
      if (auto id = find_gnu_build_id(static_cast<uint8_t*>(data->d_buf), data->d_size)) return id;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> find_gnu_build_id(const uint8_t* notes, size_t size) {
  auto align4 = [](size_t n) { return (n + 3) & ~size_t{3}; };
  size_t at = 0;
  while (at + sizeof(Elf64_Nhdr) <= size) {
    Elf64_Nhdr header;
    std::memcpy(&header, notes + at, sizeof header);
    size_t desc_at = at + sizeof header + align4(header.n_namesz);
    if (header.n_namesz > size || header.n_descsz > size || desc_at + header.n_descsz > size)
      return std::nullopt;
    if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 &&
        std::memcmp(notes + at + sizeof header, "GNU", 4) == 0 && header.n_descsz > 0)
      return hex_bytes(notes + desc_at, header.n_descsz);
    at = desc_at + align4(header.n_descsz);
  }
  return std::nullopt;
}

MappedObjectBuildId build_id_in_memory(Target& target, const std::string& path,
                                       uint64_t mapping_start) {
  MappedObjectBuildId result;
  result.path = path;
  result.mapping_start = result.load_bias = mapping_start;
  Elf64_Ehdr header;
  ReadError error;
  if (!target.read_value(mapping_start, &header, &error)) {
    result.unavailable_reason = "ELF header unreadable: " + error.message();
    return result;
  }
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) {
    result.unavailable_reason = "no 64-bit ELF header at " + hex(mapping_start);
    return result;
  }
  std::vector<Elf64_Phdr> phdrs;
  if (!read_program_headers(target, header, &result, &phdrs)) return result;
  result.load_bias = load_bias_of(phdrs, mapping_start);
  find_build_id_note(target, phdrs, &result);
  if (result.build_id) result.unavailable_reason.clear();
  return result;
}

std::optional<MappedFile> first_mapping_of(const Target& target, const std::string& path) {
  for (const MappedFile& file : target.mapped_files())
    if (file.path == path && file.file_offset == 0) return file;
  return std::nullopt;
}

std::vector<MappedObjectBuildId> mapped_object_build_ids(Target& target) {
  std::vector<MappedObjectBuildId> objects;
  std::set<std::string> seen;
  for (const MappedFile& file : target.mapped_files()) {
    if (file.file_offset != 0 || is_device_or_shm(file.path) || !seen.insert(file.path).second)
      continue;
    MappedObjectBuildId object = build_id_in_memory(target, file.path, file.start);
    bool readable_but_not_elf = object.unavailable_reason.rfind("no 64-bit ELF header", 0) == 0;
    if (!readable_but_not_elf) objects.push_back(std::move(object));
  }
  return objects;
}

std::optional<std::string> build_id_of_file(const std::string& path, std::string* why) {
  InputFile file = try_open_regular_file(path, why);
  if (!file.ok()) return std::nullopt;
  int fd = file.fd();
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  std::optional<std::string> id;
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    if (why) *why = "not an ELF file";
  } else if (!(id = build_id_from_elf(elf)) && why) {
    *why = "no GNU build-id note";
  }
  if (elf) elf_end(elf);
  return id;
}

}  // namespace nsc
