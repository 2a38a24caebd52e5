// Sentences of an `ncclscope.kernels/1` document (docs/kernels.md): what a connection
// or a kernel waits for, worded from the facts nccl/kernel_view.cc decided. The
// document's published "text" keys (snapshot/kernels_document.cc) and triage's kernel
// evidence (triage/kernel_join.cc) both word waits here, so they say the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace nsc {

// kind "waiting-for-data": "waiting for data from rank 1"; otherwise "waiting for rank 1
// to free a slot". `verb` "waits" words it as a rank's predicate.
std::string peer_wait_phrase(const std::string& kind, int64_t peer, const char* verb = "waiting");

// One connection's wait (a block's `waits[]` entry): "waiting for data from rank 1 at
// step 40 (8 steps received since the kernel started)", "connection state unavailable".
std::string connection_wait_sentence(const nlohmann::json& wait);

// One entry of a kernel's `waits[]` over its `total_blocks` blocks:
// "waiting for data from rank 1 (24 of 24 blocks)".
std::string kernel_wait_sentence(const nlohmann::json& wait, size_t total_blocks);

// One resident kernel that is not NCCL's (`other_kernels[]` entry) and the NCCL work of the
// same device: "GPU 0 runs at::cuda::(anonymous namespace)::spin_kernel (grid (1,1,1), block
// (1,1,1), Active, stream unavailable: ...); NCCL work that may be queued behind it
// (inferred: ...): comm 0x.. rank 2/4 (0x..) launched AllReduce=4, no kernel of it resident".
std::string other_kernel_sentence(const nlohmann::json& kernel);

// One `queued_behind[]` entry's launches: "launched AllReduce=4, AllGather=1".
std::string queued_work_phrase(const nlohmann::json& work);

// The whole document as gdb's nccl-kernels prints it: per kernel what it runs, its
// communicator, its waits, then its blocks grouped ("blocks 0-23 (channels 0-23) ...").
std::string render_kernels_text(const nlohmann::json& document);

}  // namespace nsc
