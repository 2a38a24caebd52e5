// Synthetic `ncclscope.state/1` documents for the triage tests: one per rank,
// shaped like `ncclscope state --json` output, for every finding kind.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "triage/triage.h"
#include "util/json_raw.h"
#include "util/json_write.h"
#include "util/strings.h"

namespace synthetic {

using nlohmann::json;

constexpr uint64_t kWorldHash = 0x6db0a96d9cb7fc37ull;
constexpr uint64_t kSubHash = 0x1234abcd5678ef01ull;

// Counts in seq_launched order: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce.
using Counts = std::array<int64_t, 5>;

inline json frame(const std::string& function, const std::string& module) {
  return {{"pc", "0x401000"}, {"function", function}, {"module", module}, {"offset", 16}};
}

// Innermost first, as unwinders list them. `leaf` frames sit above main().
inline json thread(int64_t tid, const std::string& blocked_in, std::vector<json> leaf, int depth = 0) {
  json frames = json::array();
  for (json& f : leaf) frames.push_back(std::move(f));
  for (int d = 0; d < depth; ++d) frames.push_back(frame("train_step_" + std::to_string(d), "/app/train"));
  frames.push_back(frame("main", "/app/train"));
  frames.push_back(frame("__libc_start_main", "/lib/x86_64-linux-gnu/libc.so.6"));
  frames.push_back(frame("_start", "/app/train"));
  return {{"tid", tid}, {"name", "train"}, {"state", "S"}, {"frames", frames}, {"blocked_in", blocked_in}};
}

inline json waiting_thread(int64_t tid, int depth = 0) {
  return thread(tid, "cudaStreamSynchronize",
                {frame("ioctl", "/lib/x86_64-linux-gnu/libc.so.6"), frame("cuStreamSynchronize", "/usr/lib/libcuda.so.1"),
                 frame("cudaStreamSynchronize", "/usr/local/cuda/lib64/libcudart.so.13")},
                depth);
}

inline json pausing_thread(int64_t tid, int depth = 0) {
  return thread(tid, "user-code", {frame("pause", "/lib/x86_64-linux-gnu/libc.so.6")}, depth);
}

inline json group_end_thread(int64_t tid) {
  return thread(tid, "nccl-group-end",
                {frame("poll", "/lib/x86_64-linux-gnu/libc.so.6"), frame("ncclGroupEndInternal", "/usr/lib/libnccl.so.2"),
                 frame("ncclGroupEnd", "/usr/lib/libnccl.so.2")});
}

inline json proxy_thread(int64_t tid) {
  return {{"tid", tid}, {"name", "ncclProxy"}, {"state", "S"}, {"blocked_in", "nccl-proxy-progress"},
          {"frames", {frame("sched_yield", "/lib/x86_64-linux-gnu/libc.so.6"),
                      frame("ncclProxyProgress", "/usr/lib/libnccl.so.2"),
                      frame("start_thread", "/lib/x86_64-linux-gnu/libc.so.6")}}};
}

inline json comm(uint64_t hash, int rank, int nranks, const Counts& counts, int nchannels = 2) {
  json seq = {{"Broadcast", counts[0]}, {"Reduce", counts[1]}, {"AllGather", counts[2]},
              {"ReduceScatter", counts[3]}, {"AllReduce", counts[4]}};
  int64_t total = counts[0] + counts[1] + counts[2] + counts[3] + counts[4];
  json channels = json::array();
  for (int c = 0; c < nchannels; ++c)
    channels.push_back({{"id", c},
                        {"ring", {{"prev", (rank + nranks - 1) % nranks}, {"next", (rank + 1) % nranks},
                                  {"index", rank}, {"user_ranks", json::array()}}},
                        {"tree", {{"up", rank == 0 ? -1 : (rank - 1) / 2},
                                  {"down", {2 * rank + 1 < nranks ? 2 * rank + 1 : -1,
                                            2 * rank + 2 < nranks ? 2 * rank + 2 : -1, -1}}}}});
  return {{"address", "0x7f0000001000"}, {"comm_hash", nsc::hex(hash)}, {"rank", rank}, {"nranks", nranks},
          {"cuda_dev", rank % 8}, {"nchannels", nchannels}, {"seq_launched", seq},
          {"coll_op_count", total}, {"op_count", 0},
          {"p2p_op_count", {{"total", 0}, {"per_channel", json::array()}}},
          {"health", {{"async_result", "ncclSuccess"}, {"abort_flag", false}, {"destroy_flag", false},
                      {"init_state", "ncclSuccess"}, {"finalize_called", false}, {"revoked", false}}},
          {"channels", channels}, {"proxy_ops", json::array()},
          {"planned", {{"colls", json::array()}, {"p2p", json::array()}, {"n_tasks_coll", 0},
                       {"n_tasks_p2p", 0}, {"unlaunched_plans", 0}, {"in_group", false}}},
          {"unavailable", json::object()}, {"warnings", json::array()}};
}

inline json proxy_op(const std::string& collective, const std::string& pattern, int peer, int channel = 0) {
  return {{"address", "0x7f00000f0000"}, {"op_count", 6}, {"collective", collective}, {"pattern", pattern},
          {"protocol", "Simple"}, {"nsubs", 1}, {"done", 0},
          {"subs", {{{"channel", channel}, {"peer", peer}, {"nsteps", 8}, {"posted", 4}, {"received", 0},
                     {"transmitted", 4}, {"done", 2}}}}};
}

inline json document(int pid, json comms, json threads) {
  return {{"schema", "ncclscope.state/1"},
          {"tool", {{"name", "ncclscope"}, {"version", "0.1.0"}}},
          {"target", {{"kind", "core"}, {"path", "/cores/core." + std::to_string(pid)}, {"pid", pid},
                      {"executable", "/app/train"}}},
          {"host", {{"hostname", "node0"}}},
          {"nccl", {{"version", "2.28.9"}, {"library", "/usr/lib/libnccl.so.2"}, {"build_id", "9fcf"},
                    {"build_id_mismatch", false}}},
          {"communicators", std::move(comms)},
          {"threads", std::move(threads)},
          {"errors", json::array()}};
}

// One rank of a world communicator: pid 1000+rank, main thread + proxy thread.
inline json rank_document(int rank, int nranks, const Counts& counts, json main_thread) {
  int pid = 1000 + rank;
  main_thread["tid"] = pid;
  return document(pid, json::array({comm(kWorldHash, rank, nranks, counts)}),
                  json::array({main_thread, proxy_thread(pid + 1)}));
}

// The first finding of `kind` on any communicator of a triage report, or null.
inline const json* finding_of(const json& report, const std::string& kind) {
  for (const json& comm : report["communicators"])
    for (const json& finding : comm["findings"])
      if (finding["kind"] == kind) return &finding;
  return nullptr;
}

inline std::vector<nsc::TriageInput> as_inputs(const std::vector<json>& documents) {
  std::vector<nsc::TriageInput> inputs;
  for (size_t i = 0; i < documents.size(); ++i)
    inputs.push_back({"rank-" + std::to_string(i) + ".json", "snapshot", documents[i], ""});
  return inputs;
}

// The triage report of `documents`, its raw values (util/json_raw.h) read back, after checking
// that the writer writes the report as dump(2) writes the read-back one: a raw value built with
// its keys out of nlohmann's order, or not JSON, would differ (or throw).
inline json triage_read_back(const std::vector<json>& documents) {
  json report = nsc::triage_documents(as_inputs(documents), nsc::TriageOptions{});
  json read = nsc::with_raw_json_values(report);
  std::string written;
  nsc::append_pretty_json(report, &written);
  if (written != read.dump(2, ' ', false, json::error_handler_t::replace))
    throw std::logic_error("the report's raw values are not written as their values");
  return read;
}

// Every rank but `culprit` launched AllGather #1; the culprit sits in pause().
inline std::vector<json> missing_collective(int nranks, int culprit) {
  std::vector<json> documents;
  for (int rank = 0; rank < nranks; ++rank) {
    bool behind = rank == culprit;
    json doc = rank_document(rank, nranks, {0, 0, behind ? 0 : 1, 0, 3}, behind ? pausing_thread(0) : waiting_thread(0));
    if (!behind)
      doc["communicators"][0]["proxy_ops"].push_back(proxy_op("AllGather", "ncclPatternRing", -1));
    documents.push_back(doc);
  }
  return documents;
}

inline std::vector<json> no_hang(int nranks) {
  std::vector<json> documents;
  for (int rank = 0; rank < nranks; ++rank)
    documents.push_back(rank_document(rank, nranks, {0, 0, 0, 0, 7},
                                      thread(0, "sleep", {frame("clock_nanosleep", "/lib/x86_64-linux-gnu/libc.so.6")})));
  return documents;
}

}  // namespace synthetic
