// The first lines a person reads (issue 30): what happened and where, who is to blame with
// that rank's own call site (or what is undecided and the fact that would decide), and what
// the others do. At most 3 lines and kHeadlineMaxWords words, in text, HTML and JSON alike.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "triage/analysis.h"

namespace nsc::triage {

constexpr size_t kHeadlineMaxWords = 60;

// {"what": "hang" | "deadlock" | "start-up" | "mismatch" | "incomplete" | "no-hang" | "error",
//  "lines": [...], "text": the lines joined by newlines}. `graph` is build_wait_graph's.
nlohmann::json build_headline(const Job& job, const std::string& verdict, const nlohmann::json& graph);

// Where wait-for graph node `id` is, as the headline names it: "barrier at train.py:88" (its
// principal thread's user call site), else what that thread is blocked in, else why unknown.
std::string node_site(const Job& job, int id);

}  // namespace nsc::triage
