#include "triage/process_view.h"

#include <algorithm>
#include <cctype>
#include <climits>

#include "triage/summary_helpers.h"
#include "util/errors.h"
#include "util/json_access.h"
#include "util/schemas.h"
#include "util/strings.h"

namespace nsc::triage {

const char* const kCollectiveNames[kNumCollectives] = {"Broadcast", "Reduce", "AllGather",
                                                       "ReduceScatter", "AllReduce"};

namespace {

using nlohmann::json;

const json* member(const json& object, const char* key) { return find_json_member(object, key); }

// Integers beyond int64 are garbage here, not -1.
bool is_int64(const json& value) {
  return value.is_number_integer() &&
         !(value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX));
}

Maybe<int64_t> integer_at(const json& object, const char* key) {
  const json* value = member(object, key);
  if (value == nullptr || !is_int64(*value)) return std::nullopt;
  return value->get<int64_t>();
}

Maybe<bool> boolean_at(const json& object, const char* key) {
  const json* value = member(object, key);
  if (value == nullptr) return std::nullopt;
  // Only true and false: an integer is of the wrong type, so unknown (never true).
  if (value->is_boolean()) return value->get<bool>();
  return std::nullopt;
}

Maybe<std::string> string_at(const json& object, const char* key) {
  const json* value = member(object, key);
  if (value == nullptr || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

std::string text_at(const json& object, const char* key) {
  return string_at(object, key).value_or("");
}

}  // namespace

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

namespace {

std::string shown_value(const json& value) {
  if (value.is_number_unsigned()) return std::to_string(value.get<uint64_t>());
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_string()) return "a string";
  return "a non-integer number";
}

// A scalar the snapshot holds that its field rule refused: unavailable, with the reason.
template <typename T>
void note_refused(const json& object, const char* key, const std::string& field, const Maybe<T>& accepted,
                  const char* expected, CommView* comm) {
  const json* value = member(object, key);
  if (value == nullptr || accepted || !value->is_primitive() || value->is_null()) return;
  comm->unavailable.emplace_back(field, refused_value_reason(shown_value(*value), expected));
  if (comm->warnings.size() < kMaxCommWarnings)
    comm->warnings.push_back(refused_value_warning(comm->position, field, comm->unavailable.back().second));
}

void read_unavailable(const json& object, const std::string& prefix,
                      std::vector<std::pair<std::string, std::string>>* out) {
  const json* map = member(object, "unavailable");
  if (map == nullptr || !map->is_object()) return;
  // The key says the field is unavailable; a reason that is not text is an unknown reason.
  for (auto& [key, reason] : map->items())
    out->emplace_back(prefix + key, reason.is_string() ? reason.get<std::string>() : std::string());
}

ChannelView read_channel(const json& entry) {
  ChannelView channel;
  channel.id = index_rule(integer_at(entry, "id")).value_or(-1);
  if (const json* ring = member(entry, "ring")) {
    channel.ring_prev = neighbour_rule(integer_at(*ring, "prev"));
    channel.ring_next = neighbour_rule(integer_at(*ring, "next"));
  }
  if (const json* tree = member(entry, "tree")) {
    channel.tree_up = neighbour_rule(integer_at(*tree, "up"));
    if (const json* down = member(*tree, "down"); down && down->is_array())
      for (const json& child : *down)
        if (auto rank = index_rule(is_int64(child) ? Maybe<int64_t>(child.get<int64_t>()) : std::nullopt))
          channel.tree_down.push_back(*rank);
  }
  return channel;
}

ProxyOpView read_proxy_op(const json& entry) {
  ProxyOpView op;
  if (auto count = count_rule(integer_at(entry, "op_count"))) op.op_count = static_cast<uint64_t>(*count);
  op.collective = text_at(entry, "collective");
  op.pattern = normalize_pattern(text_at(entry, "pattern"));
  op.direction = direction_of(op.pattern, op.collective);
  if (const json* subs = member(entry, "subs"); subs && subs->is_array()) {
    for (const json& raw : *subs) {
      if (!raw.is_object()) continue;  // garbage entries are skipped, as by the SAX path
      ProxySubView sub;
      sub.channel = index_rule(integer_at(raw, "channel"));
      sub.peer = index_rule(integer_at(raw, "peer"));
      sub.nsteps = count_rule(integer_at(raw, "nsteps"));
      sub.posted = count_rule(integer_at(raw, "posted"));
      sub.received = count_rule(integer_at(raw, "received"));
      sub.transmitted = count_rule(integer_at(raw, "transmitted"));
      sub.done = count_rule(integer_at(raw, "done"));
      sub.send = boolean_at(raw, "send");
      op.subs.push_back(sub);
    }
  }
  return op;
}

void read_planned(const json& planned, CommView* comm) {
  if (!planned.is_object()) return;
  comm->planned_known = true;
  comm->n_tasks_coll = count_rule(integer_at(planned, "n_tasks_coll"));
  comm->n_tasks_p2p = count_rule(integer_at(planned, "n_tasks_p2p"));
  comm->unlaunched_plans = count_rule(integer_at(planned, "unlaunched_plans"));
  comm->in_group = boolean_at(planned, "in_group");
  if (const json* colls = member(planned, "colls"); colls && colls->is_array())
    for (const json& coll : *colls)
      if (coll.is_object()) comm->planned_colls.push_back(text_at(coll, "collective"));
  if (const json* p2p = member(planned, "p2p"); p2p && p2p->is_array()) {
    for (const json& task : *p2p) {
      if (!task.is_object()) continue;
      PlannedP2pView view;
      std::string kind = text_at(task, "kind");
      view.direction = kind == "send" ? P2pDirection::kSend
                       : kind == "recv" ? P2pDirection::kRecv : P2pDirection::kNone;
      view.peer = index_rule(integer_at(task, "peer")).value_or(-1);
      comm->planned_p2p.push_back(view);
    }
  }
}

CommView read_comm(const json& entry, size_t position) {
  CommView comm;
  comm.position = position;
  comm.comm_hash_text = text_at(entry, "comm_hash");
  uint64_t hash = 0;
  if (comm.comm_hash_text.empty() || !parse_u64(comm.comm_hash_text, &hash))
    throw BadInput("communicator " + std::to_string(position) + " has no readable comm_hash");
  comm.comm_hash = hash;
  comm.comm_hash_text = hex(hash);  // one spelling, whatever the writer used
  comm.address = text_at(entry, "address");
  comm.rank = index_rule(integer_at(entry, "rank"));
  note_refused(entry, "rank", "rank", comm.rank, kExpectRank, &comm);
  comm.nranks = size_rule(integer_at(entry, "nranks"));
  note_refused(entry, "nranks", "nranks", comm.nranks, kExpectRankCount, &comm);
  if (const json* seq = member(entry, "seq_launched"); seq && seq->is_object())
    for (int c = 0; c < kNumCollectives; ++c) {
      comm.seq_launched[c] = count_rule(integer_at(*seq, kCollectiveNames[c]));
      note_refused(*seq, kCollectiveNames[c], std::string("seq_launched.") + kCollectiveNames[c],
                   comm.seq_launched[c], kExpectCount, &comm);
    }
  comm.coll_op_count = count_rule(integer_at(entry, "coll_op_count"));
  note_refused(entry, "coll_op_count", "coll_op_count", comm.coll_op_count, kExpectCount, &comm);
  comm.coll_op_count_shared_resources = text_at(entry, "coll_op_count_of") == "ncclSharedResources";
  comm.shared_resources = text_at(entry, "shared_resources");
  if (const json* p2p = member(entry, "p2p_op_count")) {
    comm.p2p_total = count_rule(integer_at(*p2p, "total"));
    if (p2p->is_object()) note_refused(*p2p, "total", "p2p_op_count.total", comm.p2p_total, kExpectCount, &comm);
    read_unavailable(*p2p, "p2p_op_count.", &comm.unavailable);
  }
  if (const json* health = member(entry, "health")) {
    comm.health.async_result = string_at(*health, "async_result");
    comm.health.init_state = string_at(*health, "init_state");
    comm.health.abort_flag = boolean_at(*health, "abort_flag");
    comm.health.destroy_flag = boolean_at(*health, "destroy_flag");
    comm.health.finalize_called = boolean_at(*health, "finalize_called");
    comm.health.revoked = boolean_at(*health, "revoked");
  }
  if (const json* channels = member(entry, "channels"); channels && channels->is_array())
    for (const json& channel : *channels)
      if (channel.is_object()) comm.channels.push_back(read_channel(channel));
  if (const json* ops = member(entry, "proxy_ops"); ops && ops->is_array()) {
    comm.proxy_ops_known = true;
    for (const json& op : *ops)
      if (op.is_object()) comm.proxy_ops.push_back(read_proxy_op(op));
  }
  if (const json* planned = member(entry, "planned")) read_planned(*planned, &comm);
  if (const json* warnings = member(entry, "warnings"); warnings && warnings->is_array())
    for (const json& warning : *warnings)
      if (warning.is_string() && comm.warnings.size() < kMaxCommWarnings)
        comm.warnings.push_back(warning.get<std::string>());
  read_unavailable(entry, "", &comm.unavailable);
  sort_comm_notes(&comm);
  return comm;
}

}  // namespace

bool is_runtime_function(const std::string& name) {
  for (const char* prefix : {"cuda", "nccl", "libcudart_static", "pthread_", "__", "std::"})
    if (name.rfind(prefix, 0) == 0) return true;
  // Driver API: cuStreamSynchronize, cuLaunchKernel.
  return name.size() > 2 && name[0] == 'c' && name[1] == 'u' && std::isupper(static_cast<unsigned char>(name[2]));
}

FrameView make_frame(const std::string& function, std::string module, const Maybe<int64_t>& offset,
                     const Maybe<std::string>& pc, std::vector<std::string>* notes) {
  FrameView frame;
  // "libc.so.6 (build-id mismatch: core a4a7..., file 93ac...)": the note goes to the input.
  size_t note = module.find(" (");
  if (note != std::string::npos) {
    if (std::find(notes->begin(), notes->end(), module) == notes->end()) notes->push_back(module);
    module.resize(note);
  }
  std::string base = module.substr(module.find_last_of('/') == std::string::npos
                                       ? 0 : module.find_last_of('/') + 1);
  if (!function.empty()) {
    frame.label = function;
  } else if (!base.empty()) {
    frame.label = base + (offset ? "+" + hex(static_cast<uint64_t>(*offset)) : "");
  } else {
    frame.label = pc.value_or("??");
  }
  // Shared objects are libraries; anything else (the executable) is user code, except
  // runtimes linked statically into it (cudart_static: cudaStreamSynchronize, ...).
  frame.user_code = !base.empty() && base.find(".so") == std::string::npos && !is_runtime_function(function);
  frame.signal_role = signal_role(function, base);
  return frame;
}

FrameView make_python_frame(const std::string& function, const std::string& file, const Maybe<int64_t>& line,
                            const std::string& error) {
  FrameView frame;
  frame.python = frame.user_code = true;
  if (!error.empty()) {
    frame.label = error;
    return frame;
  }
  std::string base = file.substr(file.find_last_of('/') == std::string::npos ? 0 : file.find_last_of('/') + 1);
  frame.label = function + " (" + base + ":" + (line ? std::to_string(*line) : "?") + ")";
  // Installed packages, the standard library, and PyTorch wherever it sits (a source checkout).
  frame.python_library = file.find("/site-packages/") != std::string::npos ||
                         file.find("/dist-packages/") != std::string::npos ||
                         file.find("/lib/python3.") != std::string::npos || file.find("/torch/") != std::string::npos;
  return frame;
}

void append_unmerged_python(ThreadView* thread, std::vector<FrameView> python) {
  thread->frames.insert(thread->frames.end(), std::make_move_iterator(python.begin()),
                        std::make_move_iterator(python.end()));
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

FrameView read_frame(const json& entry, std::vector<std::string>* notes) {
  return make_frame(text_at(entry, "function"), text_at(entry, "module"), count_rule(integer_at(entry, "offset")),
                    string_at(entry, "pc"), notes);
}

FrameView read_python_frame(const json& entry) {
  return make_python_frame(text_at(entry, "function"), text_at(entry, "file"), integer_at(entry, "line"),
                           text_at(entry, "error"));
}

ThreadView read_thread(const json& entry, std::vector<std::string>* notes) {
  ThreadView thread;
  thread.tid = id_rule(integer_at(entry, "tid"));
  thread.name = text_at(entry, "name");
  thread.blocked_in = text_at(entry, "blocked_in");
  const json* merged = member(entry, "merged_frames");
  bool use_merged = merged && merged->is_array() && !merged->empty();
  if (const json* frames = use_merged ? merged : member(entry, "frames"); frames && frames->is_array())
    for (const json& frame : *frames) {
      if (!frame.is_object()) continue;
      if (use_merged && text_at(frame, "kind") == "python") thread.frames.push_back(read_python_frame(frame));
      else thread.frames.push_back(read_frame(frame, notes));
    }
  const json* python = member(entry, "python");
  const json* python_frames = python ? member(*python, "frames") : nullptr;
  if (!use_merged && python_frames && python_frames->is_array()) {
    std::vector<FrameView> frames;
    for (const json& frame : *python_frames)
      if (frame.is_object()) frames.push_back(read_python_frame(frame));
    append_unmerged_python(&thread, std::move(frames));
  }
  mark_python_thread(&thread);
  return thread;
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

ProcessView summarize_state_document(const nlohmann::json& document, const std::string& input_name,
                                     const std::string& kind) {
  if (!document.is_object())
    throw BadInput(input_name + ": not an " + kStateSchema + " document (top level is not an object)");
  std::string schema = text_at(document, "schema");
  if (schema != kStateSchema)
    throw BadInput(input_name + ": not an " + kStateSchema + " document (schema is " +
                   (schema.empty() ? std::string("missing") : "\"" + schema + "\"") + ")");
  ProcessView process;
  process.input_name = input_name;
  process.kind = kind;
  if (const json* target = member(document, "target")) {
    process.pid = id_rule(integer_at(*target, "pid"));
    process.executable = text_at(*target, "executable");
  }
  if (const json* launcher = member(document, "launcher")) {
    process.launcher_rank = index_rule(integer_at(*launcher, "rank"));
    process.launcher_world_size = size_rule(integer_at(*launcher, "world_size"));
    process.launcher_rank_from = text_at(*launcher, "rank_from");
  }
  if (const json* host = member(document, "host")) process.hostname = text_at(*host, "hostname");
  if (const json* nccl = member(document, "nccl")) {
    process.nccl_version = text_at(*nccl, "version");
    process.build_id_mismatch = boolean_at(*nccl, "build_id_mismatch");
    process.nccl_found = !process.nccl_version.empty() || string_at(*nccl, "library").has_value();
  }
  const json* comms = member(document, "communicators");
  if (comms != nullptr && !comms->is_null() && !comms->is_array())
    throw BadInput(input_name + ": communicators is not an array");
  process.comms_unknown = comms != nullptr && comms->is_null();
  if (comms != nullptr && comms->is_array()) {
    size_t position = 0;
    for (const json& entry : *comms) {
      try {
        process.comms.push_back(read_comm(entry, position++));
      } catch (const BadInput& error) {
        process.document_errors.push_back(error.what());
      }
    }
  }
  if (const json* threads = member(document, "threads"); threads && threads->is_array())
    for (const json& thread : *threads)
      if (thread.is_object()) process.threads.push_back(read_thread(thread, &process.stack_notes));
  if (const json* errors = member(document, "errors"); errors && errors->is_array())
    for (const json& error : *errors) {
      if (error.is_object()) {
        process.document_errors.push_back(
            error_entry_text(text_at(error, "message"), text_at(error, "subject"), text_at(error, "reason")));
        if (text_at(error, "kind") == "discovery") process.rejected_comms.push_back(process.document_errors.back());
        if (text_at(error, "kind") == "target") process.target_damaged = true;
      }
      else if (error.is_string()) process.document_errors.push_back(error.get<std::string>());
    }
  if (const json* recorder = member(document, "recorder")) process.recorder = sanitize_recorder_section(*recorder);
  if (const json* torch = member(document, "torch")) process.torch = sanitize_torch_section(*torch);
  process.principal_thread = pick_principal_thread(process);
  return process;
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

bool is_gpu_wait(const std::string& blocked_in) {
  return blocked_in == "cudaStreamSynchronize" || blocked_in == "cudaEventSynchronize" ||
         blocked_in == "cudaDeviceSynchronize";
}

bool guessed_gpu_wait(const ThreadView& thread) {
  if (thread.blocked_in != "unknown") return false;
  for (const FrameView& frame : thread.frames)
    if (frame.label.rfind("libcuda.so", 0) == 0 || frame.label.rfind("libnccl.so", 0) == 0) return true;
  return false;
}

// "(anonymous namespace)::park_in_pause((anonymous namespace)::Scenario const&)" -> "park_in_pause".
std::string short_function_name(std::string name) {
  const std::string anonymous = "(anonymous namespace)::";
  for (size_t at; (at = name.find(anonymous)) != std::string::npos;) name.erase(at, anonymous.size());
  size_t paren = name.find('(');
  if (paren != std::string::npos && paren > 0) name.resize(paren);
  return name;
}

// The frames of the signal that wrote the core: the thread's own work starts below them.
size_t signal_delivery_frames(const ThreadView& thread) {
  std::vector<SignalRole> roles;
  roles.reserve(thread.frames.size());
  for (const FrameView& frame : thread.frames) roles.push_back(frame.signal_role);
  return signal_frame_count(roles);
}

std::string frame_text(const FrameView& frame) {
  return frame.python ? frame.label : short_function_name(frame.label) + "()";
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
      while (entry > first && is_python_call_glue(thread.frames[entry].label)) --entry;
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
