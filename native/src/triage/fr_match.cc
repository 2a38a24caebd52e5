#include "triage/fr_match.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "triage/call_site.h"
#include "triage/rank_set.h"
#include "triage/summary_helpers.h"
#include "util/json_access.h"

namespace nsc::triage {
namespace {

using nlohmann::json;
using torch::FrRankRecords;
using torch::FrRecord;
using torch::FrState;

// Bounds on the report: every check is made, the first ones are listed.
constexpr size_t kMaxChecksListed = 256, kMaxFramesListed = 16, kMaxRecentPerGroup = 8, kMaxRanksWithRecent = 64;

struct Group {
  std::string name, desc;
  std::vector<int> ranks;                     // global ranks, group rank order
  std::unordered_map<int, int> group_rank;    // global -> group rank
};

uint64_t pair_key(int src, int dst) { return (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(dst); }

// One rank's records indexed by group.
struct Rank {
  int world_rank = 0, process = -1;
  const FrRankRecords* records = nullptr;
  bool evicted = false;  // the ring wrapped: its oldest records are gone
  std::vector<int> group_of_string;  // per string id: group index, -1 none, -2 not yet looked up
  std::unordered_map<int, std::vector<uint32_t>> collectives;  // group -> records, by collective_seq_id
  // group -> (src, dst) global -> its sends (on src) or receives (on dst), in issue order
  std::unordered_map<int, std::unordered_map<uint64_t, std::vector<uint32_t>>> sends, recvs;
  int current = -1;  // its earliest record not completed: what it waits in
  // Per string id: the op type it names ("all_reduce" for "nccl:all_reduce"), and the text's
  // and the op type's ids in the matcher's table shared by all ranks: entries of two ranks
  // (each rank with its own string table) are compared by number, exactly.
  std::vector<std::string> op_type;
  std::vector<uint64_t> shared_id, op_shared_id;
  bool same_text(uint32_t id, const Rank& other, uint32_t other_id) const { return shared_id[id] == other.shared_id[other_id]; }

  const FrRecord& record(uint32_t index) const { return records->records[index]; }
  int64_t seq_at(uint32_t index) const { return record(index).collective_seq.value_or(-1); }
  // Its record of collective `seq` on group `g`, or -1.
  int find(int g, int64_t seq) const {
    auto found = collectives.find(g);
    if (found == collectives.end()) return -1;
    const auto& list = found->second;
    auto at = std::lower_bound(list.begin(), list.end(), seq, [&](uint32_t i, int64_t s) { return seq_at(i) < s; });
    return at != list.end() && seq_at(*at) == seq ? static_cast<int>(*at) : -1;
  }
  int64_t last_seq(int g) const {
    auto found = collectives.find(g);
    return found == collectives.end() || found->second.empty() ? 0 : seq_at(found->second.back());
  }
  int64_t first_seq(int g) const {
    auto found = collectives.find(g);
    return found == collectives.end() || found->second.empty() ? 0 : seq_at(found->second.front());
  }
};

const std::string& op_of(const Rank& rank, const FrRecord& record) { return rank.op_type[record.profiling_name]; }

// A member's records of one collective_seq_id on a group, in issue order: one for a plain
// collective; the ops of a coalescing manager share one id and end in an entry whose op ends in
// "coalesced" (PyTorch 2.7+; torchfrtrace's find_coalesced_group_with_non_p2p).
struct Span {
  const uint32_t* first = nullptr;
  size_t count = 0;
  uint32_t operator[](size_t k) const { return first[k]; }
};

bool ends_coalesced(const std::string& op) {
  static const std::string kSuffix = "coalesced";
  return op.size() >= kSuffix.size() && op.compare(op.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

// Hashes of a coalesced group's entries, folded in order (a plain collective keeps its own).
uint64_t fold(uint64_t so_far, uint64_t next, bool first) { return first ? next : so_far * 0x9e3779b97f4a7c15ull ^ next; }

// What a member issued at one sequence id, as the majority test compares it: op type, input
// sizes and dtypes (by their texts' hashes), or nothing.
struct IssuedKey {
  bool nothing = false;
  uint64_t type = 0, sizes = 0, dtypes = 0;
  bool operator<(const IssuedKey& o) const {
    return std::tie(nothing, type, sizes, dtypes) < std::tie(o.nothing, o.type, o.sizes, o.dtypes);
  }
  bool operator!=(const IssuedKey& o) const { return *this < o || o < *this; }
};

CallSite call_site_of(const Rank& rank, const FrRecord& record) {
  std::vector<FrameView> frames;
  for (const torch::FrFrame& frame : rank.records->stacks[record.stack])
    frames.push_back(make_python_frame(rank.records->text(frame.name), rank.records->text(frame.filename), frame.line, ""));
  return user_call_site(frames);
}

// "run_tpdp (train.py:96)", "" when no user frame.
std::string site_text(const Rank& rank, const FrRecord& record) {
  CallSite site = call_site_of(rank, record);
  return site.found() ? site.function + " (" + site.location + ")" : "";
}

json record_json(const Rank& rank, uint32_t index) {
  const FrRecord& record = rank.record(index);
  const FrRankRecords& r = *rank.records;
  json frames = json::array();
  for (const torch::FrFrame& frame : r.stacks[record.stack]) {
    if (frames.size() >= kMaxFramesListed) break;
    frames.push_back({{"name", r.text(frame.name)}, {"filename", r.text(frame.filename)},
                      {"line", frame.line ? json(*frame.line) : json(nullptr)}});
  }
  std::string site = site_text(rank, record);
  return {{"record_id", record.record_id ? json(*record.record_id) : json(nullptr)},
          {"op", op_of(rank, record)},
          {"profiling_name", r.text(record.profiling_name)},
          {"collective_seq_id", record.collective_seq ? json(*record.collective_seq) : json(nullptr)},
          {"p2p_seq_id", record.p2p_seq ? json(*record.p2p_seq) : json(nullptr)},
          {"is_p2p", record.is_p2p},
          {"input_sizes", r.text(record.input_sizes)},
          {"output_sizes", r.text(record.output_sizes)},
          {"input_dtypes", r.text(record.input_dtypes)},
          {"output_dtypes", r.text(record.output_dtypes)},
          {"state", torch::fr_state_name(record.state)},
          {"call_site", site.empty() ? json(nullptr) : json(site)},
          {"frames", frames}};
}

// "all_reduce #4 [[65536]] [Float] (scheduled) at run_tpdp (train.py:96)".
std::string record_text(const Rank& rank, uint32_t index, bool with_state = true) {
  const FrRecord& record = rank.record(index);
  std::string text = op_of(rank, record) + " #" +
                     std::to_string(record.is_p2p ? record.p2p_seq.value_or(-1) : record.collective_seq.value_or(-1)) +
                     " " + rank.records->text(record.input_sizes) + " " + rank.records->text(record.input_dtypes);
  if (with_state) text += std::string(" (") + torch::fr_state_name(record.state) + ")";
  std::string site = site_text(rank, record);
  return site.empty() ? text : text + " at " + site;
}

// "all_reduce #4 (scheduled) at run_tpdp (train.py:96)": where a rank is, in few words.
std::string short_text(const Rank& rank, uint32_t index) {
  const FrRecord& record = rank.record(index);
  std::string text = op_of(rank, record) + " #" +
                     std::to_string(record.is_p2p ? record.p2p_seq.value_or(-1) : record.collective_seq.value_or(-1)) +
                     " (" + torch::fr_state_name(record.state) + ")";
  std::string site = site_text(rank, record);
  return site.empty() ? text : text + " at " + site;
}

class Matcher {
 public:
  Matcher(const std::vector<FrRankInput>& inputs, size_t process_count) {
    out_.recorded_site.assign(process_count, "");
    out_.waits_from_records.assign(process_count, false);
    out_.records_unfinished.assign(process_count, false);
    for (const FrRankInput& input : inputs) add_rank(input);
    for (Rank& rank : ranks_) index_rank(&rank);
  }

  FrMatch run() {
    json groups = json::array();
    for (size_t g = 0; g < groups_.size(); ++g) groups.push_back(check_group(static_cast<int>(g)));
    json ranks = json::array();
    for (Rank& rank : ranks_) ranks.push_back(rank_json(rank));
    for (const Rank& rank : ranks_) add_waits(rank);
    json divergences = json::array();
    for (const auto& [rank, divergence] : divergence_) divergences.push_back(divergence);
    out_.section = {{"schema_note", "PyTorch's flight recorder, matched across ranks as torchfrtrace does"},
                    {"ranks", ranks},
                    {"groups", groups},
                    {"checks", checks_},
                    {"checks_left_out", checks_left_out_},
                    {"divergences", divergences},
                    {"notes", notes_}};
    flush_findings();
    return std::move(out_);
  }

 private:
  // --- indexing --------------------------------------------------------------------------

  void add_rank(const FrRankInput& input) {
    if (input.records == nullptr) return;
    if (rank_index_.count(input.world_rank)) {
      notes_.push_back("rank " + std::to_string(input.world_rank) + ": records of a second input ignored");
      return;
    }
    Rank rank;
    rank.world_rank = input.world_rank;
    rank.process = input.process;
    rank.records = input.records;
    rank.group_of_string.assign(input.records->strings.size(), -2);
    for (const std::string& text : input.records->strings) {
      rank.op_type.push_back(torch::fr_op_type(text));
      rank.shared_id.push_back(shared_id(text));
      rank.op_shared_id.push_back(shared_id(rank.op_type.back()));
    }
    for (const torch::FrGroupConfig& config : input.records->groups) group_index(*input.records, config);
    rank_index_[input.world_rank] = ranks_.size();
    ranks_.push_back(std::move(rank));
  }

  uint64_t shared_id(const std::string& text) {
    return shared_ids_.emplace(text, shared_ids_.size()).first->second;
  }

  int group_index(const FrRankRecords& records, const torch::FrGroupConfig& config) {
    const std::string& name = records.text(config.name);
    auto [found, added] = group_by_name_.emplace(name, static_cast<int>(groups_.size()));
    if (added) {
      Group group{name, records.text(config.desc), config.ranks, {}};
      for (size_t i = 0; i < group.ranks.size(); ++i) group.group_rank.emplace(group.ranks[i], static_cast<int>(i));
      groups_.push_back(std::move(group));
    }
    return found->second;
  }

  int group_of(Rank* rank, uint32_t pg_name) {
    int& cached = rank->group_of_string[pg_name];
    if (cached == -2) {
      auto found = group_by_name_.find(rank->records->text(pg_name));
      cached = found == group_by_name_.end() ? -1 : found->second;
    }
    return cached;
  }

  void index_rank(Rank* rank) {
    const auto& records = rank->records->records;
    rank->evicted = !records.empty() && records.front().record_id.value_or(0) > 0;
    size_t unknown_group = 0;
    for (uint32_t i = 0; i < records.size(); ++i) {
      const FrRecord& record = records[i];
      int g = group_of(rank, record.pg_name);
      if (g < 0) {
        ++unknown_group;
        continue;
      }
      if (rank->current < 0 && record.state != FrState::kCompleted && record.state != FrState::kUnknown)
        rank->current = static_cast<int>(i);
      if (!record.is_p2p) {
        if (record.collective_seq) rank->collectives[g].push_back(i);
        continue;
      }
      int src, dst;
      const Group& group = groups_[g];
      if (!torch::fr_p2p_peers(rank->records->text(record.profiling_name), &src, &dst) || src < 0 || dst < 0 ||
          static_cast<size_t>(src) >= group.ranks.size() || static_cast<size_t>(dst) >= group.ranks.size())
        continue;
      uint64_t key = pair_key(group.ranks[src], group.ranks[dst]);
      bool send = torch::fr_op_type(rank->records->text(record.profiling_name)) == "send";
      (send ? rank->sends : rank->recvs)[g][key].push_back(i);
    }
    for (auto& [g, list] : rank->collectives)
      std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) { return rank->seq_at(a) < rank->seq_at(b); });
    if (unknown_group)
      notes_.push_back("rank " + std::to_string(rank->world_rank) + ": " + std::to_string(unknown_group) +
                       " record(s) name a process group its pg_config lacks: not matched");
    if (rank->process >= 0) {
      out_.waits_from_records[rank->process] = true;
      out_.records_unfinished[rank->process] = rank->current >= 0;
      uint32_t shown = rank->current >= 0 ? rank->current : static_cast<uint32_t>(records.size() - 1);
      if (!records.empty()) {
        int g = group_of(rank, records[shown].pg_name);
        std::string pg = g >= 0 ? pg_text(groups_[g]) : rank->records->text(records[shown].pg_desc);
        out_.recorded_site[rank->process] =
            rank->current >= 0 ? short_text(*rank, shown) + " on pg " + pg + " (flight recorder)"
                               : "no recorded operation (all completed; last: " + short_text(*rank, shown) + " on pg " + pg + ")";
      }
    }
  }

  const Rank* rank_of(int world) const {
    auto found = rank_index_.find(world);
    return found == rank_index_.end() ? nullptr : &ranks_[found->second];
  }

  static std::string pg_text(const Group& group) { return group.desc.empty() || group.desc == "undefined" ? group.name : group.desc; }

  // --- torchfrtrace's checks, per group --------------------------------------------------

  json check_group(int g) {
    const Group& group = groups_[g];
    std::unordered_set<int64_t> seen;
    std::vector<int64_t> seqs;
    std::vector<const Rank*> members(group.ranks.size(), nullptr);
    size_t with_records = 0;
    for (size_t m = 0; m < group.ranks.size(); ++m) {
      members[m] = rank_of(group.ranks[m]);
      if (members[m] == nullptr) continue;
      ++with_records;
      auto found = members[m]->collectives.find(g);
      if (found == members[m]->collectives.end()) continue;
      for (uint32_t i : found->second)
        if (seen.insert(members[m]->seq_at(i)).second) seqs.push_back(members[m]->seq_at(i));
    }
    std::sort(seqs.begin(), seqs.end());
    size_t matched = 0, mismatched = 0;
    std::vector<bool> diverged(group.ranks.size(), false);
    // Each member's collectives on the group, walked once in sequence order.
    Cursors cursors;
    for (const Rank* member : members) {
      const std::vector<uint32_t>* list = nullptr;
      if (member != nullptr)
        if (auto found = member->collectives.find(g); found != member->collectives.end()) list = &found->second;
      cursors.lists.push_back(list);
    }
    cursors.at.assign(members.size(), 0);
    for (int64_t seq : seqs) {
      bool ok = check_collective(g, members, seq, &cursors, &diverged);
      (ok ? matched : mismatched) += 1;
    }
    auto [pairs, unmatched] = check_p2p(g, members);
    return {{"pg", group.name}, {"desc", group.desc}, {"ranks", group.ranks}, {"ranks_with_records", with_records},
            {"collectives_checked", seqs.size()}, {"fully_matched", matched}, {"not_matched", mismatched},
            {"p2p_pairs_checked", pairs}, {"p2p_unmatched", unmatched}, {"p2p_partners_lost", p2p_lost_[g]}};
  }

  // One collective across the members: missing ranks, then each member against the majority
  // entry in torchfrtrace's order (type, input sizes, output sizes, dtypes, state).
  struct Cursors {
    std::vector<const std::vector<uint32_t>*> lists;  // per member, null without records on the group
    std::vector<size_t> at;
  };

  // The member's records of collective `seq` (seqs asked in ascending order); empty when none.
  static Span advance(const Rank& rank, Cursors* cursors, size_t m, int64_t seq) {
    const std::vector<uint32_t>* list = cursors->lists[m];
    if (list == nullptr) return {};
    size_t& at = cursors->at[m];
    while (at < list->size() && rank.seq_at((*list)[at]) < seq) ++at;
    size_t end = at;
    while (end < list->size() && rank.seq_at((*list)[end]) == seq) ++end;
    return {list->data() + at, end - at};
  }

  // A wrapped ring's oldest record ending a coalesced group: the group's first ops may be gone.
  static bool head_may_be_lost(const Rank& rank, Span span) {
    return rank.evicted && span[0] == 0 && ends_coalesced(op_of(rank, rank.record(span[span.count - 1])));
  }

  bool check_collective(int g, const std::vector<const Rank*>& members, int64_t seq, Cursors* cursors,
                        std::vector<bool>* diverged) {
    const Group& group = groups_[g];
    std::vector<int> index(members.size(), -1);  // each member's first record of the collective
    std::vector<Span> spans(members.size());
    std::vector<int> missing, no_input, evicted;
    std::map<IssuedKey, std::vector<size_t>> by_value;
    std::map<uint64_t, std::vector<size_t>> by_type;
    for (size_t m = 0; m < members.size(); ++m) {
      if (members[m] == nullptr) { no_input.push_back(group.ranks[m]); continue; }
      spans[m] = advance(*members[m], cursors, m, seq);
      if (spans[m].count > 0 && head_may_be_lost(*members[m], spans[m])) {
        evicted.push_back(group.ranks[m]);
        continue;
      }
      index[m] = spans[m].count > 0 ? static_cast<int>(spans[m][0]) : -1;
      if (index[m] < 0) {
        const std::vector<uint32_t>* list = cursors->lists[m];
        int64_t last = list == nullptr || list->empty() ? 0 : members[m]->seq_at(list->back());
        int64_t first = list == nullptr || list->empty() ? 0 : members[m]->seq_at(list->front());
        if (last < seq) {
          missing.push_back(group.ranks[m]);
          by_value[IssuedKey{true}].push_back(m);
        } else if (members[m]->evicted && first > seq) {
          evicted.push_back(group.ranks[m]);
        } else {
          missing.push_back(group.ranks[m]);  // issued later ones but not this one
        }
        continue;
      }
      IssuedKey key = issued_key(*members[m], spans[m]);
      by_type[key.type].push_back(m);
      by_value[key].push_back(m);
    }
    find_divergence(g, members, index, seq, by_value, diverged);
    size_t reference = reference_member(by_type, index);
    if (reference == SIZE_MAX) return true;  // nobody has it: only evicted or absent
    json differing = json::array();
    std::set<std::string> states;
    for (size_t m = 0; m < members.size(); ++m)
      if (index[m] >= 0 && m != reference)
        if (std::string what = compare_spans(*members[reference], spans[reference], *members[m], spans[m], group);
            !what.empty()) {
          differing.push_back({{"rank", group.ranks[m]}, {"match_state", what.substr(0, what.find(':'))},
                               {"why", what.substr(what.find(':') + 2)}});
          states.insert(what.substr(0, what.find(':')));
        }
    // all_to_all: each rank may send different amounts; torchfrtrace checks that the group's
    // input elements add up to its output elements, once every member is present.
    const std::string& reference_type = op_of(*members[reference], members[reference]->record(index[reference]));
    if (missing.empty() && no_input.empty() && evicted.empty() &&
        (reference_type == "all_to_all" || reference_type == "alltoall" || reference_type == "alltoall_base")) {
      int64_t in = 0, out = 0;
      for (size_t m = 0; m < members.size(); ++m) {
        const FrRecord& record = members[m]->record(index[m]);
        in += torch::fr_first_numel(members[m]->records->text(record.input_sizes)).value_or(0);
        out += torch::fr_first_numel(members[m]->records->text(record.output_sizes)).value_or(0);
      }
      if (in != out) {
        differing.push_back({{"rank", nullptr}, {"match_state", "SIZE_OR_SYNTAX_MISMATCH"},
                             {"why", "the group's input numel " + std::to_string(in) + " is not its output numel " +
                                         std::to_string(out)}});
        states.insert("SIZE_OR_SYNTAX_MISMATCH");
      }
    }
    bool missing_known = !missing.empty() && no_input.empty();
    if (differing.empty() && missing.empty() && no_input.empty()) return true;
    // torchfrtrace: missing ranks decide first (when all members dumped), then other errors.
    std::string state = !missing.empty() ? "MISSING_RANKS"
                        : !differing.empty() ? *states.begin() : "UNDECIDED";
    if (checks_.size() < kMaxChecksListed) {
      checks_.push_back({{"pg", group.name}, {"desc", group.desc}, {"collective_seq_id", seq},
                         {"op", op_of(*members[reference], members[reference]->record(index[reference]))},
                         {"match_state", state}, {"missing_ranks", missing}, {"no_input_ranks", no_input},
                         {"evicted_ranks", evicted}, {"differing", differing},
                         {"reference", record_json(*members[reference], index[reference])},
                         {"reference_rank", group.ranks[reference]}});
      if (spans[reference].count > 1) checks_.back()["coalesced_ops"] = spans[reference].count;
      if (!missing_known && !missing.empty())
        checks_.back()["note"] = "ranks without input: torchfrtrace would not decide (it needs a dump from every rank)";
    } else {
      ++checks_left_out_;
    }
    add_mismatch_finding(g, members, index, seq, by_value);
    return false;
  }

  // What a member issued at one collective_seq_id, its coalesced group's entries folded in order.
  static IssuedKey issued_key(const Rank& member, Span span) {
    IssuedKey key;
    for (size_t k = 0; k < span.count; ++k) {
      const FrRecord& record = member.record(span[k]);
      key.type = fold(key.type, member.op_shared_id[record.profiling_name], k == 0);
      key.sizes = fold(key.sizes, member.shared_id[record.input_sizes], k == 0);
      key.dtypes = fold(key.dtypes, member.shared_id[record.input_dtypes], k == 0);
    }
    return key;
  }

  // Two members' coalesced groups, op by op as torchfrtrace matches them (each op against the
  // op at the same place), then their lengths; "" when they match.
  static std::string compare_spans(const Rank& a, Span x, const Rank& b, Span y, const Group& group) {
    size_t common = std::min(x.count, y.count);
    for (size_t k = 0; k < common; ++k) {
      std::string what = compare(a, x[k], b, y[k], group);
      if (what.empty()) continue;
      if (x.count == 1 && y.count == 1) return what;
      size_t colon = what.find(": ");  // "STATE: why" -> "STATE: op k of the coalesced group: why"
      return what.substr(0, colon + 2) + "op " + std::to_string(k + 1) + " of the coalesced group: " +
             what.substr(colon + 2);
    }
    if (x.count == y.count) return "";
    return "COLLECTIVE_TYPE_MISMATCH: a coalesced group of " + std::to_string(y.count) +
           " op(s) where the others issued " + std::to_string(x.count);
  }

  // The member whose entry most members share (op type first): the one others are held to.
  static size_t reference_member(const std::map<uint64_t, std::vector<size_t>>& by_type, const std::vector<int>& index) {
    size_t best = SIZE_MAX, count = 0;
    for (const auto& [type, list] : by_type)
      if (list.size() > count) best = list.front(), count = list.size();
    (void)index;
    return best;
  }

  // torchfrtrace's Op.match of two collective entries, as "STATE: why"; "" when they match.
  static std::string compare(const Rank& a, int ia, const Rank& b, int ib, const Group& group) {
    const FrRecord &x = a.record(ia), &y = b.record(ib);
    const std::string &type = op_of(a, x), &other = op_of(b, y);
    auto text = [](const Rank& r, uint32_t id) { return r.records->text(id); };
    if (a.op_shared_id[x.profiling_name] != b.op_shared_id[y.profiling_name])
      return "COLLECTIVE_TYPE_MISMATCH: " + other + " where the others issued " + type;
    bool alltoall = type == "all_to_all" || type == "alltoall" || type == "alltoall_base";
    if (!alltoall && type != "scatter" && !a.same_text(x.input_sizes, b, y.input_sizes))
      return "SIZE_OR_SYNTAX_MISMATCH: input sizes " + text(b, y.input_sizes) + " vs " + text(a, x.input_sizes);
    if (!alltoall && type != "gather" && !a.same_text(x.output_sizes, b, y.output_sizes))
      return "SIZE_OR_SYNTAX_MISMATCH: output sizes " + text(b, y.output_sizes) + " vs " + text(a, x.output_sizes);
    if ((type == "all_reduce" || type == "allreduce_coalesced") && !a.same_text(x.input_sizes, b, y.output_sizes))
      return "SIZE_OR_SYNTAX_MISMATCH: output sizes " + text(b, y.output_sizes) + " vs input " + text(a, x.input_sizes);
    int64_t size = static_cast<int64_t>(group.ranks.size());
    if (type == "all_gather" || type == "_all_gather_base" || type == "all_gather_into_tensor_coalesced") {
      auto in = torch::fr_first_numel(text(a, x.input_sizes)), out = torch::fr_first_numel(text(b, y.output_sizes));
      if (in && out && *out != *in * size)
        return "SIZE_OR_SYNTAX_MISMATCH: output numel " + std::to_string(*out) + " is not input numel " +
               std::to_string(*in) + " x group size " + std::to_string(size);
    }
    if (type == "reduce_scatter" || type == "_reduce_scatter_base" || type == "reduce_scatter_tensor_coalesced") {
      auto in = torch::fr_first_numel(text(b, y.input_sizes)), out = torch::fr_first_numel(text(a, x.output_sizes));
      if (in && out && *in != *out * size)
        return "SIZE_OR_SYNTAX_MISMATCH: input numel " + std::to_string(*in) + " is not output numel " +
               std::to_string(*out) + " x group size " + std::to_string(size);
    }
    if (!a.same_text(x.input_dtypes, b, y.input_dtypes) && text(a, x.input_sizes) != "[[]]")
      return "COLLECTIVE_DTYPE_MISMATCH: input dtypes " + text(b, y.input_dtypes) + " vs " + text(a, x.input_dtypes);
    if (!a.same_text(x.output_dtypes, b, y.output_dtypes) && type != "gather" && text(a, x.output_sizes) != "[[]]")
      return "COLLECTIVE_DTYPE_MISMATCH: output dtypes " + text(b, y.output_dtypes) + " vs " + text(a, x.output_dtypes);
    if (x.state != y.state)
      return std::string("COLLECTIVE_STATE_MISMATCH: ") + torch::fr_state_name(y.state) + " vs " + torch::fr_state_name(x.state);
    return "";
  }

  // A type, size or dtype mismatch: the finding a mismatch verdict rests on (first per group).
  void add_mismatch_finding(int g, const std::vector<const Rank*>& members, const std::vector<int>& index, int64_t seq,
                            const std::map<IssuedKey, std::vector<size_t>>& by_value) {
    if (mismatch_reported_.count(g)) return;
    std::map<IssuedKey, std::vector<size_t>> present = by_value;
    present.erase(IssuedKey{true});
    if (present.size() < 2) return;
    const Group& group = groups_[g];
    std::set<uint64_t> types;
    std::set<std::pair<uint64_t, uint64_t>> sizes;
    for (const auto& [value, list] : present) {
      types.insert(value.type);
      sizes.insert({value.type, value.sizes});
    }
    std::string kind = types.size() > 1 ? "pg-type-mismatch" : sizes.size() > 1 ? "pg-size-mismatch" : "pg-dtype-mismatch";
    Finding finding{kind};
    finding.seq = seq;
    size_t holders = 0;
    for (const auto& [value, list] : present) holders += list.size();
    for (const auto& [value, list] : present)
      if (2 * list.size() > holders)
        for (const auto& [other, other_list] : present)
          if (other != value)
            for (size_t m : other_list) finding.culprits.push_back(group.ranks[m]);
    normalize_ranks(&finding.culprits);
    json values = json::array();
    for (size_t m = 0; m < members.size(); ++m)
      if (index[m] >= 0) {
        if (finding.collective.empty()) finding.collective = op_of(*members[m], members[m]->record(index[m]));
        finding.evidence.push_back("PyTorch's flight recorder: rank " + std::to_string(group.ranks[m]) + " issued " +
                                   record_text(*members[m], index[m]));
        values.push_back({{"rank", group.ranks[m]}, {"entry", record_json(*members[m], index[m])}});
      }
    finding.torch_op = finding.collective;
    finding.torch_seq = seq;
    finding.extra = {{"pg", group.name}, {"pg_desc", group.desc}, {"source", "pytorch-flight-recorder"}, {"values", values}};
    mismatch_reported_.insert(g);
    out_.findings.push_back(std::move(finding));
  }

  // Where each rank first leaves the strict majority of its group (at least two ranks agree).
  void find_divergence(int g, const std::vector<const Rank*>& members, const std::vector<int>& index, int64_t seq,
                       const std::map<IssuedKey, std::vector<size_t>>& by_value, std::vector<bool>* diverged) {
    size_t voters = 0;
    for (const auto& [value, list] : by_value) voters += list.size();
    const std::vector<size_t>* majority = nullptr;
    for (const auto& [value, list] : by_value)
      if (2 * list.size() > voters && list.size() >= 2) majority = &list;
    if (majority == nullptr || majority->size() == voters) return;
    const Group& group = groups_[g];
    std::vector<int> majority_ranks;
    for (size_t m : *majority) majority_ranks.push_back(group.ranks[m]);
    size_t example = majority->front();
    std::string they = index[example] >= 0 ? "issued " + record_text(*members[example], index[example], false)
                                           : "issued nothing there (their last on it is #" +
                                                 std::to_string(members[example]->last_seq(g)) + ")";
    for (const auto& [value, list] : by_value) {
      if (&list == majority) continue;
      for (size_t m : list) {
        if ((*diverged)[m]) continue;
        (*diverged)[m] = true;
        const Rank& rank = *members[m];
        std::string it = index[m] >= 0 ? "issued " + record_text(rank, index[m], false)
                                       : "issued nothing there (its last on it is #" + std::to_string(rank.last_seq(g)) + ")";
        // The rank's own position: the record it diverged with, else its last one before.
        int64_t position = index[m] >= 0 ? rank.record(index[m]).record_id.value_or(0) : INT64_MAX;
        std::string text = "rank " + std::to_string(group.ranks[m]) + " leaves " + ranks_phrase(majority_ranks) + " at " +
                           pg_text(group) + " #" + std::to_string(seq) + ": it " + it + " where they " + they;
        auto found = divergence_.find(group.ranks[m]);
        if (found != divergence_.end() && found->second["position"].get<int64_t>() <= position) continue;
        divergence_[group.ranks[m]] = {{"rank", group.ranks[m]}, {"pg", group.name}, {"desc", group.desc},
                                      {"collective_seq_id", seq}, {"majority_ranks", majority_ranks},
                                      {"issued", index[m] >= 0 ? record_json(rank, index[m]) : json(nullptr)},
                                      {"majority_issued", index[example] >= 0 ? record_json(*members[example], index[example]) : json(nullptr)},
                                      {"position", position}, {"text", text}};
      }
    }
  }

  // How one pair's sends (on the sender) and receives (on the receiver) line up: send i with
  // receive i - offset. With both rings whole, from their starts: every operation is there.
  // After a wrap either ring may have lost its oldest ones, how many is not recorded: the lists
  // are aligned at each side's first operation not completed (NCCL completes a send with its
  // receive, so in a hang both sides completed the same ones), and the older operations whose
  // partner a wrapped ring no longer holds are counted, not paired.
  struct P2pAlignment {
    long offset = 0;
    bool wrapped = false;
    size_t partners_lost = 0;   // operations older than what the other (wrapped) ring holds
    size_t without_partner = 0; // operations the other side never issued, by this alignment
  };

  static long first_not_completed(const Rank& rank, const std::vector<uint32_t>& list) {
    for (size_t i = 0; i < list.size(); ++i) {
      FrState state = rank.record(list[i]).state;
      if (state == FrState::kScheduled || state == FrState::kStarted) return static_cast<long>(i);
    }
    return static_cast<long>(list.size());
  }

  static P2pAlignment align_p2p(const Rank& sender, const std::vector<uint32_t>& sends, const Rank& receiver,
                                const std::vector<uint32_t>& recvs) {
    P2pAlignment a;
    a.wrapped = sender.evicted || receiver.evicted;
    long send_count = static_cast<long>(sends.size()), recv_count = static_cast<long>(recvs.size());
    if (a.wrapped) a.offset = first_not_completed(sender, sends) - first_not_completed(receiver, recvs);
    // Older unpaired operations: lost with the other side's wrapped ring, else never matched.
    size_t older = static_cast<size_t>(a.offset > 0 ? a.offset : -a.offset);
    bool other_wrapped = a.offset > 0 ? receiver.evicted : sender.evicted;
    (other_wrapped ? a.partners_lost : a.without_partner) += older;
    // Newer unpaired operations: the other side has not issued them.
    a.without_partner += static_cast<size_t>(std::labs(send_count - a.offset - recv_count));
    return a;
  }

  // Sends and receives of each ordered pair, matched in issue order (torchfrtrace's rule 3:
  // sends to one peer and receives from it keep their order).
  std::pair<size_t, size_t> check_p2p(int g, const std::vector<const Rank*>& members) {
    const Group& group = groups_[g];
    std::set<uint64_t> pairs;
    for (const Rank* rank : members) {
      if (rank == nullptr) continue;
      for (const auto* side : {&rank->sends, &rank->recvs})
        if (auto found = side->find(g); found != side->end())
          for (const auto& [key, list] : found->second) pairs.insert(key);
    }
    size_t unmatched = 0, lost = 0, aligned_after_wrap = 0;
    for (uint64_t key : pairs) {
      int src = static_cast<int>(key >> 32), dst = static_cast<int>(key & 0xffffffffu);
      const Rank *sender = rank_of(src), *receiver = rank_of(dst);
      if (sender == nullptr || receiver == nullptr) continue;
      const std::vector<uint32_t>& sends = list_of(sender->sends, g, key);
      const std::vector<uint32_t>& recvs = list_of(receiver->recvs, g, key);
      P2pAlignment a = align_p2p(*sender, sends, *receiver, recvs);
      lost += a.partners_lost;
      aligned_after_wrap += a.wrapped;
      json differing = json::array();
      long first = std::max(0L, a.offset), end = std::min<long>(static_cast<long>(sends.size()), static_cast<long>(recvs.size()) + a.offset);
      for (long k = first; k < end; ++k) {
        const std::string& sent = sender->records->text(sender->record(sends[k]).input_sizes);
        const std::string& received = receiver->records->text(receiver->record(recvs[k - a.offset]).output_sizes);
        if (sent != received)
          differing.push_back({{"index", k}, {"why", "send input sizes " + sent + " vs recv output sizes " + received}});
      }
      if (a.without_partner == 0 && differing.empty()) continue;
      ++unmatched;
      if (checks_.size() >= kMaxChecksListed) { ++checks_left_out_; continue; }
      checks_.push_back({{"pg", group.name}, {"desc", group.desc}, {"op", "send/recv"}, {"src", src}, {"dst", dst},
                         {"match_state", differing.empty() ? "MISSING_RANKS" : "SIZE_OR_SYNTAX_MISMATCH"},
                         {"sends", sends.size()}, {"recvs", recvs.size()}, {"differing", differing},
                         {"aligned", a.wrapped ? "at each side's first operation not completed (a ring wrapped)" : "from the start"},
                         {"partners_lost", a.partners_lost}});
    }
    if (aligned_after_wrap)
      notes_.push_back("pg " + pg_text(group) + ": " + std::to_string(aligned_after_wrap) + " send/recv pair(s) of wrapped rings "
                       "paired at each side's first operation not completed; " + std::to_string(lost) +
                       " older operation(s) have their partner only in records the rings no longer hold");
    p2p_lost_[g] = lost;
    return {pairs.size(), unmatched};
  }

  static const std::vector<uint32_t>& list_of(
      const std::unordered_map<int, std::unordered_map<uint64_t, std::vector<uint32_t>>>& side, int g, uint64_t key) {
    static const std::vector<uint32_t> kEmpty;
    auto found = side.find(g);
    if (found == side.end()) return kEmpty;
    auto pair = found->second.find(key);
    return pair == found->second.end() ? kEmpty : pair->second;
  }

  // --- what each rank waits on -------------------------------------------------------------

  struct WaitKey {
    std::string kind, pg, op;
    int64_t seq;
    std::vector<int> targets;
    bool operator<(const WaitKey& o) const {
      return std::tie(kind, pg, op, seq, targets) < std::tie(o.kind, o.pg, o.op, o.seq, o.targets);
    }
  };

  void add_waits(const Rank& rank) {
    if (rank.current < 0) return;
    const FrRecord& record = rank.record(rank.current);
    auto found = group_by_name_.find(rank.records->text(record.pg_name));
    if (found == group_by_name_.end()) return;
    int g = found->second;
    std::vector<int> never, queued, absent;
    if (!record.is_p2p && !record.collective_seq) return;
    if (!record.is_p2p) collective_waits(rank, g, *record.collective_seq, &never, &queued, &absent);
    else p2p_waits(rank, g, record, &never, &queued, &absent);
    std::string op = op_of(rank, record);
    int64_t seq = record.is_p2p ? record.p2p_seq.value_or(-1) : record.collective_seq.value_or(-1);
    if (!never.empty()) wait(record.is_p2p ? "pg-p2p-unmatched" : "pg-not-issued", g, op, seq, never, rank);
    if (!absent.empty()) wait("pg-no-input", g, op, seq, absent, rank);
    if (!queued.empty()) wait("pg-queued", g, op, seq, queued, rank);
  }

  void collective_waits(const Rank& rank, int g, int64_t seq, std::vector<int>* never, std::vector<int>* queued,
                        std::vector<int>* absent) const {
    for (int member : groups_[g].ranks) {
      if (member == rank.world_rank) continue;
      const Rank* other = rank_of(member);
      if (other == nullptr) { absent->push_back(member); continue; }
      int index = other->find(g, seq);
      if (index < 0) {
        if (other->last_seq(g) < seq) never->push_back(member);
        continue;
      }
      if (other->current >= 0 && other->current < index) queued->push_back(member);
    }
  }

  void p2p_waits(const Rank& rank, int g, const FrRecord& record, std::vector<int>* never, std::vector<int>* queued,
                 std::vector<int>* absent) {
    int src, dst;
    const Group& group = groups_[g];
    if (!torch::fr_p2p_peers(rank.records->text(record.profiling_name), &src, &dst) ||
        static_cast<size_t>(std::max(src, dst)) >= group.ranks.size())
      return;
    bool send = torch::fr_op_type(rank.records->text(record.profiling_name)) == "send";
    uint64_t key = pair_key(group.ranks[src], group.ranks[dst]);
    int peer = send ? group.ranks[dst] : group.ranks[src];
    const Rank* other = rank_of(peer);
    if (other == nullptr) { absent->push_back(peer); return; }
    const std::vector<uint32_t>& mine = list_of(send ? rank.sends : rank.recvs, g, key);
    const std::vector<uint32_t>& theirs = list_of(send ? other->recvs : other->sends, g, key);
    P2pAlignment a = send ? align_p2p(rank, mine, *other, theirs) : align_p2p(*other, theirs, rank, mine);
    long k = std::find(mine.begin(), mine.end(), static_cast<uint32_t>(rank.current)) - mine.begin();
    long partner = send ? k - a.offset : k + a.offset;
    if (partner < 0) return;  // its partner is older than what the peer's wrapped ring holds
    if (partner >= static_cast<long>(theirs.size())) never->push_back(peer);
    else if (other->current >= 0 && other->current < static_cast<int>(theirs[partner])) queued->push_back(peer);
  }

  void wait(const std::string& kind, int g, const std::string& op, int64_t seq, std::vector<int> targets, const Rank& rank) {
    normalize_ranks(&targets);
    WaitKey key{kind, groups_[g].name, op, seq, targets};
    auto& entry = waits_[key];
    entry.first.push_back(rank.world_rank);
    if (entry.second.empty()) entry.second = record_text(rank, rank.current);
  }

  void flush_findings() {
    for (const auto& [key, waiting] : waits_) {
      Finding finding{key.kind, key.op};
      finding.seq = key.seq;
      finding.torch_op = key.op;
      finding.torch_seq = key.seq;
      finding.waiting = waiting.first;
      finding.culprits = key.targets;
      normalize_ranks(&finding.waiting);
      finding.explains_hang = key.kind != "pg-queued";
      finding.culprits_absent = key.kind == "pg-no-input";
      const Group& group = groups_[group_by_name_.at(key.pg)];
      finding.edge_kind = key.kind == "pg-queued" ? "queued" : key.kind == "pg-p2p-unmatched" ? "p2p" : "collective";
      finding.evidence.push_back("PyTorch's flight recorder (pg " + pg_text(group) + "): " +
                                 ranks_phrase(finding.waiting) + " " + verb_for(finding.waiting, "waits", "wait") + " in " +
                                 waiting.second);
      finding.extra = {{"pg", group.name}, {"pg_desc", group.desc}, {"source", "pytorch-flight-recorder"}};
      out_.findings.push_back(std::move(finding));
    }
  }

  // --- per rank ----------------------------------------------------------------------------

  json rank_json(Rank& rank) {
    const FrRankRecords& records = *rank.records;
    std::map<int, std::vector<uint32_t>> by_group;
    for (uint32_t i = 0; i < records.records.size(); ++i) {
      int g = group_of(&rank, records.records[i].pg_name);
      if (g >= 0) by_group[g].push_back(i);
    }
    json groups = json::array();
    bool recent = ranks_.size() <= kMaxRanksWithRecent;
    for (const auto& entry : by_group) {
      int g = entry.first;
      const std::vector<uint32_t>& list = entry.second;  // a plain reference: C++17 lambdas cannot capture bindings
      auto last_with = [&](auto wanted) -> json {
        for (size_t i = list.size(); i-- > 0;)
          if (wanted(records.records[list[i]].state)) return record_json(rank, list[i]);
        return nullptr;
      };
      json group = {{"pg", groups_[g].name}, {"desc", groups_[g].desc},
                    {"last_enqueued", record_json(rank, list.back())},
                    {"last_started", last_with([](FrState s) { return s == FrState::kStarted || s == FrState::kCompleted; })},
                    {"last_completed", last_with([](FrState s) { return s == FrState::kCompleted; })}};
      if (recent) {
        json items = json::array();
        for (size_t i = list.size() > kMaxRecentPerGroup ? list.size() - kMaxRecentPerGroup : 0; i < list.size(); ++i)
          items.push_back(record_json(rank, list[i]));
        group["recent"] = items;
      }
      groups.push_back(group);
    }
    json status = json::array();
    for (const torch::FrGroupStatus& row : records.pg_status)
      status.push_back({{"pg_id", row.pg_id},
                        {"last_enqueued_collective", row.last_enqueued ? json(*row.last_enqueued) : json(nullptr)},
                        {"last_started_collective", row.last_started ? json(*row.last_started) : json(nullptr)},
                        {"last_completed_collective", row.last_completed ? json(*row.last_completed) : json(nullptr)}});
    auto divergence = divergence_.find(rank.world_rank);
    return {{"rank", rank.world_rank},
            {"version", records.version.empty() ? json(nullptr) : json(records.version)},
            {"entries", records.records.size()},
            {"ring_wrapped", rank.evicted},
            {"waits_in", rank.current >= 0 ? record_json(rank, rank.current) : json(nullptr)},
            {"groups", groups},
            {"pg_status", status},
            {"divergence", divergence == divergence_.end() ? json(nullptr) : json(divergence->second["text"])}};
  }

  std::vector<Group> groups_;
  std::unordered_map<std::string, int> group_by_name_;
  std::unordered_map<std::string, uint64_t> shared_ids_;  // every rank's strings: Rank::shared_id
  std::vector<Rank> ranks_;
  std::unordered_map<int, size_t> rank_index_;
  json checks_ = json::array();
  size_t checks_left_out_ = 0;
  std::map<int, json> divergence_;
  std::set<int> mismatch_reported_;
  std::map<int, size_t> p2p_lost_;  // per group: operations whose partner a wrapped ring lost
  std::map<WaitKey, std::pair<std::vector<int>, std::string>> waits_;
  std::vector<std::string> notes_;
  FrMatch out_;
};

}  // namespace

FrMatch match_flight_records(const std::vector<FrRankInput>& ranks, size_t process_count) {
  bool any = std::any_of(ranks.begin(), ranks.end(), [](const FrRankInput& r) { return r.records != nullptr; });
  if (!any) {
    FrMatch none;
    none.recorded_site.assign(process_count, "");
    none.waits_from_records.assign(process_count, false);
    none.records_unfinished.assign(process_count, false);
    return none;
  }
  return Matcher(ranks, process_count).run();
}

std::vector<std::string> fr_dump_conflicts(const std::vector<const torch::FrRankRecords*>& ranks) {
  // Per group name: how many dumps give each "desc [ranks]".
  std::map<std::string, std::map<std::string, size_t>> votes;
  auto signature = [](const FrRankRecords& records, const torch::FrGroupConfig& config) {
    return records.text(config.desc) + " [" + format_rank_set(config.ranks) + "]";
  };
  std::map<std::string, size_t> versions;
  for (const FrRankRecords* records : ranks) {
    ++versions[records->version];
    for (const torch::FrGroupConfig& config : records->groups) ++votes[records->text(config.name)][signature(*records, config)];
  }
  std::vector<std::string> out;
  for (const FrRankRecords* records : ranks) {
    std::string why;
    for (const torch::FrGroupConfig& config : records->groups) {
      const auto& counts = votes[records->text(config.name)];
      std::string mine = signature(*records, config);
      for (const auto& [other, count] : counts)
        if (other != mine && count > counts.at(mine)) {
          why = "pg " + records->text(config.name) + " is " + mine + " here, " + other + " in " + std::to_string(count) +
                " other dump(s): a dump of another job";
          break;
        }
      if (!why.empty()) break;
    }
    if (why.empty())
      for (const auto& [version, count] : versions)
        if (version != records->version && count > versions[records->version]) {
          why = "dump format version \"" + records->version + "\", \"" + version + "\" in " + std::to_string(count) +
                " other dump(s): a dump of another job or torch";
          break;
        }
    out.push_back(why);
  }
  return out;
}

}  // namespace nsc::triage

namespace nsc::triage {

std::vector<int> ranks_without_records(const Job& job) {
  std::set<int> members;
  const json& groups = json_member(job.flight_recorder, "groups");
  for (const json& group : groups.is_array() ? groups : json::array())
    for (const json& rank : json_member(group, "ranks"))
      if (rank.is_number_integer()) members.insert(rank.get<int>());
  for (const auto& rank : job.world_rank)
    if (rank) members.erase(*rank);
  return std::vector<int>(members.begin(), members.end());
}

void match_torch_records(Job* job) {
  std::vector<FrRankInput> inputs;
  for (size_t p = 0; p < job->processes.size(); ++p) {
    ProcessView& process = job->processes[p];
    if (!process.fr_records && process.torch.is_object())
      process.fr_records = std::make_shared<torch::FrRankRecords>(torch::fr_records_from_torch_section(process.torch));
    if (!process.fr_records || process.fr_records->records.empty() || !job->world_rank[p]) continue;
    inputs.push_back({*job->world_rank[p], static_cast<int>(p), process.fr_records.get()});
  }
  FrMatch match = match_flight_records(inputs, job->processes.size());
  job->flight_recorder = std::move(match.section);
  job->recorded_site = std::move(match.recorded_site);
  job->waits_from_records = std::move(match.waits_from_records);
  job->records_unfinished = std::move(match.records_unfinished);
  // With communicators, NCCL's state decides and PyTorch's records are evidence beside it
  // (torch_join.cc); dumps alone: the records are all there is.
  if (job->comms.empty()) job->torch_findings = std::move(match.findings);
}

}  // namespace nsc::triage
