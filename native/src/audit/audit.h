// `ncclscope audit`: named invariants checked over decoded state (ncclscope.state/1
// documents, one per process), reported as the ncclscope.audit/1 document (docs/audit.md).
// Pure functions of the documents: no target is opened here (audit_inputs.h loads them).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nsc::audit {

// One process's state: its name on the command line ("rank0.core", "pid 123"), how it was
// read ("core", "live", "snapshot"), and the ncclscope.state/1 document.
struct AuditInput {
  std::string name;
  std::string kind;
  nlohmann::json document;
};

// An input that gave no document at all (unreadable file, not a state document).
struct AuditInputFailure {
  std::string name;
  std::string reason;
};

// The ncclscope.audit/1 document: every rule with its counts, the findings (rule, severity,
// evidence) and, per communicator, the rules that could not be checked and why.
nlohmann::json build_audit_document(const std::vector<AuditInput>& inputs,
                                    const std::vector<AuditInputFailure>& failures = {});

// 0: no error-severity finding and every input read whole; 1: an error-severity finding, or an
// input read only in part (or unusable while others were read); 2: no input usable.
int audit_exit_code(const nlohmann::json& audit_document);

}  // namespace nsc::audit
