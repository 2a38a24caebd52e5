#include "python/python_frames.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "util/strings.h"

namespace nsc {
namespace {

struct Reader {
  explicit Reader(Target& target_in) : target(target_in) {}
  Target& target;
  std::string failure;  // first read failure, as a message

  uint64_t u64(uint64_t address) { return fetch(address, 8); }
  uint64_t fetch(uint64_t address, size_t size) {
    uint64_t value = 0;
    ReadError error;
    if (failure.empty() && !target.read(address, &value, size, &error)) failure = error.message();
    return value;
  }
  bool ok() const { return failure.empty(); }
};

int64_t sign_extend32(uint64_t raw) { return static_cast<int32_t>(static_cast<uint32_t>(raw)); }

// UTF-8 of code points (UCS1/2/4 strings); invalid code points become U+FFFD.
void append_utf8(uint32_t cp, std::string* out) {
  if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) cp = 0xfffd;
  if (cp < 0x80) out->push_back(static_cast<char>(cp));
  else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

class FrameDecoder {
 public:
  FrameDecoder(Target& target, const PythonOffsets& offsets, const PythonWalkLimits& limits)
      : target_(target), offsets_(offsets), limits_(limits) {}

  // A str object as UTF-8, or nullopt with *why.
  std::optional<std::string> string_at(uint64_t address, std::string* why) {
    if (address == 0) return fail(why, "NULL");
    Reader reader(target_);
    if (offsets_.unicode_type_address && reader.u64(address + offsets_.object_type) != *offsets_.unicode_type_address)
      return fail(why, reader.ok() ? "object at " + hex(address) + " is not a str" : reader.failure);
    int64_t length = static_cast<int64_t>(reader.u64(address + offsets_.unicode_length));
    uint32_t state = static_cast<uint32_t>(reader.fetch(address + offsets_.unicode_state, 4));
    if (!reader.ok()) return fail(why, reader.failure);
    uint32_t kind = (state >> offsets_.state_kind_shift) & ((1u << offsets_.state_kind_bits) - 1);
    bool compact = (state >> offsets_.state_compact_shift) & 1, ascii = (state >> offsets_.state_ascii_shift) & 1;
    if (length < 0 || (kind != 1 && kind != 2 && kind != 4))
      return fail(why, "str at " + hex(address) + " is garbage (length " + std::to_string(length) +
                           ", kind " + std::to_string(kind) + ")");
    if (!compact || (!ascii && !offsets_.compact_object_size))
      return fail(why, "str at " + hex(address) + " is not a compact string");
    bool truncated = static_cast<uint64_t>(length) > limits_.max_string;
    size_t count = std::min<uint64_t>(length, limits_.max_string);
    uint64_t data = address + (ascii ? offsets_.ascii_object_size : *offsets_.compact_object_size);
    std::vector<uint8_t> bytes(count * kind);
    ReadError error;
    if (!bytes.empty() && !target_.read(data, bytes.data(), bytes.size(), &error))
      return fail(why, error.message());
    std::string text;
    for (size_t i = 0; i < count; ++i) {
      uint32_t cp = 0;
      std::memcpy(&cp, &bytes[i * kind], kind);
      append_utf8(cp, &text);
    }
    if (truncated) text += "...";
    return text;
  }

  PythonFrame decode_code_only(uint64_t code, int64_t byte_offset) {
    PythonFrame frame;
    frame.address = code;
    frame.code = code;
    if (code == 0) {
      frame.error = "no code object (NULL)";
      return frame;
    }
    // Negative: before the first instruction (PyCode_Addr2Line gives co_firstlineno).
    uint64_t instr = code + offsets_.code_code_adaptive + static_cast<uint64_t>(byte_offset < 0 ? -2 : byte_offset);
    if (!decode_code(&frame, code, instr)) {
      std::string prefix = "unreadable frame at " + hex(code) + ": ";  // there is no frame, only its code
      if (frame.error.rfind(prefix, 0) == 0) frame.error = frame.error.substr(prefix.size());
    }
    return frame;
  }

  // Decodes the frame at `address`; false when it is no frame (then frame->error says why).
  // *previous and *is_shim are set for the walk.
  bool decode(uint64_t address, PythonFrame* frame, uint64_t* previous, bool* is_shim) {
    frame->address = address;
    Reader reader(target_);
    int64_t owner = static_cast<int8_t>(reader.fetch(address + offsets_.frame_owner, 1));
    *previous = reader.u64(address + offsets_.frame_previous);
    uint64_t code = reader.u64(address + offsets_.frame_code);
    uint64_t instr = reader.u64(address + offsets_.frame_instr);
    bool is_entry = offsets_.frame_is_entry && reader.fetch(address + *offsets_.frame_is_entry, 1) != 0;
    if (!reader.ok()) return unreadable(frame, reader.failure);
    *is_shim = std::find(offsets_.owner_shims.begin(), offsets_.owner_shims.end(), owner) != offsets_.owner_shims.end();
    if (*is_shim) return true;
    if (owner != offsets_.owner_thread && owner != offsets_.owner_generator && owner != offsets_.owner_frame_object)
      return unreadable(frame, "owner " + std::to_string(owner) + " is no frame owner");
    if (offsets_.frame_code_is_stackref) code &= ~uint64_t{7};  // tag bits; objects are 8-aligned
    if (code == 0) return unreadable(frame, "no code object");
    frame->code = code;
    frame->entry = is_entry;
    return decode_code(frame, code, instr);
  }

 private:
  static std::nullopt_t fail(std::string* why, const std::string& text) {
    *why = text;
    return std::nullopt;
  }
  static bool unreadable(PythonFrame* frame, const std::string& why) {
    frame->error = "unreadable frame at " + hex(frame->address) + ": " + why;
    return false;
  }

  bool decode_code(PythonFrame* frame, uint64_t code, uint64_t instr) {
    Reader reader(target_);
    uint64_t type = reader.u64(code + offsets_.object_type);
    uint64_t filename = reader.u64(code + offsets_.code_filename);
    uint64_t name = reader.u64(code + offsets_.code_name);
    uint64_t qualname = reader.u64(code + offsets_.code_qualname);
    uint64_t linetable = reader.u64(code + offsets_.code_linetable);
    int64_t first_line = sign_extend32(reader.fetch(code + offsets_.code_firstlineno, 4));
    if (!reader.ok()) return unreadable(frame, "code object " + hex(code) + ": " + reader.failure);
    if (offsets_.code_type_address && type != *offsets_.code_type_address)
      return unreadable(frame, "code object " + hex(code) + " has type " + hex(type) +
                                   ", not PyCode_Type (freed or garbage)");
    std::string why;
    auto function = string_at(name, &why);
    // Without PyCode_Type to check against, an unreadable name is the sign of a garbage frame.
    if (!function && !offsets_.code_type_address) return unreadable(frame, "co_name: " + why);
    frame->function = function ? *function : "<co_name unreadable: " + why + ">";
    frame->qualname = string_at(qualname, &why).value_or(frame->function);
    auto file = string_at(filename, &why);
    frame->file = file ? *file : "<co_filename unreadable: " + why + ">";
    frame->line = line_of(code, instr, linetable, first_line, &frame->line_unavailable);
    return true;
  }

  std::optional<int64_t> line_of(uint64_t code, uint64_t instr, uint64_t linetable, int64_t first_line,
                                 std::string* why) {
    Reader reader(target_);
    if (offsets_.bytes_type_address && reader.u64(linetable + offsets_.object_type) != *offsets_.bytes_type_address)
      return fail(why, reader.ok() ? "co_linetable " + hex(linetable) + " is not bytes" : reader.failure);
    int64_t size = static_cast<int64_t>(reader.u64(linetable + offsets_.bytes_size));
    if (!reader.ok()) return fail(why, "co_linetable: " + reader.failure);
    if (size < 0 || static_cast<uint64_t>(size) > limits_.max_line_table)
      return fail(why, "co_linetable of " + std::to_string(size) + " bytes is not believed");
    std::vector<uint8_t> table(size);
    ReadError error;
    if (size > 0 && !target_.read(linetable + offsets_.bytes_data, table.data(), table.size(), &error))
      return fail(why, "co_linetable: " + error.message());
    uint64_t code_start = code + offsets_.code_code_adaptive;
    // Pointer difference in 2-byte code units, as _PyInterpreterFrame_LASTI computes it.
    int64_t units = (static_cast<int64_t>(instr - code_start)) / 2;
    if (units < -1 || units > static_cast<int64_t>(table.size()) * 8 * 2)
      return fail(why, "instruction pointer " + hex(instr) + " lies outside code object " + hex(code));
    return line_from_location_table(table.data(), table.size(), first_line, units * 2, why);
  }

  Target& target_;
  const PythonOffsets& offsets_;
  const PythonWalkLimits& limits_;
};

void walk_frames(FrameDecoder& decoder, uint64_t first, const PythonWalkLimits& limits, PythonThread* thread) {
  std::unordered_set<uint64_t> visited;
  for (uint64_t address = first; address != 0;) {
    if (!visited.insert(address).second) {
      thread->frames.push_back({});
      thread->frames.back().address = address;
      thread->frames.back().error = "unreadable frame at " + hex(address) + ": frame cycle (seen before)";
      return;
    }
    if (thread->frames.size() >= limits.max_frames || visited.size() > 2 * limits.max_frames) {
      thread->truncated = true;
      return;
    }
    PythonFrame frame;
    uint64_t previous = 0;
    bool is_shim = false;
    if (!decoder.decode(address, &frame, &previous, &is_shim)) {
      thread->frames.push_back(frame);
      return;
    }
    if (is_shim) {
      // The frames since the last shim ran in one eval loop: its outermost was called from C.
      if (!thread->frames.empty()) thread->frames.back().entry = true;
    } else {
      thread->frames.push_back(frame);
    }
    address = previous;
  }
  if (!thread->frames.empty()) thread->frames.back().entry = true;  // the first frame run from C
}

}  // namespace

PythonFrame decode_code_object(Target& target, const PythonOffsets& offsets, const PythonWalkLimits& limits,
                               uint64_t code, int64_t byte_offset) {
  FrameDecoder decoder(target, offsets, limits);
  return decoder.decode_code_only(code, byte_offset);
}

std::optional<int64_t> line_from_location_table(const uint8_t* table, size_t size, int64_t first_line,
                                                int64_t address_in_code, std::string* why) {
  if (address_in_code < 0) return first_line;  // before the first instruction (a frame just pushed)
  int64_t computed_line = first_line, range_end = 0;
  size_t position = 0;
  while (position < size) {
    uint8_t head = table[position];
    if ((head & 0x80) == 0) {
      *why = "co_linetable is corrupt at byte " + std::to_string(position);
      return std::nullopt;
    }
    int code = (head >> 3) & 15;
    int64_t delta = 0;
    if (code == 13 || code == 14) {  // no-column and long forms: a signed varint follows
      uint64_t value = 0;
      unsigned shift = 0;
      size_t at = position + 1;
      for (; at < size && shift < 36; ++at, shift += 6) {
        value |= static_cast<uint64_t>(table[at] & 63) << shift;
        if ((table[at] & 64) == 0) break;
      }
      delta = (value & 1) ? -static_cast<int64_t>(value >> 1) : static_cast<int64_t>(value >> 1);
    } else if (code >= 10 && code <= 12) {
      delta = code - 10;
    }
    computed_line += delta;
    range_end += ((head & 7) + 1) * 2;
    do ++position; while (position < size && (table[position] & 0x80) == 0);
    if (address_in_code < range_end) {
      if (code == 15) {
        *why = "no line for this instruction (co_linetable)";
        return std::nullopt;
      }
      return computed_line;
    }
  }
  *why = "instruction offset " + std::to_string(address_in_code) + " is past co_linetable";
  return std::nullopt;
}

std::vector<PythonThread> walk_python_threads(Target& target, const PythonOffsets& offsets,
                                              uint64_t runtime_address, const PythonWalkLimits& limits,
                                              std::vector<std::string>* errors) {
  std::vector<PythonThread> threads;
  FrameDecoder decoder(target, offsets, limits);
  Reader reader(target);
  uint64_t interpreter = reader.u64(runtime_address + offsets.runtime_interpreters_head);
  if (!reader.ok()) {
    errors->push_back("_PyRuntime.interpreters.head: " + reader.failure);
    return threads;
  }
  std::unordered_set<uint64_t> interpreters_seen, threads_seen;
  for (; interpreter != 0; ) {
    if (!interpreters_seen.insert(interpreter).second || interpreters_seen.size() > limits.max_interpreters) {
      errors->push_back("interpreter list loops or exceeds " + std::to_string(limits.max_interpreters) + " at " + hex(interpreter));
      break;
    }
    Reader interp(target);
    uint64_t thread_state = interp.u64(interpreter + offsets.interpreter_threads_head);
    uint64_t next_interpreter = interp.u64(interpreter + offsets.interpreter_next);
    if (!interp.ok()) {
      errors->push_back("interpreter at " + hex(interpreter) + ": " + interp.failure);
      break;
    }
    for (; thread_state != 0;) {
      if (!threads_seen.insert(thread_state).second || threads.size() >= limits.max_threads) {
        errors->push_back("thread list loops or exceeds " + std::to_string(limits.max_threads) + " at " + hex(thread_state));
        break;
      }
      PythonThread thread;
      thread.thread_state = thread_state;
      Reader ts(target);
      thread.thread_id = ts.u64(thread_state + offsets.thread_id);
      thread.native_thread_id = ts.u64(thread_state + offsets.thread_native_id);
      uint64_t next = ts.u64(thread_state + offsets.thread_next);
      uint64_t frame = 0;
      if (offsets.thread_cframe) {
        uint64_t cframe = ts.u64(thread_state + *offsets.thread_cframe);
        if (ts.ok() && cframe != 0) frame = ts.u64(cframe + offsets.cframe_current_frame);
      } else {
        frame = ts.u64(thread_state + offsets.thread_current_frame);
      }
      if (!ts.ok()) thread.error = "thread state at " + hex(thread_state) + ": " + ts.failure;
      else walk_frames(decoder, frame, limits, &thread);
      threads.push_back(std::move(thread));
      if (!ts.ok()) break;
      thread_state = next;
    }
    interpreter = next_interpreter;
  }
  return threads;
}

}  // namespace nsc
