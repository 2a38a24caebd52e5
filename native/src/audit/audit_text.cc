#include "audit/audit_text.h"

#include <cctype>
#include <cstdio>
#include <map>
#include <sstream>

#include "snapshot/state_text.h"
#include "util/json_access.h"
#include "util/strings.h"

namespace nsc::audit {
namespace {

using nlohmann::json;

std::string text(const json& value) { return escape_for_terminal(cell_text(value)); }

std::string count_of(const json& summary, const char* key, const char* noun) {
  size_t count = json_member(summary, key).is_number_unsigned() ? json_member(summary, key).get<size_t>() : 0;
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

void render_inputs(const json& document, std::ostringstream& out) {
  for (const json& input : json_member(document, "inputs")) {
    out << "input " << text(input["index"]) << "  " << text(input["name"]) << " (" << text(input["kind"]);
    if (input["pid"].is_number_integer()) out << ", pid " << input["pid"].get<int64_t>();
    out << "): " << text(input["communicators"]) << " communicator(s)";
    if (input["read_in_part"] == true)
      out << "; READ IN PART (" << text(input["read_errors"]) << " read error(s)): its unread fields are not checked";
    out << "\n";
  }
  for (const json& failure : json_member(document, "unusable_inputs"))
    out << "unusable  " << text(failure["name"]) << ": " << text(failure["reason"]) << "\n";
}

void render_rule_table(const json& document, std::ostringstream& out) {
  char line[160];
  std::snprintf(line, sizeof line, "\n%-32s %-8s %7s %6s %12s\n", "rule", "severity", "passed", "fired", "not checked");
  out << line;
  for (const json& rule : json_member(document, "rules")) {
    std::snprintf(line, sizeof line, "%-32s %-8s %7s %6s %12s\n", text(rule["id"]).c_str(), text(rule["severity"]).c_str(),
                  text(rule["passed"]).c_str(), text(rule["fired"]).c_str(), text(rule["not_checked"]).c_str());
    out << line;
  }
}

// "comm 0x6db0a96d9cb7fc37 rank 1 (rank1.core, 0x55a5c6d77f80)"
std::string where_text(const json& entry) {
  std::string out = "comm " + text(json_member(entry, "comm_hash"));
  for (const json& where : json_member(entry, "where"))
    out += " rank " + text(where["rank"]) + " (" + text(where["input_name"]) + ", " + text(where["comm_address"]) + ")";
  return out;
}

void render_findings(const json& document, std::ostringstream& out) {
  const json& findings = json_member(document, "findings");
  if (findings.empty()) return;
  out << "\nfindings\n";
  for (const json& finding : findings) {
    std::string severity = finding["severity"];
    for (char& c : severity) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out << "  " << severity << "  " << text(finding["rule"]) << "  " << where_text(finding) << "\n"
        << "      " << text(finding["message"]) << "\n"
        << "      evidence " << escape_for_terminal(finding["evidence"].dump(-1, ' ', true)) << "\n";
  }
}

void render_not_checked(const json& document, bool verbose, std::ostringstream& out) {
  const json& entries = json_member(document, "not_checked");
  if (entries.empty()) return;
  out << "\nnot checked (a field unavailable in the input is never a finding)\n";
  if (verbose) {
    for (const json& entry : entries)
      out << "  " << text(entry["rule"]) << "  " << where_text(entry) << ": " << text(entry["reason"]) << "\n";
    return;
  }
  std::map<std::string, std::pair<size_t, const json*>> by_rule;  // ordered by rule id
  for (const json& entry : entries) {
    auto& [count, first] = by_rule[entry["rule"].get<std::string>()];
    if (count++ == 0) first = &entry;
  }
  for (const auto& [rule, seen] : by_rule)
    out << "  " << escape_for_terminal(rule) << "  " << seen.first << " time(s); first: " << where_text(*seen.second) << ": "
        << text((*seen.second)["reason"]) << "\n";
  out << "  (--verbose lists each)\n";
}

}  // namespace

std::string render_audit_text(const json& document, bool verbose) {
  std::ostringstream out;
  const json& summary = json_member(document, "summary");
  out << "audit of " << count_of(summary, "inputs", "input") << ", " << count_of(summary, "communicators", "communicator")
      << ": " << count_of(summary, "errors", "error") << ", " << count_of(summary, "warnings", "warning") << ", "
      << text(json_member(summary, "info")) << " info (" << text(json_member(summary, "not_checked")) << " not checked)\n";
  render_inputs(document, out);
  render_rule_table(document, out);
  render_findings(document, out);
  render_not_checked(document, verbose, out);
  return out.str();
}

}  // namespace nsc::audit
