// The kernel view: each resident NCCL kernel (as cuda-gdb lists it), the
// communicator it belongs to, and per block the channel it runs and what that
// channel waits for (data from rank R at step S, or rank R to free a slot), judged
// from the device-side counters that connection_decoder reads (docs/kernels.md).
// It holds facts only: snapshot/kernels_text.cc words them.
#pragma once

#include <nlohmann/json.hpp>

namespace nsc {

// state: an ncclscope.state/1 document whose communicators carry a "device"
// section (connection_decoder). kernels: what the debugger saw, one entry per
// kernel, the raw material nccl/kernel_args.h `kernel_facts` turns into its channels and
// names: cuda-gdb's row, "nblocks", "args" (the C API's kernel-args answer), and per
// block its `info symbol $pc` function and the shared word at the channel id offset.
// Returns the `kernels` array of ncclscope.kernels/1 without the "text" of its waits
// (snapshot/kernels_document.cc adds them).
nlohmann::json build_kernel_view(const nlohmann::json& state, const nlohmann::json& kernels);

// The resident kernels that are not NCCL's (cuda-gdb rows `kernel-names` did not decode),
// each with the NCCL work of this process queued behind it on the same device: per
// communicator whose cuda_dev is the kernel's device and none of whose kernels is resident
// in `nccl_view` (build_kernel_view's answer), its launch counters (seq_launched). The
// relation is "inferred" (same device; whether that work ran before it is not told here):
// cuda-gdb shows no kernel's stream, so same-stream order is never claimed. Facts only.
nlohmann::json build_other_kernels(const nlohmann::json& state, const nlohmann::json& nccl_view,
                                   const nlohmann::json& rows);

// What one connection waits for under a protocol ("LL", "LL128", "SIMPLE"):
// {"kind":"waiting-for-data"|"waiting-for-slot"|"ready"|"unknown", "peer", "step", and the
// facts behind the verdict (docs/kernels.md), e.g. "unknown_reason" for an unknown one}.
nlohmann::json connection_wait(const nlohmann::json& connection, const std::string& protocol,
                               uint64_t nccl_steps);

}  // namespace nsc
