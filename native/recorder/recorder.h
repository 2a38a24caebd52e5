// The flight recorder's writer: one private anonymous mapping (format in
// cuda/recorder_format.h), one ring per thread, fixed-size records. The hot
// path takes no lock and allocates nothing: a thread writes only its own ring
// and publishes each record with a release store of its sequence number.
#pragma once

#include <cstdint>

#include "cuda/recorder_format.h"

namespace nsc::recorder {

// The region, mapped once (at library load); nullptr if mmap failed.
RecorderHeader* region();

// Appends one record to the calling thread's ring (claims a ring on first use).
void record(RecordKind kind, RecordPhase phase, RecordApi api, int32_t aux, uint64_t a0 = 0,
            uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0, uint64_t a4 = 0);

// Marks a source (CUPTI, NCCL profiler) as active in the header.
void mark_source(RecorderSource source);

// Claims a communicator slot for NCCL's profiler init; nullptr when all are taken.
CommEntry* claim_comm(uint64_t comm_hash, int rank, int nranks, int nnodes, const char* name);

// 64-bit FNV-1a of opaque handle bytes (IPC handles are 64 bytes; records keep the hash).
uint64_t fingerprint(const void* bytes, uint64_t size);

}  // namespace nsc::recorder

// The C entry points, exported for tests and tools (besides InitializeInjection
// and ncclProfiler_v5, which CUDA and NCCL look up themselves).
extern "C" {
// Address of the region header (also found by its magic in memory).
void* ncclscope_recorder_region(void);
}
