// Rules over one communicator's health flags and the CUDA work it still holds
// (NCCL 2.28.9 init.cc: ncclCommAbort, ncclCommRevoke, ncclCommDestroy, commDestroySync).
#include "audit/audit_report.h"

namespace nsc::audit {
namespace {

using nlohmann::json;

// A flag the NCCL version does not have ("struct ncclComm has no member revokedFlag": revoke
// came with 2.28) cannot be set: false. Unreadable memory stays unknown.
std::optional<bool> flag_absent_in_version_is_false(const json& comm, const std::string& path, std::string* why) {
  std::optional<bool> flag = comm_flag(comm, path, why);
  if (!flag && why->find("has no member") != std::string::npos) return false;
  return flag;
}

json health_evidence(const json& comm) {
  const json& health = comm.contains("health") ? comm["health"] : json();
  json evidence = json::object();
  for (const char* key : {"abort_flag", "destroy_flag", "revoked", "finalize_called", "async_result", "init_state"})
    if (health.is_object() && health.contains(key)) evidence[key] = health[key];
  return evidence;
}

void not_checked_both(AuditReport& report, const CommRef& ref, const std::string& why) {
  report.not_checked("aborted-comm-not-destroyed", {ref}, why);
  report.not_checked("abort-not-reclaimed", {ref}, why);
}

// ncclCommAbort sets the abort flag and destroyFlag together, ncclCommRevoke the abort flag and
// revokedFlag. A flag set with neither came from another comm (a splitShare child shares its
// parent's flag; a child still initializing gets it through childAbortFlag): every operation on
// this comm fails, and nothing was called that will free it.
void check_abort_flag(AuditReport& report, const CommRef& ref) {
  const json& comm = *ref.comm;
  std::string why;
  std::optional<bool> aborted = comm_flag(comm, "health.abort_flag", &why);
  if (!aborted) return not_checked_both(report, ref, why);
  if (!*aborted) {
    report.passed("aborted-comm-not-destroyed");
    report.passed("abort-not-reclaimed");
    return;
  }
  std::optional<bool> destroyed = comm_flag(comm, "health.destroy_flag", &why);
  if (!destroyed) return not_checked_both(report, ref, why);
  if (*destroyed) {
    report.passed("aborted-comm-not-destroyed");
    report.fire("abort-not-reclaimed", {ref},
                "abort flag and destroyFlag set: ncclCommAbort/Destroy began, the comm is not freed yet "
                "(its teardown waits for the GPU or for the other comms of this process)",
                health_evidence(comm));
    return;
  }
  report.passed("abort-not-reclaimed");
  std::optional<bool> revoked = flag_absent_in_version_is_false(comm, "health.revoked", &why);
  if (!revoked) return report.not_checked("aborted-comm-not-destroyed", {ref}, why);
  if (*revoked) return report.passed("aborted-comm-not-destroyed");  // a revoke in progress
  report.fire("aborted-comm-not-destroyed", {ref},
              "abort flag set but neither destroyFlag nor revokedFlag: no ncclCommAbort/Destroy/Revoke "
              "was called on this comm, so nothing will free it",
              health_evidence(comm));
}

// ncclCommRevoke leaves the comm for the user to destroy (it sets finalizeCalled itself).
void check_revoked(AuditReport& report, const CommRef& ref) {
  const json& comm = *ref.comm;
  std::string why;
  std::optional<bool> revoked = flag_absent_in_version_is_false(comm, "health.revoked", &why);
  if (!revoked) return report.not_checked("revoked-comm-not-destroyed", {ref}, why);
  if (!*revoked) return report.passed("revoked-comm-not-destroyed");
  std::optional<bool> destroyed = comm_flag(comm, "health.destroy_flag", &why);
  if (!destroyed) return report.not_checked("revoked-comm-not-destroyed", {ref}, why);
  if (*destroyed) return report.passed("revoked-comm-not-destroyed");
  report.fire("revoked-comm-not-destroyed", {ref},
              "revoked (ncclCommRevoke) but not destroyed: call ncclCommDestroy on it", health_evidence(comm));
}

bool is_failure(const std::string& result) { return result != "ncclSuccess" && result != "ncclInProgress"; }

// What ncclCommGetAsyncError returns (init.cc): the comm's asyncResult, else its proxy thread's
// (a peer's closed socket lands there). Either failed: every later call on the comm returns it.
// ncclInProgress is a non-blocking call still running.
void check_async_result(AuditReport& report, const CommRef& ref) {
  const char* rule = "comm-async-error";
  std::string unknown;
  for (auto [path, what] : {std::pair{"health.async_result", "asyncResult"},
                            std::pair{"health.proxy_async_result", "proxyState->asyncResult"}}) {
    Field result = comm_field(*ref.comm, path);
    if (!result.known() || !result.value->is_string()) {
      if (unknown.empty()) unknown = result.known() ? std::string(path) + " is not a name" : result.why;
      continue;
    }
    std::string name = result.value->get<std::string>();
    if (!is_failure(name)) continue;
    json evidence = health_evidence(*ref.comm);
    evidence["proxy_async_result"] = ref.comm->contains("health") ? (*ref.comm)["health"].value("proxy_async_result", json()) : json();
    return report.fire(rule, {ref}, std::string(what) + " is " + name + ": the communicator has failed", evidence);
  }
  if (!unknown.empty()) return report.not_checked(rule, {ref}, unknown);
  report.passed(rule);
}

// A list of the comm's `cuda` section, or why it is unavailable.
Field cuda_list(const json& comm, const char* key) {
  Field field = comm_field(comm, std::string("cuda.") + key);
  if (field.known() && !field.value->is_array()) {
    field.value = nullptr;
    field.why = std::string("cuda.") + key + " is not a list";
  }
  return field;
}

}  // namespace

void check_comm_health(AuditReport& report, const CommRef& comm) {
  check_abort_flag(report, comm);
  check_revoked(report, comm);
  check_async_result(report, comm);
}

// commDestroySync synchronizes the comm's streams, then waits for its pending event callbacks
// and reclaims its launched plans before the comm is freed (NCCL init.cc): a destroyed comm still
// holding either has not passed that synchronize, so its teardown waits for that GPU work (an
// inference, said in the finding). The planner's user streams count only inside an open group:
// after a group NCCL leaves that list in place, in scoped memory it already popped, until the
// next group resets the planner (group.h), so outside a group it names the last group's streams.
void check_destroyed_comm_cuda_work(AuditReport& report, const CommRef& ref) {
  const json& comm = *ref.comm;
  const char* rule = "destroyed-comm-holds-cuda-work";
  std::string why;
  std::optional<bool> destroyed = comm_flag(comm, "health.destroy_flag", &why);
  if (!destroyed) return report.not_checked(rule, {ref}, why);
  if (!*destroyed) return report.passed(rule);
  Field events = cuda_list(comm, "pending_event_callbacks");
  Field plans = comm_field(comm, "launched.plans_awaiting_reclaim");
  std::optional<bool> in_group = comm_flag(comm, "planned.in_group", &why);
  Field streams = cuda_list(comm, "user_streams");
  size_t event_count = events.known() ? events.value->size() : 0;
  int64_t plan_count = plans.known() && plans.value->is_number_integer() ? plans.value->get<int64_t>() : 0;
  size_t stream_count = in_group.value_or(false) && streams.known() ? streams.value->size() : 0;
  if (event_count == 0 && plan_count == 0 && stream_count == 0) {
    if (!events.known()) return report.not_checked(rule, {ref}, events.why);
    if (!plans.known()) return report.not_checked(rule, {ref}, plans.why);
    return report.passed(rule);
  }
  json evidence = health_evidence(comm);
  evidence["pending_event_callbacks"] = events.known() ? *events.value : json(nullptr);
  evidence["plans_awaiting_reclaim"] = plans.known() ? *plans.value : json(nullptr);
  evidence["user_streams_of_open_group"] = stream_count > 0 ? *streams.value : json::array();
  for (const char* stream : {"device_stream", "host_stream"}) {
    Field handle = comm_field(comm, std::string("cuda.") + stream + ".stream");
    evidence[stream] = handle.known() ? *handle.value : json(nullptr);
  }
  report.fire(rule, {ref},
              "destroyFlag set while the comm still holds " + std::to_string(event_count) +
                  " pending event callback(s), " + std::to_string(plan_count) + " launched plan(s) not reclaimed and " +
                  std::to_string(stream_count) +
                  " user stream(s) of an open group: its teardown has not passed the stream synchronize, so it "
                  "waits for that GPU work (inferred from NCCL's teardown order)",
              evidence);
}

}  // namespace nsc::audit
