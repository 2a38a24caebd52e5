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
//  "last_seq": [{"comm_hash", "collective", "ranks": [{"rank", "seq"}]}],
//  "compared": collectives recorded by two or more ranks (what the check covered)}.
// Only collectives still inside every involved rank's ring window are compared.
nlohmann::json compare_recorded_collectives(const std::vector<nlohmann::json>& recorders);

// Joins IPC handles across rank processes by handle fingerprint: for each import,
// the process that exported it (owner pid, address there) or "owner not among the inputs".
// {"imports": [{"importer_pid", "address", "kind", "handle_fingerprint", "owner_pid"|null,
//               "owner_address"|null, "closed"}]}
nlohmann::json match_ipc_handles(const std::vector<nlohmann::json>& recorders);

// Ends each chain of a rank's recorder section at the ranks it waits for: for every
// NCCL op in a chain step (comm hash, collective, seq = NCCL's seqNumber before the launch,
// so 0 for the first), the ranks whose state documents show seq_launched[collective] <= seq
// have not launched it. `states` are ncclscope.state/1 documents of all ranks (any order).
// Returns a copy of `chains` with "waits_for_ranks" (and "launched_by_ranks") on such steps;
// with list_launched false, "launched_by_count" instead (at 4,096 ranks the lists are quadratic).
nlohmann::json annotate_chains_with_ranks(const nlohmann::json& chains,
                                          const std::vector<nlohmann::json>& states,
                                          bool list_launched = true);

}  // namespace nsc
