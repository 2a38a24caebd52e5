// Proxy step counters (NCCL 2.28.9 transport/net.cc, p2p.cc, shm.cc). Each transport's progress
// function zeroes a sub's counters when its op enters ncclProxyOpProgress and only ever advances
// them in this order:
//   net send:  posted >= transmitted >= done          (received is not used on the send side)
//   net recv:  posted >= received >= transmitted >= done
//   p2p, shm:  transmitted >= done, transmitted <= nsteps   (posted stays 0)
// and done stops at nsteps everywhere. Net recv subs grouped on one receive comm advance posted,
// received and transmitted together, past their own nsteps, so only done is bounded there.
// Ops not yet in progress keep the counters of the op that used the pool slot before (proxy.cc
// ncclProxyOpToArgs does not clear them): they are not checked.
#include <vector>

#include "audit/audit_report.h"

namespace nsc::audit {
namespace {

using nlohmann::json;

constexpr int64_t kProxyOpProgress = 2;  // enum ncclProxyOpState {None, Ready, Progress}, 2.18-2.30

struct SubCounters {
  int64_t nsteps = 0, posted = 0, received = 0, transmitted = 0, done = 0;
  std::string transport;
  bool send = false;
};

// One broken ordering or bound: "transmitted 8 > posted 4".
struct Violation {
  const char* rule;
  std::string what;
};

bool read_integer(const json& sub, const char* key, int64_t* value, std::string* why) {
  auto it = sub.find(key);
  if (it != sub.end() && it->is_number_integer()) {
    *value = it->get<int64_t>();
    return true;
  }
  *why = std::string(key) + (it == sub.end() ? " absent from the input" : " unavailable");
  return false;
}

// The counters a rule needs, or why they cannot be read.
bool read_sub(const json& sub, SubCounters* counters, std::string* why) {
  auto transport = sub.find("transport");
  if (transport == sub.end() || !transport->is_string()) {
    *why = "transport of the sub's connection unavailable";
    return false;
  }
  counters->transport = transport->get<std::string>();
  for (auto [key, value] : {std::pair{"nsteps", &counters->nsteps}, std::pair{"posted", &counters->posted},
                            std::pair{"transmitted", &counters->transmitted}, std::pair{"done", &counters->done}})
    if (!read_integer(sub, key, value, why)) return false;
  if (counters->transport != "net") return true;
  auto send = sub.find("send");
  if (send == sub.end() || !send->is_boolean()) {
    *why = "direction (send) of a net sub unavailable";
    return false;
  }
  counters->send = send->get<bool>();
  return counters->send || read_integer(sub, "received", &counters->received, why);
}

void expect_not_above(std::vector<Violation>* out, const char* rule, const char* low_name, int64_t low,
                      const char* high_name, int64_t high) {
  if (low > high)
    out->push_back({rule, std::string(low_name) + " " + std::to_string(low) + " > " + high_name + " " + std::to_string(high)});
}

std::vector<Violation> violations_of(const SubCounters& sub) {
  std::vector<Violation> out;
  const char* order = "proxy-counters-out-of-order";
  const char* bound = "proxy-counter-past-nsteps";
  expect_not_above(&out, order, "done", sub.done, "transmitted", sub.transmitted);
  expect_not_above(&out, bound, "done", sub.done, "nsteps", sub.nsteps);
  if (sub.transport == "net") {
    if (sub.send) {
      expect_not_above(&out, order, "transmitted", sub.transmitted, "posted", sub.posted);
    } else {
      expect_not_above(&out, order, "received", sub.received, "posted", sub.posted);
      expect_not_above(&out, order, "transmitted", sub.transmitted, "received", sub.received);
    }
  } else {
    expect_not_above(&out, bound, "transmitted", sub.transmitted, "nsteps", sub.nsteps);
  }
  return out;
}

json sub_evidence(const json& op, const json& sub) {
  json evidence = {{"proxy_op", op.value("address", json())}, {"op_count", op.value("op_count", json())},
                   {"collective", op.value("collective", json())}, {"state", op.value("state", json())}};
  for (const char* key : {"channel", "peer", "transport", "send", "nsteps", "posted", "received", "transmitted", "done"})
    evidence[key] = sub.value(key, json());
  return evidence;
}

std::string sub_label(const json& op, size_t index, const SubCounters& counters) {
  std::string direction = counters.transport == "net" ? (counters.send ? " send" : " recv") : "";
  return "proxy op " + op.value("address", std::string("?")) + " sub " + std::to_string(index) + " (" +
         counters.transport + direction + ")";
}

// Per rule: findings, or what kept a sub from being checked.
struct RuleOutcome {
  size_t fired = 0;
  size_t unchecked = 0;
  std::string first_reason;
};

void note_unchecked(std::map<std::string, RuleOutcome>& outcomes, const std::string& why) {
  for (auto& [rule, outcome] : outcomes)
    if (outcome.unchecked++ == 0) outcome.first_reason = why;
}

void check_sub(AuditReport& report, const CommRef& ref, const json& op, size_t index,
               std::map<std::string, RuleOutcome>& outcomes) {
  const json& sub = op["subs"][index];
  SubCounters counters;
  std::string why;
  if (!sub.is_object() || !read_sub(sub, &counters, &why)) return note_unchecked(outcomes, why);
  if (counters.transport != "net" && counters.transport != "p2p" && counters.transport != "shm")
    return note_unchecked(outcomes, counters.transport + " subs advance their counters per group");
  for (const Violation& violation : violations_of(counters)) {
    ++outcomes[violation.rule].fired;
    report.fire(violation.rule, {ref}, sub_label(op, index, counters) + ": " + violation.what, sub_evidence(op, sub));
  }
}

}  // namespace

void check_proxy_counters(AuditReport& report, const CommRef& ref) {
  std::map<std::string, RuleOutcome> outcomes = {{"proxy-counters-out-of-order", {}}, {"proxy-counter-past-nsteps", {}}};
  Field ops = comm_field(*ref.comm, "proxy_ops");
  if (!ops.known() || !ops.value->is_array()) {
    for (const auto& [rule, outcome] : outcomes) report.not_checked(rule, {ref}, ops.known() ? "proxy_ops is not a list" : ops.why);
    return;
  }
  for (const json& op : *ops.value) {
    const json state = op.is_object() ? op.value("state", json()) : json();
    if (!state.is_number_integer()) {
      note_unchecked(outcomes, "state of proxy op " + (op.is_object() ? op.value("address", std::string("?")) : "?") + " unavailable");
      continue;
    }
    if (state.get<int64_t>() != kProxyOpProgress || !op.contains("subs") || !op["subs"].is_array()) continue;
    for (size_t index = 0; index < op["subs"].size(); ++index) check_sub(report, ref, op, index, outcomes);
  }
  for (const auto& [rule, outcome] : outcomes) {
    if (outcome.unchecked > 0)
      report.not_checked(rule, {ref}, std::to_string(outcome.unchecked) + " proxy sub(s): " + outcome.first_reason);
    else if (outcome.fired == 0)
      report.passed(rule);
  }
}

}  // namespace nsc::audit
