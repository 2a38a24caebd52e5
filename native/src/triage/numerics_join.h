// Buffer numerics in triage (issue 20 item 1): `ncclscope.numerics/1` documents, given as
// inputs (`nccl-numerics --json` under cuda-gdb, `ncclscope numerics --json`) or measured by
// triage itself from a core's or live process's host memory, reduced to what triage shows
// and joined to ranks by comm_hash and rank: "rank 3's send buffer of AllReduce #12 holds
// 4,096 NaN (bf16)". Evidence beside the verdict; it never blames.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nsc::triage {

struct Job;

struct NumericsView {
  std::string input_name;
  std::string source;  // "input" (a numerics document given) or "host memory" (measured by triage)
  std::vector<nlohmann::json> buffers;  // type-checked subset of the document's buffers[]
};

bool is_numerics_document(const nlohmann::json& document);

// Throws nsc::BadInput naming input_name when the document is not ncclscope.numerics/1.
NumericsView summarize_numerics_document(const nlohmann::json& document, const std::string& input_name,
                                         const std::string& source);

// The report's "numerics" section (null when no buffer was read and no document was given,
// so reports without numerics keep their shape): each buffer with its world rank and
// process group, those holding NaN or Inf first.
void join_numerics(Job* job, std::vector<NumericsView> views);

// "rank 3's send buffer of AllReduce #12 holds 4,096 NaN (bf16)": one buffer's sentence
// (empty when it holds no NaN or Inf).
std::string numerics_sentence(const nlohmann::json& buffer);

}  // namespace nsc::triage
