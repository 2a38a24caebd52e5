// Which torch the target runs, and which layout profile reads its flight recorder.
//
// Identity, strongest first: the GNU build-id of libtorch_cuda.so (target memory, else a local
// copy proven to be the same build), the PT_LOAD table in its ELF header page (every core keeps
// that page; a wheel profile records it), and the torch version of that install (torch/version.py
// beside a local libtorch_cuda.so proven to be the mapped build). Profiles: a wheel profile
// <build-id>.json, else a source profile torch-<X.Y.Z>.json (scripts/torch-layout-from-source.sh)
// for the version.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "layout/layout.h"
#include "target/library_resolver.h"
#include "target/target.h"

namespace nsc {

struct TorchBuild {
  std::string library;                        // libtorch_cuda.so as mapped ("" = none)
  std::vector<std::string> other_libraries;   // further libtorch_cuda.so paths mapped (not read)
  ResolvedLibrary resolved;
  std::string build_id;                       // "" when unknown
  std::string same_build;                     // "" when no local copy is proven the mapped build; else how
  std::string version;                        // "2.11.0+cu130 70d99e99..." ("" when unknown)
  std::string version_unreadable;             // one line when a version.py was found but not read
};

// The mapped libtorch_cuda.so (the first when several are: the others are named).
TorchBuild identify_torch_build(Target& target, const LibrarySearch& search);

struct TorchProfileChoice {
  std::optional<LayoutProfile> profile;
  std::string identified_by;         // how the profile was matched (for layout_source)
  std::vector<std::string> notes;    // profiles skipped
};
TorchProfileChoice choose_torch_profile(Target& target, const TorchBuild& build,
                                        const std::vector<std::string>& torch_dirs);
// Link-time values of `names` in the mapped libtorch_cuda.so. A profile made from this very build
// (its build-id equals the mapped file's) already holds them: no pass over the library's 0.6 M
// symbols per rank (issue 35). Else a local copy proven the same build is read (a failure goes to
// `errors`, when given), over the profile's values. A name found nowhere is absent.
std::map<std::string, uint64_t> torch_symbol_values(const TorchBuild& build, const LayoutProfile& profile,
                                                     const std::vector<std::string>& names,
                                                     std::vector<std::string>* errors = nullptr);

// The torch/ subdirectory of each profile directory (caller's first, then the default ones).
std::vector<std::string> torch_profile_dirs(const std::vector<std::string>& caller_dirs);

// torch.__version__ and git_version of a torch/version.py text: "2.11.0+cu130 70d99e99...";
// nullopt when it has no `__version__ = '...'` line.
std::optional<std::string> torch_version_in_version_py(const std::string& text);
// "2.11.0+cu130 ..." -> "torch-2.11.0.json"; "" when the text is not MAJOR.MINOR.PATCH...
std::string source_profile_file_name(const std::string& version);

}  // namespace nsc
