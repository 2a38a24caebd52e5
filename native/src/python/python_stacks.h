// Finds the CPython interpreter of a target (the mapped python3.X or
// libpython3.X that defines _PyRuntime), picks its offsets (_Py_DebugOffsets
// for 3.13+, a layout profile by build-id or the interpreter's DWARF for
// 3.11/3.12) and walks every thread's Python frames. Also: the `python`
// entries of docs/schema-state.md and the merged native+Python stack.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "python/python_frames.h"
#include "stacks/thread_stacks.h"
#include "target/library_resolver.h"
#include "target/target.h"

namespace nsc {

struct PythonSearch {
  LibrarySearch library;                  // where local copies of the interpreter are found
  std::vector<std::string> profile_path;  // extra layout profile directories
  PythonWalkLimits limits;
};

struct PythonStacks {
  bool interpreter_mapped = false;  // some python3.X / libpython3.X is mapped
  std::string unavailable;          // "" when threads were read; else one line why not
  std::string interpreter;          // its path in the target
  std::string version;              // "3.11.2"; "" when unknown
  std::string build_id;
  std::string layout_source;        // profile/DWARF file, or "_Py_DebugOffsets at 0x..."
  uint64_t runtime_address = 0;     // _PyRuntime in the target
  std::vector<PythonThread> threads;
  std::optional<PythonOffsets> offsets;  // when threads were read: other decoders read code objects with them
  std::vector<std::string> errors;  // partial problems (lists that loop, unreadable states)
};

PythonStacks read_python_stacks(Target& target, const PythonSearch& search);

// The document's top-level "python" section (without per-thread frames) and a
// thread's "python" entry (docs/schema-state.md).
nlohmann::json python_summary_json(const PythonStacks& stacks);
nlohmann::json python_thread_json(const PythonThread& thread);
// The thread of `stacks` whose native_thread_id is tid, or nullptr.
const PythonThread* python_thread_for_tid(const PythonStacks& stacks, int tid);

// The native frames with each _PyEval_EvalFrameDefault replaced by the Python
// frames of its eval-loop run (py-spy --native style), as "merged_frames" entries:
// {"kind":"native", ...frame} or {"kind":"python","function","file","line"}.
// When the native and Python runs do not pair up, the leftover Python frames
// go where the outermost eval loop is, and *note says so.
// `native` is a thread's "frames" array of docs/schema-state.md (to_json(StackFrame)).
nlohmann::json merged_stack_json(const nlohmann::json& native, const PythonThread& python, std::string* note);

// Adds "python" (and "merged_frames" when the thread has native frames) to each
// entry of a state document's "threads" whose tid is a thread state's
// native_thread_id; thread states no native thread matches are returned.
std::vector<const PythonThread*> attach_python_to_threads(const PythonStacks& stacks, nlohmann::json* threads);

// "train.py:62 in finish" for a frame; "unreadable frame at 0x..." for a bad one.
std::string python_frame_text(const PythonFrame& frame);

}  // namespace nsc
