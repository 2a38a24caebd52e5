#include "torch/layout_fit.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "util/strings.h"

namespace nsc {
namespace {

// Bounds no real recorder passes (PyTorch's defaults: 2,000 slots; pg ids count groups).
constexpr uint64_t kMostSlots = uint64_t{1} << 24;
constexpr uint64_t kMostPgId = uint64_t{1} << 20;
constexpr uint64_t kMostSeqId = uint64_t{1} << 40;

struct Verdict {
  std::string misfit;                  // "" when the layout fits
  std::optional<size_t> torn;          // index in entries of the one entry left out
  std::string torn_reason;
};

}  // namespace

std::string ring_bounds_problem(const FlightRecorderState& state) {
  if (!state.misfit.empty()) return state.misfit.front();
  if (state.max_entries > kMostSlots) return "max_entries_ " + std::to_string(state.max_entries) + " slots";
  if (!state.entries_read) return "";  // unreadable memory says nothing of the layout
  if (state.slots > state.max_entries)
    return "entries_ holds " + std::to_string(state.slots) + " slots, max_entries_ is " + std::to_string(state.max_entries);
  if (state.next > state.slots || (state.slots > 0 && state.slots == state.max_entries && state.next >= state.slots))
    return "next_ " + std::to_string(state.next) + " outside the " + std::to_string(state.slots) + " slots";
  if (state.next_id < state.slots)
    return "id_ " + std::to_string(state.next_id) + " below the " + std::to_string(state.slots) + " slots filled";
  return "";
}

namespace {

bool well_formed_text(const std::string& text) {
  if (valid_utf8(text) != text) return false;
  return std::none_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// Why one entry cannot be what PyTorch wrote there ("" when nothing says so).
std::string entry_problem(const RecorderEntry& entry, const FlightRecorderState& state) {
  if (!entry.misfit.empty()) return entry.misfit.front();
  if (entry.pg_id > kMostPgId) return "pg_id " + std::to_string(entry.pg_id);
  for (auto [name, value] : {std::pair<const char*, uint64_t>{"collective_seq_id", entry.collective_seq_id},
                             {"p2p_seq_id", entry.p2p_seq_id}, {"op_id", entry.op_id}})
    if (value > kMostSeqId) return std::string(name) + " " + std::to_string(value);
  if (entry.record_id >= state.next_id)
    return "record id " + std::to_string(entry.record_id) + " not below id_ " + std::to_string(state.next_id);
  for (auto [name, text] : {std::pair<const char*, const std::string*>{"pg name", &entry.pg_name},
                            {"profiling name", &entry.profiling_name}})
    if (text->empty() || !well_formed_text(*text)) return std::string(name) + " is no text";
  if (!well_formed_text(entry.pg_desc) || !well_formed_text(entry.thread_name)) return "pg desc or thread name is no text";
  return "";
}

// Sequence ids never go back within a group, in record order: the entries that do.
std::map<size_t, std::string> sequence_problems(const FlightRecorderState& state, const std::set<size_t>& skip) {
  std::vector<size_t> order;
  for (size_t i = 0; i < state.entries.size(); ++i)
    if (state.entries[i].numbers_read && !skip.count(i)) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return state.entries[a].record_id < state.entries[b].record_id; });
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> highest;  // pg id -> (collective, p2p)
  std::set<uint64_t> seen_ids;
  std::map<size_t, std::string> problems;
  for (size_t i : order) {
    const RecorderEntry& entry = state.entries[i];
    if (!seen_ids.insert(entry.record_id).second) {
      problems[i] = "record id " + std::to_string(entry.record_id) + " twice";
      continue;
    }
    auto& [collective, p2p] = highest[entry.pg_id];
    if (entry.collective_seq_id < collective || entry.p2p_seq_id < p2p) {
      problems[i] = "pg " + std::to_string(entry.pg_id) + " sequence ids go back at record " +
                    std::to_string(entry.record_id) + " (collective " + std::to_string(entry.collective_seq_id) +
                    " after " + std::to_string(collective) + ", p2p " + std::to_string(entry.p2p_seq_id) + " after " +
                    std::to_string(p2p) + ")";
      continue;
    }
    collective = entry.collective_seq_id;
    p2p = entry.p2p_seq_id;
  }
  return problems;
}

Verdict judge(const FlightRecorderState& state) {
  Verdict verdict;
  verdict.misfit = ring_bounds_problem(state);
  if (!verdict.misfit.empty()) return verdict;
  std::map<size_t, std::string> bad;
  size_t read = 0;
  for (size_t i = 0; i < state.entries.size(); ++i) {
    if (!state.entries[i].numbers_read) continue;  // unreadable memory says nothing of the layout
    ++read;
    std::string why = entry_problem(state.entries[i], state);
    if (!why.empty()) bad[i] = why;
  }
  std::set<size_t> skip;
  for (const auto& item : bad) skip.insert(item.first);
  for (auto& [index, why] : sequence_problems(state, skip)) bad.emplace(index, why);
  if (bad.empty()) return verdict;
  if (bad.size() == 1 && read - 1 >= 2) {
    verdict.torn = bad.begin()->first;
    verdict.torn_reason = bad.begin()->second;
    return verdict;
  }
  verdict.misfit = std::to_string(bad.size()) + " of " + std::to_string(read) + " entries: " + bad.begin()->second;
  return verdict;
}

}  // namespace

void apply_layout_fit(FlightRecorderState* state) {
  Verdict verdict = judge(*state);
  if (!verdict.misfit.empty()) {
    state->unavailable = "unreadable: layout does not fit (" + verdict.misfit + ")";
    state->entries.clear();
    state->process_groups.clear();
    state->pg_status.clear();
    return;
  }
  if (verdict.torn) {
    const RecorderEntry& entry = state->entries[*verdict.torn];
    state->errors.push_back("entry at " + hex(entry.address) + " left out: torn (written while the core was taken?): " +
                            verdict.torn_reason);
    state->entries.erase(state->entries.begin() + static_cast<std::ptrdiff_t>(*verdict.torn));
  }
}

}  // namespace nsc
