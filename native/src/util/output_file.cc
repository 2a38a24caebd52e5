#include "util/output_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "util/errors.h"

namespace nsc {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

ReplacingOutput::ReplacingOutput(const std::string& path, const std::string& context)
    : path_(path), context_(context) {
  check_destination();
  std::vector<char> name(path.begin(), path.end());
  const char suffix[] = ".partial.XXXXXX";
  name.insert(name.end(), suffix, suffix + sizeof suffix);  // with the NUL
  fd_ = mkostemp(name.data(), O_CLOEXEC);
  if (fd_ < 0) throw BadInput(context_ + ": cannot create " + name.data() + ": " + std::strerror(errno));
  temporary_ = name.data();
  mode_t mask = umask(0);  // the mode a plain create would give (mkstemp's is 0600)
  umask(mask);
  fchmod(fd_, 0666 & ~mask);
}

ReplacingOutput::~ReplacingOutput() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temporary_.empty()) ::unlink(temporary_.c_str());
}

void ReplacingOutput::check_destination() const {
  struct stat info;
  if (lstat(path_.c_str(), &info) != 0) {
    if (errno == ENOENT) return;
    throw BadInput(context_ + ": " + std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode))
    throw BadInput(context_ + ": is " + kind_of(info.st_mode) + "; the output must be a new or a regular file");
}

void ReplacingOutput::rewind() {
  if (ftruncate(fd_, 0) != 0 || lseek(fd_, 0, SEEK_SET) != 0)
    throw BadInput(context_ + ": cannot rewrite " + temporary_ + ": " + std::strerror(errno));
}

void ReplacingOutput::commit() {
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw BadInput(context_ + ": cannot write: " + std::strerror(errno));
  check_destination();
  // PATH absent: never replace what appeared since the check (RENAME_NOREPLACE).
  struct stat info;
  bool exists = lstat(path_.c_str(), &info) == 0;
  int renamed = exists ? std::rename(temporary_.c_str(), path_.c_str())
                       : renameat2(AT_FDCWD, temporary_.c_str(), AT_FDCWD, path_.c_str(), RENAME_NOREPLACE);
  if (renamed != 0) throw BadInput(context_ + ": cannot rename " + temporary_ + ": " + std::strerror(errno));
  committed_ = true;
}

}  // namespace nsc
