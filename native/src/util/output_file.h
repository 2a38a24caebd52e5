// An output file the user names (`slice -o PATH`): written beside PATH as PATH.partial.XXXXXX,
// then renamed over PATH once complete, so a reader never sees half a file; removed when the
// write fails. PATH must be new or a regular file: a symbolic link (-o /dev/stdout), a device,
// a FIFO or a directory is refused, never followed or replaced.
#pragma once

#include <string>

namespace nsc {

class ReplacingOutput {
 public:
  // Throws nsc::BadInput "<context>: ..." when PATH is not new or regular, or the
  // temporary cannot be created.
  ReplacingOutput(const std::string& path, const std::string& context);
  ~ReplacingOutput();  // removes the temporary unless committed
  ReplacingOutput(const ReplacingOutput&) = delete;
  ReplacingOutput& operator=(const ReplacingOutput&) = delete;

  int fd() const { return fd_; }
  const std::string& temporary_path() const { return temporary_; }
  // Empties the temporary to write it again from the start.
  void rewind();
  // Closes the temporary and renames it to PATH (checked again: still new or regular).
  void commit();

 private:
  void check_destination() const;
  std::string path_, context_, temporary_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace nsc
