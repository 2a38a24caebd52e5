#include "snapshot/field_text.h"

#include <algorithm>
#include <optional>

#include "util/json_access.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

// Code points, not bytes: column widths of escaped text that may hold UTF-8.
size_t display_width(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  }));
}

// The reason object["unavailable"][key] gives, if any.
std::optional<std::string> unavailable_reason(const json& object, const std::string& key) {
  const json& map = json_member(object, "unavailable");
  if (!map.is_object()) return std::nullopt;
  auto found = map.find(key);
  if (found == map.end()) return std::nullopt;
  return found->is_string() ? found->get<std::string>() : found->dump();
}

}  // namespace

std::string plain_text(const json& value) {
  if (value.is_null()) return "unavailable";
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_string()) return escape_for_terminal(value.get<std::string>());
  if (value.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + plain_text(value[i]);
    return out + "]";
  }
  return escape_for_terminal(value.dump());
}

std::string hex_text(const json& value) {
  uint64_t number = 0;
  if (value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0))
    return hex(value.get<uint64_t>());
  if (value.is_string() && parse_u64(value.get<std::string>(), &number)) return hex(number);
  return value.is_string() ? escape_for_terminal(value.get<std::string>()) : plain_text(value);
}

std::string unreadable_text(const std::string& reason) {
  if (reason.empty()) return "<unreadable>";
  std::string escaped = escape_for_terminal(reason);
  // A value read but out of range (range checks): flagged with the value, not "unreadable".
  if (escaped.rfind("impossible value ", 0) == 0) return "<" + escaped + ">";
  return escaped.rfind("0x", 0) == 0 ? "<unreadable " + escaped + ">" : "<unreadable: " + escaped + ">";
}

bool truthy(const json& value) {
  if (value.is_null()) return false;
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value.get<double>() != 0;
  if (value.is_string()) return !value.get_ref<const std::string&>().empty();
  return !value.empty();  // arrays, objects
}

std::vector<std::string> table_lines(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], display_width(row[i]));
  }
  std::vector<std::string> lines;
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) line += "  ";
      line += row[i] + std::string(widths[i] - display_width(row[i]), ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);
    lines.push_back(line);
  }
  return lines;
}

const json& array_or_empty(const json& value) {
  static const json empty = json::array();
  return value.is_array() ? value : empty;
}

std::string joined_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

FieldText FieldText::child(const std::string& key) const { return FieldText(raw(key), joined(key), this); }

FieldText FieldText::item(size_t index) const {
  static const json null_json;
  const json& element = value_->is_array() && index < value_->size() ? (*value_)[index] : null_json;
  return FieldText(element, path_ + "[" + std::to_string(index) + "]", this);
}

const json& FieldText::raw(const std::string& key) const { return json_member(*value_, key.c_str()); }

std::string FieldText::reason(const std::string& key) const {
  if (auto own = unavailable_reason(*value_, key)) return *own;
  // The dotted path relative to each enclosing object, then the bare key (decoders that
  // lose the path of a nested object's own keys still give a reason).
  std::string dotted = joined(key);
  for (const FieldText* scope = parent_; scope != nullptr; scope = scope->parent_) {
    std::string relative = scope->path_.empty() ? dotted : dotted.substr(std::min(dotted.size(), scope->path_.size() + 1));
    if (auto found = unavailable_reason(*scope->value_, relative)) return *found;
  }
  for (const FieldText* scope = parent_; scope != nullptr; scope = scope->parent_)
    if (auto found = unavailable_reason(*scope->value_, key)) return *found;
  return "";
}

std::string FieldText::text(const std::string& key, std::string (*format)(const json&), const std::string& missing) const {
  if (!has(key)) return missing;
  const json& member = raw(key);
  if (member.is_null()) return unreadable_text(reason(key));
  return format(member);
}

}  // namespace nsc
