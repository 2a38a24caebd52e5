// `ncclscope slice CORE -o SMALL.core`: a small valid core that keeps the notes,
// thread stacks, ELF headers, the dynamic linker's list, every range the
// decoders read (host-memory buffers of launched collectives included), and --keep-region ranges; everything else becomes "not saved".
// The environment strings on the initial stack are dropped but for the launcher's allowlisted
// values (a slice is made to be shared: tokens and keys in the environment must not travel).
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options.h"
#include "cuda/recorder_decoder.h"
#include "snapshot/numerics_document.h"
#include "snapshot/state_document.h"
#include "target/core_file.h"
#include "target/core_writer.h"
#include "target/launcher_environment.h"
#include "target/library_resolver.h"
#include "target/recording_target.h"
#include "target/slice_ranges.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc::cli {
namespace {

const char kSliceUsage[] =
    "usage: ncclscope slice CORE -o SMALL.core [options]\n"
    "  -o, --output FILE          the sliced core to write\n"
    "  --keep-region START-END    also keep this address range (0x-hex), repeatable\n"
    "  --no-decode                keep only stacks, ELF headers and --keep-region (no NCCL pass)\n"
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

nlohmann::json figures_json(const SliceRequest& request, const SliceStats& stats,
                            size_t decoder_ranges, size_t communicators, uint64_t environment_redacted) {
  return {{"core", request.core_path},          {"output", request.output_path},
          {"input_bytes", stats.input_bytes},   {"output_bytes", stats.output_bytes},
          {"kept_bytes", stats.kept_bytes},     {"load_segments", stats.load_segments},
          {"note_bytes", stats.note_bytes},     {"decoder_ranges", decoder_ranges},
          {"communicators", communicators},     {"environment_bytes_redacted", environment_redacted}};
}

// The environment strings of the initial stack hold secrets (tokens, keys). A slice keeps
// the stack's pages, so these bytes are redacted instead of dropped: every byte but the NULs
// becomes '*', except what the decoders (and --keep-region) read: every name and the
// allowlisted values of target/launcher_environment.h. envp[] and the strings stay well formed.
std::vector<AddressRange> environment_to_redact(CoreFile& core, const std::vector<AddressRange>& read) {
  LauncherEnvironment environment = read_launcher_environment(core);
  if (environment.strings_end <= environment.strings_start) return {};
  std::vector<AddressRange> redact{{environment.strings_start, environment.strings_end}};
  for (const AddressRange& range : read) redact = without_range(redact, range);
  return redact;
}

int slice(const SliceRequest& request, bool json_output) {
  auto core = open_core_file(request.core_path, request.executable);
  std::vector<AddressRange> keep = default_keep_ranges(*core, SliceKeepOptions{});
  std::vector<AddressRange> decoded;
  size_t communicators = 0;
  int exit_code = kExitOk;
  if (request.decode) {
    try {
      decoded = record_decoder_reads(*core, request, &communicators);
    } catch (const BadInput& error) {
      std::fprintf(stderr, "ncclscope slice: NCCL pass skipped: %s\n", escape_for_terminal(error.what()).c_str());
      exit_code = kExitPartial;
      decoded = record_recorder_reads(*core);
    }
  }
  std::vector<AddressRange> read = decoded;
  read.insert(read.end(), request.extra_ranges.begin(), request.extra_ranges.end());
  std::vector<AddressRange> redact = environment_to_redact(*core, read);
  keep.insert(keep.end(), read.begin(), read.end());
  keep = merge_ranges(std::move(keep));
  SliceStats stats = write_sliced_core(*core, keep, request.output_path, redact);
  std::vector<AddressRange> verified = keep;
  for (const AddressRange& range : redact) verified = without_range(verified, range);
  if (!verify_slice(*core, request.output_path, verified))
    throw BadInput("slice " + request.output_path + ": verification failed (kept bytes differ)");
  if (json_output) {
    std::cout << figures_json(request, stats, decoded.size(), communicators, stats.redacted_bytes).dump(2) << "\n";
  } else {
    std::printf("%s: %.1f MB -> %s: %.2f MB (%llu bytes of memory kept, %llu segments, %zu decoder ranges, %zu communicators, "
                "%llu bytes of environment values redacted)\n",
                request.core_path.c_str(), stats.input_bytes / 1e6, request.output_path.c_str(),
                stats.output_bytes / 1e6, static_cast<unsigned long long>(stats.kept_bytes),
                static_cast<unsigned long long>(stats.load_segments), decoded.size(), communicators,
                static_cast<unsigned long long>(stats.redacted_bytes));
  }
  return exit_code;
}

}  // namespace

int run_slice_command(const std::vector<std::string>& args) {
  return run_guarded("slice", kSliceUsage, [&]() -> int {
    ParsedOptions options = parse_options(
        args, {"-o", "--output", "--keep-region", "--exe", "--sysroot", "--solib-search-path", "--profile-path"},
        {"--no-decode", "--force-mismatch", "--json", "--help", "-h"});
    if (options.has("--help") || options.has("-h")) {
      std::fputs(kSliceUsage, stdout);
      return kExitOk;
    }
    return slice(request_from_options(options), options.has("--json"));
  });
}

}  // namespace nsc::cli
