// classify_blocked_in: what a thread waits in, from its frames' function names.
#include <algorithm>
#include <array>
#include <string_view>

#include "stacks/blocked_in.h"
#include "stacks/thread_stacks.h"
#include "util/json_access.h"
#include "util/strings.h"

namespace nsc {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// Removes the parameter list, "[clone ...]" suffixes and template arguments at
// depth 0 of a demangled name; keeps qualifiers.
std::string strip_signature(std::string_view name) {
  std::string out;
  int template_depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '(' && template_depth == 0) {
      // "(anonymous namespace)::" is a qualifier, not a parameter list.
      if (starts_with(name.substr(i), "(anonymous namespace)")) {
        out += "anon";
        i += std::string_view("(anonymous namespace)").size() - 1;
        continue;
      }
      break;
    }
    if (c == '<') ++template_depth;
    else if (c == '>' && template_depth > 0) --template_depth;
    else if (template_depth == 0) out += c;
  }
  return out;
}

struct NameClass {
  std::string_view prefix;  // matched against the bare name
  bool exact;               // whole name, not prefix
  const char* blocked_in;
  int level;                // 1 = strongest (see thread_stacks.h)
};

// Per level, the innermost match wins; lower level beats higher level.
constexpr std::array<NameClass, 33> kNameClasses{{
    {"ncclCommInitRank", false, "ncclCommInitRank", 1},
    {"ncclCommInitAll", false, "ncclCommInitRank", 1},
    {"ncclCommSplit", false, "ncclCommInitRank", 1},
    {"ncclGroupEnd", false, "nccl-group-end", 1},
    {"groupLaunch", false, "nccl-group-end", 1},
    {"cudaStreamSynchronize", false, "cudaStreamSynchronize", 2},
    {"cuStreamSynchronize", false, "cudaStreamSynchronize", 2},
    {"cudaApiStreamSynchronize", false, "cudaStreamSynchronize", 2},
    {"cudaEventSynchronize", false, "cudaEventSynchronize", 2},
    {"cuEventSynchronize", false, "cudaEventSynchronize", 2},
    {"cudaApiEventSynchronize", false, "cudaEventSynchronize", 2},
    {"cudaDeviceSynchronize", false, "cudaDeviceSynchronize", 2},
    {"cuCtxSynchronize", false, "cudaDeviceSynchronize", 2},
    {"cudaApiDeviceSynchronize", false, "cudaDeviceSynchronize", 2},
    {"ncclProxyProgress", true, "nccl-proxy-progress", 3},
    {"progressOps", true, "nccl-proxy-progress", 3},
    {"ncclProxyService", false, "nccl-proxy-service", 3},
    {"bootstrap", false, "nccl-bootstrap", 3},
    {"poll", true, "poll/epoll", 4},
    {"ppoll", true, "poll/epoll", 4},
    {"epoll_wait", true, "poll/epoll", 4},
    {"epoll_pwait", true, "poll/epoll", 4},
    {"epoll_pwait2", true, "poll/epoll", 4},
    {"select", true, "poll/epoll", 4},
    {"pselect", true, "poll/epoll", 4},
    {"pselect6", true, "poll/epoll", 4},
    {"nanosleep", true, "sleep", 4},
    {"clock_nanosleep", true, "sleep", 4},
    {"sleep", true, "sleep", 4},
    {"usleep", true, "sleep", 4},
    {"pause", true, "sleep", 4},
    {"sigsuspend", true, "sleep", 4},
    {"nanosleep64", true, "sleep", 4},
}};

// Any other CUDA API entry point (cudaLaunchKernel, cudaMemcpy, cuMemFree_v2...):
// they block too (lazy module loading behind a spinning NCCL kernel, implicit syncs).
// Below NCCL's own threads, which call CUDA as part of their loop.
constexpr NameClass kOtherCudaCall{"", false, "cuda-call", 3};
constexpr int kOtherCudaCallRank = 35;  // between level 3 (30) and level 4 (40)

bool is_cuda_api_name(const std::string& bare) {
  auto upper_at = [&](size_t i) { return bare.size() > i && bare[i] >= 'A' && bare[i] <= 'Z'; };
  return (starts_with(bare, "cuda") && upper_at(4)) || (starts_with(bare, "cu") && upper_at(2));
}

const NameClass* match_name_class(const std::string& bare) {
  if (bare.empty()) return nullptr;
  for (const NameClass& name_class : kNameClasses) {
    if (name_class.exact ? bare == name_class.prefix : starts_with(bare, name_class.prefix))
      return &name_class;
  }
  if (is_cuda_api_name(bare)) return &kOtherCudaCall;
  return nullptr;
}

int preference_rank(const NameClass* name_class) {
  return name_class == &kOtherCudaCall ? kOtherCudaCallRank : name_class->level * 10;
}

// glibc and the dynamic loader: frames there say nothing about who runs the thread.
bool is_runtime_module(const std::string& module) {
  return starts_with(module, "libc.so") || starts_with(module, "libc-") ||
         starts_with(module, "ld-linux") || starts_with(module, "ld-") ||
         starts_with(module, "libpthread") || starts_with(module, "linux-vdso") ||
         starts_with(module, "[vdso");
}

// CUDA and NCCL libraries: a thread inside one whose function is not named
// waits in a call we cannot name; "user-code" would wrongly say "not in CUDA/NCCL".
bool is_cuda_or_nccl_module(const std::string& module) {
  return starts_with(module, "libcuda.so") || starts_with(module, "libcudart.so") ||
         starts_with(module, "libnccl.so") || starts_with(module, "libnccl-net");
}

std::string classify_by_outermost_code(const std::vector<StackFrame>& frames) {
  for (const StackFrame& frame : frames)
    if (is_cuda_or_nccl_module(frame.module)) return "unknown";
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (it->module.empty() || is_runtime_module(it->module)) continue;
    return is_shared_object_module(it->module) ? "unknown" : "user-code";
  }
  return "unknown";
}

struct SyscallFacts {
  int number;
  const char* name;
  const char* blocked_in;  // nullptr: no class of its own
};

// x86-64 numbers (asm/unistd_64.h) of the calls threads usually wait in.
// restart_syscall is what a blocking call becomes after a ptrace stop (an earlier
// unwind or debugger attach): the original call is not known from the number then.
constexpr std::array<SyscallFacts, 25> kX8664Syscalls{{
    {219, "restart_syscall", nullptr},
    {0, "read", nullptr},          {7, "poll", "poll/epoll"},
    {16, "ioctl", nullptr},        {23, "select", "poll/epoll"},
    {24, "sched_yield", nullptr},  {34, "pause", "sleep"},
    {35, "nanosleep", "sleep"},    {43, "accept", nullptr},
    {45, "recvfrom", nullptr},     {47, "recvmsg", nullptr},
    {61, "wait4", nullptr},        {128, "rt_sigtimedwait", "sleep"},
    {130, "rt_sigsuspend", "sleep"}, {202, "futex", nullptr},
    {230, "clock_nanosleep", "sleep"}, {232, "epoll_wait", "poll/epoll"},
    {270, "pselect6", "poll/epoll"}, {271, "ppoll", "poll/epoll"},
    {281, "epoll_pwait", "poll/epoll"}, {288, "accept4", nullptr},
    {441, "epoll_pwait2", "poll/epoll"}, {1, "write", nullptr},
    {44, "sendto", nullptr},       {46, "sendmsg", nullptr},
}};

const SyscallFacts* find_syscall(int number) {
  for (const SyscallFacts& facts : kX8664Syscalls)
    if (facts.number == number) return &facts;
  return nullptr;
}

}  // namespace

std::string syscall_name(int number) {
  if (number < 0) return "";
  const SyscallFacts* facts = find_syscall(number);
  return facts != nullptr ? facts->name : "syscall_" + std::to_string(number);
}

std::string bare_function_name(const std::string& function) {
  std::string name = strip_signature(function);
  // A return type before the name ("void* foo<int>") ends at the last space.
  size_t space = name.rfind(' ');
  if (space != std::string::npos) name = name.substr(space + 1);
  size_t scope = name.rfind("::");
  if (scope != std::string::npos) name = name.substr(scope + 2);
  // C-level suffixes from GCC clones: "foo.part.0", "foo.constprop.1", "foo.cold".
  size_t dot = name.find('.');
  if (dot != std::string::npos && dot > 0) name = name.substr(0, dot);
  // glibc internal aliases: "__GI___poll", "__libc_pause", "__poll".
  while (!name.empty() && name[0] == '_') name.erase(0, 1);
  if (starts_with(name, "GI_")) name.erase(0, 3);
  while (!name.empty() && name[0] == '_') name.erase(0, 1);
  if (starts_with(name, "libc_")) name.erase(0, 5);
  // NCCL exports every API twice: ncclX and its profiling alias pncclX.
  if (starts_with(name, "pnccl")) name.erase(0, 1);
  return name;
}

std::string short_function_name(std::string name) {
  const std::string anonymous = "(anonymous namespace)::";
  for (size_t at; (at = name.find(anonymous)) != std::string::npos;) name.erase(at, anonymous.size());
  size_t paren = name.find('(');
  if (paren != std::string::npos && paren > 0) name.resize(paren);
  return name;
}

bool is_shared_object_module(const std::string& module) {
  std::string_view name(module);
  size_t label_end = name.find(" (");  // "<name> (build-id mismatch: ...)"
  if (label_end != std::string_view::npos) name = name.substr(0, label_end);
  if (starts_with(name, "[vdso") || starts_with(name, "linux-vdso")) return true;
  size_t so = name.find(".so");
  return so != std::string_view::npos &&
         (so + 3 == name.size() || name[so + 3] == '.');
}

namespace {

bool is_signal_delivery(const std::string& bare) {
  return bare == "pthread_kill" || bare == "pthread_kill_implementation" || bare == "raise" ||
         bare == "gsignal" || bare == "abort" || starts_with(bare, "faulthandler");
}

}  // namespace

SignalRole signal_role(const std::string& function, const std::string& module) {
  std::string bare = bare_function_name(function);
  if (is_signal_delivery(bare)) return SignalRole::delivery;
  if (is_runtime_module(module) && (function.empty() || bare == "restore_rt")) return SignalRole::trampoline;
  return SignalRole::none;
}

size_t signal_frame_count(const std::vector<SignalRole>& roles) {
  size_t f = 0;
  while (f < roles.size() && roles[f] == SignalRole::delivery) ++f;
  if (f == 0) return 0;
  if (f < roles.size() && roles[f] == SignalRole::trampoline) ++f;
  return f < roles.size() ? f : 0;
}

namespace {

// A thread stopped by the signal that wrote the core has the signal's own frames innermost:
// what it was doing starts below them.
size_t signal_delivery_frames(const std::vector<StackFrame>& frames) {
  std::vector<SignalRole> roles;
  roles.reserve(frames.size());
  for (const StackFrame& frame : frames) roles.push_back(signal_role(frame.function, frame.module));
  return signal_frame_count(roles);
}

std::string classify_with_syscall(const std::vector<StackFrame>& all_frames, int syscall) {
  size_t skipped = signal_delivery_frames(all_frames);
  if (skipped > 0) {
    std::vector<StackFrame> interrupted(all_frames.begin() + static_cast<long>(skipped), all_frames.end());
    return classify_with_syscall(interrupted, -1);  // the syscall was the signal's, not the wait's
  }
  const std::vector<StackFrame>& frames = all_frames;
  const NameClass* best = nullptr;
  for (const StackFrame& frame : frames) {
    const NameClass* name_class = match_name_class(bare_function_name(frame.function));
    if (name_class != nullptr &&
        (best == nullptr || preference_rank(name_class) < preference_rank(best)))
      best = name_class;
  }
  if (best != nullptr) return best->blocked_in;
  // No frame names the wait (libc unsymbolized): the system call itself does.
  const SyscallFacts* facts = find_syscall(syscall);
  if (facts != nullptr && facts->blocked_in != nullptr) return facts->blocked_in;
  return classify_by_outermost_code(frames);
}

}  // namespace

std::string classify_blocked_in(const std::vector<StackFrame>& frames) {
  return classify_with_syscall(frames, -1);
}

namespace {

std::string classify_with_name(const std::vector<StackFrame>& frames,
                               const std::string& thread_name, int syscall) {
  std::string by_frames = classify_with_syscall(frames, syscall);
  bool frames_name_nccl_or_cuda = by_frames != "poll/epoll" && by_frames != "sleep" &&
                                  by_frames != "user-code" && by_frames != "unknown";
  if (frames_name_nccl_or_cuda) return by_frames;
  if (starts_with(thread_name, "NCCL Progress") || starts_with(thread_name, "NCCL GIN Progress"))
    return "nccl-proxy-progress";
  if (starts_with(thread_name, "NCCL Service") || starts_with(thread_name, "NCCL UDS Service"))
    return "nccl-proxy-service";
  if (starts_with(thread_name, "NCCL BootstrapR")) return "nccl-bootstrap";
  return by_frames;
}

}  // namespace

std::string classify_blocked_in(const std::vector<StackFrame>& frames,
                                const std::string& thread_name) {
  return classify_with_name(frames, thread_name, -1);
}

std::string classify_thread_blocked_in(const ThreadStack& thread) {
  return classify_with_name(thread.frames, thread.name, thread.syscall);
}

const StackFrame* innermost_user_frame(const std::vector<StackFrame>& frames) {
  for (const StackFrame& frame : frames) {
    if (!frame.module.empty() && !is_shared_object_module(frame.module)) return &frame;
  }
  return nullptr;
}

namespace {

StackFrame frame_from_json(const nlohmann::json& frame) {
  StackFrame out;
  out.function = json_text(json_member(frame, "function"));
  out.module = json_text(json_member(frame, "module"));
  const nlohmann::json& pc = json_member(frame, "pc");
  if (pc.is_string()) parse_u64(pc.get<std::string>(), &out.pc);
  else if (pc.is_number_unsigned()) out.pc = pc.get<uint64_t>();
  return out;
}

}  // namespace

std::vector<std::string> classify_json_threads(const nlohmann::json& threads) {
  std::vector<std::string> classes;
  if (!threads.is_array()) return classes;
  for (const nlohmann::json& thread : threads) {
    std::vector<StackFrame> frames;
    const nlohmann::json& listed = json_member(thread, "frames");
    if (listed.is_array())
      for (const nlohmann::json& frame : listed) frames.push_back(frame_from_json(frame));
    classes.push_back(thread.is_object() ? classify_blocked_in(frames, json_text(json_member(thread, "name")))
                                         : "unknown");
  }
  return classes;
}

}  // namespace nsc
