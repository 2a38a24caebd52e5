// Turns the audit command line's inputs into state documents: a `state --json` snapshot file is
// parsed, a core or a live pid is decoded (build_state_document), one after another.
#pragma once

#include <string>
#include <vector>

#include "audit/audit.h"
#include "snapshot/state_document.h"

namespace nsc::audit {

struct AuditLoadRequest {
  std::vector<std::string> paths;  // cores or snapshot files
  std::vector<int> pids;           // live processes, read frozen (one consistent view, resumed)
  StateRequest options;            // executable, sysroot, search paths for cores and pids
};

struct LoadedAuditInputs {
  std::vector<AuditInput> inputs;
  std::vector<AuditInputFailure> failures;
};

// Each input in command-line order (paths, then pids). An input that cannot be used at all is a
// failure naming it; the others are still loaded.
LoadedAuditInputs load_audit_inputs(const AuditLoadRequest& request);

}  // namespace nsc::audit
