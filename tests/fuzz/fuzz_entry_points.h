// The fuzzed entry points, shared by the libFuzzer executables (fuzz_*.cc) and
// the plain seed replay test (tests/native/hostile_seed_replay_test.cc), so the
// committed corpus runs through the very same code in every build.
//
// Each run_* takes untrusted bytes and must return normally: the only
// exceptions allowed out of the library are the documented nsc::BadInput
// (caught here); anything else escapes and is a finding.
#pragma once

#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/recorder_decoder.h"
#include "cuda/recorder_format.h"
#include "layout/layout_profile.h"
#include "layout/profile_store.h"
#include "nccl/comm_decoder.h"
#include "nccl/comm_scanner.h"
#include "snapshot/launcher_section.h"
#include "target/build_ids.h"
#include "target/core_file.h"
#include "target/slice_ranges.h"
#include "target/core_writer.h"
#include "target/launcher_environment.h"
#include "torch/fr_dump_reader.h"
#include "triage/fr_match.h"
#include "triage/process_view.h"
#include "triage/sax_summary.h"
#include "triage/triage.h"
#include "util/errors.h"
#include "util/strings.h"

#include "summary_comparison.h"

namespace nsc::fuzz {

// The CPU time this process has used, in seconds (all threads, user + system).
inline double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return now.tv_sec + now.tv_nsec / 1e9;
}

// libFuzzer's -timeout counts wall-clock time: on a loaded machine a starved fuzzer "times out"
// on inputs that take 0.1 s of CPU. This limit counts CPU time (ITIMER_PROF): an input that
// uses more than NCCLSCOPE_FUZZ_CPU_LIMIT_MS of CPU aborts, and libFuzzer saves it as a crash.
// Unset or 0: no limit (the seed replay test measures CPU time itself).
inline void on_cpu_limit(int) {
  static const char message[] = "==fuzz== input over the CPU-time limit (NCCLSCOPE_FUZZ_CPU_LIMIT_MS)\n";
  ssize_t ignored = ::write(2, message, sizeof message - 1);
  (void)ignored;
  std::abort();
}

inline long cpu_limit_ms() {
  static const long limit = [] {
    const char* text = std::getenv("NCCLSCOPE_FUZZ_CPU_LIMIT_MS");
    long value = text ? std::strtol(text, nullptr, 10) : 0;
    if (value > 0) std::signal(SIGPROF, on_cpu_limit);
    return value;
  }();
  return limit;
}

// Runs one fuzz input under the CPU-time limit.
inline int run_cpu_bounded(int (*entry)(const uint8_t*, size_t), const uint8_t* data, size_t size) {
  long limit = cpu_limit_ms();
  if (limit > 0) {
    itimerval arm{{0, 0}, {limit / 1000, (limit % 1000) * 1000}};
    setitimer(ITIMER_PROF, &arm, nullptr);
  }
  int result = entry(data, size);
  if (limit > 0) {
    itimerval disarm{};
    setitimer(ITIMER_PROF, &disarm, nullptr);
  }
  return result;
}

// The real NCCL 2.28.9 layout, found as ncclscope finds profiles (beside the build, then
// the source tree), read once per process; nullptr (said once) when it is nowhere: the
// decoder targets then fuzz nothing rather than abort.
inline const LayoutProfile* real_profile() {
  static const std::optional<LayoutProfile> profile = []() -> std::optional<LayoutProfile> {
    const std::string build_id = "9fcf74d93a8c3605bf7718f594d0a24366e38536";
    std::vector<std::string> files = find_profile_files(build_id, profile_search_dirs({}));
    if (!files.empty()) return read_layout_profile(files.front());
    std::fprintf(stderr, "fuzz: no layout profile %s.json beside the build or in the source tree: "
                 "decoders not exercised\n", build_id.c_str());
    return std::nullopt;
  }();
  return profile ? &*profile : nullptr;
}

// Memory whose bytes all come from the fuzzer input, repeated: the byte at
// address A of a region is input[(A - region.start) % size]. So a 1 MB struct
// ncclComm is fully populated by a short input, and every pointer the decoders
// follow is fuzzer-chosen (the comparisons below teach libFuzzer the bases).
class CyclicTarget : public Target {
 public:
  static constexpr uint64_t kHeap = 0x10000000;         // the comm lives at its start
  static constexpr uint64_t kHeapSize = 5u << 18;       // 1.25 MB: holds one 1,082,968-byte comm
  static constexpr uint64_t kUnsaved = 0x20000000;      // mapped, bytes not in the "core"
  static constexpr uint64_t kUnsavedSize = 1u << 20;
  static constexpr uint64_t kLibrary = 0x7f0000000000;  // libnccl's .bss (registry symbols)
  static constexpr uint64_t kLibrarySize = 1u << 20;

  CyclicTarget(const uint8_t* data, size_t size, uint64_t library_low)
      : bytes_(data, data + size), library_low_(library_low) {
    add_region(kHeap, kHeapSize, true);
    add_region(kUnsaved, kUnsavedSize, false);
    add_region(kLibrary, kLibrarySize, true, /*writable=*/false);  // read-only: not scanned
  }

  std::string describe() const override { return "fuzz memory"; }
  bool is_core() const override { return true; }
  int pid() const override { return 1; }
  bool read(uint64_t addr, void* buf, size_t len, ReadError* error) override {
    ++reads;
    if (len == 0) return true;
    const MemoryRegion* region = find_region(regions_, addr);
    if (region == nullptr) return fail(addr, ReadFailure::kNotMapped, error);
    if (!region->saved) return fail(addr, ReadFailure::kNotSavedInCore, error);
    if (len > region->end - addr) return fail(region->end, ReadFailure::kShortRead, error);
    fill(addr - region->start, static_cast<uint8_t*>(buf), len);
    return true;
  }
  // A core hands the scanner its bytes directly (CoreFile maps the file), and so
  // does this "core": the heap is materialised once per execution into a buffer
  // kept for the whole process (a 1.25 MB allocation and chunked copy per
  // execution was a third of each run).
  const uint8_t* scan_direct(uint64_t addr, size_t len) override {
    if (addr < kHeap || len > kHeap + kHeapSize - addr) return nullptr;
    static std::vector<uint8_t> heap(kHeapSize);
    if (!heap_materialised_) fill(0, heap.data(), kHeapSize);
    heap_materialised_ = true;
    return heap.data() + (addr - kHeap);
  }
  const std::vector<MemoryRegion>& regions() const override { return regions_; }
  const std::vector<MappedFile>& mapped_files() const override { return files_; }
  std::vector<ThreadInfo> threads() override { return {}; }
  std::string executable() const override { return "/fuzz/app"; }

  // Load bias that puts the registry symbols (ncclComms, nNcclComms) in kLibrary.
  uint64_t load_bias() const { return kLibrary - library_low_; }
  uint64_t reads = 0;

 private:
  void add_region(uint64_t start, uint64_t size, bool saved, bool writable = true) {
    MemoryRegion region;
    region.start = start;
    region.end = start + size;
    region.readable = true;
    region.writable = writable;
    region.saved = saved;
    regions_.push_back(region);
  }
  void fill(uint64_t offset, uint8_t* out, size_t len) const {
    size_t period = bytes_.size();
    size_t at = offset % period;
    while (len > 0) {
      size_t run = std::min(len, period - at);
      std::memcpy(out, bytes_.data() + at, run);
      out += run;
      len -= run;
      at = 0;
    }
  }
  static bool fail(uint64_t addr, ReadFailure reason, ReadError* error) {
    if (error) *error = ReadError{addr, reason, ""};
    return false;
  }
  std::vector<uint8_t> bytes_;
  uint64_t library_low_;
  bool heap_materialised_ = false;
  std::vector<MemoryRegion> regions_;  // sorted by start
  std::vector<MappedFile> files_;
};

inline uint64_t lowest_registry_symbol(const LayoutProfile& layout) {
  uint64_t low = UINT64_MAX;
  for (const char* name : {"ncclComms", "nNcclComms"}) {
    auto found = layout.symbols.find(name);
    if (found != layout.symbols.end()) low = std::min(low, found->second);
  }
  return low == UINT64_MAX ? 0 : low;
}

enum DecodeMode : uint8_t { kDecodeOnly = 0, kDiscover = 1, kForceScan = 2 };

// Decodes the comm at kHeap with `layout`; with kDiscover, also finds comms
// through the registry (or by scanning, kForceScan) and decodes what it finds.
inline void decode_cyclic_memory(const LayoutProfile& layout, const uint8_t* data, size_t size,
                                 uint8_t mode) {
  if (size == 0) return;
  CyclicTarget target(data, size, lowest_registry_symbol(layout));
  nlohmann::json errors = nlohmann::json::array();
  nlohmann::json comm = decode_communicator(target, layout, CyclicTarget::kHeap, &errors);
  comm.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);  // must be valid UTF-8
  if (!(mode & kDiscover)) return;
  check_comm_candidate(target, layout, CyclicTarget::kHeap);
  DiscoveryOptions options;
  options.load_bias = target.load_bias();
  options.force_scan = (mode & kForceScan) != 0;
  Discovery found = discover_communicators(target, layout, options);
  for (size_t i = 0; i < found.addresses.size() && i < 4; ++i)
    decode_communicator(target, layout, found.addresses[i], &errors);
}

// Communicator decoders and the scanner over fuzzer memory, real 2.28.9 layout.
// Byte 0 is the DecodeMode (a scan sweeps 1.25 MB, so most runs only decode).
inline int run_comm_decoders(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  if (const LayoutProfile* layout = real_profile())
    decode_cyclic_memory(*layout, data + 1, size - 1, data[0] & (kDiscover | kForceScan));
  return 0;
}

// The layout-profile reader; an accepted profile must round-trip and then
// drive the decoders over memory made of the profile's own bytes.
inline int run_layout_profile(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  LayoutProfile profile;
  try {
    profile = parse_layout_profile(text, "fuzz");
  } catch (const BadInput&) {
    return 0;
  }
  std::string again = format_layout_profile(profile);
  LayoutProfile reparsed = parse_layout_profile(again, "fuzz-roundtrip");
  if (format_layout_profile(reparsed) != again) throw std::logic_error("profile does not round-trip");
  decode_cyclic_memory(profile, data, size, kDiscover);
  return 0;
}

// A file descriptor holding the bytes, for readers that take a path.
class MemoryFile {
 public:
  MemoryFile(const uint8_t* data, size_t size) {
    fd_ = memfd_create("fuzz-input", MFD_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error("memfd_create failed");
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) throw std::runtime_error("memfd write failed");
      done += static_cast<size_t>(n);
    }
  }
  ~MemoryFile() { ::close(fd_); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_ = -1;
};

// Reads a little of everything a core describes, as the later steps would.
inline void read_around(CoreFile& core) {
  uint8_t buffer[64];
  ReadError error;
  size_t count = 0;
  for (const MemoryRegion& region : core.regions()) {
    if (++count > 256) break;
    core.read(region.start, buffer, sizeof buffer, &error);
    if (region.size() >= sizeof buffer) core.read(region.end - sizeof buffer, buffer, sizeof buffer, &error);
    core.direct(region.start, std::min<uint64_t>(region.size(), 4096));
    read_c_string(core, region.start, 256, &error);
    escape_for_terminal(region.path);
  }
  for (const ThreadInfo& thread : core.threads()) {
    escape_for_terminal(thread.name);
    valid_utf8(thread.name);
  }
  for (const MappedFile& file : core.mapped_files()) valid_utf8(file.path);
  mapped_object_build_ids(core);
  std::vector<AddressRange> keep = default_keep_ranges(core, SliceKeepOptions{});
  plan_slice(core, keep);
}

// The ELF core reader: open from bytes, read around, find and decode comms.
inline int run_core_reader(const uint8_t* data, size_t size) {
  MemoryFile file(data, size);
  std::unique_ptr<CoreFile> core;
  try {
    core = open_core_file(file.path(), "");
  } catch (const BadInput&) {
    return 0;
  }
  read_around(*core);
  launcher_json(read_launcher_environment(*core));  // the initial-stack walk on hostile stacks
  if (real_profile() == nullptr) return 0;
  const LayoutProfile& layout = *real_profile();
  Discovery found = discover_communicators(*core, layout, DiscoveryOptions{});
  nlohmann::json errors = nlohmann::json::array();
  for (size_t i = 0; i < found.addresses.size() && i < 4; ++i)
    decode_communicator(*core, layout, found.addresses[i], &errors);
  return 0;
}

// The triage snapshot readers: the CLI's streaming one (summarize_state_text)
// and the DOM one (summarize_state_document) -> a triage report of the summary
// (twice, as two ranks) rendered as text and DOT.
// The SAX summary of a snapshot's text, or nullopt when it refuses the text.
inline std::optional<triage::ProcessView> streamed_summary(const std::string& text) {
  try {
    triage::ProcessView streamed;
    std::string schema;
    if (triage::summarize_state_text(text, "fuzz.json", "snapshot", &streamed, &schema)) return streamed;
  } catch (const BadInput&) {
  }
  return std::nullopt;
}

// The summary of the parsed document, or nullopt when the text is no JSON or it refuses it.
inline std::optional<triage::ProcessView> parsed_summary(const nlohmann::json& document) {
  if (document.is_discarded()) return std::nullopt;
  try {
    return triage::summarize_state_document(document, "fuzz.json", "snapshot");
  } catch (const BadInput&) {
    return std::nullopt;
  }
}

// Aborts (a finding) when the two summarizers disagree: one refuses what the other
// accepts, or their summaries differ in any field (shown from the first difference).
inline void check_summarizers_agree(const std::optional<triage::ProcessView>& streamed,
                                    const std::optional<triage::ProcessView>& parsed) {
  if (streamed.has_value() != parsed.has_value()) {
    std::fprintf(stderr, "summarizers disagree: only the %s one accepts this snapshot\n",
                 streamed ? "SAX (sax_summary.cc)" : "document (process_view.cc)");
    std::abort();
  }
  if (!streamed) return;
  auto text_of = [](const triage::ProcessView& process) {
    return summary_json(process).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  std::string from_text = text_of(*streamed), from_document = text_of(*parsed);
  if (from_text == from_document) return;
  size_t at = std::mismatch(from_text.begin(), from_text.end(), from_document.begin(), from_document.end()).first -
              from_text.begin();
  size_t from = at > 120 ? at - 120 : 0;
  std::fprintf(stderr, "summarizers disagree at byte %zu:\n  SAX:      ...%s\n  document: ...%s\n", at,
               from_text.substr(from, 240).c_str(), from_document.substr(from, 240).c_str());
  std::abort();
}

inline int run_snapshot_reader(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json document =
      nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  std::optional<triage::ProcessView> parsed = parsed_summary(document);
  std::optional<triage::ProcessView> streamed = streamed_summary(text);
  if (!has_duplicate_keys(text)) check_summarizers_agree(streamed, parsed);
  if (!parsed) return 0;
  triage::ProcessView process = *parsed;
  triage::ProcessView second = process;
  second.input_name = "fuzz-copy.json";
  TriageOptions options;
  options.graph_group_threshold = 2;  // exercise the grouped graph too
  nlohmann::json report = triage_processes({process, second}, {}, options);
  render_triage_text(report);
  render_triage_dot(report, options);
  triage_exit_code(report);
  report.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  return 0;
}

// The flight recorder's region (cuda/recorder_format.h) as fuzzer bytes: one
// private anonymous mapping whose first bytes are the input (the rest of the
// mapping is zero), at a fixed address that the seeds' self_address names.
class RecorderFuzzTarget : public Target {
 public:
  static constexpr uint64_t kRegion = 0x7e0000000000;  // make_recorder_seed.py writes this self_address
  static constexpr uint64_t kPage = 4096;

  // `offset_pages`: where the input starts inside the mapping (1: the page sweep must find it).
  RecorderFuzzTarget(const uint8_t* data, size_t size, uint64_t offset_pages, bool live)
      : data_(data), size_(size), live_(live) {
    MemoryRegion region;
    region.start = kRegion - offset_pages * kPage;
    data_start_ = kRegion;
    uint64_t end = (kRegion + size + kPage - 1) & ~(kPage - 1);
    region.end = std::max(end, kRegion + kPage);
    region.readable = region.writable = true;
    regions_.push_back(region);
  }
  std::string describe() const override { return "fuzz recorder memory"; }
  bool is_core() const override { return !live_; }
  int pid() const override { return 1; }
  bool read(uint64_t addr, void* buf, size_t len, ReadError* error) override {
    const MemoryRegion& region = regions_.front();
    if (addr < region.start || addr >= region.end) return fail(addr, ReadFailure::kNotMapped, error);
    if (len > region.end - addr) return fail(region.end, ReadFailure::kShortRead, error);
    auto* out = static_cast<uint8_t*>(buf);
    std::memset(out, 0, len);
    // Copy the part of [addr, addr + len) that the input covers.
    uint64_t from = std::max(addr, data_start_), to = std::min(addr + len, data_start_ + size_);
    if (from < to) std::memcpy(out + (from - addr), data_ + (from - data_start_), to - from);
    return true;
  }
  const std::vector<MemoryRegion>& regions() const override { return regions_; }
  const std::vector<MappedFile>& mapped_files() const override { return files_; }
  std::vector<ThreadInfo> threads() override { return {}; }
  std::string executable() const override { return "/fuzz/app"; }

 private:
  static bool fail(uint64_t addr, ReadFailure reason, ReadError* error) {
    if (error) *error = ReadError{addr, reason, ""};
    return false;
  }
  const uint8_t* data_;
  size_t size_;
  bool live_;
  uint64_t data_start_ = 0;
  std::vector<MemoryRegion> regions_;
  std::vector<MappedFile> files_;  // unknown: the decoder may sweep page by page
};

enum RecorderFuzzMode : uint8_t { kRecorderSweep = 1, kRecorderLive = 2, kRecorderAllRecords = 4 };

// The recorder buffer decoder. Byte 0: RecorderFuzzMode bits; the rest is the
// region (header, rings, records) as the recorder wrote it.
inline int run_recorder_decoder(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  uint8_t mode = data[0];
  RecorderFuzzTarget target(data + 1, size - 1, (mode & kRecorderSweep) ? 1 : 0, (mode & kRecorderLive) != 0);
  RecorderDecodeOptions options;
  options.include_records = (mode & kRecorderAllRecords) != 0;
  nlohmann::json errors = nlohmann::json::array();
  nlohmann::json section = decode_recorder(target, &errors, options);
  section.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);  // must be valid UTF-8
  build_stream_chains(section);
  return 0;
}

// PyTorch flight-recorder dump files (issue 31): the restricted pickle reader on any bytes
// (one BadInput line, never a crash), then what it read matched across two ranks as triage
// does (world ranks 0 and 1 holding the same records).
inline int run_fr_dump(const uint8_t* data, size_t size) {
  torch::FrRankRecords records;
  try {
    records = torch::read_fr_dump(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const BadInput&) {
    return 0;
  }
  std::vector<triage::FrRankInput> ranks = {{0, 0, &records}, {1, 1, &records}};
  triage::FrMatch match = triage::match_flight_records(ranks, 2);
  match.section.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}

}  // namespace nsc::fuzz
