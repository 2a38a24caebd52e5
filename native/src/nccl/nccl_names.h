// Names of NCCL enumerations used in output. Enum names come from the layout
// (DWARF) when it has them; the fixed tables below cover #define constants.
#pragma once

#include <cstdint>
#include <string>

#include "layout/layout.h"

namespace nsc {

// seqNumber[] index -> "AllReduce" (ncclFunc_t order, from the layout's enum when present).
std::string collective_name(const LayoutProfile& layout, int64_t func);
// NCCL_PROTO_* (LL, LL128, Simple) and NCCL_ALGO_* indices.
std::string protocol_name(int64_t protocol);
std::string algorithm_name(int64_t algorithm);
// TRANSPORT_* of a proxy connection (transport.h, unchanged 2.18-2.30): "p2p", "shm", "net",
// "collnet", "profiler"; "transport(N)" when unknown.
std::string transport_name(int64_t transport);
// Enum value -> name via the layout ("ncclFloat32"); "<enum_name>(N)" when unknown.
std::string enum_value_name(const LayoutProfile& layout, const std::string& enum_name, int64_t value);
// Why a field is unavailable when the version lacks it: "not in NCCL 2.21.5 (ncclComm has no
// seqNumber[])"; "not in this NCCL version (...)" when the layout names no version.
std::string not_in_version(const LayoutProfile& layout, const std::string& what);
// "0000:19:00.0" from NCCL's int64 bus id encoding.
std::string bus_id_text(int64_t bus_id);

}  // namespace nsc
