// Target: the memory, mappings and threads of one process, live or from a core.
// Every layer above reads the process only through this interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct Elf;

namespace nsc {

// Why a read failed. Messages are part of the user-visible output.
enum class ReadFailure {
  kNone,
  kNotMapped,         // no mapping covers the address
  kNotSavedInCore,    // mapped, but the core holds no bytes for it (filtered out)
  kPermissionDenied,  // the kernel refused (ptrace access mode)
  kShortRead,         // part of the range was readable
  kIoError,           // anything else (errno in detail)
};

const char* read_failure_text(ReadFailure reason);  // "not saved in core", ...

struct ReadError {
  uint64_t address = 0;  // first byte that could not be read
  ReadFailure reason = ReadFailure::kNone;
  std::string detail;    // optional, e.g. strerror text
  std::string message() const;  // "0x7f..: not saved in core"
};

struct MemoryRegion {
  uint64_t start = 0;
  uint64_t end = 0;          // exclusive
  bool readable = false;
  bool writable = false;
  bool executable = false;
  bool shared = false;       // MAP_SHARED (core: from NT_FILE/maps when known)
  bool saved = true;         // core: bytes present in the file (p_filesz > 0)
  uint64_t file_offset = 0;  // offset within `path` of `start`
  std::string path;          // backing file, "" for anonymous, "[heap]" etc. live
  uint64_t size() const { return end - start; }
};

// A file mapping as the kernel recorded it (NT_FILE or /proc/PID/maps).
struct MappedFile {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t file_offset = 0;  // in bytes
  std::string path;
};

struct ThreadInfo {
  int tid = 0;
  std::string name;        // comm; may come from target memory: escape before printing
  char state = '?';        // live: /proc state letter; core: from prstatus when known
  // Raw x86-64 NT_PRSTATUS, for unwinding: a core's note; a stopped live thread's; for a
  // callback target, one built from the registers its front end read (prstatus_from_registers).
  std::vector<uint8_t> prstatus;
  std::string registers_unavailable;  // callback target: why prstatus is empty ("" otherwise)
  // Live, no registers read: the stack pointer /proc/PID/task/TID/syscall gives while the
  // thread is blocked, in a system call or not (nullopt while it runs).
  std::optional<uint64_t> syscall_stack_pointer;
};

// NT_SIGINFO: the siginfo_t of the signal that killed the process (x86-64 layout).
struct SignalInfo {
  int signo = 0;
  int code = 0;                // si_code: > 0 the kernel's (a fault), SI_USER 0, SI_TKILL -6, ...
  int errno_value = 0;
  int sender_pid = 0;          // si_pid: meaningful for kill/tgkill codes (code <= 0)
  int sender_uid = 0;
  uint64_t fault_address = 0;  // si_addr: meaningful for SIGSEGV/SIGBUS/SIGILL/SIGFPE with code > 0
  int tid = 0;                 // the thread that took it (the core's first NT_PRSTATUS), 0 unknown
};

class Target {
 public:
  virtual ~Target() = default;

  // "core /path/core.123" or "pid 123": used as the subject of error lines.
  virtual std::string describe() const = 0;
  virtual bool is_core() const = 0;
  virtual int pid() const = 0;  // core: the dumped process's pid (0 if unknown)

  // Reads exactly len bytes at addr, or fails with the reason. Never writes.
  virtual bool read(uint64_t addr, void* buf, size_t len, ReadError* error) = 0;

  // Zero-copy access to saved bytes (core over mmap); nullptr when not possible.
  virtual const uint8_t* direct(uint64_t /*addr*/, size_t /*len*/) { return nullptr; }

  virtual const std::vector<MemoryRegion>& regions() const = 0;
  virtual const std::vector<MappedFile>& mapped_files() const = 0;
  virtual std::vector<ThreadInfo> threads() = 0;

  // Executable path of the process, when known ("" otherwise).
  virtual std::string executable() const = 0;

  // Bulk reads by scanners that sweep whole regions for a pattern. Wrappers that
  // record what decoders read (RecordingTarget) forward these without recording.
  virtual bool scan_read(uint64_t addr, void* buf, size_t len, ReadError* error) {
    return read(addr, buf, len, error);
  }
  virtual const uint8_t* scan_direct(uint64_t addr, size_t len) { return direct(addr, len); }

  // The auxiliary vector as the kernel gave it (NT_AUXV of a core: AT_* key/value pairs
  // up to AT_NULL); empty when the target does not know it.
  virtual std::vector<uint8_t> auxv() const { return {}; }

  // The signal that ended the process (a core's NT_SIGINFO and the thread that took it);
  // nullopt when there is none to read, and fatal_signal_unavailable() says why.
  virtual std::optional<SignalInfo> fatal_signal() const { return std::nullopt; }
  virtual std::string fatal_signal_unavailable() const { return "not a core: a running process has no fatal signal"; }

  // Problems found while opening that did not stop it (e.g. "core file truncated").
  virtual std::vector<std::string> warnings() const { return {}; }

  // A core's libelf handle over its mapped file, for libdwfl's core reporting (the unwinder
  // reads segments and notes through it); nullptr when the target is not a core file.
  virtual Elf* core_elf() const { return nullptr; }

  // A process on this machine that the library may ptrace itself (live targets): the unwinder
  // then stops each thread through /proc; other targets are unwound over read() and the
  // registers threads() carries.
  virtual bool is_local_process() const { return false; }

  // Ends a freeze this target holds (live --freeze), so that another tracer (the unwinder)
  // can stop its threads; nothing to do for other targets.
  virtual void resume() {}

  template <typename T>
  bool read_value(uint64_t addr, T* out, ReadError* error) {
    return read(addr, out, sizeof(T), error);
  }
};

// The region holding addr, or nullptr. `regions` must be sorted by start (binary search).
const MemoryRegion* find_region(const std::vector<MemoryRegion>& regions, uint64_t addr);

// Reads a NUL-terminated string of at most max_len bytes (for names read from memory).
std::optional<std::string> read_c_string(Target& target, uint64_t addr, size_t max_len,
                                         ReadError* error);

}  // namespace nsc
