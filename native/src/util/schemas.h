// Every document schema name in one place: the value of each document's "schema"
// key (docs/architecture.md, "Where each document is built"). A name, once published,
// is a contract. The gdb extension keeps its own copies (gdbext/ncclscope/validate.py).
#pragma once

namespace nsc {

constexpr const char* kStateSchema = "ncclscope.state/1";      // snapshot/state_document.cc
constexpr const char* kCudaSchema = "ncclscope.cuda/1";        // snapshot/cuda_document.cc
constexpr const char* kPythonSchema = "ncclscope.python/1";    // cli/python_command.cc
constexpr const char* kKernelsSchema = "ncclscope.kernels/1";  // snapshot/kernels_document.cc
constexpr const char* kNumericsSchema = "ncclscope.numerics/1";  // snapshot/numerics_document.cc
constexpr const char* kTriageSchema = "ncclscope.triage/1";    // triage/triage.cc
constexpr const char* kAuditSchema = "ncclscope.audit/1";      // audit/audit.cc
constexpr const char* kLayoutSchema = "ncclscope.layout/1";    // layout/layout_profile.cc

}  // namespace nsc
