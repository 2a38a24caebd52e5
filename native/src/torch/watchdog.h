// PyTorch's watchdog liveness (issue 32), read from memory with no instrumentation: each
// ProcessGroupNCCL's Watchdog (its heartbeat_ counter, bumped once per loop; the group's
// error_, timeout, terminate flag, and whether the watchdog stored the exception it rethrew)
// and HeartbeatMonitor (its heartbeat timeout, terminate flag, the last work-list update
// time), plus the process-wide ProcessGroupNCCL::shouldDump_.
//
// Found without DWARF of libtorch: each runs on a std::thread whose heap state object
// (std::thread::_State_impl<_Invoker<tuple<void (C::*)(), C*>>>) begins with the vtable of
// that instance (a .symtab symbol of libtorch_cuda.so, kept in the torch profile) + 16. The
// thread's stack, from its stack pointer up (the frame of execute_native_thread_routine and
// the TCB's start argument), holds a pointer to it. Struct layouts by name from the torch
// profile (torch/torch_layout.h); a found object is believed only when its process group
// points back to it (pg_->watchdog_ / pg_->heartbeatMonitor_).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "layout/layout.h"
#include "nccl/object_view.h"
#include "target/target.h"
#include "torch/flight_recorder.h"

namespace nsc {

struct TorchWatchdog {
  int tid = 0;
  uint64_t stack_slot = 0, thread_state = 0, watchdog = 0, process_group = 0;
  Fetched<int64_t> heartbeat;                // Watchdog::heartbeat_: loops run (starts at 1)
  Fetched<int64_t> pg_uid, pg_rank, pg_size;  // local_id_ (the recorder's pg id), rank_, size_
  Fetched<int64_t> timeout_ms;               // options_->timeout: the group's collective timeout
  Fetched<std::string> error;                // error_: SUCCESS, TIMEOUT, COMM_ERROR, REMOTE_ERROR
  Fetched<int64_t> terminating;              // terminateProcessGroup_ (bool)
  Fetched<int64_t> exception_stored;         // watchDogException_ is set: run() caught and rethrew
};

struct TorchHeartbeatMonitor {
  int tid = 0;
  uint64_t stack_slot = 0, thread_state = 0, monitor = 0, process_group = 0;
  Fetched<int64_t> pg_uid;
  Fetched<int64_t> heartbeat_timeout_s;      // heartbeatTimeoutInSec_ (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC)
  Fetched<int64_t> dump_timeout_ms;          // waitTimeoutDumpInMilSec_ (TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC)
  Fetched<int64_t> monitoring_enabled;       // watchdogHeartbeatMonitorEnabled_ (TORCH_NCCL_ENABLE_MONITORING)
  Fetched<int64_t> terminate_requested;      // terminateHeartbeatMonitorThread_ (a clean stop)
  Fetched<int64_t> last_work_list_update_ns; // lastWorkListUpdateTime_: steady_clock (CLOCK_MONOTONIC) ns
};

struct TorchLiveness {
  std::string unavailable;  // "" when read; else one line why not
  std::vector<TorchWatchdog> watchdogs;
  std::vector<TorchHeartbeatMonitor> monitors;
  Fetched<int64_t> should_dump;      // ProcessGroupNCCL::shouldDump_: some watchdog saw a failure, or a peer said so
  uint64_t threads_scanned = 0;
  uint64_t threads_without_stack_pointer = 0;  // live threads not in a system call (--freeze reads them)
  std::vector<std::string> errors;   // objects found but not believed
};

// Absolute addresses (load bias added) of the symbols the decoder needs; 0 when unknown.
struct TorchLivenessSymbols {
  uint64_t watchdog_state_vtable = 0, monitor_state_vtable = 0, should_dump = 0;
};

constexpr uint64_t kWatchdogStackScanBytes = 1 << 20;  // per thread, from its stack pointer up

// Decoding for a known layout and symbols (tests use it on synthetic memory).
TorchLiveness decode_torch_liveness(Target& target, const LayoutProfile& layout, const TorchLivenessSymbols& symbols,
                                    const std::vector<ThreadInfo>& threads);

// Finds libtorch_cuda.so, its profile and symbols as the flight recorder does; nullopt when
// no libtorch_cuda.so is mapped.
std::optional<TorchLiveness> read_torch_liveness(Target& target, const RecorderSearch& search);

// The "liveness" object of docs/schema-state.md's torch section.
nlohmann::json torch_liveness_json(const TorchLiveness& liveness);

}  // namespace nsc
