// PyTorch process groups (from the flight recorder) joined to the NCCL communicators
// decoded from the same process: which ncclComm* is pg 'tp0' (ranks 0,1)?
// Evidence, in order: the group's size = nRanks, this process's index in the group's
// global ranks = the communicator's rank, then the group's collective count (last
// collective_seq_id) = the communicator's launched collectives (sum of seqNumber[]),
// then each communicator belonging to one group only. What stays ambiguous is said so.
#pragma once

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "torch/flight_recorder.h"

namespace nsc {

// `communicators`: the state document's "communicators" array; `global_rank`: this
// process's rank in the default group (launcher RANK), when known.
// Returns the "process_groups" array of the "torch" section (docs/schema-state.md).
nlohmann::json join_process_groups(const FlightRecorderState& recorder, const nlohmann::json& communicators,
                                   std::optional<int64_t> global_rank);

// Across the ranks of one job (state documents, each with its "torch" section joined):
// a group left ambiguous on a rank is decided when exactly one comm_hash is among the
// candidates of every member rank that knows the group (a communicator has the same
// comm_hash on all its ranks). Updates the documents' "process_groups" in place.
void resolve_process_groups_across_ranks(std::vector<nlohmann::json>* documents);

}  // namespace nsc
