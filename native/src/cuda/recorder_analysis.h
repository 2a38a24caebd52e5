// Cross-rank checks on flight recorder sections (one per rank process), for
// triage: the same collective (communicator, function, seq) must have the same
// count, datatype and root on every rank; NCCL does not check this and hangs
// or corrupts silently when they differ.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

namespace nsc {

// Each input is a "recorder" section from decode_recorder(). Returns
// {"mismatches": [{"comm_hash", "collective", "seq", "field", "values": [{"rank", "value"}]}],
//  "last_seq": [{"comm_hash", "collective", "ranks": [{"rank", "seq"}]}]}.
// Only collectives still inside every involved rank's ring window are compared.
nlohmann::json compare_recorded_collectives(const std::vector<nlohmann::json>& recorders);

// Joins IPC handles across rank processes by handle fingerprint: for each import,
// the process that exported it (owner pid, address there) or "owner not among the inputs".
// {"imports": [{"importer_pid", "address", "kind", "handle_fingerprint", "owner_pid"|null,
//               "owner_address"|null, "closed"}]}
nlohmann::json match_ipc_handles(const std::vector<nlohmann::json>& recorders);

}  // namespace nsc
