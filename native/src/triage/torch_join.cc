// PyTorch's flight recorder in triage (issue 16): the "torch" section of each rank's state
// document, decoded from memory (torch/flight_recorder.cc), joined with the communicators:
//  - each communicator takes its process group's description and name ("pg tp0"), from the
//    ranks whose recorder joined that ncclComm* uniquely (torch/pg_join.cc);
//  - the same collective (process group, collective_seq_id) recorded with a different op,
//    input sizes or dtypes on two ranks becomes a "<field>-mismatch" finding, as PyTorch's own
//    analyzer (torchfrtrace) reports it: NCCL never compares arguments across ranks;
//  - findings that explain the hang gain each named rank's last record on that group: the op,
//    its sizes and the Python line that issued it.
#include <algorithm>
#include <map>
#include <set>

#include "triage/analysis.h"
#include "triage/call_site.h"
#include "triage/summary_helpers.h"
#include "triage/rank_set.h"
#include "util/json_access.h"
#include "util/strings.h"

namespace nsc::triage {
namespace {

using nlohmann::json;

// Bounds on what a (possibly hostile) snapshot can make triage hold.
constexpr size_t kMaxGroups = 4096, kMaxEntries = 4096, kMaxRanks = 1 << 20, kMaxTensors = 64,
                 kMaxDims = 16, kMaxFrames = 8, kMaxText = 256;

json text_or_null(const json& object, const char* key) {
  const json* value = find_json_member(object, key);
  if (value == nullptr || !value->is_string()) return nullptr;
  std::string text = value->get<std::string>();
  return text.size() > kMaxText ? json(text.substr(0, kMaxText)) : json(text);
}

// A non-negative integer (parsed text gives unsigned, built documents signed); else null.
bool is_non_negative(const json& value) {
  return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
}

json uint_or_null(const json& object, const char* key) {
  const json* value = find_json_member(object, key);
  if (value == nullptr || !is_non_negative(*value)) return nullptr;
  return value->get<uint64_t>();
}

json sanitize_sizes(const json* sizes) {
  json out = json::array();
  if (sizes == nullptr || !sizes->is_array()) return out;
  for (const json& tensor : *sizes) {
    if (out.size() >= kMaxTensors || !tensor.is_array()) break;
    json dims = json::array();
    for (const json& dim : tensor)
      if (dims.size() < kMaxDims && dim.is_number_integer()) dims.push_back(dim.get<int64_t>());
    out.push_back(dims);
  }
  return out;
}

json sanitize_strings(const json* list) {
  json out = json::array();
  if (list == nullptr || !list->is_array()) return out;
  for (const json& item : *list)
    if (out.size() < kMaxTensors && item.is_string()) out.push_back(item.get<std::string>().substr(0, kMaxText));
  return out;
}

json sanitize_group(const json& group) {
  json ranks = json::array();
  if (const json* list = find_json_member(group, "ranks"); list && list->is_array())
    for (const json& rank : *list)
      if (ranks.size() < kMaxRanks && is_non_negative(rank) && rank.get<uint64_t>() < kMaxRanks)
        ranks.push_back(rank.get<int>());
  return {{"name", text_or_null(group, "name")}, {"desc", text_or_null(group, "desc")}, {"ranks", ranks},
          {"communicator", text_or_null(group, "communicator")}, {"match", text_or_null(group, "match")}};
}

json sanitize_entry(const json& entry) {
  json pg = json::array({nullptr, nullptr});
  if (const json* names = find_json_member(entry, "process_group"); names && names->is_array() && names->size() == 2)
    for (size_t i = 0; i < 2; ++i)
      if ((*names)[i].is_string()) pg[i] = (*names)[i].get<std::string>().substr(0, kMaxText);
  json frames = json::array();
  if (const json* list = find_json_member(entry, "frames"); list && list->is_array())
    for (const json& frame : *list) {
      if (frames.size() >= kMaxFrames) break;
      frames.push_back({{"name", text_or_null(frame, "name")}, {"filename", text_or_null(frame, "filename")},
                        {"line", find_json_member(frame, "line") && (*find_json_member(frame, "line")).is_number_integer()
                                     ? json((*find_json_member(frame, "line")).get<int64_t>()) : json(nullptr)}});
    }
  const json* is_p2p = find_json_member(entry, "is_p2p");
  return {{"process_group", pg},
          {"record_id", uint_or_null(entry, "record_id")},
          {"output_sizes", sanitize_sizes(find_json_member(entry, "output_sizes"))},
          {"output_dtypes", sanitize_strings(find_json_member(entry, "output_dtypes"))},
          {"pg_id", uint_or_null(entry, "pg_id")},
          {"collective_seq_id", uint_or_null(entry, "collective_seq_id")},
          {"p2p_seq_id", uint_or_null(entry, "p2p_seq_id")},
          {"profiling_name", text_or_null(entry, "profiling_name")},
          {"input_sizes", sanitize_sizes(find_json_member(entry, "input_sizes"))},
          {"input_dtypes", sanitize_strings(find_json_member(entry, "input_dtypes"))},
          {"state", text_or_null(entry, "state")},
          {"timeout_ms", uint_or_null(entry, "timeout_ms")},
          {"time_created_ns", uint_or_null(entry, "time_created_ns")},
          {"time_discovered_started_ns", uint_or_null(entry, "time_discovered_started_ns")},
          {"time_discovered_completed_ns", uint_or_null(entry, "time_discovered_completed_ns")},
          {"is_p2p", is_p2p && is_p2p->is_boolean() ? is_p2p->get<bool>() : false},
          {"frames", frames}};
}

// "nccl:all_reduce" -> "all_reduce".
std::string op_name(const json& entry) {
  std::string name = entry["profiling_name"].is_string() ? entry["profiling_name"].get<std::string>() : "?";
  size_t colon = name.find(':');
  return colon == std::string::npos ? name : name.substr(colon + 1);
}

std::string sizes_text(const json& sizes) {
  std::string text;
  for (const json& tensor : sizes) {
    std::string dims;
    for (const json& dim : tensor) dims += (dims.empty() ? "" : ", ") + std::to_string(dim.get<int64_t>());
    text += (text.empty() ? "" : " ") + ("[" + dims + "]");
  }
  return text.empty() ? "[]" : text;
}

// The innermost frame outside torch/distributed: the user's own call ("tpdp_step (train.py:161)").
// The user's call site of a recorded entry (call_site.h's rule): "tpdp_step (train.py:175)".
std::string user_frame(const json& entry) {
  std::vector<FrameView> frames;
  for (const json& frame : entry["frames"])
    frames.push_back(make_python_frame(frame["name"].is_string() ? frame["name"].get<std::string>() : "?",
                                       frame["filename"].is_string() ? frame["filename"].get<std::string>() : "",
                                       frame["line"].is_number_integer() ? Maybe<int64_t>(frame["line"].get<int64_t>())
                                                                         : std::nullopt,
                                       ""));
  CallSite site = user_call_site(frames);
  return site.found() ? site.function + " (" + site.location + ")" : "";
}

// "all_reduce #4 [65536] Float (scheduled) from f (x.py:3)"; without the state when the caller
// knows better than the entry (the recorder updates it only in a dump's copy).
std::string entry_text(const json& entry, bool with_state = true) {
  const json& seq = entry["is_p2p"].get<bool>() ? entry["p2p_seq_id"] : entry["collective_seq_id"];
  std::string text = op_name(entry) + " #" + seq.dump() + " " + sizes_text(entry["input_sizes"]);
  for (const json& dtype : entry["input_dtypes"]) text += " " + dtype.get<std::string>();
  if (with_state)
    text += " (" + (entry["state"].is_string() ? entry["state"].get<std::string>() : std::string("state unknown")) + ")";
  std::string frame = user_frame(entry);
  return frame.empty() ? text : text + " from " + frame;
}

// One watchdog record of ProcessGroupNCCL's progress (all_pg_status_): -1 = none yet.
json sanitize_pg_status(const json& status) {
  json out = {{"pg_id", uint_or_null(status, "pg_id")}};
  for (const char* key : {"last_enqueued_collective", "last_started_collective", "last_completed_collective"}) {
    const json* value = find_json_member(status, key);
    out[key] = value && value->is_number_integer() && value->get<int64_t>() >= -1 ? json(value->get<int64_t>())
                                                                                  : json(nullptr);
  }
  return out;
}

json bool_or_null(const json& object, const char* key) {
  const json* value = find_json_member(object, key);
  return value && value->is_boolean() ? *value : json(nullptr);
}

// torch.liveness (torch/watchdog.h): what the crash verdict reads of each watchdog and monitor.
json sanitize_liveness(const json* liveness) {
  if (liveness == nullptr || !liveness->is_object()) return nullptr;
  json watchdogs = json::array(), monitors = json::array();
  if (const json* list = find_json_member(*liveness, "watchdogs"); list && list->is_array())
    for (const json& dog : *list)
      if (watchdogs.size() < kMaxGroups && dog.is_object())
        watchdogs.push_back({{"tid", uint_or_null(dog, "tid")}, {"pg_uid", uint_or_null(dog, "pg_uid")},
                             {"heartbeat", uint_or_null(dog, "heartbeat")}, {"timeout_ms", uint_or_null(dog, "timeout_ms")},
                             {"error", text_or_null(dog, "error")}, {"terminating", bool_or_null(dog, "terminating")},
                             {"exception_stored", bool_or_null(dog, "exception_stored")}});
  if (const json* list = find_json_member(*liveness, "heartbeat_monitors"); list && list->is_array())
    for (const json& monitor : *list)
      if (monitors.size() < kMaxGroups && monitor.is_object())
        monitors.push_back({{"tid", uint_or_null(monitor, "tid")}, {"pg_uid", uint_or_null(monitor, "pg_uid")}});
  json should_dump = bool_or_null(*liveness, "should_dump");
  if (watchdogs.empty() && monitors.empty() && should_dump.is_null()) return nullptr;  // unavailable: nothing to use
  return {{"watchdogs", watchdogs}, {"heartbeat_monitors", monitors}, {"should_dump", should_dump}};
}

// The process group a member's recorder joined to this member's communicator; null if none.
const json* group_of(const Job& job, const Member& member) {
  const json& torch = job.processes[member.process].torch;
  const CommView& comm = job.comm_of(member);
  if (!torch.is_object()) return nullptr;
  for (const json& group : torch["process_groups"])
    if (group["match"] == "unique" && group["communicator"].is_string() && group["communicator"] == comm.address)
      return &group;
  return nullptr;
}

// The member's recorded collectives (or point-to-point ops) on process group `name`, by
// collective_seq_id (p2p_seq_id).
std::map<uint64_t, const json*> entries_on(const Job& job, const Member& member, const std::string& name,
                                           bool p2p = false) {
  std::map<uint64_t, const json*> by_seq;
  const json& torch = job.processes[member.process].torch;
  if (!torch.is_object()) return by_seq;
  const char* seq_key = p2p ? "p2p_seq_id" : "collective_seq_id";
  for (const json& entry : torch["entries"])
    if (entry["is_p2p"].get<bool>() == p2p && entry["process_group"][0] == name && entry[seq_key].is_number())
      by_seq[entry[seq_key].get<uint64_t>()] = &entry;
  return by_seq;
}

// The ranks whose value differs from the strict majority's; none when there is no majority.
std::vector<int> minority(const std::map<std::string, std::vector<int>>& ranks_by_value, size_t members) {
  for (const auto& [value, ranks] : ranks_by_value)
    if (2 * ranks.size() > members) {
      std::vector<int> others;
      for (const auto& [other, other_ranks] : ranks_by_value)
        if (other != value) others.insert(others.end(), other_ranks.begin(), other_ranks.end());
      std::sort(others.begin(), others.end());
      return others;
    }
  return {};
}

class TorchJoin {
 public:
  explicit TorchJoin(Job* job) : job_(*job) {}

  void run() {
    for (size_t g = 0; g < job_.comms.size(); ++g) {
      label(g);
      if (job_.comms[g].pg_name.empty()) continue;
      find_mismatches(g);
      add_last_records(g);
    }
    for (size_t p = 0; p < job_.processes.size(); ++p) find_queued(p);
  }

 private:
  void label(size_t g) {
    CommGroup& group = job_.comms[g];
    std::map<std::pair<std::string, std::string>, int> votes;
    for (const Member& member : group.members)
      if (const json* pg = group_of(job_, member); pg && (*pg)["name"].is_string())
        ++votes[{(*pg)["name"].get<std::string>(), (*pg)["desc"].is_string() ? (*pg)["desc"].get<std::string>() : ""}];
    if (votes.empty()) return;
    if (votes.size() > 1) {
      group.warnings.push_back("ranks' flight recorders name different process groups for this communicator");
      return;
    }
    group.pg_name = votes.begin()->first.first;
    group.pg_desc = votes.begin()->first.second;
  }

  // torchfrtrace's checks on one collective: op, input sizes, input dtypes.
  void find_mismatches(size_t g) {
    const CommGroup& group = job_.comms[g];
    std::vector<std::map<uint64_t, const json*>> per_member;
    std::set<uint64_t> seqs;
    for (const Member& member : group.members) {
      per_member.push_back(entries_on(job_, member, group.pg_name));
      for (const auto& [seq, entry] : per_member.back()) seqs.insert(seq);
    }
    for (uint64_t seq : seqs) {
      std::map<std::string, std::vector<int>> by_op, by_sizes, by_dtypes;
      size_t present = 0;
      for (size_t m = 0; m < group.members.size(); ++m) {
        auto found = per_member[m].find(seq);
        if (found == per_member[m].end()) continue;
        ++present;
        const json& entry = *found->second;
        by_op[op_name(entry)].push_back(group.members[m].rank);
        by_sizes[sizes_text(entry["input_sizes"])].push_back(group.members[m].rank);
        by_dtypes[entry["input_dtypes"].dump()].push_back(group.members[m].rank);
      }
      if (present < 2) continue;
      // An op mismatch is NCCL's collective-mismatch already (counters); sizes and dtypes
      // are what only PyTorch's record holds.
      if (by_op.size() > 1) continue;
      if (by_sizes.size() > 1) add_mismatch(g, seq, "size-mismatch", by_sizes, per_member);
      else if (by_dtypes.size() > 1) add_mismatch(g, seq, "dtype-mismatch", by_dtypes, per_member);
      if (by_sizes.size() > 1 || by_dtypes.size() > 1) return;  // the first one explains what follows
    }
  }

  void add_mismatch(size_t g, uint64_t seq, const std::string& kind,
                    const std::map<std::string, std::vector<int>>& ranks_by_value,
                    const std::vector<std::map<uint64_t, const json*>>& per_member) {
    const CommGroup& group = job_.comms[g];
    Finding finding{kind};
    finding.seq = static_cast<int64_t>(seq);
    finding.culprits = minority(ranks_by_value, group.members.size());
    json values = json::array();
    for (size_t m = 0; m < group.members.size(); ++m) {
      auto found = per_member[m].find(seq);
      if (found == per_member[m].end()) continue;
      const json& entry = *found->second;
      if (finding.collective.empty()) finding.collective = op_name(entry);
      std::string who = job_.process_label(group.members[m].process);
      finding.evidence.push_back(who + ": " + entry_text(entry));
      values.push_back({{"rank", group.members[m].rank}, {"sizes", entry["input_sizes"]},
                        {"dtypes", entry["input_dtypes"]}, {"frame", user_frame(entry)}});
    }
    finding.evidence.insert(finding.evidence.begin(),
                            "PyTorch's flight recorder (pg " + group.pg_desc + "): the ranks issued " +
                                finding.collective + " #" + std::to_string(seq) + " with different input " +
                                (kind == "size-mismatch" ? "sizes" : "dtypes") +
                                "; NCCL does not check this: the collective reads and writes different "
                                "amounts on different ranks, completes with wrong results or hangs");
    if (finding.culprits.empty())
      finding.evidence.push_back("no majority: which side is at fault is not decided");
    finding.torch_op = finding.collective;  // PyTorch's own name and per-group number
    finding.torch_seq = finding.seq;
    finding.extra["source"] = "pytorch-flight-recorder";
    finding.extra["values"] = values;
    job_.findings[g].push_back(std::move(finding));
  }

  // Each named rank's last record on this group: the user's words for what it did.
  void add_last_records(size_t g) {
    const CommGroup& group = job_.comms[g];
    for (Finding& finding : job_.findings[g]) {
      if (!finding.explains_hang) continue;
      std::vector<int> named = finding.culprits;
      named.insert(named.end(), finding.waiting.begin(), finding.waiting.end());
      std::sort(named.begin(), named.end());
      named.erase(std::unique(named.begin(), named.end()), named.end());
      bool p2p = finding.collective == "Send" || finding.collective == "Recv";
      name_torch_operation(group, p2p, &finding);
      for (int rank : named) {
        const Member* member = group.find(rank);
        if (member == nullptr) continue;
        auto entries = entries_on(job_, *member, group.pg_name, p2p);
        std::string who = job_.process_label(member->process);
        finding.evidence.push_back(
            entries.empty() ? "PyTorch's flight recorder (pg " + group.pg_desc + "): " + who + " recorded no " +
                                  (p2p ? "send or receive" : "collective") + " on it"
                            : "PyTorch's flight recorder (pg " + group.pg_desc + "): " + who + " last issued " +
                                  entry_text(*entries.rbegin()->second));
      }
    }
  }

  // PyTorch's words for the operation the far side owes: the first entry a waiting rank
  // recorded beyond the far side's last one on this group. Unknown when a far rank has no recorder.
  // A split-vs-collective is the other way round: the far side launched it, the waiting side did not.
  void name_torch_operation(const CommGroup& group, bool p2p, Finding* finding) const {
    bool launched_by_far_side = finding->kind == "split-vs-collective";
    const std::vector<int>& behind = launched_by_far_side ? finding->waiting : finding->culprits;
    const std::vector<int>& ahead = launched_by_far_side ? finding->culprits : finding->waiting;
    uint64_t behind_last = 0;
    for (int rank : behind) {
      const Member* member = group.find(rank);
      if (member == nullptr || !job_.processes[member->process].torch.is_object()) return;
      auto entries = entries_on(job_, *member, group.pg_name, p2p);
      if (!entries.empty()) behind_last = std::max(behind_last, entries.rbegin()->first);
    }
    for (int rank : ahead) {
      const Member* member = group.find(rank);
      if (member == nullptr) continue;
      auto entries = entries_on(job_, *member, group.pg_name, p2p);
      auto next = entries.upper_bound(behind_last);
      if (next == entries.end()) continue;
      finding->torch_op = op_name(*next->second);
      finding->torch_seq = static_cast<int64_t>(next->first);
      return;
    }
  }

  // With TORCH_NCCL_ENABLE_TIMING=1 the watchdog records, per process group, the last
  // collective whose start event the GPU reached. A group with a collective enqueued but not
  // started, beside a group of the same rank whose collective started and never completed:
  // the first waits on this GPU behind the second (PyTorch orders them through the compute
  // stream). Without timing last_started stays -1 and nothing is said.
  void find_queued(size_t p) {
    const json& torch = job_.processes[p].torch;
    if (!torch.is_object() || !torch["pg_status"].is_array()) return;
    std::vector<const json*> queued, running;
    for (const json& status : torch["pg_status"]) {
      const json &enqueued = status["last_enqueued_collective"], &started = status["last_started_collective"],
                 &completed = status["last_completed_collective"];
      if (!enqueued.is_number() || !started.is_number() || !completed.is_number() || started.get<int64_t>() < 0)
        continue;
      if (enqueued.get<int64_t>() > started.get<int64_t>()) queued.push_back(&status);
      else if (started.get<int64_t>() > completed.get<int64_t>()) running.push_back(&status);
    }
    for (const json* status : queued) add_queued(p, *status, running);
  }

  void add_queued(size_t p, const json& status, const std::vector<const json*>& running) {
    const json* entry = entry_of(p, status["pg_id"], status["last_enqueued_collective"]);
    if (entry == nullptr || !(*entry)["process_group"][0].is_string()) return;
    const std::string pg_name = (*entry)["process_group"][0].get<std::string>();
    for (size_t g = 0; g < job_.comms.size(); ++g) {
      const CommGroup& group = job_.comms[g];
      if (group.pg_name != pg_name) continue;
      const Member* member = member_in(group, p);
      if (member == nullptr) continue;
      Finding finding{"queued-behind", op_name(*entry)};
      finding.seq = status["last_enqueued_collective"].get<int64_t>();
      finding.waiting = {member->rank};
      std::string who = job_.process_label(p);
      finding.evidence.push_back("PyTorch's watchdog (TORCH_NCCL_ENABLE_TIMING): " + who + " enqueued " +
                                 entry_text(*entry, false) + " on pg " + group.pg_desc +
                                 " but the GPU has not started it (last started #" +
                                 status["last_started_collective"].dump() + ")");
      json behind = json::array();
      for (const json* other : running) {
        const json* started = entry_of(p, (*other)["pg_id"], (*other)["last_started_collective"]);
        if (started == nullptr) continue;
        finding.evidence.push_back("it is queued on this GPU behind " + entry_text(*started, false) + " on pg " +
                                   json_text((*started)["process_group"][1], "?") +
                                   ", which started and has not completed");
        behind.push_back({{"pg", (*started)["process_group"]}, {"seq", (*other)["last_started_collective"]}});
      }
      finding.extra["source"] = "pytorch-watchdog";
      finding.extra["behind"] = behind;
      job_.findings[g].push_back(std::move(finding));
      return;
    }
  }

  // The process's recorder entry of collective `seq` on the group with recorder id `pg_id`.
  const json* entry_of(size_t p, const json& pg_id, const json& seq) const {
    const json& torch = job_.processes[p].torch;
    for (const json& entry : torch["entries"])
      if (!entry["is_p2p"].get<bool>() && entry["pg_id"] == pg_id && entry["collective_seq_id"] == seq) return &entry;
    return nullptr;
  }

  static const Member* member_in(const CommGroup& group, size_t process) {
    for (const Member& member : group.members)
      if (static_cast<size_t>(member.process) == process) return &member;
    return nullptr;
  }


  Job& job_;
};

}  // namespace

json sanitize_torch_section(const json& section) {
  if (!section.is_object()) return nullptr;
  json groups = json::array(), entries = json::array();
  if (const json* list = find_json_member(section, "process_groups"); list && list->is_array())
    for (const json& group : *list)
      if (groups.size() < kMaxGroups && group.is_object()) groups.push_back(sanitize_group(group));
  if (const json* list = find_json_member(section, "entries"); list && list->is_array()) {
    size_t skip = list->size() > kMaxEntries ? list->size() - kMaxEntries : 0;  // keep the newest
    for (size_t i = skip; i < list->size(); ++i)
      if ((*list)[i].is_object()) entries.push_back(sanitize_entry((*list)[i]));
  }
  json statuses = json::array();
  if (const json* list = find_json_member(section, "pg_status"); list && list->is_array())
    for (const json& status : *list)
      if (statuses.size() < kMaxGroups && status.is_object()) statuses.push_back(sanitize_pg_status(status));
  json liveness = sanitize_liveness(find_json_member(section, "liveness"));
  if (groups.empty() && entries.empty() && liveness.is_null()) return nullptr;
  return {{"process_groups", groups}, {"entries", entries}, {"pg_status", statuses}, {"liveness", liveness}};
}

void join_torch_records(Job* job) { TorchJoin(job).run(); }

}  // namespace nsc::triage
