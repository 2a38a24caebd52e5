// Builds one process's `ncclscope.state/1` document (docs/schema-state.md):
// opens the target, resolves libnccl and its layout, finds and decodes every
// communicator, unwinds host threads. Used by `state`, `triage` and the C API.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "target/target.h"

namespace nsc {

// Memory supplied by a front end (gdb) for a target the library cannot open itself.
using ReadMemoryCallback =
    std::function<bool(uint64_t address, void* buffer, uint64_t length, std::string* why)>;

struct StateRequest {
  std::string core_path;          // either core_path or pid
  int pid = 0;
  std::string executable;         // optional
  std::string sysroot;            // gdb's `set sysroot`
  std::vector<std::string> solib_search_path;  // gdb's `set solib-search-path`
  std::vector<std::string> profile_path;       // extra layout profile directories
  bool force_mismatch = false;    // use a libnccl whose build-id differs from the target's
  bool freeze = false;            // live: stop threads for a consistent read, always resume
  bool stacks = true;             // unwind host threads of a core
  bool live_stacks = false;       // live: unwind too (libdwfl stops each thread briefly)
  bool progress = true;           // progress on stderr for long scans when it is a terminal
  bool recorder_records = false;  // the "recorder" section carries its whole merged record timeline
  ReadMemoryCallback read_memory; // when set: read memory through it
  // When set: memory as the GPU sees it (cuda-gdb @global reads); each communicator
  // then gets a "device" section with its connections' step counters.
  ReadMemoryCallback read_device_memory;
  Target* target = nullptr;       // when set: decode this target (not owned), open nothing
  // With read_memory: the process's regions, [{"start":"0x..","end":"0x..","writable":true,
  // "shared":false,"path":"/usr/lib/libnccl.so.2","file_offset":"0x0"}] (gdb: info proc mappings).
  nlohmann::json callback_regions = nlohmann::json::array();
  // With read_memory: the threads and the registers of their innermost frame, as the front end
  // read them: [{"tid": N, "name": "..", "registers": {"rip": "0x..", "rsp": "0x..", ...}}]
  // (x86-64 names; "registers_unavailable": why none). Stacks are then unwound over read_memory.
  nlohmann::json callback_threads = nlohmann::json::array();
  // {"signo", "code", "sender_pid", "fault_address" (hex text), "tid"}: a core's $_siginfo as
  // the front end read it; null when it sent none (a live process).
  nlohmann::json callback_signal;
  std::string callback_architecture;  // the front end's name for it ("i386:x86-64"); "" unknown
  std::string callback_description = "gdb inferior";
};

// Opens what the request names: the callback target, the core, or the live pid.
std::unique_ptr<Target> open_target(const StateRequest& request);

// The `errors` array of the document tells what was unreadable. Throws
// nsc::BadInput (with a one-line message naming the file/pid/field) when the
// target cannot be used at all.
nlohmann::json build_state_document(const StateRequest& request);

// Exit code a document deserves: 0 when `errors` is empty, else 1 (partial).
int state_exit_code(const nlohmann::json& document);

}  // namespace nsc
