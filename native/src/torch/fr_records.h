// PyTorch's flight-recorder records of one rank in a compact form (issue 31): what triage
// matches across ranks (torchfrtrace's checks), from a dump file (fr_dump_reader.cc) or from
// the "torch" section a core's decode produced (fr_records_from_torch_section). Strings are
// held once per rank and named by index, so 4,096 ranks x 2,000 entries fit in memory.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/bulk_memory.h"

namespace nsc::torch {

// The watchdog's view of an entry (FlightRecorder's state strings).
enum class FrState : uint8_t { kScheduled, kStarted, kCompleted, kUnknown };
const char* fr_state_name(FrState state);

struct FrFrame {
  uint32_t name = 0, filename = 0;  // string ids
  std::optional<int64_t> line;
};

// An integer field an entry may lack, in 8 bytes (std::optional<int64_t> takes 16, and 8.2 M
// records are kept): INT64_MIN stands for "absent", so a dump's INT64_MIN reads as absent.
class FrInt {
 public:
  FrInt() = default;
  FrInt(std::nullopt_t) {}
  FrInt(int64_t value) : value_(value) {}
  FrInt(const std::optional<int64_t>& value) : value_(value.value_or(kAbsent)) {}
  bool has_value() const { return value_ != kAbsent; }
  explicit operator bool() const { return has_value(); }
  int64_t operator*() const { return value_; }
  int64_t value_or(int64_t fallback) const { return has_value() ? value_ : fallback; }
  operator std::optional<int64_t>() const { return has_value() ? std::optional<int64_t>(value_) : std::nullopt; }

 private:
  static constexpr int64_t kAbsent = INT64_MIN;
  int64_t value_ = kAbsent;
};

struct FrRecord {
  FrInt record_id, collective_seq, p2p_seq;
  uint32_t pg_name = 0, pg_desc = 0;    // process_group (name, desc)
  uint32_t profiling_name = 0;          // "nccl:all_reduce", "nccl:send 0->2"
  uint32_t input_sizes = 0, output_sizes = 0, input_dtypes = 0, output_dtypes = 0;  // as text: "[[65536]]", "[Float]"
  uint32_t stack = 0;                   // index into FrRankRecords::stacks (0: no frames)
  FrState state = FrState::kUnknown;
  bool is_p2p = false;
};

struct FrGroupConfig {
  uint32_t name = 0, desc = 0;
  std::vector<int> ranks;  // global ranks, in the group's rank order
};

struct FrGroupStatus {
  std::string pg_id;  // pg_status is keyed by the group's id (text)
  std::optional<int64_t> last_enqueued, last_started, last_completed;
};

// One rank's records. String id 0 is "".
struct FrRankRecords {
  std::string version;                  // the dump format's version ("2.10"); "" unknown
  std::vector<FrGroupConfig> groups;    // pg_config
  std::vector<FrGroupStatus> pg_status;
  std::vector<FrRecord, BulkAllocator<FrRecord>> records;  // oldest first (as dumped)
  std::vector<std::vector<FrFrame>> stacks;  // [0] is the empty stack
  std::vector<std::string> strings;     // [0] is ""

  FrRankRecords();
  const std::string& text(uint32_t id) const { return strings[id]; }
  uint32_t intern(const std::string& text);
  uint32_t intern_stack(const std::vector<FrFrame>& frames);
  const FrGroupConfig* group(const std::string& name) const;
  size_t memory_bytes() const;  // an estimate, for the bench

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::unordered_map<std::string, uint32_t> stack_ids_;  // frames' ids as bytes -> stack
  std::string stack_key_;  // reused
};

// "all_reduce" from "nccl:all_reduce", "send" from "nccl:send 0->2".
std::string fr_op_type(const std::string& profiling_name);
// A send's or receive's peers in group ranks ("send 0->2": 0 and 2; "recv 2<-0": src 0, dst 2);
// false for any other op or a name that does not parse.
bool fr_p2p_peers(const std::string& profiling_name, int* src, int* dst);
// "[[65536], [2, 3]]" from a list of lists of integers (PyTorch's own repr of sizes).
std::string fr_sizes_text(const std::vector<std::vector<int64_t>>& sizes);
// Elements of the first tensor of a sizes text ("[[4, 4]]" -> 16); nullopt when unparsable.
std::optional<int64_t> fr_first_numel(const std::string& sizes_text);

// The "torch" section of a state document (flight_recorder.cc + pg_join.cc: entries,
// process_groups, pg_status) as records; empty records when the section has none.
FrRankRecords fr_records_from_torch_section(const nlohmann::json& torch);

}  // namespace nsc::torch
