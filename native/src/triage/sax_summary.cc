#include "triage/sax_summary.h"

#include <array>
#include <climits>
#include <cstring>

#include <nlohmann/json.hpp>

#include "triage/summary_helpers.h"
#include "util/errors.h"
#include "util/json_scan.h"
#include "util/schemas.h"
#include "util/strings.h"

namespace nsc::triage {
namespace {

using json = nlohmann::json;

// Whether a key is `name`: its length known when compiled, so compared inline (no memcmp call;
// the summarizer compares every key it reads against a few of these).
template <size_t N>
bool is(std::string_view key, const char (&name)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), name, N - 1) == 0;
}

// Where the parser is; every container entered gets one, unknown ones are kSkip.
enum class Where {
  kRoot, kTarget, kLauncher, kHost, kNccl, kComms, kComm, kSeq, kP2p, kP2pUnavailable, kHealth, kChannels,
  kChannel, kRing, kTree, kTreeDown, kProxyOps, kProxyOp, kSubs, kSub, kPlanned, kPlannedColls,
  kPlannedColl, kPlannedP2ps, kPlannedP2p, kCommUnavailable, kThreads, kThread, kFrames, kFrame,
  kMergedFrames, kMergedFrame, kThreadPython, kPythonFrames, kPythonFrame,
  kErrors, kError, kCommWarnings, kNcclLastError, kSkip
};

struct Scalar {
  enum Type { kNull, kBool, kInt, kString, kOther } type = kNull;
  int64_t integer = 0;
  bool boolean = false;
  std::string_view text;  // kString: valid until the next event
  bool beyond_int64 = false;  // kOther: an unsigned integer too large for int64 (in `integer`'s bits)
};

// The value as refused_value_reason shows it (the same words as the document path).
std::string shown_value(const Scalar& v) {
  switch (v.type) {
    case Scalar::kInt: return std::to_string(v.integer);
    case Scalar::kBool: return v.boolean ? "true" : "false";
    case Scalar::kString: return "a string";
    default: return v.beyond_int64 ? std::to_string(static_cast<uint64_t>(v.integer)) : "a non-integer number";
  }
}

Maybe<int64_t> as_int(const Scalar& v) {
  if (v.type == Scalar::kInt) return v.integer;
  return std::nullopt;
}
Maybe<bool> as_bool(const Scalar& v) {
  // Only true and false: an integer is of the wrong type, so unknown (never true).
  if (v.type == Scalar::kBool) return v.boolean;
  return std::nullopt;
}
Maybe<std::string> as_string(const Scalar& v) {
  if (v.type == Scalar::kString) return std::string(v.text);
  return std::nullopt;
}
// The same into a field reused from one entry to the next: its storage is kept.
void set_text(std::string* field, const Scalar& v) {
  if (v.type == Scalar::kString) field->assign(v.text);
  else field->clear();
}
// "seq_launched.AllReduce": each made once, not for every counter read.
const std::string& seq_field(int collective) {
  static const std::array<std::string, kNumCollectives> names = [] {
    std::array<std::string, kNumCollectives> out;
    for (int c = 0; c < kNumCollectives; ++c) out[c] = std::string("seq_launched.") + kCollectiveNames[c];
    return out;
  }();
  return names[collective];
}

struct RawFrame {
  std::string function, module;
  Maybe<int64_t> offset;
  Maybe<std::string> pc;
  std::string kind, file, error;  // merged_frames entries: "python" ones have file/line or error
  Maybe<int64_t> line;

  // Emptied for the next frame, keeping the strings' storage (no allocation per frame).
  void clear() {
    for (std::string* text : {&function, &module, &kind, &file, &error}) text->clear();
    offset.reset();
    pc.reset();
    line.reset();
  }
};

class Summarizer : public JsonViewSax {
 public:
  explicit Summarizer(ProcessView* process) : process_(process) {}

  std::string schema;
  bool top_level_object = false;
  std::string shape_error;  // the document has the wrong shape
  std::string parse_problem;

  bool null() override { return capturing() ? capture(nullptr) : scalar(Scalar{}); }
  bool boolean(bool value) override {
    if (capturing()) return capture(value);
    Scalar v;
    v.type = Scalar::kBool;
    v.boolean = value;
    return scalar(v);
  }
  bool number_integer(number_integer_t value) override {
    if (capturing()) return capture(value);
    Scalar v;
    v.type = Scalar::kInt;
    v.integer = value;
    return scalar(v);
  }
  bool number_unsigned(number_unsigned_t value) override {
    if (capturing()) return capture(value);
    Scalar v;
    v.type = value > static_cast<uint64_t>(INT64_MAX) ? Scalar::kOther : Scalar::kInt;
    v.integer = static_cast<int64_t>(value);
    v.beyond_int64 = v.type == Scalar::kOther;
    return scalar(v);
  }
  bool number_float(number_float_t value, const string_t&) override {
    if (capturing()) return capture(value);
    Scalar v;
    v.type = Scalar::kOther;
    return scalar(v);
  }
  bool string(string_t& value) override { return string_view(value); }
  bool string_view(std::string_view value) override {
    if (capturing()) return capture(std::string(value));
    Scalar v;
    v.type = Scalar::kString;
    v.text = value;
    return scalar(v);
  }
  bool binary(binary_t&) override {
    if (capturing()) return capture(nullptr);
    Scalar v;
    v.type = Scalar::kOther;
    return scalar(v);
  }
  bool key(string_t& value) override {
    key_store_.swap(value);  // the reader's buffer is its own to refill (both readers clear it first): no copy
    key_ = key_store_;
    return true;
  }
  bool key_view(std::string_view key) override {
    key_ = key;
    return true;
  }
  bool start_object(std::size_t) override { return capture_enter(true) || enter(true); }
  bool start_array(std::size_t) override { return capture_enter(false) || enter(false); }
  bool end_object() override { return capturing() ? capture_leave() : leave(); }
  bool end_array() override { return capturing() ? capture_leave() : leave(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) override {
    std::string message = error.what();
    size_t bracket = message.find("] ");
    parse_problem = message.rfind("[json.exception", 0) == 0 && bracket != std::string::npos
                        ? message.substr(bracket + 2) : message;
    return false;
  }

 private:
  struct Level {
    Where where;
    size_t elements = 0;  // arrays: elements seen so far
  };

  // The top-level "recorder" and "torch" objects are kept as small documents (sanitized when
  // they close): triage uses their nested parts as they are.
  bool capturing() const { return !capture_stack_.empty(); }

  bool capture(json value) {
    json& parent = *capture_stack_.back();
    if (parent.is_array()) parent.push_back(std::move(value));
    else parent[std::string(key_)] = std::move(value);
    return true;
  }

  // True when the container was taken by the capture (so enter() must not see it).
  // A container is made only inside a capture: one made and dropped for every container of
  // every snapshot was a third of the allocations at 4,096 ranks (heaptrack).
  bool capture_enter(bool is_object) {
    if (!capturing()) {
      if (stack_.size() != 1 || stack_.back().where != Where::kRoot || !is_object ||
          (!is(key_, "recorder") && !is(key_, "torch") && !is(key_, "fatal_signal")))
        return false;
      captured_key_ = key_;
      captured_ = json::object();
      capture_stack_.push_back(&captured_);
      return true;
    }
    json container = is_object ? json::object() : json::array();
    json& parent = *capture_stack_.back();
    json* child;
    if (parent.is_array()) {
      parent.push_back(std::move(container));
      child = &parent.back();
    } else {
      child = &(parent[std::string(key_)] = std::move(container));
    }
    capture_stack_.push_back(child);
    return true;
  }

  bool capture_leave() {
    capture_stack_.pop_back();
    if (!capturing()) {
      if (captured_key_ == "torch") process_->torch = sanitize_torch_section(captured_);
      else if (captured_key_ == "fatal_signal") process_->fatal_signal = summarize_fatal_signal(captured_);
      else process_->recorder = sanitize_recorder_section(captured_);
      captured_ = nullptr;
    }
    return true;
  }

  Where child_of(Where parent, bool is_object) const {
    std::string_view k = key_;  // each comparison checks the length first: no strlen, fewer memcmp
    switch (parent) {
      case Where::kRoot:
        if (is_object && is(k, "target")) return Where::kTarget;
        if (is_object && is(k, "launcher")) return Where::kLauncher;
        if (is_object && is(k, "host")) return Where::kHost;
        if (is_object && is(k, "nccl")) return Where::kNccl;
        if (!is_object && is(k, "communicators")) return Where::kComms;
        if (!is_object && is(k, "threads")) return Where::kThreads;
        if (!is_object && is(k, "errors")) return Where::kErrors;
        return Where::kSkip;
      case Where::kComms: return is_object ? Where::kComm : Where::kSkip;
      case Where::kComm:
        if (is_object && is(k, "seq_launched")) return Where::kSeq;
        if (is_object && is(k, "p2p_op_count")) return Where::kP2p;
        if (is_object && is(k, "health")) return Where::kHealth;
        if (!is_object && is(k, "channels")) return Where::kChannels;
        if (!is_object && is(k, "proxy_ops")) return Where::kProxyOps;
        if (is_object && is(k, "planned")) return Where::kPlanned;
        if (is_object && is(k, "unavailable")) return Where::kCommUnavailable;
        if (!is_object && is(k, "warnings")) return Where::kCommWarnings;
        return Where::kSkip;
      case Where::kP2p: return is_object && is(k, "unavailable") ? Where::kP2pUnavailable : Where::kSkip;
      case Where::kChannels: return is_object ? Where::kChannel : Where::kSkip;
      case Where::kChannel:
        if (is_object && is(k, "ring")) return Where::kRing;
        if (is_object && is(k, "tree")) return Where::kTree;
        return Where::kSkip;
      case Where::kTree: return !is_object && is(k, "down") ? Where::kTreeDown : Where::kSkip;
      case Where::kProxyOps: return is_object ? Where::kProxyOp : Where::kSkip;
      case Where::kProxyOp: return !is_object && is(k, "subs") ? Where::kSubs : Where::kSkip;
      case Where::kSubs: return is_object ? Where::kSub : Where::kSkip;
      case Where::kPlanned:
        if (!is_object && is(k, "colls")) return Where::kPlannedColls;
        if (!is_object && is(k, "p2p")) return Where::kPlannedP2ps;
        return Where::kSkip;
      case Where::kPlannedColls: return is_object ? Where::kPlannedColl : Where::kSkip;
      case Where::kPlannedP2ps: return is_object ? Where::kPlannedP2p : Where::kSkip;
      case Where::kThreads: return is_object ? Where::kThread : Where::kSkip;
      case Where::kThread:
        if (!is_object && is(k, "frames")) return Where::kFrames;
        if (!is_object && is(k, "merged_frames")) return Where::kMergedFrames;
        if (is_object && is(k, "python")) return Where::kThreadPython;
        return Where::kSkip;
      case Where::kThreadPython: return !is_object && is(k, "frames") ? Where::kPythonFrames : Where::kSkip;
      case Where::kNccl: return is_object && is(k, "last_error") ? Where::kNcclLastError : Where::kSkip;
      case Where::kPythonFrames: return is_object ? Where::kPythonFrame : Where::kSkip;
      case Where::kFrames: return is_object ? Where::kFrame : Where::kSkip;
      case Where::kMergedFrames: return is_object ? Where::kMergedFrame : Where::kSkip;
      case Where::kErrors: return is_object ? Where::kError : Where::kSkip;
      default: return Where::kSkip;
    }
  }

  bool enter(bool is_object) {
    if (stack_.empty()) {
      top_level_object = is_object;
      stack_.push_back({is_object ? Where::kRoot : Where::kSkip});
      return true;
    }
    Level& parent = stack_.back();
    Where where = parent.where == Where::kSkip ? Where::kSkip : child_of(parent.where, is_object);
    if (parent.where == Where::kRoot && is(key_, "communicators") && is_object) shape_error = "communicators is not an array";
    ++parent.elements;
    if (parent.where == Where::kComms && !is_object) bad_comm(parent.elements - 1);
    // A reason that is not text still says the field is unavailable, for an unknown reason.
    if (parent.where == Where::kCommUnavailable || parent.where == Where::kP2pUnavailable)
      unavailable(parent.where, "");
    opened(where, parent.elements - 1);
    stack_.push_back({where});
    return true;
  }

  // A container starts: create what it holds.
  void opened(Where where, size_t index) {
    switch (where) {
      case Where::kComm:
        if (process_->comms.empty()) process_->comms.reserve(4);  // most processes hold a few
        process_->comms.emplace_back();
        process_->comms.back().position = index;
        comm_hash_text_.clear();
        break;
      case Where::kChannel: comm().channels.emplace_back().id = -1; break;
      case Where::kProxyOps: comm().proxy_ops_known = true; break;
      case Where::kProxyOp: comm().proxy_ops.emplace_back(); break;
      case Where::kSub: comm().proxy_ops.back().subs.emplace_back(); break;
      case Where::kPlanned: comm().planned_known = true; break;
      case Where::kPlannedColl: comm().planned_colls.emplace_back(); break;
      case Where::kPlannedP2p: comm().planned_p2p.emplace_back(); break;
      case Where::kThread:
        process_->threads.emplace_back();
        native_.clear();
        merged_.clear();
        python_.clear();
        break;
      case Where::kError: error_ = RawError{}; break;
      case Where::kFrame:
      case Where::kMergedFrame:
      case Where::kPythonFrame: frame_.clear(); break;
      default: break;
    }
  }

  bool leave() {
    Where where = stack_.back().where;
    stack_.pop_back();
    switch (where) {
      case Where::kComm: finish_comm(); break;
      case Where::kProxyOp: {
        ProxyOpView& op = comm().proxy_ops.back();
        op.pattern = normalize_pattern(op.pattern);
        op.direction = direction_of(op.pattern, op.collective);
        break;
      }
      case Where::kPlannedP2p: {
        PlannedP2pView& task = comm().planned_p2p.back();
        task.direction = planned_kind_ == "send" ? P2pDirection::kSend
                         : planned_kind_ == "recv" ? P2pDirection::kRecv : P2pDirection::kNone;
        planned_kind_.clear();
        break;
      }
      case Where::kError:
        process_->document_errors.push_back(error_entry_text(error_.message, error_.subject, error_.reason));
        if (error_.kind == "discovery") process_->rejected_comms.push_back(process_->document_errors.back());
        if (error_.kind == "target") process_->target_damaged = true;
        break;
      case Where::kFrame:
        native_.push_back(make_frame(frame_.function, frame_.module, frame_.offset, frame_.pc, &process_->stack_notes));
        break;
      case Where::kMergedFrame:
        merged_.push_back(frame_.kind == "python"
                              ? make_python_frame(frame_.function, frame_.file, frame_.line, frame_.error)
                              : make_frame(frame_.function, frame_.module, frame_.offset, frame_.pc,
                                           &process_->stack_notes));
        break;
      case Where::kPythonFrame:
        python_.push_back(make_python_frame(frame_.function, frame_.file, frame_.line, frame_.error));
        break;
      case Where::kThread: {  // the merged native+Python stack stands for the thread when present
        // Gathered in reused buffers, then moved into one block of the exact size: the frames are
        // kept until the report is written (no spare capacity per rank, no regrowth).
        ThreadView& thread = process_->threads.back();
        if (merged_.empty()) append_unmerged_python(&native_, std::move(python_));
        std::vector<FrameView>& frames = merged_.empty() ? native_ : merged_;
        thread.frames.assign(std::make_move_iterator(frames.begin()), std::make_move_iterator(frames.end()));
        native_.clear();
        merged_.clear();
        python_.clear();
        mark_python_thread(&thread);
        break;
      }
      default: break;
    }
    return true;
  }

  void finish_comm() {
    CommView& view = comm();
    uint64_t hash = 0;
    if (comm_hash_text_.empty() || !parse_u64(comm_hash_text_, &hash)) {
      process_->document_errors.push_back("communicator " + std::to_string(view.position) +
                                          " has no readable comm_hash");
      process_->comms.pop_back();
      return;
    }
    view.set_comm_hash(hash);
    sort_comm_notes(&view);
  }

  CommView& comm() { return process_->comms.back(); }

  // A scalar its field rule refused: unavailable, with the reason (as read_comm does).
  template <typename T>
  void refused_if(const Scalar& v, const std::string& field, const Maybe<T>& accepted, const char* expected) {
    if (v.type == Scalar::kNull || accepted) return;
    comm().unavailable.emplace_back(field, refused_value_reason(shown_value(v), expected));
    if (comm().warnings.size() < kMaxCommWarnings)
      comm().warnings.push_back(refused_value_warning(comm().position, field, comm().unavailable.back().second));
  }

  void unavailable(Where map, std::string reason) {
    comm().unavailable.emplace_back((map == Where::kP2pUnavailable ? "p2p_op_count." : "") + std::string(key_),
                                    std::move(reason));
  }

  // Same words as the document path (read_comm) for an entry that is not a communicator.
  void bad_comm(size_t index) {
    process_->document_errors.push_back("communicator " + std::to_string(index) + " has no readable comm_hash");
  }

  bool scalar(const Scalar& v) {
    if (stack_.empty()) return true;  // a bare scalar document: the caller reports it
    Level& level = stack_.back();
    ++level.elements;
    std::string_view k = key_;
    switch (level.where) {
      case Where::kComms: bad_comm(level.elements - 1); break;
      case Where::kRoot:
        if (is(k, "schema") && v.type == Scalar::kString) schema = v.text;
        if (is(k, "communicators") && v.type != Scalar::kNull) shape_error = "communicators is not an array";
        if (is(k, "communicators") && v.type == Scalar::kNull) process_->comms_unknown = true;
        break;
      case Where::kTarget:
        if (is(k, "pid")) process_->pid = id_rule(as_int(v));
        else if (is(k, "executable")) process_->executable = as_string(v).value_or("");
        break;
      case Where::kLauncher:
        if (is(k, "rank")) process_->launcher_rank = index_rule(as_int(v));
        else if (is(k, "world_size")) process_->launcher_world_size = size_rule(as_int(v));
        else if (is(k, "rank_from")) process_->launcher_rank_from = as_string(v).value_or("");
        break;
      case Where::kHost:
        if (is(k, "hostname")) process_->hostname = as_string(v).value_or("");
        break;
      case Where::kNccl:
        if (is(k, "version")) process_->nccl_version = as_string(v).value_or("");
        else if (is(k, "library")) library_named_ = library_named_ || v.type == Scalar::kString;
        else if (is(k, "build_id_mismatch")) process_->build_id_mismatch = as_bool(v);
        break;
      case Where::kNcclLastError:
        if (is(k, "text")) process_->nccl_last_error = as_string(v).value_or("");
        break;
      case Where::kComm:
        if (is(k, "comm_hash")) set_text(&comm_hash_text_, v);
        else if (is(k, "address")) comm().address = as_string(v).value_or("");
        else if (is(k, "rank")) refused_if(v, "rank", comm().rank = index_rule(as_int(v)), kExpectRank);
        else if (is(k, "nranks")) refused_if(v, "nranks", comm().nranks = size_rule(as_int(v)), kExpectRankCount);
        else if (is(k, "coll_op_count"))
          refused_if(v, "coll_op_count", comm().coll_op_count = count_rule(as_int(v)), kExpectCount);
        else if (is(k, "coll_op_count_of"))
          comm().coll_op_count_shared_resources = as_string(v).value_or("") == "ncclSharedResources";
        else if (is(k, "shared_resources")) comm().shared_resources = as_string(v).value_or("");
        else if (is(k, "nchannels") && v.type == Scalar::kInt && v.integer > 0 && v.integer <= kMaxChannels)
          comm().channels.reserve(static_cast<size_t>(v.integer));  // listed after it: no regrowth
        break;
      case Where::kSeq:
        for (int c = 0; c < kNumCollectives; ++c)
          if (k == kCollectiveNames[c])
            refused_if(v, seq_field(c),
                       comm().seq_launched[c] = count_rule(as_int(v)), kExpectCount);
        break;
      case Where::kP2p:
        if (is(k, "total")) refused_if(v, "p2p_op_count.total", comm().p2p_total = count_rule(as_int(v)), kExpectCount);
        break;
      case Where::kP2pUnavailable:
      case Where::kCommUnavailable: unavailable(level.where, as_string(v).value_or("")); break;
      case Where::kHealth: {
        HealthView& health = comm().health;
        if (is(k, "async_result")) health.async_result = as_string(v);
        else if (is(k, "init_state")) health.init_state = as_string(v);
        else if (is(k, "proxy_async_result")) health.proxy_async_result = as_string(v);
        else if (is(k, "abort_flag")) health.abort_flag = as_bool(v);
        else if (is(k, "destroy_flag")) health.destroy_flag = as_bool(v);
        else if (is(k, "finalize_called")) health.finalize_called = as_bool(v);
        else if (is(k, "revoked")) health.revoked = as_bool(v);
        break;
      }
      case Where::kChannel:
        if (is(k, "id")) comm().channels.back().id = index_rule(as_int(v)).value_or(-1);
        break;
      case Where::kRing:
        if (is(k, "prev")) comm().channels.back().ring_prev = neighbour_rule(as_int(v));
        else if (is(k, "next")) comm().channels.back().ring_next = neighbour_rule(as_int(v));
        break;
      case Where::kTree:
        if (is(k, "up")) comm().channels.back().tree_up = neighbour_rule(as_int(v));
        break;
      case Where::kTreeDown:
        if (auto child = index_rule(as_int(v))) comm().channels.back().tree_down.add(*child);
        break;
      case Where::kProxyOp: {
        ProxyOpView& op = comm().proxy_ops.back();
        if (is(k, "op_count")) {
          if (auto count = count_rule(as_int(v))) op.op_count = static_cast<uint64_t>(*count);
        } else if (is(k, "collective")) op.collective = as_string(v).value_or("");
        else if (is(k, "pattern")) op.pattern = as_string(v).value_or("");
        break;
      }
      case Where::kSub: {
        ProxySubView& sub = comm().proxy_ops.back().subs.back();
        if (is(k, "channel")) sub.channel = index_rule(as_int(v));
        else if (is(k, "peer")) sub.peer = index_rule(as_int(v));
        else if (is(k, "nsteps")) sub.nsteps = count_rule(as_int(v));
        else if (is(k, "posted")) sub.posted = count_rule(as_int(v));
        else if (is(k, "received")) sub.received = count_rule(as_int(v));
        else if (is(k, "transmitted")) sub.transmitted = count_rule(as_int(v));
        else if (is(k, "done")) sub.done = count_rule(as_int(v));
        else if (is(k, "send")) sub.send = as_bool(v);
        break;
      }
      case Where::kPlanned:
        if (is(k, "n_tasks_coll")) comm().n_tasks_coll = count_rule(as_int(v));
        else if (is(k, "n_tasks_p2p")) comm().n_tasks_p2p = count_rule(as_int(v));
        else if (is(k, "unlaunched_plans")) comm().unlaunched_plans = count_rule(as_int(v));
        else if (is(k, "in_group")) comm().in_group = as_bool(v);
        break;
      case Where::kPlannedColl:
        if (is(k, "collective")) comm().planned_colls.back() = as_string(v).value_or("");
        break;
      case Where::kPlannedP2p:
        if (is(k, "kind")) set_text(&planned_kind_, v);
        else if (is(k, "peer")) comm().planned_p2p.back().peer = index_rule(as_int(v)).value_or(-1);
        break;
      case Where::kThread: {
        ThreadView& thread = process_->threads.back();
        if (is(k, "tid")) thread.tid = id_rule(as_int(v));
        else if (is(k, "name")) thread.name = as_string(v).value_or("");
        else if (is(k, "blocked_in")) thread.blocked_in = as_string(v).value_or("");
        break;
      }
      case Where::kPythonFrame:
        if (is(k, "function")) set_text(&frame_.function, v);
        else if (is(k, "file")) set_text(&frame_.file, v);
        else if (is(k, "line")) frame_.line = as_int(v);
        else if (is(k, "error")) set_text(&frame_.error, v);
        break;
      case Where::kMergedFrame:
        if (is(k, "kind")) set_text(&frame_.kind, v);
        else if (is(k, "file")) set_text(&frame_.file, v);
        else if (is(k, "line")) frame_.line = as_int(v);
        else if (is(k, "error")) set_text(&frame_.error, v);
        [[fallthrough]];
      case Where::kFrame:
        if (is(k, "function")) set_text(&frame_.function, v);
        else if (is(k, "module")) set_text(&frame_.module, v);
        else if (is(k, "offset")) frame_.offset = count_rule(as_int(v));
        else if (is(k, "pc")) frame_.pc = as_string(v);
        break;
      case Where::kErrors:
        if (v.type == Scalar::kString) process_->document_errors.emplace_back(v.text);
        break;
      case Where::kError:
        if (is(k, "message")) set_text(&error_.message, v);
        else if (is(k, "subject")) set_text(&error_.subject, v);
        else if (is(k, "reason")) set_text(&error_.reason, v);
        else if (is(k, "kind")) set_text(&error_.kind, v);
        break;
      case Where::kCommWarnings:
        if (v.type == Scalar::kString && comm().warnings.size() < kMaxCommWarnings)
          comm().warnings.emplace_back(v.text);
        break;
      default: break;
    }
    return true;
  }

 public:
  bool library_named_ = false;

 private:
  ProcessView* process_;
  std::string comm_hash_text_;  // the communicator's comm_hash as the text has it (set_comm_hash makes it canonical)
  std::vector<Level> stack_;
  std::string_view key_;   // the current key: in the text being read, or in key_store_
  std::string key_store_;  // a key the reader gave as a string
  RawFrame frame_;
  struct RawError {
    std::string message, subject, reason, kind;
  } error_;
  std::vector<FrameView> native_;  // the current thread's frames
  std::vector<FrameView> merged_;  // ... its merged_frames
  std::vector<FrameView> python_;  // ... and its python.frames
  std::string planned_kind_;
  std::string captured_key_;          // "recorder" or "torch"
  json captured_;                     // that object while it is read
  std::vector<json*> capture_stack_;  // open containers inside it, innermost last
};

}  // namespace

namespace {

// A document already in memory, replayed as the events its text would give (nlohmann's objects
// keep their keys sorted, as the text every snapshot is written as): one reader for both.
bool replay(const json& value, json::json_sax_t* sax) {
  switch (value.type()) {
    case json::value_t::object:
      if (!sax->start_object(value.size())) return false;
      for (auto it = value.begin(); it != value.end(); ++it) {
        std::string key = it.key();
        if (!sax->key(key) || !replay(it.value(), sax)) return false;
      }
      return sax->end_object();
    case json::value_t::array:
      if (!sax->start_array(value.size())) return false;
      for (const json& element : value)
        if (!replay(element, sax)) return false;
      return sax->end_array();
    case json::value_t::string: {
      std::string text = value.get<std::string>();
      return sax->string(text);
    }
    case json::value_t::boolean: return sax->boolean(value.get<bool>());
    case json::value_t::number_integer: return sax->number_integer(value.get<int64_t>());
    case json::value_t::number_unsigned: return sax->number_unsigned(value.get<uint64_t>());
    case json::value_t::number_float: return sax->number_float(value.get<double>(), value.dump());
    default: return sax->null();  // null, binary, discarded: nothing triage reads
  }
}

// Summarizes what `feed` gives the summarizer; false (with *schema) for JSON of another kind.
template <typename Feed>
bool summarize(Feed feed, const std::string& input_name, const std::string& kind, ProcessView* process,
               std::string* schema) {
  ProcessView view;
  view.input_name = input_name;
  view.kind = kind;
  Summarizer summarizer(&view);
  if (!feed(summarizer)) throw BadInput(input_name + ": corrupt snapshot: " + summarizer.parse_problem);
  *schema = summarizer.schema;
  if (!summarizer.top_level_object) {
    schema->clear();
    throw BadInput(input_name + ": not an " + kStateSchema + " document (top level is not an object)");
  }
  if (summarizer.schema != kStateSchema) return false;
  if (!summarizer.shape_error.empty()) throw BadInput(input_name + ": " + summarizer.shape_error);
  view.nccl_found = !view.nccl_version.empty() || summarizer.library_named_;
  view.principal_thread = pick_principal_thread(view);
  *process = std::move(view);
  return true;
}

}  // namespace

bool summarize_state_text(std::string_view text, const std::string& input_name, const std::string& kind,
                          ProcessView* process, std::string* schema) {
  // The fast scanner reads the usual snapshot; what it declines (every malformed text among
  // them) nlohmann reads again from the start, so messages and accepted texts stay nlohmann's.
  struct Declined {};
  try {
    return summarize(
        [&](Summarizer& summarizer) { return scan_json(text, &summarizer) ? true : throw Declined{}; }, input_name,
        kind, process, schema);
  } catch (const Declined&) {
    return summarize([&](Summarizer& summarizer) { return json::sax_parse(text.begin(), text.end(), &summarizer); },
                     input_name, kind, process, schema);
  }
}

ProcessView summarize_state_document(const json& document, const std::string& input_name, const std::string& kind) {
  ProcessView process;
  std::string schema;
  if (!summarize([&](Summarizer& summarizer) { return replay(document, &summarizer); }, input_name, kind, &process,
                 &schema))
    throw BadInput(input_name + ": not an " + kStateSchema + " document (schema is " +
                   (schema.empty() ? std::string("missing") : "\"" + schema + "\"") + ")");
  return process;
}

}  // namespace nsc::triage
