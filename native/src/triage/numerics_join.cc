#include "triage/numerics_join.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "snapshot/numerics_text.h"
#include "triage/analysis.h"
#include "util/errors.h"
#include "util/json_access.h"
#include "util/schemas.h"
#include "util/strings.h"

namespace nsc::triage {
namespace {

using nlohmann::json;

// Bounds on what a (possibly hostile) numerics document makes triage hold.
constexpr size_t kMaxBuffers = 4096, kMaxText = 200;

json short_string(const json& value) {
  if (!value.is_string()) return nullptr;
  std::string text = value.get<std::string>();
  return text.size() > kMaxText ? text.substr(0, kMaxText) + "..." : text;
}

// A count or index: a non-negative integer, else null.
json count_or_null(const json& value) {
  if (value.is_number_unsigned()) return value;
  return value.is_number_integer() && value.get<int64_t>() >= 0 ? json(value.get<uint64_t>()) : json(nullptr);
}

json sanitized_stats(const json& stats) {
  if (!stats.is_object()) return nullptr;
  json out = json::object();
  for (const char* key : {"elements_read", "nan", "pos_inf", "neg_inf", "subnormal", "zero", "finite"})
    out[key] = count_or_null(json_member(stats, key));
  const json& max_abs = json_member(stats, "max_abs");
  out["max_abs"] = max_abs.is_number() ? max_abs : json(nullptr);
  return out;
}

// The members triage shows, each type-checked.
json sanitized_buffer(const json& buffer) {
  json out = json::object();
  for (const char* key : {"comm", "comm_hash", "stage", "collective", "datatype", "element_type", "role", "address",
                          "read_from", "unreadable"})
    out[key] = short_string(json_member(buffer, key));
  for (const char* key : {"rank", "nranks", "seq", "elements", "bytes"}) out[key] = count_or_null(json_member(buffer, key));
  const json& sampled = json_member(buffer, "sampled");
  out["sampled"] = sampled.is_boolean() ? sampled : json(false);
  out["stats"] = sanitized_stats(json_member(buffer, "stats"));
  return out;
}

bool holds_bad_values(const json& buffer) { return !bad_values_sentence(buffer).empty(); }

// Where a buffer's communicator rank sits in the job: its process, world rank and group.
struct Placement {
  int process = -1;
  const CommGroup* group = nullptr;
};

Placement place(const Job& job, const json& buffer) {
  uint64_t hash = 0;
  const json& hash_text = json_member(buffer, "comm_hash");
  const json& rank = json_member(buffer, "rank");
  if (!hash_text.is_string() || !parse_u64(hash_text.get<std::string>(), &hash) || !rank.is_number_unsigned()) return {};
  for (const CommGroup& group : job.comms) {
    if (group.hash != hash) continue;
    const Member* member = group.find(static_cast<int>(rank.get<uint64_t>()));
    if (member != nullptr) return {member->process, &group};
  }
  return {};
}

json joined_buffer(const Job& job, const NumericsView& view, const json& buffer) {
  json out = buffer;
  out["input"] = view.input_name;
  out["source"] = view.source;
  Placement where = place(job, buffer);
  out["joined"] = where.process >= 0;
  out["world_rank"] = where.process >= 0 && job.world_rank[where.process] ? json(*job.world_rank[where.process]) : json(nullptr);
  const json& hash = buffer["comm_hash"];
  out["who"] = where.process >= 0 ? job.process_label(where.process)
                                  : "comm " + (hash.is_string() ? hash.get<std::string>() : "?") + " rank " +
                                        (buffer["rank"].is_null() ? "?" : buffer["rank"].dump());
  if (where.group != nullptr && !where.group->pg_name.empty())
    out["process_group"] = where.group->pg_desc.empty() || where.group->pg_desc == "undefined" ? where.group->pg_name
                                                                                                 : where.group->pg_desc;
  std::string bad = bad_values_sentence(out), low = underflow_sentence(out);
  if (!bad.empty()) out["text"] = out["who"].get<std::string>() + "'s " + bad;
  else if (!low.empty()) out["text"] = out["who"].get<std::string>() + "'s " + low;
  return out;
}

// NaN/Inf first, then underflow, then the rest; by world rank within each.
bool shown_before(const json& a, const json& b) {
  auto key = [](const json& buffer) {
    int order = holds_bad_values(buffer) ? 0 : !underflow_sentence(buffer).empty() ? 1 : buffer["stats"].is_object() ? 2 : 3;
    int64_t rank = buffer["world_rank"].is_number_integer() ? buffer["world_rank"].get<int64_t>() : INT64_MAX;
    return std::make_tuple(order, rank);
  };
  return key(a) < key(b);
}

// One buffer of one collective on one rank, whoever read it.
std::string buffer_key(const json& buffer) {
  return buffer["comm_hash"].dump() + buffer["rank"].dump() + buffer["seq"].dump() + buffer["role"].dump() +
         buffer["address"].dump();
}

// A buffer that another input read (cuda-gdb's nccl-numerics for device memory) is not "not
// readable": only the reading is kept.
std::vector<json> without_superseded(std::vector<json> buffers) {
  std::set<std::string> read;
  for (const json& buffer : buffers)
    if (buffer["stats"].is_object()) read.insert(buffer_key(buffer));
  buffers.erase(std::remove_if(buffers.begin(), buffers.end(),
                               [&](const json& buffer) {
                                 return !buffer["stats"].is_object() && read.count(buffer_key(buffer)) > 0;
                               }),
                buffers.end());
  return buffers;
}

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::string operation_of(const json& buffer) {
  return (buffer["collective"].is_string() ? buffer["collective"].get<std::string>() : "P2P") +
         (buffer["seq"].is_null() ? "" : " #" + buffer["seq"].dump());
}

std::string collective_key(const json& buffer) { return buffer["comm_hash"].dump() + "#" + buffer["seq"].dump(); }

// Where NaN/Inf entered a collective, from its send buffers read (on one comm and sequence
// number): the ones that hold them while others are clean, so the receive buffers holding them
// got them through the reduction; or none, every one read whole, while receive buffers hold
// them: they arose in a reduction (a sum past the type's range), not in one rank's input.
json entry_points(const std::vector<json>& buffers) {
  std::map<std::string, std::vector<const json*>> sends;  // collective -> send buffers read
  std::set<std::string> dirty_receives;                    // collectives whose receive buffers hold NaN/Inf
  for (const json& buffer : buffers) {
    if (!buffer["stats"].is_object() || !buffer["joined"].get<bool>()) continue;
    if (buffer["role"] == "send") sends[collective_key(buffer)].push_back(&buffer);
    if (buffer["role"] == "recv" && holds_bad_values(buffer)) dirty_receives.insert(collective_key(buffer));
  }
  json sentences = json::array();
  for (const auto& item : sends) {
    std::vector<std::string> dirty, clean;
    bool sampled = false;
    for (const json* buffer : item.second) {
      (holds_bad_values(*buffer) ? dirty : clean).push_back((*buffer)["who"]);
      sampled |= json_member(*buffer, "sampled") != false;  // unknown counts as sampled
    }
    std::string op = operation_of(*item.second.front());
    if (!dirty.empty() && !clean.empty())
      sentences.push_back("NaN/Inf entered " + op + " through " + listed(dirty) + "'s send buffer (" +
                          listed(clean) + "'s send buffer clean): receive buffers holding them got them through the "
                          "reduction");
    else if (dirty.empty() && !sampled && dirty_receives.count(item.first))
      sentences.push_back("no send buffer of " + op + " read holds NaN/Inf (" + listed(clean) +
                          ", read whole) while receive buffers do: they arose in a reduction (a sum past the type's "
                          "range), not in one rank's input");
  }
  return sentences;
}

}  // namespace

bool is_numerics_document(const json& document) {
  const json& schema = json_member(document, "schema");
  return schema.is_string() && schema.get<std::string>() == kNumericsSchema;
}

NumericsView summarize_numerics_document(const json& document, const std::string& input_name,
                                         const std::string& source) {
  if (!is_numerics_document(document)) throw BadInput(input_name + ": not an " + std::string(kNumericsSchema) + " document");
  NumericsView view{input_name, source, {}};
  const json& buffers = json_member(document, "buffers");
  if (!buffers.is_array()) throw BadInput(input_name + ": numerics document without a buffers[] array");
  for (const json& buffer : buffers) {
    if (view.buffers.size() >= kMaxBuffers) break;
    if (buffer.is_object()) view.buffers.push_back(sanitized_buffer(buffer));
  }
  return view;
}

void join_numerics(Job* job, std::vector<NumericsView> views) {
  bool any_read = false, any_given = false;
  for (const NumericsView& view : views) {
    any_given |= view.source == "input";
    for (const json& buffer : view.buffers) any_read |= buffer["stats"].is_object();
  }
  if (!any_read && !any_given) return;  // cores whose buffers are all in device memory: no section
  json section = {{"inputs", json::array()}};
  std::vector<json> entries;
  for (const NumericsView& view : views) {
    size_t joined = 0;
    for (const json& buffer : view.buffers) {
      entries.push_back(joined_buffer(*job, view, buffer));
      joined += entries.back()["joined"].get<bool>();
    }
    section["inputs"].push_back({{"input", view.input_name}, {"source", view.source},
                                 {"buffers", view.buffers.size()}, {"joined", joined}});
  }
  entries = without_superseded(std::move(entries));
  std::stable_sort(entries.begin(), entries.end(), shown_before);
  size_t read = 0, bad = 0, underflowed = 0, unreadable = 0;
  for (const json& entry : entries) {
    read += entry["stats"].is_object();
    unreadable += !entry["stats"].is_object();
    bad += holds_bad_values(entry);
    underflowed += !holds_bad_values(entry) && !underflow_sentence(entry).empty();
  }
  section["entered_through"] = entry_points(entries);
  section["buffers"] = std::move(entries);
  section["read"] = read;
  section["unreadable"] = unreadable;
  section["with_nan_or_inf"] = bad;
  section["underflowed"] = underflowed;
  job->numerics = std::move(section);
}

std::string numerics_sentence(const json& buffer) {
  const json& text = json_member(buffer, "text");
  return text.is_string() ? text.get<std::string>() : "";
}

}  // namespace nsc::triage
