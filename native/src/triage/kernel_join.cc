// Kernel views joined with triage (issue 6 item 5). A kernel view says, per block of a
// resident NCCL kernel, which peer that channel waits on ("waiting for data from rank 1
// at step 24"). Triage:
//  - attaches each view to the process holding a communicator with the same comm_hash and
//    rank (target.pid only breaks ties: pids differ across PID namespaces);
//  - adds the waits of a waiting rank's kernel to each finding that names it waiting, and
//    the culprit's GPU side (e.g. "no NCCL kernel resident") to each finding naming it;
//  - turns a definite wait on a peer that no finding explaining a hang names into a
//    "kernel-wait" finding (waiting: that rank, culprit: the peer), e.g. when host state
//    alone says only "incomplete" (the peer has no input) or sees no culprit;
//  - gives the graph edge W -> R a "kernel" reason (channels, steps).
// Unknown waits are reported with the decoder's text and never name a culprit.
#include "triage/kernel_join.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "snapshot/kernels_text.h"
#include "triage/analysis.h"
#include "triage/finding_kinds.h"
#include "triage/rank_set.h"
#include "triage/summary_helpers.h"
#include "util/errors.h"
#include "util/json_access.h"
#include "util/schemas.h"
#include "util/strings.h"

namespace nsc::triage {
namespace {

using nlohmann::json;

// Bounds on what a (possibly hostile) kernel view makes triage hold.
constexpr size_t kMaxKernels = 64, kMaxBlocks = 1024, kMaxWaitsPerBlock = 16, kMaxComms = 256,
                 kMaxText = 400, kMaxErrors = 16;
constexpr size_t kKernelLinesPerFinding = 8;  // kernel evidence lines in one finding
constexpr size_t kGroupsPerKernel = 4;        // wait groups in one kernel's line
constexpr size_t kRanksInVerdict = 4;

Maybe<int64_t> int_at(const json& object, const char* key) {
  const json* value = find_json_member(object, key);
  if (value == nullptr || !value->is_number_integer()) return std::nullopt;
  if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return value->get<int64_t>();
}

std::string string_at(const json& object, const char* key) {
  const json* value = find_json_member(object, key);
  if (value == nullptr || !value->is_string()) return "";
  std::string text = value->get<std::string>();
  if (text.size() > kMaxText) text = text.substr(0, kMaxText) + "...";
  return text;
}

// "0x91a16347ba1dcfd3" (or a number) -> the hash; nullopt when neither.
Maybe<uint64_t> hash_at(const json& object, const char* key) {
  const json* value = find_json_member(object, key);
  uint64_t hash = 0;
  if (value != nullptr && value->is_string() && parse_u64(value->get<std::string>(), &hash)) return hash;
  if (value != nullptr && value->is_number_unsigned()) return value->get<uint64_t>();
  return std::nullopt;
}

KernelWaitView wait_of(const json& wait) {
  KernelWaitView out;
  out.kind = string_at(wait, "kind");
  out.peer = index_rule(int_at(wait, "peer"));
  out.step = count_rule(int_at(wait, "step"));
  out.direction = string_at(wait, "direction");
  out.text = string_at(wait, "text");
  return out;
}

KernelBlockView block_of(const json& block) {
  KernelBlockView out;
  out.block = index_rule(int_at(block, "block"));
  out.channel = index_rule(int_at(block, "channel"));
  out.function = string_at(block, "function");
  out.algorithm = string_at(block, "algorithm");
  out.protocol = string_at(block, "protocol");
  out.state = string_at(block, "state");
  out.reason = string_at(block, "reason");
  if (const json* waits = find_json_member(block, "waits"); waits != nullptr && waits->is_array())
    for (const json& wait : *waits)
      if (wait.is_object() && out.waits.size() < kMaxWaitsPerBlock) out.waits.push_back(wait_of(wait));
  return out;
}

KernelEntryView kernel_of(const json& kernel) {
  KernelEntryView out;
  out.index = index_rule(int_at(kernel, "kernel"));
  out.device = index_rule(int_at(kernel, "device"));
  if (const json* nccl = find_json_member(kernel, "nccl")) {
    out.collective = string_at(*nccl, "collective");
    out.op = string_at(*nccl, "op");
    out.datatype = string_at(*nccl, "datatype");
    out.algorithm = string_at(*nccl, "algorithm");
    out.protocol = string_at(*nccl, "protocol");
    out.kernel_name = string_at(*nccl, "kernel_name");
  }
  if (const json* comm = find_json_member(kernel, "communicator"); comm != nullptr && comm->is_object()) {
    Maybe<uint64_t> hash = hash_at(*comm, "comm_hash");
    out.rank = index_rule(int_at(*comm, "rank"));
    out.nranks = size_rule(int_at(*comm, "nranks"));
    out.has_communicator = hash.has_value() && out.rank.has_value();
    if (hash) out.comm_hash = *hash, out.comm_hash_text = hex(*hash);
  }
  out.communicator_match = string_at(kernel, "communicator_match");
  if (const json* blocks = find_json_member(kernel, "blocks"); blocks != nullptr && blocks->is_array())
    for (const json& block : *blocks)
      if (block.is_object() && out.blocks.size() < kMaxBlocks) out.blocks.push_back(block_of(block));
  return out;
}

// A row of other_kernels: the library's "name" (older views: cuda-gdb's invocation).
OtherKernelView other_kernel_of(const json& kernel) {
  OtherKernelView out;
  out.name = string_at(kernel, "name");
  if (out.name.empty()) out.name = string_at(kernel, "invocation");
  if (out.name.empty()) out.name = "an unnamed kernel";
  out.grid_dim = string_at(kernel, "grid_dim");
  out.block_dim = string_at(kernel, "block_dim");
  out.stream = string_at(kernel, "stream");
  out.device = index_rule(int_at(kernel, "device"));
  return out;
}

// "at::cuda::(anonymous namespace)::spin_kernel (grid (1,1,1), block (1,1,1), stream unavailable)".
std::string describe_other_kernel(const OtherKernelView& kernel) {
  return kernel.name + " (grid " + (kernel.grid_dim.empty() ? "?" : kernel.grid_dim) + ", block " +
         (kernel.block_dim.empty() ? "?" : kernel.block_dim) + ", stream " +
         (kernel.stream.empty() ? "unavailable: cuda-gdb does not show it" : kernel.stream) + ")";
}

// "no NCCL kernel resident", and what the GPU runs instead when the view names it.
std::string no_nccl_kernel_text(const KernelView& view) {
  return view.others.empty() ? "no NCCL kernel resident" : "no NCCL kernel resident; its GPU runs " + view.others.front().name;
}

// --- one kernel's waits, grouped -------------------------------------------------

// Definite waits on one peer: the blocks, their channels and the steps they wait at.
struct WaitGroup {
  std::string kind;
  int peer = 0;
  size_t blocks = 0;
  std::vector<int> channels;
  std::set<int64_t> steps;
};

// Blocks whose wait is not known (or not on a peer), grouped by what the decoder said.
struct OtherGroup {
  std::string text;
  size_t blocks = 0;
  std::vector<int> channels;
};

struct KernelWaits {
  std::vector<WaitGroup> definite;  // by (kind, peer)
  std::vector<OtherGroup> unknown;  // by text
  OtherGroup not_waiting;           // "not-waiting-on-peers"
};

std::string channels_phrase(const std::vector<int>& channels) {
  if (channels.empty()) return "";
  return (channels.size() == 1 ? "channel " : "channels ") + format_rank_set(channels);
}

std::string steps_phrase(const std::set<int64_t>& steps) {
  if (steps.empty()) return "";
  if (steps.size() == 1) return " at step " + std::to_string(*steps.begin());
  std::string text = " at steps ";
  if (steps.size() <= 4) {
    for (int64_t step : steps) text += (text.size() > 10 ? "," : "") + std::to_string(step);
    return text;
  }
  return text + std::to_string(*steps.begin()) + "-" + std::to_string(*steps.rbegin()) + " (" +
         std::to_string(steps.size()) + " values)";
}

// What an undecided block's waits say, with the connection's direction.
std::string unknown_text(const KernelBlockView& block) {
  std::string text;
  for (const KernelWaitView& wait : block.waits) {
    std::string part = wait.text.empty() ? wait.kind : wait.text;
    if (!wait.direction.empty()) part = wait.direction + ": " + part;
    text += (text.empty() ? "" : "; ") + part;
  }
  if (text.empty()) text = block.reason.empty() ? "no wait decoded" : block.reason;
  return "wait unknown (" + text + ")";
}

KernelWaits group_waits(const KernelEntryView& kernel) {
  KernelWaits out;
  std::map<std::pair<std::string, int>, size_t> definite_index;
  std::map<std::string, size_t> unknown_index;
  for (const KernelBlockView& block : kernel.blocks) {
    bool any_definite = false;
    std::set<std::pair<std::string, int>> counted;  // a block counts once per group
    for (const KernelWaitView& wait : block.waits) {
      if (!wait.definite() || !wait.peer) continue;
      any_definite = true;
      auto key = std::make_pair(wait.kind, *wait.peer);
      auto [slot, inserted] = definite_index.emplace(key, out.definite.size());
      if (inserted) out.definite.push_back({wait.kind, *wait.peer, 0, {}, {}});
      WaitGroup& group = out.definite[slot->second];
      if (wait.step) group.steps.insert(*wait.step);
      if (!counted.insert(key).second) continue;
      ++group.blocks;
      if (block.channel) group.channels.push_back(*block.channel);
    }
    if (any_definite) continue;
    OtherGroup* group = &out.not_waiting;
    if (block.state != "not-waiting-on-peers") {
      std::string text = unknown_text(block);
      auto [slot, inserted] = unknown_index.emplace(text, out.unknown.size());
      if (inserted) out.unknown.push_back({text, 0, {}});
      group = &out.unknown[slot->second];
    }
    ++group->blocks;
    if (block.channel) group->channels.push_back(*block.channel);
  }
  for (WaitGroup& group : out.definite) normalize_ranks(&group.channels);
  for (OtherGroup& group : out.unknown) normalize_ranks(&group.channels);
  normalize_ranks(&out.not_waiting.channels);
  return out;
}

std::string most_common(const std::vector<KernelBlockView>& blocks, std::string KernelBlockView::*member) {
  std::map<std::string, size_t> counts;
  for (const KernelBlockView& block : blocks)
    if (!(block.*member).empty()) ++counts[block.*member];
  std::string best;
  size_t most = 0;
  for (const auto& [value, count] : counts)
    if (count > most) best = value, most = count;
  return best;
}

std::string with_channels(const std::string& text, const std::vector<int>& channels) {
  return channels.empty() ? text : text + " (" + channels_phrase(channels) + ")";
}

// "waits for data from rank 1 at step 24 on channels 0-23 (24 of 24 blocks)".
std::string wait_predicate(const WaitGroup& group, size_t total_blocks) {
  std::string text = peer_wait_phrase(group.kind, group.peer, "waits") + steps_phrase(group.steps);
  if (!group.channels.empty()) text += " on " + channels_phrase(group.channels);
  return text + " (" + std::to_string(group.blocks) + " of " + std::to_string(total_blocks) + " blocks)";
}

json numbers(const std::set<int64_t>& values) { return json(std::vector<int64_t>(values.begin(), values.end())); }

}  // namespace

bool is_kernel_view_document(const nlohmann::json& document) {
  const json* schema = find_json_member(document, "schema");
  return schema != nullptr && schema->is_string() && schema->get<std::string>() == kKernelsSchema;
}

KernelView summarize_kernel_view(const nlohmann::json& document, const std::string& input_name) {
  if (!is_kernel_view_document(document))
    throw BadInput(input_name + ": not an " + kKernelsSchema + " document");
  KernelView view;
  view.input_name = input_name;
  if (const json* target = find_json_member(document, "target")) view.pid = id_rule(int_at(*target, "pid"));
  if (const json* kernels = find_json_member(document, "kernels"); kernels != nullptr && kernels->is_array())
    for (const json& kernel : *kernels)
      if (kernel.is_object() && view.kernels.size() < kMaxKernels) view.kernels.push_back(kernel_of(kernel));
  if (const json* comms = find_json_member(document, "communicators"); comms != nullptr && comms->is_array())
    for (const json& comm : *comms) {
      Maybe<uint64_t> hash = hash_at(comm, "comm_hash");
      Maybe<int> rank = index_rule(int_at(comm, "rank"));
      if (!hash || !rank || view.communicators.size() >= kMaxComms) continue;
      view.communicators.push_back({*hash, hex(*hash), *rank, size_rule(int_at(comm, "nranks")),
                                    index_rule(int_at(comm, "cuda_dev"))});
    }
  if (const json* others = find_json_member(document, "other_kernels"); others != nullptr && others->is_array()) {
    view.other_kernels = others->size();
    for (const json& other : *others)
      if (other.is_object() && view.others.size() < kMaxKernels) view.others.push_back(other_kernel_of(other));
  }
  if (const json* errors = find_json_member(document, "errors"); errors != nullptr && errors->is_array())
    for (const json& error : *errors) {
      if (view.document_errors.size() >= kMaxErrors) break;
      std::string text = error.is_string() ? error.get<std::string>() : string_at(error, "message");
      if (!text.empty()) view.document_errors.push_back(text.substr(0, kMaxText));
    }
  return view;
}

std::string describe_kernel(const KernelEntryView& kernel, bool with_function) {
  std::string function = most_common(kernel.blocks, &KernelBlockView::function);
  std::string algorithm = most_common(kernel.blocks, &KernelBlockView::algorithm);
  std::string protocol = most_common(kernel.blocks, &KernelBlockView::protocol);
  if (algorithm.empty()) algorithm = kernel.algorithm;
  if (protocol.empty()) protocol = kernel.protocol;
  if (function.empty()) function = kernel.kernel_name;
  std::string running = algorithm + (algorithm.empty() || protocol.empty() ? "" : " ") + protocol;
  std::string details = with_function ? function : "";
  if (!running.empty()) details += (details.empty() ? "" : ", ") + running;
  std::string text = (kernel.collective.empty() ? std::string("NCCL") : kernel.collective) + " kernel" +
                     (details.empty() ? "" : " (" + details + ")");
  if (kernel.communicator_match.rfind("guess", 0) == 0) text += " [communicator guessed]";
  KernelWaits waits = group_waits(kernel);
  std::string total = std::to_string(kernel.blocks.size());
  std::vector<std::string> parts;
  for (const WaitGroup& group : waits.definite)
    parts.push_back(with_channels(std::to_string(group.blocks) + " of " + total + " blocks " +
                                      peer_wait_phrase(group.kind, group.peer) + steps_phrase(group.steps),
                                  group.channels));
  for (const OtherGroup& group : waits.unknown)
    parts.push_back(with_channels(std::to_string(group.blocks) + " of " + total + " blocks: " + group.text, group.channels));
  if (waits.not_waiting.blocks > 0)
    parts.push_back(with_channels(std::to_string(waits.not_waiting.blocks) + " of " + total +
                                      " blocks not waiting on peers",
                                  waits.not_waiting.channels));
  if (parts.empty()) return text + ": no block decoded";
  std::string body;
  for (size_t i = 0; i < parts.size() && i < kGroupsPerKernel; ++i) body += (i ? "; " : "") + parts[i];
  if (parts.size() > kGroupsPerKernel)
    body += "; and " + std::to_string(parts.size() - kGroupsPerKernel) + " more groups (--json: kernel_views)";
  return text + ": " + body;
}

namespace {

class KernelJoiner {
 public:
  KernelJoiner(Job* job, std::vector<KernelView> views) : job_(*job), views_(std::move(views)) {}

  void run() {
    if (views_.empty()) return;  // no kernel view: the report is exactly as before
    view_of_process_.assign(job_.processes.size(), -1);
    joined_to_.assign(views_.size(), -1);
    view_warnings_.assign(views_.size(), {});
    kernel_joined_.resize(views_.size());
    // (comm hash, rank) -> processes holding it: views join in O(views + communicators).
    for (size_t p = 0; p < job_.processes.size(); ++p)
      for (const CommView& comm : job_.processes[p].comms)
        if (comm.rank) holders_[{comm.comm_hash, *comm.rank}].push_back(static_cast<int>(p));
    for (size_t v = 0; v < views_.size(); ++v) attach(v);
    for (size_t g = 0; g < job_.comms.size(); ++g) join_group(g);
    job_.kernel_views = report_section();
    job_.process_kernels = process_kernels();
    job_.kernel_sentence = verdict_sentence();
  }

 private:
  using Identity = std::pair<uint64_t, int>;  // comm hash, rank

  std::set<Identity> identities(const KernelView& view) const {
    std::set<Identity> out;
    for (const KernelEntryView& kernel : view.kernels)
      if (kernel.has_communicator) out.insert({kernel.comm_hash, *kernel.rank});
    for (const KernelCommView& comm : view.communicators) out.insert({comm.comm_hash, comm.rank});
    return out;
  }

  bool holds(const ProcessView& process, const Identity& identity) const {
    return std::any_of(process.comms.begin(), process.comms.end(), [&](const CommView& comm) {
      return comm.comm_hash == identity.first && comm.rank && *comm.rank == identity.second;
    });
  }

  void warn(size_t v, const std::string& text) {
    view_warnings_[v].push_back(views_[v].input_name + ": " + text);
  }

  static std::string identity_text(const Identity& identity) {
    return "communicator " + hex(identity.first) + " rank " + std::to_string(identity.second);
  }

  void attach(size_t v) {
    const KernelView& view = views_[v];
    std::set<Identity> ids = identities(view);
    std::set<int> matching;
    for (const Identity& id : ids)
      if (auto found = holders_.find(id); found != holders_.end()) matching.insert(found->second.begin(), found->second.end());
    std::vector<int> candidates(matching.begin(), matching.end());
    if (candidates.size() > 1 && view.pid) {
      std::vector<int> same_pid;
      for (int p : candidates)
        if (job_.processes[p].pid == view.pid) same_pid.push_back(p);
      if (!same_pid.empty()) candidates = same_pid;
    }
    if (candidates.empty()) {
      std::string what = ids.empty() ? std::string("names no communicator (no kernel matched to one, none listed)")
                                     : "no input holds " + identity_text(*ids.begin()) +
                                           (ids.size() > 1 ? " (nor " + std::to_string(ids.size() - 1) + " other)" : "");
      if (view.pid)
        for (const ProcessView& process : job_.processes)
          if (process.pid == view.pid) what += "; " + process.input_name + " has pid " + std::to_string(*view.pid) + " but not that communicator";
      warn(v, what + "; kernel view not joined");
      return;
    }
    if (candidates.size() > 1)
      warn(v, "matches " + std::to_string(candidates.size()) + " inputs (" + job_.processes[candidates[0]].input_name +
                  ", " + job_.processes[candidates[1]].input_name + "); joined to the first");
    int p = candidates.front();
    if (view_of_process_[p] >= 0) {
      warn(v, job_.processes[p].input_name + " already has kernel view " + views_[view_of_process_[p]].input_name +
                  "; this one is not joined");
      return;
    }
    view_of_process_[p] = static_cast<int>(v);
    joined_to_[v] = p;
    kernel_joined_[v].assign(view.kernels.size(), false);
    for (size_t k = 0; k < view.kernels.size(); ++k) {
      const KernelEntryView& kernel = view.kernels[k];
      std::string which = "kernel " + (kernel.index ? std::to_string(*kernel.index) : "?");
      if (!kernel.has_communicator)
        warn(v, which + ": communicator not identified (" +
                    (kernel.communicator_match.empty() ? std::string("no match") : kernel.communicator_match) +
                    "); listed, not joined");
      else if (!holds(job_.processes[p], {kernel.comm_hash, *kernel.rank}))
        warn(v, which + ": " + identity_text({kernel.comm_hash, *kernel.rank}) + " is not among " +
                    job_.processes[p].input_name + "'s communicators; listed, not joined");
      else
        kernel_joined_[v][k] = true;
    }
  }

  // Kernels of the process at `member` that run on its group's communicator.
  std::vector<const KernelEntryView*> kernels_of(const CommGroup& group, const Member& member) const {
    std::vector<const KernelEntryView*> out;
    int v = view_of_process_[member.process];
    if (v < 0) return out;
    const KernelView& view = views_[v];
    for (size_t k = 0; k < view.kernels.size(); ++k)
      if (kernel_joined_[v][k] && view.kernels[k].comm_hash == group.hash && *view.kernels[k].rank == member.rank)
        out.push_back(&view.kernels[k]);
    return out;
  }

  // What a culprit's GPU runs, from its kernel view; "" without one.
  std::string culprit_fact(const CommGroup& group, int rank) const {
    const Member* member = group.find(rank);
    if (member == nullptr || view_of_process_[member->process] < 0) return "";
    const KernelView& view = views_[view_of_process_[member->process]];
    std::string who = "kernel view, rank " + std::to_string(rank) + ": ";
    std::vector<const KernelEntryView*> kernels = kernels_of(group, *member);
    if (!kernels.empty()) {
      std::string text;
      for (const KernelEntryView* kernel : kernels) text += (text.empty() ? "" : "; ") + describe_kernel(*kernel);
      return who + text;
    }
    if (view.kernels.empty()) {
      std::string text = who + "no NCCL kernel resident on its GPU";
      if (!view.others.empty()) text += "; it runs " + describe_other_kernel(view.others.front());
      if (view.other_kernels > 1) text += " and " + std::to_string(view.other_kernels - 1) + " more non-NCCL kernels";
      if (!view.document_errors.empty()) text += "; the view has errors: " + view.document_errors.front();
      return text;
    }
    return who + "no kernel of this communicator resident (" + std::to_string(view.kernels.size()) +
           " NCCL kernel" + (view.kernels.size() == 1 ? "" : "s") + " of other communicators)";
  }

  static bool contains(const std::vector<int>& ranks, int rank) {
    return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
  }

  void add_kernel_line(size_t g, size_t f, const std::string& line) {
    size_t& lines = lines_[{g, f}];
    if (++lines <= kKernelLinesPerFinding) job_.findings[g][f].evidence.push_back(line);
  }

  json wait_entry(int rank, const WaitGroup& group, const KernelEntryView& kernel) const {
    return {{"rank", rank}, {"peer", group.peer}, {"kind", group.kind}, {"collective", kernel.collective},
            {"blocks", group.blocks}, {"of_blocks", kernel.blocks.size()}, {"channels", group.channels},
            {"steps", numbers(group.steps)}, {"wait", wait_predicate(group, kernel.blocks.size())},
            {"text", "rank " + std::to_string(rank) + " " + wait_predicate(group, kernel.blocks.size())}};
  }

  void join_group(size_t g) {
    const CommGroup& group = job_.comms[g];
    std::vector<Finding>& findings = job_.findings[g];
    const size_t host_findings = findings.size();
    // Kernel-wait findings, by (peer, collective).
    std::map<std::pair<int, std::string>, Finding> uncovered;
    for (const Member& member : group.members) {
      std::vector<const KernelEntryView*> kernels = kernels_of(group, member);
      if (kernels.empty()) continue;
      int rank = member.rank;
      for (const KernelEntryView* kernel : kernels) {
        std::string line = "kernel view, rank " + std::to_string(rank) + ": " + describe_kernel(*kernel);
        KernelWaits waits = group_waits(*kernel);
        std::vector<bool> covered(waits.definite.size(), false);
        for (size_t f = 0; f < host_findings; ++f) {
          Finding& finding = findings[f];
          if (!finding.explains_hang || finding.culprits.empty()) continue;
          // A culprit's kernel waiting on a rank of its own finding (a mismatched collective's
          // other side) is that finding's story: its culprit_fact, not a new edge (no false cycle).
          if (contains(finding.culprits, rank)) {
            for (size_t w = 0; w < waits.definite.size(); ++w)
              covered[w] = covered[w] || contains(finding.waiting, waits.definite[w].peer) ||
                           contains(finding.culprits, waits.definite[w].peer);
            continue;
          }
          if (!contains(finding.waiting, rank)) continue;
          add_kernel_line(g, f, line);
          for (size_t w = 0; w < waits.definite.size(); ++w) {
            const WaitGroup& wait = waits.definite[w];
            bool on_culprit = contains(finding.culprits, wait.peer);
            covered[w] = covered[w] || on_culprit || contains(finding.waiting, wait.peer);
            if (!on_culprit) continue;
            if (finding.kernel_waits.is_null()) finding.kernel_waits = json::array();
            finding.kernel_waits.push_back(wait_entry(rank, wait, *kernel));
          }
        }
        for (size_t w = 0; w < waits.definite.size(); ++w) {
          const WaitGroup& wait = waits.definite[w];
          // A peer outside the communicator is garbage, never a culprit.
          bool valid_peer = wait.peer != rank && (!group.nranks || wait.peer < *group.nranks);
          if (covered[w] || !valid_peer) continue;
          Finding& finding = uncovered[{wait.peer, kernel->collective}];
          if (finding.kind.empty()) start_kernel_wait(group, wait.peer, kernel->collective, &finding);
          if (!contains(finding.waiting, rank)) {
            finding.waiting.push_back(rank);
            if (finding.evidence.size() < kKernelLinesPerFinding) finding.evidence.push_back(line);
          }
          finding.kernel_waits.push_back(wait_entry(rank, wait, *kernel));
        }
      }
    }
    // The culprits' side, on the host findings that named them.
    for (size_t f = 0; f < host_findings; ++f) {
      Finding& finding = findings[f];
      if (!finding.explains_hang || finding.waiting.empty()) continue;
      for (int culprit : finding.culprits) {
        std::string fact = culprit_fact(group, culprit);
        if (!fact.empty()) add_kernel_line(g, f, fact);
      }
    }
    for (size_t f = 0; f < host_findings; ++f) {
      size_t lines = lines_.count({g, f}) ? lines_[{g, f}] : 0;
      if (lines > kKernelLinesPerFinding)
        findings[f].evidence.push_back("kernel views of " + std::to_string(lines - kKernelLinesPerFinding) +
                                       " more ranks (report: kernel_views)");
    }
    find_gpu_busy(g);
    fold_into_gpu_busy(g, &uncovered);
    if (uncovered.empty()) return;
    std::string host_kinds;
    for (size_t f = 0; f < host_findings; ++f)
      if (findings[f].kind != "no-hang-evident") host_kinds += (host_kinds.empty() ? "" : ", ") + findings[f].kind;
    for (auto& [key, finding] : uncovered) finish_kernel_wait(group, key.first, host_kinds, &finding);
    // A kernel blocked on a peer contradicts "no hang evident" on that communicator.
    findings.erase(std::remove_if(findings.begin(), findings.end(),
                                  [](const Finding& f) { return f.kind == "no-hang-evident"; }),
                   findings.end());
    for (auto& [key, finding] : uncovered) findings.push_back(std::move(finding));
  }

  // --- a GPU busy outside NCCL (issue 33 item 4) ---------------------------------------

  // The first non-NCCL kernel resident on the device of `member`'s communicator while no NCCL
  // kernel of that communicator is; null otherwise. A device the view does not give matches any.
  const OtherKernelView* busy_kernel(const CommGroup& group, const Member& member) const {
    int v = view_of_process_[member.process];
    if (v < 0 || views_[v].others.empty() || !kernels_of(group, member).empty()) return nullptr;
    Maybe<int> device;
    for (const KernelCommView& comm : views_[v].communicators)
      if (comm.comm_hash == group.hash && comm.rank == member.rank) device = comm.cuda_dev;
    for (const OtherKernelView& kernel : views_[v].others)
      if (!device || !kernel.device || *kernel.device == *device) return &kernel;
    return nullptr;
  }

  // Has this member's GPU entered the communicator's work: an NCCL kernel of it resident, or an
  // unfinished proxy send that transmitted data (the GPU posted it)? Proxy ops alone do not
  // tell: NCCL posts them at launch (seen in the real order-gpu-spin capture: rank 0's world op
  // in flight, nothing sent, its GPU still in dp), and a host thread waiting on the GPU may
  // wait on other work.
  bool entered(const CommGroup& group, const Member& member) const {
    if (!kernels_of(group, member).empty()) return true;
    for (const ProxyOpView& op : job_.comm_of(member).proxy_ops)
      for (const ProxySubView& sub : op.subs)
        if (sub.send.value_or(false) && !sub.finished() && sub.transmitted.value_or(0) > 0) return true;
    return false;
  }

  // The collective the waiting ranks are in: their proxy ops' or kernels' collective, else the
  // one type the busy rank launched; "" when neither tells.
  std::string entered_collective(const CommGroup& group, const std::vector<const Member*>& waiting,
                                 const CommView& busy) const {
    for (const Member* member : waiting) {
      for (const ProxyOpView& op : job_.comm_of(*member).proxy_ops)
        if (!op.collective.empty()) return op.collective;
      for (const KernelEntryView* kernel : kernels_of(group, *member))
        if (!kernel->collective.empty()) return kernel->collective;
    }
    std::string only;
    for (int c = 0; c < kNumCollectives; ++c)
      if (busy.seq_launched[c].value_or(0) > 0) {
        if (!only.empty()) return "";
        only = kCollectiveNames[c];
      }
    return only;
  }

  static Maybe<int64_t> launched_of(const CommView& comm, const std::string& collective) {
    for (int c = 0; c < kNumCollectives; ++c)
      if (collective == kCollectiveNames[c]) return comm.seq_launched[c];
    return std::nullopt;
  }

  // A rank whose GPU runs a non-NCCL kernel, no NCCL kernel of this communicator resident, that
  // launched the collective the others entered as often as they did: its GPU never started it.
  // Only where no host finding already blames someone on this communicator (a data-wait, "its
  // GPU has not reached it", blames nobody: this names why).
  void find_gpu_busy(size_t g) {
    const CommGroup& group = job_.comms[g];
    std::vector<Finding>& findings = job_.findings[g];
    for (const Finding& finding : findings)
      if (finding.explains_hang && finding_kind(finding.kind).may_blame) return;
    std::vector<Finding> made;
    for (const Member& member : group.members) {
      const OtherKernelView* kernel = busy_kernel(group, member);
      if (kernel == nullptr) continue;
      std::vector<const Member*> waiting;
      for (const Member& other : group.members)
        if (&other != &member && entered(group, other)) waiting.push_back(&other);
      const CommView& busy = job_.comm_of(member);
      std::string collective = entered_collective(group, waiting, busy);
      Maybe<int64_t> launched = launched_of(busy, collective);
      if (waiting.empty() || collective.empty() || !launched || *launched <= 0) continue;
      bool behind = std::any_of(waiting.begin(), waiting.end(), [&](const Member* other) {
        Maybe<int64_t> theirs = launched_of(job_.comm_of(*other), collective);
        return !theirs || *theirs != *launched;
      });
      if (behind) continue;  // counts that differ are missing-collective's, not this
      made.push_back(gpu_busy_finding(member, *kernel, waiting, collective, *launched));
    }
    if (made.empty()) return;
    // The busy GPU explains what these said: work in flight with nobody behind in host state.
    findings.erase(std::remove_if(findings.begin(), findings.end(), [](const Finding& f) {
                     return f.kind == "no-hang-evident" || f.kind == "in-flight-consistent";
                   }),
                   findings.end());
    for (Finding& finding : made) findings.push_back(std::move(finding));
  }

  // A kernel waiting on a rank whose GPU is busy outside NCCL is that gpu-busy finding's
  // evidence (and its edge's kernel reason), not a second finding blaming the same rank.
  void fold_into_gpu_busy(size_t g, std::map<std::pair<int, std::string>, Finding>* uncovered) {
    for (Finding& busy : job_.findings[g]) {
      if (busy.kind != "gpu-busy") continue;
      for (auto it = uncovered->begin(); it != uncovered->end();) {
        if (it->first.first != busy.culprits.front()) { ++it; continue; }
        if (busy.kernel_waits.is_null()) busy.kernel_waits = json::array();
        for (const json& wait : it->second.kernel_waits) busy.kernel_waits.push_back(wait);
        for (const std::string& line : it->second.evidence) busy.evidence.push_back(line);
        for (int rank : it->second.waiting) busy.waiting.push_back(rank);
        normalize_ranks(&busy.waiting);
        it = uncovered->erase(it);
      }
    }
  }

  Finding gpu_busy_finding(const Member& member, const OtherKernelView& kernel,
                           const std::vector<const Member*>& waiting, const std::string& collective,
                           int64_t launched) const {
    Finding finding{"gpu-busy", collective};
    finding.seq = launched;
    finding.culprits = {member.rank};
    for (const Member* other : waiting) finding.waiting.push_back(other->rank);
    normalize_ranks(&finding.waiting);
    finding.edge_kind = "collective";
    finding.explains_hang = true;
    finding.extra["kernel"] = kernel.name;
    std::string rank = "rank " + std::to_string(member.rank), op = collective + " #" + std::to_string(launched);
    std::string device = kernel.device ? "GPU " + std::to_string(*kernel.device) : "its GPU";
    finding.evidence.push_back("kernel view, " + rank + ": " + device + " runs " + describe_other_kernel(kernel) +
                               "; no NCCL kernel of this communicator resident");
    finding.evidence.push_back(rank + " launched " + collective + " " + std::to_string(launched) + " times, as " +
                               ranks_phrase(finding.waiting) + " did, who entered " + op +
                               "; its GPU never started it: it is queued behind that kernel (inferred: same device, "
                               "the kernel's stream is not shown by cuda-gdb)");
    finding.evidence.push_back(rank + "'s host thread: " + process_doing(job_, member.process));
    return finding;
  }

  void start_kernel_wait(const CommGroup& group, int peer, const std::string& collective, Finding* finding) const {
    finding->kind = "kernel-wait";
    finding->collective = collective;
    finding->culprits = {peer};
    finding->culprits_absent = group.find(peer) == nullptr;
    finding->edge_kind = "kernel";
    finding->explains_hang = true;
    finding->kernel_waits = json::array();
  }

  void finish_kernel_wait(const CommGroup& group, int peer, const std::string& host_kinds, Finding* finding) const {
    normalize_ranks(&finding->waiting);
    if (finding->waiting.size() > kKernelLinesPerFinding)
      finding->evidence.push_back("kernel views of " + std::to_string(finding->waiting.size() - kKernelLinesPerFinding) +
                                  " more ranks (report: kernel_views)");
    if (finding->culprits_absent) {
      finding->evidence.push_back("rank " + std::to_string(peer) + " has no input holding this communicator");
    } else {
      std::string fact = culprit_fact(group, peer);
      if (!fact.empty()) finding->evidence.push_back(fact);
      const Member* member = group.find(peer);
      finding->evidence.push_back("rank " + std::to_string(peer) + "'s host thread: " + process_doing(job_, member->process));
    }
    finding->evidence.push_back("no host finding explains this wait (host findings on this communicator: " +
                                (host_kinds.empty() ? std::string("none") : host_kinds) + ")");
  }

  json kernel_json(size_t v, size_t k) const {
    const KernelEntryView& kernel = views_[v].kernels[k];
    KernelWaits waits = group_waits(kernel);
    json definite = json::array(), unknown = json::array();
    for (const WaitGroup& group : waits.definite)
      definite.push_back({{"kind", group.kind}, {"peer", group.peer}, {"blocks", group.blocks},
                          {"channels", group.channels}, {"steps", numbers(group.steps)},
                          {"text", peer_wait_phrase(group.kind, group.peer) + steps_phrase(group.steps)}});
    for (const OtherGroup& group : waits.unknown)
      unknown.push_back({{"blocks", group.blocks}, {"channels", group.channels}, {"text", group.text}});
    auto maybe = [](const auto& value) { return value ? json(*value) : json(nullptr); };
    return {{"kernel", maybe(kernel.index)}, {"device", maybe(kernel.device)},
            {"comm_hash", kernel.has_communicator ? json(kernel.comm_hash_text) : json(nullptr)},
            {"rank", maybe(kernel.rank)}, {"nranks", maybe(kernel.nranks)},
            {"communicator_match", kernel.communicator_match},
            {"collective", kernel.collective}, {"op", kernel.op}, {"datatype", kernel.datatype},
            {"function", most_common(kernel.blocks, &KernelBlockView::function)},
            {"blocks", kernel.blocks.size()}, {"waits", definite}, {"unknown", unknown},
            {"not_waiting_blocks", waits.not_waiting.blocks},
            {"joined", kernel_joined_[v].empty() ? false : static_cast<bool>(kernel_joined_[v][k])},
            {"text", describe_kernel(kernel)}};
  }

  json report_section() const {
    json inputs = json::array(), warnings = json::array();
    for (size_t v = 0; v < views_.size(); ++v) {
      const KernelView& view = views_[v];
      json joined = nullptr;
      if (int p = joined_to_[v]; p >= 0) {
        const ProcessView& process = job_.processes[p];
        joined = {{"input", process.input_name},
                  {"world_rank", job_.world_rank[p] ? json(*job_.world_rank[p]) : json(nullptr)},
                  {"pid", process.pid ? json(*process.pid) : json(nullptr)},
                  // Matched by communicator; a pid differs across PID namespaces (containers).
                  {"pid_agrees", process.pid && view.pid ? json(*process.pid == *view.pid) : json(nullptr)}};
      }
      json kernels = json::array();
      for (size_t k = 0; k < view.kernels.size(); ++k) kernels.push_back(kernel_json(v, k));
      inputs.push_back({{"input", view.input_name}, {"pid", view.pid ? json(*view.pid) : json(nullptr)},
                        {"joined_to", joined}, {"kernels", kernels}, {"other_kernels", view.other_kernels},
                        {"errors", view.document_errors}, {"warnings", view_warnings_[v]}});
      for (const std::string& warning : view_warnings_[v]) warnings.push_back(warning);
    }
    return {{"source", std::string("cuda-gdb nccl-kernels --json (") + kKernelsSchema + "); peers are ranks of the kernel's communicator"},
            {"inputs", inputs}, {"warnings", warnings}};
  }

  json process_kernels() const {
    std::vector<json> out(job_.processes.size(), json::array());
    for (size_t p = 0; p < job_.processes.size(); ++p) {
      int v = view_of_process_[p];
      if (v < 0) continue;
      const KernelView& view = views_[v];
      if (view.kernels.empty())
        out[p].push_back({{"what", "kernel"}, {"comm_hash", nullptr}, {"collective", nullptr},
                          {"text", no_nccl_kernel_text(view) + " (kernel view)"}});
      for (const KernelEntryView& kernel : view.kernels)
        out[p].push_back({{"what", "kernel"},
                          {"comm_hash", kernel.has_communicator ? json(kernel.comm_hash_text) : json(nullptr)},
                          {"collective", kernel.collective}, {"text", describe_kernel(kernel)}});
    }
    return out;
  }

  // " Kernel view: rank 0: AllReduce kernel (RING SIMPLE): 24 of 24 blocks ...; rank 1: no NCCL kernel resident."
  std::string verdict_sentence() const {
    // Ranks whose kernels wait on a culprit first, then the culprits, then the rest (each by world
    // rank): at 4,096 ranks the few named are the ones that tell.
    std::vector<int> priority(job_.processes.size(), 2);
    for (size_t g = 0; g < job_.comms.size(); ++g)
      for (const Finding& finding : job_.findings[g]) {
        if (!finding.explains_hang) continue;
        for (int rank : finding.culprits)
          if (const Member* member = job_.comms[g].find(rank)) priority[member->process] = std::min(priority[member->process], 1);
        if (finding.kernel_waits.is_array())
          for (const json& wait : finding.kernel_waits)
            if (const Member* member = job_.comms[g].find(wait["rank"].get<int>())) priority[member->process] = 0;
      }
    std::vector<std::tuple<int, int64_t, std::string>> parts;
    for (size_t p = 0; p < job_.processes.size(); ++p) {
      int v = view_of_process_[p];
      if (v < 0) continue;
      const KernelView& view = views_[v];
      std::string text;
      for (size_t k = 0; k < view.kernels.size(); ++k) {
        const KernelEntryView& kernel = view.kernels[k];
        text += (text.empty() ? "" : "; ") + describe_kernel(kernel, false);
        bool world = job_.world_comm >= 0 && kernel.has_communicator &&
                     kernel.comm_hash == job_.comms[job_.world_comm].hash;
        if (kernel.has_communicator && !world) text += " on communicator " + kernel.comm_hash_text;
      }
      if (view.kernels.empty()) text = no_nccl_kernel_text(view);
      int64_t order = job_.world_rank[p] ? *job_.world_rank[p] : INT32_MAX + static_cast<int64_t>(p);
      parts.emplace_back(priority[p], order, job_.process_label(static_cast<int>(p)) + ": " + text);
    }
    if (parts.empty()) return "";
    std::sort(parts.begin(), parts.end());
    std::string sentence = " Kernel view: ";
    for (size_t i = 0; i < parts.size() && i < kRanksInVerdict; ++i) sentence += (i ? "; " : "") + std::get<2>(parts[i]);
    if (parts.size() > kRanksInVerdict)
      sentence += "; and " + std::to_string(parts.size() - kRanksInVerdict) + " more ranks (kernel_views)";
    return sentence + ".";
  }

  Job& job_;
  std::vector<KernelView> views_;
  std::vector<int> view_of_process_;            // process -> view, -1 when none
  std::vector<int> joined_to_;                  // view -> process, -1 when not joined
  std::vector<std::vector<std::string>> view_warnings_;
  std::vector<std::vector<bool>> kernel_joined_;  // view, kernel -> joined to its process's comm
  std::map<std::pair<size_t, size_t>, size_t> lines_;  // (group, finding) -> kernel lines
  std::map<Identity, std::vector<int>> holders_;
};

}  // namespace

void join_kernel_views(Job* job, std::vector<KernelView> views) { KernelJoiner(job, std::move(views)).run(); }

}  // namespace nsc::triage
