// Host thread stacks of one process, from a core file or a live process,
// unwound with libdwfl (elfutils) and symbolized from the target's own ELF
// files. Also: what each thread is blocked in (classify_blocked_in).
//
// Neither unwinder throws for a bad target: a core that cannot be opened, a
// pid that cannot be attached, a thread whose unwind fails all end up in
// `warnings` or in ThreadStack::error, and the caller gets what could be read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nsc {

struct StackFrame {
  uint64_t pc = 0;        // the frame's pc: a return address for every frame but the innermost
  std::string function;   // demangled symbol; "" when none (stripped or unknown code)
  std::string module;     // basename of the ELF ("libnccl.so.2"); "" when no module covers pc;
                          // "<name> (build-id mismatch: core ..., file ...)" when the file is wrong
  uint64_t offset = 0;    // pc - function start; pc - module start when function is ""
  bool inexact = false;   // looked up at pc-1 (a return address), or no symbol found
};

struct ThreadStack {
  int tid = 0;
  std::string name;       // comm; untrusted bytes from the target: escape before printing.
                          // Cores keep no per-thread names: only the main thread's (from
                          // NT_PRPSINFO) is known there.
  char state = '?';       // /proc state letter before unwinding (live); '?' in cores
  int syscall = -1;       // x86-64 number of the system call the thread sits in (live:
                          // /proc/.../syscall; core: orig_rax of NT_PRSTATUS); -1 when none/unknown
  std::vector<StackFrame> frames;  // innermost first
  std::string error;      // why the unwind stopped early ("" when it reached the outermost frame)
  std::string blocked_in; // classify_blocked_in(frames, name)
};

struct StackOptions {
  std::string executable;  // core: the program's file, when not at its recorded path
  std::string sysroot;     // core: gdb's `set sysroot`: tried as sysroot + recorded path
  std::vector<std::string> solib_search_path;  // core: tried as dir + basename
  size_t max_frames = 64;  // per thread
  size_t max_threads = 4096;  // threads beyond this are left out with a warning
};

class Target;

// Unwinds every thread of the target: a core through the Target's own libelf handle
// (Target::core_elf) and notes; a live process of ours by its pid, after Target::resume() ends
// a freeze we hold (see unwind_live_threads); any other target (memory a debugger supplies:
// CallbackTarget) with unwind_threads_over_target.
std::vector<ThreadStack> unwind_threads(Target& target, const StackOptions& options,
                                        std::vector<std::string>* warnings);

// Unwinds over the Target alone (libdwfl's dwfl_attach_state): each thread of
// Target::threads() from the registers of its NT_PRSTATUS (a callback target builds one from
// the registers its front end read), stack memory through Target::read, modules from
// Target::mapped_files() with the build-ids the target's memory holds (the vDSO from a region
// named "[vdso]"), files found and checked as for a core (executable, sysroot,
// solib_search_path). x86-64 only. A thread without registers, or whose stack cannot be read,
// gets its `error`; a target with no threads gets a warning and no stacks.
std::vector<ThreadStack> unwind_threads_over_target(Target& target, const StackOptions& options,
                                                    std::vector<std::string>* warnings);

// Opens the core (open_core_file: its warnings and an unusable file become warnings here)
// and unwinds every thread saved in it. A module whose file has a different
// GNU build-id than the one recorded in the core is never used for symbols:
// its frames carry the module label "<name> (build-id mismatch: ...)" and a
// warning says which file was rejected.
std::vector<ThreadStack> unwind_core_threads(const std::string& core_path,
                                             const StackOptions& options,
                                             std::vector<std::string>* warnings);

// Unwinds every thread of a live process. This STOPS THE TARGET, one thread
// at a time (a few milliseconds each): PTRACE_SEIZE + PTRACE_INTERRUPT, then
// libdwfl reads its registers and stack, then detach. No SIGSTOP is ever sent,
// so a stop ends even if ncclscope is killed (SIGKILL included); SIGINT/SIGTERM/
// SIGHUP detach first. A thread stopped by job control before stays stopped.
// Call it only when the user asked for stacks. Fails for threads already traced
// by another debugger (gdb -p): use the debugger's own unwinder there. Options
// other than max_frames/max_threads are ignored: live files come from /proc/PID.
std::vector<ThreadStack> unwind_live_threads(int pid, const StackOptions& options,
                                             std::vector<std::string>* warnings);

// What a thread is blocked in, by its frames' function names (innermost first):
// one of the `blocked_in` classes of docs/schema-state.md. Order of preference:
//   1. an NCCL API call the program made: ncclCommInitRank*/ncclCommSplit/
//      ncclCommInitAll -> "ncclCommInitRank"; ncclGroupEnd/groupLaunch -> "nccl-group-end";
//   2. a CUDA wait: cuda/cuStreamSynchronize -> "cudaStreamSynchronize", likewise
//      "cudaEventSynchronize", "cudaDeviceSynchronize" (also cuCtxSynchronize);
//   3. an NCCL thread body: ncclProxyProgress/progressOps -> "nccl-proxy-progress",
//      ncclProxyService* -> "nccl-proxy-service", bootstrap* -> "nccl-bootstrap";
//   3b. any other CUDA API call (cudaLaunchKernel, cudaMemcpy, cuMemFree...) ->
//      "cuda-call" (seen for real: a first cudaLaunchKernel blocked by lazy module
//      loading behind a spinning NCCL kernel);
//   4. a waiting system call: poll/ppoll/epoll_wait/select -> "poll/epoll";
//      nanosleep/clock_nanosleep/sleep/usleep/pause/sigsuspend -> "sleep";
//   5. "unknown" when a frame lies in libcuda/libcudart/libnccl (inside CUDA or
//      NCCL, in a call no symbol names: libcuda is unsymbolized, the program or
//      libnccl may be stripped or have a mismatched build-id); else "user-code" when
//      the outermost frame outside libc/ld.so is in the executable (not a shared
//      object); else "unknown".
// Within a level the innermost match wins. Decision: pause() or sleep() called
// from the program's own code is "sleep", not "user-code": the label says
// what the thread waits in, the frames say who called it (see
// innermost_user_frame); triage treats "sleep", "poll/epoll" and "user-code"
// alike as "not inside NCCL or CUDA".
std::string classify_blocked_in(const std::vector<StackFrame>& frames);

// Same, falling back on NCCL's thread names ("NCCL Progress 0", "NCCL Service 0",
// "NCCL BootstrapR"; set only with NCCL_SET_THREAD_NAME=1) when the frames name
// no NCCL or CUDA function (a stripped libnccl).
std::string classify_blocked_in(const std::vector<StackFrame>& frames,
                                const std::string& thread_name);

// Same, also using the system call the thread sits in: it names the wait
// (pause, poll...) when libc's frames cannot be symbolized (the target's libc
// is not on this machine). This is what the unwinders use.
std::string classify_thread_blocked_in(const ThreadStack& thread);

// "pause", "poll", "futex"... for an x86-64 system call number; "syscall_<n>"
// for others; "" for -1.
std::string syscall_name(int number);

// The innermost frame in the program's own executable, or nullptr: where user
// code called into the library the thread is blocked in.
const StackFrame* innermost_user_frame(const std::vector<StackFrame>& frames);

// The bare name used for matching: "(anonymous namespace)::ns::progressOps(...)
// [clone .constprop.0]" -> "progressOps", "__GI___poll" -> "poll",
// "pncclCommInitRank" -> "ncclCommInitRank".
std::string bare_function_name(const std::string& function);

// "park_in_pause" from a demangled C++ name (no anonymous-namespace noise, no parameters).
std::string short_function_name(std::string name);

// True when the module label names a shared object or the vDSO (not the executable).
bool is_shared_object_module(const std::string& module);

// The "threads" entry of docs/schema-state.md. function is null for a frame
// without a symbol (offset then counts from the module start), state is null
// when unknown; "syscall" (its name) appears only when the thread sits in one; "error" appears only when
// the unwind stopped early. Strings are made valid UTF-8, not escaped.
nlohmann::json to_json(const StackFrame& frame);
nlohmann::json to_json(const ThreadStack& thread);

}  // namespace nsc
