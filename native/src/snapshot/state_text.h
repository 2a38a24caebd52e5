// Human text rendering of an ncclscope.state/1 document.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace nsc {

std::string render_state_text(const nlohmann::json& document);

// "7", "unavailable" for null, "yes"/"no" for booleans: one cell of text output.
std::string cell_text(const nlohmann::json& value);

}  // namespace nsc
