#include "audit/audit_report.h"

#include <stdexcept>

#include "util/json_access.h"

namespace nsc::audit {

using nlohmann::json;

const std::vector<RuleInfo>& audit_rules() {
  static const std::vector<RuleInfo> kRules = {
      {"aborted-comm-not-destroyed", "error", "communicator",
       "an abort flag set (abortFlag) belongs to a comm being aborted, revoked or destroyed"},
      {"abort-not-reclaimed", "warning", "communicator",
       "a comm NCCL was asked to abort is freed, not left behind"},
      {"revoked-comm-not-destroyed", "warning", "communicator",
       "a revoked comm (ncclCommRevoke) is then destroyed"},
      {"comm-async-error", "error", "communicator",
       "asyncResult and proxyState->asyncResult are ncclSuccess or ncclInProgress (ncclCommGetAsyncError)"},
      {"destroyed-comm-holds-cuda-work", "warning", "communicator",
       "a comm being destroyed has no event callbacks pending and no user streams of a group"},
      {"proxy-counters-out-of-order", "error", "communicator",
       "each proxy sub in progress keeps its transport's order: net posted >= received >= transmitted >= done"},
      {"proxy-counter-past-nsteps", "error", "communicator", "a proxy sub's done (and p2p/shm transmitted) <= nsteps"},
      {"registration-not-page-aligned", "error", "communicator",
       "each registered range [begAddr, endAddr) is page-aligned and not reversed"},
      {"registration-cache-unsorted", "error", "communicator",
       "the registration cache's slots ascend by begAddr (NCCL's lookups rely on it)"},
      {"ipc-import-from-dead-peer", "error", "communicator",
       "the comm of every peer whose memory this rank imported (IPC/cuMem) is not destroyed"},
      {"comm-identity-inconsistent", "error", "communicator-ranks",
       "ranks of one comm hash agree on nranks, and no rank is held by two inputs"},
      {"seq-order-inconsistent", "error", "communicator-ranks",
       "launched counts of two ranks are ordered: one rank is ahead or equal in every collective"},
      {"seq-spread", "info", "communicator-ranks", "all ranks given have launched the same collectives"},
  };
  return kRules;
}

const RuleInfo& rule_info(const std::string& id) {
  for (const RuleInfo& rule : audit_rules())
    if (id == rule.id) return rule;
  throw std::logic_error("audit rule " + id + " is not in the rule table");
}

// The unavailable reason of path or of its nearest parent ("cuda.registrations.buffers" under
// "cuda.registrations").
std::string unavailable_reason(const json& comm, std::string path) {
  const json& unavailable = json_member(comm, "unavailable");
  while (!path.empty()) {
    const json* reason = find_json_member(unavailable, path.c_str());
    if (reason != nullptr && reason->is_string()) return reason->get<std::string>();
    size_t dot = path.rfind('.');
    if (dot == std::string::npos) break;
    path.resize(dot);
  }
  return "";
}

Field comm_field(const json& comm, const std::string& path) {
  const json* value = &comm;
  size_t start = 0;
  while (value != nullptr && start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    value = find_json_member(*value, key.c_str());
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  Field field;
  if (value != nullptr && !value->is_null()) {
    field.value = value;
    return field;
  }
  field.why = unavailable_reason(comm, path);
  if (field.why.empty()) field.why = value == nullptr ? path + " absent from the input" : path + " is null";
  else field.why = path + ": " + field.why;
  return field;
}

std::optional<bool> comm_flag(const json& comm, const std::string& path, std::string* why) {
  Field field = comm_field(comm, path);
  if (field.known() && field.value->is_boolean()) return field.value->get<bool>();
  *why = field.known() ? path + " is not a flag" : field.why;
  return std::nullopt;
}

std::string comm_hash_of(const json& comm) {
  const json& hash = json_member(comm, "comm_hash");
  return hash.is_string() ? hash.get<std::string>() : "";
}

std::optional<int64_t> rank_of(const json& comm) {
  const json& rank = json_member(comm, "rank");
  if (rank.is_number_integer()) return rank.get<int64_t>();
  return std::nullopt;
}

AuditReport::AuditReport(const std::vector<AuditInput>& inputs) : inputs_(inputs) {
  for (const RuleInfo& rule : audit_rules()) counts_[rule.id];
}

AuditReport::Counts& AuditReport::counts(const std::string& rule) {
  rule_info(rule);  // an unknown id is a programming error
  return counts_[rule];
}

void AuditReport::passed(const std::string& rule) { ++counts(rule).passed; }

json AuditReport::where_json(const std::vector<CommRef>& where) const {
  json out = json::array();
  for (const CommRef& ref : where) {
    const json& comm = *ref.comm;
    out.push_back({{"input", ref.input},
                   {"input_name", inputs_[ref.input].name},
                   {"comm_address", json_member(comm, "address")},
                   {"rank", json_member(comm, "rank")}});
  }
  return out;
}

void AuditReport::fire(const std::string& rule, const std::vector<CommRef>& where, const std::string& message,
                       json evidence) {
  ++counts(rule).fired;
  findings_.push_back({{"rule", rule},
                       {"severity", rule_info(rule).severity},
                       {"comm_hash", where.empty() ? json(nullptr) : json_member(*where.front().comm, "comm_hash")},
                       {"where", where_json(where)},
                       {"message", message},
                       {"evidence", std::move(evidence)}});
}

void AuditReport::not_checked(const std::string& rule, const std::vector<CommRef>& where, const std::string& reason) {
  ++counts(rule).not_checked;
  not_checked_.push_back({{"rule", rule},
                          {"comm_hash", where.empty() ? json(nullptr) : json_member(*where.front().comm, "comm_hash")},
                          {"where", where_json(where)},
                          {"reason", "not checked: " + reason}});
}

json AuditReport::rules_json() const {
  json rules = json::array();
  for (const RuleInfo& rule : audit_rules()) {
    const Counts& count = counts_.at(rule.id);
    rules.push_back({{"id", rule.id}, {"severity", rule.severity}, {"scope", rule.scope},
                     {"checks", rule.checks}, {"passed", count.passed}, {"fired", count.fired},
                     {"not_checked", count.not_checked}});
  }
  return rules;
}

}  // namespace nsc::audit
