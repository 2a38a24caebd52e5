// Rules over all ranks of one communicator given among the inputs (grouped by comm_hash).
//
// seq_launched[func] is NCCL's seqNumber[func], bumped once per collective of that type when its
// plan's host task runs (2.28.9 plugin/profiler.cc ncclProfilerStartTaskEvents; graph-captured
// ones are skipped on every rank alike). Every rank issues the same collectives in the same order,
// so the counters of any rank are a prefix of the same sequence: of two ranks, one is ahead or
// equal in every collective. How far one rank may be ahead cannot be bounded from host memory
// (a plan is reclaimed before its kernel ends, so no host list holds all work still on the GPU);
// a rank ahead in one collective and behind in another, however, issued a different order.
// A rank mid-way through launching a group (unlaunched plans) may have counted part of it: such
// ranks are left out of the order check.
#include <algorithm>
#include <map>
#include <set>

#include "audit/audit_report.h"
#include "util/json_access.h"

namespace nsc::audit {
namespace {

using nlohmann::json;

struct Launched {
  CommRef ref;
  std::map<std::string, int64_t> counts;
  int64_t total = 0;
};

// The rank's launched counts, or why they are unusable.
std::optional<Launched> launched_counts(const CommRef& ref, std::string* why) {
  Field seq = comm_field(*ref.comm, "seq_launched");
  if (!seq.known() || !seq.value->is_object() || seq.value->empty()) {
    // A version without seqNumber[] leaves it empty, the reason beside it.
    std::string reason = unavailable_reason(*ref.comm, "seq_launched");
    *why = !seq.known() ? seq.why : reason.empty() ? "seq_launched is empty" : "seq_launched: " + reason;
    return std::nullopt;
  }
  Launched launched{ref, {}, 0};
  for (const auto& [name, count] : seq.value->items()) {
    if (!count.is_number_integer()) {
      *why = "seq_launched." + name + " unavailable";
      return std::nullopt;
    }
    launched.counts[name] = count.get<int64_t>();
    launched.total += count.get<int64_t>();
  }
  return launched;
}

std::string rank_text(const CommRef& ref) {
  std::optional<int64_t> rank = rank_of(*ref.comm);
  return rank ? std::to_string(*rank) : "?";
}

std::vector<CommRef> refs_of(const std::vector<Launched>& ranks) {
  std::vector<CommRef> refs;
  for (const Launched& launched : ranks) refs.push_back(launched.ref);
  return refs;
}

void check_identity(AuditReport& report, const std::vector<CommRef>& ranks) {
  const char* rule = "comm-identity-inconsistent";
  std::set<int64_t> nranks;
  std::map<int64_t, std::vector<CommRef>> holders;
  for (const CommRef& ref : ranks) {
    const json& count = ref.comm->value("nranks", json());
    if (count.is_number_integer()) nranks.insert(count.get<int64_t>());
    if (std::optional<int64_t> rank = rank_of(*ref.comm)) holders[*rank].push_back(ref);
  }
  bool fired = false;
  if (nranks.size() > 1) {
    fired = true;
    report.fire(rule, ranks, "ranks of one comm hash disagree on nranks", {{"nranks_seen", json(nranks)}});
  }
  for (const auto& [rank, refs] : holders) {
    std::set<size_t> inputs;
    for (const CommRef& ref : refs) inputs.insert(ref.input);
    if (inputs.size() < 2) continue;  // one process: the same comm seen twice is not two holders
    fired = true;
    report.fire(rule, refs, "rank " + std::to_string(rank) + " is held by " + std::to_string(inputs.size()) +
                                " inputs (the same rank given twice, or two jobs mixed)",
                {{"rank", rank}, {"inputs", json(inputs)}});
  }
  if (fired) return;
  bool single_rank_comm = nranks.size() == 1 && *nranks.begin() == 1;
  if (ranks.size() < 2 && !single_rank_comm)
    return report.not_checked(rule, ranks, "only rank " + rank_text(ranks.front()) + " of this comm is among the inputs");
  report.passed(rule);
}

// Ranks whose counters can be compared; the others' reasons in *why.
std::vector<Launched> comparable_ranks(const std::vector<CommRef>& ranks, bool skip_mid_launch, std::string* why) {
  std::vector<Launched> usable;
  for (const CommRef& ref : ranks) {
    std::string reason;
    std::optional<Launched> launched = launched_counts(ref, &reason);
    const json unlaunched = comm_field(*ref.comm, "planned.unlaunched_plans").known()
                                ? (*ref.comm)["planned"]["unlaunched_plans"] : json();
    if (launched && skip_mid_launch && !(unlaunched.is_number_integer() && unlaunched.get<int64_t>() == 0))
      reason = unlaunched.is_number_integer() ? "rank " + rank_text(ref) + " is launching a group (unlaunched plans)"
                                              : "rank " + rank_text(ref) + ": planned.unlaunched_plans unavailable";
    else if (launched) {
      usable.push_back(*launched);
      continue;
    } else {
      reason = "rank " + rank_text(ref) + ": " + reason;
    }
    if (why->empty()) *why = reason;
  }
  return usable;
}

// Names where a is ahead of b.
std::vector<std::string> ahead_in(const Launched& a, const Launched& b) {
  std::vector<std::string> names;
  for (const auto& [name, count] : a.counts) {
    auto other = b.counts.find(name);
    if (other != b.counts.end() && count > other->second) names.push_back(name);
  }
  return names;
}

void check_seq_order(AuditReport& report, const std::vector<CommRef>& ranks) {
  const char* rule = "seq-order-inconsistent";
  std::string why;
  std::vector<Launched> usable = comparable_ranks(ranks, true, &why);
  if (usable.size() < 2) return report.not_checked(rule, ranks, why.empty() ? "fewer than 2 ranks of this comm among the inputs" : why);
  // A chain under "ahead or equal everywhere" sorted by total: consecutive pairs must compare.
  std::sort(usable.begin(), usable.end(), [](const Launched& a, const Launched& b) { return a.total < b.total; });
  size_t fired = 0;
  for (size_t i = 1; i < usable.size(); ++i) {
    const Launched& behind = usable[i - 1];
    const Launched& ahead = usable[i];
    std::vector<std::string> forward = ahead_in(ahead, behind), backward = ahead_in(behind, ahead);
    if (forward.empty() || backward.empty()) continue;
    ++fired;
    report.fire(rule, {ahead.ref, behind.ref},
                "rank " + rank_text(ahead.ref) + " is ahead in " + forward.front() + " but rank " + rank_text(behind.ref) +
                    " is ahead in " + backward.front() + ": the two ranks launched collectives in different orders",
                {{"rank_a", rank_of(*ahead.ref.comm).value_or(-1)}, {"seq_launched_a", ahead.counts},
                 {"rank_b", rank_of(*behind.ref.comm).value_or(-1)}, {"seq_launched_b", behind.counts},
                 {"a_ahead_in", forward}, {"b_ahead_in", backward}});
  }
  if (!why.empty()) report.not_checked(rule, ranks, why + " (left out of the order check)");
  else if (fired == 0) report.passed(rule);
}

// Informational: the ranks given differ in what they launched (the hang's first clue; triage
// says who is to blame).
void check_seq_spread(AuditReport& report, const std::vector<CommRef>& ranks) {
  const char* rule = "seq-spread";
  std::string why;
  std::vector<Launched> usable = comparable_ranks(ranks, false, &why);
  if (usable.size() < 2) return report.not_checked(rule, ranks, why.empty() ? "fewer than 2 ranks of this comm among the inputs" : why);
  json spread = json::object();
  std::vector<CommRef> behind;
  for (const auto& [name, unused] : usable.front().counts) {
    (void)unused;
    int64_t low = INT64_MAX, high = INT64_MIN;
    for (const Launched& launched : usable) {
      auto it = launched.counts.find(name);
      if (it == launched.counts.end()) continue;
      low = std::min(low, it->second);
      high = std::max(high, it->second);
    }
    if (low == high) continue;
    json at_low = json::array();
    for (const Launched& launched : usable)
      if (launched.counts.count(name) && launched.counts.at(name) == low) {
        at_low.push_back(rank_of(*launched.ref.comm).value_or(-1));
        if (spread.empty()) behind.push_back(launched.ref);
      }
    spread[name] = {{"min", low}, {"max", high}, {"ranks_at_min", at_low}};
  }
  if (spread.empty()) return report.passed(rule);
  std::string first = spread.begin().key();
  report.fire(rule, behind, std::to_string(usable.size()) + " ranks differ in launched " + first + ": " +
                                std::to_string(spread[first]["min"].get<int64_t>()) + ".." +
                                std::to_string(spread[first]["max"].get<int64_t>()) + " (ncclscope triage names the culprit)",
              {{"spread", spread}, {"ranks_compared", json(refs_of(usable).size())}});
}

}  // namespace

RanksByHash group_by_comm_hash(const std::vector<AuditInput>& inputs) {
  RanksByHash ranks;
  for (size_t index = 0; index < inputs.size(); ++index) {
    const json& communicators = json_member(inputs[index].document, "communicators");
    if (!communicators.is_array()) continue;
    for (const json& comm : communicators) {
      std::string hash = comm_hash_of(comm);
      if (!hash.empty()) ranks[hash].push_back({index, &comm});
    }
  }
  return ranks;
}

void check_comm_ranks(AuditReport& report, const std::vector<CommRef>& ranks) {
  check_identity(report, ranks);
  check_seq_order(report, ranks);
  check_seq_spread(report, ranks);
}

}  // namespace nsc::audit
