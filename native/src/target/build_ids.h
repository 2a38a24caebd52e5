// GNU build-ids: of ELF objects as mapped in the target (read from the target's
// memory: Ehdr -> Phdrs -> PT_NOTE -> NT_GNU_BUILD_ID at the file-offset-0
// mapping), and of files on disk (libelf).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "target/target.h"

namespace nsc {

struct MappedObjectBuildId {
  std::string path;                     // as the target names it
  uint64_t mapping_start = 0;           // start of its mapping with file offset 0
  uint64_t load_bias = 0;               // mapping_start minus the link-time address there
  std::optional<std::string> build_id;  // lower-case hex, when readable
  std::string unavailable_reason;       // why build_id is missing ("0x..: not saved in core")
};

// The build-id of the object whose file-offset-0 mapping starts at mapping_start.
MappedObjectBuildId build_id_in_memory(Target& target, const std::string& path,
                                       uint64_t mapping_start);

// Every mapped ELF object of the target (one entry per path; data files whose
// first bytes are readable but not ELF are left out).
std::vector<MappedObjectBuildId> mapped_object_build_ids(Target& target);

// The file-offset-0 mapping of `path` in the target, if any.
std::optional<MappedFile> first_mapping_of(const Target& target, const std::string& path);

// GNU build-id of a file on disk, lower-case hex; nullopt (and *why) when none.
std::optional<std::string> build_id_of_file(const std::string& path, std::string* why = nullptr);

// Finds NT_GNU_BUILD_ID in a sequence of ELF notes; lower-case hex.
std::optional<std::string> find_gnu_build_id(const uint8_t* notes, size_t size);

}  // namespace nsc
