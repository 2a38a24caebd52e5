// Helpers shared by the two ways a snapshot becomes a ProcessView: from a
// parsed document (process_view.cc) and straight from its text (sax_summary.cc).
#pragma once

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "triage/process_view.h"

namespace nsc::triage {

bool is_runtime_function(const std::string& name);
FrameView make_frame(const std::string& function, const std::string& module, const Maybe<int64_t>& offset,
                     const Maybe<std::string>& pc, std::vector<std::string>* notes);
// A Python frame of a thread's "merged_frames": "finish (train.py:62)" (the file's
// basename), or the frame's error text when it was unreadable.
// A thread with Python frames: its native frames (the interpreter's own executable
// included) are not user code; the Python frames are.
// Python frames of a thread whose native stack was not merged with them (the unwind stopped
// before the interpreter, e.g. in a library whose file is absent): they are its outer frames.
void append_unmerged_python(std::vector<FrameView>* frames, std::vector<FrameView> python);
void mark_python_thread(ThreadView* thread);
FrameView make_python_frame(const std::string& function, const std::string& file, const Maybe<int64_t>& line,
                            const std::string& error);
std::string normalize_pattern(const std::string& raw);
P2pDirection direction_of(const std::string& pattern, const std::string& collective);
int pick_principal_thread(const ProcessView& process);
bool is_service_thread(const std::string& blocked_in);

// An errors[] entry of a state document as one line: its "message", else "subject: reason".
inline std::string error_entry_text(const std::string& message, const std::string& subject,
                                    const std::string& reason) {
  if (!message.empty()) return message;
  if (subject.empty()) return reason;
  return reason.empty() ? subject : subject + ": " + reason;
}
// Why a value the snapshot holds was refused by its field rule (the same words from both
// summarizers): "snapshot value -2 is impossible (1..2147483647 ranks)". `shown` is the value
// as an integer, "true"/"false", "a string" or "a non-integer number".
inline std::string refused_value_reason(const std::string& shown, const char* expected) {
  return "snapshot value " + shown + " is impossible (" + expected + ")";
}
// The input problem it makes: "communicator 0: nranks: snapshot value 0 is impossible (...)".
inline std::string refused_value_warning(size_t position, const std::string& field, const std::string& reason) {
  return "communicator " + std::to_string(position) + ": " + field + ": " + reason;
}
constexpr const char* kExpectRank = "a rank is 0..2147483647";
constexpr const char* kExpectRankCount = "a communicator has 1..2147483647 ranks";
constexpr const char* kExpectCount = "a count is 0..2^63-1";

// Both summarizers end each communicator with this: the document path reads keys in
// sorted order, the text path in the file's order, and their lists must come out equal.
inline void sort_comm_notes(CommView* comm) {
  std::sort(comm->unavailable.begin(), comm->unavailable.end());
  std::sort(comm->warnings.begin(), comm->warnings.end());
}

// Snapshots are untrusted: at most this many warnings are kept per communicator.
constexpr size_t kMaxCommWarnings = 64;
// A communicator's channels reserved up front, at most (NCCL's MAXCHANNELS is 32 to 64; a
// snapshot is untrusted: a larger count only grows the vector as its channels are read).
constexpr int64_t kMaxChannels = 128;

// Field rules, one per kind of field, applied by both summarizers to the integer a
// value holds (std::nullopt when it is not an int64): docs/schema-state.md says a
// value of the wrong type or out of range is unknown, never 0 and never true.

// Counters, sizes, steps, ids, pids and tids: 0 or more.
inline Maybe<int64_t> count_rule(const Maybe<int64_t>& value) {
  if (!value || *value < 0) return std::nullopt;
  return value;
}
// Ranks, peers, channel numbers: 0..INT32_MAX.
inline Maybe<int> index_rule(const Maybe<int64_t>& value) {
  if (!value || *value < 0 || *value > INT32_MAX) return std::nullopt;
  return static_cast<int>(*value);
}
// nranks: a communicator has at least one rank.
inline Maybe<int> size_rule(const Maybe<int64_t>& value) {
  if (!value || *value < 1 || *value > INT32_MAX) return std::nullopt;
  return static_cast<int>(*value);
}
// Ring and tree neighbours: -1 means "none" and values outside 0..nranks-1 are kept,
// so that the analysis can warn about them; only non-int32 values are unknown.
inline Maybe<int> neighbour_rule(const Maybe<int64_t>& value) {
  if (!value || *value < INT32_MIN || *value > INT32_MAX) return std::nullopt;
  return static_cast<int>(*value);
}
// Process and thread ids: the kernel never hands out 0 or negatives.
inline Maybe<int64_t> id_rule(const Maybe<int64_t>& value) {
  if (!value || *value <= 0) return std::nullopt;
  return value;
}

}  // namespace nsc::triage
