// The two entries of the one snapshot reader (triage/sax_summary.cc), straight from the text
// and over a parsed document replayed as events, must give the same ProcessView. summary_json writes every field of it, so two summaries are equal
// exactly when their summary_json are; the snapshot_reader fuzz target compares them
// on every input without duplicate keys. A field added to ProcessView (or to a view
// inside it) goes here too.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "triage/process_view.h"
#include "util/json_access.h"

namespace nsc::fuzz {

inline nlohmann::json channel_json(const triage::ChannelView& channel) {
  return {channel.id, json_or_null(channel.ring_prev), json_or_null(channel.ring_next), json_or_null(channel.tree_up),
          std::vector<int>(channel.tree_down.begin(), channel.tree_down.end())};
}

inline nlohmann::json shared_text_json(const triage::MaybeSharedText& text) {
  return text ? nlohmann::json(*text) : nlohmann::json(nullptr);
}

inline nlohmann::json proxy_op_json(const triage::ProxyOpView& op) {
  nlohmann::json subs = nlohmann::json::array();
  for (const triage::ProxySubView& sub : op.subs)
    subs.push_back({json_or_null(sub.channel), json_or_null(sub.peer), json_or_null(sub.nsteps), json_or_null(sub.posted),
                    json_or_null(sub.received), json_or_null(sub.transmitted), json_or_null(sub.done), json_or_null(sub.send)});
  return {json_or_null(op.op_count), op.collective, op.pattern, static_cast<int>(op.direction), subs};
}

inline nlohmann::json comm_json(const triage::CommView& comm) {
  nlohmann::json seq = nlohmann::json::array(), channels = nlohmann::json::array(),
                 proxy_ops = nlohmann::json::array(), planned_p2p = nlohmann::json::array();
  for (const auto& launched : comm.seq_launched) seq.push_back(json_or_null(launched));
  for (const triage::ChannelView& channel : comm.channels) channels.push_back(channel_json(channel));
  for (const triage::ProxyOpView& op : comm.proxy_ops) proxy_ops.push_back(proxy_op_json(op));
  for (const triage::PlannedP2pView& p2p : comm.planned_p2p)
    planned_p2p.push_back({static_cast<int>(p2p.direction), p2p.peer});
  const triage::HealthView& health = comm.health;
  return {{"comm_hash", comm.comm_hash}, {"comm_hash_text", comm.comm_hash_text()}, {"address", comm.address},
          {"rank", json_or_null(comm.rank)}, {"nranks", json_or_null(comm.nranks)}, {"seq_launched", seq},
          {"coll_op_count", json_or_null(comm.coll_op_count)}, {"p2p_total", json_or_null(comm.p2p_total)},
          {"coll_op_count_shared_resources", comm.coll_op_count_shared_resources},
          {"shared_resources", comm.shared_resources},
          {"health", {shared_text_json(health.async_result), shared_text_json(health.init_state), json_or_null(health.abort_flag),
                      json_or_null(health.destroy_flag), json_or_null(health.finalize_called), json_or_null(health.revoked)}},
          {"channels", channels}, {"proxy_ops_known", comm.proxy_ops_known}, {"proxy_ops", proxy_ops},
          {"planned_known", comm.planned_known}, {"planned_colls", comm.planned_colls}, {"planned_p2p", planned_p2p},
          {"n_tasks_coll", json_or_null(comm.n_tasks_coll)}, {"n_tasks_p2p", json_or_null(comm.n_tasks_p2p)},
          {"unlaunched_plans", json_or_null(comm.unlaunched_plans)}, {"in_group", json_or_null(comm.in_group)},
          {"unavailable", comm.unavailable}, {"warnings", comm.warnings}, {"position", comm.position},
          {"from_recorder", comm.from_recorder}};
}

inline nlohmann::json thread_json(const triage::ThreadView& thread) {
  nlohmann::json frames = nlohmann::json::array();
  for (const triage::FrameView& frame : thread.frames)
    frames.push_back({frame.label(), frame.user_code, frame.python, frame.python_library,
                      static_cast<int>(frame.signal_role)});
  return {json_or_null(thread.tid), thread.name, thread.blocked_in, frames};
}

inline nlohmann::json summary_json(const triage::ProcessView& process) {
  nlohmann::json comms = nlohmann::json::array(), threads = nlohmann::json::array();
  for (const triage::CommView& comm : process.comms) comms.push_back(comm_json(comm));
  for (const triage::ThreadView& thread : process.threads) threads.push_back(thread_json(thread));
  return {{"input_name", process.input_name}, {"kind", process.kind}, {"pid", json_or_null(process.pid)},
          {"hostname", process.hostname}, {"executable", process.executable}, {"nccl_version", process.nccl_version},
          {"build_id_mismatch", json_or_null(process.build_id_mismatch)}, {"nccl_found", process.nccl_found},
          {"launcher_rank", json_or_null(process.launcher_rank)},
          {"launcher_world_size", json_or_null(process.launcher_world_size)},
          {"launcher_rank_from", process.launcher_rank_from}, {"comms", comms}, {"threads", threads},
          {"principal_thread", process.principal_thread}, {"document_errors", process.document_errors},
          {"rejected_comms", process.rejected_comms}, {"stack_notes", process.stack_notes},
          {"recorder", process.recorder}, {"torch", process.torch}};
}

// Does the text hold an object with a key twice? There the summarizers may differ by
// design: the SAX one reads every occurrence, a parsed document keeps only the last, and
// only text can hold duplicates (a document built in memory cannot; ncclscope never writes one).
inline bool has_duplicate_keys(const std::string& text) {
  struct KeyTracker : nlohmann::json::json_sax_t {
    std::vector<std::set<std::string>> open_objects;
    bool duplicate = false;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override {
      open_objects.emplace_back();
      return true;
    }
    bool key(string_t& key) override {
      duplicate |= !open_objects.back().insert(key).second;
      return !duplicate;  // the first duplicate answers: stop there
    }
    bool end_object() override {
      open_objects.pop_back();
      return true;
    }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception&) override { return false; }
  } tracker;
  nlohmann::json::sax_parse(text, &tracker);
  return tracker.duplicate;
}

}  // namespace nsc::fuzz
