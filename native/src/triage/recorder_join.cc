// Flight recorder data in triage (issue 7): the recorder's view of each rank
// joined with the host-state findings. Three steps:
//  - a communicator only the recorder knows (no ncclComm in memory) still joins
//    the merge, with counters from its recorded collectives;
//  - the same collective (comm hash, function, seq) recorded with a different
//    count, datatype or root on two ranks becomes a "<field>-mismatch" finding:
//    NCCL never compares arguments across ranks, host state holds none;
//  - each rank's cross-stream chains (host thread -> stream -> event -> NCCL op)
//    end at the ranks that have not launched that op, and join its finding.
// Numbering: triage's "#N" is the N-th launch (1-based); the recorder's seq is
// NCCL's seqNumber before the launch (0-based), so #N is seq N-1.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "cuda/recorder_analysis.h"
#include "triage/analysis.h"
#include "triage/rank_set.h"
#include "util/json_access.h"
#include "util/strings.h"

namespace nsc::triage {
namespace {

using nlohmann::json;

// Bounds on what a (possibly hostile) snapshot can make triage hold.
constexpr size_t kMaxComms = 64, kMaxOpsPerComm = 4096, kMaxChains = 64, kMaxSteps = 16,
                 kMaxThreads = 4096;
constexpr size_t kChainsPerFinding = 3;  // chain lines in one finding's evidence

Maybe<uint64_t> uint_at(const json& object, const char* key) {
  const json* value = find_json_member(object, key);
  if (value == nullptr || !value->is_number_integer()) return std::nullopt;
  if (value->is_number_unsigned()) return value->get<uint64_t>();
  int64_t signed_value = value->get<int64_t>();
  if (signed_value < 0) return std::nullopt;
  return static_cast<uint64_t>(signed_value);
}

Maybe<int64_t> int_at(const json& object, const char* key) {
  const json* value = find_json_member(object, key);
  if (value == nullptr || !value->is_number_integer()) return std::nullopt;
  if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return value->get<int64_t>();
}

json string_or_null(const json& object, const char* key) {
  const json* value = find_json_member(object, key);
  return value != nullptr && value->is_string() ? *value : json(nullptr);
}

// "0x6DB0..." or "7903..." -> "0x6db0..."; null when not a number.
json canonical_hash(const json& object, const char* key) {
  const json* value = find_json_member(object, key);
  uint64_t hash = 0;
  if (value == nullptr || !value->is_string() || !parse_u64(value->get<std::string>(), &hash)) return nullptr;
  return hex(hash);
}

json sanitize_op(const json& op) {
  json hash = canonical_hash(op, "comm_hash");
  json collective = string_or_null(op, "collective");
  if (hash.is_null() || collective.is_null()) return nullptr;
  json out = {{"record", string_or_null(op, "record")}, {"comm_hash", hash}, {"collective", collective},
              {"count", nullptr}, {"datatype", string_or_null(op, "datatype")},
              {"stream", string_or_null(op, "stream")}};
  if (auto count = uint_at(op, "count")) out["count"] = *count;
  if (auto seq = uint_at(op, "seq")) out["seq"] = *seq;
  if (auto root = int_at(op, "root")) out["root"] = *root;
  return out;
}

json sanitize_step(const json& step) {
  json out = json::object();
  for (const char* key : {"step", "call", "stream", "event", "event_recorded_on"}) out[key] = string_or_null(step, key);
  if (auto tid = int_at(step, "tid")) out["tid"] = *tid;
  for (const char* key : {"after_nccl_op", "nccl_op"})
    if (const json* op = find_json_member(step, key); op != nullptr && op->is_object()) out[key] = sanitize_op(*op);
  return out;
}

json sanitize_comm(const json& comm) {
  json hash = canonical_hash(comm, "comm_hash");
  auto rank = int_at(comm, "rank");
  // Without its rank a comm entry cannot be compared or merged.
  if (hash.is_null() || !rank || *rank < 0 || *rank > INT32_MAX) return nullptr;
  auto nranks = int_at(comm, "nranks");
  const json* finalized = find_json_member(comm, "finalized");
  json out = {{"comm_hash", hash},
              {"rank", *rank},
              {"nranks", nranks && *nranks >= 1 && *nranks <= INT32_MAX ? json(*nranks) : json(nullptr)},
              {"finalized", finalized != nullptr && finalized->is_boolean() && finalized->get<bool>()},
              {"last_seq", json::object()}, {"ops", json::array()}};
  if (const json* last = find_json_member(comm, "last_seq"); last != nullptr && last->is_object())
    for (const auto& [func, seq] : last->items())
      if (seq.is_number_unsigned() || (seq.is_number_integer() && seq.get<int64_t>() >= 0))
        out["last_seq"][func] = seq.get<uint64_t>();
  if (const json* ops = find_json_member(comm, "ops"); ops != nullptr && ops->is_array())
    for (const json& op : *ops) {
      // Only launched collectives carry a seq; API records and P2P ops have none.
      if (!op.is_object() || op.value("record", json()) != "nccl_coll" || !uint_at(op, "seq")) continue;
      // Kept small (4,096 ranks x 64 ops): what compare_recorded_collectives reads.
      const json* op_hash = find_json_member(op, "comm_hash");
      bool same_comm = op_hash != nullptr && (*op_hash == *find_json_member(comm, "comm_hash") || canonical_hash(op, "comm_hash") == hash);
      json collective = string_or_null(op, "collective");
      if (!same_comm || collective.is_null() || out["ops"].size() >= kMaxOpsPerComm) continue;
      auto count = uint_at(op, "count");
      json compact = {{"record", "nccl_coll"}, {"collective", std::move(collective)}, {"seq", *uint_at(op, "seq")},
                      {"count", count ? json(*count) : json(nullptr)}, {"datatype", string_or_null(op, "datatype")}};
      if (auto root = int_at(op, "root")) compact["root"] = *root;
      out["ops"].push_back(std::move(compact));
    }
  return out;
}

std::string ordinal(uint64_t n) {
  uint64_t tens = n % 100;
  const char* suffix = tens >= 11 && tens <= 13 ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  return std::to_string(n) + suffix;
}

// "AllReduce #4 (seq 3)": triage's 1-based launch number, then the recorder's 0-based seq.
std::string numbered(const std::string& collective, uint64_t recorder_seq) {
  return collective + " #" + std::to_string(recorder_seq + 1) + " (seq " + std::to_string(recorder_seq) + ")";
}

bool is_rooted(const std::string& collective) {
  return collective == "Broadcast" || collective == "Reduce" || collective == "Gather" || collective == "Scatter";
}

int group_of_hash(const Job& job, const std::string& hash_text) {
  for (size_t g = 0; g < job.comms.size(); ++g)
    if (job.comms[g].hash_text == hash_text) return static_cast<int>(g);
  return -1;
}

// Does the process wait: its application thread on the GPU or in NCCL, or a thread the recorder saw block.
bool process_waits(const ProcessView& process) {
  if (const ThreadView* thread = process.principal())
    if (is_gpu_wait(thread->blocked_in) || is_nccl_host_call(thread->blocked_in)) return true;
  return process.recorder.is_object() && !process.recorder["blocked_threads"].empty();
}

using CollectiveKey = std::tuple<std::string, std::string, uint64_t>;  // comm hash, function, seq

class RecorderAnalyzer {
 public:
  explicit RecorderAnalyzer(Job* job) : job_(*job) {
    for (size_t p = 0; p < job_.processes.size(); ++p)
      if (job_.processes[p].recorder.is_object()) recorded_.push_back(static_cast<int>(p));
  }

  void run() {
    if (recorded_.empty()) return;  // no recorder anywhere: the report is exactly as before
    json mismatches = find_mismatches();
    json chains = build_chains();
    json inputs = json::array(), without = json::array();
    for (size_t p = 0; p < job_.processes.size(); ++p) {
      const ProcessView& process = job_.processes[p];
      if (!process.recorder.is_object()) {
        without.push_back(process.input_name);
        continue;
      }
      inputs.push_back({{"input", process.input_name},
                        {"world_rank", job_.world_rank[p] ? json(*job_.world_rank[p]) : json(nullptr)},
                        {"pid", process.recorder["pid"]}, {"complete_history", process.recorder["lossless"]}});
    }
    job_.recorder = {{"numbering", "#N is the N-th launch of that collective on its communicator (1-based, as in "
                                   "findings); the recorder's seq is NCCL's 0-based seqNumber before the launch: #N is seq N-1"},
                     {"inputs", inputs}, {"inputs_without_recorder", without},
                     {"compared_collectives", compared_collectives()},
                     {"mismatches", mismatches}, {"chains", chains}};
  }

 private:
  // (hash, function, seq) -> comm rank -> recorded op, for the mismatched collectives only.
  void index_ops(const std::map<CollectiveKey, std::vector<std::string>>& wanted) {
    for (int p : recorded_)
      for (const json& comm : job_.processes[p].recorder["comms"]) {
        int rank = comm["rank"].get<int>();
        const std::string& hash = comm["comm_hash"].get_ref<const std::string&>();
        for (const json& op : comm["ops"]) {
          CollectiveKey key{hash, op["collective"].get<std::string>(), op["seq"].get<uint64_t>()};
          if (wanted.count(key)) ops_[key].emplace(rank, &op);
        }
      }
  }

  // Collectives (comm, function, seq) recorded on two or more ranks: what the argument check covered.
  uint64_t compared_collectives() const { return compared_; }

  static std::string value_text(const json& op, const std::vector<std::string>& fields) {
    std::string text = "count " + (op["count"].is_number() ? std::to_string(op["count"].get<uint64_t>()) : "?") +
                       " " + json_text(op["datatype"], "?");
    if (std::find(fields.begin(), fields.end(), "root") != fields.end())
      text += " root " + (op.contains("root") ? std::to_string(op["root"].get<int64_t>()) : "?");
    return text;
  }

  json find_mismatches() {
    // The comms move into the comparison's input and back: no copy of 4,096 ranks' ops.
    std::vector<json> sections;
    for (int p : recorded_)
      sections.push_back({{"found", true}, {"comms", std::move(job_.processes[p].recorder["comms"])}});
    json compared = compare_recorded_collectives(sections);
    for (size_t i = 0; i < recorded_.size(); ++i)
      job_.processes[recorded_[i]].recorder["comms"] = std::move(sections[i]["comms"]);
    compared_ = compared["compared"].get<uint64_t>();
    std::map<CollectiveKey, std::vector<std::string>> fields_of;
    for (const json& mismatch : compared["mismatches"])
      fields_of[{mismatch["comm_hash"].get<std::string>(), mismatch["collective"].get<std::string>(),
                 mismatch["seq"].get<uint64_t>()}]
          .push_back(mismatch["field"].get<std::string>());
    if (!fields_of.empty()) index_ops(fields_of);
    json out = json::array();
    for (const auto& [key, fields] : fields_of) {
      const auto& [hash, collective, seq] = key;
      Finding finding = mismatch_finding(key, fields);
      int g = group_of_hash(job_, hash);
      json entry = {{"comm_hash", hash}, {"collective", collective}, {"seq", seq + 1}, {"recorder_seq", seq},
                    {"kind", finding.kind}, {"fields", fields}, {"values", finding.extra["values"]},
                    {"waiting_ranks", finding.waiting}, {"culprit_ranks", finding.culprits},
                    {"text", finding.evidence.front()}, {"in_findings", g >= 0}};
      out.push_back(entry);
      if (g < 0) continue;  // a communicator no input holds (finalized everywhere): listed only
      finding.explains_hang = false;
      for (const Member& member : job_.comms[g].members)
        finding.explains_hang = finding.explains_hang || process_waits(job_.processes[member.process]);
      if (!finding.explains_hang)
        finding.evidence.push_back("no rank waits on the GPU or inside NCCL: the collective may have completed "
                                   "silently with wrong results");
      auto& findings = job_.findings[g];
      // A recorded mismatch contradicts "no hang evident" on that communicator.
      findings.erase(std::remove_if(findings.begin(), findings.end(),
                                    [](const Finding& f) { return f.kind == "no-hang-evident"; }),
                     findings.end());
      findings.insert(findings.begin() + mismatches_added_[g]++, std::move(finding));
    }
    return out;
  }

  Finding mismatch_finding(const CollectiveKey& key, const std::vector<std::string>& fields) const {
    const auto& [hash, collective, seq] = key;
    const std::map<int, const json*>& by_rank = ops_.at(key);
    Finding finding{fields.front() + "-mismatch", collective};
    finding.seq = static_cast<int64_t>(seq + 1);
    finding.edge_kind = "mismatch";
    std::map<std::string, std::vector<int>> ranks_by_value;
    json values = json::array();
    std::string listing;
    for (const auto& [rank, op_pointer] : by_rank) {
      const json& op = *op_pointer;
      std::string value = value_text(op, fields);
      ranks_by_value[value].push_back(rank);
      listing += (listing.empty() ? "" : ", ") + ("rank " + std::to_string(rank)) + " " + value;
      json entry = {{"rank", rank}, {"count", op["count"]}, {"datatype", op["datatype"]}};
      // NCCL reports root 0 for every collective: it means something only for rooted ones.
      if (op.contains("root") && is_rooted(collective)) entry["root"] = op["root"];
      values.push_back(entry);
    }
    finding.evidence.push_back(finding.kind + ": comm " + hash + " " + collective + " seq " + std::to_string(seq) +
                               " (#" + std::to_string(seq + 1) + ", the " + ordinal(seq + 1) + " " + collective +
                               "): " + listing);
    // The majority's arguments are taken as intended; without one, nobody is singled out.
    size_t largest = 0, holders = 0;
    for (const auto& [value, ranks] : ranks_by_value) largest = std::max(largest, ranks.size());
    for (const auto& [value, ranks] : ranks_by_value) holders += ranks.size() == largest ? 1 : 0;
    for (const auto& [value, ranks] : ranks_by_value) {
      bool majority = holders == 1 && ranks.size() == largest;
      auto& side = holders == 1 && !majority ? finding.culprits : finding.waiting;
      side.insert(side.end(), ranks.begin(), ranks.end());
    }
    normalize_ranks(&finding.culprits);
    normalize_ranks(&finding.waiting);
    if (holders > 1)
      finding.evidence.push_back("no majority: either side may hold the wrong arguments, so neither is blamed");
    else
      finding.evidence.push_back(ranks_phrase(finding.culprits) + " " + verb_for(finding.culprits, "disagrees", "disagree") +
                                 " with the " + std::to_string(largest) + " ranks that agree");
    finding.evidence.push_back("NCCL does not compare collective arguments across ranks: ranks that disagree read "
                               "and write different sizes, which hangs or corrupts results silently (flight "
                               "recorder; host NCCL state holds no arguments)");
    finding.extra = {{"recorder_seq", seq}, {"fields", fields}, {"values", values}, {"source", "flight-recorder"}};
    return finding;
  }

  // --- chains ---------------------------------------------------------------

  // What annotate_chains_with_ranks reads: one state-like document with every process's
  // communicators and launch counts.
  json launch_states() const {
    json comms = json::array();
    for (const ProcessView& process : job_.processes)
      for (const CommView& comm : process.comms) {
        if (!comm.rank) continue;
        json launched = json::object();
        for (int c = 0; c < kNumCollectives; ++c)
          if (comm.seq_launched[c]) launched[kCollectiveNames[c]] = *comm.seq_launched[c];
        comms.push_back({{"comm_hash", comm.comm_hash_text()}, {"rank", *comm.rank}, {"seq_launched", launched}});
      }
    return {{"communicators", comms}};
  }

  static std::string op_text(const json& op) {
    std::string text = json_text(op["collective"], "?");
    if (op.contains("seq")) text = numbered(text, op["seq"].get<uint64_t>());
    if (op["count"].is_number()) text += " count " + std::to_string(op["count"].get<uint64_t>()) + " " + json_text(op["datatype"], "?");
    return text + " on comm " + json_text(op["comm_hash"], "?");
  }

  static bool same_op(const json& a, const json& b) {
    return a.is_object() && b.is_object() && a["comm_hash"] == b["comm_hash"] &&
           a["collective"] == b["collective"] && a.value("seq", json()) == b.value("seq", json());
  }

  // "cudaStreamSynchronize(0x5a000010) -> 0x5a000010 waits on event ... -> that AllGather waits for rank 1"
  std::string chain_text(const json& steps, const json** awaited_step) const {
    std::string text;
    const json* last_op = nullptr;
    auto add = [&](const std::string& part) { text += (text.empty() ? "" : " -> ") + part; };
    for (const json& step : steps) {
      std::string kind = json_text(step["step"], "");
      if (kind == "host_thread_blocked") {
        std::string object = step["stream"].is_string() ? json_text(step["stream"], "?") : json_text(step["event"], "?");
        add("host thread " + (step.contains("tid") ? std::to_string(step["tid"].get<int64_t>()) : "?") +
            " blocked in " + json_text(step["call"], "?") + "(" + object + ")");
      } else if (kind == "stream_waits_event" || kind == "event_recorded") {
        if (kind == "stream_waits_event") add(json_text(step["stream"], "?") + " waits on event " + json_text(step["event"], "?"));
        const json& recorded_on = kind == "event_recorded" ? step["stream"] : step["event_recorded_on"];
        if (!recorded_on.is_string()) {
          add(json_text(step["event"], "?") + " was recorded before the recorder's window (or never)");
          continue;
        }
        std::string part = json_text(step["event"], "?") + " recorded on " + json_text(recorded_on, "?");
        if (step.contains("after_nccl_op") && step["after_nccl_op"].is_object()) {
          part += " after " + op_text(step["after_nccl_op"]);
          last_op = &step;
        }
        add(part);
      } else if (kind == "stream_runs_nccl_op" && step.contains("nccl_op") && step["nccl_op"].is_object()) {
        bool repeat = last_op != nullptr && same_op((*last_op)["after_nccl_op"], step["nccl_op"]);
        add(json_text(step["stream"], "?") + " last ran " + (repeat ? "that " + json_text(step["nccl_op"]["collective"], "?") : op_text(step["nccl_op"])));
        if (!repeat || !last_op->contains("waits_for_ranks")) last_op = &step;
      }
    }
    *awaited_step = last_op;
    return text;
  }

  // The chain's end: who has not launched the awaited op ("that AllGather waits for rank 1").
  std::string awaited_text(const json& step, const json& op, int g) const {
    if (!step.contains("waits_for_ranks")) return "";
    std::vector<int> waiting = step["waits_for_ranks"].get<std::vector<int>>();
    uint64_t launched = step.value("launched_by_count", uint64_t(0));
    normalize_ranks(&waiting);
    std::string collective = json_text(op["collective"], "?");
    std::string where = g >= 0 && g != job_.world_comm ? " of comm " + json_text(op["comm_hash"], "?") : "";
    if (waiting.empty())
      return launched == 0 ? "" : "every rank given launched that " + collective + ": the wait is on the GPU or network";
    std::string text = "that " + collective + " waits for " + ranks_phrase(waiting) + where;
    if (g >= 0 && op.contains("seq")) {
      std::set<int64_t> counts;
      int c = std::find(kCollectiveNames, kCollectiveNames + kNumCollectives, collective) - kCollectiveNames;
      for (int rank : waiting)
        if (const Member* member = job_.comms[g].find(rank))
          if (c < kNumCollectives && job_.comm_of(*member).seq_launched[c]) counts.insert(*job_.comm_of(*member).seq_launched[c]);
      if (counts.size() == 1)
        text += " (" + std::string(verb_for(waiting, "it has", "they have")) + " launched " + collective + " " +
                std::to_string(*counts.begin()) + (*counts.begin() == 1 ? " time" : " times") + ")";
    }
    return text;
  }

  json build_chains() {
    json all = json::array();  // every rank's chains, annotated in one pass
    for (int p : recorded_)
      for (json chain : job_.processes[p].recorder["chains"]) {
        chain["node"] = p;
        all.push_back(std::move(chain));
      }
    json annotated = annotate_chains_with_ranks(all, {launch_states()}, false);
    json out = json::array();
    for (const json& chain : annotated) {
      int p = chain["node"].get<int>();
      const ProcessView& process = job_.processes[p];
      const json* awaited = nullptr;
      std::string text = chain_text(chain["steps"], &awaited);
      json entry = {{"node", p}, {"input", process.input_name},
                    {"world_rank", job_.world_rank[p] ? json(*job_.world_rank[p]) : json(nullptr)},
                    {"tid", chain.value("tid", json())}, {"steps", chain["steps"]},
                    {"waits_for_ranks", json::array()}, {"finding", nullptr}};
      if (awaited != nullptr) {
        bool after = awaited->contains("after_nccl_op") && (*awaited)["after_nccl_op"].is_object();
        const json& op = after ? (*awaited)["after_nccl_op"] : (*awaited)["nccl_op"];
        int g = group_of_hash(job_, json_text(op["comm_hash"], ""));
        std::string end = awaited_text(*awaited, op, g);
        if (!end.empty()) text += " -> " + end;
        if (awaited->contains("waits_for_ranks")) entry["waits_for_ranks"] = (*awaited)["waits_for_ranks"];
        if (g >= 0 && op.contains("seq")) entry["finding"] = join_finding(g, op, p, text);
      }
      entry["text"] = job_.process_label(p) + ": " + text;
      out.push_back(entry);
    }
    for (const auto& [where, joined] : chains_joined_)
      if (joined > kChainsPerFinding)
        job_.findings[where.first][where.second].evidence.push_back(
            "flight recorder chains of " + std::to_string(joined - kChainsPerFinding) +
            " more ranks end at this collective too (report: recorder.chains)");
    return out;
  }

  // The chain's awaited op is the collective a finding is about: say so in that finding.
  json join_finding(int g, const json& op, int process, const std::string& text) {
    int64_t seq = static_cast<int64_t>(op["seq"].get<uint64_t>()) + 1;
    for (size_t f = 0; f < job_.findings[g].size(); ++f) {
      Finding& finding = job_.findings[g][f];
      if (finding.collective != json_text(op["collective"], "") || !finding.seq || *finding.seq != seq) continue;
      // A few chains read well; thousands of ranks' chains are counted (all are in recorder.chains).
      size_t& joined = chains_joined_[{g, f}];
      if (++joined <= kChainsPerFinding)
        finding.evidence.push_back("flight recorder chain, " + job_.process_label(process) + ": " + text);
      return {{"comm_hash", job_.comms[g].hash_text}, {"kind", finding.kind},
              {"collective", finding.collective}, {"seq", seq}};
    }
    return nullptr;
  }

  Job& job_;
  std::vector<int> recorded_;
  std::map<CollectiveKey, std::map<int, const json*>> ops_;  // into the processes' recorder sections
  std::map<int, size_t> mismatches_added_;
  uint64_t compared_ = 0;
  std::map<std::pair<int, size_t>, size_t> chains_joined_;  // (comm group, finding) -> chains
};

}  // namespace

nlohmann::json sanitize_recorder_section(const nlohmann::json& section) {
  const json* found = find_json_member(section, "found");
  if (found == nullptr || !found->is_boolean() || !found->get<bool>()) return nullptr;
  json out = {{"found", true}, {"pid", nullptr}, {"blocked_threads", json::array()},
              {"comms", json::array()}, {"chains", json::array()}};
  if (auto pid = int_at(section, "pid"); pid && *pid > 0) out["pid"] = *pid;
  // Complete history: no ring wrapped and no thread went unrecorded, so "never recorded" means "never".
  bool lossless = uint_at(section, "threads_dropped").value_or(0) == 0;
  size_t threads_seen = 0;
  if (const json* threads = find_json_member(section, "threads"); threads != nullptr && threads->is_array())
    for (const json& thread : *threads) {
      if (++threads_seen > kMaxThreads) break;
      auto written = uint_at(thread, "records_written");
      auto kept = uint_at(thread, "records_kept");
      lossless = lossless && written && kept && *written == *kept;
      const json* blocked = find_json_member(thread, "blocked_in");
      if (blocked == nullptr || !blocked->is_object() || !string_or_null(*blocked, "call").is_string()) continue;
      json entry = {{"tid", int_at(thread, "tid") ? json(*int_at(thread, "tid")) : json(nullptr)},
                    {"call", string_or_null(*blocked, "call")}, {"stream", string_or_null(*blocked, "stream")},
                    {"event", string_or_null(*blocked, "event")}};
      out["blocked_threads"].push_back(entry);
    }
  out["lossless"] = lossless;
  if (const json* comms = find_json_member(section, "comms"); comms != nullptr && comms->is_array())
    for (const json& comm : *comms) {
      json clean = sanitize_comm(comm);
      if (!clean.is_null() && out["comms"].size() < kMaxComms) out["comms"].push_back(clean);
    }
  if (const json* chains = find_json_member(section, "chains"); chains != nullptr && chains->is_array())
    for (const json& chain : *chains) {
      if (out["chains"].size() >= kMaxChains) break;
      const json* steps = find_json_member(chain, "steps");
      if (steps == nullptr || !steps->is_array()) continue;
      json clean = {{"tid", int_at(chain, "tid") ? json(*int_at(chain, "tid")) : json(nullptr)}, {"steps", json::array()}};
      for (const json& step : *steps)
        if (step.is_object() && clean["steps"].size() < kMaxSteps) clean["steps"].push_back(sanitize_step(step));
      out["chains"].push_back(clean);
    }
  return out;
}

void add_recorder_communicators(ProcessView* process) {
  const json& recorder = process->recorder;
  if (!recorder.is_object()) return;
  bool lossless = recorder["lossless"].get<bool>();
  for (const json& comm : recorder["comms"]) {
    // A finalized comm was destroyed or aborted: its absence from memory is the finding.
    if (comm["finalized"].get<bool>() || !comm["rank"].is_number_integer()) continue;
    uint64_t hash = 0;
    parse_u64(comm["comm_hash"].get<std::string>(), &hash);
    bool in_memory = std::any_of(process->comms.begin(), process->comms.end(),
                                 [&](const CommView& view) { return view.comm_hash == hash; });
    if (in_memory) continue;
    CommView view;
    view.set_comm_hash(hash);
    view.rank = comm["rank"].get<int>();
    if (comm["nranks"].is_number_integer()) view.nranks = comm["nranks"].get<int>();
    view.from_recorder = true;
    view.position = process->comms.size();
    const std::string why = "no NCCL communicator with this hash in memory; flight recorder data only";
    for (int c = 0; c < kNumCollectives; ++c) {
      const json& last = comm["last_seq"];
      // The recorded seq is the count before the launch: seq 3 is the 4th launch.
      if (last.contains(kCollectiveNames[c])) view.seq_launched[c] = static_cast<int64_t>(last[kCollectiveNames[c]].get<uint64_t>()) + 1;
      else if (lossless) view.seq_launched[c] = 0;
      else view.unavailable.emplace_back(std::string("seq_launched.") + kCollectiveNames[c],
                                         "none in the flight recorder's window (its rings wrapped)");
    }
    for (const char* missing : {"health", "channels", "proxy_ops", "planned"}) view.unavailable.emplace_back(missing, why);
    process->comms.push_back(std::move(view));
  }
}

void analyze_recorder(Job* job) {
  for (CommGroup& group : job->comms)
    for (const Member& member : group.members)
      if (job->comm_of(member).from_recorder)
        group.warnings.push_back(job->processes[member.process].input_name + " (rank " + std::to_string(member.rank) +
                                 "): no NCCL communicator with this hash in memory; its counters come from the "
                                 "flight recorder's collectives");
  RecorderAnalyzer(job).run();
}

}  // namespace nsc::triage
