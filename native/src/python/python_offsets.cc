#include "python/python_offsets.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "nccl/object_view.h"
#include "python/python_layout.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc {
namespace {

class LayoutReader {
 public:
  explicit LayoutReader(const LayoutProfile& layout) : layout_(layout) {}

  const StructLayout& type(const std::string& name) const {
    const StructLayout* found = layout_.find_struct(name);
    if (found == nullptr) throw BadInput(origin() + ": no struct " + name);
    return *found;
  }
  std::optional<ResolvedField> find(const std::string& type_name, const std::string& path) const {
    std::string why;
    return ObjectView(nullptr, &layout_, &type(type_name), 0).resolve(path, &why);
  }
  uint64_t offset(const std::string& type_name, const std::string& path) const {
    auto field = find(type_name, path);
    if (!field) throw BadInput(origin() + ": struct " + type_name + " has no member " + path);
    return field->offset;
  }
  std::optional<uint64_t> optional_offset(const std::string& type_name, const std::string& path) const {
    auto field = find(type_name, path);
    return field ? std::optional<uint64_t>(field->offset) : std::nullopt;
  }
  std::string origin() const { return "python layout " + layout_.source; }

 private:
  const LayoutProfile& layout_;
};

void read_owner_values(const LayoutProfile& layout, PythonOffsets* offsets) {
  const EnumLayout* owners = layout.find_enum("_frameowner");
  if (owners == nullptr) throw BadInput("python layout " + layout.source + ": no enum _frameowner");
  for (const auto& [value, name] : owners->values) {
    if (name == "FRAME_OWNED_BY_THREAD") offsets->owner_thread = value;
    else if (name == "FRAME_OWNED_BY_GENERATOR") offsets->owner_generator = value;
    else if (name == "FRAME_OWNED_BY_FRAME_OBJECT") offsets->owner_frame_object = value;
    else if (name == "FRAME_OWNED_BY_CSTACK" || name == "FRAME_OWNED_BY_INTERPRETER")
      offsets->owner_shims.push_back(value);
  }
}

void read_unicode_state(const LayoutReader& reader, PythonOffsets* offsets) {
  offsets->unicode_state = reader.offset("PyASCIIObject", "state");
  auto bit_of = [&](const std::string& name) {
    auto field = reader.find("PyASCIIObject", "state." + name);
    if (!field || field->member->bit_size == 0)
      throw BadInput(reader.origin() + ": PyASCIIObject.state has no bitfield " + name);
    // Bits counted from the start of `state` (the storage unit may start later).
    return static_cast<uint32_t>((field->offset - offsets->unicode_state) * 8 + field->member->bit_offset);
  };
  offsets->state_kind_shift = bit_of("kind");
  offsets->state_kind_bits = reader.find("PyASCIIObject", "state.kind")->member->bit_size;
  offsets->state_compact_shift = bit_of("compact");
  offsets->state_ascii_shift = bit_of("ascii");
}

}  // namespace

PythonOffsets python_offsets_from_layout(const LayoutProfile& layout) {
  LayoutReader reader(layout);
  PythonOffsets offsets;
  auto version = layout.constants.find(kPyVersionHexConstant);
  if (version == layout.constants.end())
    throw BadInput("python layout " + layout.source + ": no " + kPyVersionHexConstant);
  offsets.version_hex = static_cast<uint32_t>(version->second);
  offsets.source = layout.source;
  offsets.runtime_interpreters_head = reader.offset("_PyRuntimeState", "interpreters.head");
  offsets.interpreter_next = reader.offset("PyInterpreterState", "next");
  offsets.interpreter_threads_head = reader.offset("PyInterpreterState", "threads.head");
  offsets.thread_next = reader.offset("PyThreadState", "next");
  offsets.thread_id = reader.offset("PyThreadState", "thread_id");
  offsets.thread_native_id = reader.offset("PyThreadState", "native_thread_id");
  offsets.thread_cframe = reader.optional_offset("PyThreadState", "cframe");
  if (offsets.thread_cframe) offsets.cframe_current_frame = reader.offset("_PyCFrame", "current_frame");
  else offsets.thread_current_frame = reader.offset("PyThreadState", "current_frame");

  offsets.frame_previous = reader.offset("_PyInterpreterFrame", "previous");
  auto code = reader.optional_offset("_PyInterpreterFrame", "f_code");
  offsets.frame_code = code ? *code : reader.offset("_PyInterpreterFrame", "f_executable");
  auto prev_instr = reader.optional_offset("_PyInterpreterFrame", "prev_instr");
  offsets.frame_instr = prev_instr ? *prev_instr : reader.offset("_PyInterpreterFrame", "instr_ptr");
  offsets.frame_owner = reader.offset("_PyInterpreterFrame", "owner");
  offsets.frame_is_entry = reader.optional_offset("_PyInterpreterFrame", "is_entry");
  read_owner_values(layout, &offsets);

  offsets.object_type = reader.offset("PyObject", "ob_type");
  offsets.code_filename = reader.offset("PyCodeObject", "co_filename");
  offsets.code_name = reader.offset("PyCodeObject", "co_name");
  offsets.code_qualname = reader.offset("PyCodeObject", "co_qualname");
  offsets.code_linetable = reader.offset("PyCodeObject", "co_linetable");
  offsets.code_firstlineno = reader.offset("PyCodeObject", "co_firstlineno");
  offsets.code_code_adaptive = reader.offset("PyCodeObject", "co_code_adaptive");
  offsets.bytes_size = reader.offset("PyBytesObject", "ob_base.ob_size");
  offsets.bytes_data = reader.offset("PyBytesObject", "ob_sval");
  offsets.unicode_length = reader.offset("PyASCIIObject", "length");
  offsets.ascii_object_size = reader.type("PyASCIIObject").size;
  offsets.compact_object_size = reader.type("PyCompactUnicodeObject").size;
  read_unicode_state(reader, &offsets);
  return offsets;
}

// ---- _Py_DebugOffsets (3.13, 3.14) ----------------------------------------
// The table is all uint64_t after the 8-byte cookie, so each tag's documented
// struct (Include/internal/pycore_runtime.h in 3.13, pycore_debug_offsets.h in
// 3.14) is its field order; a field's position is 8 x its index.
namespace {

const std::vector<std::string>& debug_table_fields(int minor) {
  static const std::vector<std::string> v313 = {
      "cookie", "version", "free_threaded",
      "runtime_state.size", "runtime_state.finalizing", "runtime_state.interpreters_head",
      "interpreter_state.size", "interpreter_state.id", "interpreter_state.next",
      "interpreter_state.threads_head", "interpreter_state.gc", "interpreter_state.imports_modules",
      "interpreter_state.sysdict", "interpreter_state.builtins", "interpreter_state.ceval_gil",
      "interpreter_state.gil_runtime_state", "interpreter_state.gil_runtime_state_enabled",
      "interpreter_state.gil_runtime_state_locked", "interpreter_state.gil_runtime_state_holder",
      "thread_state.size", "thread_state.prev", "thread_state.next", "thread_state.interp",
      "thread_state.current_frame", "thread_state.thread_id", "thread_state.native_thread_id",
      "thread_state.datastack_chunk", "thread_state.status",
      "interpreter_frame.size", "interpreter_frame.previous", "interpreter_frame.executable",
      "interpreter_frame.instr_ptr", "interpreter_frame.localsplus", "interpreter_frame.owner",
      "code_object.size", "code_object.filename", "code_object.name", "code_object.qualname",
      "code_object.linetable", "code_object.firstlineno", "code_object.argcount",
      "code_object.localsplusnames", "code_object.localspluskinds", "code_object.co_code_adaptive",
      "pyobject.size", "pyobject.ob_type",
      "type_object.size", "type_object.tp_name", "type_object.tp_repr", "type_object.tp_flags",
      "tuple_object.size", "tuple_object.ob_item", "tuple_object.ob_size",
      "list_object.size", "list_object.ob_item", "list_object.ob_size",
      "dict_object.size", "dict_object.ma_keys", "dict_object.ma_values",
      "float_object.size", "float_object.ob_fval",
      "long_object.size", "long_object.lv_tag", "long_object.ob_digit",
      "bytes_object.size", "bytes_object.ob_size", "bytes_object.ob_sval",
      "unicode_object.size", "unicode_object.state", "unicode_object.length",
      "unicode_object.asciiobject_size",
      "gc.size", "gc.collecting"};
  static const std::vector<std::string> v314 = [] {
    std::vector<std::string> fields = v313;
    auto insert_after = [&fields](const std::string& after, std::vector<std::string> added) {
      auto at = std::find(fields.begin(), fields.end(), after);
      fields.insert(at + 1, added.begin(), added.end());
    };
    insert_after("interpreter_state.threads_head", {"interpreter_state.threads_main"});
    insert_after("interpreter_frame.owner", {"interpreter_frame.stackpointer"});
    insert_after("list_object.ob_size", {"set_object.size", "set_object.used", "set_object.table",
                                         "set_object.mask"});
    fields.insert(fields.end(), {"gen_object.size", "gen_object.gi_name", "gen_object.gi_iframe",
                                 "gen_object.gi_frame_state", "debugger_support.eval_breaker",
                                 "debugger_support.remote_debugger_support",
                                 "debugger_support.remote_debugging_enabled",
                                 "debugger_support.debugger_pending_call",
                                 "debugger_support.debugger_script_path",
                                 "debugger_support.debugger_script_path_size"});
    return fields;
  }();
  static const std::vector<std::string> none;
  return minor == 13 ? v313 : minor == 14 ? v314 : none;
}

constexpr uint64_t kMaxPlausibleStruct = 1u << 20;  // offsets past 1 MiB are not a real table

}  // namespace

uint64_t debug_offsets_table_size(int minor) { return debug_table_fields(minor).size() * 8; }

std::optional<uint64_t> debug_offsets_field(int minor, const std::string& field) {
  const auto& fields = debug_table_fields(minor);
  auto at = std::find(fields.begin(), fields.end(), field);
  if (at == fields.end()) return std::nullopt;
  return static_cast<uint64_t>(at - fields.begin()) * 8;
}

std::optional<PythonOffsets> python_offsets_from_debug_table(Target& target, uint64_t runtime_address,
                                                             std::string* why) {
  char header[16];
  ReadError error;
  if (!target.read(runtime_address, header, sizeof header, &error)) {
    *why = "_PyRuntime " + error.message();
    return std::nullopt;
  }
  if (std::memcmp(header, "xdebugpy", 8) != 0) {
    *why = "no _Py_DebugOffsets cookie at _PyRuntime " + hex(runtime_address);
    return std::nullopt;
  }
  uint64_t version = 0;
  std::memcpy(&version, header + 8, 8);
  int major = static_cast<int>(version >> 24), minor = static_cast<int>((version >> 16) & 0xff);
  if (major != 3 || debug_offsets_table_size(minor) == 0) {
    *why = "_Py_DebugOffsets of version " + hex(version) + ": only 3.13 and 3.14 tables are known";
    return std::nullopt;
  }
  std::vector<uint64_t> table(debug_offsets_table_size(minor) / 8);
  if (!target.read(runtime_address, table.data(), table.size() * 8, &error)) {
    *why = "_Py_DebugOffsets " + error.message();
    return std::nullopt;
  }
  std::string bad;
  auto field = [&](const std::string& name) {
    uint64_t value = table[*debug_offsets_field(minor, name) / 8];
    if (value >= kMaxPlausibleStruct && bad.empty()) bad = name + " = " + hex(value);
    return value;
  };
  PythonOffsets offsets;
  offsets.version_hex = static_cast<uint32_t>(version);
  offsets.source = "_Py_DebugOffsets at " + hex(runtime_address);
  if (field("free_threaded") != 0) {
    *why = "free-threaded CPython " + py_version_text(offsets.version_hex) + ": not supported";
    return std::nullopt;
  }
  offsets.runtime_interpreters_head = field("runtime_state.interpreters_head");
  offsets.interpreter_next = field("interpreter_state.next");
  offsets.interpreter_threads_head = field("interpreter_state.threads_head");
  offsets.thread_next = field("thread_state.next");
  offsets.thread_id = field("thread_state.thread_id");
  offsets.thread_native_id = field("thread_state.native_thread_id");
  offsets.thread_current_frame = field("thread_state.current_frame");
  offsets.frame_previous = field("interpreter_frame.previous");
  offsets.frame_code = field("interpreter_frame.executable");
  offsets.frame_code_is_stackref = minor >= 14;
  offsets.frame_instr = field("interpreter_frame.instr_ptr");
  offsets.frame_owner = field("interpreter_frame.owner");
  offsets.object_type = field("pyobject.ob_type");
  offsets.code_filename = field("code_object.filename");
  offsets.code_name = field("code_object.name");
  offsets.code_qualname = field("code_object.qualname");
  offsets.code_linetable = field("code_object.linetable");
  offsets.code_firstlineno = field("code_object.firstlineno");
  offsets.code_code_adaptive = field("code_object.co_code_adaptive");
  offsets.bytes_size = field("bytes_object.ob_size");
  offsets.bytes_data = field("bytes_object.ob_sval");
  offsets.unicode_length = field("unicode_object.length");
  offsets.unicode_state = field("unicode_object.state");
  offsets.ascii_object_size = field("unicode_object.asciiobject_size");
  // PyUnicodeObject is PyCompactUnicodeObject plus one data pointer (3.13/3.14 headers):
  // non-ASCII compact strings keep their characters right after PyCompactUnicodeObject.
  uint64_t unicode_size = field("unicode_object.size");
  if (unicode_size >= offsets.ascii_object_size + 8) offsets.compact_object_size = unicode_size - 8;
  // Owners 0..2 (thread, generator, frame object) and the state bit positions
  // (interned:2, kind:3, compact:1, ascii:1) are those of both tags' headers;
  // the entry shims: FRAME_OWNED_BY_CSTACK = 3 (3.13), _INTERPRETER = 3 and _CSTACK = 4 (3.14).
  offsets.owner_shims = minor >= 14 ? std::vector<int64_t>{3, 4} : std::vector<int64_t>{3};
  if (!bad.empty()) {
    *why = "_Py_DebugOffsets at " + hex(runtime_address) + " is implausible: " + bad;
    return std::nullopt;
  }
  return offsets;
}

}  // namespace nsc
