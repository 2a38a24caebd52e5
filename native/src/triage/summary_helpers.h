// Helpers shared by the two ways a snapshot becomes a ProcessView: from a
// parsed document (process_view.cc) and straight from its text (sax_summary.cc).
#pragma once

#include <string>
#include <vector>

#include "triage/process_view.h"

namespace nsc::triage {

bool is_runtime_function(const std::string& name);
FrameView make_frame(const std::string& function, std::string module, const Maybe<int64_t>& offset,
                     const Maybe<std::string>& pc, std::vector<std::string>* notes);
std::string normalize_pattern(const std::string& raw);
P2pDirection direction_of(const std::string& pattern, const std::string& collective);
int pick_principal_thread(const ProcessView& process);
bool is_service_thread(const std::string& blocked_in);

}  // namespace nsc::triage
