#include "target/ptrace_freezer.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "target/proc_maps.h"
#include "util/errors.h"

namespace nsc {
namespace {

// Threads to detach from in an emergency (signal or exit). A fixed array so the
// signal handler never touches the heap; the normal path detaches all anyway.
constexpr int kEmergencySlots = 4096;
std::atomic<int> g_emergency_tids[kEmergencySlots];
constexpr int kHandledSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous_actions[3];
std::atomic<bool> g_handlers_installed{false};

void emergency_detach_all() {
  for (auto& slot : g_emergency_tids) {
    int tid = slot.exchange(0);
    if (tid > 0) ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
  }
}

void on_fatal_signal(int signo) {
  emergency_detach_all();
  for (int i = 0; i < 3; ++i)
    if (kHandledSignals[i] == signo) sigaction(signo, &g_previous_actions[i], nullptr);
  raise(signo);
}

void install_handlers_once() {
  if (g_handlers_installed.exchange(true)) return;
  std::atexit(emergency_detach_all);
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = on_fatal_signal;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 3; ++i) {
    sigaction(kHandledSignals[i], nullptr, &g_previous_actions[i]);
    // Only where the default action would kill us. Ignored on entry (nohup, a
    // script's background job): keep ignoring it. A host's own handler (gdb
    // loading the C API): leave it; the kernel still detaches if the host exits.
    if (g_previous_actions[i].sa_handler == SIG_DFL) sigaction(kHandledSignals[i], &action, nullptr);
  }
}

void remember_for_emergency(int tid) {
  for (auto& slot : g_emergency_tids) {
    int empty = 0;
    if (slot.compare_exchange_strong(empty, tid)) return;
  }
}

void forget_for_emergency(int tid) {
  for (auto& slot : g_emergency_tids) {
    int expected = tid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

std::string first_line_of(const std::string& path) {
  auto text = read_proc_file(path);
  if (!text) return "";
  return text->substr(0, text->find('\n'));
}

// First number after `field` in /proc/PID/status ("Uid:\t1000\t1000..."), or -1.
long status_field(int pid, const std::string& field) {
  auto status = read_proc_file("/proc/" + std::to_string(pid) + "/status");
  if (!status) return -1;
  size_t at = status->find("\n" + field);
  return at == std::string::npos ? -1 : std::strtol(status->c_str() + at + 1 + field.size(), nullptr, 10);
}

// A thread in uninterruptible sleep (a vfork parent, a driver call) takes no ptrace stop until
// the kernel lets it go: seized, it would cost 2 s waiting for the stop and 2 s more to detach.
// Waits up to 100 ms for it to leave that sleep; "" when it did, else the reason it is left alone.
std::string persistent_kernel_sleep(int pid, int tid) {
  char state = thread_state(pid, tid);
  for (int poll = 0; poll < 20 && state == 'D'; ++poll) {
    usleep(5000);
    state = thread_state(pid, tid);
  }
  if (state != 'D') return "";
  std::string channel = thread_wait_channel(pid, tid);
  return "in uninterruptible sleep in the kernel" + (channel.empty() ? "" : " (" + channel + ")") +
         " for over 100 ms: not stopped";
}

}  // namespace

std::string trace_permission_message(int pid, int error_number) {
  std::ostringstream text;
  text << "pid " << pid << ": may not trace (" << std::strerror(error_number);
  long uid = status_field(pid, "Uid:");
  if (uid >= 0 && uid != static_cast<long>(getuid()))
    text << "; process uid " << uid << " differs from ours (" << getuid() << ")";
  long tracer = status_field(pid, "TracerPid:");
  if (tracer > 0) text << "; already traced by pid " << tracer << " (a debugger?)";
  std::string scope = first_line_of("/proc/sys/kernel/yama/ptrace_scope");
  if (!scope.empty()) text << "; /proc/sys/kernel/yama/ptrace_scope is " << scope;
  text << "): run as the same user or root, or set ptrace_scope to 0";
  return text.str();
}

ThreadFreezer::ThreadFreezer(int pid) : pid_(pid) {
  install_handlers_once();
  try {
    for (int round = 0; round < 1000 && seize_new_threads(); ++round) {
    }
  } catch (...) {
    release();
    throw;
  }
}

ThreadFreezer::ThreadFreezer(int pid, int tid) : pid_(pid) {
  install_handlers_once();
  try {
    seize_one(tid);
  } catch (...) {
    release();
    throw;
  }
}

ThreadFreezer::~ThreadFreezer() { release(); }

// One pass over /proc/PID/task; true if it found (and stopped) a thread not seen before.
bool ThreadFreezer::seize_new_threads() {
  bool found_new = false;
  for (int tid : list_thread_ids(pid_)) {
    if (seized_.count(tid) || unstopped_reasons_.count(tid)) continue;
    found_new = true;
    seize_one(tid);
  }
  return found_new;
}

void ThreadFreezer::seize_one(int tid) {
  std::string kernel_sleep = persistent_kernel_sleep(pid_, tid);
  if (!kernel_sleep.empty()) {
    unstopped_.push_back(tid);
    unstopped_reasons_[tid] = kernel_sleep;
    return;
  }
  if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
    if (errno == ESRCH) return;  // the thread exited meanwhile
    int error_number = errno;
    if (error_number == EPERM || error_number == EACCES)
      throw BadInput(trace_permission_message(pid_, error_number));
    throw BadInput("pid " + std::to_string(pid_) + ": cannot seize thread " +
                   std::to_string(tid) + ": " + std::strerror(error_number));
  }
  seized_[tid] = 0;
  remember_for_emergency(tid);
  if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0 && errno == ESRCH) return;
  switch (wait_for_stop(tid, &seized_[tid])) {
    case StopResult::kStopped: stopped_[tid] = true; break;
    case StopResult::kTimeout:
      unstopped_.push_back(tid);
      unstopped_reasons_[tid] = "did not stop within 2 s";
      break;
    case StopResult::kGone:
      seized_.erase(tid);
      forget_for_emergency(tid);
      break;
  }
}

// Polls (a thread in uninterruptible sleep may never stop) for up to 2 seconds.
ThreadFreezer::StopResult ThreadFreezer::wait_for_stop(int tid, int* pending_signal) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t got = waitpid(tid, &status, __WALL | WNOHANG);
    if (got < 0 || (got == tid && (WIFEXITED(status) || WIFSIGNALED(status))))
      return StopResult::kGone;
    if (got == tid && WIFSTOPPED(status)) {
      // A signal-delivery-stop came first: deliver that signal when we detach.
      if ((status >> 16) != PTRACE_EVENT_STOP) *pending_signal = WSTOPSIG(status);
      return StopResult::kStopped;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return StopResult::kTimeout;
}

void ThreadFreezer::detach_one(int tid, int signal_to_deliver, bool was_stopped) {
  long data = signal_to_deliver;
  if (ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(data)) != 0 &&
      errno == ESRCH && !was_stopped) {
    // Not stopped yet: it stops when it leaves its sleep; catch that, then detach.
    int late_signal = 0;
    if (wait_for_stop(tid, &late_signal) == StopResult::kStopped)
      ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(late_signal)));
  }
  forget_for_emergency(tid);
}

void ThreadFreezer::release() {
  std::map<int, int> to_detach;
  to_detach.swap(seized_);
  for (const auto& [tid, signal_to_deliver] : to_detach)
    detach_one(tid, signal_to_deliver, is_stopped(tid));
  stopped_.clear();
}

std::string ThreadFreezer::why_unstopped(int tid) const {
  auto it = unstopped_reasons_.find(tid);
  return it == unstopped_reasons_.end() ? "" : it->second;
}

bool ThreadFreezer::is_stopped(int tid) const {
  auto it = stopped_.find(tid);
  return it != stopped_.end() && it->second;
}

std::vector<int> ThreadFreezer::stopped_threads() const {
  std::vector<int> tids;
  for (const auto& entry : stopped_)
    if (entry.second) tids.push_back(entry.first);
  return tids;
}

}  // namespace nsc
