#include "torch/torch_layout.h"

#include <gelf.h>
#include <libelf.h>

#include <fstream>
#include <sstream>

#include "layout/dwarf_layout.h"
#include "layout/elf_file.h"
#include "layout/profile_store.h"
#include "util/errors.h"
#include "util/input_file.h"
#include "util/strings.h"

namespace nsc {

const char* const kTorchRecorderStruct = "c10d::FlightRecorder<c10::cuda::CUDAEvent>";
const char* const kTorchEntryStruct = "c10d::FlightRecorder<c10::cuda::CUDAEvent>::Entry";
const char* const kTorchTracebackStruct = "torch::CapturedTraceback";
const char* const kTorchPyFrameStruct = "torch::CapturedTraceback::PyFrame";
const char* const kTorchPgStatusStruct = "c10d::ProcessGroupStatus";
const char* const kTorchScalarTypeEnum = "c10::ScalarType";
const char* const kTorchRecorderInstanceSymbol = "_ZZN4c10d14FlightRecorderIN3c104cuda9CUDAEventEE3getEvE8instance";

const char* const kTorchProcessGroupStruct = "c10d::ProcessGroupNCCL";
const char* const kTorchWatchdogStruct = "c10d::ProcessGroupNCCL::Watchdog";
const char* const kTorchMonitorStruct = "c10d::ProcessGroupNCCL::HeartbeatMonitor";
const char* const kTorchPgOptionsStruct = "c10d::ProcessGroupNCCL::Options";
const char* const kTorchErrorTypeEnum = "c10d::ErrorType";
// std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (C::*)(), C*>>>, as g++ mangles it.
const char* const kTorchWatchdogStateVtableSymbol =
    "_ZTVNSt6thread11_State_implINS_8_InvokerISt5tupleIJMN4c10d16ProcessGroupNCCL8WatchdogEFvvEPS5_EEEEEE";
const char* const kTorchMonitorStateVtableSymbol =
    "_ZTVNSt6thread11_State_implINS_8_InvokerISt5tupleIJMN4c10d16ProcessGroupNCCL16HeartbeatMonitorEFvvEPS5_EEEEEE";
const char* const kTorchShouldDumpSymbol = "_ZN4c10d16ProcessGroupNCCL11shouldDump_E";

const std::vector<std::string>& torch_liveness_symbols() {
  static const std::vector<std::string> names = {kTorchWatchdogStateVtableSymbol, kTorchMonitorStateVtableSymbol,
                                                 kTorchShouldDumpSymbol};
  return names;
}

const std::string& torch_pg_name_tuple() {
  static const std::string name =
      "std::tuple<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, "
      "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > >";
  return name;
}

const std::string& torch_ranks_vector() {
  static const std::string name = "std::vector<long unsigned int, std::allocator<long unsigned int> >";
  return name;
}

const std::string& torch_status_pair() {
  static const std::string name = "std::pair<long unsigned int const, std::shared_ptr<c10d::ProcessGroupStatus> >";
  return name;
}

const std::string& torch_ranks_pair() {
  static const std::string name = "std::pair<" + torch_pg_name_tuple() + " const, " + torch_ranks_vector() + " >";
  return name;
}

std::string rb_tree_node_of(const std::string& value_type) { return "std::_Rb_tree_node<" + value_type + " >"; }

const std::vector<std::string>& torch_struct_roots() {
  // The map nodes and pairs are described only when the TU names them (recorder_layout_tu.cpp).
  static const std::vector<std::string> roots = {
      kTorchRecorderStruct, kTorchEntryStruct, kTorchTracebackStruct, kTorchPyFrameStruct, kTorchPgStatusStruct,
      "std::_Rb_tree_node_base", torch_ranks_vector(), torch_status_pair(), torch_ranks_pair(),
      rb_tree_node_of(torch_status_pair()), rb_tree_node_of(torch_ranks_pair()),
      kTorchProcessGroupStruct, kTorchWatchdogStruct, kTorchMonitorStruct, kTorchPgOptionsStruct};
  return roots;
}

const std::vector<std::string>& torch_enum_roots() {
  static const std::vector<std::string> roots = {kTorchScalarTypeEnum, kTorchErrorTypeEnum};
  return roots;
}

namespace {

std::istringstream open_text(const std::string& path) {
  return std::istringstream(read_regular_file(path, "torch layout " + path));
}

bool is_relocatable_object(const std::string& path) {
  ElfFile file(path);
  GElf_Ehdr header;
  return gelf_getehdr(file.elf(), &header) != nullptr && header.e_type == ET_REL;
}

// "2.11.0+cu130 70d99e99..." -> 2, 11, 0
void add_version_constants(const std::string& version, LayoutProfile* profile) {
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(version.c_str(), "%d.%d.%d", &major, &minor, &patch) != 3)
    throw BadInput("torch layout: --torch-version '" + version + "' is not MAJOR.MINOR.PATCH[...]");
  profile->constants["TORCH_VERSION_MAJOR"] = major;
  profile->constants["TORCH_VERSION_MINOR"] = minor;
  profile->constants["TORCH_VERSION_PATCH"] = patch;
}

}  // namespace

std::optional<uint64_t> symbol_in_readelf_text(const std::string& path, const std::string& name) {
  std::istringstream in = open_text(path);
  std::string line;
  while (std::getline(in, line)) {
    // "177098: 0000000016a7afd0     8 OBJECT  LOCAL  DEFAULT   25 NAME"
    std::istringstream fields(line);
    std::string number, value, size, type, bind, visibility, index, symbol;
    if (!(fields >> number >> value >> size >> type >> bind >> visibility >> index >> symbol)) continue;
    if (symbol != name || number.empty() || number.back() != ':') continue;
    uint64_t parsed = 0;
    if (!parse_u64("0x" + value, &parsed)) throw BadInput("torch layout " + path + ": bad value in: " + line);
    return parsed;
  }
  return std::nullopt;
}

std::optional<std::string> build_id_in_readelf_text(const std::string& path) {
  std::istringstream in = open_text(path);
  std::string line;
  const std::string key = "Build ID:";
  while (std::getline(in, line)) {
    size_t at = line.find(key);
    if (at == std::string::npos) continue;
    std::istringstream rest(line.substr(at + key.size()));
    std::string id;
    rest >> id;
    if (is_valid_build_id(id)) return id;
  }
  return std::nullopt;
}

LayoutProfile extract_torch_layout(const std::string& dwarf_file, const LibtorchFacts& facts) {
  if (facts.torch_version.empty()) throw BadInput("torch layout: --torch-version is required (torch.__version__ and torch.version.git_version)");
  if (is_relocatable_object(dwarf_file))
    throw BadInput("torch layout " + dwarf_file + ": a relocatable object (its DWARF is not relocated yet); link it "
                   "first: ld --unresolved-symbols=ignore-all --defsym=__dso_handle=0 -e 0 -o TU.elf " + dwarf_file +
                   " (scripts/torch-layout-from-tu.sh does)");
  LayoutProfile profile = extract_layout_from_dwarf(dwarf_file, torch_struct_roots(), torch_enum_roots());
  // CapturedTraceback has a key function (its virtual destructor lives in libtorch): g++ describes
  // it only under -femit-class-debug-always; without it frames are unavailable, the rest decodes.
  for (const char* root : {kTorchRecorderStruct, kTorchEntryStruct})
    if (profile.find_struct(root) == nullptr)
      throw BadInput("torch layout " + dwarf_file + ": DWARF has no " + root +
                     " (the TU must name it: native/src/torch/recorder_layout_tu.cc)");
  if (profile.find_enum(kTorchScalarTypeEnum) == nullptr)
    throw BadInput("torch layout " + dwarf_file + ": DWARF has no enum " + kTorchScalarTypeEnum);
  profile.nccl_version.clear();
  profile.symbols.clear();  // the TU's own symbols mean nothing in libtorch
  profile.constants.clear();
  add_version_constants(facts.torch_version, &profile);
  profile.library = std::string(kTorchProfileTag) + facts.torch_version;
  if (facts.from_source) return profile;  // found by version (torch/torch_build.h); the symbol from the library at hand
  std::optional<uint64_t> instance;
  std::map<std::string, uint64_t> liveness;  // optional: the watchdog's symbols (torch/watchdog.h)
  std::vector<LoadSegment> segments;
  if (!facts.library.empty()) {
    ElfFile library(facts.library);
    profile.build_id = library.build_id().value_or("");
    std::vector<std::string> names = torch_liveness_symbols();
    names.push_back(kTorchRecorderInstanceSymbol);
    auto symbols = library.symbols(names);
    if (symbols.count(kTorchRecorderInstanceSymbol)) instance = symbols.at(kTorchRecorderInstanceSymbol).value;
    for (const std::string& name : torch_liveness_symbols())
      if (symbols.count(name)) liveness[name] = symbols.at(name).value;
    segments = load_segments_of_file(facts.library);
  } else {
    if (facts.symbols_text.empty() || facts.headers_text.empty())
      throw BadInput("torch layout: give --libtorch LIB, or both --libtorch-symbols and --libtorch-headers");
    profile.build_id = build_id_in_readelf_text(facts.headers_text).value_or("");
    instance = symbol_in_readelf_text(facts.symbols_text, kTorchRecorderInstanceSymbol);
    for (const std::string& name : torch_liveness_symbols())
      if (auto value = symbol_in_readelf_text(facts.symbols_text, name)) liveness[name] = *value;
    segments = load_segments_in_readelf_text(facts.headers_text);
  }
  if (segments.empty()) throw BadInput("torch layout " + (facts.library.empty() ? facts.headers_text : facts.library) +
                                       ": no PT_LOAD program headers (give `readelf -lnW` text)");
  profile.constants[kLoadSegmentsConstant] = load_segments_fingerprint(segments);
  std::string origin = facts.library.empty() ? facts.symbols_text : facts.library;
  if (!is_valid_build_id(profile.build_id)) throw BadInput("torch layout " + origin + ": no GNU build-id of libtorch_cuda.so");
  if (!instance)
    throw BadInput("torch layout " + origin + ": no symbol " + kTorchRecorderInstanceSymbol +
                   " (FlightRecorder<CUDAEvent>::get()::instance; a stripped libtorch_cuda.so?)");
  profile.symbols[kTorchRecorderInstanceSymbol] = *instance;
  profile.symbols.insert(liveness.begin(), liveness.end());
  return profile;
}

int64_t load_segments_fingerprint(const std::vector<LoadSegment>& segments) {
  uint32_t hash = 2166136261u;
  for (const LoadSegment& segment : segments) {
    std::string text = hex(segment.offset) + "," + hex(segment.vaddr) + "," + hex(segment.filesz) + "," +
                       hex(segment.memsz) + "," + segment.flags + ";";
    for (unsigned char c : text) hash = (hash ^ c) * 16777619u;
  }
  return static_cast<int64_t>(hash & 0x7fffffffu);
}

std::vector<LoadSegment> load_segments_of_file(const std::string& path) {
  ElfFile file(path);
  std::vector<LoadSegment> segments;
  size_t count = 0;
  if (elf_getphdrnum(file.elf(), &count) != 0) return segments;
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr header;
    if (gelf_getphdr(file.elf(), static_cast<int>(i), &header) == nullptr || header.p_type != PT_LOAD) continue;
    std::string flags = std::string(header.p_flags & PF_R ? "R" : "") + (header.p_flags & PF_W ? "W" : "") +
                        (header.p_flags & PF_X ? "E" : "");
    segments.push_back({header.p_offset, header.p_vaddr, header.p_filesz, header.p_memsz, flags});
  }
  return segments;
}

std::vector<LoadSegment> load_segments_in_readelf_text(const std::string& path) {
  std::istringstream in = open_text(path);
  std::vector<LoadSegment> segments;
  std::string line;
  while (std::getline(in, line)) {
    // "  LOAD  0x631000 0x0000000000631000 0x0000000000631000 0x37475e1 0x37475e1 R E 0x1000"
    std::istringstream fields(line);
    std::string type, offset, vaddr, paddr, filesz, memsz, token;
    if (!(fields >> type) || type != "LOAD" || !(fields >> offset >> vaddr >> paddr >> filesz >> memsz)) continue;
    LoadSegment segment;
    std::string letters;
    while (fields >> token && token.rfind("0x", 0) != 0) letters += token;
    for (const char* letter : {"R", "W", "E"})
      if (letters.find(letter) != std::string::npos) segment.flags += letter;
    if (!parse_u64(offset, &segment.offset) || !parse_u64(vaddr, &segment.vaddr) || !parse_u64(filesz, &segment.filesz) ||
        !parse_u64(memsz, &segment.memsz))
      throw BadInput("torch layout " + path + ": bad program header line: " + line);
    segments.push_back(segment);
  }
  return segments;
}

std::string torch_version_of_profile(const LayoutProfile& profile) {
  const std::string tag = kTorchProfileTag;
  return profile.library.rfind(tag, 0) == 0 ? profile.library.substr(tag.size()) : "";
}

}  // namespace nsc
