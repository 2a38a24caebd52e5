// The kernel view's judgement (native/src/nccl/kernel_view.cc) on synthetic connection
// counters: the cases the real recorded sessions (tests/gdb/test_kernels.py) do not reach.
// Its facts are worded by snapshot/kernels_text.cc: the "text" checks go through the
// document builder (snapshot/kernels_document.cc), which adds them.
#define BOOST_TEST_MODULE kernel_view
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "nccl/kernel_view.h"
#include "snapshot/kernels_document.h"

using nlohmann::json;

namespace {

json connection(const char* direction, json fields) {
  json conn = {{"peer", 1}, {"direction", direction}, {"conn_index", 0}, {"connected", true},
               {"roles", {"ring-prev", "ring-next"}}};
  conn.update(fields);
  return conn;
}

// One communicator on device 0 (devComm 0xd0), channel 0 with the given connections.
json state_with(json connections) {
  // {x} of one json value is that value under clang, an array of it under gcc: normalise.
  if (!connections.is_array()) connections = json::array({connections});
  json channel = {{"id", 0}, {"connections", connections}};
  return {{"communicators",
           {{{"address", "0x10"}, {"comm_hash", "0xabc"}, {"rank", 0}, {"nranks", 2}, {"cuda_dev", 0},
             {"channels", {{{"id", 0}, {"ring", {{"prev", 1}, {"next", 1}}}, {"tree", {{"up", -1}, {"down", {1, -1, -1}}}}}}},
             {"device", {{"dev_comm", "0xd0"}, {"nccl_steps", 8}, {"channels", json::array({channel})}}}}}}};
}

// One kernel on device 0 as the gdb extension passes it: its arguments found (comm
// dev_comm, channel mask 0x1), block 0 running a RING function of this protocol.
json kernel(const char* protocol, const char* dev_comm = "0xd0") {
  json args = {{"found", true}, {"dev_comm", dev_comm}, {"channel_mask", "0x1"}, {"args_shared_offset", "0x400"}};
  json block = {{"block", 0}, {"function", std::string("ncclDevFunc_AllReduce_Sum_f32_RING_") + protocol}};
  return json::array({{{"kernel", 0}, {"device", 0}, {"args", args}, {"blocks", json::array({block})}}});
}

json only_block(const json& view) { return view.at(0).at("blocks").at(0); }

// The kernel view with its sentences, as ncclscope.kernels/1 publishes it.
json worded_view(const json& state, const json& kernels) {
  return nsc::build_kernels_document(state, kernels).at("kernels");
}

}  // namespace

BOOST_AUTO_TEST_CASE(simple_recv_with_exact_head_waits_at_that_step) {
  json state = state_with({connection("recv", {{"head", 40}, {"tail", 40}, {"step_at_launch", 32}}),
                           connection("send", {{"head", 40}, {"tail", 41}, {"step_at_launch", 32}})});
  json block = only_block(worded_view(state, kernel("SIMPLE")));
  BOOST_TEST(block["state"] == "waiting");
  BOOST_TEST(block["waits"][0]["kind"] == "waiting-for-data");
  BOOST_TEST(block["waits"][0]["step"] == 40);
  BOOST_TEST(block["waits"][0]["position_from"] == "head");
  BOOST_TEST(block["waits"][0]["steps_since_launch"] == 8);
  BOOST_TEST(block["waits"][0]["text"] ==
             "waiting for data from rank 1 at step 40 (8 steps received since the kernel started)");
  BOOST_TEST(block["waits"][1]["kind"] == "ready");  // 1 of 8 slots in flight
  BOOST_TEST(block["waits"][1]["text"] == "7 of 8 slots free towards rank 1");
  BOOST_TEST(block["peers"]["tree_down"] == json::array({1}));
}

BOOST_AUTO_TEST_CASE(all_slots_posted_and_unfreed_is_a_slot_wait) {
  json state = state_with({connection("recv", {{"head", 9}, {"tail", 10}}),
                           connection("send", {{"head", 16}, {"tail", 24}, {"step_at_launch", 16}})});
  json view = worded_view(state, kernel("SIMPLE"));
  json block = only_block(view);
  BOOST_TEST(block["waits"][0]["kind"] == "ready");
  BOOST_TEST(block["waits"][0]["text"] == "data from rank 1 for step 9 has arrived");
  BOOST_TEST(block["waits"][1]["kind"] == "waiting-for-slot");
  BOOST_TEST(block["waits"][1]["consumed_step"] == 16);
  BOOST_TEST(block["waits"][1]["in_flight"] == 8);
  BOOST_TEST(block["waits"][1]["text"] ==
             "waiting for rank 1 to free a slot (all 8 posted, rank 1 consumed up to step 16)");
  BOOST_TEST(view[0]["waits"][0]["text"] == "waiting for rank 1 to free a slot (1 of 1 blocks)");
  BOOST_TEST(view[0]["waits"][0]["blocks"] == 1);
}

BOOST_AUTO_TEST_CASE(ll_flags_decide_when_the_head_is_in_the_peers_memory) {
  json arrived_none = {{"base", 6}, {"base_from", "step_at_launch"}, {"arrived_beyond_base", 0}};
  json state = state_with({connection("recv", {{"head", nullptr}, {"step_at_launch", 6}, {"ll", arrived_none}})});
  json block = only_block(worded_view(state, kernel("LL")));
  BOOST_TEST(block["waits"][0]["kind"] == "waiting-for-data");
  BOOST_TEST(block["waits"][0]["step"] == 6);
  BOOST_TEST(block["waits"][0]["text"] ==
             "waiting for data from rank 1 at step 6 (nothing received since the kernel started; head is in rank 1's memory)");
  // Data arrived past the launch step: the receiver's position is unknown, so is the wait.
  json arrived_two = {{"base", 6}, {"base_from", "step_at_launch"}, {"arrived_beyond_base", 2}};
  state = state_with({connection("recv", {{"head", nullptr}, {"step_at_launch", 6}, {"ll", arrived_two}})});
  block = only_block(worded_view(state, kernel("LL")));
  BOOST_TEST(block["state"] == "unknown");
  BOOST_TEST(block["waits"][0]["kind"] == "unknown");
  BOOST_TEST(block["waits"][0]["unknown_reason"] == "position-unreadable");
  BOOST_TEST(block["waits"][0]["text"] == "rank 1 posted 2 steps since the kernel started at step 6; "
                                          "this rank's position (head in rank 1's memory) unreadable");
  // The LL128 flags do not answer for an LL kernel.
  state = state_with({connection("recv", {{"head", nullptr}, {"step_at_launch", 6}, {"ll128", arrived_none}})});
  BOOST_TEST(only_block(nsc::build_kernel_view(state, kernel("LL")))["state"] == "unknown");
}

BOOST_AUTO_TEST_CASE(unreadable_connection_is_unknown_never_waiting) {
  json state = state_with({connection("recv", {{"connected", nullptr}})});
  json block = only_block(worded_view(state, kernel("SIMPLE")));
  BOOST_TEST(block["state"] == "unknown");
  BOOST_TEST(block["waits"][0]["unknown_reason"] == "connection-state-unavailable");
  BOOST_TEST(block["waits"][0]["text"] == "connection state unavailable");
  state = state_with({connection("recv", {{"connected", false}})});
  block = only_block(nsc::build_kernel_view(state, kernel("SIMPLE")));
  BOOST_TEST(block["state"] == "unknown");
  BOOST_TEST(block["reason"] == "no connected connection of this channel decoded");
}

BOOST_AUTO_TEST_CASE(communicator_match_is_exact_or_labelled) {
  json state = state_with(json::array());
  json view = nsc::build_kernel_view(state, kernel("SIMPLE"));
  BOOST_TEST(view[0]["communicator_match"] == "kernel argument comm == ncclComm.devComm");
  view = nsc::build_kernel_view(state, kernel("SIMPLE", "0xffff"));
  BOOST_TEST(view[0]["communicator_match"] == "guess: the only communicator on device 0");
  state["communicators"].push_back(state["communicators"][0]);
  view = nsc::build_kernel_view(state, kernel("SIMPLE", "0xffff"));
  BOOST_TEST(view[0]["communicator"].is_null());
  BOOST_TEST(only_block(view)["state"] == "unknown");
}

BOOST_AUTO_TEST_CASE(garbage_documents_do_not_throw) {
  for (const json& state : {json(nullptr), json(5), json{{"communicators", "x"}},
                            json{{"communicators", {{{"device", 3}, {"cuda_dev", 0}}}}}}) {
    json view = nsc::build_kernel_view(state, kernel("SIMPLE"));
    BOOST_TEST(only_block(view)["state"] == "unknown");
  }
  // Kernels that are not a list of objects (a front end's bad request) give no view, not a throw.
  for (const json& kernels : {json(nullptr), json(5), json("x"), json::array({1, "x", nullptr}), json{{"a", 1}}})
    BOOST_TEST(nsc::build_kernel_view(json::object(), kernels).size() == 0u);
}

// Issue 33 item 4: a resident kernel that is not NCCL's, and the NCCL work of its device.
BOOST_AUTO_TEST_CASE(other_kernels_name_the_kernel_and_the_launched_work_of_its_device) {
  json state = state_with(json::array());
  state["communicators"][0]["seq_launched"] = {{"AllReduce", 4}, {"AllGather", 0}};
  json idle = state["communicators"][0];
  idle.update({{"address", "0x20"}, {"comm_hash", "0xdef"}, {"seq_launched", {{"AllReduce", 0}}}});
  state["communicators"].push_back(idle);  // nothing launched: not listed
  json rows = json::array({{{"kernel", 1}, {"device", 0}, {"grid_dim", "(1,1,1)"}, {"block_dim", "(1,1,1)"},
                            {"status", "Active"}, {"invocation", "void ns::fill<float>(float*, int (*)(int))"}},
                           {{"kernel", 2}, {"device", 3}, {"invocation", "other()"}}});
  json others = nsc::build_kernels_document(state, json::array(), rows).at("other_kernels");
  BOOST_REQUIRE(others.size() == 2);
  BOOST_TEST(others[0]["name"] == "void ns::fill<float>");
  BOOST_TEST(others[0]["stream"].is_null());
  BOOST_REQUIRE(others[0]["queued_behind"].size() == 1);
  BOOST_TEST(others[0]["queued_behind"][0]["comm_hash"] == "0xabc");
  BOOST_TEST(others[0]["queued_behind"][0]["relation"] == "inferred");
  BOOST_TEST(others[0]["text"].get<std::string>().find("comm 0xabc rank 0/2 (0x10) launched AllReduce=4, no kernel of it "
                                                       "resident") != std::string::npos);
  BOOST_TEST(others[1]["queued_behind"].empty());  // device 3: no communicator there
  BOOST_TEST(others[1]["text"].get<std::string>().find("no NCCL work of this process launched on this device") !=
             std::string::npos);
  // A communicator whose NCCL kernel is resident is running, not queued behind the other kernel.
  json with_kernel = nsc::build_kernels_document(state, kernel("SIMPLE"), rows).at("other_kernels");
  BOOST_TEST(with_kernel[0]["queued_behind"].empty());
}
