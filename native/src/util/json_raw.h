// A JSON value held in a document as its compact text (serde_json's RawValue, for nlohmann):
// the per-rank subtrees of a triage report that nothing in the process reads (each rank's
// program order, each communicator's counters per rank) are written straight to text, at a
// fraction of a document's memory and time (100,000 ranks: about 700 MB and 2 s less;
// docs/triage.md "Scale"). It is a binary value of subtype kRawJsonSubtype.
// - write_pretty_json and append_pretty_json (json_write.h) write it as the value itself;
// - raw_json_value() gives the value back to a reader that needs it;
// - with_raw_json_values() gives back a whole document (tests, nlohmann's dump()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace nsc {

constexpr uint8_t kRawJsonSubtype = 0x4a;

// `compact_text` must be one JSON value as nlohmann writes it compactly (dump()): object keys
// in their sorted order, no whitespace. JsonText builds such text.
nlohmann::json raw_json(std::string_view compact_text);
bool is_raw_json(const nlohmann::json& value);
std::string_view raw_json_text(const nlohmann::json& raw);  // is_raw_json(raw) must hold
// The value itself: parsed from a raw value's text, or `value` as it is.
nlohmann::json raw_json_value(const nlohmann::json& value);
// `document` with every raw value inside it replaced by the value.
nlohmann::json with_raw_json_values(nlohmann::json document);
// The string held by an object's member `key` (nullopt: no such member, or not a string), the
// object raw or not: a raw one's text is scanned up to the member, never parsed into values.
std::optional<std::string> json_string_member(const nlohmann::json& object, std::string_view key);
// The members `keys` of an object, raw or not, as a document ({} for what is not an object): a
// raw object's text is scanned and only those members' values are built (a renderer reading a
// few fields of 100,000 inputs entries).
nlohmann::json json_members(const nlohmann::json& object, std::initializer_list<std::string_view> keys);

// Text a streaming writer holds before it writes it out.
constexpr size_t kJsonDrainAt = size_t{1} << 20;

// Appends the compact text `compact` as dump(2) writes its value at `indent` (the indent of the
// line it starts on): the writer's side of a raw value. With `drain`, *out is handed to it
// (which writes it out and empties it) whenever it passes kJsonDrainAt: a value of tens of MB streams.
void append_pretty_compact_json(std::string_view compact, unsigned indent, std::string* out,
                                const std::function<void()>* drain = nullptr);

// Builds compact JSON text, byte for byte as nlohmann's dump() writes the same value, for
// raw_json(). The caller gives an object's keys in nlohmann's order (std::map: byte order);
// raw_json_test checks each builder's output against nlohmann's.
class JsonText {
 public:
  JsonText& begin_object() { return open('{'); }
  JsonText& end_object() { return close('}'); }
  JsonText& begin_array() { return open('['); }
  JsonText& end_array() { return close(']'); }
  JsonText& key(std::string_view name);
  JsonText& string(std::string_view text);
  JsonText& number(int64_t value);
  JsonText& boolean(bool value);
  JsonText& null();
  JsonText& number_or_null(const std::optional<int64_t>& value) { return value ? number(*value) : null(); }
  JsonText& string_or_null(std::string_view text) { return text.empty() ? null() : string(text); }

  const std::string& text() const { return text_; }
  void clear() { text_.clear(); }  // for the next value, the storage kept
  std::string take() { return std::move(text_); }

 private:
  JsonText& open(char bracket);
  JsonText& close(char bracket);
  void separate();  // the comma before an element or a key that is not its container's first
  void quoted(std::string_view text);

  std::string text_;
};

}  // namespace nsc
