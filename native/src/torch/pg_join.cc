#include "torch/pg_join.h"

#include <algorithm>
#include <map>
#include <set>

#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

struct Candidate {
  std::string address;
  int64_t rank = -1, nranks = -1;
  std::optional<int64_t> collectives;  // sum of seq_launched
};

std::vector<Candidate> candidates_of(const json& communicators) {
  std::vector<Candidate> out;
  if (!communicators.is_array()) return out;
  for (const json& comm : communicators) {
    if (!comm.is_object() || !comm.value("address", json()).is_string()) continue;
    Candidate candidate;
    candidate.address = comm["address"].get<std::string>();
    if (comm.value("rank", json()).is_number_integer()) candidate.rank = comm["rank"].get<int64_t>();
    if (comm.value("nranks", json()).is_number_integer()) candidate.nranks = comm["nranks"].get<int64_t>();
    const json& launched = comm.value("seq_launched", json());
    if (launched.is_object()) {
      int64_t total = 0;
      bool complete = true;
      for (const auto& item : launched.items()) {
        if (item.value().is_number_integer()) total += item.value().get<int64_t>();
        else complete = false;
      }
      if (complete) candidate.collectives = total;
    }
    out.push_back(candidate);
  }
  return out;
}

struct GroupFacts {
  const RecorderProcessGroup* group = nullptr;
  std::optional<uint64_t> pg_id;
  std::optional<uint64_t> last_collective_seq;  // highest collective_seq_id of its entries
  std::optional<int64_t> comm_rank;             // index of this process in group->ranks
  bool member = true;
  std::vector<std::string> candidates;          // addresses left after each rule
  std::vector<std::string> evidence;
};

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

json join_process_groups(const FlightRecorderState& recorder, const json& communicators,
                         std::optional<int64_t> global_rank) {
  std::vector<Candidate> comms = candidates_of(communicators);
  std::vector<GroupFacts> groups;
  for (const RecorderProcessGroup& group : recorder.process_groups) {
    GroupFacts facts;
    facts.group = &group;
    for (const RecorderEntry& entry : recorder.entries)
      if (entry.pg_name == group.name) {
        facts.pg_id = entry.pg_id;
        if (!entry.is_p2p && (!facts.last_collective_seq || entry.collective_seq_id > *facts.last_collective_seq))
          facts.last_collective_seq = entry.collective_seq_id;
      }
    if (global_rank) {
      auto at = std::find(group.ranks.begin(), group.ranks.end(), static_cast<uint64_t>(*global_rank));
      if (at == group.ranks.end()) facts.member = false;
      else facts.comm_rank = at - group.ranks.begin();
    }
    for (const Candidate& comm : comms) {
      if (comm.nranks != static_cast<int64_t>(group.ranks.size())) continue;
      if (facts.comm_rank && comm.rank != *facts.comm_rank) continue;
      facts.candidates.push_back(comm.address);
    }
    facts.evidence.push_back(std::to_string(facts.candidates.size()) + " communicator(s) with nranks " +
                             std::to_string(group.ranks.size()) +
                             (facts.comm_rank ? " and rank " + std::to_string(*facts.comm_rank) +
                                                    " (global rank " + std::to_string(*global_rank) + "'s index)"
                                              : " (this process's global rank unknown: rank not checked)"));
    // Collective count: the recorder's last collective_seq_id vs the communicator's launches.
    if (facts.candidates.size() > 1 && facts.last_collective_seq) {
      std::vector<std::string> equal;
      for (const std::string& address : facts.candidates)
        for (const Candidate& comm : comms)
          if (comm.address == address && comm.collectives &&
              static_cast<uint64_t>(*comm.collectives) == *facts.last_collective_seq)
            equal.push_back(address);
      if (!equal.empty() && equal.size() < facts.candidates.size()) {
        facts.evidence.push_back(std::to_string(equal.size()) + " of them launched " +
                                 std::to_string(*facts.last_collective_seq) + " collectives, the group's last collective_seq_id");
        facts.candidates = equal;
      }
    }
    groups.push_back(std::move(facts));
  }
  // A communicator belongs to one group: one claimed alone leaves the others' lists.
  for (bool changed = true; changed;) {
    changed = false;
    for (GroupFacts& owner : groups) {
      if (!owner.member || owner.candidates.size() != 1) continue;
      for (GroupFacts& other : groups) {
        if (&other == &owner || other.candidates.size() < 2) continue;
        auto at = std::find(other.candidates.begin(), other.candidates.end(), owner.candidates[0]);
        if (at == other.candidates.end()) continue;
        other.candidates.erase(at);
        other.evidence.push_back(owner.candidates[0] + " is pg '" + owner.group->name + "''s");
        changed = true;
      }
    }
  }
  json out = json::array();
  for (const GroupFacts& facts : groups) {
    const RecorderProcessGroup& group = *facts.group;
    json item = {{"name", valid_utf8(group.name)}, {"desc", valid_utf8(group.desc)}, {"ranks", group.ranks},
                 {"pg_id", facts.pg_id ? json(*facts.pg_id) : json(nullptr)},
                 {"comm_rank", facts.comm_rank ? json(*facts.comm_rank) : json(nullptr)},
                 {"last_collective_seq_id", facts.last_collective_seq ? json(*facts.last_collective_seq) : json(nullptr)},
                 {"candidates", facts.candidates}};
    std::string match;
    if (!facts.member) {
      match = "not-a-member";
      item["communicator"] = nullptr;
    } else if (facts.candidates.size() == 1) {
      match = "unique";
      item["communicator"] = facts.candidates[0];
    } else {
      match = facts.candidates.empty() ? "none" : "ambiguous";
      item["communicator"] = nullptr;
      if (facts.candidates.empty())
        item["evidence_note"] = "no decoded communicator fits (PyTorch creates a group's communicator at its first collective)";
    }
    item["match"] = match;
    item["evidence"] = joined(facts.evidence);
    out.push_back(item);
  }
  return out;
}

namespace {

std::string group_key(const json& group) {
  return group.value("name", json("")).dump() + "|" + group.value("desc", json("")).dump() + "|" +
         group.value("ranks", json::array()).dump();
}

std::map<std::string, std::string> hashes_by_address(const json& document) {
  std::map<std::string, std::string> hashes;
  for (const json& comm : document.value("communicators", json::array()))
    if (comm.is_object() && comm.value("address", json()).is_string() && comm.value("comm_hash", json()).is_string())
      hashes[comm["address"].get<std::string>()] = comm["comm_hash"].get<std::string>();
  return hashes;
}

json* process_groups_of(json& document) {
  if (!document.is_object() || !document.contains("torch") || !document["torch"].is_object()) return nullptr;
  json& groups = document["torch"]["process_groups"];
  return groups.is_array() ? &groups : nullptr;
}

// A communicator one group holds alone leaves the other groups' candidate lists (one process).
void exclude_claimed(json* groups) {
  for (bool changed = true; changed;) {
    changed = false;
    for (const json& owner : *groups) {
      if (owner.value("match", "") != "unique" || !owner.value("communicator", json()).is_string()) continue;
      for (json& other : *groups) {
        if (other.value("match", "") != "ambiguous") continue;
        json kept = json::array();
        for (const json& candidate : other["candidates"])
          if (candidate != owner["communicator"]) kept.push_back(candidate);
        if (kept.size() == other["candidates"].size()) continue;
        other["candidates"] = kept;
        other["evidence"] = other.value("evidence", "") + "; " + owner["communicator"].get<std::string>() + " is pg '" +
                            owner.value("name", "") + "''s";
        if (kept.size() == 1) {
          other["match"] = "unique";
          other["communicator"] = kept[0];
        }
        changed = true;
      }
    }
  }
}

}  // namespace

void resolve_process_groups_across_ranks(std::vector<json>* documents) {
  // For each group: the comm_hash sets of its candidates on every rank that lists it as a member.
  std::map<std::string, std::vector<std::set<std::string>>> hash_sets;
  for (json& document : *documents) {
    json* groups = process_groups_of(document);
    if (groups == nullptr) continue;
    std::map<std::string, std::string> hashes = hashes_by_address(document);
    for (const json& group : *groups) {
      if (group.value("match", "") == "not-a-member") continue;
      std::set<std::string> candidate_hashes;
      for (const json& candidate : group.value("candidates", json::array()))
        if (candidate.is_string() && hashes.count(candidate.get<std::string>()))
          candidate_hashes.insert(hashes[candidate.get<std::string>()]);
      hash_sets[group_key(group)].push_back(candidate_hashes);
    }
  }
  for (json& document : *documents) {
    json* groups = process_groups_of(document);
    if (groups == nullptr) continue;
    std::map<std::string, std::string> hashes = hashes_by_address(document);
    for (json& group : *groups) {
      if (group.value("match", "") != "ambiguous") continue;
      const auto& sets = hash_sets[group_key(group)];
      if (sets.size() < 2) continue;
      std::set<std::string> common = sets[0];
      for (const auto& other : sets) {
        std::set<std::string> kept;
        for (const std::string& hash : common)
          if (other.count(hash)) kept.insert(hash);
        common = kept;
      }
      if (common.size() != 1) continue;
      std::vector<std::string> chosen;
      for (const json& candidate : group["candidates"])
        if (candidate.is_string() && hashes[candidate.get<std::string>()] == *common.begin()) chosen.push_back(candidate);
      if (chosen.size() != 1) continue;
      group["communicator"] = chosen[0];
      group["candidates"] = chosen;
      group["match"] = "unique";
      group["evidence"] = group.value("evidence", "") + "; comm_hash " + *common.begin() + " is the only one among the candidates of all " +
                          std::to_string(sets.size()) + " member ranks";
    }
    exclude_claimed(groups);
  }
}

}  // namespace nsc
