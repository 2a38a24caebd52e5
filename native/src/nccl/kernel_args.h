// What a debugger's raw material about an NCCL kernel means (docs/kernels.md): the
// kernel and device-function names, the copy of ncclDevKernelArgs in a block's shared
// memory (found by content: NCCL is built without -G), and the channel each block runs.
// The gdb extension issues the cuda-gdb commands and passes their values here; it
// decides nothing itself. Inputs come from a front end: nothing here throws on them.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nsc {

// {"kernel_name", "collective", "op", "datatype", "algorithm", "protocol"} of an NCCL
// kernel name (ncclDevKernel_<Coll>_<Op>_<type>_<ALGO>_<PROTO>, with or without the
// "(...)" of cuda-gdb's invocation); {"kernel_name", "collective", "detail"} when it has
// another number of parts (SendRecv, generic kernels); null when it lacks the prefix.
nlohmann::json decode_nccl_kernel_name(const nlohmann::json& invocation, const std::string& prefix = "ncclDevKernel_");

// The function a block runs (`info symbol $pc`): ncclDevFunc_<...>, else a kernel name.
nlohmann::json decode_running_function(const nlohmann::json& function);

// Index of the n-th (0-based) set bit of mask: NCCL runs block n on that channel.
std::optional<unsigned> nth_set_bit(uint64_t mask, uint64_t n);

// Offsets inside ncclDevKernelArgs (the state document's device.kernel_args, from DWARF).
struct KernelArgsLayout {
  uint64_t comm_offset = 0;
  uint64_t channel_mask_offset = 8;
  uint64_t size = 32;
};

// Byte offset of a copy of ncclDevKernelArgs in a shared-memory dump of 64-bit words
// (nullopt: a word that was not a value), or nullopt: the first 16-byte aligned place
// whose comm pointer is one of dev_comms and whose channel mask has one bit per block.
std::optional<uint64_t> find_kernel_args(const std::vector<std::optional<uint64_t>>& words,
                                         const std::set<uint64_t>& dev_comms, uint64_t nblocks,
                                         const KernelArgsLayout& layout = {});

// The C API's "kernel-args": request {"shared_words": [u64 | "0x..."], "dev_comms": [...],
// "nblocks", "args_layout": {comm_offset, channel_mask_offset, size}} ->
// {"found": true, "args_shared_offset", "dev_comm", "channel_mask" (hex), "channel_id_offset"
// (the shared byte offset of ncclShmem.channelId, to read in each block)} or
// {"found": false, "reason"}.
nlohmann::json kernel_args_answer(const nlohmann::json& request);

// One kernel of a "kernel-view" request, as the debugger saw it -> its facts.
// seen: {cuda-gdb's row ("kernel", "device", "grid", "status", "grid_dim", "block_dim",
//        "invocation", "focus"), "nblocks" (of the grid), "args" (the kernel-args answer, or
//        null), "shared_memory_error" (when block 0's shared memory was unreadable),
//        "blocks": [{"block", "function" (`info symbol $pc`'s, or null),
//                    "channel_word" (the shared word at channel_id_offset, or null),
//                    "unavailable" (why the block could not be focused)}]}
// -> the row with "nccl" (decoded invocation), "dev_comm", "channel_mask",
// "args_shared_offset", "notes", and per block "channel" (the block-th set bit of the
// mask), "channel_source", "channel_in_shared", "function", "running" (decoded function).
nlohmann::json kernel_facts(const nlohmann::json& seen);

// The C API's "kernel-names": {"names": [...]} -> {"nccl": [decoded | null, ...]}.
nlohmann::json kernel_names_answer(const nlohmann::json& request);

// A 64-bit value given as a JSON unsigned number or a "0x..." string; nullopt otherwise.
std::optional<uint64_t> json_u64(const nlohmann::json& value);

}  // namespace nsc
