#include "snapshot/fatal_signal.h"

#include <csignal>
#include <set>
#include <string_view>
#include <vector>

#include "stacks/cxx_exception.h"
#include "stacks/thread_stacks.h"
#include "util/json_access.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

// si_code values of kill(2), sigqueue(3), tgkill(2) (asm-generic/siginfo.h).
constexpr int kSiUser = 0, kSiQueue = -1, kSiTkill = -6;

bool is_fault_signal(int signo) {
  return signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE || signo == SIGTRAP;
}

struct Frame {
  std::string function, bare, module;
  std::string pc;
};

std::vector<Frame> frames_of(const json& thread) {
  std::vector<Frame> frames;
  const json& list = json_member(thread, "frames");
  if (!list.is_array()) return frames;
  for (const json& entry : list) {
    Frame frame;
    frame.function = json_member(entry, "function").is_string() ? entry["function"].get<std::string>() : "";
    frame.bare = bare_function_name(frame.function);
    frame.module = json_member(entry, "module").is_string() ? entry["module"].get<std::string>() : "";
    frame.pc = json_member(entry, "pc").is_string() ? entry["pc"].get<std::string>() : "";
    frames.push_back(std::move(frame));
  }
  return frames;
}

const json* thread_with_tid(const json& threads, int tid) {
  if (!threads.is_array() || tid <= 0) return nullptr;
  for (const json& thread : threads)
    if (json_member(thread, "tid").is_number_integer() && thread["tid"].get<int>() == tid) return &thread;
  return nullptr;
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }
bool starts_with(const std::string& text, std::string_view prefix) { return text.rfind(prefix, 0) == 0; }

// Frames that deliver a signal or end a process on an uncaught C++ exception: never the site.
bool is_machinery(const Frame& frame) {
  static const char* const kNames[] = {"pthread_kill", "pthread_kill_implementation", "raise", "gsignal", "abort",
                                       "restore_rt", "terminate", "verbose_terminate_handler", "cxa_throw",
                                       "cxa_rethrow", "rethrow_exception", "Unwind_RaiseException",
                                       "Unwind_Resume"};
  for (const char* name : kNames)
    if (frame.bare == name) return true;
  if (starts_with(frame.bare, "faulthandler")) return true;
  if (frame.function.empty() && (starts_with(frame.module, "libc.so") || starts_with(frame.module, "libc-")))
    return true;  // the sigreturn trampoline has no name in a stripped libc
  return starts_with(frame.module, "libstdc++") || starts_with(frame.module, "libgcc_s");
}

// The library a module belongs to, as a person names it.
// PyTorch's own libraries by name: a user's libtorch_something.so is user code.
bool is_torch_library(const std::string& module) {
  for (const char* name : {"libtorch.so", "libtorch_cpu.so", "libtorch_cuda.so", "libtorch_cuda_linalg.so",
                           "libtorch_python.so", "libtorch_global_deps.so", "libtorch_nvshmem.so"})
    if (starts_with(module, name)) return true;
  return starts_with(module, "libc10");
}

std::string code_owner(const std::string& module) {
  if (module.empty()) return "unknown code";
  if (contains(module, "libnccl")) return "NCCL";
  if (starts_with(module, "libcuda") || contains(module, "libcudart")) return "CUDA";
  if (is_torch_library(module)) return "PyTorch";
  if (starts_with(module, "libpython") || starts_with(module, "python")) return "the Python interpreter";
  if (starts_with(module, "libc.so") || starts_with(module, "libc-") || starts_with(module, "ld-linux") ||
      starts_with(module, "libstdc++") || starts_with(module, "libgcc_s") || starts_with(module, "libm.so"))
    return "the C/C++ runtime";
  return "user code";
}

// Whether a frame belongs to PyTorch's NCCL watchdog or heartbeat monitor thread
// (c10d::ProcessGroupNCCL::Watchdog::run, ::HeartbeatMonitor::runLoop; ncclCommWatchdog before 2.7).
bool is_torch_watchdog_frame(const Frame& frame) {
  if (!contains(frame.function, "ProcessGroupNCCL")) return false;
  return contains(frame.function, "Watchdog") || contains(frame.function, "watchdog") ||
         contains(frame.function, "HeartbeatMonitor") || contains(frame.function, "heartbeatMonitor");
}

// A frame of process teardown: exit handlers, the interpreter's finalization.
bool is_exit_frame(const Frame& frame) {
  static const char* const kNames[] = {"exit", "run_exit_handlers", "dl_fini", "cxa_finalize", "Py_FinalizeEx",
                                       "Py_Finalize", "Py_Exit", "IO_cleanup"};
  for (const char* name : kNames)
    if (frame.bare == name) return true;
  return false;
}

// The first frame outside the signal and exception machinery: where the thread was.
const Frame* site_frame(const std::vector<Frame>& frames) {
  for (const Frame& frame : frames)
    if (!is_machinery(frame)) return &frame;
  return nullptr;
}

json site_json(const Frame* frame) {
  if (frame == nullptr) return nullptr;
  return {{"function", frame->function.empty() ? json(nullptr) : json(frame->function)},
          {"module", frame->module},
          {"pc", frame->pc},
          {"in", code_owner(frame->module)}};
}

// The innermost Python frame of the thread (file:line), or null.
json python_site(const json& thread) {
  const json& frames = json_member(json_member(thread, "python"), "frames");
  if (!frames.is_array()) return nullptr;
  for (const json& frame : frames)
    if (json_member(frame, "file").is_string())
      return {{"function", json_member(frame, "function")}, {"file", frame["file"]}, {"line", json_member(frame, "line")}};
  return nullptr;
}

struct Origin {
  const char* name;       // fault | abort | sent | re-raised
  bool failure;           // a failure of the process itself
  bool inferred = false;  // abort() read from the frames' modules: libc has no symbols here
};

bool in_libc(const Frame& frame) { return starts_with(frame.module, "libc.so") || starts_with(frame.module, "libc-"); }

// Whether the thread's innermost frames are libc's without names (its symbols are not here).
bool libc_unnamed(const std::vector<Frame>& frames) {
  return !frames.empty() && in_libc(frames.front()) && frames.front().function.empty();
}

// Without libc's symbols abort() has no name, but two shapes of a SIGABRT the process sent itself
// still show it: a return address recurs among the innermost libc frames (raise() ran twice: a
// handler re-raised what this thread raised), or those frames lead into libstdc++'s
// (std::terminate's abort()). A signal from outside that a handler re-raised shows neither.
bool abort_without_libc_names(const SignalInfo& signal, int own_pid, const std::vector<Frame>& frames) {
  if (signal.signo != SIGABRT || signal.code != kSiTkill || signal.sender_pid != own_pid) return false;
  std::set<std::string> pcs;
  bool repeated = false;
  size_t n = 0;
  for (; n < frames.size() && in_libc(frames[n]); ++n) {
    if (!frames[n].function.empty()) return false;  // libc is named: the names decided
    repeated = !pcs.insert(frames[n].pc).second || repeated;
  }
  bool into_cxx_runtime = n > 0 && n < frames.size() && starts_with(frames[n].module, "libstdc++");
  return repeated || into_cxx_runtime;
}

Origin classify(const SignalInfo& signal, int own_pid, const std::vector<Frame>& frames) {
  bool kernel = signal.code > 0;  // SI_KERNEL and the fault codes
  if (kernel && is_fault_signal(signal.signo)) return {"fault", true};
  for (const Frame& frame : frames)
    if (frame.bare == "abort") return {"abort", true};
  if (abort_without_libc_names(signal, own_pid, frames)) return {"abort", true, true};
  bool sent = signal.code == kSiUser || signal.code == kSiQueue || signal.code == kSiTkill;
  if (sent && signal.sender_pid != own_pid) return {"sent", false};
  if (sent) return {"re-raised", is_fault_signal(signal.signo)};  // a handler (faulthandler) raised it again
  return {"kernel", is_fault_signal(signal.signo)};
}

std::string site_text(const json& site, const json& python) {
  std::string text;
  if (site.is_object()) {
    text = site["function"].is_string() ? short_function_name(site["function"].get<std::string>()) + "()"
                                        : site["pc"].get<std::string>();
    text += " in " + site["module"].get<std::string>() + " (" + site["in"].get<std::string>() + ")";
  }
  if (python.is_object()) {
    std::string file = python["file"].get<std::string>();
    file = file.substr(file.find_last_of('/') + 1);
    text += std::string(text.empty() ? "" : ", ") + "Python " + json_text(python["function"]) + " at " + file +
            (python["line"].is_number_integer() ? ":" + python["line"].dump() : " (line unavailable)");
  }
  return text;
}

std::string describe(const json& out, const SignalInfo& signal, bool unnamed) {
  std::string name = out["name"].get<std::string>();
  std::string origin = out["origin"].get<std::string>();
  std::string where = site_text(out["site"], out["python_site"]);
  std::string thread = " in thread " + std::to_string(signal.tid);
  if (origin == "fault")
    return name + " (" + out["code_name"].get<std::string>() + ", address " + out["fault_address"].get<std::string>() +
           ")" + thread + (where.empty() ? "" : " at " + where);
  if (origin == "abort") {
    std::string via = out["via"].is_string() ? " via " + out["via"].get<std::string>() : "";
    std::string by = out["torch_watchdog"].get<bool>() ? " by PyTorch's NCCL watchdog thread" : thread;
    std::string inferred = out["abort_inferred"].get<bool>() ? " (inferred: the process sent itself SIGABRT; libc has no symbols here)" : "";
    return "abort()" + via + by + (where.empty() ? "" : " at " + where) + inferred;
  }
  if (origin == "sent")
    return name + " sent by pid " + std::to_string(signal.sender_pid) +
           " (another process: a capture or a supervisor; not a failure of this one)";
  if (origin == "re-raised" && unnamed)
    return name + " the process sent itself, not from abort() as far as its frames show (libc has no symbols "
           "here: a handler re-raising a signal from outside, or raise())" + thread + (where.empty() ? "" : " at " + where);
  if (origin == "re-raised")
    return name + " raised again by the process's own handler (Python faulthandler) without abort()" +
           (out["failure"].get<bool>() ? thread + (where.empty() ? "" : " at " + where)
                                       : ": first sent from outside (a capture or a supervisor)");
  return name + " (" + out["code_name"].get<std::string>() + ")" + thread;
}

}  // namespace

std::string signal_name(int signo) {
  static const std::pair<int, const char*> kNames[] = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},   {SIGTRAP, "SIGTRAP"},
      {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},
      {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"}, {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
      {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"}};
  for (const auto& [number, name] : kNames)
    if (number == signo) return name;
  return "signal " + std::to_string(signo);
}

std::string signal_code_name(int signo, int code) {
  switch (code) {
    case kSiUser: return "SI_USER";
    case kSiQueue: return "SI_QUEUE";
    case kSiTkill: return "SI_TKILL";
    case 0x80: return "SI_KERNEL";
    default: break;
  }
  if (signo == SIGSEGV && code == 1) return "SEGV_MAPERR";
  if (signo == SIGSEGV && code == 2) return "SEGV_ACCERR";
  if (signo == SIGBUS && code == 1) return "BUS_ADRALN";
  if (signo == SIGBUS && code == 2) return "BUS_ADRERR";
  if (signo == SIGBUS && code == 3) return "BUS_OBJERR";
  if (signo == SIGILL && code == 1) return "ILL_ILLOPC";
  if (signo == SIGFPE && code == 1) return "FPE_INTDIV";
  return "code " + std::to_string(code);
}

json fatal_signal_json(const std::optional<SignalInfo>& signal, int own_pid, const json& threads) {
  if (!signal) return nullptr;
  const json* thread = thread_with_tid(threads, signal->tid);
  std::vector<Frame> frames = thread ? frames_of(*thread) : std::vector<Frame>();
  Origin origin = classify(*signal, own_pid, frames);
  bool sent_by_kill = signal->code <= 0;
  json out = {{"signal", signal->signo},
              {"name", signal_name(signal->signo)},
              {"code", signal->code},
              {"code_name", signal_code_name(signal->signo, signal->code)},
              {"sender_pid", sent_by_kill ? json(signal->sender_pid) : json(nullptr)},
              {"fault_address", !sent_by_kill && is_fault_signal(signal->signo) ? json(hex(signal->fault_address)) : json(nullptr)},
              {"tid", signal->tid > 0 ? json(signal->tid) : json(nullptr)},
              {"thread_found", thread != nullptr},
              {"origin", origin.name},
              {"failure", origin.failure},
              {"abort_inferred", origin.inferred}};
  bool terminate = false, watchdog = false, exiting = false;
  for (const Frame& frame : frames) {
    exiting = exiting || is_exit_frame(frame);
    terminate = terminate || frame.bare == "terminate" || frame.bare == "verbose_terminate_handler";
    watchdog = watchdog || is_torch_watchdog_frame(frame);
  }
  out["via"] = origin.failure && terminate ? json("std::terminate (an uncaught C++ exception)") : json(nullptr);
  out["torch_watchdog"] = origin.failure && watchdog;
  out["during_exit"] = origin.failure && exiting;  // the process was already ending (exit, Py_FinalizeEx)
  bool located = origin.failure || std::string(origin.name) == "kernel";
  out["site"] = located ? site_json(site_frame(frames)) : json(nullptr);
  out["python_site"] = located && thread ? python_site(*thread) : json(nullptr);
  out["text"] = describe(out, *signal, libc_unnamed(frames));
  return out;
}

void attach_in_flight_exception(const json& exception, json* fatal_signal) {
  if (!exception.is_object() || !fatal_signal->is_object() || !(*fatal_signal)["via"].is_string()) return;
  (*fatal_signal)["exception"] = exception;
  (*fatal_signal)["text"] = in_flight_exception_text(exception) + "; " + (*fatal_signal)["text"].get<std::string>();
}

}  // namespace nsc
