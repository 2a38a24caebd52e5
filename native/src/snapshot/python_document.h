// Builds one process's `ncclscope.python/1` document (`ncclscope py-stacks`): the
// Python stack of every interpreter thread, optionally merged with the thread's native
// stack. Live reads do not stop the process unless the request freezes it.
#pragma once

#include <nlohmann/json.hpp>

#include "snapshot/state_document.h"

namespace nsc {

struct PythonRequest {
  StateRequest target;       // core_path or pid, executable, library search, freeze
  bool merge_native = false;  // unwind native stacks too (live: stops each thread briefly)
};

// Throws nsc::BadInput when the target cannot be opened or holds no readable interpreter.
nlohmann::json build_python_document(const PythonRequest& request);

// 0 when every thread and frame was read whole, else 1 (partial).
int python_exit_code(const nlohmann::json& document);

}  // namespace nsc
