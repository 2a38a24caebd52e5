// Human text of an ncclscope.cuda/1 document: `ncclscope cuda-streams` (streams, chains,
// blocked threads) and `ncclscope cuda-ipc` (IPC and cuMem handles, NCCL registrations).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace nsc {

std::string render_cuda_streams_text(const nlohmann::json& document);
std::string render_cuda_ipc_text(const nlohmann::json& document);

}  // namespace nsc
