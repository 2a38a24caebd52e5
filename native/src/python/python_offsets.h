// PythonOffsets: where the Python decoder finds each field it reads, for one
// interpreter build. Filled by name from a layout profile (3.11, 3.12: DWARF)
// or from the _Py_DebugOffsets table at the start of _PyRuntime (3.13, 3.14),
// never typed by hand. The frame walker reads memory through these only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layout/layout.h"
#include "target/target.h"

namespace nsc {

struct PythonOffsets {
  uint32_t version_hex = 0;  // PY_VERSION_HEX
  std::string source;        // "profile:<path>", "dwarf:<path>", "_Py_DebugOffsets at 0x..."

  uint64_t runtime_interpreters_head = 0;  // _PyRuntimeState.interpreters.head
  uint64_t interpreter_next = 0;           // PyInterpreterState.next
  uint64_t interpreter_threads_head = 0;   // PyInterpreterState.threads.head
  uint64_t thread_next = 0;                // PyThreadState.next
  uint64_t thread_id = 0;                  // PyThreadState.thread_id (pthread_t)
  uint64_t thread_native_id = 0;           // PyThreadState.native_thread_id (kernel tid)
  // 3.11/3.12: frames hang off tstate->cframe->current_frame; 3.13+: tstate->current_frame.
  std::optional<uint64_t> thread_cframe;
  uint64_t cframe_current_frame = 0;
  uint64_t thread_current_frame = 0;

  uint64_t frame_previous = 0;     // _PyInterpreterFrame.previous
  uint64_t frame_code = 0;         // f_code (3.11/3.12), f_executable (3.13+)
  bool frame_code_is_stackref = false;  // 3.14: f_executable is a tagged _PyStackRef
  uint64_t frame_instr = 0;        // prev_instr (3.11/3.12), instr_ptr (3.13+)
  uint64_t frame_owner = 0;        // char owner
  std::optional<uint64_t> frame_is_entry;  // 3.11: bool is_entry
  // Owners of complete frames (FRAME_OWNED_BY_THREAD/GENERATOR/FRAME_OBJECT); any
  // other owner is an entry shim of the eval loop (3.12+) and is no Python frame.
  int64_t owner_thread = 0, owner_generator = 1, owner_frame_object = 2;
  std::vector<int64_t> owner_shims;  // FRAME_OWNED_BY_CSTACK (3.12, 3.13), also _INTERPRETER (3.14)

  uint64_t object_type = 0;        // PyObject.ob_type
  uint64_t code_filename = 0, code_name = 0, code_qualname = 0, code_linetable = 0;
  uint64_t code_firstlineno = 0, code_code_adaptive = 0;
  uint64_t bytes_size = 0, bytes_data = 0;  // PyBytesObject ob_base.ob_size, ob_sval
  uint64_t unicode_length = 0, unicode_state = 0;
  uint64_t ascii_object_size = 0;           // sizeof(PyASCIIObject): compact ASCII data follows
  std::optional<uint64_t> compact_object_size;  // sizeof(PyCompactUnicodeObject), when known
  // PyASCIIObject.state bitfield positions (bits from the least significant).
  uint32_t state_kind_shift = 2, state_kind_bits = 3, state_compact_shift = 5, state_ascii_shift = 6;

  // &PyCode_Type, &PyUnicode_Type, &PyBytes_Type in the target, when known: objects
  // of another type (freed, garbage) are reported, not decoded.
  std::optional<uint64_t> code_type_address, unicode_type_address, bytes_type_address;
};

// From a profile (3.11/3.12). Throws nsc::BadInput naming the profile and the
// missing struct or member.
PythonOffsets python_offsets_from_layout(const LayoutProfile& layout);

// The _Py_DebugOffsets table of 3.13/3.14 at the start of _PyRuntime. Returns
// nullopt (and *why) when the cookie is absent, the version is not 3.13/3.14
// or the table is implausible.
std::optional<PythonOffsets> python_offsets_from_debug_table(Target& target, uint64_t runtime_address,
                                                             std::string* why);

// Size in bytes of the _Py_DebugOffsets table of a minor version (13, 14), 0 if unknown:
// synthetic test memory is laid out with the same field order.
uint64_t debug_offsets_table_size(int minor);
// Byte position of a field ("thread_state.native_thread_id") in that table, or nullopt.
std::optional<uint64_t> debug_offsets_field(int minor, const std::string& field);

}  // namespace nsc
