// Test helpers that edit ELF files in place (another build of the same file).
#pragma once

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <string>

#include <boost/test/unit_test.hpp>

namespace nsc_test {

// Flips the first byte of the GNU build-id note of an ELF file in place.
inline void corrupt_build_id(const std::string& path) {
  elf_version(EV_CURRENT);
  int fd = open(path.c_str(), O_RDWR);
  BOOST_REQUIRE(fd >= 0);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  size_t section_names = 0;
  elf_getshdrstrndx(elf, &section_names);
  off_t id_offset = -1;
  for (Elf_Scn* section = nullptr; (section = elf_nextscn(elf, section)) != nullptr;) {
    GElf_Shdr header;
    gelf_getshdr(section, &header);
    const char* name = elf_strptr(elf, section_names, header.sh_name);
    if (name != nullptr && std::string(name) == ".note.gnu.build-id")
      id_offset = static_cast<off_t>(header.sh_offset) + 16;  // Nhdr + "GNU\0"
  }
  elf_end(elf);
  BOOST_REQUIRE(id_offset > 0);
  unsigned char byte = 0;
  BOOST_REQUIRE(pread(fd, &byte, 1, id_offset) == 1);
  byte ^= 0xff;
  BOOST_REQUIRE(pwrite(fd, &byte, 1, id_offset) == 1);
  close(fd);
}

}  // namespace nsc_test
