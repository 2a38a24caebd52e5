// PyTorch's flight recorder decoder on synthetic memory laid out with the shipped layout
// profile of torch 2.11.0+cu130 (from the DWARF of the wheel's own FlightRecorder.hpp):
// every field PyTorch's dump has, the ring's wrap, process groups, frames through the
// Python decoder, and hostile memory (torn vectors, huge counts, tree loops, wild pointers).
#define BOOST_TEST_MODULE torch_recorder
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "layout/layout_profile.h"
#include "nccl/object_view.h"
#include "support/synthetic.h"
#include "torch/flight_recorder.h"
#include "torch/pg_join.h"
#include "torch/torch_build.h"
#include "torch/torch_layout.h"
#include "snapshot/state_text.h"

namespace {

using nsc::test::SyntheticTarget;

const char kBuildId[] = "d5a8ca54ade703f346f36090e67116f56c5e3a64";  // libtorch_cuda.so of torch 2.11.0+cu130

const nsc::LayoutProfile& shipped_profile() {
  static const nsc::LayoutProfile layout = nsc::read_layout_profile(
      std::string(NCCLSCOPE_SOURCE_DIR) + "/native/profiles/torch/" + kBuildId + ".json");
  return layout;
}

// The shipped profile, plus CapturedTraceback and its PyFrame where its TU lacked them (g++
// describes a class whose key function lives elsewhere only under -femit-class-debug-always):
// laid out here with offsets of the test's own choosing, so only the layout leads the decoder.
const nsc::LayoutProfile& profile() {
  static const nsc::LayoutProfile layout = [] {
    nsc::LayoutProfile copy = shipped_profile();
    const nsc::StructLayout* entry = copy.find_struct(nsc::kTorchEntryStruct);
    std::string vector_type = entry->find("input_dtypes_")->type_name;  // any std::vector's layout
    if (!copy.find_struct(nsc::kTorchPyFrameStruct)) {
      nsc::StructLayout frame{nsc::kTorchPyFrameStruct, 24, false, {}};
      frame.members.push_back({"code", 8, 8, nsc::ValueKind::kPointer, "void", 8, {}, 0, 0});
      frame.members.push_back({"lasti", 16, 4, nsc::ValueKind::kSigned, "int", 4, {}, 0, 0});
      copy.structs[frame.name] = frame;
    }
    if (!copy.find_struct(nsc::kTorchTracebackStruct)) {
      nsc::StructLayout traceback{nsc::kTorchTracebackStruct, 0x70, false, {}};
      traceback.members.push_back({"frames_", 0x28, 24, nsc::ValueKind::kStruct, vector_type, 24, {}, 0, 0});
      copy.structs[traceback.name] = traceback;
    }
    return copy;
  }();
  return layout;
}

constexpr uint64_t kRecorder = 0x100000, kEntries = 0x200000, kHeap = 0x400000, kCode = 0x600000;
constexpr uint64_t kCodeType = 0x700000, kStrType = 0x700100, kBytesType = 0x700200;

// Synthetic interpreter offsets (not any real build's): the recorder decoder must use them.
nsc::PythonOffsets python_offsets() {
  nsc::PythonOffsets offsets;
  offsets.version_hex = 0x030c03f0;
  offsets.object_type = 0x08;
  offsets.code_filename = 0x60;
  offsets.code_name = 0x68;
  offsets.code_qualname = 0x70;
  offsets.code_linetable = 0x78;
  offsets.code_firstlineno = 0x30;
  offsets.code_code_adaptive = 0xc0;
  offsets.bytes_size = 0x10;
  offsets.bytes_data = 0x20;
  offsets.unicode_length = 0x10;
  offsets.unicode_state = 0x20;
  offsets.ascii_object_size = 0x28;
  offsets.code_type_address = kCodeType;
  offsets.unicode_type_address = kStrType;
  offsets.bytes_type_address = kBytesType;
  return offsets;
}

class RecorderMemory {
 public:
  RecorderMemory() {
    memory.add_block(kRecorder, 0x1000);
    memory.add_block(kHeap, 0x100000);
    memory.add_block(kCode, 0x10000);
  }

  const nsc::StructLayout& type(const std::string& name) {
    const nsc::StructLayout* found = profile().find_struct(name);
    BOOST_REQUIRE_MESSAGE(found, "profile lacks " + name);
    return *found;
  }
  // Address of `path` inside the `type_name` object at base; *member_type gets the member's type.
  uint64_t at(const std::string& type_name, uint64_t base, const std::string& path, std::string* member_type = nullptr) {
    nsc::ObjectView view(&memory, &profile(), &type(type_name), base);
    std::string why;
    auto field = view.resolve(path, &why);
    BOOST_REQUIRE_MESSAGE(field, why);
    if (member_type) *member_type = field->member->type_name;
    return base + field->offset;
  }
  template <typename T>
  void put(const std::string& type_name, uint64_t base, const std::string& path, T value) {
    memory.put<T>(at(type_name, base, path), value);
  }
  uint64_t allocate(uint64_t size) {
    uint64_t address = next_;
    next_ += (size + 15) / 16 * 16;
    return address;
  }
  void put_bytes(uint64_t address, const void* data, size_t size) {
    for (size_t i = 0; i < size; ++i) memory.put<uint8_t>(address + i, static_cast<const uint8_t*>(data)[i]);
  }
  void put_string(const std::string& type_name, uint64_t base, const std::string& path, const std::string& text,
                  uint64_t claimed_length = 0) {
    std::string string_type;
    uint64_t object = at(type_name, base, path, &string_type);
    uint64_t data = allocate(text.size() + 1);
    put_bytes(data, text.data(), text.size());
    put(string_type, object, "_M_dataplus._M_p", data);
    put(string_type, object, "_M_string_length", claimed_length ? claimed_length : static_cast<uint64_t>(text.size()));
  }
  // A std::vector member: its elements' bytes placed on the heap.
  void put_vector(const std::string& type_name, uint64_t base, const std::string& path, const void* data, size_t bytes) {
    std::string vector_type;
    uint64_t object = at(type_name, base, path, &vector_type);
    uint64_t start = allocate(bytes);
    put_bytes(start, data, bytes);
    put(vector_type, object, "_M_impl._M_start", start);
    put(vector_type, object, "_M_impl._M_finish", start + bytes);
    put(vector_type, object, "_M_impl._M_end_of_storage", start + bytes);
  }
  void put_small_vector(const std::string& type_name, uint64_t base, const std::string& path,
                        const std::vector<int64_t>& values) {
    std::string vector_type;
    uint64_t object = at(type_name, base, path, &vector_type);
    uint64_t start = allocate(values.size() * 8 + 8);
    put_bytes(start, values.data(), values.size() * 8);
    put(vector_type, object, "BeginX", start);
    memory.put<uint32_t>(at(vector_type, object, "Size"), static_cast<uint32_t>(values.size()));
  }
  void put_optional(const std::string& type_name, uint64_t base, const std::string& path, int64_t value) {
    std::string optional_type;
    uint64_t object = at(type_name, base, path, &optional_type);
    memory.put<uint8_t>(at(optional_type, object, "_M_payload._M_engaged"), 1);
    memory.put<int64_t>(at(optional_type, object, "_M_payload._M_payload._M_value"), value);
  }

  // Python objects, laid out with python_offsets().
  uint64_t str(const std::string& text) {
    uint64_t address = allocate_code(0x28 + text.size() + 1);
    memory.put<uint64_t>(address + 0x08, kStrType);
    memory.put<int64_t>(address + 0x10, static_cast<int64_t>(text.size()));
    memory.put<uint32_t>(address + 0x20, (1u << 2) | (1u << 5) | (1u << 6));
    put_bytes(address + 0x28, text.data(), text.size());
    return address;
  }
  // A code object whose location table gives first_line for units [0, 8) and first_line + 5 for [8, 16).
  uint64_t code(const std::string& name, const std::string& file, int first_line) {
    uint64_t table = allocate_code(0x30);
    memory.put<uint64_t>(table + 0x08, kBytesType);
    memory.put<int64_t>(table + 0x10, 4);
    const uint8_t entries[] = {0x80 | (13 << 3) | 7, 0, 0x80 | (13 << 3) | 7, 10};  // no-column entries: delta 0, +5
    put_bytes(table + 0x20, entries, sizeof entries);
    uint64_t code = allocate_code(0x100);
    memory.put<uint64_t>(code + 0x08, kCodeType);
    memory.put<uint64_t>(code + 0x60, str(file));
    memory.put<uint64_t>(code + 0x68, str(name));
    memory.put<uint64_t>(code + 0x70, str(name));
    memory.put<uint64_t>(code + 0x78, table);
    memory.put<int32_t>(code + 0x30, first_line);
    return code;
  }

  SyntheticTarget memory;

 private:
  uint64_t allocate_code(uint64_t size) {
    uint64_t address = code_next_;
    code_next_ += (size + 15) / 16 * 16;
    return address;
  }
  uint64_t next_ = kHeap;
  uint64_t code_next_ = kCode;
};

int64_t scalar(const std::string& name) {
  const nsc::EnumLayout* scalar_type = profile().find_enum(nsc::kTorchScalarTypeEnum);
  BOOST_REQUIRE(scalar_type);
  for (const auto& [value, enumerator] : scalar_type->values)
    if (enumerator == name) return value;
  BOOST_FAIL("no ScalarType " + name);
  return -1;
}

// A recorder with 3 slots that recorded ids 0..4: slots hold 3, 4, 2 and next_ is 2.
struct Scenario {
  RecorderMemory mem;
  uint64_t entry_size = 0;
  uint64_t frame_code[2] = {0, 0};

  Scenario() {
    const std::string recorder = nsc::kTorchRecorderStruct, entry = nsc::kTorchEntryStruct;
    entry_size = mem.type(entry).size;
    mem.memory.add_block(kEntries, 3 * entry_size);
    mem.put<uint8_t>(recorder, kRecorder, "enabled_", 1);
    mem.put<uint64_t>(recorder, kRecorder, "max_entries_", 3);
    mem.put<uint64_t>(recorder, kRecorder, "next_", 2);
    mem.put<uint64_t>(recorder, kRecorder, "id_", 5);
    mem.put<uint64_t>(recorder, kRecorder, "reset_epoch_", 0);
    mem.put_string(recorder, kRecorder, "comm_lib_version_", "2.28.9");
    std::string vector_type;
    uint64_t entries = mem.at(recorder, kRecorder, "entries_", &vector_type);
    mem.put(vector_type, entries, "_M_impl._M_start", kEntries);
    mem.put(vector_type, entries, "_M_impl._M_finish", kEntries + 3 * entry_size);
    mem.put(vector_type, entries, "_M_impl._M_end_of_storage", kEntries + 3 * entry_size);
    frame_code[0] = mem.code("all_reduce", "/torch/distributed/distributed_c10d.py", 3060);
    frame_code[1] = mem.code("train_step", "/work/train.py", 160);
    for (uint64_t id : {3, 4, 2}) write_entry(id);
    write_groups();
  }

  uint64_t slot_address(uint64_t id) const { return kEntries + (id % 3) * entry_size; }

  void write_entry(uint64_t id) {
    const std::string entry = nsc::kTorchEntryStruct;
    uint64_t at = slot_address(id);
    bool tp = id % 2 == 0;
    mem.put<uint64_t>(entry, at, "id_", id);
    mem.put<uint64_t>(entry, at, "pg_id_", tp ? 1 : 2);
    mem.put_string(entry, at, "pg_name_.get<0>", tp ? "1" : "3");
    mem.put_string(entry, at, "pg_name_.get<1>", tp ? "tp0" : "dp0");
    mem.put<uint64_t>(entry, at, "collective_seq_id_", id / 2 + 1);
    mem.put<uint64_t>(entry, at, "p2p_seq_id_", 0);
    mem.put<uint64_t>(entry, at, "op_id_", id / 2 + 1);
    mem.put_string(entry, at, "profiling_name_", "nccl:all_reduce");
    mem.put<int64_t>(entry, at, "time_created_", 1796167989376012490 + static_cast<int64_t>(id));
    mem.put<int64_t>(entry, at, "timeout_ms_", 600000);
    mem.put<uint8_t>(entry, at, "isP2P_", 0);
    mem.put<uint8_t>(entry, at, "retired_", id != 4);
    mem.put<uint64_t>(entry, at, "thread_id_._M_thread", 140120095826240);
    mem.put_string(entry, at, "thread_name_", "python");
    if (id != 4) mem.put_optional(entry, at, "time_discovered_completed_", 1796167989525250404 + static_cast<int64_t>(id));
    if (id == 3) mem.put_optional(entry, at, "time_discovered_started_", 1796167989500000000);
    mem.put_small_vector(entry, at, "input_dims_", {1});
    mem.put_small_vector(entry, at, "output_dims_", {2});
    mem.put_small_vector(entry, at, "sizes_", {65536, 4, static_cast<int64_t>(id)});
    int8_t input_type = static_cast<int8_t>(scalar("Float")), output_type = static_cast<int8_t>(scalar("BFloat16"));
    mem.put_vector(entry, at, "input_dtypes_", &input_type, 1);
    mem.put_vector(entry, at, "output_dtypes_", &output_type, 1);
    if (id == 4) mem.put<uint64_t>(entry, at, "end_", 0xdead0000);  // an event the watchdog still holds
    // The traceback: CapturedTraceback with two PyFrames, innermost first.
    uint64_t traceback = mem.allocate(mem.type(nsc::kTorchTracebackStruct).size);
    mem.put<uint64_t>(entry, at, "traceback_._M_ptr", traceback);
    const nsc::StructLayout& frame = mem.type(nsc::kTorchPyFrameStruct);
    std::vector<uint8_t> frames(2 * frame.size);
    uint64_t start = mem.allocate(frames.size());
    for (int i = 0; i < 2; ++i) {
      mem.put<uint64_t>(nsc::kTorchPyFrameStruct, start + i * frame.size, "code", frame_code[i]);
      mem.put<int32_t>(nsc::kTorchPyFrameStruct, start + i * frame.size, "lasti", i == 0 ? 4 : 20);  // bytes
    }
    std::string vector_type;
    uint64_t vector = mem.at(nsc::kTorchTracebackStruct, traceback, "frames_", &vector_type);
    mem.put(vector_type, vector, "_M_impl._M_start", start);
    mem.put(vector_type, vector, "_M_impl._M_finish", start + 2 * frame.size);
    mem.put(vector_type, vector, "_M_impl._M_end_of_storage", start + 2 * frame.size);
  }

  // pg_name_to_ranks_: two nodes, ("0","default_pg") -> [0,1,2,3] at the root, ("1","tp0") -> [0,1] right of it.
  uint64_t node[2] = {0, 0};
  void write_groups() {
    const std::string recorder = nsc::kTorchRecorderStruct;
    uint64_t header = mem.at(recorder, kRecorder, "pg_name_to_ranks_._M_t._M_impl._M_header");
    const nsc::StructLayout& base = mem.type("std::_Rb_tree_node_base");
    const nsc::StructLayout& tuple = mem.type(nsc::torch_pg_name_tuple());
    std::vector<std::vector<uint64_t>> ranks = {{0, 1, 2, 3}, {0, 1}};
    const char* names[2][2] = {{"0", "default_pg"}, {"1", "tp0"}};
    for (int i = 0; i < 2; ++i) {
      node[i] = mem.allocate(base.size + tuple.size + 24);
      uint64_t value = node[i] + base.size;  // the node's value follows its base (libstdc++)
      mem.put_string(tuple.name, value, "get<0>", names[i][0]);
      mem.put_string(tuple.name, value, "get<1>", names[i][1]);
      uint64_t vector = value + tuple.size;  // pair.second
      uint64_t start = mem.allocate(ranks[i].size() * 8);
      mem.put_bytes(start, ranks[i].data(), ranks[i].size() * 8);
      mem.memory.put<uint64_t>(vector, start);
      mem.memory.put<uint64_t>(vector + 8, start + ranks[i].size() * 8);
      mem.memory.put<uint64_t>(vector + 16, start + ranks[i].size() * 8);
    }
    auto link = [&](uint64_t at, const char* which, uint64_t to) { mem.put<uint64_t>("std::_Rb_tree_node_base", at, which, to); };
    link(header, "_M_parent", node[0]);
    link(header, "_M_left", node[0]);
    link(header, "_M_right", node[1]);
    link(node[0], "_M_parent", header);
    link(node[0], "_M_right", node[1]);
    link(node[1], "_M_parent", node[0]);
    mem.put<uint64_t>(recorder, kRecorder, "pg_name_to_ranks_._M_t._M_impl._M_node_count", 2);
    // all_pg_status_: an empty map (header pointing at itself), as a fresh recorder has.
    uint64_t status_header = mem.at(recorder, kRecorder, "all_pg_status_._M_t._M_impl._M_header");
    link(status_header, "_M_left", status_header);
    link(status_header, "_M_right", status_header);
  }

  nsc::FlightRecorderState decode(nsc::RecorderLimits limits = {}) {
    nsc::FlightRecorderState state;
    nsc::PythonOffsets offsets = python_offsets();
    nsc::decode_flight_recorder(mem.memory, profile(), kRecorder, &offsets, limits, &state);
    return state;
  }
};

bool has_error(const nsc::FlightRecorderState& state, const std::string& text) {
  for (const std::string& error : state.errors)
    if (error.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(profile_is_the_real_dwarf_of_torch_2_11) {
  const nsc::LayoutProfile& real = shipped_profile();
  BOOST_TEST(real.build_id == kBuildId);
  BOOST_TEST(real.find_struct(nsc::kTorchEntryStruct) != nullptr);
  BOOST_TEST(real.find_enum(nsc::kTorchScalarTypeEnum)->name_of(6).value_or("") == "Float");
  BOOST_TEST(real.constants.count(nsc::kLoadSegmentsConstant) == 1u);
  BOOST_TEST(nsc::torch_version_of_profile(profile()).rfind("2.11.0+cu130", 0) == 0);
  BOOST_TEST(profile().symbols.at(nsc::kTorchRecorderInstanceSymbol) == 0x16a7afd0u);
  // sizeof(FlightRecorder<CUDAEvent>) = 288, entries_ at 48, max_entries_ 72, next_ 80 (gdb ptype/o of the TU).
  const nsc::StructLayout* recorder = profile().find_struct(nsc::kTorchRecorderStruct);
  BOOST_REQUIRE(recorder);
  BOOST_TEST(recorder->size == 288u);
  BOOST_TEST(recorder->find("entries_")->offset == 48u);
  BOOST_TEST(recorder->find("max_entries_")->offset == 72u);
  BOOST_TEST(recorder->find("next_")->offset == 80u);
}

BOOST_AUTO_TEST_CASE(every_field_in_ring_order) {
  Scenario scenario;
  nsc::FlightRecorderState state = scenario.decode();
  BOOST_TEST(state.unavailable == "");
  BOOST_TEST(state.enabled);
  BOOST_TEST(state.max_entries == 3u);
  BOOST_TEST(state.next_id == 5u);
  BOOST_TEST(state.comm_lib_version == "2.28.9");
  BOOST_REQUIRE(state.entries.size() == 3u);
  // dump_entries(): slot next_ (2) first, then 0, 1.
  BOOST_TEST(state.entries[0].record_id == 2u);
  BOOST_TEST(state.entries[1].record_id == 3u);
  BOOST_TEST(state.entries[2].record_id == 4u);
  const nsc::RecorderEntry& entry = state.entries[1];  // id 3: dp0, started and completed
  BOOST_TEST(entry.address == scenario.slot_address(3));
  BOOST_TEST(entry.pg_id == 2u);
  BOOST_TEST(entry.pg_name == "3");
  BOOST_TEST(entry.pg_desc == "dp0");
  BOOST_TEST(entry.collective_seq_id == 2u);
  BOOST_TEST(entry.op_id == 2u);
  BOOST_TEST(entry.profiling_name == "nccl:all_reduce");
  BOOST_TEST(entry.time_created_ns == 1796167989376012493);
  BOOST_TEST(entry.timeout_ms == 600000);
  BOOST_TEST(!entry.is_p2p);
  BOOST_TEST(entry.retired);
  BOOST_TEST(entry.thread_id == 140120095826240u);
  BOOST_TEST(entry.thread_name == "python");
  BOOST_TEST(*entry.time_discovered_started_ns == 1796167989500000000);
  BOOST_TEST(*entry.time_discovered_completed_ns == 1796167989525250407);
  BOOST_TEST(entry.state() == "completed");
  BOOST_TEST(!entry.duration_ms.has_value());
  BOOST_REQUIRE(entry.input_sizes.size() == 1u);
  BOOST_TEST(entry.input_sizes[0] == std::vector<int64_t>({65536}));
  BOOST_REQUIRE(entry.output_sizes.size() == 1u);
  BOOST_TEST(entry.output_sizes[0] == std::vector<int64_t>({4, 3}));
  BOOST_TEST(entry.input_dtypes == std::vector<std::string>({"Float"}));
  BOOST_TEST(entry.output_dtypes == std::vector<std::string>({"BFloat16"}));
  BOOST_TEST(entry.problems.empty());
  // Frames: lasti is a byte offset (4 -> first range, 20 -> second range: line + 5).
  BOOST_REQUIRE(entry.frames.size() == 2u);
  BOOST_TEST(entry.frames[0].name == "all_reduce");
  BOOST_TEST(entry.frames[0].filename == "/torch/distributed/distributed_c10d.py");
  BOOST_TEST(*entry.frames[0].line == 3060);
  BOOST_TEST(entry.frames[1].name == "train_step");
  BOOST_TEST(*entry.frames[1].line == 165);
  // id 4: scheduled, its end event still held.
  BOOST_TEST(state.entries[2].state() == "scheduled");
  BOOST_TEST(state.entries[2].end_event_pending);
  BOOST_TEST(!state.entries[2].retired);
  // Process groups from pg_name_to_ranks_, in map order.
  BOOST_REQUIRE(state.process_groups.size() == 2u);
  BOOST_TEST(state.process_groups[0].desc == "default_pg");
  BOOST_TEST(state.process_groups[0].ranks == std::vector<uint64_t>({0, 1, 2, 3}));
  BOOST_TEST(state.process_groups[1].name == "1");
  BOOST_TEST(state.process_groups[1].ranks == std::vector<uint64_t>({0, 1}));
  // The 2.11 profile's TU did not name ProcessGroupStatus: said, not zero.
  if (profile().find_struct(nsc::kTorchPgStatusStruct) == nullptr)
    BOOST_TEST(state.pg_status_unavailable.find("c10d::ProcessGroupStatus") != std::string::npos);
  BOOST_TEST(state.errors.empty());
  // JSON carries PyTorch's dump keys.
  nlohmann::json json = nsc::flight_recorder_json(state);
  BOOST_TEST(json["entries"][1]["process_group"] == nlohmann::json::array({"3", "dp0"}));
  BOOST_TEST(json["entries"][1]["thread_id"] == "140120095826240");
  BOOST_TEST(json["entries"][2]["time_discovered_completed_ns"].is_null());
}

BOOST_AUTO_TEST_CASE(older_epochs_are_left_out_like_the_dump) {
  Scenario scenario;
  scenario.mem.put<uint64_t>(nsc::kTorchRecorderStruct, kRecorder, "reset_epoch_", 1);
  for (uint64_t id : {3, 4}) scenario.mem.put<uint64_t>(nsc::kTorchEntryStruct, scenario.slot_address(id), "reset_epoch_", 1);
  nsc::FlightRecorderState state = scenario.decode();
  BOOST_TEST(state.unavailable == "");
  BOOST_TEST(state.entries.size() == 2u);
  BOOST_TEST(state.other_epoch_entries == 1u);
}

BOOST_AUTO_TEST_CASE(an_entry_of_a_later_epoch_is_no_entry_pytorch_wrote) {
  Scenario scenario;
  scenario.mem.put<uint64_t>(nsc::kTorchEntryStruct, scenario.slot_address(2), "reset_epoch_", 7);
  nsc::FlightRecorderState state = scenario.decode();
  BOOST_REQUIRE(state.entries.size() == 2u);  // ids 3, 4: the torn one is left out, said once
  BOOST_TEST(has_error(state, "left out: torn"));
  BOOST_TEST(has_error(state, "reset_epoch_ 7 after the recorder's 0"));
}

BOOST_AUTO_TEST_CASE(torn_entries_vector_is_refused) {
  Scenario scenario;
  std::string vector_type;
  uint64_t vector = scenario.mem.at(nsc::kTorchRecorderStruct, kRecorder, "entries_", &vector_type);
  scenario.mem.put(vector_type, vector, "_M_impl._M_finish", kEntries + 3 * scenario.entry_size - 1);
  nsc::FlightRecorderState state = scenario.decode();
  BOOST_TEST(state.entries.empty());
  BOOST_TEST(has_error(state, "torn vector"));
  BOOST_TEST(state.unavailable.rfind("unreadable: layout does not fit (entries_: torn vector", 0) == 0);
}

// Ring bounds no recorder has: the profile does not fit; no slot is read, nothing is shown.
BOOST_AUTO_TEST_CASE(a_ring_that_cannot_be_means_the_layout_does_not_fit) {
  for (auto [member, value, why] : {std::tuple<const char*, uint64_t, const char*>{"max_entries_", uint64_t{1} << 40, "max_entries_ 1099511627776 slots"},
                                    {"max_entries_", 2, "entries_ holds 3 slots, max_entries_ is 2"},
                                    {"next_", 99, "next_ 99 outside the 3 slots"},
                                    {"next_", 3, "next_ 3 outside the 3 slots"},
                                    {"id_", 2, "id_ 2 below the 3 slots filled"},
                                    {"enabled_", 0x41, "enabled_ (a bool) holds 65"}}) {
    Scenario scenario;
    if (std::string(member) == "enabled_") scenario.mem.put<uint8_t>(nsc::kTorchRecorderStruct, kRecorder, member, static_cast<uint8_t>(value));
    else scenario.mem.put<uint64_t>(nsc::kTorchRecorderStruct, kRecorder, member, value);
    uint64_t reads_before = scenario.mem.memory.reads;
    nsc::FlightRecorderState state = scenario.decode();
    BOOST_TEST(state.unavailable == std::string("unreadable: layout does not fit (") + why + ")");
    BOOST_TEST(state.entries.empty());
    BOOST_TEST(state.process_groups.empty());
    BOOST_TEST(nsc::flight_recorder_json(state).count("entries") == 0u);
    BOOST_TEST(scenario.mem.memory.reads - reads_before < 40u);  // the slots were never read
  }
}

// One entry a core caught mid-write among sound ones: left out with one line, the rest decoded.
BOOST_AUTO_TEST_CASE(one_torn_entry_is_left_out_the_rest_decoded) {
  Scenario scenario;
  scenario.mem.put_string(nsc::kTorchEntryStruct, scenario.slot_address(3), "profiling_name_", "nccl:all_reduce",
                          uint64_t{1} << 30);  // a name claiming 1 GB
  nsc::FlightRecorderState state = scenario.decode();
  BOOST_TEST(state.unavailable == "");
  BOOST_REQUIRE(state.entries.size() == 2u);
  BOOST_TEST(state.entries[0].record_id == 2u);
  BOOST_TEST(state.entries[1].record_id == 4u);
  BOOST_TEST(has_error(state, "left out: torn"));
  BOOST_TEST(has_error(state, "exceeds 4096 bytes"));
  // A sequence id going back is the same: one entry, left out.
  Scenario back;
  back.mem.put<uint64_t>(nsc::kTorchEntryStruct, back.slot_address(4), "collective_seq_id_", 1);
  state = back.decode();
  BOOST_REQUIRE(state.entries.size() == 2u);
  BOOST_TEST(has_error(state, "pg 1 sequence ids go back at record 4 (collective 1 after 2"));
}

// A ring larger than the decoder reads (TORCH_FR_BUFFER_SIZE past the read limit) still fits:
// the oldest entries are read, in ring order, and the limit is said.
BOOST_AUTO_TEST_CASE(a_ring_past_the_read_limit_is_read_in_part) {
  Scenario scenario;
  nsc::RecorderLimits limits;
  limits.max_entries = 2;
  nsc::FlightRecorderState state = scenario.decode(limits);
  BOOST_TEST(state.unavailable == "");
  BOOST_TEST(state.slots == 3u);
  BOOST_REQUIRE(state.entries.size() == 2u);
  BOOST_TEST(state.entries[0].record_id == 2u);
  BOOST_TEST(state.entries[1].record_id == 3u);
  BOOST_TEST(has_error(state, "entries_: 3 elements exceed 2"));
}

BOOST_AUTO_TEST_CASE(huge_sizes_are_bounded_and_said) {
  Scenario scenario;
  std::string small_vector;
  uint64_t sizes = scenario.mem.at(nsc::kTorchEntryStruct, scenario.slot_address(4), "sizes_", &small_vector);
  scenario.mem.memory.put<uint32_t>(scenario.mem.at(small_vector, sizes, "Size"), 0x80000000u);
  nsc::FlightRecorderState state = scenario.decode();
  BOOST_REQUIRE(state.entries.size() == 3u);
  BOOST_TEST(has_error(state, "sizes_: 2147483648 elements exceed"));
  BOOST_TEST(state.entries[2].input_sizes.empty());
}

// Two or more entries no recorder writes: the profile is not this build's.
BOOST_AUTO_TEST_CASE(entries_that_cannot_be_mean_the_layout_does_not_fit) {
  Scenario scenario;
  scenario.mem.put<uint8_t>(nsc::kTorchEntryStruct, scenario.slot_address(2), "isP2P_", 7);
  scenario.mem.put<uint64_t>(nsc::kTorchEntryStruct, scenario.slot_address(3), "pg_id_", uint64_t{1} << 33);
  nsc::FlightRecorderState state = scenario.decode();
  BOOST_TEST(state.unavailable == "unreadable: layout does not fit (2 of 3 entries: isP2P_ (a bool) holds 7)");
  BOOST_TEST(state.entries.empty());
}

// The profile of another build: the 2.11 Entry without reset_epoch_ (as older torch has it),
// every later member 8 bytes earlier. Read on 2.11 memory, it must not give entries.
BOOST_AUTO_TEST_CASE(a_profile_of_another_build_gives_no_garbage_entries) {
  Scenario scenario;
  nsc::LayoutProfile wrong = profile();
  nsc::StructLayout& entry = wrong.structs.at(nsc::kTorchEntryStruct);
  uint64_t removed = entry.find("reset_epoch_")->offset;
  std::vector<nsc::MemberLayout> kept;
  for (nsc::MemberLayout member : entry.members) {
    if (member.name == "reset_epoch_") continue;
    if (member.offset > removed) member.offset -= 8;
    kept.push_back(member);
  }
  entry.members = kept;
  entry.size -= 8;
  nsc::FlightRecorderState state;
  nsc::PythonOffsets offsets = python_offsets();
  nsc::decode_flight_recorder(scenario.mem.memory, wrong, kRecorder, &offsets, {}, &state);
  BOOST_TEST_MESSAGE(state.unavailable);
  BOOST_TEST(state.unavailable.rfind("unreadable: layout does not fit (", 0) == 0);
  BOOST_TEST(state.entries.empty());
}

BOOST_AUTO_TEST_CASE(looping_tree_and_wild_pointers_end_cleanly) {
  Scenario scenario;
  // The second group's node points right at itself: the walk stops, said.
  scenario.mem.put<uint64_t>("std::_Rb_tree_node_base", scenario.node[1], "_M_right", scenario.node[1]);
  // id 2's traceback points at unmapped memory; id 3's first code object is freed (wrong type).
  scenario.mem.put<uint64_t>(nsc::kTorchEntryStruct, scenario.slot_address(2), "traceback_._M_ptr", 0xbad00000);
  scenario.mem.memory.put<uint64_t>(scenario.frame_code[0] + 0x08, 0x1234);
  nsc::FlightRecorderState state = scenario.decode();
  BOOST_TEST(state.process_groups.empty());
  BOOST_TEST(state.process_groups_unavailable.find("pg_name_to_ranks_") != std::string::npos);
  BOOST_REQUIRE(state.entries.size() == 3u);
  BOOST_TEST(state.entries[0].frames.empty());
  BOOST_TEST(state.entries[0].frames_unavailable.find("0xbad00000") != std::string::npos);
  BOOST_REQUIRE(state.entries[1].frames.size() == 2u);
  BOOST_TEST(state.entries[1].frames[0].error.find("not PyCode_Type") != std::string::npos);
  BOOST_TEST(*state.entries[1].frames[1].line == 165);
}

BOOST_AUTO_TEST_CASE(unreadable_entry_memory_is_said) {
  Scenario scenario;
  std::string vector_type;
  uint64_t vector = scenario.mem.at(nsc::kTorchRecorderStruct, kRecorder, "entries_", &vector_type);
  scenario.mem.put(vector_type, vector, "_M_impl._M_start", uint64_t{0xa0000000});
  scenario.mem.put(vector_type, vector, "_M_impl._M_finish", 0xa0000000 + 3 * scenario.entry_size);
  scenario.mem.put(vector_type, vector, "_M_impl._M_end_of_storage", 0xa0000000 + 3 * scenario.entry_size);
  nsc::FlightRecorderState state = scenario.decode();
  BOOST_TEST(state.errors.size() >= 3u);
  BOOST_TEST(has_error(state, "not mapped"));
  for (const auto& entry : state.entries) BOOST_TEST(!entry.problems.empty());
}

BOOST_AUTO_TEST_CASE(frames_without_python_layout_are_unavailable) {
  Scenario scenario;
  nsc::FlightRecorderState state;
  nsc::decode_flight_recorder(scenario.mem.memory, profile(), kRecorder, nullptr, {}, &state);
  BOOST_REQUIRE(state.entries.size() == 3u);
  BOOST_TEST(state.entries[0].frames.empty());
  BOOST_TEST(state.entries[0].frames_unavailable.find("2 Python frames") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(process_groups_join_communicators) {
  Scenario scenario;
  nsc::FlightRecorderState state = scenario.decode();
  // Rank 1 of the job: default_pg (4 ranks) is 0xa; tp0 (2 ranks, rank index 1) is 0xb or 0xc
  // by size and rank, 0xc by its collective count (tp0's last collective_seq_id is 3).
  nlohmann::json comms = nlohmann::json::array({
      {{"address", "0xa"}, {"rank", 1}, {"nranks", 4}, {"seq_launched", {{"AllReduce", 0}}}},
      {{"address", "0xb"}, {"rank", 1}, {"nranks", 2}, {"seq_launched", {{"AllReduce", 1}}}},
      {{"address", "0xc"}, {"rank", 1}, {"nranks", 2}, {"seq_launched", {{"AllReduce", 3}}}}});
  nlohmann::json groups = nsc::join_process_groups(state, comms, 1);
  BOOST_REQUIRE(groups.size() == 2u);
  BOOST_TEST(groups[0]["communicator"] == "0xa");
  BOOST_TEST(groups[0]["match"] == "unique");
  BOOST_TEST(groups[1]["comm_rank"] == 1);
  BOOST_TEST(groups[1]["communicator"] == "0xc");
  BOOST_TEST(groups[1]["last_collective_seq_id"] == 3);
  // Same counts: ambiguous, both named, none chosen.
  comms[2]["seq_launched"]["AllReduce"] = 1;
  groups = nsc::join_process_groups(state, comms, 1);
  BOOST_TEST(groups[1]["match"] == "ambiguous");
  BOOST_TEST(groups[1]["communicator"].is_null());
  BOOST_TEST(groups[1]["candidates"].size() == 2u);
  // Rank 5 is in neither group.
  groups = nsc::join_process_groups(state, comms, 5);
  BOOST_TEST(groups[1]["match"] == "not-a-member");
}

BOOST_AUTO_TEST_CASE(text_lines_name_group_communicator_and_caller_line) {
  Scenario scenario;
  nsc::FlightRecorderState state = scenario.decode();
  nlohmann::json comms = nlohmann::json::array({{{"address", "0xa"}, {"rank", 1}, {"nranks", 4}},
                                                {{"address", "0xc"}, {"rank", 1}, {"nranks", 2}}});
  nlohmann::json document = {{"schema", "ncclscope.state/1"}, {"threads", nlohmann::json::array()},
                             {"torch", nsc::flight_recorder_json(state)}};
  document["torch"]["process_groups"] = nsc::join_process_groups(state, comms, 1);
  std::string text = nsc::render_state_text(document);
  BOOST_TEST_MESSAGE(text);
  BOOST_TEST(text.find("pg '1' (tp0) ranks 0,1: communicator 0xc") != std::string::npos);
  BOOST_TEST(text.find("#3 nccl:all_reduce pg '3' (dp0) coll #2 completed [65536] Float at train.py:165 in train_step") !=
             std::string::npos);
  BOOST_TEST(text.find("#4 nccl:all_reduce pg '1' (tp0) coll #3 scheduled") != std::string::npos);
}

// Which torch is mapped (torch/torch_build.h): a torch install whose libtorch_cuda.so is this test
// program (an ELF with a build-id), mapped into synthetic memory with its first pages.
namespace {

namespace fs = std::filesystem;

struct FakeInstall {
  fs::path root;
  std::string library;
  explicit FakeInstall(const std::string& version_py) {
    root = fs::temp_directory_path() / ("ncclscope-torch-build-" + std::to_string(::getpid()));
    fs::create_directories(root / "torch" / "lib");
    library = (root / "torch" / "lib" / "libtorch_cuda.so").string();
    fs::copy_file("/proc/self/exe", library, fs::copy_options::overwrite_existing);
    std::ofstream(root / "torch" / "version.py") << version_py;
  }
  ~FakeInstall() { fs::remove_all(root); }
  void map_into(SyntheticTarget& memory, uint64_t address) const {
    std::ifstream in(library, std::ios::binary);
    std::vector<char> head(0x4000);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::memcpy(memory.add_file_block(address, head.size(), library), head.data(), head.size());
  }
  // A source profile (no build-id, no symbol) of torch 2.11.0 under root/profiles/torch.
  std::string write_source_profile() const {
    nsc::LayoutProfile source = shipped_profile();
    source.build_id.clear();
    source.symbols.clear();
    source.constants.erase(nsc::kLoadSegmentsConstant);
    source.library = std::string(nsc::kTorchProfileTag) + "2.11.0 (source v2.11.0)";
    fs::create_directories(root / "profiles" / "torch");
    nsc::write_layout_profile(source, (root / "profiles" / "torch" / "torch-2.11.0.json").string());
    return (root / "profiles").string();
  }
};

nsc::FlightRecorderState read_recorder(nsc::test::SyntheticTarget& memory, const std::vector<std::string>& profile_path = {}) {
  nsc::RecorderSearch search;
  search.profile_path = profile_path;
  return nsc::read_flight_recorder(memory, nsc::PythonStacks{}, search);
}

}  // namespace

BOOST_AUTO_TEST_CASE(version_py_text_and_source_profile_names) {
  auto version = nsc::torch_version_in_version_py(
      "from typing import Optional\n__version__ = '2.11.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\n"
      "git_version = '70d99e998b4955e0049d13a98d77ae1b14db1f45'\n");
  BOOST_TEST(version.value_or("") == "2.11.0+cu130 70d99e998b4955e0049d13a98d77ae1b14db1f45");
  BOOST_TEST(!nsc::torch_version_in_version_py("__version__ = 'dev'\n").has_value());
  BOOST_TEST(nsc::source_profile_file_name("2.5.1+cu124 a8d6afb5") == "torch-2.5.1.json");
  BOOST_TEST(nsc::source_profile_file_name("garbage") == "");
}

BOOST_AUTO_TEST_CASE(two_libtorch_and_no_profile_are_one_line_each) {
  SyntheticTarget memory;
  memory.add_file_block(0x10000000, 0x1000, "/nonexistent/a/torch/lib/libtorch_cuda.so");
  memory.add_file_block(0x20000000, 0x1000, "/nonexistent/b/torch/lib/libtorch_cuda.so");
  nsc::FlightRecorderState state = read_recorder(memory);
  BOOST_TEST(state.library == "/nonexistent/a/torch/lib/libtorch_cuda.so");
  BOOST_TEST(has_error(state, "a second libtorch_cuda.so is mapped: /nonexistent/b/torch/lib/libtorch_cuda.so"));
  BOOST_TEST(state.unavailable.find("no torch layout profile for this build") != std::string::npos);
  BOOST_TEST(state.unavailable.find("torch version unknown") != std::string::npos);
  BOOST_TEST(state.unavailable.find('\n') == std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_install_version_chooses_a_source_profile) {
  FakeInstall install("__version__ = '2.11.0+cu130'\ngit_version = '70d99e998b4955e0049d13a98d77ae1b14db1f45'\n");
  std::string profiles = install.write_source_profile();
  SyntheticTarget memory;
  install.map_into(memory, 0x10000000);
  nsc::FlightRecorderState state = read_recorder(memory, {profiles});
  BOOST_TEST_MESSAGE(state.layout_source << " | " << state.unavailable);
  BOOST_TEST(state.torch_version == "2.11.0 (source v2.11.0)");
  BOOST_TEST(state.layout_source.find("chosen by torch 2.11.0+cu130 70d99e99") != std::string::npos);
  BOOST_TEST(!state.build_id.empty());  // the local copy is proven the mapped build
  // This stand-in library has no recorder symbol, and a source profile carries none: said.
  BOOST_TEST(state.unavailable.find("a source profile carries none") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_unreadable_version_is_one_line) {
  FakeInstall install("version = 'not what torch writes'\n");
  std::string profiles = install.write_source_profile();
  SyntheticTarget memory;
  install.map_into(memory, 0x10000000);
  nsc::FlightRecorderState state = read_recorder(memory, {profiles});
  BOOST_TEST(has_error(state, "torch version unreadable: "));
  BOOST_TEST(has_error(state, "has no __version__ = '...' line"));
  BOOST_TEST(state.unavailable.find("torch version unknown") != std::string::npos);
}
