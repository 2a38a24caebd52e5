// The user's own line on the path to what a thread is blocked in (issue 30): the line a
// person opens in their editor, never a native frame or a library's wrapper.
#pragma once

#include <string>
#include <vector>

#include "triage/process_view.h"

namespace nsc::triage {

struct CallSite {
  std::string call;      // what that line called: "barrier", "all_reduce", "cudaStreamSynchronize"
  std::string function;  // the user's function: "run_tpdp", "park_in_pause()"
  std::string location;  // "train.py:88"; "" for a native frame (no line information)
  bool found() const { return !function.empty(); }
  // "barrier at train.py:88", "pause() in park_in_pause()", "" when nothing was found.
  std::string text() const;
};

// Frames innermost first (ThreadView order). Python: the innermost frame outside installed
// packages and the standard library, stepping out past thin wrappers (a user function named
// like the library function it calls: def all_reduce(t): dist.all_reduce(t)); `call` is the
// library Python function nearest to that frame, decorators' wrappers passed over (the API the
// line called: new_group, not the helper it runs), else `blocked_in`. Without Python frames: the
// innermost frame of the program itself and the function it called.
CallSite user_call_site(const std::vector<FrameView>& frames, const std::string& blocked_in = "");
CallSite user_call_site(const ThreadView& thread);

}  // namespace nsc::triage
