// Text of an `ncclscope.numerics/1` document: one line per buffer, and the sentence
// triage uses for a buffer that holds NaN or Inf.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace nsc {

std::string render_numerics_text(const nlohmann::json& document);

// "send buffer of AllReduce #12 holds 4,096 NaN (bf16)", or "" when the buffer's counts
// show no NaN or Inf.
std::string bad_values_sentence(const nlohmann::json& buffer);

// "send buffer of AllReduce #4 is mostly underflowed: 1,000 subnormal and 48 zero of 2,048
// elements (e4m3)", or "" unless some element is subnormal and most are subnormal or zero.
std::string underflow_sentence(const nlohmann::json& buffer);

// 4096 -> "4,096".
std::string group_thousands(uint64_t value);

}  // namespace nsc
