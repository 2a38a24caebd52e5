// The text views of an ncclscope.state/1 document, one function per view, shared by the CLI
// (`ncclscope state` is the header, every communicator's detail and the threads) and the gdb
// extension (nccl-state, nccl-comm, nccl-ring, nccl-proxy, nccl-threads through the C API's
// `render` command). Every null value is printed as `<unreadable ...>` with its reason.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nsc {

struct ViewOptions {
  bool expand = false;       // one line per channel (identical neighbours are grouped otherwise)
  long max_frames = -1;      // frames shown per thread; -1 all
  // The state document a subset came from (process groups, libraries); null when not known.
  const nlohmann::json* document = nullptr;
};

// "comm 0x6db0a96d9cb7fc37 rank 0/2 (0x55d0c8a1b2c0)".
std::string comm_title(const nlohmann::json& comm);

// What failed, first (issue 32): the fatal signal (a core's; labelled when another process sent
// it), each communicator whose health is not ok, NCCL's last error message. Empty when none.
std::vector<std::string> failure_lines(const nlohmann::json& document);
// PyTorch's watchdog liveness (torch.liveness): one line per watchdog and heartbeat monitor.
std::vector<std::string> torch_liveness_lines(const nlohmann::json& document);

// nccl-state: the target line, one line per communicator, a summary line.
std::string render_state_list(const nlohmann::json& document);
// nccl-comm and the CLI's communicator sections: a list of communicator objects in full.
std::string render_comm_details(const nlohmann::json& communicators, const ViewOptions& options);
// nccl-ring: {"communicators": [{address, comm_hash, rank, nranks, channels}]}.
std::string render_rings(const nlohmann::json& data, const ViewOptions& options);
// nccl-proxy: {"communicators": [{address, comm_hash, rank, nranks, proxy_ops}]}.
std::string render_proxy(const nlohmann::json& data);
// nccl-threads and the CLI's threads: {"source", "threads", "warnings", "target_kind"}.
std::string render_threads(const nlohmann::json& data, const ViewOptions& options);

// The view named by the C API's `render` request ("state", "comm", "ring", "proxy",
// "threads"; "kernels" for an ncclscope.kernels/1 document). Throws UsageError for another name.
std::string render_view(const std::string& view, const nlohmann::json& data, const ViewOptions& options);

}  // namespace nsc
