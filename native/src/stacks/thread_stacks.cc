// Thread stacks with libdwfl: the core and live setups differ only in how the
// Dwfl is reported and attached; unwinding and symbolization are shared.
#include "stacks/thread_stacks.h"

#include <dirent.h>
#include <elf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

#include "stacks/symbol_index.h"
#include "target/build_ids.h"
#include "target/core_file.h"
#include "target/core_notes.h"
#include "target/proc_maps.h"
#include "target/ptrace_freezer.h"
#include "util/errors.h"
#include "util/input_file.h"
#include "util/phase_times.h"
#include "util/strings.h"

namespace nsc {
namespace {

std::string basename_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string hex_bytes(const void* bytes, size_t length) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  const auto* data = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < length; ++i) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 0xf];
  }
  return out;
}

std::vector<unsigned char> bytes_of_hex(const std::string& text) {
  std::vector<unsigned char> bytes;
  for (size_t at = 0; at + 1 < text.size(); at += 2)
    bytes.push_back(static_cast<unsigned char>(std::stoul(text.substr(at, 2), nullptr, 16)));
  return bytes;
}

std::string dwfl_error_text() {
  const char* message = dwfl_errmsg(-1);
  std::string text = message != nullptr ? message : "unknown libdwfl error";
  // libdwfl reports a failed libelf read of a cut-off core this way.
  if (text == "unknown libdwfl error" || text == "no error")
    text = "unreadable ELF data (truncated or corrupt file?)";
  return text;
}

std::string demangle_itanium(const char* symbol) {
  if (symbol[0] != '_' || symbol[1] != 'Z') return symbol;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(symbol, nullptr, nullptr, &status), &std::free);
  return status == 0 && demangled ? std::string(demangled.get()) : std::string(symbol);
}

std::string demangle(const char* symbol) {
  if (symbol == nullptr) return "";
  std::string name = demangle_itanium(symbol);
  // nvcc's host-side launch stub of a kernel, "__device_stub__" + the kernel's mangled name
  // without its "_": "__device_stub__(anonymous namespace)::consume(float*)".
  static const std::string kStub = "__device_stub__Z";
  if (name.compare(0, kStub.size(), kStub) != 0) return name;
  std::string kernel = "_" + name.substr(kStub.size() - 1, name.find('(') - (kStub.size() - 1));
  std::string readable = demangle_itanium(kernel.c_str());
  return readable == kernel ? name : "__device_stub__" + readable;
}

struct DwflDeleter {
  void operator()(Dwfl* dwfl) const { dwfl_end(dwfl); }
};
using DwflPtr = std::unique_ptr<Dwfl, DwflDeleter>;

// A file rejected for a module because its build-id differs from the core's.
struct BuildIdMismatch {
  std::string path;
  std::string core_build_id;
  std::string file_build_id;
};

// Everything the find_elf callback and the frame callbacks need.
struct UnwindSession {
  const StackOptions* options = nullptr;
  std::vector<std::string>* warnings = nullptr;
  bool live = false;
  uint64_t entry_point = 0;  // core: AT_ENTRY, marks the executable's module
  std::map<int, ThreadInfo> core_threads;  // core: tid -> its notes (name, NT_PRSTATUS)
  std::map<Dwfl_Module*, BuildIdMismatch> mismatches;
  std::map<Dwfl_Module*, std::string> module_labels;  // cache
  std::map<Dwfl_Module*, std::shared_ptr<const SymbolIndex>> symbol_indexes;  // from the run-wide cache
  std::map<Dwfl_Module*, SymbolIndexCache::Pending> requested_indexes;       // asked for, maybe not built yet
  std::string executable_name;      // when entry_point is unknown: the executable's basename
  std::string executable_build_id;  // and the build-id of options.executable's file
  std::vector<char> vdso_image;  // over Target::read: the vDSO's bytes (libdwfl's Elf lives on them)
  std::string read_failure;      // over Target::read: the last stack read that failed, this thread
  InputFile live_memory;         // live: /proc/PID/mem, opened once, tells a cut walk's reason
  std::optional<std::map<std::string, std::string>> search_files_by_build_id;  // indexed on first need

  UnwindSession(const StackOptions& unwind_options, std::vector<std::string>* unwind_warnings, bool live_process = false)
      : options(&unwind_options), warnings(unwind_warnings), live(live_process) {}
};

void warn(UnwindSession* session, const std::string& text) {
  if (session->warnings != nullptr) session->warnings->push_back(text);
}

std::string module_build_id(Dwfl_Module* module) {
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  int length = dwfl_module_build_id(module, &bits, &vaddr);
  return length > 0 ? hex_bytes(bits, static_cast<size_t>(length)) : "";
}

std::string file_build_id(Elf* elf) {
  const void* bits = nullptr;
  ssize_t length = dwelf_elf_gnu_build_id(elf, &bits);
  return length > 0 ? hex_bytes(bits, static_cast<size_t>(length)) : "";
}

// Opens path as an ELF for module and checks its build-id against the one the
// core recorded. Returns the fd (and *elfp) on a match, -1 otherwise.
int open_candidate(UnwindSession* session, Dwfl_Module* module, const std::string& path,
                   char** file_name, Elf** elfp) {
  int fd = try_open_regular_file(path, nullptr).release();
  if (fd < 0) return -1;
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
    if (elf != nullptr) elf_end(elf);
    close(fd);
    return -1;
  }
  std::string expected = module_build_id(module);
  std::string found = file_build_id(elf);
  // Without a recorded build-id nothing can be checked: take the file as named.
  if (!expected.empty() && expected != found) {
    if (session->mismatches.count(module) == 0)
      session->mismatches[module] = {path, expected, found.empty() ? "none" : found};
    elf_end(elf);
    close(fd);
    return -1;
  }
  *elfp = elf;
  *file_name = strdup(path.c_str());
  return fd;
}

// The solib-search-path directories' ELF files by build-id, indexed once per session at the first
// module no name finds: a library often goes by another name there than the one the core
// recorded (libstdc++.so.6 for the mapped libstdc++.so.6.0.33), as gdb finds it by its soname.
const std::map<std::string, std::string>& search_files_by_build_id(UnwindSession* session) {
  if (session->search_files_by_build_id) return *session->search_files_by_build_id;
  constexpr size_t kMaxFilesPerDirectory = 4096;  // bounded cost on a huge directory
  std::map<std::string, std::string>& index = session->search_files_by_build_id.emplace();
  for (const std::string& dir : session->options->solib_search_path) {
    std::unique_ptr<DIR, int (*)(DIR*)> listing(dir.empty() ? nullptr : opendir(dir.c_str()), closedir);
    size_t seen = 0;
    for (dirent* entry; listing && seen < kMaxFilesPerDirectory && (entry = readdir(listing.get())) != nullptr;) {
      if (entry->d_name[0] == '.') continue;
      ++seen;
      std::string path = dir + "/" + entry->d_name;
      std::optional<std::string> id = build_id_of_file(path);
      if (id && !id->empty()) index.emplace(*id, path);  // the first directory's file wins
    }
  }
  return index;
}

std::optional<std::string> search_file_with_build_id(UnwindSession* session, Dwfl_Module* module) {
  std::string id = module_build_id(module);
  if (id.empty() || session->options->solib_search_path.empty()) return std::nullopt;
  const std::map<std::string, std::string>& index = search_files_by_build_id(session);
  auto found = index.find(id);
  return found == index.end() ? std::nullopt : std::optional<std::string>(found->second);
}

bool is_executable_module(UnwindSession* session, Dwfl_Module* module) {
  Dwarf_Addr start = 0, end = 0;
  const char* name = dwfl_module_info(module, nullptr, &start, &end, nullptr, nullptr, nullptr, nullptr);
  if (session->entry_point != 0) return start <= session->entry_point && session->entry_point < end;
  // A target without an auxiliary vector (gdb's memory): the module of the program's name, or
  // the one whose build-id (read from memory) the given executable's file carries.
  if (session->executable_name.empty()) return false;
  if (name != nullptr && basename_of(name) == session->executable_name) return true;
  std::string recorded = module_build_id(module);
  return !recorded.empty() && recorded == session->executable_build_id;
}

// find_elf has no user argument: the session of the unwind_core_threads call
// running on this thread is found here.
thread_local UnwindSession* current_core_session = nullptr;

// find_elf for cores: the user's executable, sysroot + recorded path, each
// solib-search-path dir + basename, the recorded path, then libdwfl's build-id
// lookup. Every candidate must carry the core's build-id.
int core_find_elf(Dwfl_Module* module, void** /*userdata*/, const char* module_name,
                  Dwarf_Addr base, char** file_name, Elf** elfp) {
  *elfp = nullptr;
  UnwindSession* session = current_core_session;
  std::string recorded = module_name != nullptr ? module_name : "";
  if (session != nullptr && recorded == "[vdso]" && !session->vdso_image.empty()) {
    // Read from the target's memory (report_target_modules): no file holds it.
    *elfp = elf_memory(session->vdso_image.data(), session->vdso_image.size());
    return -1;
  }
  if (session != nullptr) {
    std::vector<std::string> candidates;
    const StackOptions& options = *session->options;
    if (!options.executable.empty() && is_executable_module(session, module))
      candidates.push_back(options.executable);
    if (!options.sysroot.empty() && !recorded.empty() && recorded[0] == '/')
      candidates.push_back(options.sysroot + recorded);
    for (const std::string& dir : options.solib_search_path)
      if (!dir.empty() && !recorded.empty()) candidates.push_back(dir + "/" + basename_of(recorded));
    if (options.sysroot.empty() && !recorded.empty() && recorded[0] == '/')
      candidates.push_back(recorded);
    for (const std::string& path : candidates) {
      int fd = open_candidate(session, module, path, file_name, elfp);
      if (fd >= 0) return fd;
    }
    if (std::optional<std::string> path = search_file_with_build_id(session, module)) {
      int fd = open_candidate(session, module, *path, file_name, elfp);
      if (fd >= 0) return fd;
    }
  }
  return dwfl_build_id_find_elf(module, nullptr, module_name, base, file_name, elfp);
}

// The module label frames carry: basename, or the mismatch note.
const std::string& module_label(UnwindSession* session, Dwfl_Module* module) {
  auto cached = session->module_labels.find(module);
  if (cached != session->module_labels.end()) return cached->second;
  const char* name = dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr,
                                      nullptr, nullptr);
  std::string label = basename_of(name != nullptr ? name : "");
  Dwarf_Addr bias = 0;
  bool has_elf = dwfl_module_getelf(module, &bias) != nullptr;
  auto mismatch = session->mismatches.find(module);
  if (!has_elf && mismatch != session->mismatches.end()) {
    const BuildIdMismatch& facts = mismatch->second;
    label += " (build-id mismatch: core " + facts.core_build_id.substr(0, 12) + "..., file " +
             facts.file_build_id.substr(0, 12) + "...)";
    warn(session, "stacks: " + basename_of(name != nullptr ? name : "") +
                      ": build-id mismatch: the core records " + facts.core_build_id + ", " +
                      facts.path + " has " + facts.file_build_id +
                      "; its frames are left unsymbolized");
  } else if (!has_elf && !session->live && name != nullptr && name[0] == '/') {
    warn(session, "stacks: " + label + ": no file found for " + name +
                      " (set sysroot or solib-search-path); its frames are left unsymbolized");
  }
  return session->module_labels.emplace(module, label).first->second;
}

// The module's symbol index, from the run's cache (built at the first frame in the module).
const SymbolIndex& symbol_index(UnwindSession* session, Dwfl_Module* module) {
  auto cached = session->symbol_indexes.find(module);
  if (cached != session->symbol_indexes.end()) return *cached->second;
  std::shared_ptr<const SymbolIndex> index = [&] {
    PhaseTimer timer("stacks.symbol_index");  // includes waiting for its build (this rank's or another's)
    auto requested = session->requested_indexes.find(module);
    if (requested != session->requested_indexes.end()) return requested->second.get();
    return SymbolIndexCache::run_wide().index_for(module_build_id(module), module);
  }();
  const char* name = dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  std::string shown = basename_of(name != nullptr ? name : "");
  if (!index->refused().empty())
    warn(session, "stacks: " + shown + ": " + index->refused() + "; its frames are left unsymbolized");
  if (!index->note().empty()) warn(session, "stacks: " + shown + ": " + index->note());
  return *session->symbol_indexes.emplace(module, std::move(index)).first->second;
}

// A return address points after the call: its caller is looked up at pc-1.
uint64_t lookup_address(uint64_t pc, bool is_activation) { return is_activation || pc == 0 ? pc : pc - 1; }

StackFrame symbolize(UnwindSession* session, Dwfl* dwfl, uint64_t pc, bool is_activation) {
  StackFrame frame;
  frame.pc = pc;
  uint64_t lookup = lookup_address(pc, is_activation);
  frame.inexact = lookup != pc;
  Dwfl_Module* module = dwfl_addrmodule(dwfl, lookup);
  if (module == nullptr) {
    frame.offset = pc;
    frame.inexact = true;
    return frame;
  }
  frame.module = module_label(session, module);
  Dwarf_Addr module_start = 0;
  dwfl_module_info(module, nullptr, &module_start, nullptr, nullptr, nullptr, nullptr, nullptr);
  Dwarf_Addr bias = 0;
  std::optional<SymbolHit> symbol;
  if (dwfl_module_getelf(module, &bias) != nullptr) symbol = symbol_index(session, module).lookup(lookup - bias);
  if (!symbol) {
    frame.offset = pc - module_start;
    frame.inexact = true;
    return frame;
  }
  // Versioned dynamic symbols come back as "__libc_start_main@@GLIBC_2.34".
  std::string symbol_name = std::move(symbol->name);
  size_t version = symbol_name.find('@');
  if (version != std::string::npos && version > 0) symbol_name.resize(version);
  frame.function = demangle(symbol_name.c_str());
  frame.offset = symbol->offset + (pc - lookup);
  return frame;
}

// Where libdwfl's frames stop being real. Past a frame in code without unwind
// information (its file not found, or no .eh_frame/.debug_frame) the next frame
// is libdwfl's frame-pointer guess: right through code that keeps frame pointers
// (libcuda, seen on real cores), garbage through code that does not (libnccl:
// "0x706d742f00000045", ASCII "/tmp"). A guessed frame that lies in no loaded
// module is garbage: it and everything beyond it are cut, and `why` says so.
size_t real_frame_count(Dwfl* dwfl, const std::vector<StackFrame>& frames, std::string* why) {
  auto module_of = [&](const StackFrame& frame) {
    return dwfl_addrmodule(dwfl, frame.inexact && frame.pc != 0 ? frame.pc - 1 : frame.pc);
  };
  for (size_t i = 1; i < frames.size(); ++i) {
    if (module_of(frames[i]) != nullptr) continue;
    Dwfl_Module* caller_of = module_of(frames[i - 1]);
    Dwarf_Addr bias = 0;
    bool unwound_by_cfi = caller_of != nullptr && (dwfl_module_eh_cfi(caller_of, &bias) != nullptr ||
                                                   dwfl_module_dwarf_cfi(caller_of, &bias) != nullptr);
    if (unwound_by_cfi) continue;  // a real return address into code outside modules (JIT)
    std::ostringstream text;
    text << "unwind stopped after frame #" << i - 1 << ": without unwind information for "
         << (frames[i - 1].module.empty() ? std::string("its code") : frames[i - 1].module)
         << " the unwinder guessed 0x" << std::hex << frames[i].pc << std::dec
         << ", which lies in no loaded module (" << frames.size() - i << " guessed frame(s) left out)";
    *why = text.str();
    return i;
  }
  return frames.size();
}

// A frame as the unwinder gives it, symbolized only after the thread is let go.
struct RawFrame {
  uint64_t pc;
  bool is_activation;
};

struct ThreadWalk {
  UnwindSession* session;
  ThreadStack* stack;  // valid while this thread is unwound (phase 1)
  std::vector<RawFrame> raw_frames;
  bool truncated = false;
  std::optional<uint64_t> stack_pointer;  // the innermost frame's (x86-64 DWARF register 7, rsp)
};

int on_frame(Dwfl_Frame* state, void* arg) {
  auto* walk = static_cast<ThreadWalk*>(arg);
  try {
    if (walk->raw_frames.size() >= walk->session->options->max_frames) {
      walk->truncated = true;
      return DWARF_CB_ABORT;
    }
    Dwarf_Addr pc = 0;
    bool is_activation = false;
    if (!dwfl_frame_pc(state, &pc, &is_activation)) {
      walk->stack->error = "dwfl_frame_pc: " + dwfl_error_text();
      return DWARF_CB_ABORT;
    }
    Dwarf_Word stack_pointer = 0;
    if (walk->raw_frames.empty() && dwfl_frame_reg(state, 7, &stack_pointer) == 0) walk->stack_pointer = stack_pointer;
    // Live threads stay stopped during this callback: loading a large symbol
    // table here (libtorch_cuda.so) would stretch the stop, so only record.
    walk->raw_frames.push_back({pc, is_activation});
    return DWARF_CB_OK;
  } catch (...) {  // never unwind a C++ exception through libdwfl's C frames
    walk->stack->error = "out of memory while unwinding";
    return DWARF_CB_ABORT;
  }
}

// Live: name and state as /proc shows them before we stop the thread.
void read_live_thread_facts(int pid, ThreadStack* stack) {
  std::string task = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(stack->tid);
  if (std::optional<ThreadStat> stat = thread_stat(pid, stack->tid)) {
    stack->name = stat->name;
    stack->state = stat->state;
  }
  // "34 0x0 ..." in a system call, "-1 ..." blocked outside one, "running".
  std::optional<std::string> syscall_text = read_proc_file(task + "/syscall");
  if (syscall_text && !syscall_text->empty() && std::isdigit(static_cast<unsigned char>((*syscall_text)[0])))
    stack->syscall = std::atoi(syscall_text->c_str());
}

bool thread_has_ended(int pid, int tid) {
  std::string task = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid);
  return access(task.c_str(), F_OK) != 0 && errno == ENOENT;
}

// Why the word at `address` of a live process cannot be read, or "" when it can. libdwfl's
// /proc reader ends a walk quietly when a stack read fails: this tells such a cut from the
// outermost frame.
// The process's /proc/PID/mem is opened once per unwind (mem_fd).
std::string live_read_failure(int mem_fd, uint64_t address) {
  if (mem_fd < 0) return "";  // cannot tell: say nothing rather than guess
  uint64_t word = 0;
  ssize_t got = pread(mem_fd, &word, sizeof word, static_cast<off_t>(address));
  return got == static_cast<ssize_t>(sizeof word) ? "" : got < 0 ? std::strerror(errno) : "short read";
}

// Live: libdwfl is told the threads are stopped already (it would PTRACE_ATTACH,
// a SIGSTOP that outlives us if we die mid-unwind); we seize and interrupt the
// thread instead, and the stop ends on detach or when ncclscope dies.
int unwind_stopped_live_thread(int pid, Dwfl_Thread* thread, ThreadWalk* thread_walk,
                               std::string* error) {
  try {
    ThreadFreezer stopped(pid, thread_walk->stack->tid);
    if (!stopped.is_stopped(thread_walk->stack->tid)) {
      *error = stopped.unstopped_threads().empty() ? "thread ended before it could be stopped"
                                                   : stopped.why_unstopped(thread_walk->stack->tid) +
                                                         ", so its user stack is not read";
      return -1;
    }
    int result = dwfl_thread_getframes(thread, on_frame, thread_walk);
    if (result == -1) *error = "dwfl_thread_getframes: " + dwfl_error_text();
    if (result == 0 && thread_walk->stack_pointer) {
      std::string unreadable = live_read_failure(thread_walk->session->live_memory.fd(), *thread_walk->stack_pointer);
      if (!unreadable.empty()) {
        std::ostringstream text;
        text << "stack memory unreadable at its stack pointer 0x" << std::hex << *thread_walk->stack_pointer
             << std::dec << " (" << unreadable << ")";
        *error = text.str();
        result = -1;
      }
    }
    return result;
  } catch (const BadInput& refused) {  // already traced (gdb -p), or not ours to trace
    *error = refused.what();
    return -1;
  }
}

// One thread as unwound, before symbolization.
struct UnwoundThread {
  ThreadWalk walk{};
  int result = 0;
  std::string getframes_error;
};

struct ProcessWalk {
  UnwindSession* session;
  Dwfl* dwfl;
  int pid;
  std::vector<ThreadStack>* threads;
  std::vector<UnwoundThread> unwound;  // one per entry of *threads
  size_t threads_left_out = 0;
};

// Why dwfl_thread_getframes failed: a thread the front end gave no registers, a stack read
// Target::read refused (libdwfl's own message says nothing there), else libdwfl's message.
std::string getframes_failure(UnwindSession* session, int tid) {
  auto noted = session->core_threads.find(tid);
  if (noted != session->core_threads.end() && noted->second.prstatus.empty())
    return "no registers: " + (noted->second.registers_unavailable.empty() ? std::string("none saved")
                                                                            : noted->second.registers_unavailable);
  if (!session->read_failure.empty()) return "dwfl_thread_getframes: stack memory unreadable: " + session->read_failure;
  return "dwfl_thread_getframes: " + dwfl_error_text();
}

// Phase 1, per thread under dwfl_getthreads: its facts and raw frames (a live thread is stopped
// only for this). Symbols wait for phase 2, so a module's symbol index, built once per run
// while other ranks wait for it, never holds up this process's stops.
int on_thread(Dwfl_Thread* thread, void* arg) {
  auto* walk = static_cast<ProcessWalk*>(arg);
  try {
    if (walk->threads->size() >= walk->session->options->max_threads) {
      ++walk->threads_left_out;
      return DWARF_CB_OK;
    }
    walk->threads->emplace_back();
    ThreadStack* stack = &walk->threads->back();
    stack->tid = dwfl_thread_tid(thread);
    if (walk->session->live) {
      read_live_thread_facts(walk->pid, stack);
    } else {
      auto noted = walk->session->core_threads.find(stack->tid);
      if (noted != walk->session->core_threads.end()) {
        stack->name = noted->second.name;  // cores name only the main thread (NT_PRPSINFO)
        stack->syscall = syscall_of(noted->second).value_or(-1);
      }
    }
    UnwoundThread& unwound = walk->unwound.emplace_back();
    unwound.walk = ThreadWalk{walk->session, stack, {}, false, std::nullopt};
    if (walk->session->live) {
      unwound.result = unwind_stopped_live_thread(walk->pid, thread, &unwound.walk, &unwound.getframes_error);
    } else {
      walk->session->read_failure.clear();
      unwound.result = dwfl_thread_getframes(thread, on_frame, &unwound.walk);
      // libdwfl ends a walk quietly when a stack read fails in its fallback unwinder: that is
      // a cut, not the outermost frame (Target::read reads only; libdwfl's core reader: never set).
      if (unwound.result == 0 && !walk->session->read_failure.empty()) unwound.result = -1;
      if (unwound.result == -1) unwound.getframes_error = getframes_failure(walk->session, stack->tid);
    }
    return DWARF_CB_OK;
  } catch (...) {
    return DWARF_CB_ABORT;
  }
}

// Phase 2: symbols, the cut reason, what the thread is blocked in. False for a live thread
// that ended between the listing and the attach (not part of the state).
bool finish_thread(ProcessWalk* walk, UnwoundThread* unwound, ThreadStack* stack) {
  ThreadWalk& thread_walk = unwound->walk;
  int result = unwound->result;
  for (const RawFrame& raw : thread_walk.raw_frames)
    stack->frames.push_back(symbolize(walk->session, walk->dwfl, raw.pc, raw.is_activation));
  std::string cut_reason;
  size_t real = real_frame_count(walk->dwfl, stack->frames, &cut_reason);
  if (real < stack->frames.size()) {
    stack->frames.resize(real);
    stack->error = cut_reason;
    thread_walk.truncated = false;
    result = 0;
  }
  if (thread_walk.truncated) {
    stack->error = "stopped after " + std::to_string(stack->frames.size()) + " frames (max_frames)";
  } else if (result == -1 && stack->error.empty()) {
    // Say where it stopped: usually a module without its file (no CFI there).
    stack->error = unwound->getframes_error;
    if (!stack->frames.empty()) {
      const StackFrame& last = stack->frames.back();
      stack->error += " (after frame #" + std::to_string(stack->frames.size() - 1) + " in " +
                      (last.module.empty() ? std::string("unmapped code") : last.module) + ")";
    }
  }
  if (walk->session->live && stack->frames.empty() && thread_has_ended(walk->pid, stack->tid)) return false;
  stack->blocked_in = classify_thread_blocked_in(*stack);
  return true;
}

// Every module the raw frames are in, asked for before the first lookup: their indexes are built
// at once, on threads of their own where they can be (a JAX process waits for two large ones).
void request_symbol_indexes(UnwindSession* session, Dwfl* dwfl, const ProcessWalk& walk) {
  for (const UnwoundThread& unwound : walk.unwound)
    for (const RawFrame& raw : unwound.walk.raw_frames) {
      Dwfl_Module* module = dwfl_addrmodule(dwfl, lookup_address(raw.pc, raw.is_activation));
      GElf_Addr bias = 0;
      if (module == nullptr || session->requested_indexes.count(module) > 0 || dwfl_module_getelf(module, &bias) == nullptr)
        continue;
      session->requested_indexes.emplace(module, SymbolIndexCache::run_wide().request(module_build_id(module), module));
    }
}

void walk_threads(UnwindSession* session, Dwfl* dwfl, int pid, const std::string& subject,
                  std::vector<ThreadStack>* threads) {
  ProcessWalk walk{session, dwfl, pid, threads, {}};
  {
    PhaseTimer timer("stacks.unwind");
    if (dwfl_getthreads(dwfl, on_thread, &walk) == -1)
      warn(session, "stacks " + subject + ": dwfl_getthreads: " + dwfl_error_text());
  }
  PhaseTimer timer("stacks.symbolize");
  request_symbol_indexes(session, dwfl, walk);
  std::vector<ThreadStack> finished;
  finished.reserve(threads->size());
  for (size_t i = 0; i < walk.unwound.size(); ++i)
    if (finish_thread(&walk, &walk.unwound[i], &(*threads)[i])) finished.push_back(std::move((*threads)[i]));
  threads->swap(finished);
  if (walk.threads_left_out > 0)
    warn(session, "stacks " + subject + ": " + std::to_string(walk.threads_left_out) +
                      " threads left out (max_threads " +
                      std::to_string(session->options->max_threads) + ")");
  std::sort(threads->begin(), threads->end(),
            [](const ThreadStack& a, const ThreadStack& b) { return a.tid < b.tid; });
}

char* default_debuginfo_path = nullptr;

const Dwfl_Callbacks kCoreCallbacks = {
    core_find_elf,
    dwfl_standard_find_debuginfo,
    dwfl_offline_section_address,
    &default_debuginfo_path,
};

const Dwfl_Callbacks kLiveCallbacks = {
    dwfl_linux_proc_find_elf,
    dwfl_standard_find_debuginfo,
    nullptr,
    &default_debuginfo_path,
};

// Restores current_core_session on every exit path.
struct CoreSessionScope {
  explicit CoreSessionScope(UnwindSession* session) { current_core_session = session; }
  ~CoreSessionScope() { current_core_session = nullptr; }
};

}  // namespace

// Cores and callback targets: one unwind at a time. Two cores unwound at once (triage --jobs 2)
// cut some stacks short at random (libc's CFI lost after its first frame; still seen with
// elfutils 0.188 on 2026-12-06, 6 of 20 runs, cause not found). Live processes do not take it:
// each has its own Dwfl, and concurrent live unwinds equal serial ones (stacks_concurrent_test).
static std::mutex& libdwfl_mutex() {
  static std::mutex mutex;
  return mutex;
}

namespace {

// libdwfl refuses some cores outright ("address out of range": an ELF image it finds inside a
// mapping that overlaps a real module, seen on real PyTorch rank cores and their slices). Then
// each file the core's NT_FILE maps from offset 0 is reported by its address span, as
// libdwfl's own /proc/PID/maps reader does; find_elf opens the files as before.
int report_mapped_files(Dwfl* dwfl, Target& core) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> spans;
  std::map<std::string, bool> has_header;
  for (const MappedFile& mapping : core.mapped_files()) {
    if (mapping.path.empty() || mapping.path[0] != '/' || mapping.path.rfind("/dev/", 0) == 0) continue;
    auto [span, inserted] = spans.try_emplace(mapping.path, mapping.start, mapping.end);
    if (!inserted) {
      span->second.first = std::min(span->second.first, mapping.start);
      span->second.second = std::max(span->second.second, mapping.end);
    }
    if (mapping.file_offset == 0) has_header[mapping.path] = true;
  }
  dwfl_report_begin(dwfl);
  int reported = 0;
  for (const auto& [path, span] : spans) {
    if (!has_header[path]) continue;
    Dwfl_Module* module = dwfl_report_module(dwfl, path.c_str(), span.first, span.second);
    if (module == nullptr) continue;
    ++reported;
    // The build-id the target holds, as libdwfl's core reporting records it: find_elf then
    // rejects a file of another build (open_candidate), as it does for a core.
    std::optional<MappedFile> header = first_mapping_of(core, path);
    std::optional<std::string> build_id =
        header ? build_id_in_memory(core, path, header->start).build_id : std::nullopt;
    std::vector<unsigned char> bits = build_id ? bytes_of_hex(*build_id) : std::vector<unsigned char>{};
    if (!bits.empty()) dwfl_module_report_build_id(module, bits.data(), bits.size(), 0);
  }
  return reported;
}

// A core through the Target that opened it: its libelf handle for libdwfl's module reporting
// and thread registers, its parsed notes for the entry point, names and system calls.
std::vector<ThreadStack> unwind_core_target(Target& core, const StackOptions& options,
                                            std::vector<std::string>* warnings) {
  std::lock_guard<std::mutex> one_unwind_at_a_time(libdwfl_mutex());
  std::vector<ThreadStack> threads;
  UnwindSession session(options, warnings);
  const std::string subject = core.describe();
  Elf* elf = core.core_elf();
  if (elf == nullptr) {
    warn(&session, "stacks " + subject + ": no core file to unwind from");
    return threads;
  }
  session.entry_point = auxv_value(core.auxv(), AT_ENTRY).value_or(0);
  for (ThreadInfo& thread : core.threads()) {
    int tid = thread.tid;
    session.core_threads[tid] = std::move(thread);
  }
  CoreSessionScope scope(&session);
  DwflPtr dwfl(dwfl_begin(&kCoreCallbacks));
  if (!dwfl) {
    warn(&session, "stacks " + subject + ": dwfl_begin: " + dwfl_error_text());
    return threads;
  }
  // libdwfl opens the executable itself: hand it only a regular file (a FIFO blocks the open).
  const char* executable = nullptr;
  std::string why;
  if (!options.executable.empty() && try_open_regular_file(options.executable, &why).ok())
    executable = options.executable.c_str();
  else if (!options.executable.empty())
    warn(&session, "stacks " + subject + ": executable " + options.executable + ": " + why + ": not used");
  if (dwfl_core_file_report(dwfl.get(), elf, executable) < 0) {
    std::string refused = dwfl_error_text();
    if (report_mapped_files(dwfl.get(), core) == 0) {
      warn(&session, "stacks " + subject + ": dwfl_core_file_report: " + refused);
      return threads;
    }
    warn(&session, "stacks " + subject + ": libdwfl refused the core's module list (" + refused +
                       "): modules reported from NT_FILE instead");
  }
  dwfl_report_end(dwfl.get(), nullptr, nullptr);
  if (dwfl_core_file_attach(dwfl.get(), elf) < 0) {
    warn(&session, "stacks " + subject + ": dwfl_core_file_attach: " + dwfl_error_text());
    return threads;
  }
  walk_threads(&session, dwfl.get(), core.pid(), subject, &threads);
  return threads;
}

// --- Over a Target alone: the registers its threads carry, its memory through Target::read ---

struct TargetThreads {
  Target* target;
  UnwindSession* session;
  std::vector<ThreadInfo> threads;  // libdwfl's thread argument points into it: never resized
};

// *thread_argp is libdwfl's iteration state and then the thread's argument: its ThreadInfo.
pid_t target_next_thread(Dwfl* /*dwfl*/, void* dwfl_arg, void** thread_argp) {
  auto* walk = static_cast<TargetThreads*>(dwfl_arg);
  size_t next = *thread_argp == nullptr
                    ? 0 : static_cast<size_t>(static_cast<const ThreadInfo*>(*thread_argp) - walk->threads.data()) + 1;
  if (next >= walk->threads.size()) return 0;
  *thread_argp = &walk->threads[next];
  return walk->threads[next].tid;
}

bool target_memory_read(Dwfl* /*dwfl*/, Dwarf_Addr address, Dwarf_Word* result, void* dwfl_arg) {
  auto* walk = static_cast<TargetThreads*>(dwfl_arg);
  try {
    ReadError error;
    if (walk->target->read(address, result, sizeof *result, &error)) return true;
    walk->session->read_failure = error.message();
  } catch (...) {  // never unwind a C++ exception through libdwfl's C frames
    walk->session->read_failure = hex(address) + ": read failed";
  }
  return false;
}

// The innermost frame's registers from the thread's NT_PRSTATUS (a core's, or the one built
// from what a front end read); false, so no frames, for a thread without them.
bool target_set_initial_registers(Dwfl_Thread* thread, void* thread_arg) {
  std::optional<std::array<uint64_t, 17>> registers = dwarf_registers_of(*static_cast<const ThreadInfo*>(thread_arg));
  if (!registers) return false;
  static_assert(sizeof(Dwarf_Word) == sizeof(uint64_t), "x86-64 registers are 64-bit words");
  if (!dwfl_thread_state_registers(thread, 0, registers->size(), registers->data())) return false;
  dwfl_thread_state_register_pc(thread, (*registers)[16]);  // DWARF 16: rip
  return true;
}

const Dwfl_Thread_Callbacks kTargetThreadCallbacks = {
    target_next_thread, nullptr, target_memory_read, target_set_initial_registers, nullptr, nullptr,
};

// An x86-64 ELF header alone tells dwfl_attach_state the architecture, so that it needs no
// module's file (else it takes the first module whose file is found here, and with none found
// no thread would get even its innermost frame).
struct ArchitectureElf {
  ArchitectureElf() {
    Elf64_Ehdr header{};
    std::memcpy(header.e_ident, ELFMAG, SELFMAG);
    header.e_ident[EI_CLASS] = ELFCLASS64;
    header.e_ident[EI_DATA] = ELFDATA2LSB;
    header.e_ident[EI_VERSION] = EV_CURRENT;
    header.e_type = ET_CORE;
    header.e_machine = EM_X86_64;
    header.e_version = EV_CURRENT;
    header.e_ehsize = sizeof header;
    bytes.resize(sizeof header);
    std::memcpy(bytes.data(), &header, sizeof header);
    elf = elf_memory(bytes.data(), bytes.size());
  }
  ~ArchitectureElf() {
    if (elf != nullptr) elf_end(elf);
  }
  std::vector<char> bytes;
  Elf* elf = nullptr;
};

// Modules from the target's file mappings (with the build-ids its memory holds), and the vDSO
// from its memory when a region is named "[vdso]" (gdb's `info proc mappings` names it).
int report_target_modules(UnwindSession* session, Dwfl* dwfl, Target& target) {
  int reported = report_mapped_files(dwfl, target);
  for (const MemoryRegion& region : target.regions()) {
    if (region.path != "[vdso]" || region.size() == 0 || region.size() > (1u << 20)) continue;
    std::vector<char> image(region.size());
    if (!target.read(region.start, image.data(), image.size(), nullptr) ||
        std::memcmp(image.data(), ELFMAG, SELFMAG) != 0)
      break;
    session->vdso_image = std::move(image);
    if (dwfl_report_module(dwfl, "[vdso]", region.start, region.end) != nullptr) ++reported;
    break;
  }
  return reported;
}

// Any target: threads from Target::threads() with the registers they carry, stack memory
// through Target::read, modules from Target::mapped_files(); symbols found and build-ids
// checked as for a core (core_find_elf). A gdb-supplied target gets its stacks this way.
std::vector<ThreadStack> unwind_target_threads(Target& target, const StackOptions& options,
                                               std::vector<std::string>* warnings) {
  std::lock_guard<std::mutex> one_unwind_at_a_time(libdwfl_mutex());
  std::vector<ThreadStack> threads;
  UnwindSession session(options, warnings);
  const std::string subject = target.describe();
  TargetThreads walk{&target, &session, {}};
  for (ThreadInfo& thread : target.threads()) {
    if (thread.tid <= 0) {
      warn(&session, "stacks " + subject + ": a thread without a thread id left out");
      continue;
    }
    walk.threads.push_back(std::move(thread));
  }
  if (walk.threads.empty()) {
    warn(&session, "stacks " + subject + ": no core file, no process of ours and no thread registers to unwind from");
    return threads;
  }
  size_t with_registers = 0;
  for (const ThreadInfo& thread : walk.threads) {
    session.core_threads[thread.tid] = thread;
    if (!thread.prstatus.empty()) ++with_registers;
  }
  if (with_registers == 0)  // one line; each thread also says why in its "error"
    warn(&session, "stacks " + subject + ": no thread has registers (" +
                       (walk.threads.front().registers_unavailable.empty() ? std::string("none given")
                                                                          : walk.threads.front().registers_unavailable) +
                       "): threads are listed without frames");
  session.entry_point = auxv_value(target.auxv(), AT_ENTRY).value_or(0);
  session.executable_name = basename_of(options.executable.empty() ? target.executable() : options.executable);
  if (!options.executable.empty()) session.executable_build_id = build_id_of_file(options.executable).value_or("");
  elf_version(EV_CURRENT);
  ArchitectureElf architecture;  // outlives the Dwfl (declared first): libdwfl keeps its backend
  CoreSessionScope scope(&session);
  DwflPtr dwfl(dwfl_begin(&kCoreCallbacks));
  if (!dwfl || architecture.elf == nullptr) {
    warn(&session, "stacks " + subject + ": dwfl_begin: " + dwfl_error_text());
    return threads;
  }
  report_target_modules(&session, dwfl.get(), target);
  dwfl_report_end(dwfl.get(), nullptr, nullptr);
  if (!dwfl_attach_state(dwfl.get(), architecture.elf, target.pid(), &kTargetThreadCallbacks, &walk)) {
    warn(&session, "stacks " + subject + ": dwfl_attach_state: " + dwfl_error_text());
    return threads;
  }
  walk_threads(&session, dwfl.get(), target.pid(), subject, &threads);
  return threads;
}

}  // namespace

std::vector<ThreadStack> unwind_threads(Target& target, const StackOptions& options,
                                        std::vector<std::string>* warnings) {
  if (target.is_core()) return unwind_core_target(target, options, warnings);
  if (target.is_local_process() && target.pid() > 0) {
    target.resume();  // libdwfl stops each thread itself: a freeze we hold would refuse it
    return unwind_live_threads(target.pid(), options, warnings);
  }
  return unwind_target_threads(target, options, warnings);
}

std::vector<ThreadStack> unwind_threads_over_target(Target& target, const StackOptions& options,
                                                    std::vector<std::string>* warnings) {
  return unwind_target_threads(target, options, warnings);
}

std::vector<ThreadStack> unwind_core_threads(const std::string& core_path,
                                             const StackOptions& options,
                                             std::vector<std::string>* warnings) {
  std::unique_ptr<CoreFile> core;
  try {
    core = open_core_file(core_path, options.executable);
  } catch (const BadInput& unusable) {
    if (warnings != nullptr) warnings->push_back(std::string("stacks ") + unusable.what());
    return {};
  }
  if (warnings != nullptr)
    for (const std::string& warning : core->warnings()) warnings->push_back("stacks " + warning);
  return unwind_core_target(*core, options, warnings);
}

std::vector<ThreadStack> unwind_live_threads(int pid, const StackOptions& options,
                                             std::vector<std::string>* warnings) {
  std::vector<ThreadStack> threads;
  UnwindSession session(options, warnings, /*live_process=*/true);
  const std::string subject = "pid " + std::to_string(pid);
  elf_version(EV_CURRENT);
  PhaseTimer attach_timer("stacks.attach");
  DwflPtr dwfl(dwfl_begin(&kLiveCallbacks));
  if (!dwfl) {
    warn(&session, "stacks " + subject + ": dwfl_begin: " + dwfl_error_text());
    return threads;
  }
  int report_error = dwfl_linux_proc_report(dwfl.get(), pid);
  if (report_error != 0) {
    warn(&session, "stacks " + subject + ": dwfl_linux_proc_report: " +
                       (report_error > 0 ? std::strerror(report_error) : dwfl_error_text()));
    return threads;
  }
  dwfl_report_end(dwfl.get(), nullptr, nullptr);
  int attach_error = dwfl_linux_proc_attach(dwfl.get(), pid, /*assume_ptrace_stopped=*/true);
  if (attach_error != 0) {
    warn(&session, "stacks " + subject + ": dwfl_linux_proc_attach: " +
                       (attach_error > 0 ? std::strerror(attach_error) : dwfl_error_text()));
    return threads;
  }
  session.live_memory = try_open_regular_file("/proc/" + std::to_string(pid) + "/mem", nullptr);
  attach_timer.stop();
  walk_threads(&session, dwfl.get(), pid, subject, &threads);
  return threads;
}

nlohmann::json to_json(const StackFrame& frame) {
  nlohmann::json out;
  out["pc"] = hex(frame.pc);
  if (frame.function.empty()) {
    out["function"] = nullptr;
  } else {
    out["function"] = valid_utf8(frame.function);
  }
  out["module"] = valid_utf8(frame.module);
  out["offset"] = frame.offset;
  return out;
}

nlohmann::json to_json(const ThreadStack& thread) {
  nlohmann::json out;
  out["tid"] = thread.tid;
  out["name"] = valid_utf8(thread.name);
  out["state"] = thread.state == '?' ? nlohmann::json(nullptr)
                                     : nlohmann::json(std::string(1, thread.state));
  nlohmann::json frames = nlohmann::json::array();
  for (const StackFrame& frame : thread.frames) frames.push_back(to_json(frame));
  out["frames"] = std::move(frames);
  out["blocked_in"] = thread.blocked_in;
  if (thread.syscall >= 0) out["syscall"] = syscall_name(thread.syscall);
  if (!thread.error.empty()) out["error"] = valid_utf8(thread.error);
  return out;
}

}  // namespace nsc
