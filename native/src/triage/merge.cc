// Merge: communicators grouped by comm_hash across inputs, ranks seen/missing,
// duplicate inputs, the world communicator, and inputs from unrelated jobs.
#include <algorithm>
#include <numeric>

#include "triage/analysis.h"
#include "triage/rank_set.h"

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

void merge_communicators(Job* job) {
  std::unordered_map<uint64_t, size_t> group_of_hash;
  for (size_t p = 0; p < job->processes.size(); ++p) {
    const ProcessView& process = job->processes[p];
    if (process.comms.empty()) job->commless_processes.push_back(static_cast<int>(p));
    for (size_t c = 0; c < process.comms.size(); ++c) {
      const CommView& comm = process.comms[c];
      auto [slot, inserted] = group_of_hash.emplace(comm.comm_hash, job->comms.size());
      if (inserted) {
        job->comms.emplace_back();
        job->comms.back().hash = comm.comm_hash;
        job->comms.back().hash_text = comm.comm_hash_text;
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
    // Stable: the first input of a rank wins, later ones are duplicates.
    std::stable_sort(group.members.begin(), group.members.end(),
                     [](const Member& a, const Member& b) { return a.rank < b.rank; });
    std::vector<Member> unique;
    double position_sum = 0;
    for (const Member& member : group.members) {
      if (!unique.empty() && unique.back().rank == member.rank) {
        group.duplicates.push_back(
            {{"rank", member.rank},
             {"kept", job->processes[unique.back().process].input_name},
             {"ignored", job->processes[member.process].input_name}});
        continue;
      }
      unique.push_back(member);
      position_sum += static_cast<double>(job->comm_of(member).position);
    }
    group.members = std::move(unique);
    group.mean_position = group.members.empty() ? 0 : position_sum / group.members.size();
    for (size_t m = 0; m < group.members.size(); ++m) group.member_of_rank[group.members[m].rank] = m;
    if (group.nranks) {
      for (int rank = 0; rank < *group.nranks; ++rank)
        if (!group.member_of_rank.count(rank)) group.missing_ranks.push_back(rank);
      for (const Member& member : group.members)
        if (member.rank < 0 || member.rank >= *group.nranks)
          group.warnings.push_back(job->processes[member.process].input_name + ": rank " +
                                   std::to_string(member.rank) + " outside 0.." +
                                   std::to_string(*group.nranks - 1));
    }
  }
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
            ": comm " + first.comms.front().comm_hash_text + "]";
  }
  job->errors.push_back(text);
}

}  // namespace nsc::triage
