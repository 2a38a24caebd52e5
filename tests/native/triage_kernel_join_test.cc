// Kernel views (`ncclscope.kernels/1`, cuda-gdb `nccl-kernels --json`) joined with
// triage (issue 6 item 5), on synthetic state documents: evidence on the finding that
// names the waiting rank, the graph edge's kernel reason, a view matching no rank (a
// warning), unknown waits never turned into a culprit, a peer the host view missed
// ("kernel-wait"), hostile views, and loading from files and directories.
#define BOOST_TEST_MODULE triage_kernel_join
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

#include "temp_dir.h"
#include "triage/inputs.h"
#include "triage/kernel_join.h"
#include "triage/triage.h"
#include "triage_synthetic.h"

using nlohmann::json;
using namespace synthetic;

namespace {

json recv_wait(int peer, int64_t step) {
  return {{"direction", "recv"}, {"kind", "waiting-for-data"}, {"peer", peer}, {"step", step},
          {"text", "waiting for data from rank " + std::to_string(peer) + " at step " + std::to_string(step)}};
}

json unknown_recv(int peer) {
  return {{"direction", "recv"}, {"kind", "unknown"}, {"peer", peer},
          {"text", "rank " + std::to_string(peer) + " posted 4 steps since the kernel started at step 24; "
                   "this rank's position (head in rank " + std::to_string(peer) + "'s memory) unreadable"}};
}

// One block per channel, each with `waits`, state derived as the decoder does.
json kernel(const std::string& collective, uint64_t hash, int rank, int nranks, int nblocks, json waits) {
  // {x} of one json value is that value under clang, an array of it under gcc: normalise.
  if (!waits.is_array()) waits = json::array({waits});
  bool waiting = false;
  for (const json& wait : waits) waiting = waiting || wait["kind"].get<std::string>().rfind("waiting", 0) == 0;
  json blocks = json::array();
  for (int b = 0; b < nblocks; ++b)
    blocks.push_back({{"block", b}, {"channel", b}, {"algorithm", "RING"}, {"protocol", "LL"},
                      {"function", "ncclDevFunc_" + collective + "_RING_LL"},
                      {"state", waiting ? "waiting" : "unknown"}, {"waits", waits}});
  return {{"kernel", 0}, {"device", rank % 8},
          {"nccl", {{"collective", collective}, {"op", "Sum"}, {"datatype", "f32"}, {"algorithm", "RING"},
                    {"protocol", "LL"}, {"kernel_name", "ncclDevKernel_" + collective + "_Sum_f32_RING_LL"}}},
          {"communicator", {{"address", "0x55bff057a010"}, {"comm_hash", nsc::hex(hash)}, {"rank", rank}, {"nranks", nranks}}},
          {"communicator_match", "kernel argument comm == ncclComm.devComm"},
          {"channel_mask", "0x3"}, {"waits", json::array()}, {"blocks", blocks}};
}

// A process's view: its kernels and the communicator it holds.
json view(int pid, uint64_t hash, int rank, int nranks, json kernels) {
  if (!kernels.is_array()) kernels = json::array({kernels});  // see kernel()
  return {{"schema", "ncclscope.kernels/1"},
          {"target", {{"kind", "callback"}, {"pid", pid}}},
          {"nccl", {{"version", "2.28.9"}}},
          {"kernels", std::move(kernels)},
          {"communicators", {{{"address", "0x55bff057a010"}, {"comm_hash", nsc::hex(hash)}, {"rank", rank},
                              {"nranks", nranks}, {"cuda_dev", rank % 8}}}},
          {"other_kernels", json::array()},
          {"errors", json::array()}};
}

std::vector<nsc::TriageInput> with_views(const std::vector<json>& documents, const std::vector<json>& views) {
  std::vector<nsc::TriageInput> inputs = as_inputs(documents);
  for (size_t i = 0; i < views.size(); ++i)
    inputs.push_back({"view-" + std::to_string(i) + ".kernels.json", "snapshot", views[i], ""});
  return inputs;
}

std::vector<const json*> findings_of(const json& report, const std::string& kind) {
  std::vector<const json*> out;
  for (const json& comm : report["communicators"])
    for (const json& finding : comm["findings"])
      if (finding["kind"] == kind) out.push_back(&finding);
  return out;
}

bool has_evidence(const json& finding, const std::string& text) {
  for (const json& line : finding["evidence"])
    if (line.get<std::string>() == text) return true;
  return false;
}

// A non-NCCL kernel row as nccl-kernels writes it (cuda-gdb 13's `info cuda kernels` columns).
json spin_kernel(int device) {
  return {{"kernel", 1}, {"device", device}, {"grid", 1201}, {"status", "Active"}, {"grid_dim", "(1,1,1)"},
          {"block_dim", "(1,1,1)"}, {"invocation", "at::cuda::(anonymous namespace)::spin_kernel()"},
          {"name", "at::cuda::(anonymous namespace)::spin_kernel"}, {"stream", nullptr},
          {"unavailable", {{"stream", "cuda-gdb's info cuda kernels shows no stream"}}}, {"queued_behind", json::array()}};
}

// 4 ranks launched AllReduce 4 times; ranks 0, 1, 3 have it in flight (receiving, nothing
// arrived), rank 2 (`busy`) has nothing in flight: its GPU never reached it. Every host
// thread waits on the GPU. `launched_by_busy` AllReduces on rank 2.
std::vector<json> gpu_spin(int busy, int64_t launched_by_busy = 4) {
  std::vector<json> documents;
  for (int rank = 0; rank < 4; ++rank) {
    json doc = rank_document(rank, 4, {0, 0, 0, 0, rank == busy ? launched_by_busy : 4}, waiting_thread(0));
    // Its GPU entered the ring: it sent 4 steps to its next, received nothing from its previous.
    json op = proxy_op("AllReduce", "ncclPatternRing", (rank + 3) % 4);
    op["subs"][0]["send"] = false;
    json sent = op["subs"][0];
    sent.update({{"send", true}, {"peer", (rank + 1) % 4}, {"transmitted", 4}});
    op["subs"].push_back(sent);
    if (rank != busy) doc["communicators"][0]["proxy_ops"].push_back(op);
    documents.push_back(doc);
  }
  return documents;
}

}  // namespace

BOOST_AUTO_TEST_CASE(busy_gpu_outside_nccl_is_the_culprit) {
  json busy_view = view(5202, kWorldHash, 2, 4, json::array());
  busy_view["other_kernels"] = json::array({spin_kernel(2)});
  json without = nsc::triage_documents(as_inputs(gpu_spin(2)), {});
  BOOST_TEST(without["verdict"] == "incomplete");  // host state alone: work in flight, nobody behind
  json report = nsc::triage_documents(with_views(gpu_spin(2), {busy_view}), {});
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(report["culprit_ranks"] == json::array({2}));
  auto busy = findings_of(report, "gpu-busy");
  BOOST_REQUIRE(busy.size() == 1);
  BOOST_TEST((*busy[0])["collective"] == "AllReduce");
  BOOST_TEST((*busy[0])["seq"] == 4);
  BOOST_TEST((*busy[0])["waiting_ranks"] == json::array({0, 1, 3}));
  BOOST_TEST(has_evidence(*busy[0], "kernel view, rank 2: GPU 2 runs at::cuda::(anonymous namespace)::spin_kernel "
                                    "(grid (1,1,1), block (1,1,1), stream unavailable: cuda-gdb does not show it); "
                                    "no NCCL kernel of this communicator resident"));
  BOOST_TEST(findings_of(report, "in-flight-consistent").empty());
  std::string headline = report["headline"]["text"];
  BOOST_TEST(headline.find("rank 2's GPU runs at::cuda::(anonymous namespace)::spin_kernel; its AllReduce #4") !=
             std::string::npos, headline);
  BOOST_TEST(headline.find("never started") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_kernel_waiting_on_the_busy_rank_is_its_evidence) {
  // Rank 3's AllReduce kernel waits for data from rank 2, whose GPU runs the spin kernel: one
  // finding (gpu-busy) with rank 3's kernel wait as its evidence and edge reason, no kernel-wait.
  json busy_view = view(5202, kWorldHash, 2, 4, json::array());
  busy_view["other_kernels"] = json::array({spin_kernel(2)});
  json waiter = view(5203, kWorldHash, 3, 4, {kernel("AllReduce", kWorldHash, 3, 4, 2, {recv_wait(2, 16)})});
  json report = nsc::triage_documents(with_views(gpu_spin(2), {busy_view, waiter}), {});
  BOOST_TEST(report["culprit_ranks"] == json::array({2}));
  BOOST_TEST(findings_of(report, "kernel-wait").empty());
  auto busy = findings_of(report, "gpu-busy");
  BOOST_REQUIRE(busy.size() == 1);
  BOOST_TEST((*busy[0])["waiting_ranks"] == json::array({0, 1, 3}));
  BOOST_REQUIRE((*busy[0])["kernel_waits"].size() == 1);
  BOOST_TEST((*busy[0])["kernel_waits"][0]["text"] ==
             "rank 3 waits for data from rank 2 at step 16 on channels 0,1 (2 of 2 blocks)");
}

BOOST_AUTO_TEST_CASE(busy_gpu_names_why_a_data_wait_never_got_data) {
  // Rank 2 holds its send to rank 3 in flight with nothing sent: host state says data-wait
  // ("its GPU has not reached it", blames nobody); rank 2's view says why: gpu-busy, culprit.
  std::vector<json> documents = gpu_spin(2);
  json send = proxy_op("AllReduce", "ncclPatternRing", 3);
  send["subs"][0].update({{"send", true}, {"transmitted", 0}, {"done", 0}});
  documents[2]["communicators"][0]["proxy_ops"].push_back(send);
  json without = nsc::triage_documents(as_inputs(documents), {});
  BOOST_TEST(!findings_of(without, "data-wait").empty());
  BOOST_TEST(without["culprit_ranks"].empty());
  json busy_view = view(5202, kWorldHash, 2, 4, json::array());
  busy_view["other_kernels"] = json::array({spin_kernel(2)});
  json report = nsc::triage_documents(with_views(documents, {busy_view}), {});
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(report["culprit_ranks"] == json::array({2}));
  BOOST_TEST(findings_of(report, "gpu-busy").size() == 1);
}

BOOST_AUTO_TEST_CASE(busy_gpu_on_another_device_or_a_rank_behind_is_not_gpu_busy) {
  // The kernel runs on device 5, the communicator on device 2: nothing queued behind it there.
  json elsewhere = view(5202, kWorldHash, 2, 4, json::array());
  elsewhere["other_kernels"] = json::array({spin_kernel(5)});
  json report = nsc::triage_documents(with_views(gpu_spin(2), {elsewhere}), {});
  BOOST_TEST(findings_of(report, "gpu-busy").empty());
  BOOST_TEST(report["verdict"] == "incomplete");
  // Rank 2 launched only 3: the host's missing-collective blames it; the kernel is its evidence.
  json behind = view(5202, kWorldHash, 2, 4, json::array());
  behind["other_kernels"] = json::array({spin_kernel(2)});
  report = nsc::triage_documents(with_views(gpu_spin(2, 3), {behind}), {});
  BOOST_TEST(findings_of(report, "gpu-busy").empty());
  auto missing = findings_of(report, "missing-collective");
  BOOST_REQUIRE(missing.size() == 1);
  BOOST_TEST(report["culprit_ranks"] == json::array({2}));
  BOOST_TEST(has_evidence(*missing[0], "kernel view, rank 2: no NCCL kernel resident on its GPU; it runs "
                                       "at::cuda::(anonymous namespace)::spin_kernel (grid (1,1,1), block (1,1,1), "
                                       "stream unavailable: cuda-gdb does not show it)"));
}

BOOST_AUTO_TEST_CASE(waiting_rank_kernel_joins_the_missing_collective) {
  // Rank 1 never launched AllGather #1; rank 0's kernel waits for its data on both channels.
  std::vector<json> documents = missing_collective(2, 1);
  json rank0 = view(4242, kWorldHash, 0, 2, {kernel("AllGather", kWorldHash, 0, 2, 2, {recv_wait(1, 8)})});
  json rank1 = view(4243, kWorldHash, 1, 2, json::array());
  json report = nsc::triage_documents(with_views(documents, {rank0, rank1}), {});
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(report["culprit_ranks"] == json::array({1}));
  auto missing = findings_of(report, "missing-collective");
  BOOST_REQUIRE(missing.size() == 1);
  BOOST_TEST(has_evidence(*missing[0], "kernel view, rank 0: AllGather kernel (ncclDevFunc_AllGather_RING_LL, RING LL): "
                                       "2 of 2 blocks waiting for data from rank 1 at step 8 (channels 0,1)"));
  BOOST_TEST(has_evidence(*missing[0], "kernel view, rank 1: no NCCL kernel resident on its GPU"));
  // The finding and its graph edge carry the device-side reason: rank 0 -> rank 1.
  json expected_wait = {{"rank", 0}, {"peer", 1}, {"kind", "waiting-for-data"}, {"collective", "AllGather"},
                        {"blocks", 2}, {"of_blocks", 2}, {"channels", {0, 1}}, {"steps", {8}},
                        {"wait", "waits for data from rank 1 at step 8 on channels 0,1 (2 of 2 blocks)"},
                        {"text", "rank 0 waits for data from rank 1 at step 8 on channels 0,1 (2 of 2 blocks)"}};
  BOOST_TEST((*missing[0])["kernel_waits"] == json::array({expected_wait}));
  const json& edges = report["graph"]["edges"];
  BOOST_REQUIRE(edges.size() == 1);
  BOOST_TEST(edges[0]["from"] == json::array({0}));
  BOOST_TEST(edges[0]["to"] == json::array({1}));
  BOOST_TEST(edges[0]["kernel"] == json::array({expected_wait}));
  BOOST_TEST(findings_of(report, "kernel-wait").empty());  // the host view already names rank 1
  // The verdict mentions the kernel evidence; the report lists both views, joined by comm and rank.
  std::string summary = report["summary"];
  BOOST_TEST(summary.find(" Kernel view: rank 0: AllGather kernel (RING LL): 2 of 2 blocks waiting for data from "
                          "rank 1 at step 8 (channels 0,1); rank 1: no NCCL kernel resident.") != std::string::npos);
  const json& views = report["kernel_views"]["inputs"];
  BOOST_REQUIRE(views.size() == 2);
  BOOST_TEST(views[0]["joined_to"]["world_rank"] == 0);
  BOOST_TEST(views[0]["joined_to"]["pid_agrees"] == false);  // 4242 vs the snapshot's 1000
  BOOST_TEST(views[1]["joined_to"]["world_rank"] == 1);
  BOOST_TEST(report["kernel_views"]["warnings"].empty());
  // Graph nodes say what their GPU runs.
  BOOST_TEST(report["graph"]["nodes"][1]["waits_in"].back()["text"] == "no NCCL kernel resident (kernel view)");
  // Text: evidence, the edge's kernel line, the views section and the input count.
  std::string text = nsc::render_triage_text(report);
  BOOST_TEST(text.find("      kernel: rank 0 waits for data from rank 1 at step 8 on channels 0,1 (2 of 2 blocks)\n") != std::string::npos);
  BOOST_TEST(text.find("  view-1.kernels.json -> rank 1 (pid 4243 in the view, 1001 in rank-1.json: joined by communicator "
                       "and rank): no NCCL kernel resident\n") != std::string::npos);
  BOOST_TEST(text.find("Inputs: 2 usable, 0 unusable; kernel views: 2 joined, 0 not joined") != std::string::npos);
  BOOST_TEST(nsc::triage_exit_code(report) == 0);
}

BOOST_AUTO_TEST_CASE(view_of_no_rank_is_a_warning_and_changes_nothing_else) {
  std::vector<json> documents = missing_collective(2, 1);
  json without = nsc::triage_documents(as_inputs(documents), {});
  // Rank 5 of the world communicator, and a communicator nobody holds.
  json stray = view(77, kWorldHash, 5, 8, {kernel("AllGather", kWorldHash, 5, 8, 2, {recv_wait(4, 3)})});
  json other = view(78, kSubHash, 0, 2, json::array());
  json report = nsc::triage_documents(with_views(documents, {stray, other}), {});
  BOOST_TEST(report["kernel_views"]["warnings"] ==
             json::array({"view-0.kernels.json: no input holds communicator 0x6db0a96d9cb7fc37 rank 5; kernel view not joined",
                          "view-1.kernels.json: no input holds communicator 0x1234abcd5678ef01 rank 0; kernel view not joined"}));
  BOOST_TEST(report["errors"].empty());
  BOOST_TEST(nsc::triage_exit_code(report) == 0);
  BOOST_TEST(report["communicators"] == without["communicators"]);
  BOOST_TEST(report["graph"]["edges"] == without["graph"]["edges"]);
  BOOST_TEST(report["verdict"] == without["verdict"]);
  BOOST_TEST(report["inputs"][2]["status"] == "not-joined");
  std::string text = nsc::render_triage_text(report);
  BOOST_TEST(text.find("  warning: view-0.kernels.json: no input holds communicator 0x6db0a96d9cb7fc37 rank 5") != std::string::npos);
  BOOST_TEST(text.find("kernel views: 0 joined, 2 not joined") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(no_view_no_kernel_key) {
  json report = nsc::triage_documents(as_inputs(missing_collective(2, 1)), {});
  BOOST_TEST(!report.contains("kernel_views"));
  BOOST_TEST(report["communicators"][0]["findings"][0].contains("kernel_waits") == false);
  BOOST_TEST(report["graph"]["edges"][0].contains("kernel") == false);
  BOOST_TEST(nsc::render_triage_text(report).find("ernel") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_waits_are_shown_never_culprits) {
  // Counters agree on 2 ranks (no host culprit); rank 0's kernel waits are unknown.
  std::vector<json> documents = no_hang(2);
  json rank0 = view(1000, kWorldHash, 0, 2, {kernel("AllReduce", kWorldHash, 0, 2, 2, {unknown_recv(1)})});
  json report = nsc::triage_documents(with_views(documents, {rank0}), {});
  BOOST_TEST(report["verdict"] == "no-hang");
  BOOST_TEST(report["culprit_ranks"].empty());
  BOOST_TEST(findings_of(report, "kernel-wait").empty());
  BOOST_TEST(findings_of(report, "no-hang-evident").size() == 1);
  BOOST_TEST(report["graph"]["edges"].empty());
  const json& kernel_json = report["kernel_views"]["inputs"][0]["kernels"][0];
  BOOST_TEST(kernel_json["waits"].empty());
  BOOST_TEST(kernel_json["unknown"][0]["blocks"] == 2);
  std::string expected = "AllReduce kernel (ncclDevFunc_AllReduce_RING_LL, RING LL): 2 of 2 blocks: wait unknown (recv: "
                         "rank 1 posted 4 steps since the kernel started at step 24; this rank's position (head in rank "
                         "1's memory) unreadable) (channels 0,1)";
  BOOST_TEST(kernel_json["text"] == expected);
  BOOST_TEST(kernel_json["joined"] == true);
  BOOST_TEST(report["graph"]["nodes"][0]["waits_in"].back()["text"] == expected);
  BOOST_TEST(report["summary"].get<std::string>().find("Kernel view: rank 0: AllReduce kernel (RING LL): 2 of 2 blocks: "
                                                       "wait unknown (recv: rank 1 posted") != std::string::npos);
  // With a host culprit, unknown waits are evidence on the finding, not a kernel reason on its edge.
  std::vector<json> missing = missing_collective(2, 1);
  json on_missing = view(1000, kWorldHash, 0, 2, {kernel("AllGather", kWorldHash, 0, 2, 2, {unknown_recv(1)})});
  json report2 = nsc::triage_documents(with_views(missing, {on_missing}), {});
  auto finding = findings_of(report2, "missing-collective");
  BOOST_REQUIRE(finding.size() == 1);
  BOOST_TEST(!finding[0]->contains("kernel_waits"));
  BOOST_TEST(!report2["graph"]["edges"][0].contains("kernel"));
  BOOST_TEST((*finding[0])["evidence"].back().get<std::string>().find("2 of 2 blocks: wait unknown (recv: rank 1 posted 4 steps") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(peer_the_host_view_missed_becomes_kernel_wait) {
  // 4 ranks, counters agree (host: no hang evident). On the GPU, rank 2 waits for data from
  // rank 1, and rank 1 waits for data from rank 0: a chain that ends at rank 0.
  std::vector<json> documents = no_hang(4);
  json rank2 = view(1002, kWorldHash, 2, 4, {kernel("AllReduce", kWorldHash, 2, 4, 2, {recv_wait(1, 40)})});
  json rank1 = view(1001, kWorldHash, 1, 4, {kernel("AllReduce", kWorldHash, 1, 4, 2, {recv_wait(0, 40)})});
  json report = nsc::triage_documents(with_views(documents, {rank2, rank1}), {});
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(report["culprit_ranks"] == json::array({0}));
  BOOST_TEST(findings_of(report, "no-hang-evident").empty());
  auto waits = findings_of(report, "kernel-wait");
  BOOST_REQUIRE(waits.size() == 2);  // by peer: rank 0 first
  BOOST_TEST((*waits[0])["waiting_ranks"] == json::array({1}));
  BOOST_TEST((*waits[0])["culprit_ranks"] == json::array({0}));
  BOOST_TEST((*waits[0])["collective"] == "AllReduce");
  BOOST_TEST((*waits[0])["seq"].is_null());
  BOOST_TEST((*waits[1])["waiting_ranks"] == json::array({2}));
  // Rank 1 is waited on here, but the verdict calls it a waiter (of rank 0): never a culprit.
  BOOST_TEST((*waits[1])["waited_on_ranks"] == json::array({1}));
  BOOST_TEST((*waits[1])["culprit_ranks"] == json::array());
  BOOST_TEST((*waits[1])["explained_by"][0]["ranks"] == json::array({1}));
  BOOST_TEST(has_evidence(*waits[1], "kernel view, rank 2: AllReduce kernel (ncclDevFunc_AllReduce_RING_LL, RING LL): "
                                     "2 of 2 blocks waiting for data from rank 1 at step 40 (channels 0,1)"));
  BOOST_TEST(has_evidence(*waits[1], "no host finding explains this wait (host findings on this "
                                     "communicator: none)"));
  // The culprit's own kernel is evidence too: rank 1 is itself waiting on rank 0.
  BOOST_TEST(has_evidence(*waits[1], "kernel view, rank 1: AllReduce kernel (ncclDevFunc_AllReduce_RING_LL, RING LL): "
                                     "2 of 2 blocks waiting for data from rank 0 at step 40 (channels 0,1)"));
  const json& edges = report["graph"]["edges"];
  BOOST_REQUIRE(edges.size() == 2);
  BOOST_TEST(edges[0]["kind"] == "kernel");
  BOOST_TEST(edges[0]["from"] == json::array({1}));
  BOOST_TEST(edges[0]["to"] == json::array({0}));
  BOOST_TEST(edges[0]["kernel"][0]["text"] == "rank 1 waits for data from rank 0 at step 40 on channels 0,1 (2 of 2 blocks)");
  BOOST_TEST(report["graph"]["longest_chain"] == json::array({2, 1, 0}));
  std::string summary = report["summary"];
  BOOST_TEST(summary.find("the AllReduce kernel of rank 1 waits for data from rank 0 at step 40 on channels 0,1 (2 of 2 "
                          "blocks) (kernel view; host state alone did not name this peer).") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(culprit_kernel_waiting_on_its_waiters_is_no_cycle) {
  // Collective mismatch: rank 0 launched AllReduce #4, rank 1 ReduceScatter instead; each kernel
  // waits for the other's data. The host finding already relates them: evidence, not a cycle.
  std::vector<json> documents = {rank_document(0, 2, {0, 0, 0, 0, 4}, waiting_thread(0)),
                                 rank_document(1, 2, {0, 0, 0, 1, 3}, waiting_thread(0))};
  json rank0 = view(1000, kWorldHash, 0, 2, {kernel("AllReduce", kWorldHash, 0, 2, 2, {recv_wait(1, 24)})});
  json rank1 = view(1001, kWorldHash, 1, 2, {kernel("ReduceScatter", kWorldHash, 1, 2, 2, {recv_wait(0, 24)})});
  json report = nsc::triage_documents(with_views(documents, {rank0, rank1}), {});
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(report["culprit_ranks"] == json::array({1}));
  BOOST_TEST(report["graph"]["cycles"].empty());
  BOOST_TEST(findings_of(report, "kernel-wait").empty());
  auto mismatch = findings_of(report, "collective-mismatch");
  BOOST_REQUIRE(mismatch.size() == 1);
  BOOST_TEST(has_evidence(*mismatch[0], "kernel view, rank 1: ReduceScatter kernel (ncclDevFunc_ReduceScatter_RING_LL, "
                                        "RING LL): 2 of 2 blocks waiting for data from rank 0 at step 24 (channels 0,1)"));
  BOOST_TEST((*mismatch[0])["kernel_waits"].size() == 1);
  BOOST_TEST((*mismatch[0])["kernel_waits"][0]["rank"] == 0);
}

BOOST_AUTO_TEST_CASE(absent_peer_named_by_a_kernel_wait_stays_a_suspect) {
  // Only rank 0's snapshot: host triage says incomplete (rank 1 absent); its kernel waits on rank 1,
  // which names the wait but proves nothing about rank 1 (absence is never evidence: issue 37).
  std::vector<json> documents = {missing_collective(2, 1)[0]};
  json without = nsc::triage_documents(as_inputs(documents), {});
  BOOST_TEST(without["verdict"] == "incomplete");
  json rank0 = view(1000, kWorldHash, 0, 2, {kernel("AllGather", kWorldHash, 0, 2, 2, {recv_wait(1, 8)})});
  json report = nsc::triage_documents(with_views(documents, {rank0}), {});
  BOOST_TEST(report["verdict"] == "incomplete");
  BOOST_TEST(report["culprit_ranks"].empty());
  BOOST_TEST(report["suspect_ranks"] == json::array({1}));
  auto waits = findings_of(report, "kernel-wait");
  BOOST_REQUIRE(waits.size() == 1);
  BOOST_TEST((*waits[0])["culprits_absent"] == true);
  BOOST_TEST(has_evidence(*waits[0], "rank 1 has no input holding this communicator"));
  BOOST_TEST(report["graph"]["nodes"][report["graph"]["no_input_suspects"][0].get<size_t>()]["label"] == "rank 1 (no input)");
  BOOST_TEST(report["kernel_views"]["inputs"][0]["joined_to"]["pid_agrees"] == true);
}

BOOST_AUTO_TEST_CASE(hostile_views_are_reduced_not_trusted) {
  std::vector<json> documents = missing_collective(2, 1);
  json bad = view(1000, kWorldHash, 0, 2, json::array());
  json k = kernel("AllGather", kWorldHash, 0, 2, 2, {recv_wait(1, 8)});
  k["blocks"][0]["waits"][0]["peer"] = "one";  // not a number: no peer, no culprit
  k["blocks"][1]["waits"][0]["peer"] = 99;     // outside the communicator: never a culprit
  k["blocks"][1]["channel"] = -3;
  bad["kernels"] = {k, 5, {{"communicator", "0xzz"}, {"blocks", "many"}}};
  bad["communicators"] = {{{"comm_hash", 17}, {"rank", "zero"}}, {{"comm_hash", nsc::hex(kWorldHash)}, {"rank", 0}}};
  bad["errors"] = {42, {{"message", "cuda-gdb: focus lost"}}};
  json report = nsc::triage_documents(with_views(documents, {bad}), {});
  BOOST_TEST(report["verdict"] == "hang");
  BOOST_TEST(report["culprit_ranks"] == json::array({1}));
  BOOST_TEST(findings_of(report, "kernel-wait").empty());
  const json& entry = report["kernel_views"]["inputs"][0];
  BOOST_TEST(entry["kernels"].size() == 2);  // the number 5 is no kernel
  BOOST_TEST(entry["errors"] == json::array({"cuda-gdb: focus lost"}));
  BOOST_TEST(entry["kernels"][1]["comm_hash"].is_null());
  BOOST_TEST(entry["warnings"].size() == 1);  // the second kernel's communicator is not identified
  // A document that is not a kernel view is refused by name.
  BOOST_CHECK_THROW(nsc::triage::summarize_kernel_view(json::object(), "x.json"), std::exception);
  // Two views of the same rank: the second is not joined.
  json twice = nsc::triage_documents(with_views(documents, {view(1, kWorldHash, 0, 2, json::array()),
                                                            view(2, kWorldHash, 0, 2, json::array())}), {});
  BOOST_TEST(twice["kernel_views"]["warnings"].size() == 1);
  BOOST_TEST(twice["kernel_views"]["warnings"][0].get<std::string>().find("already has kernel view view-0.kernels.json") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(files_and_directories_load_kernel_views) {
  TempDir dir("triage-kernels");
  std::vector<json> documents = missing_collective(2, 1);
  dir.write("rank-0.json", documents[0].dump(2));
  dir.write("rank-1.json", documents[1].dump(2));
  // Keys sorted as nlohmann writes them: "communicators" comes before "schema".
  dir.write("rank0.kernels.json", view(1000, kWorldHash, 0, 2, {kernel("AllGather", kWorldHash, 0, 2, 2, {recv_wait(1, 8)})}).dump());
  nsc::triage::LoadRequest request;
  request.paths = {dir.path};
  request.jobs = 2;
  nsc::triage::LoadedInputs loaded = nsc::triage::load_triage_inputs(request);
  BOOST_TEST(loaded.processes.size() == 2);
  BOOST_TEST(loaded.failures.empty());  // not "ignored", not an error
  BOOST_REQUIRE(loaded.kernel_views.size() == 1);
  BOOST_TEST(loaded.kernel_views[0].kernels.size() == 1);
  BOOST_TEST(loaded.kernel_views[0].input_name == dir.path + "/rank0.kernels.json");
  json report = nsc::triage_processes(std::move(loaded.processes), loaded.failures, {}, std::move(loaded.kernel_views));
  BOOST_TEST(report["graph"]["edges"][0]["kernel"][0]["peer"] == 1);
  // Named explicitly; and a truncated view is an error naming the file.
  std::string broken = dir.write("broken.kernels.json", "{\"schema\": \"ncclscope.kernels/1\", \"kernels\": [");
  nsc::triage::LoadRequest explicit_request;
  explicit_request.paths = {dir.path + "/rank-0.json", dir.path + "/rank0.kernels.json", broken};
  nsc::triage::LoadedInputs second = nsc::triage::load_triage_inputs(explicit_request);
  BOOST_TEST(second.kernel_views.size() == 1);
  BOOST_REQUIRE(second.failures.size() == 1);
  BOOST_TEST(second.failures[0].error.find(broken + ": corrupt") == 0);
}
