// PyTorch's own flight-recorder dump format, written from what ncclscope read from memory:
// the pickle `torch._C._distributed_c10d._dump_nccl_trace()` returns (FlightRecorderDetail.hpp,
// FlightRecorder::dump), so torchfrtrace can analyze ranks that never wrote a dump.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace nsc {

// `torch`: the state document's "torch" section (flight_recorder_json + process_groups).
// Returns pickle protocol 2 bytes of {version, pg_config, comm_lib_version, pg_status, entries}.
// Throws BadInput when the section holds no recorder (its "unavailable" reason).
std::string flight_recorder_pickle(const nlohmann::json& torch);

// A JSON value as pickle protocol 2 (dict, list, str, int, float, bool, None; no memo).
// Lists whose first element is the marker "__tuple__" become tuples.
std::string pickle_of(const nlohmann::json& value);

}  // namespace nsc
