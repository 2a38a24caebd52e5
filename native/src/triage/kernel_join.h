// Kernel views in triage (issue 6 item 5): `ncclscope.kernels/1` documents, one per
// process, written by `nccl-kernels --json` under cuda-gdb (docs/kernels.md). Each is
// reduced to what triage uses (type-checked: a view is untrusted input), attached to the
// process whose communicator has the same comm_hash and rank, and joined with the
// findings: the peer each stuck channel waits on (kernel_join.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "triage/process_view.h"
#include "util/schemas.h"

namespace nsc::triage {


// One connection's verdict of one block: "waiting-for-data", "waiting-for-slot",
// "ready", "unknown" (the decoder's kinds; any other string is kept and treated as unknown).
struct KernelWaitView {
  std::string kind;
  Maybe<int> peer;
  Maybe<int64_t> step;
  std::string direction;  // "recv", "send" or ""
  std::string text;
  bool definite() const { return kind == "waiting-for-data" || kind == "waiting-for-slot"; }
};

struct KernelBlockView {
  Maybe<int> block, channel;
  std::string function, algorithm, protocol;
  std::string state;   // "waiting", "unknown", "not-waiting-on-peers"
  std::string reason;  // why the state is unknown, when the decoder said
  std::vector<KernelWaitView> waits;
};

struct KernelEntryView {
  Maybe<int> index, device;
  std::string collective, op, datatype, algorithm, protocol, kernel_name;  // from the kernel's name
  bool has_communicator = false;
  uint64_t comm_hash = 0;
  std::string comm_hash_text;
  Maybe<int> rank, nranks;
  std::string communicator_match;  // "kernel argument comm == ncclComm.devComm", "guess: ...", ...
  std::vector<KernelBlockView> blocks;
};

// A communicator the view's process holds (listed even when no kernel is resident).
struct KernelCommView {
  uint64_t comm_hash = 0;
  std::string comm_hash_text;
  int rank = 0;
  Maybe<int> nranks, cuda_dev;
};

// A resident kernel that is not NCCL's (`other_kernels[]`): "at::cuda::(anonymous
// namespace)::spin_kernel" on device 0, grid (1,1,1), block (1,1,1).
struct OtherKernelView {
  std::string name, grid_dim, block_dim, stream;  // stream "" when cuda-gdb did not say
  Maybe<int> device;
};

struct KernelView {
  std::string input_name;
  Maybe<int64_t> pid;  // target.pid
  std::vector<KernelEntryView> kernels;
  std::vector<KernelCommView> communicators;
  size_t other_kernels = 0;  // resident kernels that are not NCCL's
  std::vector<OtherKernelView> others;  // the first of them, named
  std::vector<std::string> document_errors;
};

// Is `document` an `ncclscope.kernels/1` document (by its schema only)?
bool is_kernel_view_document(const nlohmann::json& document);

// Throws nsc::BadInput naming `input_name` when `document` is not a kernel view.
KernelView summarize_kernel_view(const nlohmann::json& document, const std::string& input_name);

// One kernel in one line: "AllReduce kernel (ncclDevFunc_AllReduce_Sum_f32_RING_SIMPLE, RING
// SIMPLE): 24 of 24 blocks waiting for data from rank 1 at step 24 (channels 0-23)".
// `with_function` false drops the device function's name (the verdict's short form).
std::string describe_kernel(const KernelEntryView& kernel, bool with_function = true);

}  // namespace nsc::triage
