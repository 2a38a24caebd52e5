// Exceptions used inside the library; never thrown across the C API.
#pragma once

#include <stdexcept>
#include <string>

namespace nsc {

// The input cannot be used at all (exit code 2). The message is one line that
// names the file, pid, address or field: "core_open core.1: not an ELF core".
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The request itself is malformed (exit code 64).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace nsc
