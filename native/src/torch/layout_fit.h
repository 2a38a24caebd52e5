// Does a torch layout profile fit the memory it decoded? Checked on the decoded recorder
// before anything of it is shown: ring bounds (entries_ within max_entries_, next_ within the
// slots, ids past the slots), values no correct layout gives (a bool that is not 0 or 1),
// pg ids and sequence ids in range, record ids unique and below id_, sequence ids
// non-decreasing per group in record order, and strings that read as well-formed text.
//
// PyTorch writes one entry at a time under its mutex, so a core taken mid-write tears at most
// one entry: one failing entry among at least two sound ones is left out with one line (the
// rest decoded); more, or a broken ring, mean the profile does not fit this build, and the
// recorder becomes "unreadable: layout does not fit (why)" with no entry, group or status.
#pragma once

#include <string>

#include "torch/flight_recorder.h"

namespace nsc {

// Applies the check to a decoded state: leaves it, drops one torn entry (one line in
// errors), or clears it and sets `unavailable`.
void apply_layout_fit(FlightRecorderState* state);

// The recorder-level part alone, before any slot is read: "" when the ring's bounds can be.
std::string ring_bounds_problem(const FlightRecorderState& state);

}  // namespace nsc
