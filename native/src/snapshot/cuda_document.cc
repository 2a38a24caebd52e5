#include "snapshot/cuda_document.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda/recorder_decoder.h"
#include "target/core_file.h"
#include "target/live_process.h"
#include "util/schemas.h"

namespace nsc {
namespace {

using nlohmann::json;

// Marks recorder streams that NCCL holds: "nccl_roles": ["device_stream of comm 0x.."].
void label_nccl_streams(json& document) {
  std::map<std::string, std::vector<std::string>> roles;
  for (const auto& comm : document["nccl_communicators"]) {
    const json& cuda = comm["cuda"];
    if (!cuda.is_object()) continue;
    std::string of = " of comm " + comm["comm_hash"].dump();
    for (const char* key : {"device_stream", "host_stream"})
      if (cuda.contains(key) && cuda[key].is_object() && cuda[key]["stream"].is_string())
        roles[cuda[key]["stream"].get<std::string>()].push_back(key + of);
    if (cuda.contains("user_streams") && cuda["user_streams"].is_array())
      for (const auto& stream : cuda["user_streams"])
        if (stream.is_string()) roles[stream.get<std::string>()].push_back("user_stream" + of);
  }
  json& recorder = document["recorder"];
  if (!recorder.value("found", false)) return;
  for (auto& stream : recorder["streams"]) {
    auto role = roles.find(stream["stream"].get<std::string>());
    if (role != roles.end()) stream["nccl_roles"] = role->second;
  }
}

json nccl_communicators(const json& state_document) {
  json comms = json::array();
  for (const auto& comm : state_document.value("communicators", json::array()))
    comms.push_back({{"address", comm.value("address", "")},
                     {"comm_hash", comm.value("comm_hash", json(nullptr))},
                     {"rank", comm.value("rank", json(nullptr))},
                     {"cuda", comm.value("cuda", json(nullptr))}});
  return comms;
}

// Host threads whose stacks sit in a CUDA synchronize (known without the recorder, stream unknown).
json threads_blocked_in_cuda(const json& state_document) {
  json blocked = json::array();
  for (const auto& thread : state_document.value("threads", json::array()))
    if (thread.value("blocked_in", json()).is_string() &&
        thread["blocked_in"].get<std::string>().rfind("cuda", 0) == 0)
      blocked.push_back({{"tid", thread.value("tid", 0)}, {"name", thread.value("name", "")},
                         {"blocked_in", thread["blocked_in"]}});
  return blocked;
}

// With NCCL: the state document decodes the recorder too; its errors hold the recorder's.
void add_nccl(const CudaRequest& request, Target& target, json* document, json* errors) {
  StateRequest state = request.target;
  state.target = &target;
  state.stacks = request.target.pid == 0;  // cores unwind without stopping anything
  state.progress = false;
  state.recorder_records = request.include_records;
  json state_document = build_state_document(state);
  if (state_document["recorder"].is_null()) {  // no libnccl: the state document read no recorder
    RecorderDecodeOptions options;
    options.include_records = request.include_records;
    (*document)["recorder"] = decode_recorder(target, errors, options);
  } else {
    (*document)["recorder"] = std::move(state_document["recorder"]);
  }
  (*document)["nccl_communicators"] = nccl_communicators(state_document);
  label_nccl_streams(*document);
  (*document)["threads_blocked_in_cuda"] = threads_blocked_in_cuda(state_document);
  for (const auto& error : state_document.value("errors", json::array())) errors->push_back(error);
}

}  // namespace

json build_cuda_document(const CudaRequest& request) {
  const StateRequest& where = request.target;
  std::unique_ptr<Target> target = where.pid != 0 ? open_live(where.pid, false)
                                                  : open_core(where.core_path, where.executable);
  json document = {{"schema", kCudaSchema},
                   {"target", {{"description", target->describe()}, {"pid", target->pid()}}}};
  json errors = json::array();
  if (request.with_nccl) {
    add_nccl(request, *target, &document, &errors);
  } else {
    RecorderDecodeOptions options;
    options.include_records = request.include_records;
    document["recorder"] = decode_recorder(*target, &errors, options);
  }
  document["errors"] = errors;
  return document;
}

int cuda_exit_code(const json& document) {
  bool found = document["recorder"].value("found", false);
  return found && document["errors"].empty() ? 0 : 1;
}

}  // namespace nsc
