#include "torch/fr_records.h"

#include <cctype>
#include <cstdlib>

namespace nsc::torch {
namespace {

using nlohmann::json;

std::optional<int64_t> int_of(const json& object, const char* key) {
  auto found = object.find(key);
  if (found == object.end() || !found->is_number_integer()) return std::nullopt;
  return found->get<int64_t>();
}

std::string text_of(const json& object, const char* key) {
  auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

std::string sizes_text_of(const json& object, const char* key) {
  std::vector<std::vector<int64_t>> sizes;
  auto found = object.find(key);
  if (found != object.end() && found->is_array())
    for (const json& tensor : *found) {
      sizes.emplace_back();
      if (tensor.is_array())
        for (const json& dim : tensor)
          if (dim.is_number_integer()) sizes.back().push_back(dim.get<int64_t>());
    }
  return fr_sizes_text(sizes);
}

std::string dtypes_text_of(const json& object, const char* key) {
  std::string text = "[";
  auto found = object.find(key);
  if (found != object.end() && found->is_array())
    for (const json& dtype : *found)
      if (dtype.is_string()) text += (text.size() > 1 ? ", " : "") + dtype.get<std::string>();
  return text + "]";
}

FrState state_of(const std::string& text) {
  if (text == "scheduled") return FrState::kScheduled;
  if (text == "started") return FrState::kStarted;
  if (text == "completed") return FrState::kCompleted;
  return FrState::kUnknown;
}

}  // namespace

const char* fr_state_name(FrState state) {
  switch (state) {
    case FrState::kScheduled: return "scheduled";
    case FrState::kStarted: return "started";
    case FrState::kCompleted: return "completed";
    default: return "unknown";
  }
}

FrRankRecords::FrRankRecords() {
  strings.emplace_back();
  ids_.emplace("", 0);
  stacks.emplace_back();
  stack_ids_.emplace("", 0);
}

uint32_t FrRankRecords::intern(const std::string& text) {
  auto found = ids_.find(text);
  if (found != ids_.end()) return found->second;
  uint32_t id = static_cast<uint32_t>(strings.size());
  ids_.emplace(text, id);
  strings.push_back(text);
  return id;
}

uint32_t FrRankRecords::intern_stack(const std::vector<FrFrame>& frames) {
  if (frames.empty()) return 0;
  stack_key_.clear();
  for (const FrFrame& frame : frames) {
    int64_t line = frame.line.value_or(INT64_MIN);
    stack_key_.append(reinterpret_cast<const char*>(&frame.name), sizeof frame.name);
    stack_key_.append(reinterpret_cast<const char*>(&frame.filename), sizeof frame.filename);
    stack_key_.append(reinterpret_cast<const char*>(&line), sizeof line);
  }
  auto found = stack_ids_.find(stack_key_);
  if (found != stack_ids_.end()) return found->second;
  uint32_t id = static_cast<uint32_t>(stacks.size());
  stack_ids_.emplace(stack_key_, id);
  stacks.push_back(frames);
  return id;
}

const FrGroupConfig* FrRankRecords::group(const std::string& name) const {
  for (const FrGroupConfig& config : groups)
    if (text(config.name) == name) return &config;
  return nullptr;
}

size_t FrRankRecords::memory_bytes() const {
  size_t bytes = sizeof(*this) + records.capacity() * sizeof(FrRecord);
  for (const std::string& text : strings) bytes += sizeof(text) + text.capacity() + 32;
  for (const auto& stack : stacks) bytes += sizeof(stack) + stack.capacity() * sizeof(FrFrame) + 48;
  for (const FrGroupConfig& config : groups) bytes += sizeof(config) + config.ranks.capacity() * sizeof(int);
  return bytes;
}

std::string fr_op_type(const std::string& profiling_name) {
  size_t colon = profiling_name.find(':');
  std::string name = colon == std::string::npos ? profiling_name : profiling_name.substr(colon + 1);
  return name.substr(0, name.find(' '));
}

bool fr_p2p_peers(const std::string& profiling_name, int* src, int* dst) {
  std::string type = fr_op_type(profiling_name);
  size_t space = profiling_name.find(' ');
  if ((type != "send" && type != "recv") || space == std::string::npos) return false;
  const char* arrow = type == "send" ? "->" : "<-";
  std::string peers = profiling_name.substr(space + 1);
  size_t at = peers.find(arrow);
  if (at == std::string::npos || at == 0 || at + 2 >= peers.size()) return false;
  auto number = [](const std::string& text, int* out) {
    for (char c : text)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    if (text.empty() || text.size() > 9) return false;
    *out = std::atoi(text.c_str());
    return true;
  };
  int left, right;
  if (!number(peers.substr(0, at), &left) || !number(peers.substr(at + 2), &right)) return false;
  // "send a->b": a sends to b; "recv b<-a": b receives from a.
  *src = type == "send" ? left : right;
  *dst = type == "send" ? right : left;
  return true;
}

std::string fr_sizes_text(const std::vector<std::vector<int64_t>>& sizes) {
  std::string text = "[";
  for (size_t t = 0; t < sizes.size(); ++t) {
    text += t ? ", [" : "[";
    for (size_t d = 0; d < sizes[t].size(); ++d) text += (d ? ", " : "") + std::to_string(sizes[t][d]);
    text += "]";
  }
  return text + "]";
}

std::optional<int64_t> fr_first_numel(const std::string& sizes_text) {
  if (sizes_text.size() < 4 || sizes_text.compare(0, 2, "[[") != 0) return std::nullopt;
  int64_t numel = 1;
  const char* at = sizes_text.c_str() + 2;
  while (*at && *at != ']') {
    char* end = nullptr;
    long long dim = std::strtoll(at, &end, 10);
    if (end == at || dim < 0) return std::nullopt;
    numel *= dim;
    at = end;
    while (*at == ',' || *at == ' ') ++at;
  }
  return numel;
}

FrRankRecords fr_records_from_torch_section(const json& torch) {
  FrRankRecords out;
  if (!torch.is_object()) return out;
  if (auto groups = torch.find("process_groups"); groups != torch.end() && groups->is_array())
    for (const json& group : *groups) {
      if (!group.is_object()) continue;
      FrGroupConfig config{out.intern(text_of(group, "name")), out.intern(text_of(group, "desc")), {}};
      if (auto ranks = group.find("ranks"); ranks != group.end() && ranks->is_array())
        for (const json& rank : *ranks)
          if (rank.is_number_integer()) config.ranks.push_back(rank.get<int>());
      out.groups.push_back(std::move(config));
    }
  if (auto statuses = torch.find("pg_status"); statuses != torch.end() && statuses->is_array())
    for (const json& status : *statuses)
      if (status.is_object())
        out.pg_status.push_back({status.contains("pg_id") ? status["pg_id"].dump() : "",
                                 int_of(status, "last_enqueued_collective"), int_of(status, "last_started_collective"),
                                 int_of(status, "last_completed_collective")});
  auto entries = torch.find("entries");
  if (entries == torch.end() || !entries->is_array()) return out;
  out.records.reserve(entries->size());
  for (const json& entry : *entries) {
    if (!entry.is_object()) continue;
    FrRecord record;
    record.record_id = int_of(entry, "record_id");
    record.collective_seq = int_of(entry, "collective_seq_id");
    record.p2p_seq = int_of(entry, "p2p_seq_id");
    if (auto pg = entry.find("process_group"); pg != entry.end() && pg->is_array() && pg->size() == 2) {
      if ((*pg)[0].is_string()) record.pg_name = out.intern((*pg)[0].get<std::string>());
      if ((*pg)[1].is_string()) record.pg_desc = out.intern((*pg)[1].get<std::string>());
    }
    record.profiling_name = out.intern(text_of(entry, "profiling_name"));
    record.input_sizes = out.intern(sizes_text_of(entry, "input_sizes"));
    record.output_sizes = out.intern(sizes_text_of(entry, "output_sizes"));
    record.input_dtypes = out.intern(dtypes_text_of(entry, "input_dtypes"));
    record.output_dtypes = out.intern(dtypes_text_of(entry, "output_dtypes"));
    record.state = state_of(text_of(entry, "state"));
    auto p2p = entry.find("is_p2p");
    record.is_p2p = p2p != entry.end() && p2p->is_boolean() && p2p->get<bool>();
    std::vector<FrFrame> frames;
    if (auto list = entry.find("frames"); list != entry.end() && list->is_array())
      for (const json& frame : *list)
        if (frame.is_object())
          frames.push_back({out.intern(text_of(frame, "name")), out.intern(text_of(frame, "filename")),
                            int_of(frame, "line")});
    record.stack = out.intern_stack(frames);
    out.records.push_back(record);
  }
  return out;
}

}  // namespace nsc::torch
