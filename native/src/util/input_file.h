// The one way a file the user names (core, executable, library, snapshot, profile) is opened
// for reading. Only regular files: a FIFO blocks the open and every read forever, a device such
// as /dev/zero never ends, a socket cannot be read. /proc files are regular (size 0): reading
// them is bounded by the cap alone. Every read is bounded by the file's size at open and a cap.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nsc {

// Text documents (snapshots, layout profiles, audit inputs) larger than this are refused:
// the largest real snapshot is a few MB; a mistaken 50 GB file must not be read into memory.
constexpr uint64_t kMaxInputTextBytes = 1ull << 30;

// An open read-only descriptor of a regular file; closes itself.
class InputFile {
 public:
  InputFile() = default;
  InputFile(int fd, uint64_t size) : fd_(fd), size_(size) {}
  InputFile(InputFile&& other) noexcept : fd_(other.fd_), size_(other.size_) { other.fd_ = -1; }
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }  // st_size at open (0 for /proc files)
  // Hands the descriptor to an owner that closes it (CoreFile, ElfFile).
  int release();

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Opens `path` read-only if it is a regular file; otherwise a closed InputFile and the reason
// in *why ("not a regular file (a FIFO)", "is a directory", strerror of open).
InputFile try_open_regular_file(const std::string& path, std::string* why);
// The same, throwing nsc::BadInput "<context>: <why>" (context names the file: "core_open X").
InputFile open_regular_file(const std::string& path, const std::string& context);
// The whole file, at most min(its size at open, max_bytes) bytes (max_bytes alone for /proc
// files); throws nsc::BadInput "<context>: ..." when unreadable or larger than max_bytes.
std::string read_regular_file(const std::string& path, const std::string& context,
                              uint64_t max_bytes = kMaxInputTextBytes);
// The same into *storage, reused from one call to the next (grown, never shrunk): reading many
// files costs one copy each and no fresh pages. Valid until the next call with that storage.
// (Not mmap: a file truncated while mapped would kill the process with SIGBUS.)
std::string_view read_regular_file_reusing(const std::string& path, const std::string& context,
                                           std::vector<char>* storage, uint64_t max_bytes = kMaxInputTextBytes);
// An open file read in two steps, so that its first bytes decide whether the rest is wanted
// (one open, and one read for a file no larger than `count`): read_head puts up to `count`
// first bytes into *storage; read_rest appends the rest after them, bounded as
// read_regular_file_reusing. Both throw nsc::BadInput "<context>: ..."; valid until the next
// call with that storage.
std::string_view read_head(const InputFile& file, size_t count, std::vector<char>* storage,
                           const std::string& context);
std::string_view read_rest(const InputFile& file, size_t have, std::vector<char>* storage,
                           const std::string& context, uint64_t max_bytes = kMaxInputTextBytes);
// Up to `count` first bytes ("" when the file is empty); throws as read_regular_file.
std::string read_file_head(const std::string& path, const std::string& context, size_t count);

}  // namespace nsc
