#include "torch/torch_build.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <regex>

#include "layout/elf_file.h"
#include "layout/layout_profile.h"
#include "layout/profile_store.h"
#include "torch/torch_layout.h"
#include "util/errors.h"
#include "util/input_file.h"
#include "util/strings.h"

namespace nsc {
namespace {

bool is_libtorch_cuda(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return name.rfind("libtorch_cuda.so", 0) == 0;
}

// The PT_LOAD table of the object mapped at `start`, from its ELF header page (cores keep it).
std::optional<std::vector<LoadSegment>> load_segments_in_memory(Target& target, uint64_t start, std::string* why) {
  Elf64_Ehdr header;
  ReadError error;
  if (!target.read(start, &header, sizeof header, &error)) {
    *why = "ELF header: " + error.message();
    return std::nullopt;
  }
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0 || header.e_phnum > 256) {
    *why = "no 64-bit ELF header at " + hex(start);
    return std::nullopt;
  }
  std::vector<Elf64_Phdr> headers(header.e_phnum);
  if (!target.read(start + header.e_phoff, headers.data(), headers.size() * sizeof(Elf64_Phdr), &error)) {
    *why = "program headers: " + error.message();
    return std::nullopt;
  }
  std::vector<LoadSegment> segments;
  for (const Elf64_Phdr& phdr : headers) {
    if (phdr.p_type != PT_LOAD) continue;
    std::string flags = std::string(phdr.p_flags & PF_R ? "R" : "") + (phdr.p_flags & PF_W ? "W" : "") +
                        (phdr.p_flags & PF_X ? "E" : "");
    segments.push_back({phdr.p_offset, phdr.p_vaddr, phdr.p_filesz, phdr.p_memsz, flags});
  }
  return segments;
}

std::vector<std::string> json_files_in(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return files;
  for (const auto& item : std::filesystem::directory_iterator(dir, ec))
    if (item.path().extension() == ".json") files.push_back(item.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// A torch profile whose recorded PT_LOAD fingerprint is `fingerprint` (build-id unreadable).
std::optional<LayoutProfile> profile_by_load_segments(int64_t fingerprint, const std::vector<std::string>& dirs,
                                                      std::vector<std::string>* notes) {
  for (const std::string& dir : dirs)
    for (const std::string& file : json_files_in(dir)) {
      try {
        LayoutProfile profile = read_layout_profile(file);
        auto found = profile.constants.find(kLoadSegmentsConstant);
        if (found != profile.constants.end() && found->second == fingerprint) return profile;
      } catch (const BadInput& error) {
        notes->push_back(error.what());
      }
    }
  return std::nullopt;
}

// MAJOR.MINOR.PATCH at the start of a version text.
std::string release_of(const std::string& version) {
  static const std::regex release(R"(^(\d+)\.(\d+)\.(\d+))");
  std::smatch match;
  return std::regex_search(version, match, release) ? match.str(0) : "";
}

std::optional<LayoutProfile> profile_by_version(const std::string& version, const std::vector<std::string>& dirs,
                                                std::vector<std::string>* notes) {
  std::string name = source_profile_file_name(version);
  if (name.empty()) return std::nullopt;
  for (const std::string& dir : dirs) {
    std::string path = dir + "/" + name;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) continue;
    try {
      LayoutProfile profile = read_layout_profile(path);
      if (release_of(torch_version_of_profile(profile)) == release_of(version)) return profile;
      notes->push_back("skipped " + path + ": it is for torch " + torch_version_of_profile(profile));
    } catch (const BadInput& error) {
      notes->push_back(std::string("skipped ") + error.what());
    }
  }
  return std::nullopt;
}

// "" unless the local file is the mapped build, proven by build-id or by the PT_LOAD table.
std::string proof_of_same_build(Target& target, const ResolvedLibrary& library) {
  if (library.local_path.empty()) return "";
  if (!library.build_id_in_target.empty())
    return library.build_id_in_target == library.build_id_of_file ? "build-id" : "";
  std::string why;
  auto in_memory = load_segments_in_memory(target, library.mapping_start, &why);
  if (!in_memory) return "";
  try {
    if (load_segments_fingerprint(*in_memory) == load_segments_fingerprint(load_segments_of_file(library.local_path)))
      return "PT_LOAD table";
  } catch (const BadInput&) {
  }
  return "";
}

void read_version_beside(TorchBuild* build) {
  // torch/lib/libtorch_cuda.so -> torch/version.py
  std::filesystem::path version_py =
      std::filesystem::path(build->resolved.local_path).parent_path().parent_path() / "version.py";
  std::error_code ec;
  if (!std::filesystem::exists(version_py, ec)) return;
  try {
    auto version = torch_version_in_version_py(read_regular_file(version_py.string(), "torch version " + version_py.string()));
    if (version) build->version = *version;
    else build->version_unreadable = "torch version unreadable: " + version_py.string() + " has no __version__ = '...' line";
  } catch (const BadInput& error) {
    build->version_unreadable = std::string("torch version unreadable: ") + error.what();
  }
}

}  // namespace

std::optional<std::string> torch_version_in_version_py(const std::string& text) {
  static const std::regex version_line(R"((^|\n)__version__\s*=\s*'([^'\n]{1,64})')");
  static const std::regex git_line(R"((^|\n)git_version\s*=\s*'([0-9a-f]{7,40})')");
  std::smatch match;
  if (!std::regex_search(text, match, version_line) || release_of(match.str(2)).empty()) return std::nullopt;
  std::string version = match.str(2);
  if (std::regex_search(text, match, git_line)) version += " " + match.str(2);
  return version;
}

std::string source_profile_file_name(const std::string& version) {
  std::string release = release_of(version);
  return release.empty() ? "" : "torch-" + release + ".json";
}

TorchBuild identify_torch_build(Target& target, const LibrarySearch& search) {
  TorchBuild build;
  for (const MappedFile& mapping : target.mapped_files()) {
    if (mapping.file_offset != 0 || !is_libtorch_cuda(mapping.path)) continue;
    if (build.library.empty()) build.library = mapping.path;
    else if (mapping.path != build.library &&
             std::find(build.other_libraries.begin(), build.other_libraries.end(), mapping.path) == build.other_libraries.end())
      build.other_libraries.push_back(mapping.path);
  }
  if (build.library.empty()) return build;
  LibrarySearch library_search = search;
  library_search.force_mismatch = true;  // a file of another build lends nothing: proven below
  build.resolved = resolve_mapped_library(target, build.library, library_search);
  build.same_build = proof_of_same_build(target, build.resolved);
  build.build_id = !build.resolved.build_id_in_target.empty() ? build.resolved.build_id_in_target
                   : !build.same_build.empty()                ? build.resolved.build_id_of_file
                                                              : "";
  if (!build.same_build.empty()) read_version_beside(&build);
  return build;
}

TorchProfileChoice choose_torch_profile(Target& target, const TorchBuild& build, const std::vector<std::string>& torch_dirs) {
  TorchProfileChoice choice;
  if (is_valid_build_id(build.build_id)) {
    choice.profile = load_profile_by_build_id(build.build_id, torch_dirs, &choice.notes);
    if (choice.profile) return choice;
  }
  std::string why;
  auto segments = build.build_id.empty() ? load_segments_in_memory(target, build.resolved.mapping_start, &why) : std::nullopt;
  if (segments) {
    choice.profile = profile_by_load_segments(load_segments_fingerprint(*segments), torch_dirs, &choice.notes);
    if (choice.profile) {
      choice.identified_by = " (identified by its PT_LOAD table" +
                             (build.resolved.build_id_in_target_unavailable.empty()
                                  ? std::string(")")
                                  : ": the build-id note is not in the target: " +
                                        build.resolved.build_id_in_target_unavailable + ")");
      return choice;
    }
  }
  if (!build.version.empty()) {
    choice.profile = profile_by_version(build.version, torch_dirs, &choice.notes);
    if (choice.profile)
      choice.identified_by = " (a source profile, chosen by torch " + build.version +
                             " in the version.py beside the mapped libtorch_cuda.so, same build by " + build.same_build + ")";
  }
  return choice;
}

std::map<std::string, uint64_t> torch_symbol_values(const TorchBuild& build, const LayoutProfile& profile,
                                                     const std::vector<std::string>& names,
                                                     std::vector<std::string>* errors) {
  std::map<std::string, uint64_t> values;
  for (const std::string& name : names)
    if (auto found = profile.symbols.find(name); found != profile.symbols.end()) values[name] = found->second;
  bool profile_of_this_build = !build.build_id.empty() && profile.build_id == build.build_id;
  if ((profile_of_this_build && values.size() == names.size()) || build.same_build.empty()) return values;
  try {
    for (const auto& [name, symbol] : read_symbols(build.resolved.local_path, names)) values[name] = symbol.value;
  } catch (const BadInput& error) {
    if (errors != nullptr) errors->push_back(error.what());
  }
  return values;
}

std::vector<std::string> torch_profile_dirs(const std::vector<std::string>& caller_dirs) {
  std::vector<std::string> dirs;
  for (const std::string& dir : profile_search_dirs(caller_dirs)) dirs.push_back(dir + "/" + kTorchProfileSubdir);
  return dirs;
}

}  // namespace nsc
