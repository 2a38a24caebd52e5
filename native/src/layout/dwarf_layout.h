// Extraction of a LayoutProfile from the DWARF of a libnccl build (libdw).
#pragma once

#include <string>
#include <vector>

#include "layout/layout.h"

namespace nsc {

// Reads the structs/enums of required_struct_names()/required_enum_names()
// (plus every struct, union and enum they hold by value), the symbols of
// wanted_symbol_names() (TLS symbols as "<name>@tls", value = offset in the
// module's TLS block), build-id and NCCL version.
// Throws nsc::BadInput when the file is unreadable, not ELF, or has no
// .debug_info (the message names the path, build-id, version and how to make
// a profile).
LayoutProfile extract_layout_from_dwarf(const std::string& library_path);

// Same, for explicit roots (tests, `layout show LIB STRUCT` of a type that
// is not a decoder root). Roots that the library lacks are skipped.
LayoutProfile extract_layout_from_dwarf(const std::string& library_path,
                                        const std::vector<std::string>& struct_roots,
                                        const std::vector<std::string>& enum_roots);

// Suffix of TLS symbols in LayoutProfile::symbols.
constexpr const char* kTlsSymbolSuffix = "@tls";

// LayoutProfile::constants key stamped on extractions that cover every
// required root; its value is required_roots_fingerprint() at extraction time,
// so a profile made before roots were added is recognised as incomplete.
constexpr const char* kRootsFingerprintConstant = "NCCLSCOPE_LAYOUT_ROOTS";
int64_t required_roots_fingerprint();

}  // namespace nsc
