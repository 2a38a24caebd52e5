#include "torch/flight_recorder.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <unordered_set>

#include "layout/layout_profile.h"
#include "layout/profile_store.h"
#include "nccl/object_view.h"
#include "python/python_frames.h"
#include "torch/layout_fit.h"
#include "torch/torch_build.h"
#include "torch/torch_layout.h"
#include "util/errors.h"
#include "util/phase_times.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

uint64_t round_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

// Reads libstdc++ / c10 containers member by member through the layout; every failure
// becomes one line in *problems and an empty result, never a made-up value.
class ContainerReader {
 public:
  ContainerReader(Target& target, const LayoutProfile& layout, const RecorderLimits& limits)
      : target_(target), layout_(layout), limits_(limits) {}

  std::optional<std::string> string(const ObjectView& owner, const std::string& path, std::string* why) {
    ObjectView text = owner.member(path);
    if (!text.valid()) return fail(why, path + ": not a std::string in this layout");
    auto data = text.pointer("_M_dataplus._M_p");
    auto length = text.unsigned_integer("_M_string_length");
    if (!data.ok() || !length.ok()) return fail(why, path + ": " + (data.ok() ? length.unavailable : data.unavailable));
    bool truncated = *length.value > limits_.max_string;
    std::string bytes(std::min(*length.value, limits_.max_string), '\0');
    ReadError error;
    if (!bytes.empty() && !target_.read(*data.value, bytes.data(), bytes.size(), &error))
      return fail(why, path + " (" + std::to_string(*length.value) + " bytes at " + hex(*data.value) + "): " + error.message());
    if (truncated) {
      *why = path + ": length " + std::to_string(*length.value) + " exceeds " + std::to_string(limits_.max_string) +
             " bytes (not believed; first bytes kept)";
      bytes += "...";
    }
    return bytes;
  }

  struct Span {
    uint64_t begin = 0, count = 0;  // count: the elements to read (at most `max`)
    uint64_t total = 0;             // the vector's size
  };

  // A std::vector's [begin, end) as `element_size`-byte elements, at most `max` of them.
  // *torn (when given) is set when the vector's own pointers are impossible (not merely unreadable).
  std::optional<Span> vector(const ObjectView& owner, const std::string& path, uint64_t element_size, uint64_t max,
                             std::string* why, bool* torn = nullptr) {
    ObjectView vec = owner.member(path);
    if (!vec.valid() || element_size == 0) return fail_span(why, path + ": not a std::vector in this layout");
    auto begin = vec.pointer("_M_impl._M_start");
    auto end = vec.pointer("_M_impl._M_finish");
    auto capacity_end = vec.pointer("_M_impl._M_end_of_storage");
    if (!begin.ok() || !end.ok() || !capacity_end.ok())
      return fail_span(why, path + ": " + (!begin.ok() ? begin.unavailable : !end.ok() ? end.unavailable : capacity_end.unavailable));
    uint64_t first = *begin.value, last = *end.value, cap = *capacity_end.value;
    if (last < first || cap < last || (last - first) % element_size != 0) {
      if (torn) *torn = true;
      return fail_span(why, path + ": torn vector (begin " + hex(first) + ", end " + hex(last) + ", capacity end " +
                                hex(cap) + ", element " + std::to_string(element_size) + " bytes)");
    }
    Span span{first, (last - first) / element_size, (last - first) / element_size};
    if (span.count > max) {
      *why = path + ": " + std::to_string(span.count) + " elements exceed " + std::to_string(max) + " (first " +
             std::to_string(max) + " read)";
      span.count = max;
    }
    return span;
  }

  // c10::SmallVector<int64_t, N>: BeginX and Size of its SmallVectorBase.
  std::optional<std::vector<int64_t>> small_vector(const ObjectView& owner, const std::string& path, std::string* why) {
    ObjectView vec = owner.member(path);
    auto begin = vec.pointer("BeginX");
    auto size = vec.unsigned_integer("Size");
    if (!begin.ok() || !size.ok()) return fail_vec(why, path + ": " + (begin.ok() ? size.unavailable : begin.unavailable));
    if (*size.value > limits_.max_dims)
      return fail_vec(why, path + ": " + std::to_string(*size.value) + " elements exceed " + std::to_string(limits_.max_dims));
    std::vector<int64_t> values(*size.value);
    ReadError error;
    if (!values.empty() && !target_.read(*begin.value, values.data(), values.size() * sizeof(int64_t), &error))
      return fail_vec(why, path + " at " + hex(*begin.value) + ": " + error.message());
    return values;
  }

  // std::optional<T>: engaged flag and the raw bytes of the value.
  struct OptionalValue {
    bool engaged = false;
    uint64_t raw = 0;
    uint64_t size = 0;
  };
  std::optional<OptionalValue> optional(const ObjectView& owner, const std::string& path, std::string* why) {
    ObjectView payload = owner.member(path);
    auto engaged = payload.integer("_M_payload._M_engaged");
    if (!engaged.ok()) return fail_opt(why, path + ": " + engaged.unavailable);
    std::string reason;
    auto field = payload.resolve("_M_payload._M_payload._M_value", &reason);
    if (!field) return fail_opt(why, path + ": " + reason);
    OptionalValue value;
    value.engaged = *engaged.value != 0;
    value.size = field->member->element_size;
    if (!value.engaged) return value;
    auto raw = read_raw_integer(target_, payload.address() + field->offset, value.size);
    if (!raw.ok()) return fail_opt(why, path + ": " + raw.unavailable);
    value.raw = *raw.value;
    return value;
  }

  // In-order walk of a std::map's red-black tree: the address of each node's value.
  std::optional<std::vector<uint64_t>> map_values(const ObjectView& owner, const std::string& path,
                                                  uint64_t value_offset, std::string* why) {
    ObjectView tree = owner.member(path + "._M_t._M_impl");
    std::string reason;
    auto header = tree.resolve("_M_header", &reason);
    auto count = tree.unsigned_integer("_M_node_count");
    if (!header || !count.ok()) return fail_nodes(why, path + ": " + (header ? count.unavailable : reason));
    if (*count.value > limits_.max_groups)
      return fail_nodes(why, path + ": " + std::to_string(*count.value) + " nodes exceed " + std::to_string(limits_.max_groups));
    uint64_t header_address = tree.address() + header->offset;
    ObjectView header_node = ObjectView::of(target_, layout_, "std::_Rb_tree_node_base", header_address);
    auto leftmost = header_node.pointer("_M_left");
    if (!leftmost.ok()) return fail_nodes(why, path + ": " + leftmost.unavailable);
    std::vector<uint64_t> values;
    std::unordered_set<uint64_t> seen;
    uint64_t node = *count.value == 0 ? header_address : *leftmost.value;
    while (node != header_address) {
      if (node == 0 || !seen.insert(node).second || values.size() >= *count.value)
        return fail_nodes(why, path + ": tree walk left the " + std::to_string(*count.value) + " nodes at " + hex(node));
      values.push_back(node + value_offset);
      auto next = successor(node);
      if (!next) return fail_nodes(why, path + ": node " + hex(node) + " unreadable");
      node = *next;
    }
    if (values.size() != *count.value)
      return fail_nodes(why, path + ": " + std::to_string(values.size()) + " nodes walked, _M_node_count says " +
                                 std::to_string(*count.value));
    return values;
  }

 private:
  // libstdc++'s _Rb_tree_increment, each step bounded.
  std::optional<uint64_t> successor(uint64_t node) {
    auto link = [&](uint64_t at, const char* which) -> std::optional<uint64_t> {
      auto value = ObjectView::of(target_, layout_, "std::_Rb_tree_node_base", at).pointer(which);
      return value.ok() ? value.value : std::nullopt;
    };
    auto right = link(node, "_M_right");
    if (!right) return std::nullopt;
    uint64_t x = node;
    if (*right != 0) {
      x = *right;
      for (uint64_t step = 0;; ++step) {
        auto left = link(x, "_M_left");
        if (!left || step > limits_.max_groups) return std::nullopt;
        if (*left == 0) return x;
        x = *left;
      }
    }
    auto y = link(x, "_M_parent");
    for (uint64_t step = 0; y; ++step) {
      auto y_right = link(*y, "_M_right");
      if (!y_right || step > limits_.max_groups) return std::nullopt;
      if (x != *y_right) break;
      x = *y;
      y = link(*y, "_M_parent");
    }
    if (!y) return std::nullopt;
    auto x_right = link(x, "_M_right");
    if (!x_right) return std::nullopt;
    return *x_right != *y ? *y : x;
  }

  static std::nullopt_t fail(std::string* why, const std::string& text) {
    *why = text;
    return std::nullopt;
  }
  std::optional<Span> fail_span(std::string* why, const std::string& text) { return fail(why, text); }
  std::optional<std::vector<int64_t>> fail_vec(std::string* why, const std::string& text) { return fail(why, text); }
  std::optional<OptionalValue> fail_opt(std::string* why, const std::string& text) { return fail(why, text); }
  std::optional<std::vector<uint64_t>> fail_nodes(std::string* why, const std::string& text) { return fail(why, text); }

  Target& target_;
  const LayoutProfile& layout_;
  const RecorderLimits& limits_;
};

// Where a std::map node keeps its value, and where pair.second sits: from the node and pair
// structs when the TU named them, else by libstdc++'s rule (value after _Rb_tree_node_base,
// aligned; second after first, aligned), said in *how.
struct MapPlacement {
  uint64_t value_offset = 0, second_offset = 0;
  std::string how;
};

std::optional<MapPlacement> map_placement(const LayoutProfile& layout, const std::string& value_type,
                                          uint64_t first_size, uint64_t alignment, std::string* why) {
  const StructLayout* base = layout.find_struct("std::_Rb_tree_node_base");
  if (base == nullptr) {
    *why = "layout lacks std::_Rb_tree_node_base";
    return std::nullopt;
  }
  MapPlacement placement;
  const StructLayout* node = layout.find_struct(rb_tree_node_of(value_type));
  const MemberLayout* storage = node ? node->find("_M_storage") : nullptr;
  if (storage != nullptr) {
    placement.value_offset = storage->offset;
    placement.how = "node layout from DWARF";
  } else {
    placement.value_offset = round_up(base->size, alignment);
    placement.how = "node value placed after std::_Rb_tree_node_base (" + std::to_string(base->size) +
                    " bytes, DWARF) by libstdc++'s rule";
  }
  const StructLayout* pair = layout.find_struct(value_type);
  const MemberLayout* second = pair ? pair->find("second") : nullptr;
  placement.second_offset = second ? second->offset : round_up(first_size, alignment);
  return placement;
}

class RecorderDecoder {
 public:
  RecorderDecoder(Target& target, const LayoutProfile& layout, const PythonOffsets* python,
                  const RecorderLimits& limits, FlightRecorderState* state)
      : target_(target), layout_(layout), python_(python), limits_(limits), state_(state),
        containers_(target, layout, limits) {}

  void run(uint64_t recorder) {
    state_->recorder = recorder;
    ObjectView view = ObjectView::of(target_, layout_, kTorchRecorderStruct, recorder);
    if (!view.valid()) {
      state_->unavailable = "layout has no " + std::string(kTorchRecorderStruct);
      return;
    }
    auto enabled = view.integer("enabled_");
    auto cpp = view.integer("capture_cpp_stack_");
    auto max_entries = view.unsigned_integer("max_entries_");
    auto next = view.unsigned_integer("next_");
    auto next_id = view.unsigned_integer("id_");
    auto epoch = view.unsigned_integer("reset_epoch_");
    for (const auto* field : {&max_entries, &next, &next_id, &epoch})
      if (!field->ok()) {
        state_->unavailable = "FlightRecorder at " + hex(recorder) + ": " + field->unavailable;
        return;
      }
    state_->enabled = enabled.ok() && *enabled.value != 0;
    state_->capture_cpp_stack = cpp.ok() && *cpp.value != 0;
    for (auto [name, flag] : {std::pair<const char*, const Fetched<int64_t>*>{"enabled_", &enabled}, {"capture_cpp_stack_", &cpp}})
      if (flag->ok() && *flag->value != 0 && *flag->value != 1)
        state_->misfit.push_back(std::string(name) + " (a bool) holds " + std::to_string(*flag->value));
    state_->max_entries = *max_entries.value;
    state_->next = *next.value;
    state_->next_id = *next_id.value;
    state_->reset_epoch = *epoch.value;
    std::string why;
    if (auto version = containers_.string(view, "comm_lib_version_", &why)) state_->comm_lib_version = *version;
    else state_->errors.push_back("comm_lib_version_: " + why);
    read_entries(view);
    if (ring_bounds_problem(*state_).empty()) {  // a ring that cannot be: nothing more is read
      read_process_groups(view);
      read_pg_status(view);
    }
    apply_layout_fit(state_);
  }

 private:
  void read_entries(const ObjectView& view) {
    const StructLayout* entry_type = layout_.find_struct(kTorchEntryStruct);
    std::string why;
    bool torn = false;
    auto span = containers_.vector(view, "entries_", entry_type ? entry_type->size : 0, limits_.max_entries, &why, &torn);
    if (!span) {
      state_->errors.push_back("entries_: " + why);
      if (torn) state_->misfit.push_back(why);  // why names entries_
      return;
    }
    state_->entries_read = true;
    if (!why.empty()) state_->errors.push_back(why);
    state_->slots = span->total;
    if (!ring_bounds_problem(*state_).empty()) return;  // no slot of a ring that cannot be is read
    uint64_t next = state_->next;
    // dump_entries(): the oldest slot is next_, then the ring wraps to 0 (past the read limit: the oldest ones).
    for (uint64_t k = 0; k < span->count; ++k) {
      uint64_t slot = (next + k) % span->total;
      RecorderEntry entry = read_entry(span->begin + slot * entry_type->size);
      if (entry.numbers_read && entry.reset_epoch > state_->reset_epoch)
        entry.misfit.push_back("reset_epoch_ " + std::to_string(entry.reset_epoch) + " after the recorder's " +
                               std::to_string(state_->reset_epoch));
      else if (entry.reset_epoch != state_->reset_epoch && entry.problems.empty()) {
        ++state_->other_epoch_entries;
        continue;
      }
      for (const std::string& problem : entry.problems)
        state_->errors.push_back("entry at " + hex(entry.address) + " (slot " + std::to_string(slot) + "): " + problem);
      state_->entries.push_back(std::move(entry));
    }
  }

  RecorderEntry read_entry(uint64_t address) {
    RecorderEntry entry;
    entry.address = address;
    ObjectView view = ObjectView::of(target_, layout_, kTorchEntryStruct, address);
    auto number = [&](const char* path, auto* out) {
      auto value = view.integer(path);
      if (value.ok()) *out = static_cast<std::remove_pointer_t<decltype(out)>>(*value.value);
      else entry.problems.push_back(std::string(path) + ": " + value.unavailable);
    };
    number("id_", &entry.record_id);
    number("reset_epoch_", &entry.reset_epoch);
    number("pg_id_", &entry.pg_id);
    number("collective_seq_id_", &entry.collective_seq_id);
    number("p2p_seq_id_", &entry.p2p_seq_id);
    number("op_id_", &entry.op_id);
    number("time_created_", &entry.time_created_ns);
    number("timeout_ms_", &entry.timeout_ms);
    auto flag = [&](const char* path, bool* out) {
      auto value = view.integer(path);
      if (!value.ok()) entry.problems.push_back(std::string(path) + ": " + value.unavailable);
      else if (*value.value != 0 && *value.value != 1)
        entry.misfit.push_back(std::string(path) + " (a bool) holds " + std::to_string(*value.value));
      else *out = *value.value != 0;
    };
    flag("isP2P_", &entry.is_p2p);
    flag("retired_", &entry.retired);
    number("thread_id_._M_thread", &entry.thread_id);
    if (!entry.problems.empty()) return entry;  // not an entry we can believe: stop here
    entry.numbers_read = true;
    auto text = [&](const std::string& path, std::string* out) {
      std::string why;
      auto value = containers_.string(view, path, &why);
      if (value) *out = *value;
      if (!why.empty()) {
        entry.problems.push_back(why);
        entry.misfit.push_back(why);  // the strings of an entry live in memory a core keeps
      }
    };
    // std::tuple<group_name, group_desc>: std::get<0>, std::get<1>.
    text("pg_name_.get<0>", &entry.pg_name);
    text("pg_name_.get<1>", &entry.pg_desc);
    text("profiling_name_", &entry.profiling_name);
    text("thread_name_", &entry.thread_name);
    read_times(view, &entry);
    read_shapes(view, &entry);
    auto start = view.pointer("start_"), end = view.pointer("end_");
    entry.start_event_pending = start.ok() && *start.value != 0;
    entry.end_event_pending = end.ok() && *end.value != 0;
    read_frames(view, &entry);
    return entry;
  }

  void read_times(const ObjectView& view, RecorderEntry* entry) {
    std::string why;
    auto time = [&](const char* path, std::optional<int64_t>* out) {
      if (auto value = containers_.optional(view, path, &why)) {
        if (value->engaged) *out = sign_extend(value->raw, value->size);
      } else {
        entry->problems.push_back(why);
      }
    };
    time("time_discovered_started_", &entry->time_discovered_started_ns);
    time("time_discovered_completed_", &entry->time_discovered_completed_ns);
    if (auto duration = containers_.optional(view, "duration_", &why)) {
      if (duration->engaged && duration->size == sizeof(float)) {
        float value = 0;
        uint32_t bits = static_cast<uint32_t>(duration->raw);
        std::memcpy(&value, &bits, sizeof value);
        entry->duration_ms = value;
      }
    } else {
      entry->problems.push_back(why);
    }
  }

  std::vector<std::string> dtypes(const ObjectView& view, const std::string& path, std::vector<std::string>* problems) {
    std::vector<std::string> names;
    const EnumLayout* scalar = layout_.find_enum(kTorchScalarTypeEnum);
    std::string why;
    auto span = containers_.vector(view, path, scalar ? scalar->size : 0, limits_.max_dims, &why);
    if (!why.empty()) problems->push_back(why);
    if (!span) return names;
    std::vector<uint8_t> bytes(span->count * scalar->size);
    ReadError error;
    if (!bytes.empty() && !target_.read(span->begin, bytes.data(), bytes.size(), &error)) {
      problems->push_back(path + ": " + error.message());
      return names;
    }
    for (uint64_t i = 0; i < span->count; ++i) {
      uint64_t raw = 0;
      std::memcpy(&raw, &bytes[i * scalar->size], scalar->size);
      int64_t value = sign_extend(raw, scalar->size);
      auto name = scalar->name_of(value);
      names.push_back(name ? *name : "ScalarType(" + std::to_string(value) + ")");
      if (!name) problems->push_back(path + ": " + std::to_string(value) + " is no c10::ScalarType");
    }
    return names;
  }

  void read_shapes(const ObjectView& view, RecorderEntry* entry) {
    std::string why;
    auto input_dims = containers_.small_vector(view, "input_dims_", &why);
    auto output_dims = input_dims ? containers_.small_vector(view, "output_dims_", &why) : std::nullopt;
    auto sizes = output_dims ? containers_.small_vector(view, "sizes_", &why) : std::nullopt;
    if (!sizes) {
      entry->problems.push_back(why);
    } else {
      // sizes_ holds every tensor's dims, inputs then outputs; *_dims_ says how many each has.
      size_t at = 0;
      auto split = [&](const std::vector<int64_t>& dims, std::vector<std::vector<int64_t>>* out) {
        for (int64_t count : dims) {
          if (count < 0 || at + static_cast<uint64_t>(count) > sizes->size()) {
            entry->problems.push_back("sizes_ (" + std::to_string(sizes->size()) + " values) does not hold the " +
                                      "dims its *_dims_ name");
            return false;
          }
          out->emplace_back(sizes->begin() + at, sizes->begin() + at + count);
          at += count;
        }
        return true;
      };
      if (split(*input_dims, &entry->input_sizes)) split(*output_dims, &entry->output_sizes);
    }
    entry->input_dtypes = dtypes(view, "input_dtypes_", &entry->problems);
    entry->output_dtypes = dtypes(view, "output_dtypes_", &entry->problems);
  }

  void read_frames(const ObjectView& view, RecorderEntry* entry) {
    auto traceback = view.pointer("traceback_._M_ptr");
    if (!traceback.ok()) {
      entry->frames_unavailable = "traceback_: " + traceback.unavailable;
      return;
    }
    if (*traceback.value == 0) return;  // no traceback captured: PyTorch dumps no frames either
    ObjectView captured = ObjectView::of(target_, layout_, kTorchTracebackStruct, *traceback.value);
    const StructLayout* frame_type = layout_.find_struct(kTorchPyFrameStruct);
    if (!captured.valid() || frame_type == nullptr) {
      entry->frames_unavailable = std::string("the layout profile lacks ") + kTorchTracebackStruct +
                                  " or its PyFrame (its TU was compiled without -femit-class-debug-always)";
      return;
    }
    std::string why;
    auto span = containers_.vector(captured, "frames_", frame_type ? frame_type->size : 0, limits_.max_frames, &why);
    if (!span) {
      entry->frames_unavailable = "CapturedTraceback at " + hex(*traceback.value) + ": " + why;
      return;
    }
    if (!why.empty()) entry->problems.push_back(why);
    if (span->count > 0 && python_ == nullptr) {
      entry->frames_unavailable = std::to_string(span->count) + " Python frames, but the interpreter's layout is unknown (" +
                                  python_unavailable_ + ")";
      return;
    }
    for (uint64_t i = 0; i < span->count; ++i) {
      ObjectView frame = ObjectView::of(target_, layout_, kTorchPyFrameStruct, span->begin + i * frame_type->size);
      auto code = frame.pointer("code");
      auto lasti = frame.integer("lasti");
      if (!code.ok() || !lasti.ok()) {
        entry->frames_unavailable = "PyFrame " + std::to_string(i) + " at " + hex(frame.address()) + ": " +
                                    (code.ok() ? lasti.unavailable : code.unavailable);
        return;
      }
      entry->frames.push_back(decode_frame(*code.value, *lasti.value));
    }
  }

  RecorderFrame decode_frame(uint64_t code, int64_t lasti) {
    auto key = std::make_pair(code, lasti);
    auto cached = frames_.find(key);
    if (cached != frames_.end()) return cached->second;
    PythonWalkLimits limits;
    PythonFrame decoded = decode_code_object(target_, *python_, limits, code, lasti);
    RecorderFrame frame;
    frame.code = code;
    frame.lasti = lasti;
    frame.name = decoded.function;
    frame.filename = decoded.file;
    frame.line = decoded.line;
    frame.error = decoded.error;
    if (frame.error.empty() && !decoded.line && !decoded.line_unavailable.empty()) frame.error = "line: " + decoded.line_unavailable;
    return frames_[key] = frame;
  }

  void read_process_groups(const ObjectView& view) {
    const MemberLayout* member = layout_.find_struct(kTorchRecorderStruct)->find("pg_name_to_ranks_");
    const StructLayout* key_type = layout_.find_struct(kTorchEntryStruct);
    const MemberLayout* key = key_type ? key_type->find("pg_name_") : nullptr;  // the same std::tuple type
    const StructLayout* tuple = key ? layout_.find_struct(key->type_name) : nullptr;
    if (member == nullptr || tuple == nullptr) {
      state_->process_groups_unavailable = "layout lacks pg_name_to_ranks_ or its key type";
      return;
    }
    std::string why;
    std::string value_type = torch_ranks_pair();
    auto placement = map_placement(layout_, value_type, tuple->size, 8, &why);
    auto nodes = placement ? containers_.map_values(view, "pg_name_to_ranks_", placement->value_offset, &why) : std::nullopt;
    if (!nodes) {
      state_->process_groups_unavailable = "pg_name_to_ranks_: " + why;
      return;
    }
    for (uint64_t value : *nodes) {
      ObjectView name_view(&target_, &layout_, tuple, value);
      RecorderProcessGroup group;
      std::string problem;
      auto name = containers_.string(name_view, "get<0>", &problem);
      auto desc = name ? containers_.string(name_view, "get<1>", &problem) : std::nullopt;
      // pair.second is a std::vector<uint64_t>; without its DWARF, a std::vector of the
      // Entry stands in (libstdc++ lays out every std::vector alike), said in layout_notes.
      const StructLayout* ranks_vector = layout_.find_struct(torch_ranks_vector());
      if (ranks_vector == nullptr) ranks_vector = stand_in_vector();
      if (!name || !desc || ranks_vector == nullptr) {
        state_->errors.push_back("pg_name_to_ranks_ node value at " + hex(value) + ": " +
                                 (ranks_vector ? problem : "layout lacks std::vector<long unsigned int>"));
        continue;
      }
      group.name = *name;
      group.desc = *desc;
      read_ranks(ranks_vector, value + placement->second_offset, &group);
      state_->process_groups.push_back(std::move(group));
    }
    if (!placement->how.empty() && placement->how != "node layout from DWARF") state_->layout_notes.push_back("pg_name_to_ranks_: " + placement->how);
  }

  const StructLayout* stand_in_vector() {
    const StructLayout* entry = layout_.find_struct(kTorchEntryStruct);
    const MemberLayout* dtypes = entry ? entry->find("input_dtypes_") : nullptr;
    const StructLayout* vector = dtypes ? layout_.find_struct(dtypes->type_name) : nullptr;
    if (vector != nullptr && !stand_in_noted_) {
      state_->layout_notes.push_back("pg_name_to_ranks_: std::vector<uint64_t> read with the layout of " + vector->name);
      stand_in_noted_ = true;
    }
    return vector;
  }

  void read_ranks(const StructLayout* vector_type, uint64_t address, RecorderProcessGroup* group) {
    // A one-member wrapper view so the vector reader can name the member.
    ObjectView vec(&target_, &layout_, vector_type, address);
    auto begin = vec.pointer("_M_impl._M_start"), end = vec.pointer("_M_impl._M_finish");
    if (!begin.ok() || !end.ok() || *end.value < *begin.value || (*end.value - *begin.value) % 8 != 0 ||
        (*end.value - *begin.value) / 8 > limits_.max_ranks) {
      state_->errors.push_back("ranks of pg '" + group->name + "' at " + hex(address) + ": torn or unreadable vector");
      return;
    }
    group->ranks.resize((*end.value - *begin.value) / 8);
    ReadError error;
    if (!group->ranks.empty() && !target_.read(*begin.value, group->ranks.data(), group->ranks.size() * 8, &error)) {
      state_->errors.push_back("ranks of pg '" + group->name + "': " + error.message());
      group->ranks.clear();
    }
  }

  void read_pg_status(const ObjectView& view) {
    const StructLayout* status = layout_.find_struct(kTorchPgStatusStruct);
    if (status == nullptr) {
      state_->pg_status_unavailable = std::string("layout lacks ") + kTorchPgStatusStruct +
                                      " (the profile's TU did not name it: rebuild it from native/src/torch/recorder_layout_tu.cpp)";
      return;
    }
    std::string why;
    std::string value_type = torch_status_pair();
    auto placement = map_placement(layout_, value_type, 8, 8, &why);
    auto nodes = placement ? containers_.map_values(view, "all_pg_status_", placement->value_offset, &why) : std::nullopt;
    if (!nodes) {
      state_->pg_status_unavailable = "all_pg_status_: " + why;
      return;
    }
    for (uint64_t value : *nodes) {
      auto pg_id = read_raw_integer(target_, value, 8);
      Fetched<uint64_t> pointer;
      if (const StructLayout* pair = layout_.find_struct(value_type)) {
        pointer = ObjectView(&target_, &layout_, pair, value).pointer("second._M_ptr");
      } else {
        pointer = read_raw_integer(target_, value + placement->second_offset, 8);  // shared_ptr's _M_ptr comes first
        if (!stand_in_noted_status_) state_->layout_notes.push_back("all_pg_status_: shared_ptr<ProcessGroupStatus> read as its first pointer (no pair layout in the profile)");
        stand_in_noted_status_ = true;
      }
      if (!pg_id.ok() || !pointer.ok() || *pointer.value == 0) {
        state_->errors.push_back("all_pg_status_ node value at " + hex(value) + ": unreadable or NULL");
        continue;
      }
      ObjectView pg(&target_, &layout_, status, *pointer.value);
      auto enqueued = pg.integer("lastEnqueuedSeq"), started = pg.integer("lastStartedSeq"),
           completed = pg.integer("lastCompletedSeq");
      if (!enqueued.ok() || !started.ok() || !completed.ok()) {
        state_->errors.push_back("ProcessGroupStatus at " + hex(*pointer.value) + ": " + enqueued.unavailable +
                                 started.unavailable + completed.unavailable);
        continue;
      }
      state_->pg_status.push_back({*pg_id.value, *enqueued.value, *started.value, *completed.value});
    }
    if (placement->how != "node layout from DWARF") state_->layout_notes.push_back("all_pg_status_: " + placement->how);
  }

  Target& target_;
  const LayoutProfile& layout_;
  const PythonOffsets* python_;
  const RecorderLimits& limits_;
  FlightRecorderState* state_;
  ContainerReader containers_;
  std::map<std::pair<uint64_t, int64_t>, RecorderFrame> frames_;
  bool stand_in_noted_ = false, stand_in_noted_status_ = false;

 public:
  std::string python_unavailable_ = "no Python interpreter read";
};

}  // namespace

std::string RecorderEntry::state() const {
  if (time_discovered_completed_ns) return "completed";
  if (time_discovered_started_ns) return "started";
  return "scheduled";
}

void decode_flight_recorder(Target& target, const LayoutProfile& layout, uint64_t recorder,
                            const PythonOffsets* python_offsets, const RecorderLimits& limits,
                            FlightRecorderState* state) {
  RecorderDecoder decoder(target, layout, python_offsets, limits, state);
  decoder.run(recorder);
}

FlightRecorderState read_flight_recorder(Target& target, const PythonStacks& python, const RecorderSearch& search) {
  FlightRecorderState state;
  PhaseTimer identify_timer("torch.identify_build");
  TorchBuild build = identify_torch_build(target, search.library);
  identify_timer.stop();
  if (build.library.empty()) return state;
  state.library_mapped = true;
  state.library = build.library;
  state.build_id = build.build_id;
  for (const std::string& other : build.other_libraries)
    state.errors.push_back("a second libtorch_cuda.so is mapped: " + other + " (not read; the recorder of " + build.library +
                           " is)");
  if (!build.version_unreadable.empty()) state.errors.push_back(build.version_unreadable);
  PhaseTimer profile_timer("torch.choose_profile");
  TorchProfileChoice choice = choose_torch_profile(target, build, torch_profile_dirs(search.profile_path));
  profile_timer.stop();
  std::optional<LayoutProfile>& layout = choice.profile;
  const ResolvedLibrary& library = build.resolved;
  std::string path = build.library;
  if (!layout) {
    state.torch_version = build.version;
    state.unavailable = "libtorch_cuda.so " + path + " (build-id " + (state.build_id.empty() ? "unknown" : state.build_id) +
                        ", torch " + (build.version.empty() ? "version unknown" : build.version) +
                        "): no torch layout profile for this build (shipped: torch 2.11.0+cu130); make one with "
                        "scripts/torch-layout-from-tu.sh on a machine with that wheel (or a source profile torch-X.Y.Z.json: "
                        "ncclscope layout torch --from-source) and put it in --profile-path DIR/torch";
    return state;
  }
  if (state.build_id.empty()) state.build_id = layout->build_id;
  std::string identified_by = choice.identified_by;
  state.torch_version = torch_version_of_profile(*layout);
  state.layout_source = layout->source + identified_by;
  std::optional<uint64_t> symbol;
  std::map<std::string, uint64_t> symbols = torch_symbol_values(build, *layout, {kTorchRecorderInstanceSymbol}, &state.errors);
  if (symbols.count(kTorchRecorderInstanceSymbol)) symbol = symbols.at(kTorchRecorderInstanceSymbol);
  if (!symbol) {
    state.unavailable = "libtorch_cuda.so " + path + ": no symbol FlightRecorder<CUDAEvent>::get()::instance (" +
                        (layout->build_id.empty() ? "a source profile carries none: give a copy of this build's "
                                                    "libtorch_cuda.so with --solib-search-path"
                                                  : "not in the profile nor in a local copy") + ")";
    return state;
  }
  state.instance_symbol = *symbol + library.load_bias;
  auto instance = read_raw_integer(target, state.instance_symbol, 8);
  if (!instance.ok()) {
    state.unavailable = "FlightRecorder<CUDAEvent>::get()::instance at " + hex(state.instance_symbol) + ": " + instance.unavailable;
    return state;
  }
  if (*instance.value == 0) {
    state.unavailable = "no flight recorder yet (FlightRecorder<CUDAEvent>::get()::instance is NULL: no NCCL process group has been made)";
    state.not_created = true;
    return state;
  }
  PhaseTimer decode_timer("torch.decode_entries");
  RecorderDecoder decoder(target, *layout, python.offsets ? &*python.offsets : nullptr, search.limits, &state);
  if (!python.unavailable.empty()) decoder.python_unavailable_ = python.unavailable;
  decoder.run(*instance.value);
  return state;
}

namespace {

json sizes_json(const std::vector<std::vector<int64_t>>& sizes) {
  json out = json::array();
  for (const auto& one : sizes) out.push_back(one);
  return out;
}

json optional_json(const std::optional<int64_t>& value) { return value ? json(*value) : json(nullptr); }

json entry_json(const RecorderEntry& entry) {
  json frames = json::array();
  for (const RecorderFrame& frame : entry.frames) {
    json one = {{"name", valid_utf8(frame.name)}, {"filename", valid_utf8(frame.filename)},
                {"line", optional_json(frame.line)}, {"code", hex(frame.code)}, {"lasti", frame.lasti}};
    if (!frame.error.empty()) one["unavailable"] = valid_utf8(frame.error);
    frames.push_back(one);
  }
  json out = {{"record_id", entry.record_id},
              {"pg_id", entry.pg_id},
              {"process_group", {valid_utf8(entry.pg_name), valid_utf8(entry.pg_desc)}},
              {"collective_seq_id", entry.collective_seq_id},
              {"p2p_seq_id", entry.p2p_seq_id},
              {"op_id", entry.op_id},
              {"profiling_name", valid_utf8(entry.profiling_name)},
              {"time_created_ns", entry.time_created_ns},
              {"input_sizes", sizes_json(entry.input_sizes)},
              {"input_dtypes", entry.input_dtypes},
              {"output_sizes", sizes_json(entry.output_sizes)},
              {"output_dtypes", entry.output_dtypes},
              {"state", entry.state()},
              {"time_discovered_started_ns", optional_json(entry.time_discovered_started_ns)},
              {"time_discovered_completed_ns", optional_json(entry.time_discovered_completed_ns)},
              {"retired", entry.retired},
              {"timeout_ms", entry.timeout_ms},
              {"is_p2p", entry.is_p2p},
              {"thread_id", std::to_string(entry.thread_id)},
              {"thread_name", valid_utf8(entry.thread_name)},
              {"frames", frames},
              {"address", hex(entry.address)},
              {"reset_epoch", entry.reset_epoch},
              {"events_pending", {{"start", entry.start_event_pending}, {"end", entry.end_event_pending}}}};
  if (entry.duration_ms) out["duration_ms"] = *entry.duration_ms;
  if (!entry.frames_unavailable.empty()) out["frames_unavailable"] = valid_utf8(entry.frames_unavailable);
  if (!entry.problems.empty()) {
    json problems = json::array();
    for (const std::string& problem : entry.problems) problems.push_back(valid_utf8(problem));
    out["problems"] = problems;
  }
  return out;
}

}  // namespace

json flight_recorder_json(const FlightRecorderState& state) {
  json out = {{"library", valid_utf8(state.library)},
              {"build_id", state.build_id},
              {"torch_version", state.torch_version.empty() ? json(nullptr) : json(valid_utf8(state.torch_version))},
              {"layout_source", valid_utf8(state.layout_source)},
              {"unavailable", state.unavailable.empty() ? json(nullptr) : json(valid_utf8(state.unavailable))}};
  if (!state.unavailable.empty()) return out;
  json groups = json::array();
  for (const RecorderProcessGroup& group : state.process_groups)
    groups.push_back({{"name", valid_utf8(group.name)}, {"desc", valid_utf8(group.desc)}, {"ranks", group.ranks}});
  json status = json::array();
  for (const RecorderPgStatus& pg : state.pg_status)
    status.push_back({{"pg_id", pg.pg_id}, {"last_enqueued_collective", pg.last_enqueued},
                      {"last_started_collective", pg.last_started}, {"last_completed_collective", pg.last_completed}});
  json entries = json::array();
  for (const RecorderEntry& entry : state.entries) entries.push_back(entry_json(entry));
  json notes = json::array();
  for (const std::string& note : state.layout_notes) notes.push_back(valid_utf8(note));
  out.update({{"instance_symbol", hex(state.instance_symbol)},
              {"recorder", hex(state.recorder)},
              {"enabled", state.enabled},
              {"capture_cpp_stack", state.capture_cpp_stack},
              {"max_entries", state.max_entries},
              {"next", state.next},
              {"next_record_id", state.next_id},
              {"reset_epoch", state.reset_epoch},
              {"slots", state.slots},
              {"other_epoch_entries", state.other_epoch_entries},
              {"comm_lib_version", valid_utf8(state.comm_lib_version)},
              {"process_groups", groups},
              {"process_groups_unavailable", state.process_groups_unavailable.empty() ? json(nullptr) : json(valid_utf8(state.process_groups_unavailable))},
              {"pg_status", status},
              {"pg_status_unavailable", state.pg_status_unavailable.empty() ? json(nullptr) : json(valid_utf8(state.pg_status_unavailable))},
              {"layout_notes", notes},
              {"entries", entries}});
  return out;
}

}  // namespace nsc
