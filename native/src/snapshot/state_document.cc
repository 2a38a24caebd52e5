#include "snapshot/state_document.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "cuda/recorder_decoder.h"
#include "layout/header_profile.h"
#include "layout/profile_store.h"
#include "nccl/comm_decoder.h"
#include "nccl/comm_scanner.h"
#include "nccl/connection_decoder.h"
#include "snapshot/launcher_section.h"
#include "python/python_stacks.h"
#include "torch/flight_recorder.h"
#include "torch/pg_join.h"
#include "stacks/thread_stacks.h"
#include "target/callback_target.h"
#include "target/core_file.h"
#include "target/launcher_environment.h"
#include "target/library_resolver.h"
#include "target/live_process.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

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
    region.path = entry.value("path", "");
    parse_u64(entry.value("file_offset", "0x0"), &region.file_offset);
    regions.push_back(region);
  }
  return std::make_unique<CallbackTarget>(request.callback_description, request.pid, request.read_memory,
                                          std::move(regions), request.executable);
}

std::unique_ptr<Target> open_target(const StateRequest& request) {
  if (request.read_memory) return open_callback_target(request);
  if (!request.core_path.empty()) return open_core(request.core_path, request.executable);
  if (request.pid > 0) return open_live(request.pid, request.freeze);
  throw UsageError("no target: give a core file or a pid");
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

// A candidate that passed the first magic test and failed the others (endMagic flipped,
// rank out of range) is a communicator found but rejected as corrupt: an error, so that
// nobody reads "holds no communicator" as "never created one". Echoes inside an accepted
// comm are not.
// A header-built profile whose sizes no communicator confirmed is refused (bad input), with
// both sizes: decoding with it would print wrong values as real ones.
void refuse_header_profile_that_does_not_fit(const LayoutProfile& layout, const Discovery& discovery) {
  if (!is_header_profile(layout) || !discovery.addresses.empty()) return;
  for (const json& rejected : discovery.rejected) {
    std::string why = rejected.value("why", "");
    if (why.rfind("sizeof check failed", 0) == 0)
      throw BadInput("layout " + valid_utf8(layout.source) + " refused for " + valid_utf8(layout.library) +
                     ": " + valid_utf8(why));
  }
}

void report_corrupt_candidates(const Discovery& discovery, json* errors) {
  for (const json& rejected : discovery.rejected) {
    std::string why = rejected.value("why", "");
    if (why.rfind("inside comm ", 0) == 0) continue;
    errors->push_back({{"kind", "discovery"},
                       {"subject", "communicator candidate " + rejected.value("address", std::string("?"))},
                       {"reason", "found but rejected as corrupt: " + why}});
  }
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
  if (!discovery.registry_note.empty()) out["registry_note"] = discovery.registry_note;
  // Regions too large to scan (e.g. multi-TiB reservations): said, so an empty answer is explained.
  if (!discovery.skipped_regions.empty()) out["skipped_regions"] = discovery.skipped_regions;
  return out;
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

// Live threads without unwinding (no ptrace): names and states only.
json thread_list(Target& target) {
  json threads = json::array();
  for (const ThreadInfo& thread : target.threads())
    threads.push_back({{"tid", thread.tid}, {"name", valid_utf8(thread.name)},
                       {"state", std::string(1, thread.state)}, {"frames", json::array()},
                       {"blocked_in", nullptr}});
  return threads;
}

// The document's threads (unwound when asked and possible) and the unwinder's warnings.
void add_threads(Target& target, const StateRequest& request, json* document,
                 json warnings = json::array()) {
  bool can_unwind = target.is_core() || (request.pid > 0 && request.live_stacks && !request.read_memory);
  if (request.stacks && can_unwind) {
    // The unwinder ends a freeze we hold (state is already read): libdwfl stops each thread itself.
    (*document)["threads"] = unwind_threads(target, request, &warnings);
  } else {
    (*document)["threads"] = request.read_memory ? json::array() : thread_list(target);
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
  FlightRecorderState recorder = read_flight_recorder(target, python, recorder_search(request, library));
  if (!recorder.library_mapped) return;
  json torch = flight_recorder_json(recorder);
  if (!recorder.unavailable.empty() && !recorder.not_created)
    errors->push_back({{"kind", "torch"}, {"subject", valid_utf8(recorder.library)}, {"reason", valid_utf8(recorder.unavailable)}});
  for (const std::string& error : recorder.errors)
    errors->push_back({{"kind", "torch"}, {"subject", valid_utf8(recorder.library)}, {"reason", valid_utf8(error)}});
  if (recorder.unavailable.empty()) {
    std::optional<int64_t> rank;
    const json& launcher = (*document)["launcher"];
    if (launcher.is_object() && launcher.value("rank", json()).is_number_integer()) rank = launcher["rank"].get<int64_t>();
    torch["process_groups"] = join_process_groups(recorder, (*document)["communicators"], rank);
  }
  (*document)["torch"] = torch;
}

}  // namespace

json build_state_document(const StateRequest& request) {
  std::unique_ptr<Target> owned;
  Target* target = request.target;
  if (target == nullptr) {
    owned = open_target(request);
    target = owned.get();
  }
  json document = {{"schema", "ncclscope.state/1"},
                   {"tool", {{"name", "ncclscope"}, {"version", NCCLSCOPE_VERSION}}},
                   {"target", target_json(*target, request)}};
  // Before libnccl is looked for: a start-up hang has no NCCL yet, and still a rank.
  document["launcher"] = launcher_json(read_launcher_environment(*target));
  json errors = json::array();
  for (const std::string& warning : target->warnings())
    errors.push_back({{"kind", "target"}, {"subject", target->describe()}, {"reason", warning}});

  LibrarySearch search;
  search.sysroot = request.sysroot;
  search.solib_search_path = request.solib_search_path;
  search.force_mismatch = request.force_mismatch;
  search.mismatch_leaves_no_file = true;  // a profile with the target's build-id still decodes
  ResolvedLibrary library;
  try {
    library = resolve_nccl_library(*target, search);
  } catch (const NoNcclLibrary& error) {
    // Still a document: a rank that never loaded NCCL (a start-up hang) has a launcher rank
    // and stacks; its NCCL sections are null, the reason in errors[].
    (void)error;
    errors.push_back({{"kind", "library"}, {"subject", target->describe()}, {"reason", "no NCCL library mapped"}});
    document["nccl"] = nullptr;
    document["discovery"] = nullptr;
    document["communicators"] = json::array();
    document["recorder"] = nullptr;
    PythonStacks python = read_python_stacks(*target, python_search(request, search));
    add_torch(*target, python, request, search, &document, &errors);
    add_threads(*target, request, &document);
    add_python(python, &document, &errors);
    document["errors"] = errors;
    return document;
  }

  std::string why;
  LayoutProfile layout;
  try {
    layout = load_layout_for_library(library.local_path, library.build_id_in_target,
                                     request.profile_path, &why);
  } catch (const BadInput& error) {
    std::string message = error.what();
    if (!library.local_file_missing.empty()) message += "; " + library.local_file_missing;
    // A cut-off core loses the library's build-id with its memory: say why it is unknown.
    for (const std::string& warning : target->warnings()) message += "; " + warning;
    throw BadInput(message);
  }
  if (layout.find_struct("ncclComm") == nullptr)
    throw BadInput(valid_utf8(layout.source) + ": layout has no struct ncclComm (not a libnccl build?)");
  document["nccl"] = {{"version", layout.nccl_version.empty() ? json(nullptr) : json(layout.nccl_version)},
                      {"library", valid_utf8(library.path_in_target)},
                      {"local_file", valid_utf8(library.local_path)},
                      {"build_id", library.build_id_in_target.empty() ? json(library.build_id_of_file)
                                                                      : json(library.build_id_in_target)},
                      {"layout_source", valid_utf8(layout.source)},
                      {"build_id_mismatch", build_id_mismatch(library)}};
  if (!library.warning.empty())
    errors.push_back({{"kind", "library"}, {"subject", library.path_in_target}, {"reason", library.warning}});

  DiscoveryOptions discovery_options;
  discovery_options.load_bias = library.load_bias;
  discovery_options.progress = progress_printer(request.progress);
  Discovery discovery = discover_communicators(*target, layout, discovery_options);
  document["discovery"] = discovery_json(discovery);
  refuse_header_profile_that_does_not_fit(layout, discovery);
  report_corrupt_candidates(discovery, &errors);

  json communicators = json::array();
  std::unique_ptr<Target> device;
  if (request.read_device_memory)
    device = std::make_unique<CallbackTarget>("device memory", target->pid(), request.read_device_memory,
                                              std::vector<MemoryRegion>{}, "");
  for (uint64_t address : discovery.addresses) {
    communicators.push_back(decode_communicator(*target, layout, address, &errors));
    if (device)
      communicators.back()["device"] =
          decode_device_connections(*target, *device, layout, address, communicators.back());
  }
  document["communicators"] = communicators;
  document["recorder"] = decode_recorder(*target, &errors);  // flight recorder rings, when loaded

  // Python stacks are read before any unwinding, while a --freeze still holds.
  PythonStacks python = read_python_stacks(*target, python_search(request, search));
  add_torch(*target, python, request, search, &document, &errors);

  json warnings = json::array();
  if (library.local_file_missing.rfind("build-id mismatch", 0) == 0)  // a file set aside; a profile decoded
    warnings.push_back({{"kind", "library"}, {"subject", valid_utf8(library.path_in_target)},
                        {"reason", valid_utf8(library.local_file_missing) + "; decoded with " +
                                       valid_utf8(layout.source)}});
  add_threads(*target, request, &document, std::move(warnings));
  add_python(python, &document, &errors);
  document["errors"] = errors;
  return document;
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
