// Merge: communicators grouped by comm_hash across inputs, ranks seen/missing,
// duplicate inputs, the world communicator, and inputs from unrelated jobs.
#include <algorithm>
#include <numeric>
#include <type_traits>

#include "triage/analysis.h"
#include "triage/inputs.h"
#include "triage/range_checks.h"
#include "triage/rank_set.h"
#include "util/parallel.h"

namespace nsc::triage {

std::string Job::process_label(int process) const {
  if (world_rank[process]) return "rank " + std::to_string(*world_rank[process]);
  return "input " + processes[process].input_name;
}

std::string grouped_phrase(const std::map<std::string, std::vector<int>>& ranks_by_text,
                           size_t max_groups) {
  // Smaller groups first: the odd rank stands out at the front.
  std::vector<std::pair<std::string, std::vector<int>>> groups(ranks_by_text.begin(),
                                                               ranks_by_text.end());
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    return a.second.size() < b.second.size();
  });
  std::string text;
  for (size_t g = 0; g < groups.size() && g < max_groups; ++g) {
    if (!text.empty()) text += "; ";
    text += ranks_phrase(groups[g].second) + ": " + groups[g].first;
  }
  if (groups.size() > max_groups)
    text += "; and " + std::to_string(groups.size() - max_groups) + " more classes";
  return text;
}

std::string process_doing(const Job& job, int process) {
  const ThreadView* thread = job.processes[process].principal();
  if (thread == nullptr) return "no host thread in its snapshot";
  return describe_thread(*thread);
}

namespace {

template <typename T>
std::string value_text(const Maybe<T>& value) {
  if (!value) return "unavailable";
  if constexpr (std::is_same_v<T, bool>) return *value ? "true" : "false";
  else if constexpr (std::is_same_v<T, std::string>) return *value;
  else return std::to_string(*value);
}
std::string value_text(const MaybeSharedText& value) { return value.value_or("unavailable"); }

// The fields two copies of one rank's communicator disagree on: "seq_launched.AllGather 1 vs 0".
std::vector<std::string> differing_fields(const CommView& kept, const CommView& other) {
  std::vector<std::string> fields;
  auto compare = [&](const std::string& name, const auto& a, const auto& b) {
    if (a != b) fields.push_back(name + " " + value_text(a) + " vs " + value_text(b));
  };
  compare("nranks", kept.nranks, other.nranks);
  for (int c = 0; c < kNumCollectives; ++c)
    compare(std::string("seq_launched.") + kCollectiveNames[c], kept.seq_launched[c], other.seq_launched[c]);
  compare("coll_op_count", kept.coll_op_count, other.coll_op_count);
  compare("p2p_op_count.total", kept.p2p_total, other.p2p_total);
  compare("health.async_result", kept.health.async_result, other.health.async_result);
  compare("health.abort_flag", kept.health.abort_flag, other.health.abort_flag);
  compare("health.destroy_flag", kept.health.destroy_flag, other.health.destroy_flag);
  compare("health.revoked", kept.health.revoked, other.health.revoked);
  compare("planned.n_tasks_coll", kept.n_tasks_coll, other.n_tasks_coll);
  compare("planned.n_tasks_p2p", kept.n_tasks_p2p, other.n_tasks_p2p);
  compare("planned.unlaunched_plans", kept.unlaunched_plans, other.unlaunched_plans);
  compare("proxy_ops (count)", Maybe<int64_t>(static_cast<int64_t>(kept.proxy_ops.size())),
          Maybe<int64_t>(static_cast<int64_t>(other.proxy_ops.size())));
  return fields;
}

std::string blocked_in_of(const ProcessView& process) {
  const ThreadView* thread = process.principal();
  return thread == nullptr || thread->blocked_in.empty() ? "unknown" : thread->blocked_in;
}

nlohmann::json duplicate_entry(const ProcessView& kept, const CommView& kept_comm, const ProcessView& ignored,
                               const CommView& ignored_comm) {
  std::vector<std::string> differs = differing_fields(kept_comm, ignored_comm);
  if (blocked_in_of(kept) != blocked_in_of(ignored))
    differs.push_back("application thread blocked_in " + blocked_in_of(kept) + " vs " + blocked_in_of(ignored));
  return {{"comm_hash", kept_comm.comm_hash_text()}, {"rank", *kept_comm.rank}, {"kept", kept.input_name},
          {"ignored", ignored.input_name}, {"differs", differs}};
}

// How far a copy of a communicator got: counters only grow, so of two copies of one rank the
// one further along is the later snapshot of that process.
int64_t progress(const CommView& comm) {
  int64_t total = comm.total_launched().value_or(comm.coll_op_count.value_or(0));
  return total + comm.p2p_total.value_or(0);
}

int64_t progress(const ProcessView& process) {
  int64_t total = 0;
  for (const CommView& comm : process.comms) total += progress(comm);
  return total;
}

// What a copy says, as text: equal progress is ordered by content, never by file name.
std::string fingerprint(const ProcessView& process) {
  std::string text;
  for (const CommView& comm : process.comms) {
    text += comm.comm_hash_text() + ":" + std::to_string(comm.rank.value_or(-1)) + ":" + std::to_string(progress(comm));
    for (const auto& count : comm.seq_launched) text += "," + std::to_string(count.value_or(-1));
    text += comm.health.async_result.value_or("?") + std::to_string(comm.proxy_ops.size()) + ";";
  }
  const ThreadView* thread = process.principal();
  return text + (thread ? describe_thread(*thread) : "");
}

// The copy that counts first: further along, then by content; the name only between copies
// that say the same.
struct ContentKey {
  int64_t progress;
  std::string fingerprint;
  const std::string* name;
};

ContentKey content_key(const ProcessView& process) { return {progress(process), fingerprint(process), &process.input_name}; }

bool content_before(const ContentKey& a, const ContentKey& b) {
  if (a.progress != b.progress) return a.progress > b.progress;
  if (a.fingerprint != b.fingerprint) return a.fingerprint < b.fingerprint;
  return natural_less(*a.name, *b.name);
}

bool content_order(const ProcessView& a, const ProcessView& b) { return content_before(content_key(a), content_key(b)); }

// Whether any (communicator, rank) pair is held by two inputs (or twice by one): without one,
// the usual case, no input is a duplicate and no content key need be made (100,000 ranks).
// The pairs' mixed keys go into one open-addressing table (a node-based set allocated 400,000
// nodes); two pairs mixing to one key only cost the exact path.
bool any_rank_held_twice(const Job& job) {
  size_t pairs = 0;
  for (const ProcessView& process : job.processes) pairs += process.comms.size();
  size_t slots = 16;
  while (slots < 2 * pairs) slots *= 2;
  std::vector<uint64_t> table(slots, 0);  // 0: empty (every key has its lowest bit set)
  for (const ProcessView& process : job.processes)
    for (const CommView& comm : process.comms) {
      if (!comm.rank) continue;
      uint64_t mixed = comm.comm_hash * 0x9E3779B97F4A7C15ULL ^ static_cast<uint32_t>(*comm.rank);
      uint64_t key = (mixed * 0xBF58476D1CE4E5B9ULL) | 1;
      for (size_t at = (key >> 24) & (slots - 1);; at = (at + 1) & (slots - 1)) {
        if (table[at] == key) return true;
        if (table[at] == 0) {
          table[at] = key;
          break;
        }
      }
    }
  return false;
}

// Inputs all of whose (communicator, rank) pairs an input before it in content_order holds:
// moved out of job->processes into job->duplicate_inputs, so they neither count twice
// (threads, graph nodes) nor let the command line's order or file names pick the copy.
void set_aside_duplicate_inputs(Job* job) {
  if (!any_rank_held_twice(*job)) return;
  std::vector<size_t> order(job->processes.size());
  std::iota(order.begin(), order.end(), 0);
  // Each key built once: a fingerprint per comparison made n log n of them.
  std::vector<ContentKey> keys;
  keys.reserve(job->processes.size());
  for (const ProcessView& process : job->processes) keys.push_back(content_key(process));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return content_before(keys[a], keys[b]); });
  std::map<std::pair<uint64_t, int>, std::pair<size_t, size_t>> holder;  // (hash, rank) -> (process, comm)
  std::vector<bool> aside(job->processes.size(), false);
  for (size_t p : order) {
    const ProcessView& process = job->processes[p];
    bool any = false, all_held = true;
    for (const CommView& comm : process.comms)
      if (comm.rank) any = true, all_held = all_held && holder.count({comm.comm_hash, *comm.rank});
    if (any && all_held) {
      aside[p] = true;
      continue;
    }
    for (size_t c = 0; c < process.comms.size(); ++c)
      if (process.comms[c].rank) holder.emplace(std::make_pair(process.comms[c].comm_hash, *process.comms[c].rank),
                                                std::make_pair(p, c));
  }
  for (size_t p = 0; p < job->processes.size(); ++p) {
    if (!aside[p]) continue;
    const ProcessView& process = job->processes[p];
    DuplicateInput duplicate{process.input_name, process.kind, "", {}};
    for (const CommView& comm : process.comms) {
      if (!comm.rank) continue;
      auto [kept_p, kept_c] = holder.at({comm.comm_hash, *comm.rank});
      const ProcessView& kept = job->processes[kept_p];
      if (duplicate.kept.empty()) duplicate.kept = kept.input_name;
      duplicate.copies.push_back(duplicate_entry(kept, kept.comms[kept_c], process, comm));
    }
    job->duplicate_inputs.push_back(std::move(duplicate));
  }
  if (std::find(aside.begin(), aside.end(), true) == aside.end()) return;  // the usual case: no second copy of every process
  std::vector<ProcessView> kept;
  kept.reserve(job->processes.size());
  for (size_t p = 0; p < job->processes.size(); ++p)
    if (!aside[p]) kept.push_back(std::move(job->processes[p]));
  job->processes = std::move(kept);
}

}  // namespace

void merge_communicators(Job* job) {
  for_each_range(job->processes.size(), 1024, [job](size_t begin, size_t end) {
    for (size_t p = begin; p < end; ++p) check_ranges(&job->processes[p]);
  });
  set_aside_duplicate_inputs(job);
  std::unordered_map<uint64_t, size_t>& group_of_hash = job->group_of_hash;
  for (size_t p = 0; p < job->processes.size(); ++p) {
    const ProcessView& process = job->processes[p];
    // An unreadable input is not a rank that lost its communicators: it stands for nobody.
    // A dump file holds no NCCL state: it never stands for a rank that left its communicators.
    if (process.comms.empty() && unreadable_reason(process).empty() && process.kind != "fr-dump")
      job->commless_processes.push_back(static_cast<int>(p));
    for (size_t c = 0; c < process.comms.size(); ++c) {
      const CommView& comm = process.comms[c];
      auto [slot, inserted] = group_of_hash.emplace(comm.comm_hash, job->comms.size());
      if (inserted) {
        job->comms.emplace_back();
        job->comms.back().hash = comm.comm_hash;
        job->comms.back().hash_text = comm.comm_hash_text();
      }
      CommGroup& group = job->comms[slot->second];
      if (!comm.rank) {
        group.warnings.push_back(process.input_name + ": rank of this communicator unreadable; ignored");
        continue;
      }
      Member member{static_cast<int>(p), static_cast<int>(c), *comm.rank};
      // A corrupt nranks (garbage from memory) must not make triage list a billion ranks.
      constexpr int kMaxPlausibleRanks = 1 << 20;
      if (comm.nranks && (*comm.nranks < 1 || *comm.nranks > kMaxPlausibleRanks)) {
        group.warnings.push_back(process.input_name + ": nranks " + std::to_string(*comm.nranks) +
                                 " is implausible; ignored");
      } else if (comm.nranks) {
        if (group.nranks && *group.nranks != *comm.nranks)
          group.warnings.push_back(process.input_name + " says nranks " + std::to_string(*comm.nranks) +
                                   ", others " + std::to_string(*group.nranks));
        group.nranks = std::max(group.nranks.value_or(0), *comm.nranks);
      }
      group.members.push_back(member);
    }
  }
  for (CommGroup& group : job->comms) {
    // Of two inputs holding one rank, the copy further along wins, then by content (never the
    // command line's order, never the file names).
    std::stable_sort(group.members.begin(), group.members.end(), [&](const Member& a, const Member& b) {
      if (a.rank != b.rank) return a.rank < b.rank;
      int64_t pa = progress(job->comm_of(a)), pb = progress(job->comm_of(b));
      if (pa != pb) return pa > pb;
      return content_order(job->processes[a.process], job->processes[b.process]);
    });
    std::vector<Member> unique;
    double position_sum = 0;
    for (const Member& member : group.members) {
      if (!unique.empty() && unique.back().rank == member.rank) {
        group.duplicates.push_back(duplicate_entry(job->processes[unique.back().process], job->comm_of(unique.back()),
                                                   job->processes[member.process], job->comm_of(member)));
        continue;
      }
      unique.push_back(member);
      position_sum += static_cast<double>(job->comm_of(member).position);
    }
    group.members = std::move(unique);
    group.mean_position = group.members.empty() ? 0 : position_sum / group.members.size();
    if (group.nranks) {
      for (int rank = 0; rank < *group.nranks; ++rank)
        if (group.find(rank) == nullptr) group.missing_ranks.push_back(rank);
      for (const Member& member : group.members)
        if (member.rank < 0 || member.rank >= *group.nranks)
          group.warnings.push_back(job->processes[member.process].input_name + ": rank " +
                                   std::to_string(member.rank) + " outside 0.." +
                                   std::to_string(*group.nranks - 1));
    }
  }
  for (const DuplicateInput& duplicate : job->duplicate_inputs)
    for (const nlohmann::json& copy : duplicate.copies)
      for (CommGroup& group : job->comms)
        if (group.hash_text == copy["comm_hash"]) group.duplicates.push_back(copy);
  // The world: the largest communicator; ties go to the one most often seen
  // and earliest in the registry (NCCL registers comms in creation order).
  for (size_t g = 0; g < job->comms.size(); ++g) {
    if (job->world_comm < 0) {
      job->world_comm = static_cast<int>(g);
      continue;
    }
    const CommGroup& best = job->comms[job->world_comm];
    const CommGroup& candidate = job->comms[g];
    auto key = [](const CommGroup& group) {
      return std::make_tuple(-group.nranks.value_or(0), -static_cast<long>(group.members.size()),
                             group.mean_position, group.hash);
    };
    if (key(candidate) < key(best)) job->world_comm = static_cast<int>(g);
  }
  job->world_rank.assign(job->processes.size(), std::nullopt);
  job->rank_from_launcher.assign(job->processes.size(), false);
  // The largest communicator is not the world when the launcher says the job is larger.
  int launcher_size = 0;
  for (const ProcessView& process : job->processes)
    launcher_size = std::max(launcher_size, process.launcher_world_size.value_or(0));
  bool world_is_job = job->world_comm < 0 || job->comms[job->world_comm].nranks.value_or(0) >= launcher_size;
  if (!world_is_job) job->world_comm = -1;
  if (job->world_comm >= 0)
    for (const Member& member : job->comms[job->world_comm].members)
      job->world_rank[member.process] = member.rank;
  // Outside any world communicator (none yet, or not a member), the launcher's rank labels it.
  for (size_t p = 0; p < job->processes.size(); ++p)
    if (!job->world_rank[p] && job->processes[p].launcher_rank) {
      job->world_rank[p] = job->processes[p].launcher_rank;
      job->rank_from_launcher[p] = true;
    }
}

void add_duplicate_findings(Job* job) {
  for (size_t g = 0; g < job->comms.size(); ++g)
    for (const nlohmann::json& copy : job->comms[g].duplicates) {
      if (copy["differs"].empty()) continue;
      Finding finding("duplicate-rank-disagrees");
      std::string kept = copy["kept"], ignored = copy["ignored"], fields;
      for (const nlohmann::json& field : copy["differs"]) fields += (fields.empty() ? "" : "; ") + field.get<std::string>();
      finding.evidence.push_back(kept + " and " + ignored + " both hold rank " + copy["rank"].dump() +
                                 " of this communicator and disagree: " + fields + ". " + ignored +
                                 " is set aside (of two copies the one further along counts: counters only grow, "
                                 "so it is the later snapshot; equal progress: by content, never by file name); "
                                 "check which file really is that rank");
      finding.extra["rank"] = copy["rank"];
      finding.extra["inputs"] = {kept, ignored};
      finding.extra["differs"] = copy["differs"];
      finding.edge_kind = "";
      job->findings[g].push_back(std::move(finding));
    }
}

// Union-find over processes joined by a shared communicator.
void find_unrelated_jobs(Job* job) {
  std::vector<int> parent(job->processes.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  // Every copy counts here, duplicates included: they belong to the same job.
  std::unordered_map<uint64_t, int> first_holder;
  for (size_t p = 0; p < job->processes.size(); ++p)
    for (const CommView& comm : job->processes[p].comms) {
      auto [it, inserted] = first_holder.emplace(comm.comm_hash, static_cast<int>(p));
      if (!inserted) parent[root(static_cast<int>(p))] = root(it->second);
    }
  std::map<int, std::vector<int>> components;
  for (size_t p = 0; p < job->processes.size(); ++p)
    if (!job->processes[p].comms.empty()) components[root(static_cast<int>(p))].push_back(static_cast<int>(p));
  if (components.size() <= 1) return;
  job->unrelated_jobs = true;
  std::string text = "inputs from unrelated jobs: " + std::to_string(components.size()) +
                     " groups share no communicator:";
  int shown = 0;
  for (const auto& [unused, members] : components) {
    if (shown++ == 4) {
      text += " ...";
      break;
    }
    const ProcessView& first = job->processes[members.front()];
    text += " [" + first.input_name + (members.size() > 1 ? " and " + std::to_string(members.size() - 1) + " more" : "") +
            ": comm " + first.comms.front().comm_hash_text() + "]";
  }
  job->errors.push_back(text);
}

}  // namespace nsc::triage
