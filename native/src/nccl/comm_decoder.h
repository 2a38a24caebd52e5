// Decodes one struct ncclComm into its `communicators[]` entry of
// ncclscope.state/1 (docs/schema-state.md).
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "layout/layout.h"
#include "nccl/field_sink.h"
#include "nccl/object_view.h"
#include "target/target.h"

namespace nsc {

nlohmann::json decode_communicator(Target& target, const LayoutProfile& layout, uint64_t address,
                                   nlohmann::json* errors, const DecodeLimits& limits = {});

// NCCL's last WARN message (debug.cc: `char ncclLastError[1024]`, what ncclGetLastError returns),
// a process-wide buffer: {"text": "..." ("" when NCCL warned of nothing), "address"}, or
// {"text": null, "unavailable": why} (no symbol in this build or profile, not saved in the core).
nlohmann::json decode_last_error(Target& target, const LayoutProfile& layout, uint64_t load_bias);

// Sections, one per file; each writes its keys through the sink.
void decode_identity(const ObjectView& comm, FieldSink& out);        // comm_decoder.cc
void decode_counters(const ObjectView& comm, FieldSink& out);        // comm_decoder.cc
void decode_health(const ObjectView& comm, FieldSink& out);          // comm_decoder.cc
void decode_channels(const ObjectView& comm, FieldSink& out);        // channel_decoder.cc
void decode_proxy_ops(const ObjectView& comm, FieldSink& out);       // proxy_decoder.cc
void decode_planned_work(const ObjectView& comm, FieldSink& out);    // planner_decoder.cc
void decode_launched_work(const ObjectView& comm, FieldSink& out);   // planner_decoder.cc

}  // namespace nsc
