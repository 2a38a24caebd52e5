#include "snapshot/numerics_text.h"

#include <cstdio>
#include <sstream>

#include "util/json_access.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

uint64_t count_member(const json& object, const char* key) {
  const json& value = json_member(object, key);
  return value.is_number_unsigned() ? value.get<uint64_t>() : 0;
}

std::string text_of(const json& value, const char* fallback = "?") {
  return value.is_string() ? escape_for_terminal(value.get<std::string>()) : fallback;
}

// "AllReduce #12" / "AllReduce (position unknown)" / "send to rank 3"
std::string work_name(const json& buffer) {
  const json& collective = json_member(buffer, "collective");
  std::string name = text_of(collective, "P2P");
  const json& seq = json_member(buffer, "seq");
  if (seq.is_number_integer()) name += " #" + std::to_string(seq.get<int64_t>());
  if (text_of(json_member(buffer, "stage"), "") == "planned") name += " (planned, not launched)";
  return name;
}

std::string magnitude(const json& stats) {
  const json& max_abs = json_member(stats, "max_abs");
  if (!max_abs.is_number()) return "no finite value";
  char text[40];
  std::snprintf(text, sizeof text, "max |x| %.4g", max_abs.get<double>());
  return text;
}

std::string stats_line(const json& stats) {
  std::ostringstream out;
  if (json_member(stats, "nan").is_number()) {
    out << group_thousands(count_member(stats, "nan")) << " NaN, " << group_thousands(count_member(stats, "pos_inf"))
        << " +Inf, " << group_thousands(count_member(stats, "neg_inf")) << " -Inf, "
        << group_thousands(count_member(stats, "subnormal")) << " subnormal, ";
  }
  out << group_thousands(count_member(stats, "zero")) << " zero, " << magnitude(stats);
  return out.str();
}

std::string read_line(const json& buffer, const json& stats) {
  std::string line = "read " + group_thousands(count_member(stats, "elements_read")) + " of " +
                     group_thousands(count_member(buffer, "elements")) + " from " +
                     text_of(json_member(buffer, "read_from"));
  const json& sample = json_member(buffer, "sample");
  if (sample.is_object())
    line += ", sampled: " + group_thousands(count_member(sample, "chunks")) + " chunks of " +
            group_thousands(count_member(sample, "chunk_bytes")) + " bytes";
  return line;
}

}  // namespace

std::string group_thousands(uint64_t value) {
  std::string digits = std::to_string(value);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) digits.insert(static_cast<size_t>(at), ",");
  return digits;
}

std::string bad_values_sentence(const json& buffer) {
  const json& stats = json_member(buffer, "stats");
  uint64_t nan = count_member(stats, "nan");
  uint64_t inf = count_member(stats, "pos_inf") + count_member(stats, "neg_inf");
  if (nan == 0 && inf == 0) return "";
  std::string what;
  if (nan > 0) what = group_thousands(nan) + " NaN";
  if (inf > 0) what += (what.empty() ? "" : " and ") + group_thousands(inf) + " Inf";
  std::string sentence = text_of(json_member(buffer, "role")) + " buffer of " + work_name(buffer) + " holds " +
                         what + " (" + text_of(json_member(buffer, "element_type")) + ")";
  if (json_member(buffer, "sampled").is_boolean() && json_member(buffer, "sampled").get<bool>())
    sentence += " in a sample of " + group_thousands(count_member(stats, "elements_read")) + " elements";
  return sentence;
}

std::string underflow_sentence(const json& buffer) {
  const json& stats = json_member(buffer, "stats");
  uint64_t subnormal = count_member(stats, "subnormal"), zero = count_member(stats, "zero");
  uint64_t read = count_member(stats, "elements_read");
  if (subnormal == 0 || (subnormal + zero) * 2 <= read) return "";
  return text_of(json_member(buffer, "role")) + " buffer of " + work_name(buffer) + " is mostly underflowed: " +
         group_thousands(subnormal) + " subnormal and " + group_thousands(zero) + " zero of " + group_thousands(read) +
         " elements read (" + text_of(json_member(buffer, "element_type")) + ")";
}

std::string render_numerics_text(const json& document) {
  std::ostringstream out;
  const json& buffers = json_member(document, "buffers");
  if (!buffers.is_array() || buffers.empty()) out << "no launched or planned collective with buffers found\n";
  if (buffers.is_array()) {
    for (const json& buffer : buffers) {
      const json& rank = json_member(buffer, "rank");
      out << "rank " << (rank.is_number_integer() ? std::to_string(rank.get<int64_t>()) : "?") << " comm "
          << text_of(json_member(buffer, "comm")) << " " << work_name(buffer) << " "
          << text_of(json_member(buffer, "role")) << " " << text_of(json_member(buffer, "address"), "(no address)")
          << " " << group_thousands(count_member(buffer, "elements")) << " x "
          << text_of(json_member(buffer, "element_type"), text_of(json_member(buffer, "datatype")).c_str());
      if (json_member(buffer, "in_place").is_boolean()) out << " (in place)";
      const json& stats = json_member(buffer, "stats");
      if (stats.is_object()) out << ": " << stats_line(stats) << " (" << read_line(buffer, stats) << ")\n";
      else out << ": " << text_of(json_member(buffer, "unreadable"), "unavailable") << "\n";
    }
  }
  const json& notes = json_member(document, "notes");
  if (notes.is_array())
    for (const json& note : notes) out << "note: " << text_of(note) << "\n";
  return out.str();
}

}  // namespace nsc
