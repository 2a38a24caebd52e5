// Finds the target's libnccl (from its mappings) and the local file to read
// its DWARF from, the way gdb finds shared libraries of a core; checks GNU build-ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "target/target.h"
#include "util/errors.h"

namespace nsc {

struct LibrarySearch {
  std::string sysroot;                         // gdb's `set sysroot` ("" = none)
  std::vector<std::string> solib_search_path;  // gdb's `set solib-search-path`
  bool force_mismatch = false;                 // accept a file whose build-id differs
  // Drop a file whose build-id differs instead of refusing it (local_path "",
  // local_file_missing says why): a profile keyed by the target's build-id may decode.
  bool mismatch_leaves_no_file = false;
};

struct ResolvedLibrary {
  std::string path_in_target;  // as mapped in the target
  std::string local_path;      // file to read here (DWARF, symbols)
  uint64_t load_bias = 0;      // add to link-time addresses
  uint64_t mapping_start = 0;  // start of the file-offset-0 mapping
  std::string build_id_in_target;              // from target memory; "" when unavailable
  std::string build_id_in_target_unavailable;  // why it is missing
  std::string build_id_of_file;                   // "" when the file has none
  std::vector<std::string> candidates_tried;      // local paths considered, in order
  std::string warning;                            // "" or one line (mismatch forced, unchecked)
  std::string local_file_missing;  // "" or why no local file was found (then local_path is "")
};

// True for "libnccl.so", "libnccl.so.2", "libnccl.so.2.28.9" (basename match).
bool is_nccl_library_path(const std::string& path);

// libnccl of the target. Throws nsc::BadInput: "<target>: no NCCL library mapped", or
// a build-id mismatch naming both ids and the file. No local file is not an error
// (local_path "", local_file_missing says why): a profile by build-id may do.
ResolvedLibrary resolve_nccl_library(Target& target, const LibrarySearch& options);
// Every distinct libnccl the target maps (by path), in mapping order, each resolved and
// checked by its own build-id (issue 17: a preloaded one beside the one the program dlopens).
// Throws NoNcclLibrary when there is none; otherwise as resolve_nccl_library.
std::vector<ResolvedLibrary> resolve_nccl_libraries(Target& target, const LibrarySearch& options);
// What resolve_nccl_library throws when the target maps no libnccl at all.
class NoNcclLibrary : public BadInput {
 public:
  using BadInput::BadInput;
};

// Same for any mapped library identified by its path in the target.
ResolvedLibrary resolve_mapped_library(Target& target, const std::string& path_in_target,
                                       const LibrarySearch& options);

// Local paths to try for a library the target maps at path_in_target, in gdb's order.
std::vector<std::string> local_candidates(const Target& target, const MappedFile& mapping,
                                          const LibrarySearch& options);

}  // namespace nsc
