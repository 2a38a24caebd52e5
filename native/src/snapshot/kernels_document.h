// Builds the `ncclscope.kernels/1` document (docs/kernels.md): the kernel view of
// nccl/kernel_view.h, its waits worded by snapshot/kernels_text.h ("text"), plus the
// communicators' device sections it judged from. Used by
// the C API's "kernel-view" command (the gdb extension's `nccl-kernels` under cuda-gdb).
#pragma once

#include <nlohmann/json.hpp>

namespace nsc {

// state: an ncclscope.state/1 document (communicators with "device" sections);
// kernels: what the debugger saw (see build_kernel_view); other_kernels: cuda-gdb's rows of
// the resident kernels that are not NCCL's (see build_other_kernels), each given its "text".
nlohmann::json build_kernels_document(const nlohmann::json& state, const nlohmann::json& kernels,
                                      const nlohmann::json& other_kernels = nlohmann::json::array());

}  // namespace nsc
