// Stops threads of a live process (PTRACE_SEIZE + PTRACE_INTERRUPT: no SIGSTOP,
// so a stop ends by itself when ncclscope dies, even by SIGKILL) and always
// resumes them: destructor, atexit, and SIGINT/SIGTERM/SIGHUP handlers that
// detach before re-raising.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace nsc {

class ThreadFreezer {
 public:
  // Seizes and interrupts all threads (re-listing until no new thread appears).
  // Throws nsc::BadInput "pid N: may not trace (...)" when ptrace is refused.
  explicit ThreadFreezer(int pid);
  // Stops only thread tid of process pid (the stack phase stops one thread at a time).
  ThreadFreezer(int pid, int tid);
  ~ThreadFreezer();
  ThreadFreezer(const ThreadFreezer&) = delete;
  ThreadFreezer& operator=(const ThreadFreezer&) = delete;

  void release();  // resumes every thread now (idempotent)
  bool is_stopped(int tid) const;
  std::vector<int> stopped_threads() const;
  // Threads that did not stop: left unseized in uninterruptible sleep, or not stopped within 2 s.
  const std::vector<int>& unstopped_threads() const { return unstopped_; }
  // Why tid is not stopped ("in uninterruptible sleep in the kernel (WCHAN) for over 100 ms"),
  // "" when it is or was never seen.
  std::string why_unstopped(int tid) const;

 private:
  bool seize_new_threads();
  void seize_one(int tid);
  enum class StopResult { kStopped, kGone, kTimeout };
  StopResult wait_for_stop(int tid, int* pending_signal);
  void detach_one(int tid, int signal_to_deliver, bool was_stopped);

  int pid_;
  std::map<int, int> seized_;  // tid -> signal to re-inject at detach (0 if none)
  std::map<int, bool> stopped_;
  std::vector<int> unstopped_;
  std::map<int, std::string> unstopped_reasons_;
};

// "pid N: may not trace (Operation not permitted; ...): run as the same user or
// root, or set ptrace_scope to 0": the reason the kernel refused, with a hint.
std::string trace_permission_message(int pid, int error_number);

}  // namespace nsc
