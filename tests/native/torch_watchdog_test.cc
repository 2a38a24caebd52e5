// Issue 32: PyTorch's watchdog liveness (torch/watchdog.h) on synthetic memory laid out by a
// synthetic profile: the chain thread stack -> std::thread state (vptr) -> Watchdog /
// HeartbeatMonitor -> ProcessGroupNCCL -> Options, and what must not decode: a wrong vtable,
// an object pointer to nowhere, a process group that does not point back, an unreadable field
// (unavailable, never 0), a profile or symbol that is missing, a thread with no stack pointer.
#define BOOST_TEST_MODULE torch_watchdog
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>

#include "target/core_notes.h"
#include "torch/torch_layout.h"
#include "torch/watchdog.h"
#include "support/synthetic.h"

using nsc::MemberLayout;
using nsc::ValueKind;

namespace {

constexpr uint64_t kBase = 0x100000, kSize = 0x40000;
constexpr uint64_t kStackA = kBase, kStackB = kBase + 0x4000, kStackC = kBase + 0x8000;  // 16 KiB stacks
constexpr uint64_t kHeap = kBase + 0x10000;
constexpr uint64_t kWatchdogState = kHeap, kMonitorState = kHeap + 0x40;
constexpr uint64_t kWatchdog = kHeap + 0x100, kMonitor = kHeap + 0x200, kGroup = kHeap + 0x1000, kOptions = kHeap + 0x2000;
constexpr uint64_t kLibrary = kBase + 0x30000;
constexpr uint64_t kWatchdogVtable = kLibrary, kMonitorVtable = kBase + 0x30100, kShouldDump = kBase + 0x30200;
constexpr uint64_t kNowhere = 0xdead0000;

// One block per thread stack (a scan stops at its end), the heap, libtorch's data.
class FlatTarget : public nsc::test::SyntheticTarget {
 public:
  FlatTarget() {
    for (uint64_t start : {kStackA, kStackB, kStackC}) add_block(start, 0x4000);
    add_block(kHeap, kLibrary - kHeap);
    add_block(kLibrary, kBase + kSize - kLibrary);
  }
  void put(uint64_t addr, uint64_t value, size_t len = 8) {
    if (len == 8) SyntheticTarget::put<uint64_t>(addr, value);
    if (len == 4) SyntheticTarget::put<uint32_t>(addr, static_cast<uint32_t>(value));
    if (len == 1) SyntheticTarget::put<uint8_t>(addr, static_cast<uint8_t>(value));
  }
};

// Offsets unlike PyTorch 2.11's on purpose: the decoder must take them from the profile.
nsc::LayoutProfile profile() {
  using nsc::test::StructBuilder;
  nsc::LayoutProfile out;
  out.structs[nsc::kTorchWatchdogStruct] = StructBuilder(nsc::kTorchWatchdogStruct)
      .scalar("ncclCommWatchdogThread_", 8, 8, ValueKind::kStruct, "std::thread")
      .scalar("pg_", 16, 8, ValueKind::kPointer, "c10d::ProcessGroupNCCL")
      .scalar("watchDogException_", 32, 8, ValueKind::kStruct, "std::__exception_ptr::exception_ptr")
      .scalar("heartbeat_", 56, 8, ValueKind::kStruct, "std::atomic<long unsigned int>")
      .build(96);
  out.structs[nsc::kTorchMonitorStruct] = StructBuilder(nsc::kTorchMonitorStruct)
      .scalar("pg_", 8, 8, ValueKind::kPointer, "c10d::ProcessGroupNCCL")
      .scalar("heartbeatTimeoutInSec_", 20, 4, ValueKind::kSigned, "int")
      .scalar("waitTimeoutDumpInMilSec_", 24, 4, ValueKind::kSigned, "int")
      .scalar("watchdogHeartbeatMonitorEnabled_", 32, 1, ValueKind::kBool, "bool")
      .scalar("terminateHeartbeatMonitorThread_", 48, 1, ValueKind::kStruct, "std::atomic<bool>")
      .scalar("lastWorkListUpdateTime_", 160, 8, ValueKind::kStruct, "std::chrono::time_point")
      .build(192);
  out.structs[nsc::kTorchProcessGroupStruct] = StructBuilder(nsc::kTorchProcessGroupStruct)
      .scalar("rank_", 40, 4, ValueKind::kSigned, "int")
      .scalar("size_", 44, 4, ValueKind::kSigned, "int")
      .scalar("heartbeatMonitor_", 0x100, 8, ValueKind::kStruct, "std::unique_ptr")
      .scalar("watchdog_", 0x108, 8, ValueKind::kStruct, "std::unique_ptr")
      .scalar("options_", 0x120, 8, ValueKind::kStruct, "c10::intrusive_ptr")
      .scalar("terminateProcessGroup_", 0x200, 1, ValueKind::kStruct, "std::atomic<bool>")
      .scalar("error_", 0x204, 4, ValueKind::kEnum, nsc::kTorchErrorTypeEnum)
      .scalar("local_id_", 0x300, 8, ValueKind::kUnsigned, "long unsigned int")
      .build(0x400);
  out.structs[nsc::kTorchPgOptionsStruct] = StructBuilder(nsc::kTorchPgOptionsStruct)
      .scalar("timeout", 0x18, 8, ValueKind::kStruct, "std::chrono::duration")
      .build(64);
  nsc::EnumLayout errors;
  errors.name = nsc::kTorchErrorTypeEnum;
  errors.values = {{0, "SUCCESS"}, {1, "TIMEOUT"}, {2, "COMM_ERROR"}, {3, "REMOTE_ERROR"}};
  out.enums[errors.name] = errors;
  return out;
}

nsc::ThreadInfo thread(int tid, uint64_t sp) {
  nsc::ThreadInfo out;
  out.tid = tid;
  out.prstatus = nsc::prstatus_from_registers(tid, {{"rsp", sp}, {"rip", 0x1000}});
  return out;
}

const nsc::TorchLivenessSymbols kSymbols{kWatchdogVtable, kMonitorVtable, kShouldDump};

// A rank whose watchdog timed out: thread 11 runs the watchdog, 12 the monitor, 13 neither.
struct Job {
  FlatTarget memory;
  std::vector<nsc::ThreadInfo> threads{thread(11, kStackA + 0x100), thread(12, kStackB + 0x80), thread(13, kStackC + 0x40)};
  Job() {
    memory.put(kWatchdogState, kWatchdogVtable + 16);
    memory.put(kWatchdogState + 8, kWatchdog);
    memory.put(kMonitorState, kMonitorVtable + 16);
    memory.put(kMonitorState + 8, kMonitor);
    memory.put(kStackA + 0x3f00, kWatchdogState);  // execute_native_thread_routine's frame, near the top
    memory.put(kStackA + 0x200, kMonitorState);    // a stale copy in a deeper frame: must not win
    memory.put(kStackB + 0x3f80, kMonitorState);
    memory.put(kStackC + 0x100, kHeap + 0x3000);   // a pointer to something else
    memory.put(kWatchdog + 16, kGroup);
    memory.put(kWatchdog + 32, kHeap + 0x4000);  // watchDogException_: set
    memory.put(kWatchdog + 56, 1234);
    memory.put(kMonitor + 8, kGroup);
    memory.put(kMonitor + 20, 20, 4);
    memory.put(kMonitor + 24, 2000, 4);
    memory.put(kMonitor + 32, 1, 1);
    memory.put(kMonitor + 48, 0, 1);
    memory.put(kMonitor + 160, 987654321000);
    memory.put(kGroup + 40, 1, 4);
    memory.put(kGroup + 44, 2, 4);
    memory.put(kGroup + 0x100, kMonitor);
    memory.put(kGroup + 0x108, kWatchdog);
    memory.put(kGroup + 0x120, kOptions);
    memory.put(kGroup + 0x200, 1, 1);
    memory.put(kGroup + 0x204, 1, 4);  // TIMEOUT
    memory.put(kGroup + 0x300, 0);
    memory.put(kOptions + 0x18, 80000);
    memory.put(kShouldDump, 1, 1);
  }
  nsc::TorchLiveness decode(const nsc::LayoutProfile& layout = profile(), const nsc::TorchLivenessSymbols& symbols = kSymbols) {
    return nsc::decode_torch_liveness(memory, layout, symbols, threads);
  }
};

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& line : lines)
    if (line.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(watchdog_and_monitor_chain) {
  Job job;
  nsc::TorchLiveness liveness = job.decode();
  BOOST_TEST(liveness.unavailable == "");
  BOOST_TEST(liveness.threads_scanned == 3u);
  BOOST_REQUIRE(liveness.watchdogs.size() == 1u);
  const nsc::TorchWatchdog& dog = liveness.watchdogs[0];
  BOOST_TEST(dog.tid == 11);
  BOOST_TEST(dog.stack_slot == kStackA + 0x3f00);
  BOOST_TEST(dog.watchdog == kWatchdog);
  BOOST_TEST(dog.process_group == kGroup);
  BOOST_TEST(*dog.heartbeat.value == 1234);
  BOOST_TEST(*dog.pg_uid.value == 0);
  BOOST_TEST(*dog.pg_rank.value == 1);
  BOOST_TEST(*dog.pg_size.value == 2);
  BOOST_TEST(*dog.timeout_ms.value == 80000);
  BOOST_TEST(*dog.error.value == "TIMEOUT");
  BOOST_TEST(*dog.terminating.value == 1);
  BOOST_TEST(*dog.exception_stored.value == 1);
  BOOST_REQUIRE(liveness.monitors.size() == 1u);
  const nsc::TorchHeartbeatMonitor& monitor = liveness.monitors[0];
  BOOST_TEST(monitor.tid == 12);
  BOOST_TEST(monitor.monitor == kMonitor);
  BOOST_TEST(*monitor.heartbeat_timeout_s.value == 20);
  BOOST_TEST(*monitor.dump_timeout_ms.value == 2000);
  BOOST_TEST(*monitor.monitoring_enabled.value == 1);
  BOOST_TEST(*monitor.terminate_requested.value == 0);
  BOOST_TEST(*monitor.last_work_list_update_ns.value == 987654321000);
  BOOST_TEST(*liveness.should_dump.value == 1);
  nlohmann::json out = nsc::torch_liveness_json(liveness);
  BOOST_TEST(out["watchdogs"][0]["heartbeat"] == 1234);
  BOOST_TEST(out["watchdogs"][0]["error"] == "TIMEOUT");
  BOOST_TEST(out["watchdogs"][0]["unavailable"].empty());
  BOOST_TEST(out["heartbeat_monitors"][0]["last_work_list_update_steady_ns"] == 987654321000);
  BOOST_TEST(out["should_dump"] == true);
}

BOOST_AUTO_TEST_CASE(wrong_vtable_is_no_watchdog) {
  Job job;
  job.memory.put(kWatchdogState, kWatchdogVtable + 8);  // not vtable + 16
  nsc::TorchLiveness liveness = job.decode();
  BOOST_TEST(liveness.watchdogs.empty());
  BOOST_TEST(liveness.monitors.size() == 1u);
}

BOOST_AUTO_TEST_CASE(object_pointer_to_nowhere_is_an_error_not_zero) {
  Job job;
  job.memory.put(kWatchdogState + 8, kNowhere);
  nsc::TorchLiveness liveness = job.decode();
  BOOST_TEST(liveness.watchdogs.empty());
  BOOST_TEST(mentions(liveness.errors, "pg_"));
  BOOST_TEST(nsc::torch_liveness_json(liveness)["errors"].size() == 1u);
}

BOOST_AUTO_TEST_CASE(group_not_pointing_back_is_not_believed) {
  Job job;
  job.memory.put(kGroup + 0x108, kHeap + 0x3000);
  nsc::TorchLiveness liveness = job.decode();
  BOOST_TEST(liveness.watchdogs.empty());
  BOOST_TEST(mentions(liveness.errors, "watchdog_ is 0x113000, not 0x110100"));
  BOOST_TEST(liveness.monitors.size() == 1u);
}

BOOST_AUTO_TEST_CASE(unreadable_field_is_unavailable) {
  Job job;
  job.memory.put(kGroup + 0x120, kNowhere);  // options_ points nowhere
  nsc::TorchLiveness liveness = job.decode();
  BOOST_REQUIRE(liveness.watchdogs.size() == 1u);
  BOOST_TEST(!liveness.watchdogs[0].timeout_ms.ok());
  nlohmann::json dog = nsc::torch_liveness_json(liveness)["watchdogs"][0];
  BOOST_TEST(dog["timeout_ms"].is_null());
  BOOST_TEST(dog["unavailable"].contains("timeout_ms"));
  BOOST_TEST(dog["heartbeat"] == 1234);
}

BOOST_AUTO_TEST_CASE(missing_profile_struct_or_symbol_is_unavailable) {
  Job job;
  nsc::LayoutProfile old = profile();
  old.structs.erase(nsc::kTorchWatchdogStruct);
  BOOST_TEST(job.decode(old).unavailable.find("no layout of c10d::ProcessGroupNCCL::Watchdog") != std::string::npos);
  nsc::TorchLiveness no_symbol = job.decode(profile(), {0, kMonitorVtable, kShouldDump});
  BOOST_TEST(no_symbol.unavailable.find("vtable") != std::string::npos);
  BOOST_TEST(nsc::torch_liveness_json(no_symbol).size() == 1u);  // only "unavailable"
  nsc::LayoutProfile older = profile();  // a torch build whose group has no error_
  auto& members = older.structs[nsc::kTorchProcessGroupStruct].members;
  members.erase(std::remove_if(members.begin(), members.end(), [](const MemberLayout& m) { return m.name == "error_"; }),
                members.end());
  nsc::TorchLiveness no_error = job.decode(older);
  BOOST_REQUIRE(no_error.watchdogs.size() == 1u);
  BOOST_TEST(no_error.watchdogs[0].error.unavailable ==
             "not in this torch build (c10d::ProcessGroupNCCL has no member error_)");
  BOOST_TEST(*no_error.watchdogs[0].heartbeat.value == 1234);
  nsc::TorchLiveness no_flag = job.decode(profile(), {kWatchdogVtable, kMonitorVtable, 0});
  BOOST_TEST(!no_flag.should_dump.ok());
  BOOST_TEST(nsc::torch_liveness_json(no_flag)["should_dump"].is_null());
}

BOOST_AUTO_TEST_CASE(thread_without_stack_pointer_is_said) {
  Job job;
  job.threads[0].prstatus.clear();
  nsc::TorchLiveness liveness = job.decode();
  BOOST_TEST(liveness.watchdogs.empty());
  BOOST_TEST(liveness.threads_scanned == 2u);
  BOOST_TEST(liveness.threads_without_stack_pointer == 1u);
  BOOST_TEST(nsc::torch_liveness_json(liveness)["threads_without_stack_pointer"] == 1);
  job.threads[0].syscall_stack_pointer = kStackA + 0x100;  // a live thread in a system call
  BOOST_TEST(job.decode().watchdogs.size() == 1u);
}
