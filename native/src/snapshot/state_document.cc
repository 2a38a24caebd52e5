#include "snapshot/state_document.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include "cuda/recorder_decoder.h"
#include "layout/elf_file.h"
#include "layout/header_profile.h"
#include "layout/profile_store.h"
#include "nccl/comm_decoder.h"
#include "nccl/comm_scanner.h"
#include "nccl/connection_decoder.h"
#include "snapshot/fatal_signal.h"
#include "stacks/cxx_exception.h"
#include "snapshot/launcher_section.h"
#include "python/python_stacks.h"
#include "torch/flight_recorder.h"
#include "torch/watchdog.h"
#include "torch/pg_join.h"
#include "stacks/thread_stacks.h"
#include "target/callback_target.h"
#include "target/core_notes.h"
#include "target/core_file.h"
#include "target/launcher_environment.h"
#include "target/library_resolver.h"
#include "target/live_process.h"
#include "util/errors.h"
#include "util/json_access.h"
#include "util/phase_times.h"
#include "util/schemas.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

bool is_x86_64_name(const std::string& architecture) {
  return architecture.empty() || architecture == "i386:x86-64" || architecture == "x86-64" ||
         architecture == "x86_64";
}

// One register value as the front end sent it: "0x..." (or decimal) text, or a JSON number.
std::optional<uint64_t> register_value(const json& value) {
  uint64_t number = 0;
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer()) return static_cast<uint64_t>(value.get<int64_t>());
  if (value.is_string() && parse_u64(value.get<std::string>(), &number)) return number;
  return std::nullopt;
}

// A thread of the front end: its registers become an NT_PRSTATUS (core_notes); what is
// wrong with them (missing, not numbers, another architecture) stays with the thread.
ThreadInfo callback_thread(const json& entry, const std::string& architecture) {
  if (!entry.is_object() || !json_member(entry, "tid").is_number_integer())
    throw UsageError("threads: each entry needs an integer \"tid\"");
  ThreadInfo thread;
  thread.tid = json_member(entry, "tid").get<int>();
  if (json_member(entry, "name").is_string()) thread.name = json_member(entry, "name").get<std::string>();
  const json& registers = json_member(entry, "registers");
  const json& unavailable = json_member(entry, "registers_unavailable");
  if (!is_x86_64_name(architecture)) {
    thread.registers_unavailable = "registers of " + architecture + " are not understood (x86-64 only)";
  } else if (!registers.is_object()) {
    thread.registers_unavailable = unavailable.is_string() ? unavailable.get<std::string>()
                                                           : "the front end sent no registers";
  } else {
    NamedRegisters named;
    for (const auto& [name, value] : registers.items()) {
      std::optional<uint64_t> number = register_value(value);
      if (number) named[name] = *number;
    }
    std::vector<std::string> missing = missing_unwind_registers(named);
    if (missing.empty()) {
      thread.prstatus = prstatus_from_registers(thread.tid, named);
    } else {
      std::string names;
      for (const std::string& name : missing) names += (names.empty() ? "" : ", ") + name;
      thread.registers_unavailable = "no " + names + " from the front end";
      if (unavailable.is_string()) thread.registers_unavailable += " (" + unavailable.get<std::string>() + ")";
    }
  }
  return thread;
}

std::vector<ThreadInfo> callback_threads(const StateRequest& request) {
  std::vector<ThreadInfo> threads;
  if (!request.callback_threads.is_array()) throw UsageError("threads: not a list");
  for (const json& entry : request.callback_threads)
    threads.push_back(callback_thread(entry, request.callback_architecture));
  return threads;
}

// The front end's $_siginfo: numbers, or hex text for the fault address; a missing one stays 0.
SignalInfo callback_signal(const json& entry) {
  auto number = [&](const char* key) {
    std::optional<uint64_t> value = register_value(json_member(entry, key));
    return value.value_or(0);
  };
  SignalInfo signal;
  signal.signo = static_cast<int>(number("signo"));
  signal.code = static_cast<int>(static_cast<int32_t>(number("code")));
  signal.sender_pid = static_cast<int>(number("sender_pid"));
  signal.fault_address = number("fault_address");
  signal.tid = static_cast<int>(number("tid"));
  return signal;
}

std::unique_ptr<Target> open_callback_target(const StateRequest& request) {
  std::vector<MemoryRegion> regions;
  for (const json& entry : request.callback_regions) {
    MemoryRegion region;
    if (!parse_u64(entry.value("start", ""), &region.start) ||
        !parse_u64(entry.value("end", ""), &region.end) || region.end <= region.start)
      throw UsageError("regions: each entry needs hex \"start\" < \"end\"");
    region.readable = true;
    region.writable = entry.value("writable", true);
    region.shared = entry.value("shared", false);
    region.saved = entry.value("saved", true);  // a core's segment without contents: false
    region.path = entry.value("path", "");
    parse_u64(entry.value("file_offset", "0x0"), &region.file_offset);
    regions.push_back(region);
  }
  auto target = std::make_unique<CallbackTarget>(request.callback_description, request.pid, request.read_memory,
                                                 std::move(regions), request.executable);
  target->set_threads(callback_threads(request));
  if (request.callback_signal.is_object()) target->set_fatal_signal(callback_signal(request.callback_signal));
  return target;
}


json target_json(const Target& target, const StateRequest& request) {
  json out;
  if (target.is_core()) out = {{"kind", "core"}, {"path", request.core_path}};
  else out = {{"kind", request.read_memory ? "callback" : "live"}};
  out["pid"] = target.pid();
  std::string executable = target.executable();
  out["executable"] = executable.empty() ? json(nullptr) : json(valid_utf8(executable));
  return out;
}

// True only when both build-ids were read and differ; null when the target's was
// unreadable (nothing to compare); false when a profile was chosen by the target's id.
json build_id_mismatch(const ResolvedLibrary& library) {
  if (library.build_id_in_target.empty()) return nullptr;
  if (library.local_path.empty()) return false;
  return library.build_id_of_file != library.build_id_in_target;
}

// Prints scan progress on stderr once a scan has run for more than a second.
ScanProgress progress_printer(bool enabled) {
  if (!enabled) return {};
  auto start = std::chrono::steady_clock::now();
  return [start](uint64_t done, uint64_t total) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed < 1.0 || total == 0) return;
    std::fprintf(stderr, "\rncclscope: scanned %llu / %llu MB", static_cast<unsigned long long>(done >> 20),
                 static_cast<unsigned long long>(total >> 20));
    if (done == total) std::fputc('\n', stderr);
  };
}

json discovery_json(const Discovery& discovery) {
  json out = {{"method", discovery.method},
              {"regions_scanned", discovery.regions_scanned},
              {"bytes_scanned", discovery.bytes_scanned},
              {"candidates", discovery.candidates},
              {"rejected", discovery.rejected}};
  if (!discovery.scan_anchor.empty()) out["scan_anchor"] = discovery.scan_anchor;
  if (!discovery.registry_note.empty()) out["registry_note"] = discovery.registry_note;
  // Regions too large to scan (e.g. multi-TiB reservations): said, so an empty answer is explained.
  if (!discovery.skipped_regions.empty()) out["skipped_regions"] = discovery.skipped_regions;
  // Several libnccl with layouts of one size: which one a comm was given to, and why.
  if (!discovery.attribution.empty()) out["attribution"] = discovery.attribution;
  return out;
}

// One libnccl of the target and what was made of it (issue 17: a process may map several).
struct NcclLibrary {
  ResolvedLibrary resolved;
  std::optional<LayoutProfile> layout;  // none: `unavailable` says why
  std::string unavailable;              // "" when its communicators are decoded
  Discovery discovery;
  bool decoded() const { return layout.has_value() && unavailable.empty(); }
};

// The layout of one library, or the one-line reason there is none.
void load_layout(Target& target, const StateRequest& request, NcclLibrary* library) {
  const ResolvedLibrary& resolved = library->resolved;
  std::string why;
  try {
    LayoutProfile layout = load_layout_for_library(resolved.local_path, resolved.build_id_in_target,
                                                   request.profile_path, &why);
    if (layout.find_struct("ncclComm") == nullptr) {
      library->unavailable = valid_utf8(layout.source) + ": layout has no struct ncclComm (not a libnccl build?)";
      return;
    }
    library->layout = std::move(layout);
  } catch (const BadInput& error) {
    std::string message = error.what();
    if (!resolved.local_file_missing.empty()) message += "; " + resolved.local_file_missing;
    // A cut-off core loses the library's build-id with its memory: say why it is unknown.
    for (const std::string& warning : target.warnings()) message += "; " + warning;
    library->unavailable = message;
  }
}

// Every mapped libnccl with its own layout. Throws NoNcclLibrary when none is mapped.
std::vector<NcclLibrary> load_nccl_libraries(Target& target, const StateRequest& request,
                                             const LibrarySearch& search) {
  std::vector<NcclLibrary> libraries;
  for (ResolvedLibrary& resolved : resolve_nccl_libraries(target, search)) {
    libraries.emplace_back();
    libraries.back().resolved = std::move(resolved);
    load_layout(target, request, &libraries.back());
  }
  return libraries;
}

// Each library's communicators: its registry, or one scan shared by all, told apart by layout.
void discover_in_libraries(Target& target, const StateRequest& request, std::vector<NcclLibrary>* libraries) {
  std::vector<LibraryForDiscovery> inputs;
  std::vector<NcclLibrary*> with_layout;
  for (NcclLibrary& library : *libraries) {
    if (!library.layout) continue;
    LibraryForDiscovery input;
    input.name = library.resolved.path_in_target;
    input.layout = &*library.layout;
    input.load_bias = library.resolved.load_bias;
    for (const MappedFile& file : target.mapped_files())
      if (file.path == input.name) input.image.push_back(file);
    inputs.push_back(std::move(input));
    with_layout.push_back(&library);
  }
  DiscoveryOptions options;
  options.progress = progress_printer(request.progress);
  std::vector<Discovery> found = discover_communicators_of_libraries(target, inputs, options);
  for (size_t i = 0; i < found.size(); ++i) with_layout[i]->discovery = std::move(found[i]);
}

// A header-built profile whose sizes no communicator confirmed is refused, with both sizes:
// decoding with it would print wrong values as real ones. "" when it is kept.
std::string header_profile_refusal(const LayoutProfile& layout, const Discovery& discovery) {
  if (!is_header_profile(layout) || !discovery.addresses.empty()) return "";
  for (const json& rejected : discovery.rejected) {
    std::string why = rejected.value("why", "");
    if (why.rfind("sizeof check failed", 0) == 0)
      return "layout " + valid_utf8(layout.source) + " refused for " + valid_utf8(layout.library) + ": " +
             valid_utf8(why);
  }
  return "";
}

// One library: a refused profile is bad input. Several: that library's communicators are
// unavailable and the others are still decoded, unless a library without any layout is mapped
// (the candidates that fit no size are then more likely its comms). None decoded: bad input.
void refuse_what_cannot_decode(std::vector<NcclLibrary>* libraries) {
  bool one_has_no_layout = std::any_of(libraries->begin(), libraries->end(),
                                       [](const NcclLibrary& library) { return !library.layout; });
  for (NcclLibrary& library : *libraries) {
    if (!library.layout) continue;
    std::string refusal = header_profile_refusal(*library.layout, library.discovery);
    if (refusal.empty()) continue;
    if (libraries->size() == 1) throw BadInput(refusal);
    if (!one_has_no_layout) library.unavailable = refusal;
  }
  for (const NcclLibrary& library : *libraries)
    if (library.decoded()) return;
  throw BadInput(libraries->front().unavailable);
}

// The library the single-library fields of `nccl` describe: the first with communicators.
const NcclLibrary& primary_library(const std::vector<NcclLibrary>& libraries) {
  for (const NcclLibrary& library : libraries)
    if (library.decoded() && !library.discovery.addresses.empty()) return library;
  for (const NcclLibrary& library : libraries)
    if (library.decoded()) return library;
  return libraries.front();
}

std::string version_of(const NcclLibrary& library) {
  if (library.layout) return library.layout->nccl_version;
  if (library.resolved.local_path.empty()) return "";
  try {  // no layout: the library's own "NCCL version" string, when its file is here
    return nccl_version_number(nccl_version_string(library.resolved.local_path).value_or(""));
  } catch (const BadInput&) {
    return "";
  }
}

json library_json(const NcclLibrary& library) {
  const ResolvedLibrary& resolved = library.resolved;
  std::string version = version_of(library);
  return {{"version", version.empty() ? json(nullptr) : json(valid_utf8(version))},
          {"library", valid_utf8(resolved.path_in_target)},
          {"local_file", valid_utf8(resolved.local_path)},
          {"build_id", resolved.build_id_in_target.empty() ? json(resolved.build_id_of_file)
                                                           : json(resolved.build_id_in_target)},
          {"layout_source", library.layout ? json(valid_utf8(library.layout->source)) : json(nullptr)},
          {"build_id_mismatch", build_id_mismatch(resolved)}};
}

// nccl.libraries[]: every mapped libnccl and its communicator count (null: unavailable). What
// identifies a library only: scan figures (which differ between a core and its slice) are in
// discovery.libraries.
json libraries_json(const std::vector<NcclLibrary>& libraries) {
  json out = json::array();
  for (size_t index = 0; index < libraries.size(); ++index) {
    const NcclLibrary& library = libraries[index];
    json entry = library_json(library);
    entry["index"] = index;
    entry["communicators"] = library.decoded() ? json(library.discovery.addresses.size()) : json(nullptr);
    entry["unavailable"] = library.decoded() ? json(nullptr) : json(valid_utf8(library.unavailable));
    out.push_back(entry);
  }
  return out;
}

// The primary library's discovery; with several libnccl, each one's in "libraries" (null for
// a library without a layout: nothing was looked for).
json document_discovery_json(const NcclLibrary& primary, const std::vector<NcclLibrary>& libraries) {
  json out = discovery_json(primary.discovery);
  if (libraries.size() < 2) return out;
  out["libraries"] = json::array();
  for (size_t index = 0; index < libraries.size(); ++index) {
    const NcclLibrary& library = libraries[index];
    json entry = library.layout ? discovery_json(library.discovery) : json(nullptr);
    out["libraries"].push_back({{"index", index}, {"library", valid_utf8(library.resolved.path_in_target)},
                                {"discovery", entry}});
  }
  return out;
}

// A communicator's "library": which libnccl it belongs to (an index into nccl.libraries).
json library_reference(const NcclLibrary& library, size_t index) {
  json full = library_json(library);
  return {{"index", index}, {"path", full["library"]}, {"version", full["version"]},
          {"build_id", full["build_id"]}, {"layout_source", full["layout_source"]}};
}

// Warnings (a local file set aside for its build-id, a library without a layout) and errors
// (a library used unchecked or against its build-id).
void report_library_problems(const std::vector<NcclLibrary>& libraries, json* errors, json* warnings) {
  for (const NcclLibrary& library : libraries) {
    const ResolvedLibrary& resolved = library.resolved;
    std::string subject = valid_utf8(resolved.path_in_target);
    if (!resolved.warning.empty())
      errors->push_back({{"kind", "library"}, {"subject", resolved.path_in_target}, {"reason", resolved.warning}});
    if (library.decoded() && resolved.local_file_missing.rfind("build-id mismatch", 0) == 0)  // a profile decoded
      warnings->push_back({{"kind", "library"}, {"subject", subject},
                           {"reason", valid_utf8(resolved.local_file_missing) + "; decoded with " +
                                          valid_utf8(library.layout->source)}});
    if (!library.decoded())
      warnings->push_back({{"kind", "library"}, {"subject", subject},
                           {"reason", "communicators of " + subject + " unavailable: " + valid_utf8(library.unavailable)}});
  }
}

// Candidates no decoded library accepted, by address: each examining library's reason. Echoes
// inside an accepted comm are not candidates.
std::map<uint64_t, std::vector<std::string>> unmatched_candidates(const std::vector<NcclLibrary>& libraries) {
  std::map<uint64_t, std::vector<std::string>> unmatched;
  for (const NcclLibrary& library : libraries) {
    if (!library.decoded()) continue;
    for (const json& rejected : library.discovery.rejected) {
      std::string why = rejected.value("why", "");
      uint64_t address = 0;
      if (why.rfind("inside comm ", 0) == 0 || !parse_u64(rejected.value("address", ""), &address)) continue;
      std::string prefix = libraries.size() > 1 ? valid_utf8(library.resolved.path_in_target) + ": " : "";
      unmatched[address].push_back(prefix + why);
    }
  }
  return unmatched;
}

// A candidate that passed the first magic test and failed the others (endMagic flipped, rank out
// of range) is a communicator found but rejected as corrupt: an error, so that nobody reads
// "holds no communicator" as "never created one". With a libnccl left undecoded such candidates
// are most likely its communicators: one error says so instead.
void report_unmatched_candidates(const std::vector<NcclLibrary>& libraries, json* errors) {
  auto unmatched = unmatched_candidates(libraries);
  if (unmatched.empty()) return;
  bool any_undecoded = false;
  for (const NcclLibrary& library : libraries) {
    if (library.decoded()) continue;
    any_undecoded = true;
    std::string subject = valid_utf8(library.resolved.path_in_target);
    errors->push_back({{"kind", "library"}, {"subject", subject},
                       {"reason", std::to_string(unmatched.size()) +
                                      " communicator candidate(s) fit no decoded libnccl's layout: most likely "
                                      "communicators of " + subject + ", unavailable (no usable layout)"}});
  }
  if (any_undecoded) return;
  for (const auto& [address, reasons] : unmatched) {
    std::string why;
    for (const std::string& reason : reasons) why += (why.empty() ? "" : "; ") + reason;
    errors->push_back({{"kind", "discovery"}, {"subject", "communicator candidate " + hex(address)},
                       {"reason", "found but rejected as corrupt: " + why}});
  }
}

// Every decoded library's communicators, each naming its library.
json decode_all_communicators(Target& target, const StateRequest& request,
                              const std::vector<NcclLibrary>& libraries, json* errors) {
  json communicators = json::array();
  std::unique_ptr<Target> device;
  if (request.read_device_memory)
    device = std::make_unique<CallbackTarget>("device memory", target.pid(), request.read_device_memory,
                                              std::vector<MemoryRegion>{}, "");
  for (size_t index = 0; index < libraries.size(); ++index) {
    const NcclLibrary& library = libraries[index];
    if (!library.decoded()) continue;
    for (uint64_t address : library.discovery.addresses) {
      json comm = decode_communicator(target, *library.layout, address, errors);
      comm["library"] = library_reference(library, index);
      if (device) comm["device"] = decode_device_connections(target, *device, *library.layout, address, comm);
      communicators.push_back(std::move(comm));
    }
  }
  return communicators;
}

// Stack problems (a library not found here, a build-id mismatch) limit symbols, not
// the decoded state: they are warnings, not errors, and do not make the answer partial.
json unwind_threads(Target& target, const StateRequest& request, json* warnings_out) {
  StackOptions options;
  options.executable = request.executable;
  options.sysroot = request.sysroot;
  options.solib_search_path = request.solib_search_path;
  std::vector<std::string> warnings;
  std::vector<ThreadStack> stacks = unwind_threads(target, options, &warnings);
  for (const std::string& warning : warnings)
    warnings_out->push_back({{"kind", "stacks"}, {"subject", target.describe()}, {"reason", valid_utf8(warning)}});
  json threads = json::array();
  for (const ThreadStack& stack : stacks) threads.push_back(to_json(stack));
  return threads;
}

// Threads without unwinding (live: no ptrace): names and states only.
json thread_list(Target& target) {
  json threads = json::array();
  for (const ThreadInfo& thread : target.threads())
    threads.push_back({{"tid", thread.tid}, {"name", valid_utf8(thread.name)},
                       {"state", thread.state == '?' ? json(nullptr) : json(std::string(1, thread.state))},
                       {"frames", json::array()}, {"blocked_in", nullptr}});
  return threads;
}

// The document's threads (unwound when asked and possible) and the unwinder's warnings.
void add_threads(Target& target, const StateRequest& request, json* document,
                 json warnings = json::array()) {
  // A callback target unwinds over its memory and the registers the front end sent with its threads.
  bool from_front_end = request.read_memory && !request.callback_threads.empty();
  bool can_unwind = target.is_core() || from_front_end ||
                    (request.pid > 0 && request.live_stacks && !request.read_memory);
  if (request.stacks && can_unwind) {
    // The unwinder ends a freeze we hold (state is already read): libdwfl stops each thread itself.
    (*document)["threads"] = unwind_threads(target, request, &warnings);
  } else {
    (*document)["threads"] = thread_list(target);  // a callback target: the front end's threads, if any
  }
  (*document)["warnings"] = warnings;
}

PythonSearch python_search(const StateRequest& request, const LibrarySearch& library) {
  PythonSearch search;
  search.library = library;
  search.library.force_mismatch = false;  // --force-mismatch is about libnccl
  search.profile_path = request.profile_path;
  return search;
}

// The "python" section and each thread's "python"/"merged_frames" (docs/schema-state.md).
// No interpreter mapped: no section. One that cannot be read: an error, the native stacks stay.
void add_python(const PythonStacks& python, json* document, json* errors) {
  if (!python.interpreter_mapped) return;
  json summary = python_summary_json(python);
  json unjoined = json::array();
  for (const PythonThread* thread : attach_python_to_threads(python, &(*document)["threads"]))
    unjoined.push_back(python_thread_json(*thread));
  if (!unjoined.empty()) summary["threads_without_native_thread"] = unjoined;
  if (!python.unavailable.empty())
    errors->push_back({{"kind", "python"}, {"subject", valid_utf8(python.interpreter)}, {"reason", valid_utf8(python.unavailable)}});
  for (const std::string& error : python.errors)
    errors->push_back({{"kind", "python"}, {"subject", valid_utf8(python.interpreter)}, {"reason", valid_utf8(error)}});
  (*document)["python"] = summary;
}

RecorderSearch recorder_search(const StateRequest& request, const LibrarySearch& library) {
  RecorderSearch search;
  search.library = library;
  search.library.force_mismatch = false;
  search.profile_path = request.profile_path;
  return search;
}

// The "torch" section: PyTorch's flight recorder and its process groups joined to the
// communicators (docs/torch.md). No libtorch_cuda.so mapped: no section.
void add_torch(Target& target, const PythonStacks& python, const StateRequest& request, const LibrarySearch& library,
               json* document, json* errors) {
  RecorderSearch search = recorder_search(request, library);
  PhaseTimer recorder_timer("torch.flight_recorder");
  FlightRecorderState recorder = read_flight_recorder(target, python, search);
  recorder_timer.stop();
  if (!recorder.library_mapped) return;
  PhaseTimer json_timer("torch.recorder_json");
  json torch = flight_recorder_json(recorder);
  json_timer.stop();
  PhaseTimer liveness_timer("torch.liveness");
  if (std::optional<TorchLiveness> liveness = read_torch_liveness(target, search)) {
    torch["liveness"] = torch_liveness_json(*liveness);
    for (const std::string& error : liveness->errors)
      errors->push_back({{"kind", "torch"}, {"subject", "watchdog"}, {"reason", valid_utf8(error)}});
  }
  if (!recorder.unavailable.empty() && !recorder.not_created)
    errors->push_back({{"kind", "torch"}, {"subject", valid_utf8(recorder.library)}, {"reason", valid_utf8(recorder.unavailable)}});
  for (const std::string& error : recorder.errors)
    errors->push_back({{"kind", "torch"}, {"subject", valid_utf8(recorder.library)}, {"reason", valid_utf8(error)}});
  if (recorder.unavailable.empty()) {
    std::optional<int64_t> rank;
    const json& launcher = (*document)["launcher"];
    if (launcher.is_object() && launcher.value("rank", json()).is_number_integer()) rank = launcher["rank"].get<int64_t>();
    PhaseTimer groups_timer("torch.process_groups");
    torch["process_groups"] = join_process_groups(recorder, (*document)["communicators"], rank);
  }
  (*document)["torch"] = torch;
}

// "fatal_signal": the signal that ended a core's process (snapshot/fatal_signal.h), after the
// threads (its thread's frames say whether it was a failure or a signal sent from outside).
void add_fatal_signal(Target& target, const LibrarySearch& search, json* document) {
  std::optional<SignalInfo> signal = target.fatal_signal();
  json fatal_signal = fatal_signal_json(signal, target.pid(), (*document)["threads"]);
  if (fatal_signal.is_object() && fatal_signal["via"].is_string())  // std::terminate: read what it was thrown
    for (const ThreadInfo& thread : target.threads())
      if (thread.tid == signal->tid)
        if (std::optional<InFlightException> exception = find_in_flight_exception(target, thread, search))
          attach_in_flight_exception(in_flight_exception_json(*exception), &fatal_signal);
  (*document)["fatal_signal"] = fatal_signal;
  if (!signal) (*document)["fatal_signal_unavailable"] = target.fatal_signal_unavailable();
}

}  // namespace

// What every document holds, NCCL or not: PyTorch's state, host threads, Python stacks and a
// fatal signal. Python stacks are read before any unwinding, while a --freeze still holds.
void add_process_sections(Target& target, const StateRequest& request, const LibrarySearch& search, json* document,
                          json* errors, json warnings) {
  PythonStacks python;
  {
    PhaseTimer timer("state.python");
    python = read_python_stacks(target, python_search(request, search));
  }
  {
    PhaseTimer timer("state.torch");
    add_torch(target, python, request, search, document, errors);
  }
  {
    PhaseTimer timer("state.threads");
    add_threads(target, request, document, std::move(warnings));
  }
  add_python(python, document, errors);
  PhaseTimer timer("state.fatal_signal");
  add_fatal_signal(target, search, document);
}

json build_state_document(const StateRequest& request) {
  std::unique_ptr<Target> owned;
  Target* target = request.target;
  if (target == nullptr) {
    PhaseTimer timer("state.open_target");
    owned = open_target(request);
    target = owned.get();
  }
  json document = {{"schema", kStateSchema},
                   {"tool", {{"name", "ncclscope"}, {"version", NCCLSCOPE_VERSION}}},
                   {"target", target_json(*target, request)}};
  // Before libnccl is looked for: a start-up hang has no NCCL yet, and still a rank.
  {
    PhaseTimer timer("state.launcher");
    document["launcher"] = launcher_json(read_launcher_environment(*target));
  }
  json errors = json::array();
  for (const std::string& warning : target->warnings())
    errors.push_back({{"kind", "target"}, {"subject", target->describe()}, {"reason", warning}});

  LibrarySearch search;
  search.sysroot = request.sysroot;
  search.solib_search_path = request.solib_search_path;
  search.force_mismatch = request.force_mismatch;
  search.mismatch_leaves_no_file = true;  // a profile with the target's build-id still decodes
  std::vector<NcclLibrary> libraries;
  try {
    PhaseTimer timer("state.nccl_libraries");
    libraries = load_nccl_libraries(*target, request, search);
  } catch (const NoNcclLibrary& error) {
    // Still a document: a rank that never loaded NCCL (a start-up hang) has a launcher rank
    // and stacks; its NCCL sections are null, the reason in errors[].
    (void)error;
    errors.push_back({{"kind", "library"}, {"subject", target->describe()}, {"reason", "no NCCL library mapped"}});
    document["nccl"] = nullptr;
    document["discovery"] = nullptr;
    document["communicators"] = json::array();
    document["recorder"] = nullptr;
    add_process_sections(*target, request, search, &document, &errors, json::array());
    document["errors"] = errors;
    return document;
  }
  {
    PhaseTimer timer("state.nccl_discovery");
    discover_in_libraries(*target, request, &libraries);
    refuse_what_cannot_decode(&libraries);
  }

  // The single-library fields describe the primary library; nccl.libraries lists them all.
  const NcclLibrary& primary = primary_library(libraries);
  document["nccl"] = library_json(primary);
  document["nccl"]["libraries"] = libraries_json(libraries);
  if (primary.decoded())
    document["nccl"]["last_error"] = decode_last_error(*target, *primary.layout, primary.resolved.load_bias);
  document["discovery"] = document_discovery_json(primary, libraries);
  json warnings = json::array();
  report_library_problems(libraries, &errors, &warnings);
  report_unmatched_candidates(libraries, &errors);
  {
    PhaseTimer timer("state.nccl_decode");
    document["communicators"] = decode_all_communicators(*target, request, libraries, &errors);
  }
  {
    PhaseTimer timer("state.recorder");
    RecorderDecodeOptions recorder_options;
    recorder_options.include_records = request.recorder_records;
    document["recorder"] = decode_recorder(*target, &errors, recorder_options);  // flight recorder rings, when loaded
  }
  add_process_sections(*target, request, search, &document, &errors, std::move(warnings));
  document["errors"] = errors;
  return document;
}

std::unique_ptr<Target> open_target(const StateRequest& request) {
  if (request.read_memory) return open_callback_target(request);
  if (!request.core_path.empty()) return open_core(request.core_path, request.executable);
  if (request.pid > 0) return open_live(request.pid, request.freeze);
  throw UsageError("no target: give a core file or a pid");
}

int state_exit_code(const nlohmann::json& document) {
  auto errors = document.find("errors");
  if (errors != document.end() && errors->is_array() && !errors->empty()) return 1;
  // A communicator whose fields failed sanity checks is a partial answer too.
  for (const json& comm : document.value("communicators", json::array()))
    if (!comm.value("warnings", json::array()).empty()) return 1;
  return 0;
}

}  // namespace nsc
