// Builds the `ncclscope.numerics/1` document (docs/numerics.md): for the collective each
// communicator is in (the newest launched, not yet reclaimed: nccl/planner_decoder.cc's
// "launched") and for work still planned, the send and receive buffers' counts of NaN,
// +/-Inf, subnormals, zeros and the largest magnitude. Host memory is read through the
// target; device memory only through a device reader (cuda-gdb), else the buffer is
// "not readable here". Buffers over a size limit are sampled, the sample stated.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "snapshot/state_document.h"
#include "target/target.h"

namespace nsc {

struct NumericsLimits {
  uint64_t full_read_bytes = 64ull << 20;  // a buffer up to this size is read whole
  uint64_t sample_chunks = 256;            // else this many chunks, evenly spaced
  uint64_t chunk_bytes = 64ull << 10;      // of this size each
};

struct NumericsOptions {
  NumericsLimits limits;
  bool all_launched = false;  // every launched collective awaiting reclaim, not only the newest
};

struct NumericsRequest {
  StateRequest target;
  NumericsOptions options;
};

// Opens the target, decodes its state (unless a state document decoded earlier is given) and
// reads the buffers; device memory through request.target.read_device_memory when set. Throws
// nsc::BadInput when the target cannot be opened.
nlohmann::json build_numerics_document(const NumericsRequest& request, const nlohmann::json* earlier_state = nullptr);

// Over a state document decoded earlier: host = the process's memory, device = memory as
// the GPU sees it (nullptr outside cuda-gdb).
nlohmann::json numerics_of_state(const nlohmann::json& state, Target& host, Target* device,
                                 const NumericsOptions& options);

// Over a state document decoded earlier from the same target: opens it again (no freeze),
// reads host memory only (device buffers: "not readable here").
nlohmann::json numerics_of_target(const StateRequest& request, const nlohmann::json& state,
                                  const NumericsOptions& options);

// What triage reads per buffer: whole up to 4 MiB, else 64 chunks of 16 KiB (1 MiB).
NumericsOptions triage_numerics_options();

// 0 when every buffer was read and the state had no error, else 1.
int numerics_exit_code(const nlohmann::json& document);

}  // namespace nsc
