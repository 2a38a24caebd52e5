// The Python frames of every thread of one interpreter, read from target
// memory with PythonOffsets. Pure functions of memory: bad memory gives
// "unreadable frame at 0x...: reason", loops are capped and cycles caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "python/python_offsets.h"
#include "target/target.h"

namespace nsc {

struct PythonFrame {
  uint64_t address = 0;          // the _PyInterpreterFrame
  uint64_t code = 0;             // its code object
  std::string function;          // co_name (what faulthandler and py-spy print)
  std::string qualname;          // co_qualname ("Worker.run")
  std::string file;              // co_filename
  std::optional<int64_t> line;   // from co_linetable at the frame's instruction
  std::string line_unavailable;  // why line is empty
  // Outermost frame of one run of the eval loop: C code called it (the
  // native frame _PyEval_EvalFrameDefault below it belongs to this run).
  bool entry = false;
  std::string error;             // non-empty: the frame could not be decoded (then the walk stops)
};

struct PythonThread {
  uint64_t thread_state = 0;     // PyThreadState address
  uint64_t thread_id = 0;        // pthread_t (faulthandler's "Thread 0x...")
  uint64_t native_thread_id = 0; // kernel tid: joins the native thread
  std::vector<PythonFrame> frames;  // innermost first
  bool truncated = false;        // more frames than PythonWalkLimits::max_frames
  std::string error;             // thread state unreadable (frames then empty)
};

struct PythonWalkLimits {
  size_t max_interpreters = 64;
  size_t max_threads = 4096;
  size_t max_frames = 4096;           // per thread
  size_t max_line_table = 1 << 20;    // bytes; a larger co_linetable is not believed
  size_t max_string = 1024;           // characters of a name or path
};

// Every thread state of every interpreter, newest first as CPython lists them.
// Problems reaching the thread lists go to *errors (one line each).
std::vector<PythonThread> walk_python_threads(Target& target, const PythonOffsets& offsets,
                                              uint64_t runtime_address, const PythonWalkLimits& limits,
                                              std::vector<std::string>* errors);

// A code object alone (as PyTorch's CapturedTraceback keeps it: PyCodeObject* + lasti,
// the byte offset PyFrame_GetLasti gives, negative before the first instruction):
// function, file and line; frame.error says why it could not be decoded.
PythonFrame decode_code_object(Target& target, const PythonOffsets& offsets, const PythonWalkLimits& limits,
                               uint64_t code, int64_t byte_offset);

// The line of the instruction at byte offset `address_in_code` (negative:
// before the first instruction) from a 3.11+ location table (co_linetable),
// as PyCode_Addr2Line computes it; nullopt for "no line" entries and for an
// offset the table does not cover. *why says which.
std::optional<int64_t> line_from_location_table(const uint8_t* table, size_t size, int64_t first_line,
                                                int64_t address_in_code, std::string* why);

}  // namespace nsc
