// `ncclscope slice CORE -o SMALL.core`: a small valid core that keeps the notes,
// thread stacks, ELF headers, the dynamic linker's list, every range the
// decoders read (host-memory buffers of launched collectives included), and --keep-region ranges; everything else becomes "not saved".
// A slice is made to be shared: on the pages it keeps, the environment values (but the
// launcher's allowlisted ones), the argument values, and the stack bytes that no decoder or
// unwinder read are redacted, and the FP/SIMD registers zeroed (see SliceEdits). What the
// input lacked (a truncated core, a skipped decode) travels in the slice as a note.
#include <elf.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options.h"
#include "cuda/recorder_decoder.h"
#include "snapshot/numerics_document.h"
#include "snapshot/state_document.h"
#include "stacks/cxx_exception.h"
#include "stacks/thread_stacks.h"
#include "target/core_file.h"
#include "target/core_notes.h"
#include "target/core_writer.h"
#include "target/launcher_environment.h"
#include "target/library_resolver.h"
#include "target/recording_target.h"
#include "target/slice_ranges.h"
#include "util/errors.h"
#include "util/output_file.h"
#include "util/strings.h"

namespace nsc::cli {
namespace {

const char kSliceUsage[] =
    "usage: ncclscope slice CORE -o SMALL.core [options]\n"
    "  -o, --output FILE          the sliced core to write\n"
    "  --keep-region START-END    also keep this address range (0x-hex), repeatable\n"
    "  --no-decode                keep only stacks, ELF headers and --keep-region (no NCCL pass)\n"
    "  --keep-stacks              keep thread stacks unredacted (they may hold secrets)\n"
    "  --exe PATH                 the executable\n"
    "  --sysroot DIR              prefix for library paths recorded in the core\n"
    "  --solib-search-path D:D    directories searched for libraries by name\n"
    "  --profile-path D:D         extra directories of layout profiles\n"
    "  --force-mismatch           use a libnccl whose build-id differs from the target's\n"
    "  --json                     print the figures as JSON\n";

struct SliceRequest {
  std::string core_path;
  std::string output_path;
  std::string executable;
  std::vector<AddressRange> extra_ranges;
  bool decode = true;
  bool keep_stacks = false;
  LibrarySearch search;
  std::vector<std::string> profile_path;
};

SliceRequest request_from_options(const ParsedOptions& options) {
  SliceRequest request;
  if (options.positional.size() != 1) throw UsageError("slice takes exactly one core file");
  request.core_path = options.positional[0];
  request.output_path = options.value("--output", options.value("-o"));
  if (request.output_path.empty()) throw UsageError("missing -o SMALL.core");
  request.executable = options.value("--exe");
  for (const std::string& text : options.all("--keep-region")) {
    AddressRange range;
    if (!parse_address_range(text, &range)) throw UsageError("--keep-region " + text + ": want START-END");
    request.extra_ranges.push_back(range);
  }
  request.decode = !options.has("--no-decode");
  request.keep_stacks = options.has("--keep-stacks");
  request.search.sysroot = options.value("--sysroot");
  for (const auto& list : options.all("--solib-search-path"))
    for (const auto& dir : split_colon_list(list)) request.search.solib_search_path.push_back(dir);
  for (const auto& list : options.all("--profile-path"))
    for (const auto& dir : split_colon_list(list)) request.profile_path.push_back(dir);
  request.search.force_mismatch = options.has("--force-mismatch");
  return request;
}

// Runs the whole state decode over the core through a RecordingTarget and
// returns what it read: every range a decoder needs survives the slice.
std::vector<AddressRange> record_decoder_reads(CoreFile& core, const SliceRequest& request,
                                               size_t* communicators) {
  RecordingTarget recording(core);
  StateRequest state;
  state.core_path = core.path();
  state.target = &recording;
  state.sysroot = request.search.sysroot;
  state.solib_search_path = request.search.solib_search_path;
  state.profile_path = request.profile_path;
  state.force_mismatch = request.search.force_mismatch;
  state.stacks = false;  // stacks are kept whole by the slice plan itself
  state.progress = false;
  nlohmann::json document = build_state_document(state);
  *communicators = document["communicators"].size();
  numerics_of_state(document, recording, nullptr, NumericsOptions{});  // buffers saved in the core
  return recording.recorded_ranges();
}

// Without libnccl the state decode stops early: the flight recorder's region (if any)
// is still worth keeping, so decode it alone through a RecordingTarget.
std::vector<AddressRange> record_recorder_reads(CoreFile& core) {
  RecordingTarget recording(core);
  nlohmann::json errors = nlohmann::json::array();
  decode_recorder(recording, &errors);
  read_launcher_environment(recording);  // the launcher object of `state` on the slice
  return recording.recorded_ranges();
}

// The C++ exception the process died of (std::terminate's): the stack words that point to it,
// its headers, type name and message stay in the slice, so `state` on it shows the same text.
std::vector<AddressRange> record_exception_reads(CoreFile& core, const SliceRequest& request) {
  std::optional<SignalInfo> signal = core.fatal_signal();
  if (!signal) return {};
  for (const ThreadInfo& thread : core.threads())
    if (thread.tid == signal->tid)
      if (std::optional<InFlightException> exception = find_in_flight_exception(core, thread, request.search)) {
        RecordingTarget recording(core);
        reread_in_flight_exception(recording, *exception, request.search);
        return recording.recorded_ranges();
      }
  return {};
}

StackOptions stack_options(const SliceRequest& request) {
  StackOptions options;
  options.executable = request.executable;
  options.sysroot = request.search.sysroot;
  options.solib_search_path = request.search.solib_search_path;
  return options;
}

// The stack bytes the unwinder reads (return addresses, saved registers): unwound over a
// RecordingTarget they are recorded, and stay readable when the rest of each stack is redacted.
std::vector<AddressRange> record_unwinder_reads(CoreFile& core, const SliceRequest& request) {
  RecordingTarget recording(core);
  std::vector<std::string> warnings;
  unwind_threads_over_target(recording, stack_options(request), &warnings);
  return recording.recorded_ranges();
}

// Each thread's frames (pcs) and why its unwind stopped, as `state` unwinds a core file.
std::map<int, std::pair<std::vector<uint64_t>, std::string>> unwound_frames(Target& core, const SliceRequest& request) {
  std::vector<std::string> warnings;
  std::map<int, std::pair<std::vector<uint64_t>, std::string>> frames;
  for (const ThreadStack& thread : unwind_threads(core, stack_options(request), &warnings)) {
    auto& entry = frames[thread.tid];
    for (const StackFrame& frame : thread.frames) entry.first.push_back(frame.pc);
    entry.second = thread.error;
  }
  return frames;
}

// The unwinder over a recording target may read less than libdwfl's core unwinder (another
// module lookup): where the slice's frames differ from the input's, that thread's stack stays
// whole. Returns the stack ranges to unredact (none when every thread unwinds the same).
std::vector<AddressRange> stacks_unwound_differently(CoreFile& core, const std::string& slice_path,
                                                     const SliceRequest& request) {
  auto sliced = open_core_file(slice_path, core.executable());
  auto want = unwound_frames(core, request), got = unwound_frames(*sliced, request);
  std::vector<AddressRange> whole;
  for (const ThreadInfo& thread : core.threads()) {
    if (want[thread.tid] == got[thread.tid]) continue;
    auto sp = stack_pointer_of(thread);
    for (const AddressRange& range : merge_ranges(thread_stack_ranges(core, SliceKeepOptions{})))
      if (sp && *sp >= range.start && *sp < range.end) whole.push_back(range);
  }
  return whole;
}

// Reads every kept range back from the written core: it must hold the same bytes.
bool verify_slice(CoreFile& original, const std::string& output_path,
                  const std::vector<AddressRange>& ranges) {
  auto sliced = open_core_file(output_path, original.executable());
  std::vector<uint8_t> want, got;
  for (const AddressRange& range : ranges) {
    want.resize(range.end - range.start);
    got.resize(want.size());
    if (!original.read(range.start, want.data(), want.size(), nullptr)) continue;  // never saved
    if (!sliced->read(range.start, got.data(), got.size(), nullptr) || want != got) return false;
  }
  return sliced->threads().size() == original.threads().size();
}

nlohmann::json figures_json(const SliceRequest& request, const SliceStats& stats, size_t decoder_ranges,
                            size_t communicators, const std::vector<std::string>& provenance) {
  return {{"core", request.core_path},          {"output", request.output_path},
          {"input_bytes", stats.input_bytes},   {"output_bytes", stats.output_bytes},
          {"kept_bytes", stats.kept_bytes},     {"load_segments", stats.load_segments},
          {"note_bytes", stats.note_bytes},     {"decoder_ranges", decoder_ranges},
          {"communicators", communicators},     {"environment_bytes_redacted", stats.redacted_environment_bytes},
          {"argument_bytes_redacted", stats.redacted_argument_bytes},
          {"stack_bytes_redacted", stats.redacted_stack_bytes},
          {"register_bytes_cleared", stats.cleared_register_bytes},
          {"input_problems", provenance}};
}

std::vector<AddressRange> without_ranges(std::vector<AddressRange> ranges, const std::vector<AddressRange>& cut) {
  for (const AddressRange& range : cut) ranges = without_range(ranges, range);
  return ranges;
}

// The argument strings [start, end) of the initial stack, argv[0] first: for each, the bytes
// past visible_argument_prefix (the values: "--password=hunter2" keeps "--password=").
std::vector<AddressRange> argument_values(CoreFile& core, uint64_t start, uint64_t end) {
  std::vector<char> bytes(end - start);
  if (bytes.empty() || !core.scan_read(start, bytes.data(), bytes.size(), nullptr)) return {{start, end}};
  std::vector<AddressRange> values;
  size_t index = 0;
  for (size_t at = 0; at < bytes.size();) {
    size_t length = strnlen(bytes.data() + at, bytes.size() - at);
    size_t visible = visible_argument_prefix(std::string_view(bytes.data() + at, length), index++);
    if (visible < length) values.push_back({start + at + visible, start + at + length});
    at += length + 1;
  }
  return values;
}

// The thread stacks without their thread control blocks (libthread_db reads those).
std::vector<AddressRange> stack_bytes(CoreFile& core) {
  SliceKeepOptions options;
  std::vector<AddressRange> stacks = merge_ranges(thread_stack_ranges(core, options));
  for (const ThreadInfo& thread : core.threads())
    if (auto tcb = thread_pointer_of(thread); tcb && *tcb > options.tcb_bytes)
      stacks = without_range(stacks, {*tcb - options.tcb_bytes, *tcb + options.tcb_bytes});
  return stacks;
}

// The secrets on the pages a slice keeps: the environment strings but every name and the
// allowlisted values (target/launcher_environment.h), the argument values, and (unless
// --keep-stacks) the stack bytes. `visible`: what the decoders, the unwinder and --keep-region
// read, never redacted. Strings and arrays stay well formed ('*' for every byte but NULs).
SliceEdits secrets_to_redact(CoreFile& core, const std::vector<AddressRange>& visible, bool keep_stacks) {
  SliceEdits edits;
  LauncherEnvironment environment = read_launcher_environment(core);
  std::vector<AddressRange> strings;  // of the initial stack: handled here, not as stack bytes
  if (environment.strings_end > environment.strings_start) {
    strings.push_back({environment.strings_start, environment.strings_end});
    edits.redact_environment = without_ranges({strings.back()}, visible);
  }
  if (environment.arguments_end > environment.arguments_start) {
    strings.push_back({environment.arguments_start, environment.arguments_end});
    edits.redact_arguments =
        without_ranges(argument_values(core, environment.arguments_start, environment.arguments_end), visible);
  }
  if (!keep_stacks) {
    // AT_EXECFN's string names the program (CoreFile reads it when no mapping does).
    std::vector<AddressRange> kept = visible;
    kept.insert(kept.end(), strings.begin(), strings.end());
    auto execfn = core.notes().auxv.find(AT_EXECFN);
    if (execfn != core.notes().auxv.end()) kept.push_back({execfn->second, execfn->second + 4096});
    edits.redact_stacks = without_ranges(stack_bytes(core), kept);
  }
  return edits;
}

// What the slice cannot carry from its input: said in the slice (its provenance note) so that
// every reader of the slice reports it, as it reported it on the input.
std::vector<std::string> input_problems(CoreFile& core, const std::string& skipped_pass) {
  std::vector<std::string> problems;
  for (const std::string& warning : core.warnings()) problems.push_back("input " + warning);
  if (!skipped_pass.empty()) problems.push_back("NCCL pass skipped while slicing: " + skipped_pass);
  return problems;
}

// Writes the slice into `output`. A thread whose frames differ on it from the input's keeps
// its stack whole (the slice is written once more); *kept_whole counts those stacks.
SliceStats write_slice(CoreFile& core, const std::vector<AddressRange>& keep, const SliceRequest& request,
                       SliceEdits* edits, ReplacingOutput* output, size_t* kept_whole) {
  SliceStats stats = write_sliced_core(core, keep, output->fd(), request.output_path, *edits);
  *kept_whole = 0;
  if (edits->redact_stacks.empty()) return stats;
  std::vector<AddressRange> whole = stacks_unwound_differently(core, output->temporary_path(), request);
  if (whole.empty()) return stats;
  *kept_whole = whole.size();
  edits->redact_stacks = without_ranges(edits->redact_stacks, whole);
  output->rewind();
  return write_sliced_core(core, keep, output->fd(), request.output_path, *edits);
}

void print_figures(const SliceRequest& request, const SliceStats& stats, size_t decoder_ranges,
                   size_t communicators, size_t stacks_kept_whole) {
  std::printf("%s: %.1f MB -> %s: %.2f MB (%llu bytes of memory kept, %llu segments, %zu decoder ranges, %zu communicators, "
              "%llu bytes of environment values, %llu of argument values and %llu of stacks redacted",
              request.core_path.c_str(), stats.input_bytes / 1e6, request.output_path.c_str(),
              stats.output_bytes / 1e6, static_cast<unsigned long long>(stats.kept_bytes),
              static_cast<unsigned long long>(stats.load_segments), decoder_ranges, communicators,
              static_cast<unsigned long long>(stats.redacted_environment_bytes),
              static_cast<unsigned long long>(stats.redacted_argument_bytes),
              static_cast<unsigned long long>(stats.redacted_stack_bytes));
  if (stacks_kept_whole > 0) std::printf("; %zu stack(s) kept whole: they unwound differently", stacks_kept_whole);
  std::printf(")\n");
}

int slice(const SliceRequest& request, bool json_output) {
  auto core = open_core_file(request.core_path, request.executable);
  check_not_the_input(*core, request.output_path);
  ReplacingOutput output(request.output_path, "slice " + request.output_path);  // refused before the work
  std::vector<AddressRange> keep = default_keep_ranges(*core, SliceKeepOptions{});
  std::vector<AddressRange> decoded;
  size_t communicators = 0;
  std::string skipped_pass;
  if (request.decode) {
    try {
      decoded = record_decoder_reads(*core, request, &communicators);
    } catch (const BadInput& error) {
      skipped_pass = error.what();
      std::fprintf(stderr, "ncclscope slice: NCCL pass skipped: %s\n", escape_for_terminal(skipped_pass).c_str());
      decoded = record_recorder_reads(*core);
    }
    std::vector<AddressRange> exception = record_exception_reads(*core, request);
    decoded.insert(decoded.end(), exception.begin(), exception.end());
  }
  for (const std::string& warning : core->warnings())
    std::fprintf(stderr, "ncclscope slice: input %s (said in the slice)\n", escape_for_terminal(warning).c_str());
  std::vector<AddressRange> read = decoded;
  read.insert(read.end(), request.extra_ranges.begin(), request.extra_ranges.end());
  std::vector<AddressRange> visible = read;
  if (!request.keep_stacks) {
    std::vector<AddressRange> unwound = record_unwinder_reads(*core, request);
    visible.insert(visible.end(), unwound.begin(), unwound.end());
  }
  SliceEdits edits = secrets_to_redact(*core, merge_ranges(visible), request.keep_stacks);
  edits.provenance = input_problems(*core, skipped_pass);
  keep.insert(keep.end(), read.begin(), read.end());
  keep = merge_ranges(std::move(keep));
  size_t stacks_kept_whole = 0;
  SliceStats stats = write_slice(*core, keep, request, &edits, &output, &stacks_kept_whole);
  std::vector<AddressRange> verified = keep;
  for (const auto* redacted : {&edits.redact_environment, &edits.redact_arguments, &edits.redact_stacks})
    verified = without_ranges(verified, *redacted);
  if (!verify_slice(*core, output.temporary_path(), verified))
    throw BadInput("slice " + request.output_path + ": verification failed (kept bytes differ)");
  output.commit();
  if (json_output) {
    nlohmann::json figures = figures_json(request, stats, decoded.size(), communicators, edits.provenance);
    figures["stacks_kept_whole"] = stacks_kept_whole;
    std::cout << figures.dump(2) << "\n";
  } else {
    print_figures(request, stats, decoded.size(), communicators, stacks_kept_whole);
  }
  return edits.provenance.empty() ? kExitOk : kExitPartial;
}

}  // namespace

int run_slice_command(const std::vector<std::string>& args) {
  return run_guarded("slice", kSliceUsage, [&]() -> int {
    ParsedOptions options = parse_options(
        args, {"-o", "--output", "--keep-region", "--exe", "--sysroot", "--solib-search-path", "--profile-path"},
        {"--no-decode", "--keep-stacks", "--force-mismatch", "--json", "--help", "-h"});
    if (options.has("--help") || options.has("-h")) {
      std::fputs(kSliceUsage, stdout);
      return kExitOk;
    }
    return slice(request_from_options(options), options.has("--json"));
  });
}

}  // namespace nsc::cli
