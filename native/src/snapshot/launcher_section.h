// The `launcher` object of a state document: the allowlisted launcher variables of
// the process and the rank they give (docs/schema-state.md#launcher).
#pragma once

#include <nlohmann/json.hpp>

#include "target/launcher_environment.h"

namespace nsc {

// Rank from the first of RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID
// that is set; a value that is not a non-negative integer (or not below the world
// size) gives rank null and the reason, never 0.
nlohmann::json launcher_json(const LauncherEnvironment& environment);

}  // namespace nsc
