// The CUDA resources one communicator holds, decoded from NCCL's own host
// structs by DWARF names: its internal strong streams and events, the user
// streams of the plans being launched, pending event callbacks, and the
// buffers it registered (with the IPC imports from peers). libcuda's structs
// are never read: handles are printed as the opaque values NCCL stores.
#pragma once

#include "nccl/field_sink.h"
#include "nccl/object_view.h"

namespace nsc {

// Writes the "cuda" object of one `communicators[]` entry (docs/recorder.md).
void decode_cuda_resources(const ObjectView& comm, FieldSink& out);

// Names of the bits of ncclReg.state (NET_REG_COMPLETE, IPC_REG_COMPLETE, ...).
nlohmann::json registration_state_names(uint64_t state);

}  // namespace nsc
