#include "audit/audit.h"

#include "audit/audit_report.h"
#include "snapshot/state_document.h"
#include "util/json_access.h"
#include "util/schemas.h"

namespace nsc::audit {
namespace {

using nlohmann::json;

json inputs_json(const std::vector<AuditInput>& inputs) {
  json out = json::array();
  for (size_t index = 0; index < inputs.size(); ++index) {
    const json& document = inputs[index].document;
    const json& communicators = json_member(document, "communicators");
    const json& errors = json_member(document, "errors");
    out.push_back({{"index", index},
                   {"name", inputs[index].name},
                   {"kind", inputs[index].kind},
                   {"pid", json_member(json_member(document, "target"), "pid")},
                   {"communicators", communicators.is_array() ? communicators.size() : 0},
                   {"read_errors", errors.is_array() ? errors.size() : 0},
                   // Partial input: its unread fields show up as "not checked", never as findings.
                   {"read_in_part", state_exit_code(document) != 0}});
  }
  return out;
}

json summary_json(const AuditReport& report, const json& inputs, size_t failures) {
  size_t errors = 0, warnings = 0, info = 0, communicators = 0, partial = 0;
  for (const json& finding : report.findings()) {
    std::string severity = finding["severity"];
    errors += severity == "error";
    warnings += severity == "warning";
    info += severity == "info";
  }
  for (const json& input : inputs) {
    communicators += input["communicators"].get<size_t>();
    partial += input["read_in_part"].get<bool>();
  }
  return {{"inputs", inputs.size()}, {"inputs_unusable", failures}, {"inputs_read_in_part", partial},
          {"communicators", communicators}, {"errors", errors}, {"warnings", warnings}, {"info", info},
          {"not_checked", report.not_checked_list().size()}};
}

void run_rules(AuditReport& report, const std::vector<AuditInput>& inputs) {
  RanksByHash ranks = group_by_comm_hash(inputs);
  for (size_t index = 0; index < inputs.size(); ++index) {
    const json& communicators = json_member(inputs[index].document, "communicators");
    if (!communicators.is_array()) continue;
    for (const json& comm : communicators) {
      CommRef ref{index, &comm};
      check_comm_health(report, ref);
      check_destroyed_comm_cuda_work(report, ref);
      check_proxy_counters(report, ref);
      check_registrations(report, ref);
      check_ipc_exporters(report, ref, ranks);
    }
  }
  for (const auto& [hash, comm_ranks] : ranks) check_comm_ranks(report, comm_ranks);
}

}  // namespace

json build_audit_document(const std::vector<AuditInput>& inputs, const std::vector<AuditInputFailure>& failures) {
  AuditReport report(inputs);
  run_rules(report, inputs);
  json failures_json = json::array();
  for (const AuditInputFailure& failure : failures)
    failures_json.push_back({{"name", failure.name}, {"reason", failure.reason}});
  json inputs_section = inputs_json(inputs);
  return {{"schema", kAuditSchema},
          {"tool", {{"name", "ncclscope"}, {"version", NCCLSCOPE_VERSION}}},
          {"summary", summary_json(report, inputs_section, failures.size())},
          {"inputs", inputs_section},
          {"unusable_inputs", failures_json},
          {"rules", report.rules_json()},
          {"findings", report.findings()},
          {"not_checked", report.not_checked_list()}};
}

int audit_exit_code(const json& audit_document) {
  const json& summary = json_member(audit_document, "summary");
  if (json_member(summary, "inputs").get<size_t>() == 0) return 2;
  bool partial = json_member(summary, "inputs_read_in_part").get<size_t>() > 0 ||
                 json_member(summary, "inputs_unusable").get<size_t>() > 0;
  return json_member(summary, "errors").get<size_t>() > 0 || partial ? 1 : 0;
}

}  // namespace nsc::audit
