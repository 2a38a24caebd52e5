#include "audit/audit_inputs.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/errors.h"
#include "util/input_file.h"
#include "util/schemas.h"

namespace nsc::audit {
namespace {

using nlohmann::json;

// First bytes decide, as for triage: '{' is a snapshot, "\x7fELF" a core.
bool looks_like_snapshot(const std::string& path) {
  std::string bytes = read_file_head(path, path, 256);
  const char* head = bytes.data();
  size_t count = bytes.size();
  if (count == 0) throw BadInput(path + ": empty file (neither a snapshot nor a core)");
  if (count >= 4 && std::memcmp(head, "\x7f" "ELF", 4) == 0) return false;
  for (size_t i = 0; i < count; ++i)
    if (!std::isspace(static_cast<unsigned char>(head[i]))) {
      if (head[i] == '{') return true;
      throw BadInput(path + ": neither a JSON snapshot nor an ELF core");
    }
  return true;
}

json read_snapshot(const std::string& path) {
  json document;
  try {
    document = json::parse(read_regular_file(path, path));
  } catch (const json::exception& error) {
    throw BadInput(path + ": corrupt snapshot: " + error.what());
  }
  const json schema = document.is_object() ? document.value("schema", json()) : json();
  if (schema != kStateSchema)
    throw BadInput(path + ": not an " + std::string(kStateSchema) + " document (schema is " +
                   (schema.is_string() ? "\"" + schema.get<std::string>() + "\"" : std::string("missing")) + ")");
  // The rules read any field defensively; the list itself must be one of objects.
  const json communicators = document.value("communicators", json::array());
  if (!communicators.is_array()) throw BadInput(path + ": communicators is not a list");
  for (size_t index = 0; index < communicators.size(); ++index)
    if (!communicators[index].is_object())
      throw BadInput(path + ": communicators[" + std::to_string(index) + "] is not an object");
  return document;
}

AuditInput load_path(const AuditLoadRequest& request, const std::string& path) {
  if (looks_like_snapshot(path)) return {path, "snapshot", read_snapshot(path)};
  StateRequest state = request.options;
  state.core_path = path;
  state.pid = 0;
  return {path, "core", build_state_document(state)};
}

AuditInput load_pid(const AuditLoadRequest& request, int pid) {
  StateRequest state = request.options;
  state.core_path.clear();
  state.pid = pid;
  state.freeze = true;  // proxy counters read while the proxy thread runs could look out of order
  return {"pid " + std::to_string(pid), "live", build_state_document(state)};
}

template <typename Load>
void load_one(LoadedAuditInputs* loaded, const std::string& name, Load load) {
  try {
    loaded->inputs.push_back(load());
  } catch (const std::exception& error) {
    loaded->failures.push_back({name, error.what()});
  }
}

}  // namespace

LoadedAuditInputs load_audit_inputs(const AuditLoadRequest& request) {
  LoadedAuditInputs loaded;
  for (const std::string& path : request.paths) load_one(&loaded, path, [&] { return load_path(request, path); });
  for (int pid : request.pids)
    load_one(&loaded, "pid " + std::to_string(pid), [&] { return load_pid(request, pid); });
  return loaded;
}

}  // namespace nsc::audit
