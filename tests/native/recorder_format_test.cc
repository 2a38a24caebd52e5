// The recorder decoder on synthetic regions built from cuda/recorder_format.h:
// ring wrap-around, torn records, rejected headers, event-synchronize chains,
// and the cross-rank count/datatype mismatch check.
#define BOOST_TEST_MODULE recorder_format
#include <boost/test/unit_test.hpp>

#include <cstring>

#include "cuda/recorder_analysis.h"
#include "cuda/recorder_decoder.h"
#include "cuda/recorder_format.h"
#include "support/synthetic.h"

using nlohmann::json;
using namespace nsc::recorder;
using nsc::test::SyntheticTarget;

namespace {

constexpr uint64_t kRegion = 0x7f0000000000;
constexpr uint32_t kRecords = 8;
constexpr uint32_t kThreads = 2;

// A region with the given geometry; rings filled by write().
class Region {
 public:
  // merged: the mapping starts two pages earlier (the kernel merged it with a neighbour).
  explicit Region(SyntheticTarget& target, bool merged = false) {
    uint64_t before = merged ? 2 * 4096 : 0;
    bytes_ = target.add_block(kRegion - before, region_bytes(kThreads, kRecords) + before) + before;
    RecorderHeader header{};
    std::memcpy(header.magic, kMagic, sizeof(kMagic));
    header.schema_version = kSchemaVersion;
    header.header_size = sizeof(RecorderHeader);
    header.ring_header_size = sizeof(RingHeader);
    header.record_size = sizeof(Record);
    header.max_threads = kThreads;
    header.records_per_ring = kRecords;
    header.region_size = region_bytes(kThreads, kRecords);
    header.self_address = kRegion;
    header.pid = 77;
    header.clock = kClockMonotonic;
    header.ticks_per_second = 1000000000;
    header.threads_claimed = kThreads;
    header.comms_claimed = 1;
    header.comms[0] = CommEntry{0xabc, 1, 2, 1, 1, "c"};
    std::memcpy(bytes_, &header, sizeof(header));
    for (uint32_t ring = 0; ring < kThreads; ++ring) {
      RingHeader ring_header{};
      ring_header.tid = 100 + int(ring);
      ring_header.in_use = 1;
      std::strcpy(ring_header.thread_name, ring == 0 ? "main" : "other");
      std::memcpy(bytes_ + ring_offset(ring, kRecords), &ring_header, sizeof(ring_header));
    }
  }
  // Appends a record to ring `ring` with time `time` (ns).
  void write(uint32_t ring, RecordKind kind, RecordPhase phase, uint64_t time, uint64_t a0 = 0,
             uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0, uint64_t a4 = 0, int32_t aux = 0) {
    auto* ring_header = reinterpret_cast<RingHeader*>(bytes_ + ring_offset(ring, kRecords));
    uint64_t index = ring_header->written++;
    Record record{index + 1, time, kind, phase, RecordApi::kRuntime, aux, {a0, a1, a2, a3, a4}};
    std::memcpy(reinterpret_cast<Record*>(ring_header + 1) + (index % kRecords), &record, sizeof(record));
  }
  Record* slot(uint32_t ring, uint64_t index) {
    auto* ring_header = reinterpret_cast<RingHeader*>(bytes_ + ring_offset(ring, kRecords));
    return reinterpret_cast<Record*>(ring_header + 1) + (index % kRecords);
  }
  RecorderHeader* header() { return reinterpret_cast<RecorderHeader*>(bytes_); }

 private:
  uint8_t* bytes_;
};

}  // namespace

uint64_t details(NcclFunc func, NcclType type) { return pack_nccl_details(func, type, 2, 1, 0, false); }

BOOST_AUTO_TEST_CASE(wrapped_ring_keeps_the_newest_records) {
  SyntheticTarget target;
  Region region(target);
  for (uint64_t i = 0; i < 11; ++i)  // 11 records into a ring of 8
    region.write(0, RecordKind::kEventRecord, RecordPhase::kEnter, 1000 + i, 0xe0 + i, 0x5000);
  json errors = json::array();
  nsc::RecorderDecodeOptions options;
  options.include_records = true;
  json recorder = nsc::decode_recorder(target, &errors, options);
  BOOST_REQUIRE(recorder["found"] == true);
  BOOST_TEST(recorder["pid"] == 77);
  BOOST_TEST(recorder["threads"][0]["records_written"] == 11);
  BOOST_TEST(recorder["threads"][0]["records_kept"] == 8);
  BOOST_REQUIRE(recorder["records"].size() == 8u);
  BOOST_TEST(recorder["records"][0]["event"] == "0xe3");  // records 0..2 were overwritten
  BOOST_TEST(recorder["records"][7]["event"] == "0xea");
  BOOST_TEST(recorder["events"].size() == 8u);
}

BOOST_AUTO_TEST_CASE(torn_records_are_skipped) {
  SyntheticTarget target;
  Region region(target);
  region.write(0, RecordKind::kStreamCreate, RecordPhase::kExit, 10, 0x5000);
  region.write(0, RecordKind::kStreamCreate, RecordPhase::kExit, 20, 0x6000);
  region.slot(0, 1)->sequence = 0;  // the writer was interrupted mid-record
  nsc::RecorderDecodeOptions options;
  options.include_records = true;
  json recorder = nsc::decode_recorder(target, nullptr, options);
  BOOST_REQUIRE(recorder["records"].size() == 1u);
  BOOST_TEST(recorder["records"][0]["stream"] == "0x5000");
  BOOST_TEST(recorder["threads"][0]["records_kept"] == 1);
}

BOOST_AUTO_TEST_CASE(headers_that_do_not_name_themselves_are_rejected) {
  SyntheticTarget target;
  Region region(target);
  region.header()->self_address = 0x1234000;  // a copy of a header elsewhere, not the region
  json recorder = nsc::decode_recorder(target, nullptr);
  BOOST_TEST(recorder["found"] == false);
  BOOST_REQUIRE(recorder["rejected"].size() == 1u);
  BOOST_TEST(recorder["rejected"][0].get<std::string>().find("names itself 0x1234000") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_schema_is_rejected) {
  SyntheticTarget target;
  Region region(target);
  region.header()->schema_version = 9;
  json recorder = nsc::decode_recorder(target, nullptr);
  BOOST_TEST(recorder["found"] == false);
  BOOST_TEST(recorder["rejected"][0].get<std::string>().find("schema version 9") != std::string::npos);
}

// Thread 100 blocked in cudaEventSynchronize(E2); E2 recorded on S2, which waits
// on E1, recorded on the NCCL stream S1 after AllReduce seq 4 (recorded by thread 101).
BOOST_AUTO_TEST_CASE(event_synchronize_chain_crosses_two_streams) {
  SyntheticTarget target;
  Region region(target);
  const uint64_t s1 = 0x51, s2 = 0x52, e1 = 0xe1, e2 = 0xe2;
  region.write(1, RecordKind::kNcclColl, RecordPhase::kEnter, 100, 0xabc, 4, 4096, s1,
               details(NcclFunc::kAllReduce, NcclType::kBfloat16));
  region.write(1, RecordKind::kEventRecord, RecordPhase::kEnter, 110, e1, s1);
  region.write(0, RecordKind::kStreamWaitEvent, RecordPhase::kEnter, 120, s2, e1);
  region.write(0, RecordKind::kEventRecord, RecordPhase::kEnter, 130, e2, s2);
  region.write(0, RecordKind::kEventSynchronize, RecordPhase::kEnter, 140, e2);
  json recorder = nsc::decode_recorder(target, nullptr);
  BOOST_TEST(recorder["threads"][0]["blocked_in"]["call"] == "cudaEventSynchronize");
  BOOST_TEST(recorder["threads"][0]["blocked_in"]["event_recorded_on"] == "0x52");
  BOOST_TEST(recorder["threads"][1]["blocked_in"].is_null());
  BOOST_REQUIRE(recorder["chains"].size() == 1u);
  const json& steps = recorder["chains"][0]["steps"];
  // Ends at the AllReduce: nothing on S1 was enqueued between it and E1's record.
  BOOST_REQUIRE(steps.size() == 3u);
  BOOST_TEST(steps[1]["step"] == "event_recorded");
  BOOST_TEST(steps[2]["step"] == "stream_waits_event");
  BOOST_TEST(steps[2]["event"] == "0xe1");
  BOOST_TEST(steps[2]["after_nccl_op"]["collective"] == "AllReduce");
  BOOST_TEST(steps[2]["after_nccl_op"]["seq"] == 4);
  BOOST_TEST(steps[2]["after_nccl_op"]["datatype"] == "ncclBfloat16");
  BOOST_TEST(recorder["comms"][0]["last_seq"]["AllReduce"] == 4);
  BOOST_TEST(recorder["comms"][0]["ops"][0]["algorithm"] == "RING");
}

// NCCL's launch as recorded on the GPU machine (corefiles/cross-stream-recorder):
// the user stream U waits on the internal stream I (event J recorded on I), the
// kernel is launched on U, then I waits on U with the same event J re-recorded.
// The application records E on U and makes its stream A wait on E. The chain of
// a thread blocked on A must end at the AllGather: J's wait precedes it on U.
BOOST_AUTO_TEST_CASE(nccl_join_waits_before_the_kernel_stay_out_of_the_chain) {
  SyntheticTarget target;
  Region region(target);
  const uint64_t user = 0x130, internal = 0xcb60, app = 0xd40, join = 0x4b0, app_event = 0x5f0;
  region.write(0, RecordKind::kEventRecord, RecordPhase::kEnter, 180, join, internal);
  region.write(0, RecordKind::kStreamWaitEvent, RecordPhase::kEnter, 181, user, join);
  region.write(0, RecordKind::kNcclColl, RecordPhase::kEnter, 189, 0xabc, 3, 2097152, user,
               details(NcclFunc::kAllGather, NcclType::kInt8));
  region.write(0, RecordKind::kEventRecord, RecordPhase::kEnter, 190, join, user);
  region.write(0, RecordKind::kStreamWaitEvent, RecordPhase::kEnter, 191, internal, join);
  region.write(0, RecordKind::kEventRecord, RecordPhase::kEnter, 193, app_event, user);
  region.write(0, RecordKind::kStreamWaitEvent, RecordPhase::kEnter, 194, app, app_event);
  region.write(0, RecordKind::kStreamSynchronize, RecordPhase::kEnter, 244, app);
  json recorder = nsc::decode_recorder(target, nullptr);
  BOOST_REQUIRE(recorder["chains"].size() == 1u);
  const json& steps = recorder["chains"][0]["steps"];
  BOOST_REQUIRE(steps.size() == 2u);
  BOOST_TEST(steps[0]["step"] == "host_thread_blocked");
  BOOST_TEST(steps[1]["step"] == "stream_waits_event");
  BOOST_TEST(steps[1]["event"] == "0x5f0");
  BOOST_TEST(steps[1]["event_recorded_on"] == "0x130");
  BOOST_TEST(steps[1]["after_nccl_op"]["collective"] == "AllGather");
  BOOST_TEST(steps[1]["after_nccl_op"]["seq"] == 3);
}

// A wait enqueued after the NCCL operation and before the record is followed:
// the record waits behind it, not behind the operation.
BOOST_AUTO_TEST_CASE(a_wait_after_the_nccl_op_is_followed) {
  SyntheticTarget target;
  Region region(target);
  region.write(0, RecordKind::kEventRecord, RecordPhase::kEnter, 10, 0xe0, 0x70);        // on the other stream
  region.write(0, RecordKind::kNcclColl, RecordPhase::kEnter, 20, 0xabc, 1, 8, 0x60,
               details(NcclFunc::kAllReduce, NcclType::kFloat32));
  region.write(0, RecordKind::kStreamWaitEvent, RecordPhase::kEnter, 30, 0x60, 0xe0);   // after the op
  region.write(0, RecordKind::kEventRecord, RecordPhase::kEnter, 40, 0xe1, 0x60);
  region.write(0, RecordKind::kEventSynchronize, RecordPhase::kEnter, 50, 0xe1);
  json recorder = nsc::decode_recorder(target, nullptr);
  const json& steps = recorder["chains"][0]["steps"];
  BOOST_REQUIRE(steps.size() == 3u);
  BOOST_TEST(steps[1]["step"] == "event_recorded");
  BOOST_TEST(steps[1]["stream"] == "0x60");
  BOOST_TEST(steps[2]["step"] == "stream_waits_event");
  BOOST_TEST(steps[2]["event"] == "0xe0");
  BOOST_TEST(steps[2]["event_recorded_on"] == "0x70");
}

BOOST_AUTO_TEST_CASE(completed_synchronize_clears_pending_waits) {
  SyntheticTarget target;
  Region region(target);
  region.write(0, RecordKind::kStreamWaitEvent, RecordPhase::kEnter, 10, 0x51, 0xe1);
  region.write(0, RecordKind::kStreamSynchronize, RecordPhase::kEnter, 20, 0x51);
  region.write(0, RecordKind::kStreamSynchronize, RecordPhase::kExit, 30, 0x51, 0, 0, 0);
  json recorder = nsc::decode_recorder(target, nullptr);
  BOOST_TEST(recorder["streams"][0]["pending_event_waits"].empty());
  BOOST_TEST(recorder["threads"][0]["blocked_in"].is_null());
  BOOST_TEST(recorder["chains"].empty());
}

BOOST_AUTO_TEST_CASE(cross_rank_count_and_datatype_mismatch) {
  auto section = [](int rank, uint64_t count, const char* datatype) {
    json op = {{"record", "nccl_coll"}, {"collective", "AllGather"}, {"seq", 1}, {"count", count},
               {"datatype", datatype}, {"root", 0}};
    json comm = json::object();
    comm["comm_hash"] = "0xabc";
    comm["rank"] = rank;
    comm["last_seq"] = {{"AllGather", 1}};
    comm["ops"] = json::array({op});
    json recorder = json::object();
    recorder["found"] = true;
    recorder["comms"] = json::array({comm});
    return recorder;
  };
  json result = nsc::compare_recorded_collectives(
      {section(0, 1024, "ncclFloat32"), section(1, 1024, "ncclFloat32"), section(2, 512, "ncclFloat16")});
  BOOST_REQUIRE(result["mismatches"].size() == 2u);
  BOOST_TEST(result["mismatches"][0]["field"] == "count");
  BOOST_TEST(result["mismatches"][0]["values"][2]["rank"] == 2);
  BOOST_TEST(result["mismatches"][0]["values"][2]["value"] == 512);
  BOOST_TEST(result["mismatches"][1]["field"] == "datatype");
  BOOST_TEST(result["last_seq"][0]["ranks"].size() == 3u);
  json agreeing = nsc::compare_recorded_collectives({section(0, 8, "ncclInt8"), section(1, 8, "ncclInt8")});
  BOOST_TEST(agreeing["mismatches"].empty());
}

BOOST_AUTO_TEST_CASE(ipc_imports_are_matched_to_their_exporter) {
  json exporter = {{"found", true}, {"pid", 100},
                   {"ipc", {{"exported", json::array({json{{"kind", "cuda_ipc_mem"}, {"address", "0x7f01"},
                                                        {"handle_fingerprint", "0xaaa"}, {"owner_pid", 100}}})},
                            {"imported", json::array()}}}};
  json importer = {{"found", true}, {"pid", 200},
                   {"ipc", {{"exported", json::array()},
                            {"imported", json::array({json{{"kind", "cuda_ipc_mem"}, {"address", "0x7f99"},
                                                        {"handle_fingerprint", "0xaaa"}, {"closed", false}},
                                                       json{{"kind", "cuda_ipc_mem"}, {"address", "0x7f98"},
                                                        {"handle_fingerprint", "0xbbb"}, {"closed", true}}})}}}};
  json matched = nsc::match_ipc_handles({exporter, importer});
  BOOST_REQUIRE(matched["imports"].size() == 2u);
  BOOST_TEST(matched["imports"][0]["importer_pid"] == 200);
  BOOST_TEST(matched["imports"][0]["owner_pid"] == 100);
  BOOST_TEST(matched["imports"][0]["owner_address"] == "0x7f01");
  BOOST_TEST(matched["imports"][1]["owner_pid"].is_null());  // exporter not among the inputs
}

BOOST_AUTO_TEST_CASE(region_inside_a_merged_mapping_is_found) {
  SyntheticTarget target;
  Region region(target, /*merged=*/true);
  region.write(0, RecordKind::kStreamCreate, RecordPhase::kExit, 10, 0x5000);
  json recorder = nsc::decode_recorder(target, nullptr);
  BOOST_REQUIRE(recorder["found"] == true);
  BOOST_TEST(recorder["address"] == "0x7f0000000000");
  BOOST_TEST(recorder["streams"][0]["stream"] == "0x5000");
}

BOOST_AUTO_TEST_CASE(chains_end_at_the_ranks_that_did_not_launch) {
  // Rank 0 waits on AllGather seq 3 (its 4th); rank 1 launched only 3 AllGathers.
  json op = {{"comm_hash", "0x54b962a38eb4a511"}, {"collective", "AllGather"}, {"seq", 3}};
  json chains = json::array({json{{"tid", 1}, {"steps", json::array({
      json{{"step", "host_thread_blocked"}},
      json{{"step", "stream_waits_event"}, {"after_nccl_op", op}}})}}});
  auto state = [](int rank, int launched) {
    json comm = {{"comm_hash", "0x54b962a38eb4a511"}, {"rank", rank},
                 {"seq_launched", {{"AllGather", launched}, {"AllReduce", 0}}}};
    json document = json::object();
    document["communicators"] = json::array({comm});
    return document;
  };
  json annotated = nsc::annotate_chains_with_ranks(chains, {state(0, 4), state(1, 3)});
  const json& step = annotated[0]["steps"][1];
  BOOST_TEST(step["waits_for_ranks"] == json::array({1}));
  BOOST_TEST(step["launched_by_ranks"] == json::array({0}));
  BOOST_TEST(!annotated[0]["steps"][0].contains("waits_for_ranks"));
}

BOOST_AUTO_TEST_CASE(header_claiming_more_than_its_mapping_is_rejected) {
  SyntheticTarget target;
  Region region(target);
  region.header()->max_threads = 1000;  // geometry consistent with itself, not with the memory
  region.header()->region_size = region_bytes(1000, kRecords);
  json recorder = nsc::decode_recorder(target, nullptr);
  BOOST_TEST(recorder["found"] == false);
  BOOST_REQUIRE(recorder.contains("rejected"));
  BOOST_TEST(recorder["rejected"][0].get<std::string>().find("does not fit its mapping") != std::string::npos);
}
