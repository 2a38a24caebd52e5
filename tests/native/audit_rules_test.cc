// Every audit rule on synthetic ncclscope.state/1 documents (one healthy pair of ranks, then
// one field changed per case), and the proxy rule end to end on synthetic memory: a decoded
// communicator whose proxy counters NCCL could not have written.
#define BOOST_TEST_MODULE audit_rules
#include <boost/test/unit_test.hpp>

#include "audit/audit.h"
#include "audit/audit_text.h"
#include "nccl/comm_decoder.h"
#include "support/synthetic.h"

using nlohmann::json;
using nsc::audit::AuditInput;
using nsc::audit::build_audit_document;

namespace {

constexpr const char* kHash = "0x6db0a96d9cb7fc37";

json healthy_comm(int rank, int nranks = 2) {
  return {{"address", "0x5500000" + std::to_string(rank) + "0"},
          {"comm_hash", kHash},
          {"rank", rank},
          {"nranks", nranks},
          {"seq_launched", {{"Broadcast", 0}, {"Reduce", 0}, {"AllGather", 1}, {"ReduceScatter", 0}, {"AllReduce", 4}}},
          {"health", {{"async_result", "ncclSuccess"}, {"abort_flag", false}, {"destroy_flag", false},
                      {"init_state", "ncclSuccess"}, {"finalize_called", false}, {"revoked", false},
                      {"proxy_async_result", "ncclSuccess"}}},
          {"proxy_ops", json::array()},
          {"planned", {{"unlaunched_plans", 0}}},
          {"cuda", {{"pending_event_callbacks", json::array()},
                    {"user_streams", json::array()},
                    {"device_stream", {{"stream", "0x5a000010"}}},
                    {"registrations", {{"page_size", 4096}, {"buffers", json::array()}}},
                    {"p2p_transport", json::array()}}},
          {"unavailable", json::object()},
          {"warnings", json::array()}};
}

json state_document(json comms) {
  return {{"schema", "ncclscope.state/1"}, {"target", {{"kind", "core"}, {"pid", 100}}},
          {"communicators", std::move(comms)}, {"errors", json::array()}};
}

// Rank 0 and rank 1 of one comm, each in its own process.
std::vector<AuditInput> healthy_pair() {
  return {{"rank0.core", "core", state_document(json::array({healthy_comm(0)}))},
          {"rank1.core", "core", state_document(json::array({healthy_comm(1)}))}};
}

json& comm_of(std::vector<AuditInput>& inputs, size_t input) { return inputs[input].document["communicators"][0]; }

std::vector<json> findings_of(const json& audit, const std::string& rule) {
  std::vector<json> out;
  for (const json& finding : audit["findings"])
    if (finding["rule"] == rule) out.push_back(finding);
  return out;
}

std::vector<json> not_checked_of(const json& audit, const std::string& rule) {
  std::vector<json> out;
  for (const json& entry : audit["not_checked"])
    if (entry["rule"] == rule) out.push_back(entry);
  return out;
}

json rule_row(const json& audit, const std::string& rule) {
  for (const json& row : audit["rules"])
    if (row["id"] == rule) return row;
  return nullptr;
}

json net_sub(bool send, int nsteps, int posted, int received, int transmitted, int done) {
  return {{"channel", 0}, {"peer", 1}, {"nsteps", nsteps}, {"posted", posted}, {"received", received},
          {"transmitted", transmitted}, {"done", done}, {"send", send}, {"transport", "net"}};
}

json proxy_op(int state, json subs) {
  return {{"address", "0x7000"}, {"op_count", 3}, {"collective", "AllReduce"}, {"state", state},
          {"nsubs", subs.size()}, {"subs", std::move(subs)}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(healthy_pair_passes_every_rule) {
  json audit = build_audit_document(healthy_pair());
  BOOST_TEST(audit["schema"] == "ncclscope.audit/1");
  BOOST_TEST(audit["findings"].empty());
  BOOST_TEST(audit["not_checked"].empty(), audit["not_checked"].dump());
  for (const json& rule : audit["rules"]) {
    bool per_rank = rule["scope"] == "communicator";
    BOOST_TEST(rule["passed"] == (per_rank ? 2 : 1), rule.dump());
  }
  BOOST_TEST(nsc::audit::audit_exit_code(audit) == 0);
}

BOOST_AUTO_TEST_CASE(abort_flag_with_no_destroy_or_revoke_is_an_error) {
  auto inputs = healthy_pair();
  comm_of(inputs, 1)["health"]["abort_flag"] = true;
  json audit = build_audit_document(inputs);
  auto fired = findings_of(audit, "aborted-comm-not-destroyed");
  BOOST_REQUIRE(fired.size() == 1u);
  BOOST_TEST(fired[0]["severity"] == "error");
  BOOST_TEST(fired[0]["where"][0]["rank"] == 1);
  BOOST_TEST(fired[0]["where"][0]["input_name"] == "rank1.core");
  BOOST_TEST(fired[0]["evidence"]["abort_flag"] == true);
  BOOST_TEST(fired[0]["evidence"]["destroy_flag"] == false);
  BOOST_TEST(nsc::audit::audit_exit_code(audit) == 1);
}

BOOST_AUTO_TEST_CASE(abort_with_destroy_flag_is_an_abort_not_reclaimed) {
  auto inputs = healthy_pair();
  comm_of(inputs, 0)["health"]["abort_flag"] = true;
  comm_of(inputs, 0)["health"]["destroy_flag"] = true;
  json audit = build_audit_document(inputs);
  BOOST_TEST(findings_of(audit, "aborted-comm-not-destroyed").empty());
  auto fired = findings_of(audit, "abort-not-reclaimed");
  BOOST_REQUIRE(fired.size() == 1u);
  BOOST_TEST(fired[0]["severity"] == "warning");
  BOOST_TEST(nsc::audit::audit_exit_code(audit) == 0);  // a warning only
}

BOOST_AUTO_TEST_CASE(revoke_in_progress_and_revoked_left_undestroyed) {
  auto inputs = healthy_pair();
  comm_of(inputs, 0)["health"]["abort_flag"] = true;  // ncclCommRevoke sets both, clears abort later
  comm_of(inputs, 0)["health"]["revoked"] = true;
  json audit = build_audit_document(inputs);
  BOOST_TEST(findings_of(audit, "aborted-comm-not-destroyed").empty());
  auto fired = findings_of(audit, "revoked-comm-not-destroyed");
  BOOST_REQUIRE(fired.size() == 1u);
  BOOST_TEST(fired[0]["where"][0]["rank"] == 0);
  comm_of(inputs, 0)["health"]["destroy_flag"] = true;
  BOOST_TEST(findings_of(build_audit_document(inputs), "revoked-comm-not-destroyed").empty());
}

BOOST_AUTO_TEST_CASE(a_flag_the_version_lacks_is_false_an_unread_flag_is_not_checked) {
  auto inputs = healthy_pair();
  json& comm = comm_of(inputs, 0);
  comm["health"]["abort_flag"] = true;
  comm["health"]["revoked"] = nullptr;
  comm["unavailable"]["health.revoked"] = "struct ncclComm has no member revokedFlag";
  BOOST_TEST(findings_of(build_audit_document(inputs), "aborted-comm-not-destroyed").size() == 1u);

  comm["unavailable"]["health.revoked"] = "0x7f0000: not saved in core";
  json audit = build_audit_document(inputs);
  BOOST_TEST(findings_of(audit, "aborted-comm-not-destroyed").empty());
  auto skipped = not_checked_of(audit, "aborted-comm-not-destroyed");
  BOOST_REQUIRE(skipped.size() == 1u);
  BOOST_TEST(skipped[0]["reason"] == "not checked: health.revoked: 0x7f0000: not saved in core");

  comm["health"]["abort_flag"] = nullptr;
  comm["unavailable"]["health.abort_flag"] = "0x20000000: not saved in core";
  audit = build_audit_document(inputs);
  BOOST_TEST(audit["findings"].empty());
  BOOST_TEST(not_checked_of(audit, "abort-not-reclaimed")[0]["reason"] ==
             "not checked: health.abort_flag: 0x20000000: not saved in core");
}

BOOST_AUTO_TEST_CASE(async_error_is_an_error_in_progress_is_not) {
  auto inputs = healthy_pair();
  comm_of(inputs, 1)["health"]["async_result"] = "ncclInProgress";
  BOOST_TEST(findings_of(build_audit_document(inputs), "comm-async-error").empty());
  comm_of(inputs, 1)["health"]["async_result"] = "ncclRemoteError";
  auto fired = findings_of(build_audit_document(inputs), "comm-async-error");
  BOOST_REQUIRE(fired.size() == 1u);
  BOOST_TEST(fired[0]["message"] == "asyncResult is ncclRemoteError: the communicator has failed");
  // The proxy thread's failure (a peer's closed socket) is the comm's too: ncclCommGetAsyncError.
  comm_of(inputs, 1)["health"]["async_result"] = "ncclSuccess";
  comm_of(inputs, 1)["health"]["proxy_async_result"] = "ncclSystemError";
  fired = findings_of(build_audit_document(inputs), "comm-async-error");
  BOOST_REQUIRE(fired.size() == 1u);
  BOOST_TEST(fired[0]["message"] == "proxyState->asyncResult is ncclSystemError: the communicator has failed");
  comm_of(inputs, 1)["health"]["proxy_async_result"] = nullptr;
  comm_of(inputs, 1)["unavailable"]["health.proxy_async_result"] = "proxyState is NULL";
  json audit = build_audit_document(inputs);
  BOOST_TEST(findings_of(audit, "comm-async-error").empty());
  BOOST_TEST(not_checked_of(audit, "comm-async-error")[0]["reason"] ==
             "not checked: health.proxy_async_result: proxyState is NULL");
}

BOOST_AUTO_TEST_CASE(destroyed_comm_with_pending_event_callbacks) {
  auto inputs = healthy_pair();
  json& comm = comm_of(inputs, 0);
  comm["cuda"]["pending_event_callbacks"] = json::array({json{{"address", "0x9000"}, {"event", "0x5b000040"}}});
  BOOST_TEST(findings_of(build_audit_document(inputs), "destroyed-comm-holds-cuda-work").empty());  // not destroyed
  comm["health"]["destroy_flag"] = true;
  auto fired = findings_of(build_audit_document(inputs), "destroyed-comm-holds-cuda-work");
  BOOST_REQUIRE(fired.size() == 1u);
  BOOST_TEST(fired[0]["evidence"]["pending_event_callbacks"][0]["event"] == "0x5b000040");
  BOOST_TEST(fired[0]["evidence"]["device_stream"] == "0x5a000010");
  comm["cuda"]["pending_event_callbacks"] = nullptr;
  comm["unavailable"]["cuda.pending_event_callbacks"] = "0x10: not saved in core";
  json audit = build_audit_document(inputs);
  BOOST_TEST(findings_of(audit, "destroyed-comm-holds-cuda-work").empty());
  BOOST_TEST(not_checked_of(audit, "destroyed-comm-holds-cuda-work").size() == 1u);
}

// NCCL leaves the last group's stream list in the planner until the next group resets it: those
// streams are no work held. Plans launched and not reclaimed are (the teardown reclaims them
// right after its stream synchronize), as are the streams of a group still open.
BOOST_AUTO_TEST_CASE(destroyed_comm_stale_streams_versus_unreclaimed_plans) {
  auto inputs = healthy_pair();
  json& comm = comm_of(inputs, 1);
  comm["health"]["destroy_flag"] = true;
  comm["cuda"]["user_streams"] = json::array({"0x5a0009f0"});
  comm["planned"]["in_group"] = false;
  comm["launched"] = {{"plans_awaiting_reclaim", 0}, {"colls", json::array()}, {"p2p", json::array()}};
  BOOST_TEST(findings_of(build_audit_document(inputs), "destroyed-comm-holds-cuda-work").empty());
  comm["planned"]["in_group"] = true;
  auto open_group = findings_of(build_audit_document(inputs), "destroyed-comm-holds-cuda-work");
  BOOST_REQUIRE(open_group.size() == 1u);
  BOOST_TEST(open_group[0]["evidence"]["user_streams_of_open_group"][0] == "0x5a0009f0");
  comm["planned"]["in_group"] = false;
  comm["launched"]["plans_awaiting_reclaim"] = 5;
  auto unreclaimed = findings_of(build_audit_document(inputs), "destroyed-comm-holds-cuda-work");
  BOOST_REQUIRE(unreclaimed.size() == 1u);
  BOOST_TEST(unreclaimed[0]["evidence"]["plans_awaiting_reclaim"] == 5);
  BOOST_TEST(unreclaimed[0]["evidence"]["user_streams_of_open_group"].empty());
  comm.erase("launched");
  auto audit = build_audit_document(inputs);
  BOOST_TEST(findings_of(audit, "destroyed-comm-holds-cuda-work").empty());
  BOOST_TEST(not_checked_of(audit, "destroyed-comm-holds-cuda-work").size() == 1u);  // plans unknown
}

BOOST_AUTO_TEST_CASE(net_proxy_counters_out_of_order_and_past_nsteps) {
  auto inputs = healthy_pair();
  comm_of(inputs, 0)["proxy_ops"] = json::array({proxy_op(2, {net_sub(false, 8, 6, 4, 5, 2),     // transmitted > received
                                                  net_sub(true, 8, 8, 99, 8, 8),     // send: received unused
                                                  net_sub(false, 8, 10, 10, 10, 9)})});  // done past nsteps
  json audit = build_audit_document(inputs);
  auto order = findings_of(audit, "proxy-counters-out-of-order");
  BOOST_REQUIRE(order.size() == 1u);
  BOOST_TEST(order[0]["message"] == "proxy op 0x7000 sub 0 (net recv): transmitted 5 > received 4");
  BOOST_TEST(order[0]["evidence"]["received"] == 4);
  auto bound = findings_of(audit, "proxy-counter-past-nsteps");
  BOOST_REQUIRE(bound.size() == 1u);
  BOOST_TEST(bound[0]["message"] == "proxy op 0x7000 sub 2 (net recv): done 9 > nsteps 8");
  BOOST_TEST(rule_row(audit, "proxy-counters-out-of-order")["passed"] == 1);  // rank 1
}

BOOST_AUTO_TEST_CASE(proxy_rules_follow_the_transport_and_skip_ops_not_in_progress) {
  auto inputs = healthy_pair();
  json p2p = {{"nsteps", 8}, {"posted", 0}, {"received", 0}, {"transmitted", 4}, {"done", 4}, {"transport", "p2p"}};
  json stale = net_sub(false, 8, 1, 7, 9, 9);  // a pool slot's old counters: the op is only Ready
  comm_of(inputs, 0)["proxy_ops"] = {proxy_op(2, json::array({p2p})), proxy_op(1, json::array({stale}))};
  json audit = build_audit_document(inputs);
  BOOST_TEST(audit["findings"].empty(), audit["findings"].dump());
  json unknown = net_sub(false, 8, 1, 7, 9, 9);
  unknown.erase("transport");
  comm_of(inputs, 0)["proxy_ops"] = json::array({proxy_op(2, json::array({unknown}))});
  audit = build_audit_document(inputs);
  BOOST_TEST(audit["findings"].empty());
  BOOST_TEST(not_checked_of(audit, "proxy-counters-out-of-order")[0]["reason"] ==
             "not checked: 1 proxy sub(s): transport of the sub's connection unavailable");
}

BOOST_AUTO_TEST_CASE(registrations_must_be_page_aligned_and_sorted) {
  auto inputs = healthy_pair();
  json& buffers = comm_of(inputs, 0)["cuda"]["registrations"]["buffers"];
  buffers = {{{"slot", 0}, {"address", "0x8000"}, {"begin", "0x7f0000200000"}, {"end", "0x7f0000600000"}},
             {{"slot", 1}, {"address", "0x8100"}, {"begin", "0x7f0000700100"}, {"end", "0x7f0000800000"}}};
  json audit = build_audit_document(inputs);
  auto fired = findings_of(audit, "registration-not-page-aligned");
  BOOST_REQUIRE(fired.size() == 1u);
  BOOST_TEST(fired[0]["message"] == "registration slot 1 begAddr 0x7f0000700100 is not a multiple of the page size 4096");
  BOOST_TEST(findings_of(audit, "registration-cache-unsorted").empty());
  buffers[1]["begin"] = "0x7f0000100000";
  audit = build_audit_document(inputs);
  BOOST_TEST(findings_of(audit, "registration-not-page-aligned").empty());
  BOOST_TEST(findings_of(audit, "registration-cache-unsorted").size() == 1u);
}

BOOST_AUTO_TEST_CASE(ipc_import_from_a_destroyed_peer) {
  auto inputs = healthy_pair();
  json connector = {{"channel", 0}, {"peer", 1}, {"direction", "send"}, {"connector", 0}, {"type", "P2P_CUMEM"},
                    {"send_mem_ipc", "0x0"}, {"recv_mem_ipc", "0x7f2000000000"}};
  comm_of(inputs, 0)["cuda"]["p2p_transport"] = json::array({connector});
  BOOST_TEST(findings_of(build_audit_document(inputs), "ipc-import-from-dead-peer").empty());
  comm_of(inputs, 1)["health"]["destroy_flag"] = true;
  json audit = build_audit_document(inputs);
  auto fired = findings_of(audit, "ipc-import-from-dead-peer");
  BOOST_REQUIRE(fired.size() == 1u);
  BOOST_TEST(fired[0]["where"][0]["rank"] == 0);
  BOOST_TEST(fired[0]["where"][1]["rank"] == 1);
  BOOST_TEST(fired[0]["evidence"]["imports"][0]["type"] == "P2P_CUMEM");

  comm_of(inputs, 0)["cuda"]["p2p_transport"][0]["type"] = "P2P_INTERMEDIATE";  // exporter unknown here
  BOOST_TEST(findings_of(build_audit_document(inputs), "ipc-import-from-dead-peer").empty());

  std::vector<AuditInput> alone = {inputs[0]};
  alone[0].document["communicators"][0]["cuda"]["p2p_transport"][0]["type"] = "P2P_IPC";
  audit = build_audit_document(alone);
  BOOST_TEST(findings_of(audit, "ipc-import-from-dead-peer").empty());
  BOOST_TEST(not_checked_of(audit, "ipc-import-from-dead-peer")[0]["reason"] ==
             std::string("not checked: exporting rank 1 of comm ") + kHash + " is not among the inputs");
}

BOOST_AUTO_TEST_CASE(registration_imports_name_their_exporter) {
  auto inputs = healthy_pair();
  json import = {{"slot", 0}, {"peer_rank", 0}, {"remote_address", "0x7f1000000000"}, {"legacy_ipc", true}};
  comm_of(inputs, 1)["cuda"]["registrations"]["buffers"] = json::array(
      {json{{"slot", 0}, {"begin", "0x7f0000200000"}, {"end", "0x7f0000400000"}, {"ipc_imports", json::array({import})}}});
  comm_of(inputs, 0)["health"]["destroy_flag"] = true;
  auto fired = findings_of(build_audit_document(inputs), "ipc-import-from-dead-peer");
  BOOST_REQUIRE(fired.size() == 1u);
  BOOST_TEST(fired[0]["evidence"]["exporter_rank"] == 0);
  BOOST_TEST(fired[0]["evidence"]["imports"][0]["legacy_ipc"] == true);
}

BOOST_AUTO_TEST_CASE(seq_counters_in_different_orders) {
  auto inputs = healthy_pair();
  comm_of(inputs, 0)["seq_launched"]["AllReduce"] = 6;  // rank 0 ahead in AllReduce
  comm_of(inputs, 1)["seq_launched"]["AllGather"] = 2;  // rank 1 ahead in AllGather
  json audit = build_audit_document(inputs);
  auto fired = findings_of(audit, "seq-order-inconsistent");
  BOOST_REQUIRE(fired.size() == 1u);
  BOOST_TEST(fired[0]["evidence"]["rank_a"] == 0);
  BOOST_TEST(fired[0]["evidence"]["a_ahead_in"] == json({"AllReduce"}));
  BOOST_TEST(fired[0]["evidence"]["b_ahead_in"] == json({"AllGather"}));
  // Mid-way through a group launch a rank may have counted part of it: left out.
  comm_of(inputs, 1)["planned"]["unlaunched_plans"] = 1;
  audit = build_audit_document(inputs);
  BOOST_TEST(findings_of(audit, "seq-order-inconsistent").empty());
  BOOST_TEST(not_checked_of(audit, "seq-order-inconsistent").size() == 1u);
}

BOOST_AUTO_TEST_CASE(one_rank_behind_is_information_only) {
  auto inputs = healthy_pair();
  comm_of(inputs, 0)["seq_launched"]["AllReduce"] = 5;
  json audit = build_audit_document(inputs);
  BOOST_TEST(findings_of(audit, "seq-order-inconsistent").empty());
  auto fired = findings_of(audit, "seq-spread");
  BOOST_REQUIRE(fired.size() == 1u);
  BOOST_TEST(fired[0]["severity"] == "info");
  BOOST_TEST(fired[0]["evidence"]["spread"]["AllReduce"]["ranks_at_min"] == json({1}));
  BOOST_TEST(nsc::audit::audit_exit_code(audit) == 0);
}

BOOST_AUTO_TEST_CASE(identity_across_inputs) {
  auto inputs = healthy_pair();
  comm_of(inputs, 1)["nranks"] = 4;
  BOOST_TEST(findings_of(build_audit_document(inputs), "comm-identity-inconsistent").size() == 1u);
  inputs = healthy_pair();
  comm_of(inputs, 1)["rank"] = 0;  // two processes claim rank 0
  auto fired = findings_of(build_audit_document(inputs), "comm-identity-inconsistent");
  BOOST_REQUIRE(fired.size() == 1u);
  BOOST_TEST(fired[0]["message"] == "rank 0 is held by 2 inputs (the same rank given twice, or two jobs mixed)");
}

BOOST_AUTO_TEST_CASE(exit_codes_and_text) {
  auto inputs = healthy_pair();
  inputs[1].document["errors"] = {{{"kind", "read"}, {"reason", "not saved in core"}}};
  json audit = build_audit_document(inputs);
  BOOST_TEST(audit["inputs"][1]["read_in_part"] == true);
  BOOST_TEST(nsc::audit::audit_exit_code(audit) == 1);
  BOOST_TEST(nsc::audit::audit_exit_code(build_audit_document({}, {{"x.json", "x.json: corrupt"}})) == 2);
  comm_of(inputs, 0)["health"]["abort_flag"] = true;
  std::string text = nsc::audit::render_audit_text(build_audit_document(inputs));
  BOOST_TEST(text.find("ERROR  aborted-comm-not-destroyed  comm 0x6db0a96d9cb7fc37 rank 0 (rank0.core, 0x550000000)") !=
             std::string::npos, text);
  BOOST_TEST(text.find("READ IN PART") != std::string::npos);
}

// Synthetic memory: the decoder names each sub's transport and direction, and the audit reads them.
namespace {

using nsc::LayoutProfile;
using nsc::ValueKind;
using nsc::test::StructBuilder;
using nsc::test::SyntheticTarget;

constexpr uint64_t kComm = 0x10000010, kProxy = 0x40000000, kArgs = 0x50000000, kConnection = 0x60000000;

LayoutProfile proxy_layout() {
  LayoutProfile layout;
  layout.nccl_version = "2.28.9";
  layout.structs["ncclProxyConnection"] = StructBuilder("ncclProxyConnection")
      .scalar("send", 0, 4, ValueKind::kSigned).scalar("transport", 4, 4, ValueKind::kSigned).build(16);
  layout.structs["ncclProxySubArgs"] = StructBuilder("ncclProxySubArgs")
      .scalar("connection", 0, 8, ValueKind::kPointer, "ncclProxyConnection")
      .scalar("channelId", 8, 4, ValueKind::kSigned).scalar("peer", 12, 4, ValueKind::kSigned)
      .scalar("nsteps", 16, 4, ValueKind::kSigned).scalar("posted", 24, 8, ValueKind::kUnsigned)
      .scalar("received", 32, 8, ValueKind::kUnsigned).scalar("transmitted", 40, 8, ValueKind::kUnsigned)
      .scalar("done", 48, 8, ValueKind::kUnsigned).build(56);
  layout.structs["ncclProxyArgs"] = StructBuilder("ncclProxyArgs")
      .array("subs", 0, 56, 2, ValueKind::kStruct, "ncclProxySubArgs")
      .scalar("nsubs", 112, 4, ValueKind::kSigned).scalar("state", 116, 4, ValueKind::kSigned)
      .scalar("opCount", 120, 8, ValueKind::kUnsigned)
      .scalar("next", 128, 8, ValueKind::kPointer, "ncclProxyArgs")
      .scalar("nextPeer", 136, 8, ValueKind::kPointer, "ncclProxyArgs").build(144);
  layout.structs["ncclProxyProgressState"] = StructBuilder("ncclProxyProgressState")
      .scalar("active", 8, 8, ValueKind::kPointer, "ncclProxyArgs").build(16);
  layout.structs["ncclProxyState"] = StructBuilder("ncclProxyState")
      .scalar("progressState", 0, 16, ValueKind::kStruct, "ncclProxyProgressState").build(16);
  layout.structs["ncclComm"] = StructBuilder("ncclComm")
      .scalar("commHash", 0, 8, ValueKind::kUnsigned).scalar("rank", 8, 4, ValueKind::kSigned)
      .scalar("nRanks", 12, 4, ValueKind::kSigned)
      .scalar("proxyState", 16, 8, ValueKind::kPointer, "ncclProxyState").build(64);
  return layout;
}

// One op in progress with a net receive sub at posted 4, received 6: received ahead of posted.
void fill_proxy_memory(SyntheticTarget& target) {
  target.add_block(kComm, 64);
  target.put<uint64_t>(kComm, 0x6db0a96d9cb7fc37ull);
  target.put<int32_t>(kComm + 8, 0);
  target.put<int32_t>(kComm + 12, 2);
  target.put<uint64_t>(kComm + 16, kProxy);
  target.add_block(kProxy, 16);
  target.put<uint64_t>(kProxy + 8, kArgs);
  target.add_block(kConnection, 16);
  target.put<int32_t>(kConnection, 0);      // receive side
  target.put<int32_t>(kConnection + 4, 2);  // TRANSPORT_NET
  target.add_block(kArgs, 144);
  target.put<uint64_t>(kArgs, kConnection);
  target.put<int32_t>(kArgs + 12, 1);   // peer
  target.put<int32_t>(kArgs + 16, 8);   // nsteps
  target.put<uint64_t>(kArgs + 24, 4);  // posted
  target.put<uint64_t>(kArgs + 32, 6);  // received
  target.put<uint64_t>(kArgs + 40, 2);  // transmitted
  target.put<uint64_t>(kArgs + 48, 2);  // done
  target.put<int32_t>(kArgs + 112, 1);  // nsubs
  target.put<int32_t>(kArgs + 116, 2);  // ncclProxyOpProgress
  target.put<uint64_t>(kArgs + 120, 11);
}

}  // namespace

BOOST_AUTO_TEST_CASE(decoded_memory_with_received_ahead_of_posted) {
  SyntheticTarget target;
  fill_proxy_memory(target);
  json errors = json::array();
  json comm = nsc::decode_communicator(target, proxy_layout(), kComm, &errors);
  BOOST_TEST(comm["proxy_ops"][0]["subs"][0]["transport"] == "net");
  BOOST_TEST(comm["proxy_ops"][0]["subs"][0]["send"] == false);
  json audit = build_audit_document({{"synthetic", "core", state_document(json::array({comm}))}});
  auto fired = findings_of(audit, "proxy-counters-out-of-order");
  BOOST_REQUIRE(fired.size() == 1u);
  BOOST_TEST(fired[0]["message"] == "proxy op 0x50000000 sub 0 (net recv): received 6 > posted 4");
  BOOST_TEST(fired[0]["evidence"]["op_count"] == 11);

  target.put<uint64_t>(kArgs + 32, 3);  // received back below posted: NCCL's own order
  comm = nsc::decode_communicator(target, proxy_layout(), kComm, &errors);
  BOOST_TEST(findings_of(build_audit_document({{"synthetic", "core", state_document(json::array({comm}))}}),
                         "proxy-counters-out-of-order").empty());
}
