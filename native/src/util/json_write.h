// The report written as `json::dump(2)` writes it (error handler "replace", no ASCII
// escaping), byte for byte, but faster: plain strings are copied whole instead of decoded byte
// by byte, and the elements of big arrays (100,000 ranks' graph nodes, communicators, inputs)
// are written over the CPUs, a window at a time, so that memory stays a few MB above the
// document's (docs/triage.md "Scale"). A raw value (json_raw.h) is written as its value.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace nsc {

// Appends `value` to `out` exactly as value.dump(2, ' ', false, replace) would, at
// `current_indent` (the indent of the line it starts on, for a nested value).
void append_pretty_json(const nlohmann::json& value, std::string* out, unsigned current_indent = 0);

// Writes `value` to `file` as value.dump(2, ' ', false, replace); arrays of at least
// `parallel_from` elements in its first levels are written over the CPUs. False when a write
// failed.
bool write_pretty_json(const nlohmann::json& value, std::FILE* file, size_t parallel_from = 4096);

}  // namespace nsc
