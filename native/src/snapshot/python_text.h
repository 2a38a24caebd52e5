// Human text rendering of an ncclscope.python/1 document (`ncclscope py-stacks`).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace nsc {

std::string render_python_text(const nlohmann::json& document);

}  // namespace nsc
