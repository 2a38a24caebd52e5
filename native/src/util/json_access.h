// Read-only access into JSON documents that may be malformed (snapshots, front-end
// requests): a missing key or a non-object gives null, never an exception or a copy.
#pragma once

#include <nlohmann/json.hpp>

namespace nsc {

// The member at key, or a null json: a reference into the document.
inline const nlohmann::json& json_member(const nlohmann::json& object, const char* key) {
  static const nlohmann::json null_json;
  if (!object.is_object()) return null_json;
  auto it = object.find(key);
  return it == object.end() ? null_json : *it;
}

}  // namespace nsc
