#include "target/library_resolver.h"

#include <unistd.h>

#include <cstdio>
#include <optional>
#include <set>
#include <utility>

#include "target/build_ids.h"
#include "target/live_process.h"
#include "util/errors.h"

namespace nsc {
namespace {

constexpr const char kDeletedSuffix[] = " (deleted)";

std::string without_deleted_suffix(const std::string& path) {
  size_t suffix = sizeof kDeletedSuffix - 1;
  if (path.size() > suffix && path.compare(path.size() - suffix, suffix, kDeletedSuffix) == 0)
    return path.substr(0, path.size() - suffix);
  return path;
}

std::string basename_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string join_path(const std::string& dir, const std::string& rest) {
  if (dir.empty()) return rest;
  bool dir_slash = dir.back() == '/', rest_slash = !rest.empty() && rest[0] == '/';
  if (dir_slash && rest_slash) return dir + rest.substr(1);
  return dir_slash || rest_slash ? dir + rest : dir + "/" + rest;
}

// The library's file-offset-0 mapping (or its first mapping if none has offset 0).
std::optional<MappedFile> library_mapping(const Target& target, const std::string& path) {
  if (auto first = first_mapping_of(target, path)) return first;
  for (const MappedFile& file : target.mapped_files())
    if (file.path == path) return file;
  return std::nullopt;
}

std::string mismatch_text(const ResolvedLibrary& library) {
  std::string file_id = library.build_id_of_file.empty() ? "(none)" : library.build_id_of_file;
  return library.local_path + " has build-id " + file_id + " but the target's " +
         basename_of(library.path_in_target) + " has build-id " + library.build_id_in_target;
}

// Among the candidates that exist, the first whose build-id is the target's wins (two libraries
// of one basename in different directories, issue 17: each finds its own file); without one, the
// first that exists, as in gdb, and its build-id mismatch is reported below. The last candidate
// (the path recorded in the target) is only a fallback: used when no earlier one exists.
void choose_local_file(const Target& target, const LibrarySearch& options,
                       ResolvedLibrary* library) {
  const std::vector<std::string>& candidates = library->candidates_tried;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string& candidate = candidates[i];
    if (i + 1 == candidates.size() && !library->local_path.empty()) break;
    if (access(candidate.c_str(), R_OK) != 0) continue;
    std::string id = build_id_of_file(candidate).value_or("");
    if (library->local_path.empty()) {
      library->local_path = candidate;
      library->build_id_of_file = id;
    }
    if (library->build_id_in_target.empty()) break;  // nothing to match: the first, unchecked
    if (!id.empty() && id == library->build_id_in_target) {
      library->local_path = candidate;
      library->build_id_of_file = id;
      break;
    }
  }
  if (library->local_path.empty()) {
    std::string tried;
    for (const std::string& candidate : library->candidates_tried)
      tried += (tried.empty() ? "" : ", ") + candidate;
    // Not fatal: a layout profile keyed by the in-memory build-id can still decode.
    library->local_file_missing = library->path_in_target + " not found here (tried " + tried +
                                  "): use --sysroot or --solib-search-path";
    return;
  }
  if (library->build_id_in_target.empty()) {
    library->warning = "build-id of " + library->path_in_target + " in the target is unavailable (" +
                       library->build_id_in_target_unavailable + "): " + library->local_path +
                       " used unchecked";
  } else if (library->build_id_of_file == library->build_id_in_target) {
    return;
  } else if (options.force_mismatch) {
    library->warning = "build-id mismatch ignored (--force-mismatch): " + mismatch_text(*library);
  } else if (options.mismatch_leaves_no_file) {
    library->local_file_missing = "build-id mismatch: " + mismatch_text(*library) +
                                  " (use --sysroot/--solib-search-path to point at the right file, or "
                                  "--force-mismatch)";
    library->local_path.clear();
    library->build_id_of_file.clear();
  } else {
    throw BadInput(target.describe() + ": build-id mismatch: " + mismatch_text(*library) +
                   " (use --sysroot/--solib-search-path to point at the right file, or "
                   "--force-mismatch)");
  }
}

}  // namespace

bool is_nccl_library_path(const std::string& path) {
  std::string name = basename_of(without_deleted_suffix(path));
  const std::string stem = "libnccl.so";
  return name.compare(0, stem.size(), stem) == 0 &&
         (name.size() == stem.size() || name[stem.size()] == '.');
}

std::vector<std::string> local_candidates(const Target& target, const MappedFile& mapping,
                                          const LibrarySearch& options) {
  std::string path = without_deleted_suffix(mapping.path);
  std::vector<std::string> candidates;
  if (dynamic_cast<const LiveProcess*>(&target) != nullptr) {
    // map_files names the very inode mapped (deleted, other mount namespace, ...).
    // Only for a process we read ourselves: a callback target's pid is just a label.
    char range[64];
    std::snprintf(range, sizeof range, "%llx-%llx", static_cast<unsigned long long>(mapping.start),
                  static_cast<unsigned long long>(mapping.end));
    std::string proc = "/proc/" + std::to_string(target.pid());
    candidates.push_back(proc + "/map_files/" + range);
    candidates.push_back(proc + "/root" + path);
  } else {
    if (!options.sysroot.empty()) candidates.push_back(join_path(options.sysroot, path));
    for (const std::string& dir : options.solib_search_path)
      if (!dir.empty()) candidates.push_back(join_path(dir, basename_of(path)));
  }
  candidates.push_back(path);
  return candidates;
}

ResolvedLibrary resolve_mapped_library(Target& target, const std::string& path_in_target,
                                       const LibrarySearch& options) {
  auto mapping = library_mapping(target, path_in_target);
  if (!mapping) throw BadInput(target.describe() + ": " + path_in_target + " is not mapped");
  ResolvedLibrary library;
  library.path_in_target = path_in_target;
  library.mapping_start = mapping->start;
  MappedObjectBuildId in_memory = build_id_in_memory(target, path_in_target, mapping->start);
  library.load_bias = mapping->file_offset == 0 ? in_memory.load_bias : mapping->start;
  library.build_id_in_target = in_memory.build_id.value_or("");
  library.build_id_in_target_unavailable = in_memory.unavailable_reason;
  library.candidates_tried = local_candidates(target, *mapping, options);
  choose_local_file(target, options, &library);
  return library;
}

ResolvedLibrary resolve_nccl_library(Target& target, const LibrarySearch& options) {
  for (const MappedFile& file : target.mapped_files())
    if (is_nccl_library_path(file.path)) return resolve_mapped_library(target, file.path, options);
  throw NoNcclLibrary(target.describe() + ": no NCCL library mapped");
}

std::vector<ResolvedLibrary> resolve_nccl_libraries(Target& target, const LibrarySearch& options) {
  std::vector<ResolvedLibrary> libraries;
  std::set<std::string> seen;
  for (const MappedFile& file : target.mapped_files())
    if (is_nccl_library_path(file.path) && seen.insert(file.path).second)
      libraries.push_back(resolve_mapped_library(target, file.path, options));
  if (libraries.empty()) throw NoNcclLibrary(target.describe() + ": no NCCL library mapped");
  return libraries;
}

}  // namespace nsc
