// The one blocked-in classifier for frames unwound elsewhere (gdb's unwinder in the gdb
// extension, through the C API): same classes, same rules as the library's own stacks.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nsc {

// blocked_in of each entry of `threads`: [{"name": "...", "frames": [{"function", "module",
// "pc", "offset"}, ...]}, ...] (the "threads" shape of docs/schema-state.md; a missing or null
// field counts as unknown). In order; "unknown" for an entry that is not an object.
std::vector<std::string> classify_json_threads(const nlohmann::json& threads);

}  // namespace nsc
