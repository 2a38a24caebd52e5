#include "triage/process_view.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "stacks/cxx_exception.h"
#include "triage/summary_helpers.h"
#include "util/errors.h"
#include "util/json_access.h"
#include "util/schemas.h"
#include "util/strings.h"

namespace nsc::triage {

const char* const kCollectiveNames[kNumCollectives] = {"Broadcast", "Reduce", "AllGather",
                                                       "ReduceScatter", "AllReduce"};
const std::array<int, kNumCollectives> kCollectivesByName = [] {
  std::array<int, kNumCollectives> order{};
  for (int c = 0; c < kNumCollectives; ++c) order[c] = c;
  std::sort(order.begin(), order.end(),
            [](int a, int b) { return std::string_view(kCollectiveNames[a]) < kCollectiveNames[b]; });
  return order;
}();


// "ncclPatternRingTwice" -> "ringtwice"; NCCL's enum names, any version.
std::string normalize_pattern(const std::string& raw) {
  std::string pattern = raw;
  const std::string prefix = "ncclPattern";
  if (pattern.rfind(prefix, 0) == 0) pattern = pattern.substr(prefix.size());
  std::transform(pattern.begin(), pattern.end(), pattern.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return pattern;
}

P2pDirection direction_of(const std::string& pattern, const std::string& collective) {
  if (pattern == "send" || collective == "Send") return P2pDirection::kSend;
  if (pattern == "recv" || collective == "Recv") return P2pDirection::kRecv;
  return P2pDirection::kNone;
}


bool is_runtime_function(const std::string& name) {
  for (const char* prefix : {"cuda", "nccl", "libcudart_static", "pthread_", "__", "std::"})
    if (name.rfind(prefix, 0) == 0) return true;
  // Driver API: cuStreamSynchronize, cuLaunchKernel.
  return name.size() > 2 && name[0] == 'c' && name[1] == 'u' && std::isupper(static_cast<unsigned char>(name[2]));
}

const std::string FrameView::kNoLabel;

const std::string* shared_text(std::string_view text) {
  // Every thread's texts in one set, never freed (a view may be copied anywhere); each thread
  // looks in its own bounded index first, without the lock.
  static std::mutex mutex;
  static auto* texts = new std::unordered_set<std::string>;
  thread_local std::unordered_map<std::string, const std::string*> seen;
  thread_local std::string key;  // the lookup's key, its storage reused (no allocation per text)
  key.assign(text);
  if (auto found = seen.find(key); found != seen.end()) return found->second;
  const std::string* shared;
  {
    std::lock_guard<std::mutex> lock(mutex);
    shared = &*texts->insert(key).first;
  }
  if (seen.size() >= 65536) seen.clear();
  seen.emplace(key, shared);
  return shared;
}

void FrameView::set_label(std::string text) {
  label_ = text.empty() ? nullptr : shared_text(text);  // kNoLabel: one identity for the empty label (label_id)
}

const std::string CommView::kNoHashText;

void CommView::set_comm_hash(uint64_t hash) {
  comm_hash = hash;
  comm_hash_text_ = shared_text(hex(hash));
}

namespace {

FrameView build_frame(const std::string& function, const std::string& module, const Maybe<int64_t>& offset,
                      const Maybe<std::string>& pc) {
  FrameView frame;
  std::string base = module.substr(module.find_last_of('/') == std::string::npos
                                       ? 0 : module.find_last_of('/') + 1);
  if (!function.empty()) {
    frame.set_label(function);
  } else if (!base.empty()) {
    frame.set_label(base + (offset ? "+" + hex(static_cast<uint64_t>(*offset)) : ""));
  } else {
    frame.set_label(pc.value_or("??"));
  }
  // Shared objects are libraries; anything else (the executable) is user code, except
  // runtimes linked statically into it (cudart_static: cudaStreamSynchronize, ...).
  frame.user_code = !base.empty() && base.find(".so") == std::string::npos && !is_runtime_function(function);
  frame.signal_role = signal_role(function, base);
  return frame;
}

// A slot of make_frame's recent frames: the names' lengths and a few of their bytes (a
// collision costs only a table lookup). `function` is not empty.
size_t recent_slot(const std::string& function, std::string_view module) {
  auto byte = [](char c) { return static_cast<size_t>(static_cast<unsigned char>(c)); };
  size_t hash = function.size() * 131 + module.size() * 31 + byte(function.back()) * 7 +
                byte(function[function.size() / 2]) * 3 + (module.empty() ? 0 : byte(module[module.size() / 2]));
  return (hash ^ (hash >> 8)) & 255;
}

// Ranks show the same few frames: each is built once per reading thread (bounded), and its
// key is made in one reused buffer (no allocation per frame read).
FrameView table_frame(const std::string& function, std::string_view base_module, const Maybe<int64_t>& offset,
                      const Maybe<std::string>& pc) {
  thread_local std::unordered_map<std::string, FrameView> built;
  thread_local std::string key;
  // Lengths first, as bytes: no two frames share a key, whatever bytes a hostile snapshot puts in them.
  auto append_bytes = [](const auto& value) { key.append(reinterpret_cast<const char*>(&value), sizeof value); };
  key.clear();
  append_bytes(function.size());
  append_bytes(base_module.size());
  key.append(function).append(base_module);
  if (function.empty()) {
    key.push_back(offset ? '+' : '?');
    if (offset) append_bytes(*offset);
    key.push_back(pc ? '=' : '?');
    if (pc) key.append(*pc);
  }
  if (auto found = built.find(key); found != built.end()) return found->second;
  if (built.size() >= 4096) built.clear();
  return built.emplace(key, build_frame(function, std::string(base_module), offset, pc)).first->second;
}

}  // namespace

FrameView make_frame(const std::string& function, const std::string& module, const Maybe<int64_t>& offset,
                     const Maybe<std::string>& pc, std::vector<std::string>* notes) {
  // "libc.so.6 (build-id mismatch: core a4a7..., file 93ac...)": the note goes to the input.
  size_t note = module.find(" (");
  if (note != std::string::npos && std::find(notes->begin(), notes->end(), module) == notes->end())
    notes->push_back(module);
  std::string_view base_module(module.data(), note == std::string::npos ? module.size() : note);
  // A named frame is most often one of those just read (every rank's threads show the same
  // stacks): found by its names alone, without the table's key.
  struct RecentFrame {
    std::string function, module;
    FrameView frame;
  };
  thread_local std::array<RecentFrame, 256> recent;
  RecentFrame* slot = function.empty() ? nullptr : &recent[recent_slot(function, base_module)];
  if (slot && slot->function == function && slot->module == base_module) return slot->frame;
  FrameView frame = table_frame(function, base_module, offset, pc);
  if (slot) *slot = {function, std::string(base_module), frame};
  return frame;
}

FrameView make_python_frame(const std::string& function, const std::string& file, const Maybe<int64_t>& line,
                            const std::string& error) {
  FrameView frame;
  frame.python = frame.user_code = true;
  if (!error.empty()) {
    frame.set_label(error);
    return frame;
  }
  std::string base = file.substr(file.find_last_of('/') == std::string::npos ? 0 : file.find_last_of('/') + 1);
  frame.set_label(function + " (" + base + ":" + (line ? std::to_string(*line) : "?") + ")");
  // Installed packages, the standard library, and PyTorch wherever it sits (a source checkout).
  frame.python_library = file.find("/site-packages/") != std::string::npos ||
                         file.find("/dist-packages/") != std::string::npos ||
                         file.find("/lib/python3.") != std::string::npos || file.find("/torch/") != std::string::npos;
  return frame;
}

void append_unmerged_python(std::vector<FrameView>* frames, std::vector<FrameView> python) {
  frames->insert(frames->end(), std::make_move_iterator(python.begin()), std::make_move_iterator(python.end()));
}

void mark_python_thread(ThreadView* thread) {
  bool has_python = std::any_of(thread->frames.begin(), thread->frames.end(), [](const FrameView& f) { return f.python; });
  if (!has_python) return;
  for (FrameView& frame : thread->frames)
    if (!frame.python) frame.user_code = false;
}

namespace {

// CPython's and pybind11's calling glue between a Python frame and the C function it called.
bool is_python_call_glue(const std::string& label) {
  for (const char* prefix : {"PyObject_Vectorcall", "PyObject_Call", "_PyObject_", "cfunction_", "method_vectorcall",
                             "_PyFunction_Vectorcall", "PyCFunction_", "pybind11::cpp_function::dispatcher"})
    if (label.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

bool is_service_thread(const std::string& blocked_in) {
  return blocked_in == "nccl-proxy-progress" || blocked_in == "nccl-proxy-service" ||
         blocked_in == "nccl-bootstrap" || blocked_in == "poll/epoll";
}


// The thread that called NCCL: the main thread (tid == pid) when present,
// else the first thread that is not an NCCL/CUDA service thread.
int pick_principal_thread(const ProcessView& process) {
  if (process.threads.empty()) return -1;
  if (process.pid)
    for (size_t t = 0; t < process.threads.size(); ++t)
      if (process.threads[t].tid && *process.threads[t].tid == *process.pid) return static_cast<int>(t);
  for (size_t t = 0; t < process.threads.size(); ++t)
    if (!is_service_thread(process.threads[t].blocked_in)) return static_cast<int>(t);
  return 0;
}

std::string CommView::unavailable_reason(const std::string& field) const {
  for (const auto& [key, reason] : unavailable)
    if (key == field) return reason;
  // A whole object may be unavailable ("seq_launched" covers "seq_launched.AllGather").
  for (const auto& [key, reason] : unavailable)
    if (field.rfind(key + ".", 0) == 0) return reason;
  return "";
}

Maybe<int64_t> CommView::total_launched() const {
  int64_t total = 0;
  for (const auto& value : seq_launched) {
    if (!value) return std::nullopt;
    total += *value;
  }
  return total;
}

bool CommView::has_planned_work() const {
  return (n_tasks_coll && *n_tasks_coll > 0) || (n_tasks_p2p && *n_tasks_p2p > 0) ||
         (unlaunched_plans && *unlaunched_plans > 0) || !planned_colls.empty() ||
         !planned_p2p.empty();
}

bool CommView::has_proxy_work_in_flight() const {
  for (const ProxyOpView& op : proxy_ops)
    for (const ProxySubView& sub : op.subs)
      if (!sub.finished()) return true;
  return false;
}

std::string unreadable_reason(const ProcessView& process) {
  if (!process.comms.empty()) return "";
  if (!process.rejected_comms.empty()) return "a communicator found but rejected as corrupt: " + process.rejected_comms.front();
  if (process.build_id_mismatch.value_or(false))
    return "its libnccl's build-id matches no library or profile: communicators not decoded";
  if (process.comms_unknown) return "its communicator list is null (unknown)";
  if (process.target_damaged)
    return "damaged: " + (process.document_errors.empty() ? std::string("target unreadable") : process.document_errors.front());
  return "";
}

std::vector<std::string> input_problems(const ProcessView& process) {
  std::vector<std::string> problems = process.document_errors;
  // A mismatched libnccl leaves no error of its own: still not an `ok` input.
  if (process.build_id_mismatch.value_or(false) && process.comms.empty())
    problems.push_back(unreadable_reason(process));
  if (process.comms_unknown) problems.push_back(unreadable_reason(process));
  for (const CommView& comm : process.comms)
    problems.insert(problems.end(), comm.warnings.begin(), comm.warnings.end());
  return problems;
}

std::string rejected_comms_note(const ProcessView& process) {
  if (process.rejected_comms.empty()) return "";
  std::string more = process.rejected_comms.size() > 1
                         ? " and " + std::to_string(process.rejected_comms.size() - 1) + " more" : "";
  return " (a communicator found but rejected as corrupt: " + process.rejected_comms.front() + more + ")";
}

std::string damage_text(const ProcessView& process) {
  std::vector<std::string> problems = input_problems(process);
  if (problems.empty()) return "";
  std::string more = problems.size() > 1 ? " and " + std::to_string(problems.size() - 1) + " more" : "";
  return "read only in part: " + problems.front() + more;
}

std::string damage_suffix(const ProcessView& process) {
  std::string text = damage_text(process);
  return text.empty() ? "" : " (" + text + ")";
}

std::string damaged_inputs_note(const std::vector<ProcessView>& processes) {
  std::string names;
  size_t damaged = 0;
  for (const ProcessView& process : processes) {
    std::string suffix = damage_suffix(process);
    if (suffix.empty()) continue;
    if (++damaged <= 3) names += (damaged > 1 ? ", " : "") + process.input_name + suffix;
  }
  if (damaged == 0) return "";
  if (damaged > 3) names += " and " + std::to_string(damaged - 3) + " more";
  return "Drawn from " + std::to_string(damaged) + " input(s) read only in part: " + names + ".";
}

bool host_thread_known(const ProcessView& process) {
  const ThreadView* thread = process.principal();
  if (thread == nullptr) return false;
  return !(process.target_damaged && (thread->blocked_in.empty() || thread->blocked_in == "unknown"));
}

bool is_nccl_host_call(const std::string& blocked_in) {
  return blocked_in == "nccl-group-end" || blocked_in == "ncclCommInitRank" ||
         blocked_in == "nccl-bootstrap";
}

bool in_communicator_creation(const ThreadView& thread) {
  if (thread.blocked_in == "ncclCommInitRank") return true;  // ncclCommInitRank*, ncclCommInitAll, ncclCommSplit
  for (const FrameView& frame : thread.frames)
    if (frame.python && (frame.label().rfind("new_group (", 0) == 0 || frame.label().rfind("new_subgroups (", 0) == 0 ||
                         frame.label().rfind("_new_process_group_helper (", 0) == 0))
      return true;
  return false;
}

bool is_gpu_wait(const std::string& blocked_in) {
  return blocked_in == "cudaStreamSynchronize" || blocked_in == "cudaEventSynchronize" ||
         blocked_in == "cudaDeviceSynchronize";
}

bool guessed_gpu_wait(const ThreadView& thread) {
  if (thread.blocked_in != "unknown") return false;
  for (const FrameView& frame : thread.frames)
    if (frame.label().rfind("libcuda.so", 0) == 0 || frame.label().rfind("libnccl.so", 0) == 0) return true;
  return false;
}

// "(anonymous namespace)::park_in_pause((anonymous namespace)::Scenario const&)" -> "park_in_pause".
// The frames of the signal that wrote the core: the thread's own work starts below them.
size_t signal_delivery_frames(const ThreadView& thread) {
  std::vector<SignalRole> roles;
  roles.reserve(thread.frames.size());
  for (const FrameView& frame : thread.frames) roles.push_back(frame.signal_role);
  return signal_frame_count(roles);
}

std::string frame_text(const FrameView& frame) {
  return frame.python ? frame.label() : short_function_name(frame.label()) + "()";
}

std::string describe_thread(const ThreadView& thread) {
  std::string text;
  if (!thread.frames.empty()) {
    // The library function user code called (cudaStreamSynchronize, pause) says
    // more than the innermost frame (ioctl, poll).
    size_t first = signal_delivery_frames(thread);
    size_t user = thread.frames.size();
    for (size_t f = first; f < thread.frames.size(); ++f)
      if (thread.frames[f].user_code) {
        user = f;
        break;
      }
    size_t entry = user == first || user == thread.frames.size() ? first : user - 1;
    // Called from Python: name the C function, not the interpreter's calling glue.
    if (user < thread.frames.size() && thread.frames[user].python)
      while (entry > first && is_python_call_glue(thread.frames[entry].label())) --entry;
    text = frame_text(thread.frames[entry]);
    if (user < thread.frames.size() && user != entry) text += " called from " + frame_text(thread.frames[user]);
    // A library's Python function (torch's barrier): the user's own line that called it too.
    if (user < thread.frames.size() && thread.frames[user].python_library)
      for (size_t f = user + 1; f < thread.frames.size(); ++f)
        if (thread.frames[f].python && !thread.frames[f].python_library) {
          text += ", from " + frame_text(thread.frames[f]);
          break;
        }
  } else {
    text = "no stack";
  }
  if (!thread.blocked_in.empty()) text += " [" + thread.blocked_in + "]";
  return text;
}

}  // namespace nsc::triage

namespace nsc::triage {

Maybe<FatalSignalView> summarize_fatal_signal(const nlohmann::json& section) {
  if (!section.is_object() || !section.contains("name") || !section["name"].is_string()) return std::nullopt;
  auto text = [&](const char* key) { return section.contains(key) && section[key].is_string() ? section[key].get<std::string>() : ""; };
  auto flag = [&](const char* key) { return section.contains(key) && section[key] == true; };
  FatalSignalView view;
  view.name = text("name");
  view.origin = text("origin");
  view.failure = flag("failure");
  view.torch_watchdog = flag("torch_watchdog");
  view.uncaught_exception = section.contains("via") && section["via"].is_string();
  view.during_exit = flag("during_exit");
  if (section.contains("site") && section["site"].is_object() && section["site"].contains("in") && section["site"]["in"].is_string())
    view.site_in = section["site"]["in"].get<std::string>();
  view.python_located = section.contains("python_site") && section["python_site"].is_object();
  view.text = text("text");
  if (section.contains("exception")) view.exception = in_flight_exception_text(section["exception"]);
  if (section.contains("tid") && section["tid"].is_number_integer()) view.tid = section["tid"].get<int64_t>();
  return view;
}

}  // namespace nsc::triage
