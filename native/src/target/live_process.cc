#include "target/live_process.h"

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/procfs.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "target/proc_maps.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc {
namespace {

std::string read_link(const std::string& path) {
  char buffer[PATH_MAX];
  ssize_t n = readlink(path.c_str(), buffer, sizeof buffer - 1);
  return n > 0 ? std::string(buffer, n) : std::string();
}

// Registers of a stopped thread, laid out as an NT_PRSTATUS note (as in a core).
std::vector<uint8_t> prstatus_of_stopped_thread(int tid) {
  user_regs_struct regs;
  iovec io{&regs, sizeof regs};
  if (ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(NT_PRSTATUS), &io) != 0) return {};
  elf_prstatus status;
  std::memset(&status, 0, sizeof status);
  status.pr_pid = tid;
  std::memcpy(&status.pr_reg, &regs, std::min(sizeof regs, sizeof status.pr_reg));
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&status);
  return std::vector<uint8_t>(bytes, bytes + sizeof status);
}

}  // namespace

LiveProcess::LiveProcess(int pid, bool freeze) : pid_(pid) {
  check_exists();
  load_maps();
  if (freeze) {
    freezer_ = std::make_unique<ThreadFreezer>(pid_);
    for (int tid : freezer_->unstopped_threads())
      warnings_.push_back("thread " + std::to_string(tid) + " " + freezer_->why_unstopped(tid));
    load_maps();  // the mappings may have changed before the threads stopped
  }
  probe_access();
  executable_ = read_link("/proc/" + std::to_string(pid_) + "/exe");
}

LiveProcess::~LiveProcess() {
  resume();
  if (mem_fd_ >= 0) close(mem_fd_);
}

void LiveProcess::resume() {
  freezer_.reset();
  drop_page_cache();  // the process runs again: cached pages go stale
}

void LiveProcess::check_exists() const {
  if (pid_ <= 0) throw BadInput("pid " + std::to_string(pid_) + ": not a valid process id");
  if (kill(pid_, 0) != 0 && errno == ESRCH)
    throw BadInput("pid " + std::to_string(pid_) + ": no such process");
  if (access(("/proc/" + std::to_string(pid_)).c_str(), F_OK) != 0)
    throw BadInput("pid " + std::to_string(pid_) + ": no such process");
}

void LiveProcess::load_maps() {
  if (!read_proc_maps(pid_, &regions_)) {
    int error_number = errno;
    if (error_number == ENOENT || error_number == ESRCH)
      throw BadInput(describe() + ": no such process");
    throw BadInput(trace_permission_message(pid_, error_number));
  }
  if (regions_.empty()) throw BadInput(describe() + ": no memory mappings (zombie or kernel thread)");
  mapped_files_ = mapped_files_of(regions_);
}

// Reads a few bytes now so that "may not trace" is one clear error at open time.
void LiveProcess::probe_access() {
  for (const MemoryRegion& region : regions_) {
    if (!region.readable || region.path == "[vvar]" || region.path == "[vsyscall]") continue;
    uint8_t byte;
    ReadError error;
    if (read(region.start, &byte, 1, &error)) return;
    if (error.reason == ReadFailure::kPermissionDenied)
      throw BadInput(trace_permission_message(pid_, EPERM));
  }
}

namespace {
constexpr uint64_t kPageSize = 4096;
constexpr size_t kCacheSlots = 1024;              // 4 MiB of cached pages
constexpr size_t kLargestCachedRead = 4 * kPageSize;
}  // namespace

bool LiveProcess::read(uint64_t addr, void* buf, size_t len, ReadError* error) {
  if (len == 0) return true;
  if (page_cache_enabled_ && len <= kLargestCachedRead && read_through_page_cache(addr, buf, len))
    return true;
  return read_uncached(addr, buf, len, error);  // also gives the exact failure
}

bool LiveProcess::read_through_page_cache(uint64_t addr, void* buf, size_t len) {
  uint8_t* out = static_cast<uint8_t*>(buf);
  while (len > 0) {
    uint64_t page = addr & ~(kPageSize - 1);
    const uint8_t* bytes = cached_page(page);
    if (!bytes) return false;
    size_t chunk = std::min<uint64_t>(len, page + kPageSize - addr);
    std::memcpy(out, bytes + (addr - page), chunk);
    out += chunk;
    addr += chunk;
    len -= chunk;
  }
  return true;
}

const uint8_t* LiveProcess::cached_page(uint64_t page) {
  if (page_tags_.empty()) {
    page_tags_.assign(kCacheSlots, kNoPage);
    page_bytes_.resize(kCacheSlots * kPageSize);
  }
  size_t slot = (page / kPageSize) % kCacheSlots;
  uint8_t* bytes = page_bytes_.data() + slot * kPageSize;
  if (page_tags_[slot] == page) return bytes;
  page_tags_[slot] = kNoPage;
  if (!read_uncached(page, bytes, kPageSize, nullptr)) return nullptr;
  page_tags_[slot] = page;
  return bytes;
}

bool LiveProcess::read_uncached(uint64_t addr, void* buf, size_t len, ReadError* error) {
  if (!use_proc_mem_ && read_with_vm_readv(addr, buf, len, error)) return true;
  if (!use_proc_mem_) return false;
  return read_with_proc_mem(addr, buf, len, error);
}

bool LiveProcess::read_with_vm_readv(uint64_t addr, void* buf, size_t len, ReadError* error) {
  iovec local{buf, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  if (n == static_cast<ssize_t>(len)) return true;
  if (n < 0 && (errno == EPERM || errno == ENOSYS)) {
    use_proc_mem_ = true;  // the caller retries through /proc/PID/mem
    return false;
  }
  int error_number = n < 0 ? errno : 0;
  size_t done = n < 0 ? 0 : static_cast<size_t>(n);
  if (error) *error = classify_failure(addr + done, done, error_number);
  return false;
}

bool LiveProcess::read_with_proc_mem(uint64_t addr, void* buf, size_t len, ReadError* error) {
  if (mem_fd_ < 0) mem_fd_ = open(("/proc/" + std::to_string(pid_) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (mem_fd_ < 0) {
    if (error) *error = ReadError{addr, ReadFailure::kPermissionDenied, std::strerror(errno)};
    return false;
  }
  size_t done = 0;
  while (done < len) {
    ssize_t n = pread(mem_fd_, static_cast<uint8_t*>(buf) + done, len - done, addr + done);
    if (n <= 0) {
      if (error) *error = classify_failure(addr + done, done, n < 0 ? errno : 0);
      return false;
    }
    done += n;
  }
  return true;
}

ReadError LiveProcess::classify_failure(uint64_t fail_addr, size_t bytes_done,
                                        int error_number) const {
  ReadError error{fail_addr, ReadFailure::kIoError, ""};
  const MemoryRegion* region = find_region(regions_, fail_addr);
  if (!region) {
    error.reason = ReadFailure::kNotMapped;
  } else if (!region->readable) {
    error.reason = ReadFailure::kPermissionDenied;
    error.detail = "mapping is not readable";
  } else if (error_number == EPERM || error_number == EACCES) {
    error.reason = ReadFailure::kPermissionDenied;
    error.detail = std::strerror(error_number);
  } else if (bytes_done > 0) {
    error.reason = ReadFailure::kShortRead;
  } else if (error_number != 0) {
    error.detail = std::strerror(error_number);
  }
  return error;
}

namespace {
// /proc/PID/task/TID/syscall: "NR ARG1 .. ARG6 SP PC" in a system call, "-1 SP PC" blocked
// outside one, "running" on or waiting for a CPU (no stack pointer: nullopt).
std::optional<uint64_t> syscall_stack_pointer(const std::string& task) {
  std::optional<std::string> text = read_proc_file(task + "/syscall");
  if (!text) return std::nullopt;
  std::vector<std::string> fields;
  std::istringstream in(*text);
  for (std::string field; in >> field;) fields.push_back(field);
  uint64_t sp = 0;
  if (fields.size() != 9 && fields.size() != 3) return std::nullopt;
  if (!parse_u64(fields[fields.size() - 2], &sp)) return std::nullopt;
  return sp;
}

std::string task_path(int pid, int tid) { return "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid); }

// A thread read as "running" is mostly one just woken and waiting for a CPU: it sits in its
// next system call a moment later. Rounds of re-reads of those, bounded per process.
constexpr int kRunningRereadRounds = 5;
constexpr auto kRunningRereadPause = std::chrono::milliseconds(2);
}  // namespace

ThreadInfo LiveProcess::thread_info(int tid) const {
  ThreadInfo thread;
  thread.tid = tid;
  if (std::optional<ThreadStat> stat = thread_stat(pid_, tid)) {
    thread.name = stat->name;
    thread.state = stat->state;
  }
  if (freezer_ && freezer_->is_stopped(tid)) thread.prstatus = prstatus_of_stopped_thread(tid);
  if (thread.prstatus.empty()) thread.syscall_stack_pointer = syscall_stack_pointer(task_path(pid_, tid));
  return thread;
}

std::vector<ThreadInfo> LiveProcess::threads() {
  std::vector<ThreadInfo> result;
  for (int tid : list_thread_ids(pid_)) result.push_back(thread_info(tid));
  auto lacks_stack_pointer = [](const ThreadInfo& t) {
    return t.state == 'R' && t.prstatus.empty() && !t.syscall_stack_pointer;
  };
  for (int round = 0; round < kRunningRereadRounds; ++round) {
    if (std::none_of(result.begin(), result.end(), lacks_stack_pointer)) break;
    std::this_thread::sleep_for(kRunningRereadPause);
    for (ThreadInfo& thread : result)
      if (lacks_stack_pointer(thread)) thread.syscall_stack_pointer = syscall_stack_pointer(task_path(pid_, thread.tid));
  }
  return result;
}

std::unique_ptr<Target> open_live(int pid, bool freeze) {
  return std::make_unique<LiveProcess>(pid, freeze);
}

}  // namespace nsc
