// Connections as the GPU sees them: for each channel of a communicator, the
// send/recv connections to its ring and tree peers, with the step counters a
// running NCCL kernel publishes in device memory (head, tail, LL flags) and the
// step each connection had when the kernel started. Host-side pointers come from
// NCCL's host copies (struct ncclConnector); the counters are read through a
// second target that reads device memory (cuda-gdb's @global reads).
#pragma once

#include <nlohmann/json.hpp>

#include "layout/layout.h"
#include "nccl/field_sink.h"
#include "target/target.h"

namespace nsc {

// comm_entry is the communicator's decoded `communicators[]` entry (rank, nranks,
// channels with ring/tree peers). Returns its "device" section:
// {"dev_comm", "nccl_steps", "buff_sizes", "channels":[{"id", "connections":[...]}],
//  "unavailable":{field: why}}. A device read that fails makes that one field
// unavailable (not a document error). Nothing is ever written to either target.
nlohmann::json decode_device_connections(Target& host, Target& device, const LayoutProfile& layout,
                                         uint64_t comm_address, const nlohmann::json& comm_entry,
                                         const DecodeLimits& limits = {});

}  // namespace nsc
