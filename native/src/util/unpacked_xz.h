// xz-compressed inputs (rank3.core.xz, a sliced core as the corpus ships it), readable as
// the plain file they hold.
#pragma once

#include <string>
#include <string_view>

namespace nsc {

// True when these first bytes of a file are xz's magic.
bool has_xz_magic(std::string_view head);

// The file an .xz holds, unpacked to a private temporary file (in $TMPDIR, else /tmp) for as
// long as this object lives. The file is unlinked as soon as it is created, so nothing is left
// behind, whatever ends the process; path() (/proc/self/fd/N) opens it again.
class UnpackedXz {
 public:
  explicit UnpackedXz(const std::string& xz_path);  // BadInput naming xz_path when it fails
  ~UnpackedXz();
  UnpackedXz(const UnpackedXz&) = delete;
  UnpackedXz& operator=(const UnpackedXz&) = delete;

  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace nsc
