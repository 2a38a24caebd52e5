#include "layout/profile_store.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "layout/dwarf_layout.h"
#include "layout/elf_file.h"
#include "layout/header_profile.h"
#include "layout/layout_profile.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc {

namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

bool is_regular_file(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

bool is_directory(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// mkdir -p; true when the directory exists afterwards.
bool make_directories(const std::string& path) {
  if (path.empty() || is_directory(path)) return true;
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !make_directories(path.substr(0, slash)))
    return false;
  return ::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST;
}

std::string lower_case(std::string text) {
  for (char& c : text)
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  return text;
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string joined;
  for (const std::string& part : parts) joined += (joined.empty() ? "" : separator) + part;
  return joined;
}

std::string dirname_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool covers_current_roots(const LayoutProfile& profile) {
  auto stamp = profile.constants.find(kRootsFingerprintConstant);
  return stamp != profile.constants.end() && stamp->second == required_roots_fingerprint();
}

bool caching_disabled() { return !environment("NCCLSCOPE_NO_PROFILE_CACHE").empty(); }

// Extracts from DWARF and caches the result; notes say what happened.
LayoutProfile extract_and_cache(const std::string& library_path, std::vector<std::string>* notes) {
  LayoutProfile profile = extract_layout_from_dwarf(library_path);
  notes->insert(notes->begin(), "DWARF of " + library_path);
  if (caching_disabled() || !is_valid_build_id(profile.build_id)) return profile;
  try {
    notes->push_back("cached as " + save_to_cache(profile));
  } catch (const BadInput& error) {
    notes->push_back(std::string("not cached: ") + error.what());
  }
  return profile;
}

std::string no_layout_message(const std::string& library_path, const std::string& build_id,
                              const std::vector<std::string>& dirs) {
  std::string subject = library_path.empty() ? "libnccl" : library_path;
  return "layout " + subject + ": no layout profile for build-id " +
         (build_id.empty() ? "(unknown)" : build_id) + " (searched " +
         (dirs.empty() ? "nothing" : join(dirs, ":")) + ") and " +
         (library_path.empty() ? "no local copy of the library"
                               : "the library file is not readable") +
         "; make one from an unstripped libnccl of that build with "
         "`ncclscope layout extract LIB -o <build-id>.json` and add its directory with "
         "--profile-path or $NCCLSCOPE_PROFILE_PATH";
}

}  // namespace

std::string shipped_profile_dir() {
  std::string dir = std::string(NCCLSCOPE_SOURCE_DIR) + "/native/profiles";
  return is_directory(dir) ? dir : "";  // the source tree may be gone (an installed build)
}

// Where this code runs from: the program's directory and, when the C API is loaded into
// another program (gdb), the shared library's (which holds this function).
std::vector<std::string> own_directories() {
  std::vector<std::string> dirs;
  char executable[4096];
  ssize_t length = ::readlink("/proc/self/exe", executable, sizeof executable - 1);
  if (length > 0) dirs.push_back(dirname_of(std::string(executable, static_cast<size_t>(length))));
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(&own_directories), &info) != 0 && info.dli_fname != nullptr &&
      info.dli_fname[0] == '/')
    dirs.push_back(dirname_of(info.dli_fname));
  return dirs;
}

std::string installed_profile_dir() {
  // <dir>/../share/ncclscope/profiles: an install prefix, or the build tree (which copies
  // native/profiles there), wherever it was moved.
  for (const std::string& dir : own_directories()) {
    std::string candidate = dir + "/../share/ncclscope/profiles";
    if (is_directory(candidate)) return candidate;
  }
  return "";
}

std::string user_profile_cache_dir() {
  std::string cache = environment("XDG_CACHE_HOME");
  if (cache.empty()) {
    std::string home = environment("HOME");
    if (home.empty()) return "";
    cache = home + "/.cache";
  }
  return cache + "/ncclscope/profiles";
}

std::vector<std::string> profile_search_dirs(const std::vector<std::string>& caller_dirs) {
  std::vector<std::string> candidates = caller_dirs;
  for (const std::string& dir : split_colon_list(environment("NCCLSCOPE_PROFILE_PATH")))
    candidates.push_back(dir);
  if (environment("NCCLSCOPE_NO_SHIPPED_PROFILES").empty()) {
    candidates.push_back(installed_profile_dir());
    candidates.push_back(shipped_profile_dir());
  }
  candidates.push_back(user_profile_cache_dir());
  std::vector<std::string> dirs;
  for (const std::string& dir : candidates)
    if (!dir.empty() && std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  return dirs;
}

bool is_valid_build_id(const std::string& build_id) {
  if (build_id.size() < 2 || build_id.size() > 128) return false;
  return std::all_of(build_id.begin(), build_id.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::vector<std::string> find_profile_files(const std::string& build_id,
                                            const std::vector<std::string>& dirs) {
  std::vector<std::string> files;
  if (!is_valid_build_id(build_id)) return files;  // it may come from target memory
  for (const std::string& dir : dirs) {
    std::string path = dir + "/" + build_id + ".json";
    if (is_regular_file(path)) files.push_back(path);
  }
  return files;
}

std::optional<LayoutProfile> load_profile_by_build_id(const std::string& build_id,
                                                      const std::vector<std::string>& dirs,
                                                      std::vector<std::string>* notes) {
  for (const std::string& path : find_profile_files(build_id, dirs)) {
    try {
      LayoutProfile profile = read_layout_profile(path);
      if (profile.build_id == build_id) return profile;
      notes->push_back("skipped " + path + ": it is for build-id " + profile.build_id);
    } catch (const BadInput& error) {
      notes->push_back(std::string("skipped ") + error.what());
    }
  }
  return std::nullopt;
}

std::string save_to_cache(const LayoutProfile& profile) {
  if (!is_valid_build_id(profile.build_id))
    throw BadInput("layout profile cache: no usable build-id in the profile of " + profile.library);
  std::string dir = user_profile_cache_dir();
  if (dir.empty()) throw BadInput("layout profile cache: neither XDG_CACHE_HOME nor HOME is set");
  if (!make_directories(dir))
    throw BadInput("layout profile cache " + dir + ": cannot create: " + std::strerror(errno));
  std::string path = dir + "/" + profile.build_id + ".json";
  write_layout_profile(profile, path);
  return path;
}

LayoutProfile load_layout_for_library(const std::string& library_path,
                                      const std::string& build_id_expected,
                                      const std::vector<std::string>& search_path,
                                      std::string* why) {
  std::vector<std::string> notes;
  auto finish = [&](LayoutProfile profile) {
    if (why != nullptr) *why = join(notes, "; ");
    return profile;
  };
  bool library_readable = !library_path.empty() && is_regular_file(library_path);
  std::string build_id = lower_case(build_id_expected);
  std::optional<std::string> file_build_id;
  if (library_readable) file_build_id = read_build_id(library_path);
  if (build_id.empty() && file_build_id) build_id = *file_build_id;

  std::vector<std::string> dirs = profile_search_dirs(search_path);
  // The first profile made for the current roots wins; one made for older roots
  // (the decoders need more types now) only when there is no DWARF to read.
  std::optional<LayoutProfile> older;
  for (const std::string& path : find_profile_files(build_id, dirs)) {
    std::optional<LayoutProfile> profile =
        load_profile_by_build_id(build_id, {dirname_of(path)}, &notes);
    if (!profile) continue;
    if (covers_current_roots(*profile)) {
      notes.insert(notes.begin(), "profile " + path);
      return finish(std::move(*profile));
    }
    if (!older) older = std::move(profile);
  }
  if (older) {
    std::string path = older->source.substr(std::strlen("profile:"));
    if (!library_readable || !has_debug_info(library_path)) {
      notes.insert(notes.begin(), "profile " + path + " (made for older layout roots)");
      return finish(std::move(*older));
    }
    notes.push_back("re-extracted: " + path + " was made for older layout roots");
  }
  if (!library_readable) throw BadInput(no_layout_message(library_path, build_id, dirs));
  // A different file was accepted upstream (--force-mismatch): its own DWARF is the best we have.
  if (file_build_id && !build_id.empty() && *file_build_id != build_id)
    notes.push_back("build-id of the file " + *file_build_id + " differs from the target's " +
                    build_id);
  if (has_debug_info(library_path)) return finish(extract_and_cache(library_path, &notes));
  try {
    return finish(extract_and_cache(library_path, &notes));  // a separate debug file, if any
  } catch (const BadInput& no_dwarf) {
    // Stripped, no profile of its build: the profile built from its version's headers.
    std::string version = nccl_version_number(nccl_version_string(library_path).value_or(""));
    std::optional<LayoutProfile> headers = load_header_profile(version, dirs, &notes);
    if (!headers)
      throw BadInput(std::string(no_dwarf.what()) + "; no header profile " +
                     (version.empty() ? std::string("(no NCCL version string in the library)")
                                      : header_profile_file_name(version)) +
                     " either (scripts/nccl-layout-from-headers.sh makes one)");
    notes.insert(notes.begin(), "header profile " + headers->source.substr(std::strlen("profile:")) +
                                    " for NCCL " + version + " (" + library_path +
                                    " has no DWARF and no profile for build-id " +
                                    (build_id.empty() ? "(none)" : build_id) +
                                    "); struct sizes are checked against the target");
    headers->build_id = build_id;
    headers->library = library_path;
    return finish(std::move(*headers));
  }
}

}  // namespace nsc
