#include "util/json_raw.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <vector>

#include "util/json_scan.h"

namespace nsc {

using nlohmann::json;

json raw_json(std::string_view compact_text) {
  // Copied as bytes (one memcpy): from char iterators the vector copied a byte at a time.
  const auto* bytes = reinterpret_cast<const uint8_t*>(compact_text.data());
  return json::binary(std::vector<uint8_t>(bytes, bytes + compact_text.size()), kRawJsonSubtype);
}

bool is_raw_json(const json& value) {
  return value.is_binary() && value.get_binary().has_subtype() && value.get_binary().subtype() == kRawJsonSubtype;
}

std::string_view raw_json_text(const json& raw) {
  const json::binary_t& bytes = raw.get_binary();
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

json raw_json_value(const json& value) { return is_raw_json(value) ? json::parse(raw_json_text(value)) : value; }

json with_raw_json_values(json document) {
  if (is_raw_json(document)) return raw_json_value(document);
  if (document.is_structured())
    for (json& child : document) child = with_raw_json_values(std::move(child));
  return document;
}

namespace {

// Reads a raw object's text up to its member `key` and keeps the member's string; stops there.
class MemberString : public JsonViewSax {
 public:
  explicit MemberString(std::string_view key) : key_(key) {}
  std::optional<std::string> value;

  bool key_view(std::string_view key) override {
    at_member_ = depth_ == 1 && key == key_;
    return true;
  }
  bool string_view(std::string_view text) override {
    if (at_member_) value = std::string(text);
    return !at_member_;
  }
  bool key(string_t& key) override { return key_view(key); }
  bool string(string_t& text) override { return string_view(text); }
  bool null() override { return !at_member_; }
  bool boolean(bool) override { return !at_member_; }
  bool number_integer(number_integer_t) override { return !at_member_; }
  bool number_unsigned(number_unsigned_t) override { return !at_member_; }
  bool number_float(number_float_t, const string_t&) override { return !at_member_; }
  bool binary(binary_t&) override { return !at_member_; }
  bool start_object(std::size_t) override { return !at_member_ && (++depth_, true); }
  bool start_array(std::size_t) override { return !at_member_ && (++depth_, true); }
  bool end_object() override { return --depth_, true; }
  bool end_array() override { return --depth_, true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  std::string_view key_;
  int depth_ = 0;
  bool at_member_ = false;
};

// Reads a raw object's text and builds the values of its members `keys` only.
class MemberPicker : public JsonViewSax {
 public:
  explicit MemberPicker(std::initializer_list<std::string_view> keys) : keys_(keys) {}
  json members = json::object();

  bool key_view(std::string_view key) override {
    if (open_.empty() && depth_ == 1) picking_ = std::find(keys_.begin(), keys_.end(), key) != keys_.end();
    key_.assign(key);  // a member's key, or a key inside a member being built
    return true;
  }
  bool string_view(std::string_view text) override { return add(json(std::string(text))); }
  bool key(string_t& key) override { return key_view(key); }
  bool string(string_t& text) override { return string_view(text); }
  bool null() override { return add(nullptr); }
  bool boolean(bool value) override { return add(value); }
  bool number_integer(number_integer_t value) override { return add(value); }
  bool number_unsigned(number_unsigned_t value) override { return add(value); }
  bool number_float(number_float_t value, const string_t&) override { return add(value); }
  bool binary(binary_t&) override { return false; }  // not in JSON text
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  // Where a value goes: into the container being built, else a picked member; else nowhere.
  json* place(json value) {
    if (!open_.empty()) {
      json& container = *open_.back();
      return container.is_array() ? &container.emplace_back(std::move(value)) : &(container[key_] = std::move(value));
    }
    return picking_ && depth_ == 1 ? &(members[key_] = std::move(value)) : nullptr;
  }
  bool add(json value) { return place(std::move(value)), true; }
  // A container's pointer stays valid while it is open: nothing is added to its parent then.
  bool open(json empty) {
    if (json* container = place(std::move(empty))) open_.push_back(container);
    return ++depth_, true;
  }
  bool close() {
    if (!open_.empty()) open_.pop_back();
    return --depth_, true;
  }

  std::initializer_list<std::string_view> keys_;
  std::string key_;
  std::vector<json*> open_;  // containers of a picked member, outermost first
  int depth_ = 0;
  bool picking_ = false;
};

json picked_members(const json& object, std::initializer_list<std::string_view> keys) {
  json members = json::object();
  if (object.is_object())
    for (std::string_view key : keys)
      if (auto member = object.find(std::string(key)); member != object.end()) members[std::string(key)] = *member;
  return members;
}

}  // namespace

json json_members(const json& object, std::initializer_list<std::string_view> keys) {
  if (!is_raw_json(object)) return picked_members(object, keys);
  std::string_view text = raw_json_text(object);
  MemberPicker picker(keys);
  // Text the scanner declines (a non-ASCII byte, a \u escape) is parsed whole instead.
  if (text.empty() || text.front() != '{' || !scan_json(text, &picker)) return picked_members(raw_json_value(object), keys);
  return std::move(picker.members);
}

std::optional<std::string> json_string_member(const json& object, std::string_view key) {
  if (!is_raw_json(object)) {
    auto member = object.find(std::string(key));  // end() when not an object
    if (member == object.end() || !member->is_string()) return std::nullopt;
    return member->get<std::string>();
  }
  MemberString reader(key);
  // The scanner stops at the member; text it declines (a non-ASCII byte) is parsed instead.
  if (!scan_json(raw_json_text(object), &reader) && !reader.value)
    return json_string_member(raw_json_value(object), key);
  return reader.value;
}

namespace {

// Builds a value's pretty text straight in the string's own storage, through a pointer: each
// byte costs a store, not a call into std::string (the report's raw values are most of a
// 100,000-rank report). No second buffer: the world communicator's counters alone are tens of MB.
class PrettySink {
 public:
  explicit PrettySink(std::string* out) : out_(out), start_(out->size()) {}
  ~PrettySink() { out_->resize(start_ + used_); }

  // Grown in steps the size of the value so far (a short value zero-fills a few hundred bytes),
  // the storage doubling as a string's does.
  char* room(size_t bytes) {
    size_t end = start_ + used_;
    if (out_->size() - end < bytes) {
      size_t want = end + bytes + std::min<size_t>(used_ + 256, size_t{1} << 20);
      if (want > out_->capacity()) out_->reserve(std::max(out_->capacity() * 2, want));
      out_->resize(want);
    }
    return out_->data() + end;
  }
  void put(const char* text, size_t bytes) {
    std::memcpy(room(bytes), text, bytes);
    used_ += bytes;
  }
  void put(char c) { *room(1) = c, ++used_; }
  // Hands what is built so far to `drain` once it passes kJsonDrainAt; goes on in the emptied string.
  void drain_if_full(const std::function<void()>* drain) {
    if (drain == nullptr || start_ + used_ < kJsonDrainAt) return;
    out_->resize(start_ + used_);
    (*drain)();
    start_ = out_->size();
    used_ = 0;
  }
  // `c` (0: none), then a new line at `indent`.
  void line_break(char c, unsigned indent) {
    char* at = room(2 + indent);
    char* from = at;
    if (c != 0) *at++ = c;
    *at++ = '\n';
    std::memset(at, ' ', indent);
    used_ += static_cast<size_t>(at + indent - from);
  }

 private:
  std::string* out_;
  size_t start_;     // where the value starts in *out_
  size_t used_ = 0;  // its bytes so far; *out_ is longer while it is built
};

}  // namespace

void append_pretty_compact_json(std::string_view compact, unsigned indent, std::string* out,
                                const std::function<void()>* drain) {
  constexpr unsigned kStep = 2;
  const char* at = compact.data();
  const char* end = at + compact.size();
  PrettySink sink(out);
  while (at < end) {
    const char* token = at;
    switch (*at++) {
      case '"':  // a string, copied whole: its escapes are already nlohmann's
        for (;;) {
          at = static_cast<const char*>(std::memchr(at, '"', static_cast<size_t>(end - at)));
          if (at == nullptr) return sink.put(token, static_cast<size_t>(end - token));
          size_t backslashes = 0;  // the quote ends the string unless an odd run of them escapes it
          for (const char* b = at - 1; *b == '\\'; --b) ++backslashes;
          ++at;
          if (backslashes % 2 == 0) break;
        }
        sink.put(token, static_cast<size_t>(at - token));
        break;
      case '{':
      case '[':
        if (at < end && (*at == '}' || *at == ']')) {  // empty: written on one line
          sink.put(token, 2);
          ++at;
          break;
        }
        indent += kStep;
        sink.line_break(*token, indent);
        break;
      case '}':
      case ']':
        indent -= kStep;
        sink.line_break(0, indent);
        sink.put(*token);
        break;
      case ',':
        sink.line_break(',', indent);
        sink.drain_if_full(drain);
        break;
      case ':': sink.put(": ", 2); break;
      default:  // a number or a literal: up to the next bracket or comma
        while (at < end && *at != ',' && *at != '}' && *at != ']') ++at;
        sink.put(token, static_cast<size_t>(at - token));
    }
  }
}

JsonText& JsonText::open(char bracket) {
  separate();
  text_.push_back(bracket);
  return *this;
}

JsonText& JsonText::close(char bracket) {
  text_.push_back(bracket);
  return *this;
}

void JsonText::separate() {
  // After an opening bracket or a key nothing comes between; after a value, a comma.
  if (!text_.empty() && text_.back() != '{' && text_.back() != '[' && text_.back() != ':') text_.push_back(',');
}

void JsonText::quoted(std::string_view text) {
  if (json_plain_prefix(text.data(), text.data() + text.size()) == text.size()) {
    text_.push_back('"');
    text_.append(text);
    text_.push_back('"');
    return;
  }
  text_.append(json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace));
}

JsonText& JsonText::key(std::string_view name) {
  separate();
  quoted(name);
  text_.push_back(':');
  return *this;
}

JsonText& JsonText::string(std::string_view text) {
  separate();
  quoted(text);
  return *this;
}

JsonText& JsonText::number(int64_t value) {
  separate();
  char digits[24];
  text_.append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
  return *this;
}

JsonText& JsonText::boolean(bool value) {
  separate();
  text_.append(value ? "true" : "false");
  return *this;
}

JsonText& JsonText::null() {
  separate();
  text_.append("null");
  return *this;
}

}  // namespace nsc
