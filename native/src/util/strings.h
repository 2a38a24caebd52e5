// Small string helpers shared by every layer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nsc {

std::string hex(uint64_t value);                    // "0x7f12ab" (lower case)
bool parse_u64(std::string_view text, uint64_t* out);  // decimal or 0x-hex
// Makes a string from target memory safe for a terminal: control bytes,
// DEL and invalid UTF-8 become \xNN escapes; backslash becomes "\\".
std::string escape_for_terminal(std::string_view untrusted);
void append_escaped_for_terminal(std::string* out, std::string_view untrusted);  // the same, appended
// Makes arbitrary bytes valid UTF-8 for JSON (invalid bytes become U+FFFD).
std::string valid_utf8(std::string_view bytes);
// "a::b:" -> {"a", "b"}: a PATH-like list, empty entries dropped.
std::vector<std::string> split_colon_list(std::string_view list);

}  // namespace nsc
