// Decoders and the scanner on synthetic memory laid out by a hand-built
// layout: exact values, unavailable fields, and corruption.
#define BOOST_TEST_MODULE decoder_synthetic
#include <boost/test/unit_test.hpp>

#include "nccl/comm_decoder.h"
#include "nccl/comm_scanner.h"
#include "support/synthetic.h"

using nsc::LayoutProfile;
using nsc::ValueKind;
using nsc::test::StructBuilder;
using nsc::test::SyntheticTarget;
using nlohmann::json;

namespace {

constexpr uint64_t kCommSize = 1024;
constexpr uint64_t kComm = 0x10000010;      // 16-aligned, inside the heap block
constexpr uint64_t kHeap = 0x10000000;
constexpr uint64_t kAbortFlag = 0x20000000;  // "cudaHostAlloc" memory, maybe not saved
constexpr uint64_t kShared = 0x30000000;
constexpr uint64_t kProxy = 0x40000000;
constexpr uint64_t kArgs = 0x50000000;

LayoutProfile make_layout() {
  LayoutProfile layout;
  layout.nccl_version = "2.28.9";
  layout.structs["ncclRing"] = StructBuilder("ncclRing")
      .scalar("prev", 0, 4, ValueKind::kSigned).scalar("next", 4, 4, ValueKind::kSigned)
      .scalar("userRanks", 8, 8, ValueKind::kPointer, "int").scalar("index", 16, 4, ValueKind::kSigned)
      .build(24);
  layout.structs["ncclTree"] = StructBuilder("ncclTree")
      .scalar("depth", 0, 4, ValueKind::kSigned).scalar("up", 4, 4, ValueKind::kSigned)
      .array("down", 8, 4, 3, ValueKind::kSigned).build(20);
  layout.structs["ncclChannel"] = StructBuilder("ncclChannel")
      .scalar("ring", 0, 24, ValueKind::kStruct, "ncclRing")
      .scalar("tree", 24, 20, ValueKind::kStruct, "ncclTree").scalar("id", 44, 4, ValueKind::kSigned)
      .build(48);
  layout.structs["ncclSharedResources"] = StructBuilder("ncclSharedResources")
      .array("p2pOpCount", 0, 8, 4, ValueKind::kUnsigned).build(32);
  layout.structs["ncclProxySubArgs"] = StructBuilder("ncclProxySubArgs")
      .scalar("channelId", 0, 4, ValueKind::kSigned).scalar("peer", 4, 4, ValueKind::kSigned)
      .scalar("nsteps", 8, 4, ValueKind::kSigned).scalar("nbytes", 16, 8, ValueKind::kSigned)
      .scalar("posted", 24, 8, ValueKind::kUnsigned).scalar("transmitted", 32, 8, ValueKind::kUnsigned)
      .scalar("done", 40, 8, ValueKind::kUnsigned).build(48);
  layout.structs["ncclProxyArgs"] = StructBuilder("ncclProxyArgs")
      .array("subs", 0, 48, 2, ValueKind::kStruct, "ncclProxySubArgs")
      .scalar("nsubs", 96, 4, ValueKind::kSigned).scalar("opCount", 104, 8, ValueKind::kUnsigned)
      .scalar("coll", 112, 1, ValueKind::kUnsigned).scalar("protocol", 113, 1, ValueKind::kUnsigned)
      .scalar("next", 120, 8, ValueKind::kPointer, "ncclProxyArgs")
      .scalar("nextPeer", 128, 8, ValueKind::kPointer, "ncclProxyArgs").build(136);
  layout.structs["ncclProxyProgressState"] = StructBuilder("ncclProxyProgressState")
      .scalar("active", 8, 8, ValueKind::kPointer, "ncclProxyArgs").build(16);
  layout.structs["ncclProxyState"] = StructBuilder("ncclProxyState")
      .scalar("progressState", 0, 16, ValueKind::kStruct, "ncclProxyProgressState").build(16);
  layout.structs["ncclComm"] = StructBuilder("ncclComm")
      .scalar("startMagic", 0, 8, ValueKind::kUnsigned)
      .array("channels", 16, 48, 4, ValueKind::kStruct, "ncclChannel")
      .scalar("commHash", 208, 8, ValueKind::kUnsigned).scalar("rank", 216, 4, ValueKind::kSigned)
      .scalar("nRanks", 220, 4, ValueKind::kSigned).scalar("cudaDev", 224, 4, ValueKind::kSigned)
      .scalar("busId", 232, 8, ValueKind::kSigned).scalar("nChannels", 240, 4, ValueKind::kSigned)
      .array("seqNumber", 248, 8, 5, ValueKind::kUnsigned)
      .scalar("collOpCount", 288, 8, ValueKind::kUnsigned)
      .scalar("asyncResult", 296, 4, ValueKind::kEnum, "ncclResult_t")
      .scalar("abortFlag", 304, 8, ValueKind::kPointer, "uint32_t")
      .scalar("destroyFlag", 312, 4, ValueKind::kUnsigned)
      .scalar("sharedRes", 320, 8, ValueKind::kPointer, "ncclSharedResources")
      .scalar("proxyState", 328, 8, ValueKind::kPointer, "ncclProxyState")
      .scalar("endMagic", kCommSize - 8, 8, ValueKind::kUnsigned).build(kCommSize);
  nsc::EnumLayout result;
  result.name = "ncclResult_t";
  result.values = {{0, "ncclSuccess"}, {3, "ncclInternalError"}, {5, "ncclRemoteError"}};
  layout.enums["ncclResult_t"] = result;
  return layout;
}

// A healthy 2-rank comm at kComm, rank 1, AllReduce launched 7 times.
void fill_comm(SyntheticTarget& target, bool abort_flag_saved = true) {
  target.add_block(kHeap, 0x2000);
  target.put<uint64_t>(kComm, nsc::kNcclMagic);
  target.put<uint64_t>(kComm + kCommSize - 8, nsc::kNcclMagic);
  target.put<uint64_t>(kComm + 208, 0x6db0a96d9cb7fc37ull);
  target.put<int32_t>(kComm + 216, 1);
  target.put<int32_t>(kComm + 220, 2);
  target.put<int32_t>(kComm + 224, 1);
  target.put<int64_t>(kComm + 232, 0x19000);  // 0000:19:00.0
  target.put<int32_t>(kComm + 240, 2);
  target.put<uint64_t>(kComm + 248 + 4 * 8, 7);  // AllReduce
  target.put<uint64_t>(kComm + 248 + 2 * 8, 1);  // AllGather
  target.put<uint64_t>(kComm + 288, 8);
  target.put<int32_t>(kComm + 296, 0);
  target.put<uint64_t>(kComm + 304, kAbortFlag);
  target.add_block(kAbortFlag, 64, abort_flag_saved);
  if (abort_flag_saved) target.put<uint32_t>(kAbortFlag, 0);
  target.put<uint64_t>(kComm + 320, kShared);
  target.add_block(kShared, 32);
  target.put<uint64_t>(kShared + 8, 3);  // p2pOpCount[1]
  for (int c = 0; c < 2; ++c) {
    uint64_t channel = kComm + 16 + c * 48;
    target.put<int32_t>(channel + 0, 0);   // ring.prev
    target.put<int32_t>(channel + 4, 0);   // ring.next
    target.put<int32_t>(channel + 16, 1);  // ring.index
    target.put<int32_t>(channel + 24 + 4, 0);   // tree.up
    target.put<int32_t>(channel + 24 + 8, -1);  // tree.down[0]
    target.put<int32_t>(channel + 24 + 12, -1);
    target.put<int32_t>(channel + 24 + 16, -1);
  }
}

json decode(SyntheticTarget& target, const LayoutProfile& layout, json* errors) {
  return nsc::decode_communicator(target, layout, kComm, errors);
}

}  // namespace

BOOST_AUTO_TEST_CASE(identity_counters_and_health) {
  SyntheticTarget target;
  LayoutProfile layout = make_layout();
  fill_comm(target);
  json errors = json::array();
  json comm = decode(target, layout, &errors);
  BOOST_TEST(comm["address"] == "0x10000010");
  BOOST_TEST(comm["comm_hash"] == "0x6db0a96d9cb7fc37");
  BOOST_TEST(comm["rank"] == 1);
  BOOST_TEST(comm["nranks"] == 2);
  BOOST_TEST(comm["cuda_dev"] == 1);
  BOOST_TEST(comm["bus_id"] == "0000:19:00.0");
  BOOST_TEST(comm["seq_launched"]["AllReduce"] == 7);
  BOOST_TEST(comm["seq_launched"]["AllGather"] == 1);
  BOOST_TEST(comm["seq_launched"]["Broadcast"] == 0);
  BOOST_TEST(comm["coll_op_count"] == 8);
  BOOST_TEST(comm["health"]["async_result"] == "ncclSuccess");
  BOOST_TEST(comm["health"]["abort_flag"] == false);
  BOOST_TEST(comm["p2p_op_count"]["total"] == 3);
  BOOST_TEST(comm["channels"].size() == 2u);
  BOOST_TEST(comm["channels"][1]["ring"]["index"] == 1);
  BOOST_TEST(comm["channels"][0]["tree"]["down"][0] == -1);
  // Fields this layout lacks are unavailable, with the reason, and not read errors.
  BOOST_TEST(comm["nvml_dev"].is_null());
  BOOST_TEST(comm["unavailable"]["nvml_dev"].get<std::string>().find("no member nvmlDev") != std::string::npos);
  BOOST_TEST(errors.empty(), errors.dump());
  BOOST_TEST(comm["warnings"].empty());
}

BOOST_AUTO_TEST_CASE(unsaved_abort_flag_is_unavailable_not_zero) {
  SyntheticTarget target;
  LayoutProfile layout = make_layout();
  fill_comm(target, /*abort_flag_saved=*/false);
  json errors = json::array();
  json comm = decode(target, layout, &errors);
  BOOST_TEST(comm["health"]["abort_flag"].is_null());
  std::string why = comm["unavailable"]["health.abort_flag"];
  BOOST_TEST(why.find("not saved in core") != std::string::npos);
  BOOST_TEST(errors.size() == 1u);
  BOOST_TEST(errors[0]["address"] == "0x20000000");
}

BOOST_AUTO_TEST_CASE(error_result_is_named) {
  SyntheticTarget target;
  LayoutProfile layout = make_layout();
  fill_comm(target);
  target.put<int32_t>(kComm + 296, 5);
  target.put<uint32_t>(kAbortFlag, 1);
  json errors = json::array();
  json comm = decode(target, layout, &errors);
  BOOST_TEST(comm["health"]["async_result"] == "ncclRemoteError");
  BOOST_TEST(comm["health"]["abort_flag"] == true);
  target.put<int32_t>(kComm + 296, 99);
  comm = decode(target, layout, &errors);
  BOOST_TEST(comm["health"]["async_result"] == "ncclResult_t(99)");
}

BOOST_AUTO_TEST_CASE(corrupt_channel_count_and_ring_are_flagged_and_bounded) {
  SyntheticTarget target;
  LayoutProfile layout = make_layout();
  fill_comm(target);
  target.put<int32_t>(kComm + 240, 1 << 30);  // nChannels garbage
  target.put<int32_t>(kComm + 16 + 4, 17);    // ring.next of channel 0 out of range
  json errors = json::array();
  json comm = decode(target, layout, &errors);
  BOOST_TEST(comm["channels"].size() == 4u);  // clamped to the array bound
  std::string warnings = comm["warnings"].dump();
  BOOST_TEST(warnings.find("nChannels is 1073741824") != std::string::npos);
  BOOST_TEST(warnings.find("ring.next is 17") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(proxy_ops_list_with_cycle_and_huge_nsubs) {
  SyntheticTarget target;
  LayoutProfile layout = make_layout();
  fill_comm(target);
  target.put<uint64_t>(kComm + 328, kProxy);
  target.add_block(kProxy, 16);
  target.put<uint64_t>(kProxy + 8, kArgs);
  target.add_block(kArgs, 0x1000);
  uint64_t second = kArgs + 0x200;
  target.put<int32_t>(kArgs + 96, 1);  // nsubs
  target.put<uint64_t>(kArgs + 104, 42);
  target.put<uint8_t>(kArgs + 112, 4);  // AllReduce
  target.put<uint8_t>(kArgs + 113, 2);  // Simple
  target.put<int32_t>(kArgs + 4, 0);    // sub peer 0
  target.put<int32_t>(kArgs + 8, 8);    // nsteps
  target.put<uint64_t>(kArgs + 24, 4);  // posted
  target.put<uint64_t>(kArgs + 32, 4);  // transmitted
  target.put<uint64_t>(kArgs + 40, 2);  // done
  target.put<uint64_t>(kArgs + 120, second);
  target.put<int32_t>(second + 96, 1 << 30);  // nsubs garbage
  target.put<uint64_t>(second + 120, kArgs);  // cycle back
  json errors = json::array();
  json comm = decode(target, layout, &errors);
  BOOST_REQUIRE(comm["proxy_ops"].size() == 2u);
  json op = comm["proxy_ops"][0];
  BOOST_TEST(op["op_count"] == 42);
  BOOST_TEST(op["collective"] == "AllReduce");
  BOOST_TEST(op["protocol"] == "Simple");
  BOOST_TEST(op["subs"][0]["posted"] == 4);
  BOOST_TEST(op["subs"][0]["done"] == 2);
  BOOST_TEST(comm["proxy_ops"][1]["subs"].empty());
  BOOST_TEST(comm["warnings"].dump().find("nsubs is 1073741824") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(scanner_finds_valid_comm_and_rejects_corrupt_ones) {
  SyntheticTarget target;
  LayoutProfile layout = make_layout();
  fill_comm(target);
  // A second magic with a wrong endMagic, and a third with rank >= nRanks.
  target.add_block(0x60000000, 0x1000);
  target.put<uint64_t>(0x60000000, nsc::kNcclMagic);
  target.add_block(0x70000000, 0x1000);
  target.put<uint64_t>(0x70000000, nsc::kNcclMagic);
  target.put<uint64_t>(0x70000000 + kCommSize - 8, nsc::kNcclMagic);
  target.put<int32_t>(0x70000000 + 216, 5);
  target.put<int32_t>(0x70000000 + 220, 2);
  nsc::Discovery found = nsc::discover_communicators(target, layout, {});
  BOOST_TEST(found.method == "scan");
  BOOST_TEST(found.addresses == std::vector<uint64_t>{kComm});
  BOOST_TEST(found.rejected.size() == 2u);
  std::string rejected = found.rejected.dump();
  BOOST_TEST(rejected.find("endMagic is 0x0") != std::string::npos);
  BOOST_TEST(rejected.find("rank 5 outside 0..1") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(registry_route_uses_symbols_and_skips_null_slots) {
  SyntheticTarget target;
  LayoutProfile layout = make_layout();
  fill_comm(target);
  const uint64_t bias = 0x7f0000000000ull;
  layout.symbols["ncclComms"] = 0x100;
  layout.symbols["nNcclComms"] = 0x108;
  target.add_block(bias, 0x1000);
  target.add_block(0x80000000, 0x100);
  target.put<uint64_t>(bias + 0x100, 0x80000000);
  target.put<int32_t>(bias + 0x108, 4);
  target.put<uint64_t>(0x80000000 + 8, kComm);  // slots: NULL, comm, NULL, NULL
  nsc::DiscoveryOptions options;
  options.load_bias = bias;
  nsc::Discovery found = nsc::discover_communicators(target, layout, options);
  BOOST_TEST(found.method == "registry");
  BOOST_TEST(found.addresses == std::vector<uint64_t>{kComm});
}

// Issue 37: values below 2^63 that no communicator can hold are flagged with the value, never
// printed or compared as real.
BOOST_AUTO_TEST_CASE(impossible_identity_and_counters_are_flagged_with_their_value) {
  SyntheticTarget target;
  LayoutProfile layout = make_layout();
  fill_comm(target);
  target.put<int32_t>(kComm + 224, -7);                   // cudaDev
  target.put<uint64_t>(kComm + 248 + 4 * 8, 0xffffffffull);  // seqNumber[AllReduce], collOpCount 8
  json errors = json::array();
  json comm = decode(target, layout, &errors);
  BOOST_TEST(comm["cuda_dev"].is_null());
  BOOST_TEST(comm["unavailable"]["cuda_dev"] == "impossible value -7 (a CUDA device is 0..1023)");
  BOOST_TEST(comm["seq_launched"]["AllReduce"].is_null());
  BOOST_TEST(comm["unavailable"]["seq_launched.AllReduce"] ==
             "impossible value 4294967295 (more AllReduce launched than collectives in total: coll_op_count is 8)");
  BOOST_TEST(comm["seq_launched"]["AllGather"] == 1);  // consistent counters stay
  std::string warnings = comm["warnings"].dump();
  BOOST_TEST(warnings.find("cuda_dev: impossible value -7") != std::string::npos, warnings);
  target.put<int32_t>(kComm + 216, 5);  // rank 5 of 2
  comm = decode(target, layout, &errors);
  BOOST_TEST(comm["rank"].is_null());
  BOOST_TEST(comm["unavailable"]["rank"] == "impossible value 5 (nranks is 2)");
}
