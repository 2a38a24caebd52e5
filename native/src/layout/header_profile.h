// Layout profiles built from NCCL's source headers (scripts/nccl-layout-from-headers.sh), for a
// stripped libnccl with neither DWARF nor a build-id profile. They are keyed by NCCL version
// (file nccl-<version>.headers.json in a profile directory), carry no build-id and no symbols
// (the header TU's symbols are not the library's), and are only trusted after their struct
// sizes were checked against the target (ncclComm's endMagic sits where the profile says).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "layout/layout.h"

namespace nsc {

// LayoutProfile::constants key marking a header-built profile; its value is the CUDA version of
// the CUDA headers it was compiled with, as CUDA_VERSION spells it (13000), or 1 when unknown.
constexpr const char* kHeaderProfileConstant = "NCCLSCOPE_FROM_HEADERS";

bool is_header_profile(const LayoutProfile& profile);

// The extraction of a header TU made into a header profile: build-id and symbols dropped, the
// marker added. version_string: the TU's "2.28.9+cuda13.0". Throws nsc::BadInput when the TU
// has no NCCL version string.
LayoutProfile as_header_profile(LayoutProfile profile, const std::string& version_string);

// "nccl-2.28.9.headers.json"; "" for a version that is not digits and dots.
std::string header_profile_file_name(const std::string& nccl_version);

// The first valid header profile for nccl_version ("2.28.3") in dirs; files that are corrupt,
// not header profiles or of another version are skipped with a note.
std::optional<LayoutProfile> load_header_profile(const std::string& nccl_version,
                                                 const std::vector<std::string>& dirs,
                                                 std::vector<std::string>* notes);

}  // namespace nsc
