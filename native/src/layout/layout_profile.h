// Layout profiles: a LayoutProfile as JSON (schema "ncclscope.layout/1"),
// keyed by GNU build-id, so a stripped libnccl of a known build decodes too.
//
//   {"schema":"ncclscope.layout/1","build_id":"9fcf...","nccl_version":"2.28.9",
//    "library":"/usr/lib/libnccl.so.2",
//    "structs":{"ncclComm":{"size":1082968,"members":[
//        {"name":"rank","offset":1066192,"size":4,"kind":"signed","type":"int"},
//        {"name":"channels","offset":160,"size":26112,"kind":"struct","type":"ncclChannel",
//         "element_size":408,"dims":[64]}, ...]}, ...},
//    "enums":{"ncclResult_t":{"size":4,"values":[[0,"ncclSuccess"], ...]}, ...},
//    "symbols":{"ncclComms":191027272, "ncclGroupDepth@tls":4164, ...},
//    "constants":{"MAXCHANNELS":64, ...}}
//
// Members omit defaults: "element_size" and "dims" only for arrays, "union"
// only when true, "bit_size"/"bit_offset" only for bitfields, "type" when empty.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "layout/layout.h"
#include "util/schemas.h"

namespace nsc {

nlohmann::json layout_profile_to_json(const LayoutProfile& profile);
// Compact JSON text, one member per line (small, and diffs well in git).
std::string format_layout_profile(const LayoutProfile& profile);
// Writes atomically (temporary file + rename). Throws nsc::BadInput on I/O errors.
void write_layout_profile(const LayoutProfile& profile, const std::string& path);

// Validate everything; throw nsc::BadInput "layout profile ORIGIN: bad key K: why".
LayoutProfile layout_profile_from_json(const nlohmann::json& document, const std::string& origin);
LayoutProfile parse_layout_profile(const std::string& text, const std::string& origin);
// Reads and validates a file; source becomes "profile:<path>". A file is parsed once per run
// (per path, device, inode, size and mtime): later calls get a copy of the first parse.
LayoutProfile read_layout_profile(const std::string& path);
// How many times read_layout_profile parsed `path` in this run (tests).
size_t layout_profile_parses(const std::string& path);

}  // namespace nsc
