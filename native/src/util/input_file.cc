#include "util/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/errors.h"

namespace nsc {
namespace {

const char* file_type_name(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

// Reads up to `limit` bytes into *out; false with errno set on a read error.
bool read_up_to(int fd, uint64_t limit, std::string* out) {
  char buffer[1 << 16];
  while (out->size() < limit) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof buffer, limit - out->size()));
    ssize_t got = ::read(fd, buffer, want);
    if (got == 0) return true;
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    out->append(buffer, static_cast<size_t>(got));
  }
  return true;
}

}  // namespace

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    size_ = other.size_;
    other.fd_ = -1;
  }
  return *this;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

int InputFile::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

InputFile try_open_regular_file(const std::string& path, std::string* why) {
  // O_NONBLOCK: opening a FIFO without a writer would block here, before fstat can refuse it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int saved = errno;
    struct stat info;  // a socket cannot be opened at all (ENXIO): say what it is
    if (why && stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode) && !S_ISDIR(info.st_mode))
      *why = std::string("not a regular file (") + file_type_name(info.st_mode) + ")";
    else if (why)
      *why = std::string("cannot open: ") + std::strerror(saved);
    return {};
  }
  InputFile file(fd, 0);
  struct stat info;
  if (fstat(fd, &info) != 0) {
    if (why) *why = std::string("cannot stat: ") + std::strerror(errno);
    return {};
  }
  if (S_ISDIR(info.st_mode)) {
    if (why) *why = "is a directory";
    return {};
  }
  if (!S_ISREG(info.st_mode)) {
    if (why) *why = std::string("not a regular file (") + file_type_name(info.st_mode) + ")";
    return {};
  }
  // O_NONBLOCK stays set: it has no effect on a regular file (open(2)), and clearing it was two
  // system calls per input (100,000 snapshots: 200,000).
  return InputFile(file.release(), static_cast<uint64_t>(info.st_size));
}

InputFile open_regular_file(const std::string& path, const std::string& context) {
  std::string why;
  InputFile file = try_open_regular_file(path, &why);
  if (!file.ok()) throw BadInput(context + ": " + why);
  return file;
}

std::string read_regular_file(const std::string& path, const std::string& context, uint64_t max_bytes) {
  InputFile file = open_regular_file(path, context);
  if (file.size() > max_bytes)
    throw BadInput(context + ": too large (" + std::to_string(file.size()) + " bytes; the limit is " +
                   std::to_string(max_bytes) + ")");
  std::string content;
  // A /proc file says size 0: read to the cap, one byte past it to tell "larger" apart.
  uint64_t limit = file.size() > 0 ? file.size() : max_bytes + 1;
  if (file.size() > 0) content.reserve(file.size());  // one allocation, no copy on growth
  if (!read_up_to(file.fd(), limit, &content))
    throw BadInput(context + ": read error: " + std::strerror(errno));
  if (content.size() > max_bytes)
    throw BadInput(context + ": too large (over the limit of " + std::to_string(max_bytes) + " bytes)");
  return content;
}

std::string_view read_regular_file_reusing(const std::string& path, const std::string& context,
                                           std::vector<char>* storage, uint64_t max_bytes) {
  InputFile file = open_regular_file(path, context);
  return read_rest(file, 0, storage, context, max_bytes);
}

namespace {

// Reads up to `want` bytes at `at`, fewer at end of file; throws on a read error.
size_t read_into(int fd, char* at, size_t want, const std::string& context) {
  size_t done = 0;
  while (done < want) {
    ssize_t got = ::read(fd, at + done, want - done);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      throw BadInput(context + ": read error: " + std::strerror(errno));
    }
    done += static_cast<size_t>(got);
  }
  return done;
}

}  // namespace

std::string_view read_head(const InputFile& file, size_t count, std::vector<char>* storage,
                           const std::string& context) {
  if (file.size() > 0) count = static_cast<size_t>(std::min<uint64_t>(count, file.size()));  // no read at end of file
  if (storage->size() < count) storage->resize(count);
  return {storage->data(), read_into(file.fd(), storage->data(), count, context)};
}

std::string_view read_rest(const InputFile& file, size_t have, std::vector<char>* storage,
                           const std::string& context, uint64_t max_bytes) {
  if (file.size() > max_bytes)
    throw BadInput(context + ": too large (" + std::to_string(file.size()) + " bytes; the limit is " +
                   std::to_string(max_bytes) + ")");
  // A /proc file (or an empty one) says size 0: read to the cap, one byte past it to tell "larger" apart.
  for (uint64_t limit = file.size() > 0 ? file.size() : max_bytes + 1; have < limit;) {
    size_t want = file.size() > 0 ? static_cast<size_t>(limit - have)
                                  : static_cast<size_t>(std::min<uint64_t>(1 << 16, limit - have));
    if (storage->size() < have + want) storage->resize(have + want);
    size_t got = read_into(file.fd(), storage->data() + have, want, context);
    have += got;
    if (got < want) break;  // end of file (a file that shrank since fstat: what is there)
  }
  if (have > max_bytes)
    throw BadInput(context + ": too large (over the limit of " + std::to_string(max_bytes) + " bytes)");
  return {storage->data(), have};
}

std::string read_file_head(const std::string& path, const std::string& context, size_t count) {
  InputFile file = open_regular_file(path, context);
  std::string head;
  if (!read_up_to(file.fd(), count, &head)) throw BadInput(context + ": read error: " + std::strerror(errno));
  return head;
}

}  // namespace nsc
