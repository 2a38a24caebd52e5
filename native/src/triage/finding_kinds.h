// Every finding kind in one table (issue 30): its name, what it makes of the verdict when no
// finding explains a hang, whether its far side may be blamed, the far side's local role, and
// its sentence. Producers name a kind from here; docs/triage.md's findings table is held to it
// by triage_finding_kinds_test. Only the verdict says "culprit": a finding states roles.
#pragma once

#include <string>
#include <vector>

#include "triage/analysis.h"

namespace nsc::triage {

// What a finding of this kind makes of the verdict when no finding explains a hang.
enum class VerdictEffect { kNone, kIncomplete, kMismatch };

struct FindingKind {
  const char* name;
  VerdictEffect effect;
  // Its far side (Finding::culprits) may be the verdict's culprit; false: they are waited on
  // but never blamed for it (queued behind their own work, or nobody is named).
  bool may_blame;
  // The far side's local role, as findings print it: "never launched it", "aborted".
  const char* far_role;
  // One sentence for the verdict's explanation: "On communicator X (pg dp1, 2 ranks), ...".
  std::string (*sentence)(const Job& job, size_t comm, const Finding& finding);
};

const std::vector<FindingKind>& finding_kinds();
// The row of `name`; throws std::logic_error for a kind the table lacks (a producer's bug).
const FindingKind& finding_kind(const std::string& name);

// "Communicator 0x..: <first evidence>; <last evidence>.": the sentence of kinds that name
// nobody, and of every kind where the verdict is incomplete (the evidence says why).
std::string evidence_sentence(const Job& job, size_t comm, const Finding& finding);
// "pg tp0" (PyTorch's description, else its name) of a communicator, "" when unknown.
std::string pg_label(const CommGroup& group);
// "rank 1" in the world; "world rank 1 (rank 0 of that communicator)" elsewhere.
std::string comm_ranks_phrase(const Job& job, size_t comm, const std::vector<int>& ranks, bool absent);

}  // namespace nsc::triage
