// What the audit rules share: the rule table, where a communicator is, field access that says
// why a field is missing, and the report the rules write their outcomes into.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/audit.h"

namespace nsc::audit {

struct RuleInfo {
  const char* id;
  const char* severity;  // "error", "warning", "info"
  const char* scope;     // "communicator": one rank's comm; "communicator-ranks": all ranks given of one comm
  const char* checks;    // one line: what must hold
};

// Every rule, in report order. docs/audit.md describes each one.
const std::vector<RuleInfo>& audit_rules();
const RuleInfo& rule_info(const std::string& id);

// One communicator entry of one input.
struct CommRef {
  size_t input = 0;
  const nlohmann::json* comm = nullptr;
};

// A field of a communicator entry by dotted path ("health.abort_flag"): the value, or why there
// is none (the entry's `unavailable` reason for it or a parent, or "absent from the input").
struct Field {
  const nlohmann::json* value = nullptr;  // null when unavailable
  std::string why;
  bool known() const { return value != nullptr; }
};
Field comm_field(const nlohmann::json& comm, const std::string& path);
// The communicator's `unavailable` reason for path or its nearest parent; "" when none.
std::string unavailable_reason(const nlohmann::json& comm, std::string path);
// The same for a flag: true/false, or nullopt with `why` set.
std::optional<bool> comm_flag(const nlohmann::json& comm, const std::string& path, std::string* why);

// "0x1234" / 17 -> the hash text used to group ranks of one communicator ("" when unknown).
std::string comm_hash_of(const nlohmann::json& comm);
// The rank as a number, or nullopt.
std::optional<int64_t> rank_of(const nlohmann::json& comm);

class AuditReport {
 public:
  explicit AuditReport(const std::vector<AuditInput>& inputs);

  // Each rule reports, per communicator (or per group of ranks): passed, fired or not checked.
  void passed(const std::string& rule);
  void fire(const std::string& rule, const std::vector<CommRef>& where, const std::string& message,
            nlohmann::json evidence);
  void not_checked(const std::string& rule, const std::vector<CommRef>& where, const std::string& reason);

  const std::vector<AuditInput>& inputs() const { return inputs_; }
  // The rules section, findings and not_checked lists in document form.
  nlohmann::json rules_json() const;
  const nlohmann::json& findings() const { return findings_; }
  const nlohmann::json& not_checked_list() const { return not_checked_; }

 private:
  struct Counts {
    size_t passed = 0, fired = 0, not_checked = 0;
  };
  nlohmann::json where_json(const std::vector<CommRef>& where) const;
  Counts& counts(const std::string& rule);

  const std::vector<AuditInput>& inputs_;
  std::map<std::string, Counts> counts_;
  nlohmann::json findings_ = nlohmann::json::array();
  nlohmann::json not_checked_ = nlohmann::json::array();
};

// The rules, one family per file. Each visits every communicator it applies to.
void check_comm_health(AuditReport& report, const CommRef& comm);            // health_rules.cc
void check_destroyed_comm_cuda_work(AuditReport& report, const CommRef& comm);  // health_rules.cc
void check_proxy_counters(AuditReport& report, const CommRef& comm);         // proxy_rules.cc
void check_registrations(AuditReport& report, const CommRef& comm);          // registration_rules.cc
// Ranks of every communicator across all inputs, by comm hash (cross_rank_rules.cc).
using RanksByHash = std::map<std::string, std::vector<CommRef>>;
RanksByHash group_by_comm_hash(const std::vector<AuditInput>& inputs);
void check_ipc_exporters(AuditReport& report, const CommRef& comm, const RanksByHash& ranks);  // ipc_rules.cc
void check_comm_ranks(AuditReport& report, const std::vector<CommRef>& ranks);  // cross_rank_rules.cc

}  // namespace nsc::audit
