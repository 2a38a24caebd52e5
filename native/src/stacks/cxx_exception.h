// The C++ exception a thread died of (issue 32): when std::terminate aborts a thread (an
// uncaught exception; PyTorch's watchdog rethrowing c10::DistBackendError), the exception is
// still in memory, and no DWARF of the thrower is needed to read it. libstdc++ (x86-64) puts a
// __cxa_exception header before every thrown object: its std::type_info* 80 bytes before the
// _Unwind_Exception, whose exception_class is "GNUCC++\0" (std::rethrow_exception's dependent
// header: "GNUCC++\x01", pointing to the primary object), the object 32 bytes after it. The
// header is found by a bounded scan of the aborting thread's stack for a pointer to it (the
// frames of __cxa_throw/__cxa_rethrow and std::terminate hold one; libstdc++'s thread-local
// __cxa_eh_globals has no symbol in a stripped libstdc++). The message is found by pattern.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "target/library_resolver.h"
#include "target/target.h"

namespace nsc {

struct InFlightException {
  uint64_t unwind_header = 0;      // the primary exception's _Unwind_Exception
  uint64_t object = 0;             // the thrown object
  bool rethrown = false;           // reached through std::rethrow_exception's dependent header
  std::string type_name;           // std::type_info::name() as stored: "N3c1016DistBackendErrorE"
  std::string type;                // demangled: "c10::DistBackendError" ("" when it does not demangle)
  std::string type_name_file;      // the local file the name was read from ("" the target's memory)
  std::string type_name_unavailable;  // why the name is unknown ("" when it was read)
  std::optional<std::string> message;  // found by pattern; nullopt when no string matched
  uint64_t message_offset = 0;     // of the string (or COW pointer) within the object
  bool message_truncated = false;  // longer than kMaxMessage bytes
  uint64_t stack_address = 0;      // the stack word that pointed to it
  uint64_t dependent_stack_address = 0;  // the one that pointed to its dependent header, further up (0: none)
};

constexpr size_t kStackScanBytes = 64 * 1024;
constexpr size_t kMaxMessage = 4096;

// The exception in flight on `thread` (scanned from its stack pointer up, kStackScanBytes at
// most), or nullopt when no valid header is found. A type name the core did not save (it lies
// in a library's .rodata, which coredump_filter 0x33 leaves out) is read from the local copy
// of that library, found and build-id checked by `search` as gdb would.
std::optional<InFlightException> find_in_flight_exception(Target& target, const ThreadInfo& thread,
                                                          const LibrarySearch& search);

// Reads through `target` only what decoding `exception` took: the stack words that pointed to
// it, its headers, type name and message. A slice records these reads and keeps those bytes
// (the rest of the stack may be redacted), so the sliced core shows the same exception.
void reread_in_flight_exception(Target& target, const InFlightException& exception, const LibrarySearch& search);

// The "exception" object of docs/schema-state.md's fatal_signal.
nlohmann::json in_flight_exception_json(const InFlightException& exception);

// `terminate: c10::DistBackendError: "first line of the message" (message found by pattern)`.
std::string in_flight_exception_text(const nlohmann::json& exception);

}  // namespace nsc
