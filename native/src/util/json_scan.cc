#include "util/json_scan.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <string>
#include <vector>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace nsc {
namespace {

using Sax = nlohmann::json::json_sax_t;

constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

// Bytes a string holds as they are: printable ASCII but the quote and the backslash.
struct PlainBytes {
  bool plain[256] = {};
  PlainBytes() {
    for (int c = 0x20; c < 0x80; ++c) plain[c] = c != '"' && c != '\\';
  }
};
const PlainBytes kPlain;

// Eight bytes as a little-endian word (the first byte lowest), and a word's first nonzero byte.
uint64_t load_word(const char* at) {
  uint64_t word;
  std::memcpy(&word, at, sizeof word);
  if constexpr (!kLittleEndian) word = __builtin_bswap64(word);
  return word;
}
size_t first_nonzero_byte(uint64_t word) { return static_cast<size_t>(__builtin_ctzll(word)) / 8; }

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

bool is_whitespace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

#ifdef __SSE2__
// Sixteen bytes' marks, one bit a byte (the first byte lowest).
unsigned whitespace_marks(__m128i bytes) {
  __m128i space = _mm_or_si128(_mm_cmpeq_epi8(bytes, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\n')));
  __m128i other = _mm_or_si128(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('\r')), _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\t')));
  return static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(space, other)));
}
// A quote, a backslash, or a byte below 0x20 or at or above 0x80 (negative as a signed byte).
unsigned unplain_marks(__m128i bytes) {
  __m128i quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('"'));
  __m128i backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\'));
  __m128i outside = _mm_cmplt_epi8(bytes, _mm_set1_epi8(0x20));
  return static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), outside)));
}
__m128i load16(const char* at) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at)); }
#endif

// How much whitespace [at, end) starts with: pretty-printed text is mostly a newline and an
// indent before each key, read sixteen bytes at a time where the CPU can.
size_t leading_whitespace(const char* at, const char* end) {
  const char* q = at;
#ifdef __SSE2__
  for (; end - q >= 16; q += 16)
    if (unsigned others = ~whitespace_marks(load16(q)) & 0xffffu) return static_cast<size_t>(q - at) + __builtin_ctz(others);
#endif
  while (q < end && is_whitespace(*q)) ++q;
  return static_cast<size_t>(q - at);
}

}  // namespace

// Sixteen (SSE2) or eight bytes at a time: a byte is marked when it is a quote, a backslash,
// below 0x20 or at or above 0x80.
size_t json_plain_prefix(const char* at, const char* end) {
  const char* q = at;
#ifdef __SSE2__
  for (; end - q >= 16; q += 16)
    if (unsigned marks = unplain_marks(load16(q))) return static_cast<size_t>(q - at) + __builtin_ctz(marks);
#endif
  auto zero_bytes = [](uint64_t x) { return (x - kOnes) & ~x & kHighs; };  // exact for the first
  for (; end - q >= 8; q += 8) {
    uint64_t word = load_word(q);
    uint64_t marks = zero_bytes(word ^ (kOnes * '"')) | zero_bytes(word ^ (kOnes * '\\')) |
                     ((word - kOnes * 0x20) & ~word & kHighs) | (word & kHighs);
    if (marks != 0) return static_cast<size_t>(q - at) + first_nonzero_byte(marks);
  }
  while (q < end && kPlain.plain[static_cast<unsigned char>(*q)]) ++q;
  return static_cast<size_t>(q - at);
}

namespace {

class Scanner {
 public:
  Scanner(std::string_view text, Sax* sax, JsonViewSax* views)
      : at_(text.data()), end_(text.data() + text.size()), sax_(sax), views_(views) {}

  bool run() {
    skip_whitespace();
    for (;;) {
      // A value starts here; an opened container's first element comes round again.
      Opened opened = at_ < end_ && (*at_ == '{' || *at_ == '[') ? open_container(*at_) : scalar() ? kComplete : kFailed;
      if (opened == kFailed) return false;
      if (opened == kAwaitsElement) continue;
      // After a value: close containers or go on to the next element.
      for (;;) {
        skip_whitespace();
        if (open_.empty()) return at_ == end_;
        if (at_ == end_) return false;
        char c = *at_++;
        bool object = open_.back() == '{';
        if (c == ',') {
          skip_whitespace();
          if (object && !key()) return false;
          break;
        }
        if (c != (object ? '}' : ']')) return false;
        open_.pop_back();
        if (!(object ? sax_->end_object() : sax_->end_array())) return false;
      }
    }
  }

 private:
  // None before most ':' and ','; one space after most ':'; a newline and an indent elsewhere.
  void skip_whitespace() {
    if (at_ == end_ || !is_whitespace(*at_)) return;
    if (*at_ == ' ' && end_ - at_ > 1 && !is_whitespace(at_[1])) ++at_;
    else at_ += leading_whitespace(at_, end_);
  }

  enum Opened { kFailed, kComplete, kAwaitsElement };

  bool scalar() {
    if (at_ == end_) return false;
    switch (*at_) {
      case '"': {
        std::string_view text;
        return string(&text, &text_) && (views_ ? views_->string_view(text) : sax_->string(text_));
      }
      case 't': return literal("true") && sax_->boolean(true);
      case 'f': return literal("false") && sax_->boolean(false);
      case 'n': return literal("null") && sax_->null();
      default: return number();
    }
  }

  // "{" or "[": an empty one is a complete value; otherwise its first element follows (an
  // object's first key read). No recursion: nesting depth costs one byte of open_ per level.
  Opened open_container(char bracket) {
    ++at_;
    bool object = bracket == '{';
    if (!(object ? sax_->start_object(static_cast<std::size_t>(-1)) : sax_->start_array(static_cast<std::size_t>(-1))))
      return kFailed;
    skip_whitespace();
    if (at_ < end_ && *at_ == (object ? '}' : ']')) {
      ++at_;
      return (object ? sax_->end_object() : sax_->end_array()) ? kComplete : kFailed;
    }
    open_.push_back(bracket);
    return !object || key() ? kAwaitsElement : kFailed;
  }

  // `"name"` then `:`, leaving the scanner at the value.
  bool key() {
    std::string_view name;
    if (at_ == end_ || *at_ != '"' || !string(&name, &key_text_) || !(views_ ? views_->key_view(name) : sax_->key(key_text_)))
      return false;
    skip_whitespace();
    if (at_ == end_ || *at_ != ':') return false;
    ++at_;
    skip_whitespace();
    return true;
  }

  // The string whose opening quote is at at_: a view of the text itself when it holds no escape,
  // else of *buffer, where it is unescaped. *buffer holds it too for a consumer that takes no views.
  bool string(std::string_view* out, std::string* buffer) {
    const char* start = ++at_;
    size_t plain = json_plain_prefix(start, end_);
    if (start + plain < end_ && start[plain] == '"') {
      at_ = start + plain + 1;
      *out = std::string_view(start, plain);
      if (views_ == nullptr) buffer->assign(start, plain);
      return true;
    }
    buffer->clear();
    for (;;) {  // `plain`: the run from `start` up to the next quote, escape or other byte
      buffer->append(start, plain);
      const char* q = start + plain;
      if (q == end_) return false;
      if (*q == '"') {
        at_ = q + 1;
        *out = *buffer;
        return true;
      }
      if (*q != '\\' || q + 1 == end_) return false;  // a control or non-ASCII byte: nlohmann's to judge
      char escaped = escape(q[1]);
      if (escaped == 0) return false;  // \u or not an escape
      buffer->push_back(escaped);
      start = q + 2;
      plain = json_plain_prefix(start, end_);
    }
  }

  static char escape(char c) {
    switch (c) {
      case '"': return '"';
      case '\\': return '\\';
      case '/': return '/';
      case 'b': return '\b';
      case 'f': return '\f';
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      default: return 0;
    }
  }

  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - at_) < word.size() || std::string_view(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  bool digits() {
    const char* start = at_;
    while (at_ < end_ && *at_ >= '0' && *at_ <= '9') ++at_;
    return at_ > start;
  }

  // JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number() {
    const char* start = at_;
    bool negative = *at_ == '-';
    if (negative) ++at_;
    if (at_ == end_ || *at_ < '0' || *at_ > '9') return false;
    if (*at_ == '0') ++at_;
    else digits();
    size_t integer_digits = static_cast<size_t>(at_ - start) - (negative ? 1 : 0);
    bool fraction = at_ < end_ && *at_ == '.';
    if (fraction && (++at_, !digits())) return false;
    bool exponent = at_ < end_ && (*at_ == 'e' || *at_ == 'E');
    if (exponent) {
      ++at_;
      if (at_ < end_ && (*at_ == '+' || *at_ == '-')) ++at_;
      if (!digits()) return false;
    }
    if (fraction || exponent) return real(start);
    if (integer_digits > 18) return false;  // near 2^63 and past 2^64: nlohmann's choice of type
    uint64_t value = 0;
    for (const char* d = start + (negative ? 1 : 0); d < at_; ++d) value = value * 10 + static_cast<uint64_t>(*d - '0');
    return negative ? sax_->number_integer(-static_cast<int64_t>(value)) : sax_->number_unsigned(value);
  }

  // As nlohmann reads it: strtod over the token, refused when not finite.
  bool real(const char* start) {
    token_.assign(start, at_);
    double value = std::strtod(token_.c_str(), nullptr);
    return std::isfinite(value) && sax_->number_float(value, token_);
  }

  const char* at_;
  const char* end_;
  Sax* sax_;
  JsonViewSax* views_;      // sax_ when it takes views, else null
  std::vector<char> open_;  // '{' or '[' per open container, innermost last
  std::string text_;        // the current string when copied (one buffer for the whole text)
  std::string key_text_;    // the current key when copied: a key view lasts until the next key
  std::string token_;       // the current floating-point number
};

}  // namespace

bool scan_json(std::string_view text, Sax* sax) { return Scanner(text, sax, nullptr).run(); }
bool scan_json(std::string_view text, JsonViewSax* sax) { return Scanner(text, sax, sax).run(); }

}  // namespace nsc
