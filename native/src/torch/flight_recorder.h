// PyTorch's flight recorder read from target memory: the leaked singleton
// c10d::FlightRecorder<c10::cuda::CUDAEvent>::get()::instance in libtorch_cuda.so, its
// ring of entries (what torch._C._distributed_c10d._dump_nccl_trace() pickles), the
// process groups it knows (pg_name_to_ranks_) and their status (all_pg_status_).
// Layouts by libtorch_cuda build-id (torch/torch_layout.h); frames through the Python
// decoder. Pure functions of memory: hostile counts and pointers are bounded and said.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "layout/layout.h"
#include "python/python_stacks.h"
#include "target/library_resolver.h"
#include "target/target.h"

namespace nsc {

struct RecorderFrame {
  std::string name, filename;   // co_name, co_filename
  std::optional<int64_t> line;  // PyCode_Addr2Line(code, lasti)
  uint64_t code = 0;
  int64_t lasti = 0;            // byte offset of the instruction (PyFrame_GetLasti)
  std::string error;            // non-empty: the code object could not be decoded
};

struct RecorderEntry {
  uint64_t address = 0;  // of the Entry in entries_
  uint64_t record_id = 0, reset_epoch = 0, pg_id = 0;
  std::string pg_name, pg_desc;
  uint64_t collective_seq_id = 0, p2p_seq_id = 0, op_id = 0;
  std::string profiling_name;
  int64_t time_created_ns = 0, timeout_ms = 0;
  bool is_p2p = false, retired = false;
  std::optional<double> duration_ms;
  std::optional<int64_t> time_discovered_started_ns, time_discovered_completed_ns;
  std::vector<std::vector<int64_t>> input_sizes, output_sizes;
  std::vector<std::string> input_dtypes, output_dtypes;
  uint64_t thread_id = 0;
  std::string thread_name;
  bool start_event_pending = false, end_event_pending = false;  // start_/end_ still set
  std::vector<RecorderFrame> frames;  // innermost first
  std::string frames_unavailable;
  std::vector<std::string> problems;  // fields that could not be read or were not believed
  bool numbers_read = false;          // its ids, times and flags were read (memory was there)
  std::vector<std::string> misfit;    // values no correct layout gives (torch/layout_fit.h)
  std::string state() const;          // "completed" / "started" / "scheduled", as PyTorch says
};

struct RecorderProcessGroup {
  std::string name, desc;
  std::vector<uint64_t> ranks;  // global ranks
};

struct RecorderPgStatus {
  uint64_t pg_id = 0;
  int64_t last_enqueued = -1, last_started = -1, last_completed = -1;
};

struct RecorderLimits {
  uint64_t max_entries = 1 << 16;   // ring slots read at most (PyTorch's default is 2,000)
  uint64_t max_string = 4096;       // bytes of a name or profiling name
  uint64_t max_dims = 1024;         // tensors per entry, sizes per entry
  uint64_t max_frames = 512;        // per traceback
  uint64_t max_groups = 4096;       // map nodes of pg_name_to_ranks_ / all_pg_status_
  uint64_t max_ranks = 1 << 20;     // ranks of one group
};

struct FlightRecorderState {
  bool library_mapped = false;     // libtorch_cuda.so is mapped
  std::string unavailable;         // "" when the recorder was read; else one line why not
  bool not_created = false;        // the singleton pointer is NULL: a fact (start-up), not a read failure
  std::string library, build_id, torch_version, layout_source;
  uint64_t instance_symbol = 0;    // &FlightRecorder<CUDAEvent>::get()::instance in the target
  uint64_t recorder = 0;           // the singleton
  bool enabled = false, capture_cpp_stack = false;
  uint64_t max_entries = 0, next = 0, next_id = 0, reset_epoch = 0;
  uint64_t slots = 0;              // entries_.size()
  bool entries_read = false;       // entries_ itself was read (its slots counted)
  uint64_t other_epoch_entries = 0;  // slots of an older reset epoch (PyTorch leaves them out)
  std::string comm_lib_version;
  std::vector<RecorderEntry> entries;  // oldest first, as dump_entries() orders them
  std::vector<RecorderProcessGroup> process_groups;
  std::string process_groups_unavailable;
  std::vector<RecorderPgStatus> pg_status;
  std::string pg_status_unavailable;
  std::vector<std::string> layout_notes;  // offsets derived by a stated rule, not read from DWARF
  std::vector<std::string> errors;     // partial problems, one line each
  std::vector<std::string> misfit;     // recorder values no correct layout gives (torch/layout_fit.h)
};

struct RecorderSearch {
  LibrarySearch library;
  std::vector<std::string> profile_path;  // extra profile directories (torch/ under each is searched)
  RecorderLimits limits;
};

// `python`: the target's Python stacks (their offsets decode the frames' code objects).
FlightRecorderState read_flight_recorder(Target& target, const PythonStacks& python, const RecorderSearch& search);

// Decoding itself, for a known layout and singleton address (tests use it on synthetic memory).
// `python_offsets` may be null: frames are then unavailable with the reason.
void decode_flight_recorder(Target& target, const LayoutProfile& layout, uint64_t recorder,
                            const PythonOffsets* python_offsets, const RecorderLimits& limits,
                            FlightRecorderState* state);

// The "torch" section of docs/schema-state.md (without the communicator join).
nlohmann::json flight_recorder_json(const FlightRecorderState& state);

}  // namespace nsc
