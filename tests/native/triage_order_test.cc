// Program order across process groups (issue 33 items 1-3), on synthetic snapshots that mirror
// tests/scenarios/torch_crash_order.py's order-* scenarios (4 ranks, PyTorch over NCCL's socket
// transport, the deviation in step 4): what each rank launched on each communicator, where its
// host thread sits, its proxy operations in flight and, with the flight recorder on, its records.
//  - order-p2p-skip: pp4; rank 1 skips its send of micro-batch 1 to rank 2 and goes on to the
//    world all_reduce; the hosts go on to loss.item() (dist.recv does not block the host).
//  - order-p2p-skip, host-blocking receives: the same skip where each receiver's host waits in
//    its recv (as with blocking waits), so rank 2 never launches the world all_reduce.
//  - the counter-example to deciding that shape from NCCL's counts: the all_reduces between the
//    micro-batches, ranks 2 and 3 moved a recv before them: the same counts, another culprit.
// The pp4 snapshots are built from each rank's issued operations (pp4_documents).
//  - order-split-vs-collective: ranks 0-2 sit in ncclCommSplit (dist.new_group), rank 3
//    launched world all_reduce #4 instead.
//  - order-lock-inversion: pairs; rank 0 issues grad_a then grad_b, rank 1 grad_b then grad_a,
//    a host synchronize between: a deadlock nobody skipped.
#define BOOST_TEST_MODULE triage_order
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "triage/triage.h"
#include "triage_synthetic.h"

using nlohmann::json;
using namespace synthetic;

namespace {

const std::string kScript = "/job/tests/scenarios/torch_crash_order.py";
const std::string kTorch = "/venv/lib/python3.12/site-packages/torch/";

json native(const std::string& function, const std::string& module) {
  return {{"kind", "native"}, {"function", function}, {"module", module}, {"pc", "0x401000"}};
}

json python(const std::string& function, const std::string& file, int line) {
  return {{"kind", "python"}, {"function", function}, {"file", file}, {"line", line}};
}

// The application thread of a rank: native frames innermost first, then the Python ones.
json python_thread(const std::string& blocked_in, std::vector<json> natives, std::vector<json> pythons) {
  json frames = json::array(), merged = json::array();
  for (const json& frame : natives) {
    frames.push_back(frame);
    merged.push_back(frame);
  }
  for (const json& frame : pythons) merged.push_back(frame);
  json main_frame = native("main", "/usr/bin/python3.12");
  frames.push_back(main_frame);
  merged.push_back(main_frame);
  return {{"tid", 0}, {"name", "python3"}, {"state", "S"}, {"blocked_in", blocked_in},
          {"frames", frames}, {"merged_frames", merged}};
}

// loss.item(): a device-to-host copy that waits for the stream.
json item_thread(const std::string& function, int line) {
  return python_thread("cudaStreamSynchronize",
                       {native("ioctl", "libc.so.6"), native("cuStreamSynchronize", "libcuda.so.1"),
                        native("cudaStreamSynchronize", "libcudart.so.13")},
                       {python(function, kScript, line)});
}

// torch.cuda.synchronize() between grad_a and grad_b (run_pairs).
json synchronize_thread() {
  return python_thread("cudaDeviceSynchronize",
                       {native("ioctl", "libc.so.6"), native("cuCtxSynchronize", "libcuda.so.1"),
                        native("cudaDeviceSynchronize", "libcudart.so.13")},
                       {python("synchronize", kTorch + "cuda/__init__.py", 1040), python("run_pairs", kScript, 261)});
}

// dist.new_group: eager init splits the world communicator; the split's allgather waits.
json new_group_thread() {
  return python_thread("ncclCommInitRank",
                       {native("poll", "libc.so.6"), native("bootstrapAllGather", "libnccl.so.2"),
                        native("ncclCommSplit", "libnccl.so.2")},
                       {python("new_group", kTorch + "distributed/distributed_c10d.py", 5120),
                        python("new_groups", "/job/tests/scenarios/torch_multigroup.py", 98),
                        python("run_split_vs_collective", kScript, 216)});
}

// One communicator of a rank, at its own address (the recorder joins groups by address).
json comm_at(uint64_t hash, int rank, int nranks, int64_t all_reduces, int address) {
  json c = comm(hash, rank, nranks, {0, 0, 0, 0, all_reduces});
  c["address"] = nsc::hex(0x7f0000100000ull + 0x10000ull * address);
  return c;
}

// One connection of a proxy operation in flight: `moved` steps received (recv) or sent (send).
json sub(int peer, bool send, int64_t moved) {
  return {{"channel", 0}, {"peer", peer}, {"nsteps", 8}, {"posted", 8}, {"received", send ? 0 : moved},
          {"transmitted", send ? moved : 0}, {"done", 0}, {"send", send}};
}

json proxy(const std::string& collective, const std::string& pattern, json subs) {
  json op = proxy_op(collective, pattern, -1);
  op["subs"] = std::move(subs);
  return op;
}

// A ring collective in flight: nothing received from `prev`; sent to `next` once the GPU runs it.
json ring_op(int prev, int next, bool gpu_in_it) {
  return proxy("AllReduce", "ncclPatternRing", json::array({sub(prev, false, 0), sub(next, true, gpu_in_it ? 2 : 0)}));
}
json send_op(int peer, bool gpu_in_it) { return proxy("Send", "ncclPatternSend", json::array({sub(peer, true, gpu_in_it ? 2 : 0)})); }
json recv_op(int peer) { return proxy("Recv", "ncclPatternRecv", json::array({sub(peer, false, 0)})); }

json rank_doc(int rank, json comms, json main_thread) {
  int pid = 2000 + rank;
  main_thread["tid"] = pid;
  json doc = document(pid, std::move(comms), json::array({main_thread, proxy_thread(pid + 1)}));
  doc["target"]["executable"] = "/usr/bin/python3.12";
  doc["environment"] = {{"RANK", std::to_string(rank)}, {"WORLD_SIZE", "4"}};
  return doc;
}

// --- the flight recorder (PyTorch's records, one id sequence per process) -----------------

struct Group {
  std::string name, desc;
  std::vector<int> ranks;
  int address;  // comm_at's address index
};

struct Record {
  const Group* group;
  std::string op;  // "all_reduce", "send 1->2" (group ranks), ...
  int64_t seq;     // collective_seq_id, or p2p_seq_id
  std::string state;
  int line;
};

json records_section(int rank, const std::vector<const Group*>& groups, const std::vector<Record>& records) {
  json pgs = json::array(), entries = json::array();
  for (const Group* group : groups) {
    int comm_rank = static_cast<int>(std::find(group->ranks.begin(), group->ranks.end(), rank) - group->ranks.begin());
    pgs.push_back({{"name", group->name}, {"desc", group->desc}, {"ranks", group->ranks}, {"pg_id", std::stoi(group->name)},
                   {"comm_rank", comm_rank}, {"communicator", nsc::hex(0x7f0000100000ull + 0x10000ull * group->address)},
                   {"match", "unique"}});
  }
  for (size_t id = 0; id < records.size(); ++id) {
    const Record& r = records[id];
    bool p2p = r.op.rfind("send", 0) == 0 || r.op.rfind("recv", 0) == 0;
    entries.push_back({{"record_id", id}, {"pg_id", std::stoi(r.group->name)},
                       {"process_group", {r.group->name, r.group->desc}},
                       {"collective_seq_id", p2p ? 0 : r.seq}, {"p2p_seq_id", p2p ? r.seq : 0},
                       {"profiling_name", "nccl:" + r.op}, {"input_sizes", {{65536}}}, {"input_dtypes", {"Float"}},
                       {"output_sizes", {{65536}}}, {"output_dtypes", {"Float"}}, {"state", r.state}, {"is_p2p", p2p},
                       {"frames", {{{"name", "all_reduce"}, {"filename", kTorch + "distributed/distributed_c10d.py"}, {"line", 3068}},
                                   {{"name", "run"}, {"filename", kScript}, {"line", r.line}}}}});
  }
  return {{"process_groups", pgs}, {"entries", entries}};
}

std::vector<int> ints(const json& list) {
  std::vector<int> out;
  for (const json& value : list) out.push_back(value.get<int>());
  return out;
}

json triage(const std::vector<json>& documents) { return triage_read_back(documents); }

// The headline, also shown with --log_level=message (docs/triage.md quotes it).
std::string headline(const json& report) {
  std::string text = report["headline"]["text"].get<std::string>();
  BOOST_TEST_MESSAGE(text);
  return text;
}

const json* first_finding(const json& report, const std::string& kind) { return finding_of(report, kind); }

// --- order-lock-inversion ----------------------------------------------------------------

constexpr uint64_t kGradA0 = 0xa0a0a0a0a0a0a001ull, kGradA1 = 0xa1a1a1a1a1a1a102ull, kGradB0 = 0xb0b0b0b0b0b0b003ull,
                   kGradB1 = 0xb1b1b1b1b1b1b104ull, kWorld = 0x3bb8d93518dc3f2full;
const Group kWorldPg{"0", "default_pg", {0, 1, 2, 3}, 0};
const Group kA0{"1", "grad_a0", {0, 1}, 1}, kA1{"2", "grad_a1", {2, 3}, 2}, kB0{"3", "grad_b0", {0, 1}, 3},
    kB1{"4", "grad_b1", {2, 3}, 4};

// Step 4: rank 0 launched grad_a #4, rank 1 grad_b #4, each then waits in torch.cuda.synchronize();
// ranks 2 and 3 issued both and the world all_reduce #4, and wait in loss.item().
std::vector<json> lock_inversion(bool recorder) {
  std::vector<json> documents;
  for (int rank = 0; rank < 4; ++rank) {
    bool low = rank < 2;
    int64_t a = rank == 1 ? 3 : 4, b = rank == 0 ? 3 : 4, world = low ? 3 : 4;
    const Group& ga = low ? kA0 : kA1;
    const Group& gb = low ? kB0 : kB1;
    int local = rank % 2, peer = 1 - local;
    json world_comm = comm_at(kWorld, rank, 4, world, 0);
    json comm_a = comm_at(low ? kGradA0 : kGradA1, local, 2, a, ga.address);
    json comm_b = comm_at(low ? kGradB0 : kGradB1, local, 2, b, gb.address);
    if (rank == 0) comm_a["proxy_ops"].push_back(ring_op(peer, peer, true));
    if (rank == 1) comm_b["proxy_ops"].push_back(ring_op(peer, peer, true));
    if (!low) world_comm["proxy_ops"].push_back(ring_op((rank + 3) % 4, (rank + 1) % 4, true));
    json doc = rank_doc(rank, json::array({world_comm, comm_a, comm_b}), low ? synchronize_thread() : item_thread("run_pairs", 267));
    if (recorder) {
      std::vector<Record> records;
      for (int64_t step = 1; step <= 3; ++step) {
        records.push_back({&ga, "all_reduce", step, "completed", 256});
        records.push_back({&gb, "all_reduce", step, "completed", 256});
        records.push_back({&kWorldPg, "all_reduce", step, "completed", 263});
      }
      if (rank == 0) records.push_back({&ga, "all_reduce", 4, "started", 256});
      if (rank == 1) records.push_back({&gb, "all_reduce", 4, "started", 256});
      if (!low) {
        records.push_back({&ga, "all_reduce", 4, "completed", 256});
        records.push_back({&gb, "all_reduce", 4, "completed", 256});
        records.push_back({&kWorldPg, "all_reduce", 4, "started", 263});
      }
      doc["torch"] = records_section(rank, {&kWorldPg, &ga, &gb}, records);
    }
    documents.push_back(doc);
  }
  return documents;
}

}  // namespace

BOOST_AUTO_TEST_CASE(lock_inversion_is_a_deadlock_nobody_skipped) {
  json report = triage(lock_inversion(false));
  std::string text = headline(report);
  BOOST_TEST(report["verdict"] == "deadlock", text);
  BOOST_TEST(report["headline"]["what"] == "deadlock", text);
  BOOST_TEST(report["culprit_ranks"].empty(), text);
  BOOST_TEST(report["suspect_ranks"].empty(), text);
  BOOST_TEST(text.find("ranks 0 and 1 issued") != std::string::npos, text);
  BOOST_TEST(text.find("in opposite orders") != std::string::npos, text);
  BOOST_TEST(text.find("rank 0 waits in AllReduce #4 on 0xa0a0a0a0a0a0a001 at torch_crash_order.py:261, rank 1 in "
                       "AllReduce #4 on 0xb0b0b0b0b0b0b003 at torch_crash_order.py:261; nobody skipped") != std::string::npos,
             text);
  BOOST_TEST(text.find("Waiting: ranks 2,3 in cudaStreamSynchronize at torch_crash_order.py:267.") != std::string::npos, text);
  BOOST_TEST(text.find("ranks 0,1 in") == std::string::npos, text);  // named above, not again as waiting
}

BOOST_AUTO_TEST_CASE(lock_inversion_with_the_flight_recorder_names_the_groups) {
  json report = triage(lock_inversion(true));
  std::string text = headline(report);
  BOOST_TEST(report["verdict"] == "deadlock", text);
  BOOST_TEST(report["headline"]["what"] == "deadlock", text);
  BOOST_TEST(report["culprit_ranks"].empty(), text);
  BOOST_TEST(report["suspect_ranks"].empty(), text);
  BOOST_TEST(text.find("ranks 0 and 1 issued grad_a0 and grad_b0 in opposite orders") != std::string::npos, text);
  BOOST_TEST(text.find("rank 0 waits in grad_a0 at torch_crash_order.py:261, rank 1 in grad_b0 at torch_crash_order.py:261") !=
                 std::string::npos,
             text);
}

// --- order-split-vs-collective -----------------------------------------------------------

namespace {

// World all_reduce for 3 steps; ranks 0-2 then sit in dist.new_group (ncclCommSplit of the
// world communicator), rank 3 skipped it and launched world all_reduce #4, waiting in loss.item().
std::vector<json> split_vs_collective(bool recorder) {
  std::vector<json> documents;
  for (int rank = 0; rank < 4; ++rank) {
    bool skipper = rank == 3;
    json world = comm_at(kWorld, rank, 4, skipper ? 4 : 3, 0);
    if (skipper) world["proxy_ops"].push_back(ring_op(2, 0, true));
    json doc = rank_doc(rank, json::array({world}), skipper ? item_thread("run_split_vs_collective", 212) : new_group_thread());
    if (recorder) {
      std::vector<Record> records;
      for (int64_t step = 1; step <= 3; ++step) records.push_back({&kWorldPg, "all_reduce", step, "completed", 204});
      if (skipper) records.push_back({&kWorldPg, "all_reduce", 4, "started", 209});
      doc["torch"] = records_section(rank, {&kWorldPg}, records);
    }
    documents.push_back(doc);
  }
  return documents;
}

void check_split_vs_collective(const json& report, const std::string& operation) {
  std::string text = headline(report);
  BOOST_TEST(report["verdict"] == "hang", text);
  BOOST_TEST(ints(report["culprit_ranks"]) == std::vector<int>({3}), text);
  BOOST_TEST(report["suspect_ranks"].empty(), text);
  const json* split = first_finding(report, "split-vs-collective");
  BOOST_REQUIRE(split != nullptr);
  BOOST_TEST(ints((*split)["waiting_ranks"]) == std::vector<int>({0, 1, 2}));
  BOOST_TEST(ints((*split)["culprit_ranks"]) == std::vector<int>({3}));
  BOOST_TEST((*split)["explains_hang"] == true);
  // The ranks in the split are not blamed for the collective they never launched.
  const json* missing = first_finding(report, "missing-collective");
  BOOST_REQUIRE(missing != nullptr);
  BOOST_TEST((*missing)["culprit_ranks"].empty());
  BOOST_TEST(text.find("ranks 0-2 wait in new_group for rank 3, which issued " + operation + " on the parent instead") !=
                 std::string::npos,
             text);
  BOOST_TEST(text.find("Culprit: rank 3, in cudaStreamSynchronize at torch_crash_order.py:212") != std::string::npos, text);
  BOOST_TEST(text.find("Waiting: ranks 0-2 in new_group at torch_multigroup.py:98") != std::string::npos, text);
}

}  // namespace

BOOST_AUTO_TEST_CASE(split_vs_collective_blames_the_rank_that_skipped_the_split) {
  check_split_vs_collective(triage(split_vs_collective(false)), "AllReduce #4 (NCCL launch count)");
}

BOOST_AUTO_TEST_CASE(split_vs_collective_with_the_flight_recorder) {
  check_split_vs_collective(triage(split_vs_collective(true)), "all_reduce #4");
}

BOOST_AUTO_TEST_CASE(split_vs_collective_when_the_collective_is_stuck_before_launch) {
  // As captured on the GPU machine: rank 3's host thread sits inside its world all_reduce #4
  // (ncclGroupEnd, AllReduce planned, not launched), so every counter agrees.
  std::vector<json> documents = split_vs_collective(false);
  json& world = documents[3]["communicators"][0];
  world["seq_launched"]["AllReduce"] = 3;
  world["coll_op_count"] = 3;
  world["proxy_ops"] = json::array();
  world["planned"]["n_tasks_coll"] = 1;
  world["planned"]["colls"].push_back({{"collective", "AllReduce"}, {"count", 65536}, {"datatype", "ncclFloat32"},
                                       {"op", "ncclSum"}, {"root", 0}});
  documents[3]["threads"][0] = python_thread("nccl-group-end",
                                             {native("poll", "libc.so.6"), native("ncclGroupEnd", "libnccl.so.2")},
                                             {python("all_reduce", kTorch + "distributed/distributed_c10d.py", 3068),
                                              python("run_split_vs_collective", kScript, 209)});
  documents[3]["threads"][0]["tid"] = 2003;
  json report = triage(documents);
  std::string text = headline(report);
  BOOST_TEST(report["verdict"] == "hang", text);
  BOOST_TEST(ints(report["culprit_ranks"]) == std::vector<int>({3}), text);
  const json* split = first_finding(report, "split-vs-collective");
  BOOST_REQUIRE(split != nullptr);
  BOOST_TEST(ints((*split)["waiting_ranks"]) == std::vector<int>({0, 1, 2}));
  // The split replaces the stuck-before-launch reading ("every rank is inside the call: NCCL's own setup").
  BOOST_TEST(first_finding(report, "stuck-before-launch") == nullptr);
  BOOST_TEST(text.find("NCCL's own setup") == std::string::npos, text);
  BOOST_TEST(text.find("ranks 0-2 wait in new_group for rank 3, which issued AllReduce #4 (NCCL launch count) on the "
                       "parent instead") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(a_split_everyone_entered_is_no_split_vs_collective) {
  // Rank 3 sits in the split too, having launched the world all_reduce before it: no rank
  // "launched instead"; missing-collective stands as before.
  std::vector<json> documents = split_vs_collective(false);
  documents[3]["threads"][0] = new_group_thread();
  documents[3]["threads"][0]["tid"] = 2003;
  json report = triage(documents);
  BOOST_TEST(first_finding(report, "split-vs-collective") == nullptr);
}

// --- order-p2p-skip: pp4, built from each rank's issued operations ------------------------

namespace {

constexpr uint64_t kEmbed = 0xe0e0e0e0e0e0e005ull, kPair01 = 0x0101010101010106ull, kPair12 = 0x1212121212121207ull,
                   kPair23 = 0x2323232323232308ull;
const Group kEmbedPg{"1", "embed0", {0, 3}, 5};

// One operation a pp4 rank issued: a send to / receive from a world rank (micro-batch `mb`),
// or its next all_reduce on "world" or on "embed" (ranks 0 and 3).
struct PpOp {
  std::string what;  // "send", "recv", "world", "embed"
  int peer = -1;
  int mb = -1;
};

// What a rank issued, oldest first, and the line of run_pp4 its host thread waits at.
struct PpRank {
  std::vector<PpOp> issued;
  int host_line = 244;  // loss.item()
};

bool is_p2p(const PpOp& op) { return op.what == "send" || op.what == "recv"; }

int line_of(const PpOp& op) { return op.what == "recv" ? 230 : op.what == "send" ? 234 : op.what == "embed" ? 236 : 238; }

// One step of run_pp4: per micro-batch the recv from the stage before and the send to the stage
// after, the embed all_reduce, the world all_reduce; `world_between`: the all_reduces between
// the two micro-batches instead (the counter-example's program).
std::vector<PpOp> pp4_step(int rank, bool world_between) {
  std::vector<PpOp> ops;
  auto all_reduces = [&] {
    if (rank == 0 || rank == 3) ops.push_back({"embed"});
    ops.push_back({"world"});
  };
  for (int mb = 0; mb < 2; ++mb) {
    if (world_between && mb == 1) all_reduces();
    if (rank > 0) ops.push_back({"recv", rank - 1, mb});
    if (rank < 3) ops.push_back({"send", rank + 1, mb});
  }
  if (!world_between) all_reduces();
  return ops;
}

// The other ranks taking part in an operation of `rank`.
std::vector<int> partners_of(int rank, const PpOp& op) {
  if (is_p2p(op)) return {op.peer};
  std::vector<int> members = op.what == "embed" ? std::vector<int>{0, 3} : std::vector<int>{0, 1, 2, 3};
  members.erase(std::find(members.begin(), members.end(), rank));
  return members;
}

// Each issued operation's key, the same on every rank taking part: "p2p 1->2 #7", "world #4".
std::vector<std::string> match_keys(int rank, const std::vector<PpOp>& ops) {
  std::map<std::string, int> count;
  std::vector<std::string> keys;
  for (const PpOp& op : ops) {
    int from = op.what == "send" ? rank : op.peer, to = op.what == "send" ? op.peer : rank;
    std::string base = is_p2p(op) ? "p2p " + std::to_string(from) + "->" + std::to_string(to) : op.what;
    keys.push_back(base + " #" + std::to_string(++count[base]));
  }
  return keys;
}

// Where each rank's GPU stops: an operation completes once every rank taking part reached it.
std::vector<size_t> gpu_positions(const std::vector<PpRank>& ranks) {
  std::vector<std::vector<std::string>> keys;
  for (int rank = 0; rank < 4; ++rank) keys.push_back(match_keys(rank, ranks[rank].issued));
  std::vector<size_t> at(4, 0);
  auto reached = [&](int rank, const std::string& key) {
    auto found = std::find(keys[rank].begin(), keys[rank].end(), key);
    return found != keys[rank].end() && static_cast<size_t>(found - keys[rank].begin()) <= at[rank];
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (int rank = 0; rank < 4; ++rank) {
      if (at[rank] >= keys[rank].size()) continue;
      std::vector<int> partners = partners_of(rank, ranks[rank].issued[at[rank]]);
      const std::string& key = keys[rank][at[rank]];
      if (std::all_of(partners.begin(), partners.end(), [&](int p) { return reached(p, key); })) ++at[rank], moved = true;
    }
  }
  return at;
}

// The snapshots: per communicator the all_reduces launched and the proxy operations of what the
// GPU has not completed (a ring's sends move once the GPU is in it); with the recorder, one
// record per issued operation. `p2p_on_world`: sends and receives on the world communicator (as
// in the real captures), else on one communicator per pair of stages.
std::vector<json> pp4_documents(const std::vector<PpRank>& ranks, bool recorder, bool p2p_on_world) {
  const uint64_t pair_hash[3] = {kPair01, kPair12, kPair23};
  std::vector<size_t> gpu = gpu_positions(ranks);
  std::vector<json> documents;
  for (int rank = 0; rank < 4; ++rank) {
    const std::vector<PpOp>& ops = ranks[rank].issued;
    auto launched = [&ops](const std::string& what) {
      return std::count_if(ops.begin(), ops.end(), [&what](const PpOp& op) { return op.what == what; });
    };
    json comms = json::array({comm_at(kWorld, rank, 4, launched("world"), 0)});
    if (rank == 0 || rank == 3) comms.push_back(comm_at(kEmbed, rank / 3, 2, launched("embed"), kEmbedPg.address));
    std::map<int, size_t> pair_comm;  // first stage of the pair -> index in comms
    for (int pair = 0; pair < 3 && !p2p_on_world; ++pair)
      if (rank == pair || rank == pair + 1) {
        pair_comm[pair] = comms.size();
        comms.push_back(comm_at(pair_hash[pair], rank - pair, 2, 0, 6 + pair));
      }
    for (size_t i = gpu[rank]; i < ops.size(); ++i) {
      const PpOp& op = ops[i];
      bool gpu_in_it = i == gpu[rank];
      int pair = std::min(rank, op.peer);
      json& c = !is_p2p(op) ? comms[op.what == "embed" ? 1 : 0] : comms[p2p_on_world ? 0 : pair_comm.at(pair)];
      int peer = p2p_on_world ? op.peer : op.peer - pair;
      if (op.what == "world") c["proxy_ops"].push_back(ring_op((rank + 3) % 4, (rank + 1) % 4, gpu_in_it));
      if (op.what == "embed") c["proxy_ops"].push_back(ring_op(1 - rank / 3, 1 - rank / 3, gpu_in_it));
      if (op.what == "send") c["proxy_ops"].push_back(send_op(peer, gpu_in_it));
      if (op.what == "recv") c["proxy_ops"].push_back(recv_op(peer));
    }
    json doc = rank_doc(rank, comms, item_thread("run_pp4", ranks[rank].host_line));
    if (recorder) {
      std::vector<const Group*> groups = {&kWorldPg};
      if (rank == 0 || rank == 3) groups.push_back(&kEmbedPg);
      std::vector<Record> records;
      std::map<std::string, int64_t> seq;  // per kind: sends, receives, each group's all_reduces
      for (size_t i = 0; i < ops.size(); ++i) {
        const PpOp& op = ops[i];
        std::string name = op.what == "send"   ? "send " + std::to_string(rank) + "->" + std::to_string(op.peer)
                           : op.what == "recv" ? "recv " + std::to_string(rank) + "<-" + std::to_string(op.peer)
                                               : "all_reduce";
        std::string state = i < gpu[rank] ? "completed" : i == gpu[rank] ? "started" : "scheduled";
        records.push_back({op.what == "embed" ? &kEmbedPg : &kWorldPg, name, ++seq[op.what], state, line_of(op)});
      }
      doc["torch"] = records_section(rank, groups, records);
    }
    documents.push_back(doc);
  }
  return documents;
}

// run_pp4 for four steps; in step 4 rank 1 skips its send of micro-batch 1 to rank 2. Every host
// goes on to loss.item() except those in `blocking`, whose host waits in its step-4 recv of
// micro-batch 1 (as with a blocking wait, or a host that reads the received tensor), issuing
// nothing after it. GPUs, none blocking: rank 1 in world all_reduce #4 (waits for data from
// rank 0), rank 2 in its recv from rank 1 (send to 3, world #4 queued), rank 3 in its recv from
// rank 2 (embed #4, world #4 queued), rank 0 in embed #4 (waits on 3), world #4 queued.
std::vector<PpRank> p2p_skip_program(const std::set<int>& blocking = {}) {
  std::vector<PpRank> ranks(4);
  for (int rank = 0; rank < 4; ++rank)
    for (int step = 1; step <= 4; ++step)
      for (const PpOp& op : pp4_step(rank, false)) {
        bool last = step == 4;
        if (last && rank == 1 && op.what == "send" && op.mb == 1) continue;
        ranks[rank].issued.push_back(op);
        if (last && blocking.count(rank) && op.what == "recv" && op.mb == 1) {
          ranks[rank].host_line = 231;
          break;
        }
      }
  return ranks;
}

// The counter-example (docs/triage.md rule 3, "Not done"): run_pp4 with the all_reduces between
// the micro-batches, where nobody skips. In step 4 ranks 2 and 3 moved their recv of micro-batch
// 1 before the all_reduces and their hosts wait in it; ranks 0 and 1, in their program's order,
// wait in a host synchronize after world all_reduce #4 (rank 0's GPU in embed #4, waiting on 3).
// The wait-for graph and NCCL's counts on ranks 1 and 2 read as in the skip with ranks 2 and 3
// blocking (rank 2 in recv #8 from rank 1 with 3 world all_reduces, rank 1 launched world
// all_reduce #4 after 7 sends to rank 2); yet ranks 2 and 3 are the ones out of order.
std::vector<PpRank> moved_recv_program(bool rank0_goes_on = false) {
  std::vector<PpRank> ranks(4);
  for (int rank = 0; rank < 4; ++rank)
    for (int step = 1; step <= 4; ++step) {
      std::vector<PpOp> ops = pp4_step(rank, true);
      bool last = step == 4, moved = last && rank >= 2;
      if (moved) {  // recv mb 1 right after micro-batch 0
        auto first_later = std::find_if(ops.begin(), ops.end(), [](const PpOp& op) { return op.mb != 0; });
        auto recv = std::find_if(ops.begin(), ops.end(), [](const PpOp& op) { return op.what == "recv" && op.mb == 1; });
        std::rotate(first_later, recv, recv + 1);
      }
      for (const PpOp& op : ops) {
        ranks[rank].issued.push_back(op);
        if (moved && op.what == "recv" && op.mb == 1) {
          ranks[rank].host_line = 231;
          break;
        }
        if (last && rank <= 1 && op.what == "world" && !(rank == 0 && rank0_goes_on)) {
          ranks[rank].host_line = 239;
          break;
        }
      }
    }
  return ranks;
}

void check_p2p_skip(const json& report) {
  std::string text = headline(report);
  BOOST_TEST(report["verdict"] == "hang", text);
  BOOST_TEST(ints(report["culprit_ranks"]) == std::vector<int>({1}), text);
  BOOST_TEST(report["suspect_ranks"].empty(), text);
  const json* unmatched = first_finding(report, "p2p-unmatched");
  BOOST_REQUIRE(unmatched != nullptr);
  BOOST_TEST(ints((*unmatched)["waiting_ranks"]) == std::vector<int>({2}));
  BOOST_TEST(ints((*unmatched)["culprit_ranks"]) == std::vector<int>({1}));
  BOOST_TEST(text.find("never posted") != std::string::npos, text);
  BOOST_TEST(text.find("HANG in communicator 0x1212121212121207 (2 ranks): rank 2 waits in Recv for a Send rank 1 never "
                       "posted.") != std::string::npos, text);
  BOOST_TEST(text.find("Culprit: rank 1, in cudaStreamSynchronize at torch_crash_order.py:244; its own wait follows") !=
                 std::string::npos, text);
  BOOST_TEST(text.find("Waiting: ranks 0,2,3 in cudaStreamSynchronize at torch_crash_order.py:244.") != std::string::npos, text);
}

}  // namespace

BOOST_AUTO_TEST_CASE(p2p_skip_blames_the_sender_not_the_end_of_the_chain) {
  check_p2p_skip(triage(pp4_documents(p2p_skip_program(), false, false)));
}

BOOST_AUTO_TEST_CASE(p2p_skip_with_the_flight_recorder) {
  check_p2p_skip(triage(pp4_documents(p2p_skip_program(), true, false)));
}

// --- order-p2p-skip, receivers' hosts blocked in their recv -------------------------------

namespace {

// The graph's blame entry that program order decided, or null.
const json* program_order_decision(const json& report) {
  for (const json& reason : report["graph"]["blame"])
    if (reason.contains("program_order")) return &reason;
  return nullptr;
}

// Rank 1 and rank 2 each alone break the cycle; the records' history decides for rank 1.
void check_p2p_skip_decided_by_records(const json& report) {
  std::string text = headline(report);
  BOOST_TEST(report["verdict"] == "hang", text);
  BOOST_TEST(ints(report["culprit_ranks"]) == std::vector<int>({1}), text);
  BOOST_TEST(report["suspect_ranks"].empty(), text);
  BOOST_TEST(text.find("rank 2 waits in Recv for a Send rank 1 never posted") != std::string::npos, text);
  const json* decision = program_order_decision(report);
  BOOST_REQUIRE(decision != nullptr);
  BOOST_TEST(ints((*decision)["nodes"]) == std::vector<int>({1}));
  BOOST_TEST((*decision)["kind"] == "skipped-in-cycle");
  std::string why = (*decision)["program_order"][0].get<std::string>();
  BOOST_TEST(why.find("rank 1: its own records repeat every 3 operations of the two kinds and put a send to rank 2 "
                      "next, before the all_reduce #4 on pg 0") != std::string::npos, why);
  std::string report_text = nsc::render_triage_text(report);  // the text report says why too
  BOOST_TEST(report_text.find("    - " + why) != std::string::npos, report_text);
  // Rank 2's program order: it sits in its recv from rank 1; what it owes comes after.
  const json& order = report["graph"]["nodes"][2]["program_order"];
  BOOST_TEST(order["source"] == "flight-recorder");
  BOOST_TEST(order["sits_in"]["op"] == "recv 2<-1");
  for (const json& owed : order["owed"]) BOOST_TEST(owed["order"] == "later", owed.dump());
}

// Without the recorder: the sender or the receiver, and what would decide (rank 1 and rank 2
// each owe the other what the other waits in; NCCL's counts place neither).
void check_undecided_without_records(const json& report) {
  std::string text = headline(report);
  BOOST_TEST(report["culprit_ranks"].empty(), text);
  BOOST_TEST(ints(report["suspect_ranks"]) == std::vector<int>({1, 2}), text);
  BOOST_TEST(text.find(": PyTorch's flight recorder (TORCH_FR_BUFFER_SIZE>0) would decide: NCCL's counts say what each "
                       "rank issued, not in which order.") != std::string::npos, text);
  for (int rank : {1, 2}) {
    const json& order = report["graph"]["nodes"][rank]["program_order"];
    BOOST_TEST(order["source"] == "nccl-counts");
    BOOST_TEST(!order["owed"].empty());
    for (const json& owed : order["owed"]) {
      BOOST_TEST(owed["order"] == "unknown", owed.dump());
      BOOST_TEST(owed["why"].dump().find("no count per peer and no order between a send and a collective") !=
                     std::string::npos, owed.dump());
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(p2p_skip_with_blocked_receivers_blames_the_sender_by_its_records) {
  for (bool p2p_on_world : {false, true})
    BOOST_TEST_CONTEXT("p2p_on_world " << p2p_on_world)
      check_p2p_skip_decided_by_records(triage(pp4_documents(p2p_skip_program({2, 3}), true, p2p_on_world)));
}

BOOST_AUTO_TEST_CASE(p2p_skip_chain_through_a_p2p_edge_and_a_collective_edge) {
  // Only rank 2's host blocks: rank 3 waits on it through the P2P edge and ranks 0,1,3 through
  // world all_reduce #4, which rank 2 owes after the recv it sits in.
  json report = triage(pp4_documents(p2p_skip_program({2}), true, false));
  check_p2p_skip_decided_by_records(report);
  const json* missing = nullptr;
  for (const json& comm : report["communicators"])
    for (const json& finding : comm["findings"])
      if (finding["kind"] == "missing-collective" && comm["is_world"] == true) missing = &finding;
  BOOST_REQUIRE(missing != nullptr);
  BOOST_TEST(ints((*missing)["waited_on_ranks"]) == std::vector<int>({2}));
  BOOST_TEST((*missing)["culprit_ranks"].empty());  // explained by its own wait in the recv
}

BOOST_AUTO_TEST_CASE(p2p_skip_with_blocked_receivers_and_no_records_stays_undecided) {
  // P2P on communicators of their own, and on the world communicator as in the real captures:
  // NCCL's counts do not order a send against a collective, on one communicator or across two.
  for (bool p2p_on_world : {false, true}) {
    BOOST_TEST_CONTEXT("p2p_on_world " << p2p_on_world) {
      check_undecided_without_records(triage(pp4_documents(p2p_skip_program({2, 3}), false, p2p_on_world)));
      check_undecided_without_records(triage(pp4_documents(p2p_skip_program({2}), false, p2p_on_world)));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_receiver_that_moved_its_recv_reads_the_same_counts_as_a_skipped_send) {
  // Why NCCL's counts decide nothing here (docs/triage.md rule 3, "Not done"): the premise of a
  // counts rule ("rank 2 sits in recv #8 from rank 1 with 3 world all_reduces, rank 1 launched
  // world #4 after only 7 sends to rank 2: rank 1 moved past the send it owes") holds, yet rank 2
  // is out of order. The records tell the two apart; the counts stay undecided.
  for (bool p2p_on_world : {false, true}) {
    BOOST_TEST_CONTEXT("p2p_on_world " << p2p_on_world) {
      std::vector<PpRank> program = moved_recv_program();
      json counts = triage(pp4_documents(program, false, p2p_on_world));
      check_undecided_without_records(counts);
      BOOST_TEST(counts["graph"]["nodes"][1]["program_order"]["communicators"][0]["collectives_launched"] == 4);
      BOOST_TEST(counts["graph"]["nodes"][2]["program_order"]["communicators"][0]["collectives_launched"] == 3);
      auto sends_to_2 = std::count_if(program[1].issued.begin(), program[1].issued.end(),
                                      [](const PpOp& op) { return op.what == "send" && op.peer == 2; });
      BOOST_TEST(sends_to_2 == 7);
      json records = triage(pp4_documents(program, true, p2p_on_world));
      std::string text = headline(records);
      BOOST_TEST(ints(records["culprit_ranks"]) == std::vector<int>({2}), text);
      BOOST_TEST(records["suspect_ranks"].empty(), text);
      const json* decision = program_order_decision(records);
      BOOST_REQUIRE(decision != nullptr);
      BOOST_TEST(ints((*decision)["nodes"]) == std::vector<int>({2}));
      std::string why = (*decision)["program_order"][0].get<std::string>();
      BOOST_TEST(why.find("rank 2: its own records repeat every 3 operations of the two kinds and put a collective on "
                          "pg 0 next, before the recv 2<-1 #8 on pg 0") != std::string::npos, why);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_lone_breaker_whose_records_explain_its_wait_is_no_culprit) {
  // The counter-example with rank 0's host going on: it issues its send #8 to rank 1 (queued
  // behind world #4), which rank 1, waiting in world #4, has not posted the recv for. Rank 1 alone
  // breaks the cycle, yet its own records put that recv after the all_reduce it sits in (rule 3):
  // no culprit; ranks 2 and 3, whose records put world #4 before the recv each sits in, are
  // suspects beside it (before: culprit rank 1, a waiter).
  json report = triage(pp4_documents(moved_recv_program(true), true, false));
  std::string text = headline(report);
  BOOST_TEST(report["culprit_ranks"].empty(), text);
  BOOST_TEST(ints(report["suspect_ranks"]) == std::vector<int>({1, 2, 3}), text);
  BOOST_TEST(text.find("Undecided between ranks 2,3") != std::string::npos, text);
}
