// PyTorch's flight-recorder records matched across the ranks of a job (issue 31): every
// check PyTorch's analyzer (torchfrtrace, torch/distributed/flight_recorder/) makes, made
// from memory or from its dump files. Per process group, collectives are matched by
// collective_seq_id (missing ranks; collective type, input/output size, dtype and state
// mismatches, named as its MatchState), sends and receives pairwise in issue order; beside
// them what each rank's records say it waits on, and where each rank's history first leaves
// the majority of its group. The report's "flight_recorder" section (docs/triage.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torch/fr_records.h"
#include "triage/analysis.h"

namespace nsc::triage {

// One rank's records as triage holds them.
struct FrRankInput {
  int world_rank = 0;
  int process = -1;  // index into Job::processes
  const torch::FrRankRecords* records = nullptr;
};

struct FrMatch {
  nlohmann::json section;  // the report's "flight_recorder" section; null without records
  // Waits and mismatches the records show, in world ranks (Finding::waiting / culprits);
  // extra["pg"] names the group. Kinds: pg-not-issued, pg-p2p-unmatched, pg-no-input,
  // pg-queued, pg-type-mismatch, pg-size-mismatch, pg-dtype-mismatch (finding_kinds.cc).
  std::vector<Finding> findings;
  // Per process: "all_reduce #4 on dp0 (scheduled) at train.py:96", its earliest record
  // not completed, else its last record; "" without records.
  std::vector<std::string> recorded_site;
  // Per process: its records say what it waits on (a dump input has no host thread).
  std::vector<bool> waits_from_records;
  // Per process: its records hold an operation not completed (it sits in one).
  std::vector<bool> records_unfinished;
};

FrMatch match_flight_records(const std::vector<FrRankInput>& ranks, size_t process_count);

// A dump that does not belong with the others: a process group whose ranks or description
// differ from what most dumps say, or another dump format version. Per input (parallel to
// `ranks`): "" when it agrees, else why ("pg 3 is dp0 [0, 2] here, dp1 [1, 3] in 3 other dumps").
std::vector<std::string> fr_dump_conflicts(const std::vector<const torch::FrRankRecords*>& ranks);

}  // namespace nsc::triage
