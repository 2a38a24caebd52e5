// A file's identity for the run-wide caches (issue 35: a layout profile, a symbol lookup done
// once per run, not once per rank): the same device, inode, size and modification time are taken
// for the same content; a file rewritten in place (a new profile saved) gets a new identity.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <tuple>

namespace nsc {

struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  long long modified_ns = 0;

  bool operator<(const FileIdentity& other) const {
    return std::tie(device, inode, size, modified_ns) <
           std::tie(other.device, other.inode, other.size, other.modified_ns);
  }
};

// nullopt when `path` is not a regular file that stat() can see.
std::optional<FileIdentity> file_identity(const std::string& path);

}  // namespace nsc
