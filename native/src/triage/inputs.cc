#include "triage/inputs.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <unordered_set>

#include "torch/fr_dump_reader.h"
#include "triage/sax_summary.h"
#include "util/errors.h"
#include "util/input_file.h"
#include "util/phase_times.h"
#include "util/schemas.h"
#include "util/thread_heap.h"
#include "util/unpacked_xz.h"

namespace nsc::triage {
namespace {

struct WorkItem {
  std::string name;   // how messages name it
  std::string path;   // "" for a pid
  int pid = 0;
  bool from_directory = false;  // found by listing a directory, not named by the user
  bool unpacked = false;        // the file an .xz input holds (never unpacked twice)
};

struct WorkResult {
  bool process = false;  // the process was written to its slot of LoadedInputs::processes
  std::unique_ptr<KernelView> kernel_view;
  std::unique_ptr<NumericsView> numerics_view;  // beside `process` for cores and pids
  TriageFailure failure;
};

bool wanted_in_directory(std::string name) {
  auto ends_with = [&](const char* suffix) {
    size_t n = std::strlen(suffix);
    return name.size() >= n && name.compare(name.size() - n, n, suffix) == 0;
  };
  if (ends_with(".xz")) name.resize(name.size() - 3);  // rank0.core.xz: unpacked when read
  // PyTorch's dumps: TORCH_FR_DUMP_TEMP_FILE's default prefix, the usual fr_rank_, or .pkl.
  bool dump = name.rfind("fr_rank", 0) == 0 || name.rfind("nccl_trace_rank_", 0) == 0 || ends_with(".pkl");
  return name.rfind("core", 0) == 0 || ends_with(".core") || ends_with(".json") || dump;
}

// nlohmann's messages start with "[json.exception.parse_error.101] ": keep the rest.
std::string json_problem(const std::exception& error) {
  std::string message = error.what();
  size_t bracket = message.find("] ");
  return message.rfind("[json.exception", 0) == 0 && bracket != std::string::npos ? message.substr(bracket + 2)
                                                                                  : message;
}

std::string read_file(const std::string& path) { return read_regular_file(path, path); }

// What a file's first read takes: a whole snapshot of a rank (tens of KB) in one read.
constexpr size_t kHeadBytes = 1 << 16;

// First bytes decide: '{' is a snapshot, "\x7fELF" a core (the first 256 bytes, as ever).
std::string sniff(std::string_view bytes, bool may_be_xz) {
  bytes = bytes.substr(0, 256);
  const char* head = bytes.data();
  size_t n = bytes.size();
  if (n == 0) return "empty";
  if (may_be_xz && has_xz_magic(bytes)) return "xz";
  if (n >= 4 && std::memcmp(head, "\x7f" "ELF", 4) == 0) return "core";
  if (torch::looks_like_pickle(bytes)) return "fr-dump";
  for (size_t i = 0; i < n; ++i) {
    if (std::isspace(static_cast<unsigned char>(head[i]))) continue;
    return head[i] == '{' ? "snapshot" : "other";
  }
  return "snapshot";  // only whitespace so far: let the parser say what is wrong
}

// A PyTorch flight-recorder dump: a rank with records and no memory. Its rank is the number
// its file name ends in, as torchfrtrace reads it (loader.py: fr_rank_3 -> 3).
ProcessView load_fr_dump(const WorkItem& item, std::string_view content) {
  int rank = 0;
  if (!torch::fr_dump_rank_from_name(item.name, &rank))
    throw BadInput(item.name + ": a flight-recorder dump whose name ends in no rank number (name it fr_rank_N, as "
                   "torchfrtrace expects)");
  ProcessView process;
  process.input_name = item.name;
  process.kind = "fr-dump";
  process.launcher_rank = rank;
  process.launcher_rank_from = "file name";
  process.fr_records = std::make_shared<torch::FrRankRecords>(torch::read_fr_dump(content, item.name));
  return process;
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  // The common prefix (a directory's path, "rank-") is skipped at once, back to the start of
  // a number it ends inside: both walks would reach that point together.
  size_t i = static_cast<size_t>(
      std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(std::min(a.size(), b.size())), b.begin()).first -
      a.begin());
  while (i > 0 && digit(a[i - 1])) --i;
  size_t j = i;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      // Two numbers: compared by value (leading zeros skipped, then length, then digits), in place.
      while (i + 1 < a.size() && a[i] == '0' && digit(a[i + 1])) ++i;
      while (j + 1 < b.size() && b[j] == '0' && digit(b[j + 1])) ++j;
      size_t i_end = i, j_end = j;
      while (i_end < a.size() && digit(a[i_end])) ++i_end;
      while (j_end < b.size() && digit(b[j_end])) ++j_end;
      std::string_view x(a.data() + i, i_end - i), y(b.data() + j, j_end - j);
      if (x == "0") x = {};  // an all-zero number is empty, as "" after stripping every zero
      if (y == "0") y = {};
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i_end, j = j_end;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i, ++j;
  }
  return a.size() - i < b.size() - j;
}

nlohmann::json parse_snapshot_file(const std::string& path) {
  std::string content = read_file(path);
  try {
    return nlohmann::json::parse(content);
  } catch (const nlohmann::json::exception& error) {
    throw BadInput(path + ": corrupt snapshot: " + json_problem(error));
  }
}

ProcessView load_snapshot_file(const std::string& path) {
  ProcessView process;
  std::string schema;
  if (!summarize_state_text(read_file(path), path, "snapshot", &process, &schema))
    throw BadInput(path + ": not an " + kStateSchema + " document (schema is " +
                   (schema.empty() ? std::string("missing") : "\"" + schema + "\"") + ")");
  return process;
}

namespace {

// A file as stat() names it: symlinks and hard links to one file alike.
struct FileId {
  dev_t device;
  ino_t inode;
  bool operator==(const FileId& other) const { return device == other.device && inode == other.inode; }
};
struct FileIdHash {
  size_t operator()(const FileId& id) const { return std::hash<uint64_t>()(id.inode * 31 + id.device); }
};

struct ListedFile {
  std::string name;  // in its directory
  FileId id;
};

std::vector<WorkItem> expand_inputs(const LoadRequest& request, std::vector<TriageFailure>* failures) {
  std::vector<WorkItem> items;
  std::unordered_set<FileId, FileIdHash> seen;
  std::set<int> seen_pids;
  auto add_file = [&](std::string path, FileId id, bool from_directory) {
    if (!seen.insert(id).second) {
      failures->push_back({path, "file", path + ": given twice (same file as an earlier input); ignored"});
      return;
    }
    items.push_back({path, std::move(path), 0, from_directory});
  };
  for (const std::string& path : request.paths) {
    struct stat info;
    if (stat(path.c_str(), &info) != 0) {
      failures->push_back({path, "file", path + ": " + std::strerror(errno)});
      continue;
    }
    if (!S_ISDIR(info.st_mode)) {
      add_file(path, {info.st_dev, info.st_ino}, false);
      continue;
    }
    DIR* directory = opendir(path.c_str());
    if (directory == nullptr) {
      failures->push_back({path, "directory", path + ": " + std::strerror(errno)});
      continue;
    }
    std::string prefix = path + (path.back() == '/' ? "" : "/");
    std::vector<ListedFile> files;
    std::vector<std::pair<std::string, std::string>> unusable;  // path, why
    while (dirent* entry = readdir(directory)) {
      std::string name = entry->d_name;
      if (name == "." || name == ".." || !wanted_in_directory(name)) continue;
      // A regular file as the directory lists it needs no stat (100,000 ranks: 0.25 s): the
      // directory's device and the entry's inode identify it. Anything else is looked at.
      if (entry->d_type == DT_REG) {
        files.push_back({std::move(name), {info.st_dev, entry->d_ino}});
        continue;
      }
      // Named like an input but unusable (a symlink loop, a dangling link, a folder): said, not skipped.
      std::string full = prefix + name;
      struct stat file_info {};
      if (stat(full.c_str(), &file_info) != 0) {
        unusable.emplace_back(full, std::strerror(errno));
      } else if (!S_ISREG(file_info.st_mode)) {
        unusable.emplace_back(full, S_ISDIR(file_info.st_mode) ? "not a regular file (a directory)" : "not a regular file");
      } else {
        files.push_back({std::move(name), {file_info.st_dev, file_info.st_ino}});
      }
    }
    closedir(directory);
    std::sort(unusable.begin(), unusable.end(),
              [](const auto& a, const auto& b) { return natural_less(a.first, b.first); });
    for (const auto& [file, why] : unusable) failures->push_back({file, "file", file + ": " + why + "; skipped"});
    if (files.empty() && unusable.empty()) {
      failures->push_back({path, "directory", path + ": empty directory (no core*, *.core, *.json or fr_rank*/*.pkl file in it)"});
      continue;
    }
    // By name within the directory: the same order as by path, with shorter strings to compare.
    std::sort(files.begin(), files.end(), [](const ListedFile& a, const ListedFile& b) { return natural_less(a.name, b.name); });
    seen.reserve(seen.size() + files.size());
    items.reserve(items.size() + files.size());
    for (const ListedFile& file : files) add_file(prefix + file.name, file.id, true);
  }
  for (int pid : request.pids) {
    if (!seen_pids.insert(pid).second) continue;
    items.push_back({"pid " + std::to_string(pid), "", pid, false});
  }
  return items;
}

StateRequest state_request(const LoadRequest& request, const WorkItem& item) {
  StateRequest state;
  state.core_path = item.path;
  state.executable = request.executable;
  state.pid = item.pid;
  state.sysroot = request.sysroot;
  state.solib_search_path = request.solib_search_path;
  state.profile_path = request.profile_path;
  state.freeze = item.pid != 0;       // a consistent read of every rank (always resumed)
  state.live_stacks = item.pid != 0;  // triage needs each rank's host stacks
  state.progress = false;
  return state;
}

nlohmann::json parse_input_json(std::string_view text, const std::string& name, const char* what) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& error) {
    throw BadInput(name + ": corrupt " + what + ": " + json_problem(error));
  }
}

// Buffer numerics of a core or live process: a problem reading them never costs the rank.
void measure_numerics(const LoadRequest& request, StateRequest state, const nlohmann::json& document,
                      const WorkItem& item, WorkResult* result) {
  state.freeze = false;  // the state was read frozen; buffers of a hung rank do not change
  state.live_stacks = false;
  try {
    result->numerics_view = std::make_unique<NumericsView>(
        summarize_numerics_document(request.build_numerics(state, document), item.name, "host memory"));
  } catch (const std::exception&) {
    result->numerics_view.reset();
  }
}

WorkResult load_xz_item(const LoadRequest& request, const WorkItem& item, ProcessView* slot);

// A file is opened once: its first bytes say what it is, and a snapshot's rest is read after
// them into one buffer per loading thread, reused for every snapshot. A process is summarized
// into `slot` (its place in the loaded list: 100,000 ranks are not moved there afterwards).
WorkResult load_plain_item(const LoadRequest& request, const WorkItem& item, ProcessView* slot) {
  PhaseSubject subject(item.name);
  PhaseTimer timer("input");
  WorkResult result;
  std::string kind = item.pid ? "live" : "file";
  try {
    thread_local std::vector<char> bytes;
    InputFile file;
    std::string_view head;
    if (!item.pid) {
      file = open_regular_file(item.path, item.path);
      head = read_head(file, kHeadBytes, &bytes, item.path);
      kind = sniff(head, !item.unpacked);
    }
    if (kind == "xz") return load_xz_item(request, item, slot);
    if (kind == "empty") throw BadInput(item.path + ": empty file (neither a snapshot nor a core)");
    if (kind == "other") throw BadInput(item.path + ": neither a JSON snapshot, an ELF core nor a flight-recorder dump");
    if (kind == "fr-dump") {
      *slot = load_fr_dump(item, read_rest(file, head.size(), &bytes, item.path));
      result.process = true;
      return result;
    }
    if (kind == "snapshot") {
      // Summarized straight from the text (SAX): no document is built for 4,096 ranks.
      std::string schema;
      std::string_view text = read_rest(file, head.size(), &bytes, item.path);
      if (summarize_state_text(text, item.name, "snapshot", slot, &schema)) {
        result.process = true;
        return result;
      }
      // A cuda-gdb kernel view or a numerics document (tens of KB per process): parsed whole, then reduced.
      if (schema == kKernelsSchema) {
        nlohmann::json document = parse_input_json(text, item.name, "kernel view");
        result.kernel_view = std::make_unique<KernelView>(summarize_kernel_view(document, item.name));
        return result;
      }
      if (schema == kNumericsSchema) {
        nlohmann::json document = parse_input_json(text, item.name, "numerics document");
        result.numerics_view = std::make_unique<NumericsView>(summarize_numerics_document(document, item.name, "input"));
        return result;
      }
      std::string shown = schema.empty() ? std::string("missing") : "\"" + schema + "\"";
      // A directory may hold other JSON (ground truth, notes): skip it, say so, no error.
      if (item.from_directory) {
        result.failure = {item.name, "file", item.name + ": not a snapshot (schema " + shown + "); ignored", "ignored"};
        return result;
      }
      throw BadInput(item.name + ": not an " + kStateSchema + " document (schema is " + shown + ")");
    }
    if (!request.build_state)
      throw BadInput(item.name + ": cannot decode " + (item.pid ? "a live process" : "a core") +
                     " in this build (no state builder)");
    StateRequest state = state_request(request, item);
    nlohmann::json document = request.build_state(state);
    {
      PhaseTimer summarize("input.summarize");
      *slot = summarize_state_document(document, item.name, kind);
      result.process = true;
    }
    if (request.build_numerics) {
      PhaseTimer numerics("input.numerics");
      measure_numerics(request, state, document, item, &result);
    }
  } catch (const BadInput& error) {
    result.failure = {item.name, kind, error.what()};
  } catch (const std::exception& error) {
    result.failure = {item.name, kind, item.name + ": " + error.what()};
  }
  return result;
}

// An .xz input is read from a private unpacked copy; every message names the user's file.
WorkResult load_xz_item(const LoadRequest& request, const WorkItem& item, ProcessView* slot) {
  WorkItem unpacked_item = item;
  unpacked_item.unpacked = true;
  try {
    UnpackedXz unpacked(item.path);
    unpacked_item.path = unpacked.path();
    WorkResult result = load_plain_item(request, unpacked_item, slot);
    for (size_t at; (at = result.failure.error.find(unpacked_item.path)) != std::string::npos;)
      result.failure.error.replace(at, unpacked_item.path.size(), item.name);
    return result;
  } catch (const BadInput& error) {
    WorkResult result;
    result.failure = {item.name, "file", error.what()};
    return result;
  }
}

}  // namespace

LoadedInputs load_triage_inputs(const LoadRequest& request) {
  LoadedInputs loaded;
  PhaseTimer expand_timer("triage.load.list");
  std::vector<WorkItem> items = expand_inputs(request, &loaded.failures);
  expand_timer.stop();
  unsigned jobs = request.jobs ? request.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs = static_cast<unsigned>(std::min<size_t>(jobs, std::max<size_t>(items.size(), 1)));
  // Each thread's inputs that gave more than a process (a failure, a kernel view, numerics), by
  // index; and those it read before the slots existed.
  std::vector<std::vector<std::pair<size_t, WorkResult>>> others(jobs);
  std::vector<std::vector<std::pair<size_t, ProcessView>>> read_early(jobs);
  std::vector<uint8_t> is_process(items.size());
  std::atomic<bool> slots_made{false};
  std::atomic<size_t> next{0};
  auto worker = [&](unsigned t) {
    for (size_t i; (i = next.fetch_add(1)) < items.size();) {
      advise_huge_pages_for_thread_heap();  // half the summaries live on the other threads' heaps
      ProcessView* slot = slots_made.load(std::memory_order_acquire)
                              ? &loaded.processes[i]
                              : &read_early[t].emplace_back(i, ProcessView()).second;
      WorkResult result = load_plain_item(request, items[i], slot);
      is_process[i] = result.process;
      if (!result.process || result.numerics_view) others[t].emplace_back(i, std::move(result));
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(worker, t);
  // A slot per input, made here while the other threads already read (100,000 ranks: 65 MB of
  // fresh memory, a tenth of a second on this VM): the few they read first are moved in after.
  loaded.processes.resize(items.size());
  slots_made.store(true, std::memory_order_release);
  worker(0);
  for (std::thread& thread : threads) thread.join();
  for (auto& early : read_early)
    for (auto& [i, process] : early)
      if (is_process[i]) loaded.processes[i] = std::move(process);
  std::vector<std::pair<size_t, WorkResult>> in_order;
  for (auto& list : others)
    for (auto& entry : list) in_order.push_back(std::move(entry));
  std::sort(in_order.begin(), in_order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [i, result] : in_order) {
    if (result.numerics_view) loaded.numerics_views.push_back(std::move(*result.numerics_view));
    if (result.kernel_view) loaded.kernel_views.push_back(std::move(*result.kernel_view));
    else if (!result.process && !result.numerics_view) loaded.failures.push_back(std::move(result.failure));
  }
  size_t kept = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!is_process[i]) continue;
    if (kept != i) loaded.processes[kept] = std::move(loaded.processes[i]);
    ++kept;
  }
  loaded.processes.erase(loaded.processes.begin() + static_cast<std::ptrdiff_t>(kept), loaded.processes.end());
  return loaded;
}

}  // namespace nsc::triage
