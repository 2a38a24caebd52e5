// Builds one process's `ncclscope.cuda/1` document (the `cuda-streams` and `cuda-ipc`
// commands): the flight recorder's streams, events and IPC handles, plus, with
// `with_nccl`, what each NCCL communicator holds of them. Opens the target once and
// decodes the recorder once (with NCCL: inside the state document it builds).
#pragma once

#include <nlohmann/json.hpp>

#include "snapshot/state_document.h"

namespace nsc {

struct CudaRequest {
  StateRequest target;           // core_path or pid, executable; with_nccl: library search too
  bool with_nccl = false;        // add nccl_communicators and threads_blocked_in_cuda
  bool include_records = false;  // the recorder's whole merged record timeline
};

// Throws nsc::BadInput when the target cannot be opened.
nlohmann::json build_cuda_document(const CudaRequest& request);

// 0 when the flight recorder was found and nothing was unreadable, else 1 (partial).
int cuda_exit_code(const nlohmann::json& document);

}  // namespace nsc
