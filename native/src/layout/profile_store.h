// Where layout profiles live and which one a library gets.
//
// Search order for <build-id>.json:
//   1. directories the caller gives (--profile-path DIR:DIR),
//   2. $NCCLSCOPE_PROFILE_PATH (colon-separated),
//   3. profiles shipped with ncclscope: <dir>/../share/ncclscope/profiles, where <dir>
//      holds the running program or libncclscope.so (an install, or the build tree, which
//      copies native/profiles there: a moved build finds them), then the source tree's
//      native/profiles when it still exists,
//   4. the user cache: $XDG_CACHE_HOME/ncclscope/profiles or ~/.cache/ncclscope/profiles.
// $NCCLSCOPE_NO_SHIPPED_PROFILES (non-empty) leaves out 3., so only the profiles named are used.
// DWARF extractions are saved to the user cache (unless $NCCLSCOPE_NO_PROFILE_CACHE
// is set to a non-empty value), so the next run of the same build is instant.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "layout/layout.h"

namespace nsc {

std::string shipped_profile_dir();      // NCCLSCOPE_SOURCE_DIR "/native/profiles"; "" when gone
std::string installed_profile_dir();    // <own dir>/../share/ncclscope/profiles; "" when absent
std::string user_profile_cache_dir();   // "" when neither XDG_CACHE_HOME nor HOME is set
// The full search path, caller directories first; duplicates and "" removed.
std::vector<std::string> profile_search_dirs(const std::vector<std::string>& caller_dirs);

// True for 2..128 lower-case hex digits: safe to use as a file name.
bool is_valid_build_id(const std::string& build_id);

// Profile files named <build_id>.json in `dirs`, in order (existing files only).
std::vector<std::string> find_profile_files(const std::string& build_id,
                                            const std::vector<std::string>& dirs);

// The first valid profile for build_id in `dirs`; files that are corrupt or
// name another build-id are skipped, each with a note appended to *notes.
std::optional<LayoutProfile> load_profile_by_build_id(const std::string& build_id,
                                                      const std::vector<std::string>& dirs,
                                                      std::vector<std::string>* notes);

// Writes the profile to the user cache as <build-id>.json (creating the
// directory) and returns the path. Throws nsc::BadInput when it cannot.
std::string save_to_cache(const LayoutProfile& profile);

// The layout of one libnccl: a profile with the build-id first (near
// instant), else the DWARF of library_path (then cached).
//   build_id_expected: the id seen in the target ("" = read it from the file);
//   library_path: local file ("" when none was found);
//   search_path: caller profile directories (the rest of the order is added).
// *why (if not null) receives one line saying what was used and what was skipped.
// Throws nsc::BadInput (one line: library, build-id, version, how to make a
// profile) when neither a profile nor DWARF is available.
LayoutProfile load_layout_for_library(const std::string& library_path,
                                      const std::string& build_id_expected,
                                      const std::vector<std::string>& search_path,
                                      std::string* why);

}  // namespace nsc
