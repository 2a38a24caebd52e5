#include "util/unpacked_xz.h"

#include <fcntl.h>
#include <lzma.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "util/errors.h"
#include "util/input_file.h"

namespace nsc {
namespace {

constexpr uint8_t kXzMagic[] = {0xFD, '7', 'z', 'X', 'Z', 0x00};

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  int release() { int fd = fd_; fd_ = -1; return fd; }

 private:
  int fd_;
};

bool write_all(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    ssize_t written = write(fd, data, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

const char* lzma_problem(lzma_ret code) {
  switch (code) {
    case LZMA_FORMAT_ERROR: return "not in the xz format";
    case LZMA_DATA_ERROR: return "corrupt xz data";
    case LZMA_BUF_ERROR: return "truncated xz file";
    case LZMA_MEM_ERROR: return "out of memory unpacking it";
    case LZMA_OPTIONS_ERROR: return "unsupported xz options";
    default: return "xz decoder error";
  }
}

// Streams `in` through the xz decoder into `out`; "" when done, else what went wrong.
std::string unpack(int in, int out) {
  lzma_stream stream = LZMA_STREAM_INIT;
  lzma_ret code = lzma_stream_decoder(&stream, UINT64_MAX, LZMA_CONCATENATED);
  if (code != LZMA_OK) return lzma_problem(code);
  std::vector<uint8_t> input(1 << 16), output(1 << 20);
  lzma_action action = LZMA_RUN;
  std::string problem;
  while (problem.empty()) {
    if (stream.avail_in == 0 && action == LZMA_RUN) {
      ssize_t n = read(in, input.data(), input.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        problem = std::string("read: ") + std::strerror(errno);
        break;
      }
      stream.next_in = input.data();
      stream.avail_in = static_cast<size_t>(n);
      if (n == 0) action = LZMA_FINISH;
    }
    stream.next_out = output.data();
    stream.avail_out = output.size();
    code = lzma_code(&stream, action);
    if (!write_all(out, output.data(), output.size() - stream.avail_out))
      problem = std::string("writing the unpacked copy: ") + std::strerror(errno);
    else if (code == LZMA_STREAM_END) break;
    else if (code != LZMA_OK) problem = lzma_problem(code);
  }
  lzma_end(&stream);
  return problem;
}

}  // namespace

// Only a regular file is looked into (input_file.h): a FIFO would block the read forever.
bool has_xz_magic(std::string_view head) {
  return head.size() >= sizeof kXzMagic && std::memcmp(head.data(), kXzMagic, sizeof kXzMagic) == 0;
}

UnpackedXz::UnpackedXz(const std::string& xz_path) {
  FileDescriptor in(open_regular_file(xz_path, xz_path).release());
  const char* tmpdir = std::getenv("TMPDIR");
  std::string name = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/ncclscope-unpacked.XXXXXX";
  FileDescriptor out(mkostemp(name.data(), O_CLOEXEC));
  if (out.get() < 0)
    throw BadInput(xz_path + ": cannot unpack it: temporary file in " + name.substr(0, name.rfind('/')) + ": " +
                   std::strerror(errno));
  unlink(name.c_str());  // private from here on, and gone with the last descriptor
  std::string problem = unpack(in.get(), out.get());
  if (!problem.empty()) throw BadInput(xz_path + ": cannot unpack it: " + problem);
  fd_ = out.release();
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

UnpackedXz::~UnpackedXz() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace nsc
