// Layout profiles of CPython interpreters without _Py_DebugOffsets (3.11, 3.12):
// the structs the Python decoder reads, taken from DWARF (the interpreter's own,
// e.g. Debian's python3.11-dbg, or a TU compiled -g against a tag's headers:
// layout_tu.c), keyed by the interpreter's GNU build-id like libnccl profiles.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layout/layout.h"

namespace nsc {

const std::vector<std::string>& python_struct_roots();
const std::vector<std::string>& python_enum_roots();
const std::vector<std::string>& python_symbol_names();  // _PyRuntime, Py_Version, PyCode/Unicode/Bytes_Type

// LayoutProfile::constants key holding the interpreter's PY_VERSION_HEX (from Py_Version).
constexpr const char* kPyVersionHexConstant = "PY_VERSION_HEX";

// The profile of `interpreter` (build-id, symbols, Py_Version from that file)
// with the struct layouts of `dwarf_source` (the interpreter itself, whose
// separate debug file is found by build-id, or a header TU). Throws
// nsc::BadInput naming the file when either is unusable.
LayoutProfile extract_python_layout(const std::string& dwarf_source, const std::string& interpreter);

// PY_VERSION_HEX stored at the link-time address of Py_Version in the file (.rodata).
std::optional<uint32_t> py_version_in_file(const std::string& path, uint64_t address);

// "3.11.2" (final), "3.13.0rc1" for a PY_VERSION_HEX.
std::string py_version_text(uint32_t version_hex);

}  // namespace nsc
