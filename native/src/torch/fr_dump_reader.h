// PyTorch's flight-recorder dump files (fr_rank_N: the pickle the watchdog or
// `_dump_nccl_trace()` writes, or `ncclscope fr-dump`) read without a general unpickler
// (issue 31): a restricted reader that knows only the data opcodes such a dump uses (dict,
// list, tuple, str, int, float, bool, None, the memo) and no global, so no pickle can make it
// build an object or call anything. Anything else is refused with one line.
#pragma once

#include <string>
#include <string_view>

#include "torch/fr_records.h"

namespace nsc::torch {

// A file that starts like a pickle of protocol 2..5 (PROTO opcode).
bool looks_like_pickle(std::string_view head);

// The records of one dump; throws nsc::BadInput "<name>: ..." (one line) for a pickle that is
// not a flight-recorder dump, a truncated one, or one using any opcode beyond plain data
// (globals, object construction, persistent ids, extensions).
FrRankRecords read_fr_dump(std::string_view bytes, const std::string& name);

// The rank torchfrtrace gives a dump: the decimal digits that end its file name
// (fr_rank_3 -> 3, nccl_trace_rank_12.pkl -> 12); false when the name ends in none.
bool fr_dump_rank_from_name(const std::string& path, int* rank);

}  // namespace nsc::torch
