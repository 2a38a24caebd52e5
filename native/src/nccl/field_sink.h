// FieldSink: writes decoded fields into a JSON object. A value that could
// not be fetched becomes null, its reason goes into the communicator's
// "unavailable" map, and read failures are also listed in the document's errors.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "nccl/object_view.h"

namespace nsc {

// Caps applied to every walk over target memory (hostile or torn memory). The per-entry
// lists of the CUDA resources are capped lower than max_list_nodes: each entry is a JSON object
// of a dozen values, and garbage (a cyclic fuzz input) fills every slot of them.
struct DecodeLimits {
  uint64_t max_channels = 64;
  uint64_t max_ranks = 1u << 20;
  uint64_t max_list_nodes = 4096;
  uint64_t max_subs = 64;
  uint64_t max_registrations = 512;    // regCache buffers decoded (its population is still said)
  uint64_t max_ipc_imports = 512;      // IPC imports over all those buffers
  uint64_t max_p2p_connectors = 2048;  // P2P transport entries: 64 channels x 8 peers x 2 x 2
};

// Shared state of one decode pass over one communicator.
struct DecodeScope {
  nlohmann::json* unavailable;  // the communicator's "unavailable" map
  nlohmann::json* warnings;     // the communicator's "warnings" array
  nlohmann::json* errors;       // the document's "errors" array
  std::string subject;          // "comm 0x55..": prefix for error subjects
  DecodeLimits limits;
};

class FieldSink {
 public:
  FieldSink(nlohmann::json* object, std::string path_prefix, DecodeScope* scope)
      : object_(object), prefix_(std::move(path_prefix)), scope_(scope) {}

  FieldSink child(const std::string& key) {
    return FieldSink(&(*object_)[key], prefix_ + key + ".", scope_);
  }
  nlohmann::json& json() { return *object_; }
  DecodeScope& scope() { return *scope_; }

  template <typename T>
  void put(const std::string& key, const Fetched<T>& fetched) {
    if (fetched.ok()) {
      (*object_)[key] = *fetched.value;
    } else {
      (*object_)[key] = nullptr;
      mark_unavailable(key, fetched.unavailable, fetched.address);
    }
  }
  void put_bool(const std::string& key, const Fetched<int64_t>& fetched) {
    if (fetched.ok()) (*object_)[key] = *fetched.value != 0;
    else put(key, fetched);
  }
  void put_hex(const std::string& key, const Fetched<uint64_t>& fetched);
  // A count (operations, steps) NCCL keeps as uint64: beyond INT64_MAX it is torn or
  // never-written memory, not a count, so null, the value in the reason, and a warning.
  void put_count(const std::string& key, const Fetched<uint64_t>& fetched);
  // The reason put_count gives for such a value ("" when the value is a plausible count).
  static std::string impossible_count_reason(uint64_t value);
  void mark_unavailable(const std::string& key, const std::string& why, uint64_t address);
  void warn(const std::string& message);

 private:
  nlohmann::json* object_;
  std::string prefix_;
  DecodeScope* scope_;
};

}  // namespace nsc
