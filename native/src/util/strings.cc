#include "util/strings.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace nsc {

std::string hex(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

bool parse_u64(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  std::string copy(text);
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(copy.c_str(), &end, 0);
  if (errno != 0 || end == copy.c_str() || *end != '\0' || copy[0] == '-') return false;
  *out = value;
  return true;
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid.
static size_t utf8_sequence_length(std::string_view s, size_t i) {
  unsigned char lead = static_cast<unsigned char>(s[i]);
  size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3
                 : (lead >> 3) == 0x1e ? 4 : 0;
  if (length == 0 || i + length > s.size()) return 0;
  for (size_t k = 1; k < length; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  if (length == 2 && lead < 0xc2) return 0;  // overlong
  // RFC 3629: no overlong 3/4-byte forms, no UTF-16 surrogates, nothing above U+10FFFF
  // (strict JSON writers reject them: a hostile name would abort the whole document).
  unsigned char second = length > 2 ? static_cast<unsigned char>(s[i + 1]) : 0x80;
  if ((lead == 0xe0 && second < 0xa0) || (lead == 0xed && second > 0x9f) ||
      (lead == 0xf0 && second < 0x90) || (lead == 0xf4 && second > 0x8f) || lead > 0xf4)
    return 0;
  return length;
}

// Printable ASCII but the backslash: written as it is (a report's text is almost all of it).
static bool plain_for_terminal(unsigned char c) { return c >= 0x20 && c < 0x7f && c != '\\'; }

void append_escaped_for_terminal(std::string* out, std::string_view untrusted) {
  for (size_t i = 0; i < untrusted.size();) {
    size_t plain = i;
    while (plain < untrusted.size() && plain_for_terminal(static_cast<unsigned char>(untrusted[plain]))) ++plain;
    out->append(untrusted.data() + i, plain - i);
    if ((i = plain) == untrusted.size()) break;
    unsigned char c = static_cast<unsigned char>(untrusted[i]);
    size_t length = utf8_sequence_length(untrusted, i);
    bool control = c < 0x20 || c == 0x7f;
    bool c1_control = length == 2 && c == 0xc2 &&
                      static_cast<unsigned char>(untrusted[i + 1]) < 0xa0;
    if (c == '\\') {
      *out += "\\\\";
      i += 1;
    } else if (length == 0 || control || c1_control) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02x", c);
      *out += buffer;
      i += 1;
    } else {
      out->append(untrusted.substr(i, length));
      i += length;
    }
  }
}

std::string escape_for_terminal(std::string_view untrusted) {
  std::string out;
  out.reserve(untrusted.size());
  append_escaped_for_terminal(&out, untrusted);
  return out;
}

std::string valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    size_t length = utf8_sequence_length(bytes, i);
    if (length == 0) {
      out += "\xef\xbf\xbd";
      i += 1;
    } else {
      out.append(bytes.substr(i, length));
      i += length;
    }
  }
  return out;
}

std::vector<std::string> split_colon_list(std::string_view list) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = std::min(list.find(':', start), list.size());
    if (end > start) parts.emplace_back(list.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace nsc
