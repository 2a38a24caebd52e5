#include "torch/fr_pickle.h"

#include <cstring>

#include "util/errors.h"

namespace nsc {
namespace {

using nlohmann::json;

// Opcodes of pickle protocol 2 (CPython Lib/pickle.py).
constexpr char kProto = '\x80', kStop = '.', kMark = '(', kNone = 'N', kTrue = '\x88', kFalse = '\x89',
               kBinInt = 'J', kLong1 = '\x8a', kBinFloat = 'G', kBinUnicode = 'X', kEmptyList = ']',
               kAppends = 'e', kEmptyDict = '}', kSetItems = 'u', kTuple = 't';
const char kTupleMarker[] = "__tuple__";

void put_le32(std::string* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void put_int(std::string* out, int64_t value) {
  if (value >= INT32_MIN && value <= INT32_MAX) {
    out->push_back(kBinInt);
    put_le32(out, static_cast<uint32_t>(static_cast<int32_t>(value)));
    return;
  }
  std::string bytes;  // little-endian two's complement, as short as the sign allows
  uint64_t bits = static_cast<uint64_t>(value);
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  while (bytes.size() > 1) {
    char top = bytes.back(), next = bytes[bytes.size() - 2];
    bool redundant = (top == 0 && !(next & 0x80)) || (top == '\xff' && (next & 0x80));
    if (!redundant) break;
    bytes.pop_back();
  }
  out->push_back(kLong1);
  out->push_back(static_cast<char>(bytes.size()));
  *out += bytes;
}

void put_uint(std::string* out, uint64_t value) {
  if (value <= static_cast<uint64_t>(INT64_MAX)) return put_int(out, static_cast<int64_t>(value));
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  bytes.push_back('\0');  // positive: a zero sign byte
  out->push_back(kLong1);
  out->push_back(static_cast<char>(bytes.size()));
  *out += bytes;
}

void put_float(std::string* out, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  out->push_back(kBinFloat);
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((bits >> (8 * i)) & 0xff));  // big-endian
}

void put(std::string* out, const json& value) {
  switch (value.type()) {
    case json::value_t::null: out->push_back(kNone); return;
    case json::value_t::boolean: out->push_back(value.get<bool>() ? kTrue : kFalse); return;
    case json::value_t::number_integer: put_int(out, value.get<int64_t>()); return;
    case json::value_t::number_unsigned: put_uint(out, value.get<uint64_t>()); return;
    case json::value_t::number_float: put_float(out, value.get<double>()); return;
    case json::value_t::string: {
      const std::string& text = value.get_ref<const std::string&>();
      out->push_back(kBinUnicode);
      put_le32(out, static_cast<uint32_t>(text.size()));
      *out += text;
      return;
    }
    case json::value_t::array:
      if (!value.empty() && value[0] == kTupleMarker) {
        out->push_back(kMark);
        for (size_t i = 1; i < value.size(); ++i) put(out, value[i]);
        out->push_back(kTuple);
        return;
      }
      out->push_back(kEmptyList);
      if (value.empty()) return;
      out->push_back(kMark);
      for (const json& item : value) put(out, item);
      out->push_back(kAppends);
      return;
    case json::value_t::object:
      out->push_back(kEmptyDict);
      if (value.empty()) return;
      out->push_back(kMark);
      for (const auto& [key, item] : value.items()) {
        put(out, json(key));
        put(out, item);
      }
      out->push_back(kSetItems);
      return;
    default: out->push_back(kNone); return;
  }
}

// The dump format's version for a torch version: FlightRecorder.hpp's version_val.
std::string format_version(const json& torch) {
  std::string version = torch.value("torch_version", json("")).is_string() ? torch["torch_version"].get<std::string>() : "";
  if (version.rfind("2.11", 0) == 0) return "2.10";  // torch 2.11: DEFINE_CONSTANT(version_val, "2.10")
  return "unknown (torch " + (version.empty() ? std::string("?") : version) + ")";
}

// "[0, 1, 2, 3]": pg_config's ranks are a string in PyTorch's dump.
std::string ranks_text(const json& ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + ranks[i].dump();
  return text + "]";
}

json entry_of(const json& entry) {
  json frames = json::array();
  for (const json& frame : entry.value("frames", json::array()))
    frames.push_back({{"name", frame.value("name", json(""))}, {"filename", frame.value("filename", json(""))},
                      {"line", frame.value("line", json(nullptr))}});
  json pg = entry.value("process_group", json::array({"", ""}));
  json out = {{"frames", frames},
              {"record_id", entry.value("record_id", json(nullptr))},
              {"pg_id", entry.value("pg_id", json(nullptr))},
              {"process_group", {kTupleMarker, pg.size() > 0 ? pg[0] : json(""), pg.size() > 1 ? pg[1] : json("")}},
              {"thread_name", entry.value("thread_name", json(""))},
              {"thread_id", entry.value("thread_id", json(""))}};
  for (const char* key : {"collective_seq_id", "p2p_seq_id", "op_id", "profiling_name", "time_created_ns",
                          "input_sizes", "input_dtypes", "output_sizes", "output_dtypes", "state",
                          "time_discovered_started_ns", "time_discovered_completed_ns", "retired", "timeout_ms",
                          "is_p2p"})
    out[key] = entry.value(key, json(nullptr));
  if (entry.contains("duration_ms") && !entry["duration_ms"].is_null()) out["duration_ms"] = entry["duration_ms"];
  return out;
}

}  // namespace

std::string pickle_of(const json& value) {
  std::string out = {kProto, '\x02'};
  put(&out, value);
  out.push_back(kStop);
  return out;
}

std::string flight_recorder_pickle(const json& torch) {
  if (!torch.is_object()) throw BadInput("no flight recorder section (libtorch_cuda.so not mapped)");
  if (torch.value("unavailable", json(nullptr)).is_string())
    throw BadInput("flight recorder unavailable: " + torch["unavailable"].get<std::string>());
  json pg_config = json::object();
  for (const json& group : torch.value("process_groups", json::array()))
    pg_config[group.value("name", json("")).get<std::string>()] = {
        {"name", group.value("name", json(""))}, {"desc", group.value("desc", json(""))},
        {"ranks", ranks_text(group.value("ranks", json::array()))}};
  json pg_status = json::object();
  for (const json& status : torch.value("pg_status", json::array()))
    pg_status[status.value("pg_id", json(0)).dump()] = {
        {"last_enqueued_collective", status.value("last_enqueued_collective", json(nullptr))},
        {"last_started_collective", status.value("last_started_collective", json(nullptr))},
        {"last_completed_collective", status.value("last_completed_collective", json(nullptr))}};
  json entries = json::array();
  for (const json& entry : torch.value("entries", json::array())) entries.push_back(entry_of(entry));
  json dump = {{"version", format_version(torch)}, {"pg_config", pg_config},
               {"comm_lib_version", torch.value("comm_lib_version", json(""))}, {"pg_status", pg_status}};
  dump["entries"] = entries;
  return pickle_of(dump);
}

}  // namespace nsc
