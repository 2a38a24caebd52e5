// A compact, read-only summary of one `ncclscope.state/1` document: only what
// triage needs, so 4,096 ranks fit in memory after their JSON is freed.
// A field the snapshot could not read stays std::nullopt: never 0.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "stacks/blocked_in.h"
#include "stacks/thread_stacks.h"
#include "torch/fr_records.h"

namespace nsc::triage {

template <typename T>
using Maybe = std::optional<T>;

// seq_launched order: NCCL's ncclFunc_t order, stable since 2.0.
constexpr int kNumCollectives = 5;
extern const char* const kCollectiveNames[kNumCollectives];
// Their indices in the names' byte order: how a JSON object lists them.
extern const std::array<int, kNumCollectives> kCollectivesByName;

// A tree node's children: at most NCCL_MAX_TREE_ARITY (3 in every NCCL version), held inline so
// that a rank's channels take no heap block each; a snapshot naming more (not NCCL's) keeps 3.
struct TreeChildren {
  std::array<int, 3> ranks{};
  uint8_t count = 0;
  void add(int rank) {
    if (count < ranks.size()) ranks[count++] = rank;
  }
  const int* begin() const { return ranks.data(); }
  const int* end() const { return ranks.data() + count; }
};

struct ChannelView {
  int id = 0;
  Maybe<int> ring_prev, ring_next;
  Maybe<int> tree_up;
  TreeChildren tree_down;
};

enum class P2pDirection { kNone, kSend, kRecv };

struct ProxySubView {
  Maybe<int> channel, peer;
  Maybe<int64_t> nsteps, posted, received, transmitted, done;
  Maybe<bool> send;  // the connection's side; unknown in older snapshots
  bool finished() const { return nsteps && done && *done >= *nsteps; }
};

struct ProxyOpView {
  Maybe<uint64_t> op_count;
  std::string collective;  // "AllReduce", "Send", ...
  std::string pattern;     // normalised: "ring", "send", "recv", ...
  P2pDirection direction = P2pDirection::kNone;
  std::vector<ProxySubView> subs;
};

struct PlannedP2pView {
  P2pDirection direction = P2pDirection::kNone;
  int peer = -1;
};

// One copy of a text that many ranks hold alike (a communicator's hash, "ncclSuccess"), kept for
// the process's life: the same text gives the same address, on every thread.
const std::string* shared_text(std::string_view text);

// Maybe<std::string> for such a text: a pointer (8 bytes, not 40; 100,000 ranks hold 1.2 million).
class MaybeSharedText {
 public:
  MaybeSharedText() = default;
  MaybeSharedText& operator=(const Maybe<std::string>& text) {
    text_ = text ? shared_text(*text) : nullptr;
    return *this;
  }
  explicit operator bool() const { return text_ != nullptr; }
  const std::string& operator*() const { return *text_; }
  std::string value_or(const std::string& fallback) const { return text_ ? *text_ : fallback; }
  // As std::optional compares: unknown equals only unknown, and a text never equals unknown.
  friend bool operator==(const MaybeSharedText& a, const MaybeSharedText& b) { return a.text_ == b.text_; }
  friend bool operator!=(const MaybeSharedText& a, const MaybeSharedText& b) { return a.text_ != b.text_; }
  friend bool operator==(const MaybeSharedText& a, std::string_view b) { return a.text_ && *a.text_ == b; }

 private:
  const std::string* text_ = nullptr;
};

struct HealthView {
  MaybeSharedText async_result, init_state;
  MaybeSharedText proxy_async_result;  // proxyState->asyncResult: where a peer's failure lands
  Maybe<bool> abort_flag, destroy_flag, finalize_called, revoked;
};

struct CommView {
  uint64_t comm_hash = 0;
  const std::string& comm_hash_text() const { return comm_hash_text_ ? *comm_hash_text_ : kNoHashText; }  // "0x6db0a96d9cb7fc37"
  void set_comm_hash(uint64_t hash);
  std::string address;
  Maybe<int> rank, nranks;
  std::array<Maybe<int64_t>, kNumCollectives> seq_launched;
  Maybe<int64_t> coll_op_count, p2p_total;
  // coll_op_count is ncclSharedResources' (NCCL 2.23 and older), at this address ("" unknown):
  // shared with the comms split from one parent with splitShare.
  bool coll_op_count_shared_resources = false;
  std::string shared_resources;
  HealthView health;
  std::vector<ChannelView> channels;  // freed once the wait-for graph is built (triage.cc)
  bool proxy_ops_known = false;
  std::vector<ProxyOpView> proxy_ops;
  bool planned_known = false;
  std::vector<std::string> planned_colls;
  std::vector<PlannedP2pView> planned_p2p;
  Maybe<int64_t> n_tasks_coll, n_tasks_p2p, unlaunched_plans;
  Maybe<bool> in_group;
  // field name ("seq_launched.AllGather", "health.abort_flag") -> reason.
  std::vector<std::pair<std::string, std::string>> unavailable;
  std::vector<std::string> warnings;  // the snapshot's own warnings for it (failed sanity checks)
  size_t position = 0;  // index in the document's communicators[]: registry order
  // No NCCL communicator with this hash in memory: identity and counters come from the
  // flight recorder's comm table and its recorded collectives (recorder_join.cc).
  bool from_recorder = false;

  std::string unavailable_reason(const std::string& field) const;
  Maybe<int64_t> total_launched() const;  // sum of seq_launched when all are known
  bool has_planned_work() const;          // tasks queued but not launched
  bool has_proxy_work_in_flight() const;

 private:
  static const std::string kNoHashText;  // "" before set_comm_hash
  const std::string* comm_hash_text_ = nullptr;
};

struct FrameView {
  // Function, or module+0xoffset, or pc; Python: "finish (train.py:62)". Each distinct label is
  // held once for the process's life: ranks show the same few frames (make_frame), so a frame
  // is 16 bytes and a copy costs nothing more (100,000 ranks x 48 frames).
  const std::string& label() const { return label_ ? *label_ : kNoLabel; }
  // The same for two frames exactly when their labels are equal: a key that needs no hashing.
  const std::string* label_id() const { return &label(); }
  void set_label(std::string text);

  bool user_code = false;  // not inside a shared library (Python frames are user code)
  bool python = false;     // a Python frame of the merged stack (docs/schema-state.md)
  bool python_library = false;  // ... in an installed package or the standard library
  SignalRole signal_role = SignalRole::none;  // in delivering the signal that stopped the thread

 private:
  static const std::string kNoLabel;
  const std::string* label_ = nullptr;
};

struct ThreadView {
  Maybe<int64_t> tid;  // unknown when missing, of the wrong type or not positive
  std::string name;
  std::string blocked_in;  // schema class, "" when absent
  // Innermost first, as the snapshot stores them; the merged native+Python stack
  // ("merged_frames") when the snapshot has one.
  std::vector<FrameView> frames;
};

// The snapshot's "fatal_signal" (a core's NT_SIGINFO and the thread that took it), type-checked.
struct FatalSignalView {
  std::string name;           // "SIGSEGV"
  std::string origin;         // "fault" | "abort" | "sent" | "re-raised" | "kernel"
  bool failure = false;       // a failure of the process itself (not a signal another process sent)
  bool torch_watchdog = false;  // abort() in PyTorch's NCCL watchdog thread
  bool uncaught_exception = false;  // via std::terminate
  bool during_exit = false;   // the process was already ending (exit handlers, Py_FinalizeEx)
  std::string site_in;        // "user code", "NCCL", "CUDA", "PyTorch", ... ("" unknown)
  bool python_located = false;  // its text names the signalled thread's Python line
  std::string text;           // the snapshot's sentence
  std::string exception;      // "terminate: T: \"message\" (...)": the C++ exception it died of ("" none)
  Maybe<int64_t> tid;
};

struct ProcessView {
  std::string input_name;  // file path or "pid 1234"
  std::string kind;        // "snapshot", "core", "live"
  Maybe<int64_t> pid;
  std::string hostname, executable, nccl_version;
  Maybe<bool> build_id_mismatch;  // unknown unless the snapshot says true or false
  bool nccl_found = false;  // the snapshot names a libnccl (version or library)
  // From the document's `launcher` object (the launcher's RANK, WORLD_SIZE, ...).
  Maybe<int> launcher_rank, launcher_world_size;
  std::string launcher_rank_from;  // "RANK", "SLURM_PROCID", ...; "" when unknown
  std::vector<CommView> comms;
  std::vector<ThreadView> threads;
  int principal_thread = -1;  // the application thread triage describes
  // The snapshot's own errors[]: "message", else "subject: reason" (what `state` printed).
  std::vector<std::string> document_errors;
  // Its errors[] of kind "discovery": communicators found but rejected as corrupt.
  std::vector<std::string> rejected_comms;
  // Its errors[] has one of kind "target": the core or process could not be read whole.
  bool target_damaged = false;
  // `communicators` is null: whether the process holds any is unknown (never "none").
  bool comms_unknown = false;
  // Modules whose frames carry a note (e.g. "libc.so.6 (build-id mismatch: ...)"): their
  // frames are not symbolized; said once per input instead of in every frame.
  std::vector<std::string> stack_notes;
  // The flight recorder's section, reduced to what triage uses and type-checked
  // (sanitize_recorder_section); null when the process had no recorder.
  nlohmann::json recorder;
  // PyTorch's flight recorder ("torch" section: process groups joined to communicators,
  // entries), type-checked by sanitize_torch_section; null when absent.
  nlohmann::json torch;
  // The same records compact, for matching across ranks (fr_match.cc): a dump file's (kind
  // "fr-dump": no memory, no thread, no communicator) or built from `torch`; null without.
  std::shared_ptr<const torch::FrRankRecords> fr_records;
  // How the process ended, when its input is a core that says (nullopt: a live process, a
  // snapshot without the key, a core without NT_SIGINFO: never taken for a crash).
  Maybe<FatalSignalView> fatal_signal;
  std::string nccl_last_error;  // NCCL's last WARN message ("" none or unknown)

  const ThreadView* principal() const {
    return principal_thread >= 0 ? &threads[principal_thread] : nullptr;
  }
};

// Throws nsc::BadInput naming `input_name` when `document` is not a
// `ncclscope.state/1` document. `kind` is what the input was ("snapshot", ...). Defined in
// sax_summary.cc: the document is replayed through the one reader of the text.
ProcessView summarize_state_document(const nlohmann::json& document, const std::string& input_name,
                                     const std::string& kind);

// The "recorder" section of a state document reduced to what triage uses, every value
// type-checked (a snapshot is untrusted input); null when absent or not found.
nlohmann::json sanitize_recorder_section(const nlohmann::json& section);
nlohmann::json sanitize_torch_section(const nlohmann::json& section);
// The "fatal_signal" object, type-checked; nullopt when it is not an object with a name.
Maybe<FatalSignalView> summarize_fatal_signal(const nlohmann::json& section);

// Everything `state` reported wrong with this input (its errors[], then each communicator's
// warnings): non-empty makes the input "partial" in triage, as it makes `state` exit 1.
std::vector<std::string> input_problems(const ProcessView& process);
// One line for the verdict when some inputs are partial: "Drawn from 1 input(s) read only in
// part: A (read only in part: core_open A: core file truncated ...)."; "" when none is.
std::string damaged_inputs_note(const std::vector<ProcessView>& processes);
// Why this input cannot show which communicators its process holds (a communicator rejected as
// corrupt, a damaged core, a libnccl whose build-id matches no library, a null list), or ""
// when it can. Such an input is "unreadable": never taken for a rank that lost its
// communicators or never created one, and never blamed (absence is never evidence).
std::string unreadable_reason(const ProcessView& process);
// " (a communicator found but rejected as corrupt: 0x...: endMagic is ...)" or "": for the
// sentences about an input that holds no usable communicator.
std::string rejected_comms_note(const ProcessView& process);
// "read only in part: FIRST PROBLEM and N more", or "" when the input has no problem.
std::string damage_text(const ProcessView& process);
// The same as " (...)", or "": appended to a message about the input.
std::string damage_suffix(const ProcessView& process);

// Whether what the application thread does is known: it was read, and a damaged input's
// thread of unknown class (its stack cut short) is not taken for "outside NCCL".
bool host_thread_known(const ProcessView& process);
// Host-side blocking classes that mean "inside an NCCL call, not launched yet".
bool is_nccl_host_call(const std::string& blocked_in);
// Inside a call that creates a communicator from others (ncclCommSplit, ncclCommInitRank*,
// PyTorch's new_group / new_subgroups): it needs every rank of the parent to enter it too.
bool in_communicator_creation(const ThreadView& thread);
// Classes that mean "waiting for GPU work to finish".
bool is_gpu_wait(const std::string& blocked_in);
// A thread of unknown class whose innermost frames are in libcuda or libnccl without names
// (no symbols for the program that links cudart statically): a labelled guess that it waits
// on the GPU, so the verdict does not depend on --exe.
bool guessed_gpu_wait(const ThreadView& thread);

using nsc::short_function_name;  // stacks/thread_stacks.h
// "pause()" for a native frame, "finish (train.py:62)" for a Python one.
std::string frame_text(const FrameView& frame);
// One line: "pause() called from main() [user-code]", with Python frames
// "barrier() called from finish (train.py:62) [nccl-group-end]".
std::string describe_thread(const ThreadView& thread);

}  // namespace nsc::triage
