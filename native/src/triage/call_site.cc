#include "triage/call_site.h"

namespace nsc::triage {
namespace {

// "run_tpdp (train.py:186)" -> function "run_tpdp", location "train.py:186".
void split_python_label(const std::string& label, std::string* function, std::string* location) {
  size_t open = label.rfind(" (");
  if (open == std::string::npos || label.empty() || label.back() != ')') {
    *function = label;
    location->clear();
    return;
  }
  *function = label.substr(0, open);
  *location = label.substr(open + 2, label.size() - open - 3);
}

std::string python_function(const FrameView& frame) {
  std::string function, location;
  split_python_label(frame.label(), &function, &location);
  return function;
}

bool is_user_python(const FrameView& frame) { return frame.python && !frame.python_library; }

// "libcuda.so.1+0x22be19", "python3.12+0xf94af": a module offset, not a name a person can act on.
bool unsymbolized(const std::string& label) { return label.find("+0x") != std::string::npos; }

// The interpreter's own functions are never the user's program.
bool interpreter_function(const std::string& label) {
  return label.rfind("_Py", 0) == 0 || label.rfind("Py", 0) == 0 || label == "_start";
}

// The innermost user Python frame at or after `from`, stepping out past wrappers; frames.size()
// when there is none.
size_t python_site(const std::vector<FrameView>& frames) {
  size_t site = frames.size();
  for (size_t f = 0; f < frames.size(); ++f)
    if (is_user_python(frames[f])) {
      site = f;
      break;
    }
  // A wrapper: its name is the name of a library frame it called (frames between it and the
  // previous user frame). Its caller, when user code too, is the call site.
  for (int hops = 0; site < frames.size() && hops < 4; ++hops) {
    std::string name = python_function(frames[site]);
    bool wrapper = false;
    for (size_t f = site; f-- > 0 && !is_user_python(frames[f]);)
      wrapper = wrapper || (frames[f].python_library && python_function(frames[f]) == name);
    size_t caller = site + 1;
    while (caller < frames.size() && !frames[caller].python) ++caller;
    if (!wrapper || caller >= frames.size() || !is_user_python(frames[caller])) break;
    site = caller;
  }
  return site;
}

// A decorator's or a dispatcher's own frame (c10d_logger's `wrapper` around every collective,
// torch.no_grad's `decorate_context`): never the API a line called.
bool generic_wrapper(const std::string& function) {
  for (const char* name : {"wrapper", "wrapped", "inner", "_fn", "decorate_context", "_wrapped_call_impl",
                           "_call_impl", "__call__"})
    if (function == name) return true;
  return false;
}

// What the user's line called: the library frame nearest to it, past decorators' wrappers
// (new_group, not the _new_process_group_helper it calls); else the innermost library frame.
CallSite python_call_site(const std::vector<FrameView>& frames, size_t site, const std::string& blocked_in) {
  CallSite out;
  split_python_label(frames[site].label(), &out.function, &out.location);
  for (size_t f = site; f-- > 0 && out.call.empty();)
    if (frames[f].python_library && !generic_wrapper(python_function(frames[f]))) out.call = python_function(frames[f]);
  for (size_t f = 0; f < site && out.call.empty(); ++f)
    if (frames[f].python_library) out.call = python_function(frames[f]);
  if (out.call.empty()) out.call = blocked_in;
  return out;
}

CallSite native_call_site(const std::vector<FrameView>& frames, const std::string& blocked_in) {
  CallSite out;
  for (size_t f = 0; f < frames.size(); ++f) {
    const std::string& label = frames[f].label();
    if (!frames[f].user_code || frames[f].python || unsymbolized(label) || interpreter_function(label)) continue;
    out.function = short_function_name(label) + "()";
    bool named_callee = f > 0 && !unsymbolized(frames[f - 1].label());
    out.call = named_callee ? short_function_name(frames[f - 1].label()) + "()" : blocked_in;
    break;
  }
  return out;
}

}  // namespace

std::string CallSite::text() const {
  if (!found()) return "";
  // "unknown" and "user-code" are stack classes of a thread in no recognized call: none to name.
  bool no_call = call.empty() || call == "unknown" || call == "user-code";
  if (!location.empty()) return (no_call ? function : call) + " at " + location;
  return call.empty() || call == function ? function : call + " in " + function;
}

CallSite user_call_site(const std::vector<FrameView>& frames, const std::string& blocked_in) {
  size_t site = python_site(frames);
  if (site < frames.size()) return python_call_site(frames, site, blocked_in);
  return native_call_site(frames, blocked_in);
}

CallSite user_call_site(const ThreadView& thread) { return user_call_site(thread.frames, thread.blocked_in); }

}  // namespace nsc::triage
