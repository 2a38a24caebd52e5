// Read-only access into JSON documents that may be malformed (snapshots, front-end
// requests): a missing key or a non-object gives null, never an exception or a copy.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace nsc {

// The member at key, or nullptr when absent or when object is not an object.
inline const nlohmann::json* find_json_member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// The member at key, or a null json: a reference into the document.
inline const nlohmann::json& json_member(const nlohmann::json& object, const char* key) {
  static const nlohmann::json null_json;
  const nlohmann::json* found = find_json_member(object, key);
  return found == nullptr ? null_json : *found;
}

// An optional value as JSON: the value, or null when absent.
template <typename T>
nlohmann::json json_or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// The string value, or fallback when value is not a string (missing, null, a number).
inline std::string json_text(const nlohmann::json& value, const std::string& fallback = "") {
  return value.is_string() ? value.get<std::string>() : fallback;
}

}  // namespace nsc
