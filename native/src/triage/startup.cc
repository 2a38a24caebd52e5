// Start-up hangs: no input holds a communicator yet. Ranks come from the launcher's
// environment (RANK, SLURM_PROCID, ...); the waiting ones sit in the rendezvous (the
// framework's store, NCCL's bootstrap), the culprits are elsewhere or have no input.
#include <algorithm>
#include <set>

#include "triage/analysis.h"
#include "triage/rank_set.h"

namespace nsc::triage {
namespace {

bool contains_any(const std::string& text, std::initializer_list<const char*> needles) {
  for (const char* needle : needles)
    if (text.find(needle) != std::string::npos) return true;
  return false;
}

// Where a rank waits for the others before any communicator exists. `guessed` is set when
// no function name says so: unsymbolized libtorch frames, or a process that loaded libnccl
// (it imported the framework) and sits in a socket, poll or sleep wait.
bool in_rendezvous(const ProcessView& process, const ThreadView& thread, bool* guessed) {
  *guessed = false;
  if (thread.blocked_in == "ncclCommInitRank" || thread.blocked_in == "nccl-bootstrap") return true;
  bool torch_frame = false;
  for (const FrameView& frame : thread.frames) {
    if (contains_any(frame.label(), {"TCPStore", "rendezvous", "init_process_group", "c10d::Store",
                                   "store_based_barrier", "ncclCommInitRank", "bootstrap"}))
      return true;
    torch_frame = torch_frame || contains_any(frame.label(), {"libtorch", "libc10"});
  }
  bool waiting = thread.blocked_in == "poll/epoll" || thread.blocked_in == "sleep" ||
                 thread.blocked_in == "unknown" || thread.blocked_in.empty();
  *guessed = waiting && (torch_frame || process.nccl_found);
  return *guessed;
}

// A rank that recorded PyTorch collectives got past start-up (a dump has no communicator).
bool has_torch_records(const ProcessView& process) {
  if (process.fr_records && !process.fr_records->records.empty()) return true;
  const nlohmann::json* entries = process.torch.is_object() ? &process.torch["entries"] : nullptr;
  return entries != nullptr && entries->is_array() && !entries->empty();
}

}  // namespace

void analyze_startup(Job* job) {
  if (!job->comms.empty() || job->processes.empty()) return;
  if (std::any_of(job->processes.begin(), job->processes.end(), has_torch_records)) return;
  Finding finding{"startup-hang"};
  finding.edge_kind = "rendezvous";
  std::set<int> present, nccl_loaded;
  std::optional<int> world_size;
  std::vector<int> guessed, unreadable;
  for (size_t p = 0; p < job->processes.size(); ++p) {
    const ProcessView& process = job->processes[p];
    if (!job->world_rank[p]) continue;  // no launcher rank: cannot be placed
    int rank = *job->world_rank[p];
    const ThreadView* thread = process.principal();
    // Unreadable, or no host thread: where it is is unknown, so it counts as no input.
    if (!unreadable_reason(process).empty() || !host_thread_known(process)) {
      unreadable.push_back(rank);
      continue;
    }
    present.insert(rank);
    if (process.nccl_found) nccl_loaded.insert(rank);
    if (process.launcher_world_size) world_size = *process.launcher_world_size;
    bool guess = false;
    if (in_rendezvous(process, *thread, &guess)) {
      finding.waiting.push_back(rank);
      if (guess) guessed.push_back(rank);
    } else {
      finding.culprits.push_back(rank);
    }
  }
  std::vector<int> missing;
  if (world_size && *world_size > 0 && *world_size <= (1 << 20))
    for (int rank = 0; rank < *world_size; ++rank)
      if (!present.count(rank)) missing.push_back(rank);
  for (int rank : unreadable)
    if (std::find(missing.begin(), missing.end(), rank) == missing.end()) missing.push_back(rank);
  normalize_ranks(&missing);
  normalize_ranks(&finding.waiting);
  if (!guessed.empty()) finding.extra["guessed_ranks"] = guessed;
  normalize_ranks(&finding.culprits);
  finding.evidence.push_back("no input holds an NCCL communicator: the job has not finished starting");
  if (!finding.waiting.empty())
    finding.evidence.push_back(ranks_phrase(finding.waiting) + " " + verb_for(finding.waiting, "waits", "wait") +
                               " in the rendezvous (framework store or NCCL bootstrap)" +
                               (guessed.empty() ? "" : "; for " + ranks_phrase(guessed) +
                                                            " a guess: NCCL or libtorch loaded, no communicator, blocked in a poll/sleep wait "
                                                            "(no frame names the rendezvous)"));
  if (!finding.culprits.empty())
    finding.evidence.push_back(ranks_phrase(finding.culprits) + " never arrived: " +
                               verb_for(finding.culprits, "it is", "they are") + " elsewhere (see the stack classes)" +
                               (std::any_of(finding.culprits.begin(), finding.culprits.end(),
                                            [&](int rank) { return !nccl_loaded.count(rank); })
                                    ? "; no libnccl is even loaded there" : ""));
  if (!missing.empty()) {
    finding.evidence.push_back("WORLD_SIZE is " + std::to_string(*world_size) + "; " + ranks_phrase(missing) + " " +
                               verb_for(missing, "has", "have") + " no input: " +
                               verb_for(missing, "it", "they") + " may never have started");
    finding.extra["missing_ranks"] = missing;
  }
  size_t unplaced = 0;
  for (size_t p = 0; p < job->processes.size(); ++p) unplaced += job->world_rank[p] ? 0 : 1;
  if (unplaced > 0)
    finding.evidence.push_back(std::to_string(unplaced) + " input(s) name no launcher rank (RANK, SLURM_PROCID, ...) "
                               "and are left out");
  if (!unreadable.empty())
    finding.evidence.push_back("the inputs of " + ranks_phrase(unreadable) + " could not be read: no input, not absent from the rendezvous");
  // Ranks without input may be elsewhere or waiting too: only ranks present seen elsewhere explain it.
  finding.explains_hang = !finding.waiting.empty() && !finding.culprits.empty();
  job->startup.push_back(std::move(finding));
}

}  // namespace nsc::triage
