// Text pieces every renderer of a snapshot document shares: a value as text, or
// `<unreadable ...>` with the reason its document gave (the `unavailable` maps of
// docs/schema-state.md). Strings from the target are always escaped for a terminal.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nsc {

// A JSON value as text: booleans "true"/"false", strings escaped, lists "[a, b]", null "unavailable".
std::string plain_text(const nlohmann::json& value);
// "0x7f12ab" from a number or a hex/decimal string; other strings escaped.
std::string hex_text(const nlohmann::json& value);
// "<unreadable 0x...: why>" for a reason that starts with an address, else "<unreadable: why>".
std::string unreadable_text(const std::string& reason);
// Python-like truth of a JSON value: null, false, 0, "" and empty containers are false.
bool truthy(const nlohmann::json& value);
// Left-aligned columns joined by two spaces, trailing blanks trimmed.
std::vector<std::string> table_lines(const std::vector<std::vector<std::string>>& rows,
                                     const std::string& indent = "");
// Each line followed by "\n".
std::string joined_lines(const std::vector<std::string>& lines);
// The value when it is an array, else an empty array: a reference, never a copy.
const nlohmann::json& array_or_empty(const nlohmann::json& value);
// "s" unless count is 1.
inline const char* plural(size_t count) { return count == 1 ? "" : "s"; }

// One value of a document with the path that names it ("channels[3].ring"), so that a null
// member finds its reason in its own `unavailable` map or in an enclosing object's.
// A FieldText refers to its parent: keep the parent alive while the child is used.
class FieldText {
 public:
  explicit FieldText(const nlohmann::json& value, std::string path = "", const FieldText* parent = nullptr)
      : value_(&value), path_(std::move(path)), parent_(parent) {}

  FieldText child(const std::string& key) const;
  FieldText item(size_t index) const;  // element of a list value: path "channels[3]"
  const nlohmann::json& value() const { return *value_; }
  const nlohmann::json& raw(const std::string& key) const;  // member, or null
  bool has(const std::string& key) const { return value_->is_object() && value_->contains(key); }
  // The reason for a null member: "" when the document gave none.
  std::string reason(const std::string& key) const;
  // The member as text; `<unreadable ...>` when null; `missing` when absent.
  std::string text(const std::string& key, std::string (*format)(const nlohmann::json&) = plain_text,
                   const std::string& missing = "n/a") const;

 private:
  std::string joined(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const nlohmann::json* value_;
  std::string path_;
  const FieldText* parent_;
};

}  // namespace nsc
