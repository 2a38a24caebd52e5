// The text form of an ncclscope.audit/1 document: a table of rules (severity, passed, fired,
// not checked), then each finding with its evidence, then what could not be checked and why.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace nsc::audit {

// `verbose`: every "not checked" line; otherwise one line per rule with the first reason.
std::string render_audit_text(const nlohmann::json& audit_document, bool verbose = false);

}  // namespace nsc::audit
