// Hostile memory: a communicator laid out with the REAL NCCL 2.28.9 profile
// in synthetic memory, corrupted field by field. Every decode must return,
// flag the field (warnings / unavailable), finish fast, and never allocate in
// proportion to a garbage count (the largest single allocation is measured).
#define BOOST_TEST_MODULE hostile_comm
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <chrono>
#include <cstdlib>
#include <new>

#include "layout/layout_profile.h"
#include "nccl/comm_decoder.h"
#include "nccl/comm_scanner.h"
#include "nccl/object_view.h"
#include "support/synthetic.h"
#include "util/strings.h"

// The largest single allocation since the last reset: a count read from memory
// turned into a vector size would show up here.
static std::atomic<size_t> g_largest_allocation{0};
void* operator new(size_t size) {
  size_t seen = g_largest_allocation.load();
  while (size > seen && !g_largest_allocation.compare_exchange_weak(seen, size)) {
  }
  if (void* memory = std::malloc(size ? size : 1)) return memory;
  throw std::bad_alloc();
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, size_t) noexcept { std::free(memory); }

using nlohmann::json;
using nsc::LayoutProfile;
using nsc::test::SyntheticTarget;

namespace {

constexpr uint64_t kHeap = 0x10000000;
constexpr uint64_t kComm = kHeap + 0x40;
constexpr uint64_t kAbortFlag = 0x20000000;
constexpr uint64_t kUserRanks = 0x21000000;
constexpr uint64_t kShared = 0x22000000;
constexpr uint64_t kProxyState = 0x23000000;
constexpr uint64_t kArgs = 0x24000000;
constexpr uint64_t kTask = 0x25000000;
constexpr uint64_t kBig = 0x40000000;        // for long lists and wide arrays
constexpr uint64_t kUnmapped = 0xdead0000000;
constexpr double kSecondsPerDecode = 3.0;    // generous: ASan builds are slow
constexpr size_t kLargestAllowedAllocation = 16u << 20;

const LayoutProfile& real_layout() {
  static const LayoutProfile layout = nsc::read_layout_profile(
      std::string(NCCLSCOPE_SOURCE_DIR) + "/native/profiles/9fcf74d93a8c3605bf7718f594d0a24366e38536.json");
  return layout;
}

// Offset of a member path in a struct of the real layout.
uint64_t offset_of(const std::string& type, const std::string& path) {
  const nsc::StructLayout* layout = real_layout().find_struct(type);
  BOOST_REQUIRE_MESSAGE(layout != nullptr, "no struct " + type);
  std::string why;
  auto field = nsc::ObjectView(nullptr, &real_layout(), layout, 0).resolve(path, &why);
  BOOST_REQUIRE_MESSAGE(field.has_value(), type + "." + path + ": " + why);
  return field->offset;
}

uint64_t size_of(const std::string& type) { return real_layout().find_struct(type)->size; }

struct HostileComm {
  SyntheticTarget target;

  template <typename T>
  void set(const std::string& type, uint64_t base, const std::string& path, T value) {
    target.put<T>(base + offset_of(type, path), value);
  }
  template <typename T>
  void comm(const std::string& path, T value) { set<T>("ncclComm", kComm, path, value); }

  // The comm_fixture's healthy 2-rank comm: rank 1, AllReduce launched 7 times,
  // one proxy op (opCount 42), one planned AllReduce.
  HostileComm() {
    target.add_block(kHeap, (2u << 20));
    comm<uint64_t>("startMagic", nsc::kNcclMagic);
    comm<uint64_t>("endMagic", nsc::kNcclMagic);
    comm<uint64_t>("commHash", 0x6db0a96d9cb7fc37ull);
    comm<int32_t>("rank", 1);
    comm<int32_t>("nRanks", 2);
    comm<int32_t>("nChannels", 2);
    comm<int32_t>("p2pnChannels", 2);
    comm<uint64_t>("seqNumber[4]", 7);
    comm<uint64_t>("groupNext[0]", 1);
    comm<uint64_t>("groupNext[1]", 1);
    target.add_block(kAbortFlag, 64);
    comm<uint64_t>("abortFlag", kAbortFlag);
    target.add_block(kUserRanks, 64);
    target.put<int32_t>(kUserRanks, 1);
    for (int c = 0; c < 2; ++c) {
      std::string channel = "channels[" + std::to_string(c) + "]";
      comm<uint64_t>(channel + ".ring.userRanks", kUserRanks);
      comm<int32_t>(channel + ".ring.index", 1);
      comm<int32_t>(channel + ".tree.down[0]", -1);
      comm<int32_t>(channel + ".tree.down[1]", -1);
      comm<int32_t>(channel + ".tree.down[2]", -1);
    }
    target.add_block(kShared, size_of("ncclSharedResources"));
    set<uint64_t>("ncclSharedResources", kShared, "p2pOpCount[1]", 3);
    comm<uint64_t>("sharedRes", kShared);
    target.add_block(kProxyState, size_of("ncclProxyState"));
    target.add_block(kArgs, size_of("ncclProxyArgs"));
    set<uint64_t>("ncclProxyState", kProxyState, "progressState.active", kArgs);
    set<int32_t>("ncclProxyArgs", kArgs, "nsubs", 1);
    set<uint64_t>("ncclProxyArgs", kArgs, "opCount", 42);
    set<uint64_t>("ncclProxyArgs", kArgs, "subs[0].posted", 4);
    comm<uint64_t>("proxyState", kProxyState);
    target.add_block(kTask, size_of("ncclTaskColl"));
    set<int32_t>("ncclTaskColl", kTask, "func", 4);
    set<uint64_t>("ncclTaskColl", kTask, "count", 1024);
    comm<uint64_t>("planner.collSorter.head", kTask);
    comm<int32_t>("planner.nTasksColl", 1);
  }

  // Decodes within the time bound and without a large allocation.
  json decode(json* errors = nullptr) {
    json local_errors = json::array();
    g_largest_allocation = 0;
    auto start = std::chrono::steady_clock::now();
    json entry = nsc::decode_communicator(target, real_layout(), kComm, errors ? errors : &local_errors);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    BOOST_TEST(seconds < kSecondsPerDecode, "decode took " << seconds << " s");
    BOOST_TEST(g_largest_allocation.load() < kLargestAllowedAllocation,
               "largest allocation " << g_largest_allocation.load() << " bytes");
    BOOST_TEST(entry.dump().size() < (4u << 20), "document of " << entry.dump().size() << " bytes");
    return entry;
  }
};

bool mentions(const json& value, const std::string& text) { return value.dump().find(text) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(healthy_comm_decodes_exactly) {
  HostileComm memory;
  json errors = json::array();
  json comm = memory.decode(&errors);
  BOOST_TEST(comm["comm_hash"] == "0x6db0a96d9cb7fc37");
  BOOST_TEST(comm["rank"] == 1);
  BOOST_TEST(comm["nranks"] == 2);
  BOOST_TEST(comm["seq_launched"]["AllReduce"] == 7);
  BOOST_TEST(comm["channels"].size() == 2u);
  BOOST_TEST(comm["channels"][1]["ring"]["user_ranks"] == json({1, 0}));
  BOOST_TEST(comm["p2p_op_count"]["total"] == 3);
  BOOST_REQUIRE(comm["proxy_ops"].size() == 1u);
  BOOST_TEST(comm["proxy_ops"][0]["op_count"] == 42);
  BOOST_TEST(comm["proxy_ops"][0]["subs"][0]["posted"] == 4);
  BOOST_TEST(comm["planned"]["colls"].size() == 1u);
  BOOST_TEST(comm["planned"]["colls"][0]["count"] == 1024);
  BOOST_TEST(comm["warnings"].empty(), comm["warnings"].dump());
  BOOST_TEST(errors.empty(), errors.dump());
}

BOOST_AUTO_TEST_CASE(nranks_int_max_is_flagged_and_not_allocated) {
  HostileComm memory;
  memory.comm<int32_t>("nRanks", 0x7fffffff);
  memory.comm<int32_t>("planner.nTasksP2p", 0x7fffffff);
  memory.comm<uint64_t>("planner.peers", kHeap);  // a readable, zeroed "peers array"
  json comm = memory.decode();
  BOOST_TEST(comm["nranks"] == 0x7fffffff);
  BOOST_TEST(mentions(comm["warnings"], "nRanks is 2147483647, not a plausible rank count"));
  // No per-rank array is read or built for a garbage count.
  BOOST_TEST(comm["channels"][0]["ring"]["user_ranks"].is_null());
  BOOST_TEST(comm["rank"] == 1);
}

BOOST_AUTO_TEST_CASE(negative_nchannels_is_flagged_and_clamped) {
  HostileComm memory;
  memory.comm<int32_t>("nChannels", -5);
  json comm = memory.decode();
  BOOST_TEST(comm["channels"].empty());
  BOOST_TEST(mentions(comm["warnings"], "nChannels is -5, outside 0..64"));
  memory.comm<int32_t>("nChannels", 0x7fffffff);
  comm = memory.decode();
  BOOST_TEST(comm["channels"].size() == 64u);  // MAXCHANNELS of the real layout
  BOOST_TEST(mentions(comm["warnings"], "nChannels is 2147483647, outside 0..64"));
}

BOOST_AUTO_TEST_CASE(user_ranks_in_unmapped_memory_is_unavailable_with_address) {
  HostileComm memory;
  memory.comm<uint64_t>("channels[0].ring.userRanks", kUnmapped);
  json errors = json::array();
  json comm = memory.decode(&errors);
  BOOST_TEST(comm["channels"][0]["ring"]["user_ranks"].is_null());
  BOOST_TEST(comm["channels"][1]["ring"]["user_ranks"] == json({1, 0}));
  std::string why = comm["unavailable"]["channels[0].ring.user_ranks"];
  BOOST_TEST(why.find("not mapped") != std::string::npos, why);
  BOOST_TEST(mentions(errors, "0xdead0000000"));
}

BOOST_AUTO_TEST_CASE(proxy_op_list_with_cycle_is_shown_once) {
  HostileComm memory;
  memory.set<uint64_t>("ncclProxyArgs", kArgs, "next", kArgs);
  memory.set<uint64_t>("ncclProxyArgs", kArgs, "nextPeer", kArgs);
  json comm = memory.decode();
  BOOST_TEST(comm["proxy_ops"].size() == 1u);
  BOOST_TEST(mentions(comm["warnings"], "proxy op list revisits 0x24000000 (cycle)"));
}

// 10^6 distinct ncclProxyArgs: overlapping nodes 8 bytes apart, where every
// 8-byte word is the `next` pointer of the node it belongs to.
BOOST_AUTO_TEST_CASE(proxy_op_list_of_a_million_nodes_is_capped) {
  HostileComm memory;
  const uint64_t nodes = 1000000, stride = 8;
  const uint64_t next = offset_of("ncclProxyArgs", "next");
  const uint64_t span = nodes * stride + size_of("ncclProxyArgs");
  uint8_t* bytes = memory.target.add_block(kBig, span);
  for (uint64_t at = 0; at + 8 <= span; at += 8) {
    uint64_t node = kBig + at - next;  // the node whose `next` lives here
    uint64_t value = at >= next && (at - next) / stride + 1 < nodes ? node + stride : 0;
    std::memcpy(bytes + at, &value, 8);
  }
  memory.set<uint64_t>("ncclProxyState", kProxyState, "progressState.active", kBig);
  json comm = memory.decode();
  BOOST_TEST(comm["proxy_ops"].size() <= 4097u);
  BOOST_TEST(comm["proxy_ops"].size() >= 4000u);
  // Every op also has a garbage nsubs: warnings are capped, the last one is kept.
  BOOST_TEST(comm["warnings"].size() == 65u);
  BOOST_TEST(mentions(comm["warnings"].back(), "more warnings left out; the last: "));
  BOOST_TEST(mentions(comm["warnings"].back(), "proxy op list longer than 4096 entries"));
}

BOOST_AUTO_TEST_CASE(huge_nsubs_is_flagged_and_not_walked) {
  HostileComm memory;
  memory.set<int32_t>("ncclProxyArgs", kArgs, "nsubs", 0x7fffffff);
  json comm = memory.decode();
  BOOST_REQUIRE(comm["proxy_ops"].size() == 1u);
  BOOST_TEST(comm["proxy_ops"][0]["subs"].empty());
  BOOST_TEST(mentions(comm["warnings"], "nsubs is 2147483647"));
  memory.set<int32_t>("ncclProxyArgs", kArgs, "nsubs", -1);
  comm = memory.decode();
  BOOST_TEST(mentions(comm["warnings"], "nsubs is -1"));
}

BOOST_AUTO_TEST_CASE(planner_list_with_cycle_is_stopped) {
  HostileComm memory;
  memory.set<uint64_t>("ncclTaskColl", kTask, "next", kTask);
  json comm = memory.decode();
  BOOST_TEST(comm["planned"]["colls"].size() == 1u);
  BOOST_TEST(mentions(comm["warnings"], "collSorter.head list has a cycle at 0x25000000"));
}

BOOST_AUTO_TEST_CASE(planner_list_of_a_million_nodes_is_capped) {
  HostileComm memory;
  const uint64_t nodes = 1000000, stride = 8;
  const uint64_t next = offset_of("ncclTaskColl", "next");
  const uint64_t span = nodes * stride + size_of("ncclTaskColl");
  uint8_t* bytes = memory.target.add_block(kBig, span);
  for (uint64_t at = next; at + 8 <= span; at += 8) {
    uint64_t node = kBig + at - next;
    uint64_t value = (at - next) / stride + 1 < nodes ? node + stride : 0;
    std::memcpy(bytes + at, &value, 8);
  }
  memory.comm<uint64_t>("planner.collSorter.head", kBig);
  json comm = memory.decode();
  BOOST_TEST(comm["planned"]["colls"].size() == 4096u);
  BOOST_TEST(mentions(comm["warnings"], "collSorter.head list longer than 4096 entries; stopped"));
}

BOOST_AUTO_TEST_CASE(garbage_peers_pointer_stops_p2p_walk) {
  HostileComm memory;
  memory.comm<int32_t>("planner.nTasksP2p", 3);
  memory.comm<uint64_t>("planner.peers", kUnmapped);
  json comm = memory.decode();
  BOOST_TEST(comm["planned"]["p2p"].empty());
  BOOST_TEST(mentions(comm["warnings"], "planner peers[0].sendQueue.head"));
  BOOST_TEST(comm["warnings"].size() == 1u);
}

// Every peer's queues point to garbage: the walk stops after nTasksP2p tasks
// (NCCL's own count) instead of visiting min(nRanks, 2^20) peers.
BOOST_AUTO_TEST_CASE(p2p_walk_is_bounded_by_the_task_count) {
  HostileComm memory;
  const uint64_t peers = 100000, peer_size = size_of("ncclKernelPlanner::Peer");
  uint8_t* bytes = memory.target.add_block(kBig, peers * peer_size);
  std::memset(bytes, 0x41, peers * peer_size);  // every head: 0x4141..41 (unmapped)
  memory.comm<int32_t>("nRanks", 100000);
  memory.comm<int32_t>("planner.nTasksP2p", 5);
  memory.comm<uint64_t>("planner.peers", kBig);
  json comm = memory.decode();
  BOOST_TEST(comm["planned"]["p2p"].size() == 5u);
  BOOST_TEST(comm["warnings"].size() <= 65u);
}

BOOST_AUTO_TEST_CASE(garbage_shared_resources_and_overflowing_counters) {
  HostileComm memory;
  memory.set<int64_t>("ncclSharedResources", kShared, "p2pOpCount[0]", INT64_MAX);
  memory.set<int64_t>("ncclSharedResources", kShared, "p2pOpCount[1]", INT64_MAX);
  json comm = memory.decode();
  BOOST_TEST(comm["p2p_op_count"]["total"].is_null());
  BOOST_TEST(mentions(comm["unavailable"], "overflows"));
  memory.comm<uint64_t>("sharedRes", kUnmapped);
  json errors = json::array();
  comm = memory.decode(&errors);
  BOOST_TEST(comm["p2p_op_count"]["total"].is_null());
  BOOST_TEST(comm["p2p_op_count"]["per_channel"] == json({nullptr, nullptr}));
  BOOST_TEST(mentions(comm["unavailable"]["p2p_op_count.per_channel[0]"], "not mapped"));
  BOOST_TEST(mentions(errors, nsc::hex(kUnmapped + offset_of("ncclSharedResources", "p2pOpCount[0]"))));
}

BOOST_AUTO_TEST_CASE(proxy_state_and_abort_flag_pointers_to_garbage) {
  HostileComm memory;
  memory.comm<uint64_t>("proxyState", 0x1);
  memory.comm<uint64_t>("abortFlag", kUnmapped);
  json comm = memory.decode();
  BOOST_TEST(comm["proxy_ops"].is_null());
  BOOST_TEST(comm["health"]["abort_flag"].is_null());
  BOOST_TEST(mentions(comm["unavailable"]["health.abort_flag"], "not mapped"));
  BOOST_TEST(comm["rank"] == 1);  // the rest still answers
}

// A regCache of 4,096 slots, each pointing at one registration whose 72
// ipcInfos[] all point at readable memory: 294,912 IPC imports if each were
// listed (found by the comm_decoders fuzzer: 6 s for one input, a document of
// tens of MB). At most 512 buffers and 512 imports are decoded for the whole cache, said.
BOOST_AUTO_TEST_CASE(registrations_with_imports_everywhere_are_capped) {
  HostileComm memory;
  const uint64_t slots = kBig, reg = kBig + 0x100000, info = kBig + 0x200000;
  memory.target.add_block(kBig, 0x300000);
  for (uint64_t i = 0; i < 4096; ++i) memory.target.put<uint64_t>(slots + 8 * i, reg);
  for (int i = 0; i < 72; ++i) memory.set<uint64_t>("ncclReg", reg, "ipcInfos[" + std::to_string(i) + "]", info);
  memory.set<uint64_t>("ncclReg", reg, "endAddr", 0x200000);
  memory.comm<uint64_t>("regCache.slots", slots);
  memory.comm<int32_t>("regCache.capacity", 4096);
  memory.comm<int32_t>("regCache.population", 4096);
  json comm = memory.decode();
  const json& buffers = comm["cuda"]["registrations"]["buffers"];
  BOOST_REQUIRE(buffers.is_array());
  size_t imports = 0;
  for (const json& buffer : buffers) imports += buffer["ipc_imports"].size();
  BOOST_TEST(buffers.size() == 512u);
  BOOST_TEST(imports == 512u);
  BOOST_TEST(mentions(comm["warnings"], "IPC imports past the first 512 not decoded"));
  BOOST_TEST(mentions(comm["warnings"], "regCache: only the first 512 slots decoded"));
  BOOST_TEST(comm["rank"] == 1);
}

// 64 channels whose 256 peers all share one peer with every connector connected over the P2P
// transport: 65,536 entries if each were listed (cyclic fuzz memory does this). At most 2,048
// are decoded (64 channels x 8 local peers x 2 directions x 2 connectors of a real node), said.
BOOST_AUTO_TEST_CASE(p2p_connectors_everywhere_are_capped) {
  HostileComm memory;
  const uint64_t peers = kBig, peer = kBig + 0x1000, connection = kBig + 0x100000;
  memory.target.add_block(kBig, 0x200000);
  for (uint64_t i = 0; i < 256; ++i) memory.target.put<uint64_t>(peers + 8 * i, peer);
  for (const char* direction : {"send", "recv"})
    for (int i = 0; i < 2; ++i) {
      std::string connector = std::string(direction) + "[" + std::to_string(i) + "]";
      memory.set<int32_t>("ncclChannelPeer", peer, connector + ".connected", 1);
      memory.set<uint64_t>("ncclChannelPeer", peer, connector + ".proxyConn.connection", connection);
    }
  memory.comm<int32_t>("nRanks", 256);
  memory.comm<int32_t>("nChannels", 64);
  for (int c = 0; c < 64; ++c) memory.comm<uint64_t>("channels[" + std::to_string(c) + "].peers", peers);
  json comm = memory.decode();
  BOOST_TEST(comm["cuda"]["p2p_transport"].size() == 2048u);
  BOOST_TEST(mentions(comm["warnings"], "p2p_transport: stopped at 2048 connectors"));
  BOOST_TEST(comm["rank"] == 1);
}

// Memory where every 16 bytes hold NCCL_MAGIC: many candidates, all rejected,
// in bounded time.
BOOST_AUTO_TEST_CASE(scanner_over_memory_full_of_magic) {
  HostileComm memory;
  const uint64_t span = 4u << 20;
  uint8_t* bytes = memory.target.add_block(kBig, span);
  for (uint64_t at = 0; at < span; at += 8) std::memcpy(bytes + at, &nsc::kNcclMagic, 8);
  auto start = std::chrono::steady_clock::now();
  nsc::Discovery found = nsc::discover_communicators(memory.target, real_layout(), {});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST(seconds < 20.0, "scan took " << seconds << " s");
  BOOST_TEST(found.addresses.size() == 1u);  // only the real comm validates
  BOOST_TEST(found.addresses[0] == kComm);
  BOOST_TEST(found.candidates > 200000u);
  BOOST_TEST(found.rejected.size() <= 256u);  // listed up to a cap; `candidates` has the count
}

// Repeated memory where many overlapping candidates validate (found by the
// comm_decoders fuzzer: quadratic echo filtering, then one decode per echo).
BOOST_AUTO_TEST_CASE(overlapping_valid_comms_count_once) {
  HostileComm memory;
  for (uint64_t echo : {kComm + 256, kComm + 512}) {
    memory.target.put<uint64_t>(echo + offset_of("ncclComm", "startMagic"), nsc::kNcclMagic);
    memory.target.put<uint64_t>(echo + offset_of("ncclComm", "endMagic"), nsc::kNcclMagic);
    memory.target.put<int32_t>(echo + offset_of("ncclComm", "nRanks"), 2);
  }
  nsc::Discovery found = nsc::discover_communicators(memory.target, real_layout(), {});
  BOOST_TEST(found.addresses == std::vector<uint64_t>{kComm});
  BOOST_TEST(mentions(found.rejected, "inside comm 0x10000040"));
}

// A 14 TiB private read-write reservation (what a sanitizer's shadow memory
// looks like in /proc/PID/maps): reading it all would never end.
class ReservationTarget : public SyntheticTarget {
 public:
  static constexpr uint64_t kStart = 0x10007fff8000ull - (14ull << 40);
  void finish() {
    all_ = SyntheticTarget::regions();
    nsc::MemoryRegion huge;
    huge.start = kStart;
    huge.end = kStart + (14ull << 40);
    huge.readable = huge.writable = true;
    all_.push_back(huge);
    std::sort(all_.begin(), all_.end(), [](auto& a, auto& b) { return a.start < b.start; });
  }
  const std::vector<nsc::MemoryRegion>& regions() const override { return all_; }
  bool read(uint64_t addr, void* buf, size_t len, nsc::ReadError* error) override {
    if (addr >= kStart && addr < kStart + (14ull << 40)) {
      reserved_bytes_read += len;
      std::memset(buf, 0, len);
      return true;
    }
    return SyntheticTarget::read(addr, buf, len, error);
  }
  uint64_t reserved_bytes_read = 0;

 private:
  std::vector<nsc::MemoryRegion> all_;
};

BOOST_AUTO_TEST_CASE(scanner_skips_a_terabyte_reservation) {
  HostileComm memory;  // only for its layout helpers; the comm is rebuilt below
  ReservationTarget target;
  target.add_block(kHeap, 2u << 20);
  target.put<uint64_t>(kComm + offset_of("ncclComm", "startMagic"), nsc::kNcclMagic);
  target.put<uint64_t>(kComm + offset_of("ncclComm", "endMagic"), nsc::kNcclMagic);
  target.put<int32_t>(kComm + offset_of("ncclComm", "nRanks"), 2);
  target.finish();
  auto start = std::chrono::steady_clock::now();
  nsc::Discovery found = nsc::discover_communicators(target, real_layout(), {});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST(seconds < 5.0, "scan took " << seconds << " s");
  BOOST_TEST(target.reserved_bytes_read == 0u);
  BOOST_TEST(found.addresses == std::vector<uint64_t>{kComm});
  BOOST_TEST(found.regions_scanned == 1u);
  // The skipped reservation is listed for the user, with its exact extent.
  BOOST_REQUIRE(found.skipped_regions.size() == 1u);
  BOOST_TEST(found.skipped_regions[0]["start"] == "0x2007fff8000");  // 0x10007fff8000 - 14 TiB
  BOOST_TEST(found.skipped_regions[0]["size"] == 14ull << 40);
  BOOST_TEST(found.skipped_regions[0]["reason"].get<std::string>().find("larger than 64 GiB") != std::string::npos);
}

// Only reservations are listed: a huge [heap] is scanned, and regions that could
// never hold a comm (read-only, shared) are not "skipped"; a registry hit scans nothing.
BOOST_AUTO_TEST_CASE(skipped_regions_name_only_passed_over_candidates) {
  nsc::MemoryRegion heap, shared, read_only, reservation;
  heap.start = 0x1000; heap.end = heap.start + (65ull << 30); heap.path = "[heap]";
  shared = reservation = read_only = heap;
  shared.path = reservation.path = read_only.path = "";
  heap.readable = heap.writable = shared.readable = shared.writable = true;
  shared.shared = true;
  read_only.readable = true;
  reservation.readable = reservation.writable = true;
  BOOST_TEST(nsc::scan_skip_reason(heap).empty());
  BOOST_TEST(nsc::scan_skip_reason(shared).empty());
  BOOST_TEST(nsc::scan_skip_reason(read_only).empty());
  BOOST_TEST(!nsc::scan_skip_reason(reservation).empty());
  reservation.end = reservation.start + (64ull << 30);  // exactly the limit: scanned
  BOOST_TEST(nsc::scan_skip_reason(reservation).empty());
  HostileComm memory;
  nsc::Discovery found = nsc::discover_communicators(memory.target, real_layout(), {});
  BOOST_TEST(found.skipped_regions.empty());
}
