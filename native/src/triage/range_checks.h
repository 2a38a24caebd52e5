// Range checks on a summarized input (issue 37): values no NCCL state can hold are flagged
// (unavailable, the value in the reason), left out of blame, and make the input partial.
#pragma once

#include "triage/process_view.h"

namespace nsc::triage {

// Per communicator: rank against nranks, type counters against the collectives launched in
// total, P2P peers and planned peers against nranks. Run on every input before the merge.
void check_ranges(ProcessView* process);

}  // namespace nsc::triage
