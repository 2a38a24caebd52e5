#include "cuda/recorder_analysis.h"

#include <map>
#include <string>
#include <tuple>

namespace nsc {
namespace {

using CollectiveKey = std::tuple<std::string, std::string, uint64_t>;  // comm hash, function, seq

struct RankOp {
  int64_t rank;
  nlohmann::json count, datatype, root;
};

}  // namespace

nlohmann::json compare_recorded_collectives(const std::vector<nlohmann::json>& recorders) {
  std::map<CollectiveKey, std::vector<RankOp>> by_collective;
  std::map<std::pair<std::string, std::string>, nlohmann::json> last_seq;  // (hash, func) -> ranks
  for (const nlohmann::json& recorder : recorders) {
    if (!recorder.value("found", false) || !recorder.contains("comms")) continue;
    for (const auto& comm : recorder["comms"]) {
      std::string hash = comm.value("comm_hash", "");
      int64_t rank = comm.value("rank", -1);
      const nlohmann::json last = comm.value("last_seq", nlohmann::json::object());
      for (const auto& [func, seq] : last.items()) {
        nlohmann::json& ranks = last_seq[{hash, func}];
        if (!ranks.is_array()) ranks = nlohmann::json::array();
        ranks.push_back({{"rank", rank}, {"seq", seq}});
      }
      for (const auto& op : comm.value("ops", nlohmann::json::array())) {
        if (op.value("record", "") != "nccl_coll" || !op.contains("seq")) continue;
        by_collective[{hash, op.value("collective", ""), op["seq"].get<uint64_t>()}].push_back(
            {rank, op["count"], op["datatype"], op.value("root", nlohmann::json(nullptr))});
      }
    }
  }
  nlohmann::json mismatches = nlohmann::json::array();
  uint64_t compared = 0;
  for (const auto& [key, ops] : by_collective) {
    if (ops.size() < 2) continue;
    ++compared;
    const auto& [hash, func, seq] = key;
    // Root matters only for rooted collectives.
    bool rooted = func == "Broadcast" || func == "Reduce" || func == "Gather" || func == "Scatter";
    for (const char* field : {"count", "datatype", "root"}) {
      if (std::string(field) == "root" && !rooted) continue;
      auto value_of = [&](const RankOp& op) -> const nlohmann::json& {
        return field[0] == 'c' ? op.count : field[0] == 'd' ? op.datatype : op.root;
      };
      bool differs = false;
      for (const RankOp& op : ops) differs |= value_of(op) != value_of(ops.front());
      if (!differs) continue;
      nlohmann::json values = nlohmann::json::array();
      for (const RankOp& op : ops) values.push_back({{"rank", op.rank}, {"value", value_of(op)}});
      mismatches.push_back({{"comm_hash", hash}, {"collective", func}, {"seq", seq},
                            {"field", field}, {"values", values}});
    }
  }
  nlohmann::json seqs = nlohmann::json::array();
  for (const auto& [key, ranks] : last_seq)
    seqs.push_back({{"comm_hash", key.first}, {"collective", key.second}, {"ranks", ranks}});
  return {{"mismatches", mismatches}, {"last_seq", seqs}, {"compared", compared}};
}

namespace {

// (comm hash, collective) -> (rank, seq_launched) of every state holding that communicator.
using LaunchIndex = std::map<std::pair<std::string, std::string>, std::vector<std::pair<int64_t, uint64_t>>>;

LaunchIndex index_launches(const std::vector<nlohmann::json>& states) {
  LaunchIndex index;
  for (const nlohmann::json& state : states)
    for (const auto& comm : state.value("communicators", nlohmann::json::array())) {
      const nlohmann::json& hash = comm.value("comm_hash", nlohmann::json());
      const nlohmann::json& rank = comm.value("rank", nlohmann::json());
      const nlohmann::json& launches = comm.value("seq_launched", nlohmann::json::object());
      if (!hash.is_string() || !rank.is_number_integer() || !launches.is_object()) continue;
      for (const auto& [collective, launched] : launches.items())
        if (launched.is_number_integer() && launched.get<int64_t>() >= 0)
          index[{hash.get<std::string>(), collective}].emplace_back(rank.get<int64_t>(), launched.get<uint64_t>());
    }
  return index;
}

// Annotates one NCCL op (a chain step's after_nccl_op or nccl_op) with who launched it.
void annotate_op(nlohmann::json& step, const LaunchIndex& index, bool list_launched) {
  const nlohmann::json& op = step.contains("after_nccl_op") && step["after_nccl_op"].is_object()
                                 ? step["after_nccl_op"] : step.value("nccl_op", nlohmann::json());
  if (!op.is_object() || !op.contains("seq") || !op["seq"].is_number_integer()) return;
  if (!op["seq"].is_number_unsigned() && op["seq"].get<int64_t>() < 0) return;
  uint64_t seq = op["seq"].get<uint64_t>();
  nlohmann::json waiting = nlohmann::json::array(), launched = nlohmann::json::array();
  uint64_t launched_count = 0;
  auto found = index.find({op.value("comm_hash", ""), op.value("collective", "")});
  if (found != index.end())
    for (const auto& [rank, count] : found->second) {
      if (count <= seq) waiting.push_back(rank);
      else if (++launched_count && list_launched) launched.push_back(rank);
    }
  step["waits_for_ranks"] = waiting;
  if (list_launched) step["launched_by_ranks"] = launched;
  else step["launched_by_count"] = launched_count;
}

}  // namespace

nlohmann::json annotate_chains_with_ranks(const nlohmann::json& chains,
                                          const std::vector<nlohmann::json>& states, bool list_launched) {
  // Indexed once: a 4,096-rank job has a chain on nearly every rank.
  LaunchIndex index = index_launches(states);
  nlohmann::json annotated = chains;
  for (auto& chain : annotated)
    for (auto& step : chain["steps"]) annotate_op(step, index, list_launched);
  return annotated;
}

nlohmann::json match_ipc_handles(const std::vector<nlohmann::json>& recorders) {
  std::map<std::string, nlohmann::json> exporters;  // fingerprint -> export entry
  for (const nlohmann::json& recorder : recorders) {
    if (!recorder.value("found", false)) continue;
    for (const auto& exported : recorder["ipc"].value("exported", nlohmann::json::array()))
      exporters[exported.value("handle_fingerprint", "")] = exported;
  }
  nlohmann::json imports = nlohmann::json::array();
  for (const nlohmann::json& recorder : recorders) {
    if (!recorder.value("found", false)) continue;
    for (const auto& imported : recorder["ipc"].value("imported", nlohmann::json::array())) {
      nlohmann::json entry = {{"importer_pid", recorder.value("pid", 0)},
                              {"address", imported.value("address", "")},
                              {"kind", imported.value("kind", "")},
                              {"handle_fingerprint", imported.value("handle_fingerprint", "")},
                              {"closed", imported.value("closed", nlohmann::json(nullptr))},
                              {"owner_pid", nullptr}, {"owner_address", nullptr}};
      auto owner = exporters.find(entry["handle_fingerprint"].get<std::string>());
      if (owner != exporters.end()) {
        entry["owner_pid"] = owner->second.value("owner_pid", nlohmann::json(nullptr));
        entry["owner_address"] = owner->second.value("address", nlohmann::json(nullptr));
      }
      imports.push_back(entry);
    }
  }
  return {{"imports", imports}};
}

}  // namespace nsc
