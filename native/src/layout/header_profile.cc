#include "layout/header_profile.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "layout/layout_profile.h"
#include "util/errors.h"

namespace nsc {

namespace {

bool is_version_number(const std::string& version) {
  return !version.empty() && std::all_of(version.begin(), version.end(), [](char c) {
    return (c >= '0' && c <= '9') || c == '.';
  });
}

bool is_regular_file(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

}  // namespace

bool is_header_profile(const LayoutProfile& profile) {
  return profile.constants.count(kHeaderProfileConstant) > 0;
}

// "2.28.9+cuda13.0" -> 13000; 0 when there is no +cudaX.Y.
static int64_t cuda_version_of(const std::string& version_string) {
  size_t at = version_string.find("+cuda");
  int major = 0, minor = 0;
  if (at == std::string::npos ||
      std::sscanf(version_string.c_str() + at + 5, "%d.%d", &major, &minor) != 2 || major <= 0)
    return 0;
  return major * 1000 + minor * 10;
}

LayoutProfile as_header_profile(LayoutProfile profile, const std::string& version_string) {
  int64_t cuda_version = cuda_version_of(version_string);
  if (!is_version_number(profile.nccl_version))
    throw BadInput("layout " + profile.library +
                   ": no \"NCCL version X.Y.Z\" string: not a header TU of NCCL "
                   "(scripts/nccl-layout-from-headers.sh makes one)");
  profile.build_id.clear();
  profile.symbols.clear();  // the TU's, not any library's
  profile.constants[kHeaderProfileConstant] = cuda_version > 0 ? cuda_version : 1;
  return profile;
}

std::string header_profile_file_name(const std::string& nccl_version) {
  if (!is_version_number(nccl_version)) return "";
  return "nccl-" + nccl_version + ".headers.json";
}

std::optional<LayoutProfile> load_header_profile(const std::string& nccl_version,
                                                 const std::vector<std::string>& dirs,
                                                 std::vector<std::string>* notes) {
  std::string name = header_profile_file_name(nccl_version);
  if (name.empty()) return std::nullopt;
  for (const std::string& dir : dirs) {
    std::string path = dir + "/" + name;
    if (!is_regular_file(path)) continue;
    try {
      LayoutProfile profile = read_layout_profile(path);
      if (!is_header_profile(profile))
        notes->push_back("skipped " + path + ": not a header-built profile");
      else if (profile.nccl_version != nccl_version)
        notes->push_back("skipped " + path + ": it is for NCCL " + profile.nccl_version);
      else
        return profile;
    } catch (const BadInput& error) {
      notes->push_back(std::string("skipped ") + error.what());
    }
  }
  return std::nullopt;
}

}  // namespace nsc
