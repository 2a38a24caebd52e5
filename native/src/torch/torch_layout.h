// Layout profiles of PyTorch's flight recorder (c10d::FlightRecorder<c10::cuda::CUDAEvent>):
// struct layouts from the DWARF of a TU compiled -g against the wheel's own headers
// (scripts/torch-layout-from-tu.sh), keyed by the GNU build-id of that wheel's
// libtorch_cuda.so, with the symbol of the recorder's singleton pointer from its .symtab.
// Stored under native/profiles/torch/<build-id>.json.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "layout/layout.h"

namespace nsc {

// Profile names of the structs the decoder reads (the DWARF names, namespaces included).
extern const char* const kTorchRecorderStruct;       // c10d::FlightRecorder<c10::cuda::CUDAEvent>
extern const char* const kTorchEntryStruct;          // ...::Entry
extern const char* const kTorchTracebackStruct;      // torch::CapturedTraceback
extern const char* const kTorchPyFrameStruct;        // torch::CapturedTraceback::PyFrame
extern const char* const kTorchPgStatusStruct;       // c10d::ProcessGroupStatus
extern const char* const kTorchScalarTypeEnum;       // c10::ScalarType
extern const char* const kTorchRecorderInstanceSymbol;  // FlightRecorder<CUDAEvent>::get()::instance (mangled)
// The watchdog's liveness (torch/watchdog.h): optional in a profile (older ones lack them).
extern const char* const kTorchProcessGroupStruct;     // c10d::ProcessGroupNCCL
extern const char* const kTorchWatchdogStruct;         // c10d::ProcessGroupNCCL::Watchdog
extern const char* const kTorchMonitorStruct;          // c10d::ProcessGroupNCCL::HeartbeatMonitor
extern const char* const kTorchPgOptionsStruct;        // c10d::ProcessGroupNCCL::Options
extern const char* const kTorchErrorTypeEnum;          // c10d::ErrorType
// vtables of the std::thread states of Watchdog::run and HeartbeatMonitor::runLoop, and
// ProcessGroupNCCL::shouldDump_ (mangled; .symtab of libtorch_cuda.so).
extern const char* const kTorchWatchdogStateVtableSymbol;
extern const char* const kTorchMonitorStateVtableSymbol;
extern const char* const kTorchShouldDumpSymbol;
const std::vector<std::string>& torch_liveness_symbols();
// LayoutProfile::library of a torch profile starts with this, then the torch version text.
constexpr const char* kTorchProfileTag = "libtorch_cuda.so of torch ";
// The subdirectory of each profile directory that holds torch profiles.
constexpr const char* kTorchProfileSubdir = "torch";

// Library types the recorder holds only through pointers (map nodes): roots of their own.
const std::string& torch_pg_name_tuple();   // std::tuple<std::string, std::string> (group name, desc)
const std::string& torch_ranks_vector();    // std::vector<uint64_t>
const std::string& torch_status_pair();     // value_type of all_pg_status_
const std::string& torch_ranks_pair();      // value_type of pg_name_to_ranks_
std::string rb_tree_node_of(const std::string& value_type);  // "std::_Rb_tree_node<V >"

const std::vector<std::string>& torch_struct_roots();
const std::vector<std::string>& torch_enum_roots();

// Where the libtorch_cuda.so facts come from: the file itself, or (no copy at hand)
// the text of `readelf -sW` and `readelf -nlW` of it taken where it lives.
struct LibtorchFacts {
  std::string library;        // path of libtorch_cuda.so, or ""
  std::string symbols_text;   // path of `readelf -sW` output, or ""
  std::string headers_text;   // path of `readelf -n` (or -lnW) output with "Build ID: ...", or ""
  std::string torch_version;  // "2.11.0+cu130 70d99e99..." (torch.__version__ and git version)
  bool from_source = false;   // a TU built from a source tree: no library, so no build-id nor symbol
};

// The profile: structs/enums from dwarf_file (a linked, not relocatable, ELF: see the
// script), build-id and the instance symbol from `facts`. Throws nsc::BadInput naming
// the file and what is missing.
LayoutProfile extract_torch_layout(const std::string& dwarf_file, const LibtorchFacts& facts);

// Value of a symbol in `readelf -sW` text; nullopt when absent. Throws BadInput when unreadable.
std::optional<uint64_t> symbol_in_readelf_text(const std::string& path, const std::string& name);
// "Build ID: <hex>" of `readelf -n` text.
std::optional<std::string> build_id_in_readelf_text(const std::string& path);

// libtorch_cuda.so's PT_LOAD table as a fingerprint (FNV-1a of "offset,vaddr,filesz,memsz,flags;"
// per segment), kept in the profile: a core seldom saves the page of its build-id note (a
// never-written file-backed page of a RW segment), but always the ELF header page.
constexpr const char* kLoadSegmentsConstant = "LIBTORCH_LOAD_SEGMENTS_FNV1A";
struct LoadSegment {
  uint64_t offset = 0, vaddr = 0, filesz = 0, memsz = 0;
  std::string flags;  // "R", "RW", "RE", ...
};
int64_t load_segments_fingerprint(const std::vector<LoadSegment>& segments);
std::vector<LoadSegment> load_segments_of_file(const std::string& path);
std::vector<LoadSegment> load_segments_in_readelf_text(const std::string& path);  // `readelf -lW`

// The torch version text a torch profile records ("" when it is no torch profile).
std::string torch_version_of_profile(const LayoutProfile& profile);

}  // namespace nsc
