// Turns the command line's inputs (files, directories, pids) into process
// summaries: JSON snapshots are parsed here, cores and live pids go through
// the state builder; several at once on `jobs` threads.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "snapshot/state_document.h"
#include "triage/process_view.h"
#include "triage/triage.h"

namespace nsc::triage {

using StateBuilder = std::function<nlohmann::json(const StateRequest&)>;
// A core's or live process's buffer numerics (ncclscope.numerics/1) over its state document.
using NumericsBuilder = std::function<nlohmann::json(const StateRequest&, const nlohmann::json& state)>;

struct LoadRequest {
  std::vector<std::string> paths;  // files or directories
  std::vector<int> pids;
  std::string sysroot;
  std::string executable;          // the ranks' executable, for cores (optional)
  std::vector<std::string> solib_search_path, profile_path;
  unsigned jobs = 0;               // 0: one per CPU
  StateBuilder build_state;        // for cores and pids; unset: they are reported unusable
  NumericsBuilder build_numerics;  // for cores and pids; unset: no numerics measured
};

struct LoadedInputs {
  std::vector<ProcessView> processes;
  std::vector<TriageFailure> failures;
  std::vector<KernelView> kernel_views;  // ncclscope.kernels/1 files, by their schema
  std::vector<NumericsView> numerics_views;  // ncclscope.numerics/1 files, and measured in cores/pids
};

// One work item per file or pid, in command-line order; directories expand to
// their core*, *.core and *.json files in natural order (rank-2 before rank-10).
// A JSON file whose schema is ncclscope.kernels/1 (e.g. rank0.kernels.json) is a kernel view,
// one of ncclscope.numerics/1 a numerics view.
LoadedInputs load_triage_inputs(const LoadRequest& request);

// Reads and summarizes one JSON snapshot file; throws nsc::BadInput naming it.
ProcessView load_snapshot_file(const std::string& path);
// Reads and parses one JSON file; throws nsc::BadInput naming it ("corrupt snapshot: ...").
nlohmann::json parse_snapshot_file(const std::string& path);

// Natural order of names: digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b);

}  // namespace nsc::triage
