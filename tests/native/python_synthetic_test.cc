// The Python frame walker on synthetic memory: 3.13 and 3.14 interpreters
// described by their _Py_DebugOffsets table (the documented field order of
// those tags, with offsets chosen here unlike any real build, so only the
// table can lead the walker right), location tables, and corrupt memory.
#define BOOST_TEST_MODULE python_synthetic
#include <boost/test/unit_test.hpp>

#include <cstring>

#include "python/python_frames.h"
#include "python/python_offsets.h"
#include "support/synthetic.h"

namespace {

using nsc::test::SyntheticTarget;

// Offsets of the synthetic build (what its _Py_DebugOffsets says).
constexpr uint64_t kInterpretersHead = 0x400, kThreadsHead = 0x28, kInterpNext = 0x10;
constexpr uint64_t kThreadNext = 0x18, kCurrentFrame = 0x30, kThreadId = 0x48, kNativeThreadId = 0x50;
constexpr uint64_t kPrevious = 0x20, kExecutable = 0x08, kInstrPtr = 0x40, kOwner = 0x4a;
constexpr uint64_t kObType = 0x08, kFilename = 0x60, kName = 0x68, kQualname = 0x70, kLinetable = 0x78;
constexpr uint64_t kFirstLineNo = 0x30, kCodeAdaptive = 0xc0;
constexpr uint64_t kBytesSize = 0x10, kBytesData = 0x20, kStrLength = 0x10, kStrState = 0x20, kAsciiSize = 0x28;

constexpr uint64_t kRuntime = 0x100000, kInterp = 0x200000, kThread = 0x210000;
constexpr uint64_t kObjects = 0x300000;  // strings, bytes, code objects
constexpr uint64_t kFrames = 0x400000;
constexpr uint64_t kCodeType = 0x500000, kStrType = 0x500100, kBytesType = 0x500200;

class PythonMemory {
 public:
  explicit PythonMemory(int minor) : minor_(minor) {
    uint8_t* runtime = memory.add_block(kRuntime, 0x1000);
    memory.add_block(kInterp, 0x1000);
    memory.add_block(kThread, 0x1000);
    memory.add_block(kObjects, 0x10000);
    memory.add_block(kFrames, 0x1000);
    std::memcpy(runtime, "xdebugpy", 8);
    memory.put<uint64_t>(kRuntime + 8, minor == 13 ? 0x030d02f0 : 0x030e00f0);
    table("runtime_state.interpreters_head", kInterpretersHead);
    table("interpreter_state.next", kInterpNext);
    table("interpreter_state.threads_head", kThreadsHead);
    table("thread_state.next", kThreadNext);
    table("thread_state.current_frame", kCurrentFrame);
    table("thread_state.thread_id", kThreadId);
    table("thread_state.native_thread_id", kNativeThreadId);
    table("interpreter_frame.previous", kPrevious);
    table("interpreter_frame.executable", kExecutable);
    table("interpreter_frame.instr_ptr", kInstrPtr);
    table("interpreter_frame.owner", kOwner);
    table("pyobject.ob_type", kObType);
    table("code_object.filename", kFilename);
    table("code_object.name", kName);
    table("code_object.qualname", kQualname);
    table("code_object.linetable", kLinetable);
    table("code_object.firstlineno", kFirstLineNo);
    table("code_object.co_code_adaptive", kCodeAdaptive);
    table("bytes_object.ob_size", kBytesSize);
    table("bytes_object.ob_sval", kBytesData);
    table("unicode_object.length", kStrLength);
    table("unicode_object.state", kStrState);
    table("unicode_object.asciiobject_size", kAsciiSize);
    memory.put<uint64_t>(kRuntime + kInterpretersHead, kInterp);
    memory.put<uint64_t>(kInterp + kThreadsHead, kThread);
    memory.put<uint64_t>(kThread + kThreadId, 0x7f0011223344);
    memory.put<uint64_t>(kThread + kNativeThreadId, 4321);
  }

  void table(const std::string& field, uint64_t value) {
    auto position = nsc::debug_offsets_field(minor_, field);
    BOOST_REQUIRE_MESSAGE(position, field);
    memory.put<uint64_t>(kRuntime + *position, value);
  }
  uint64_t str(const std::string& text) {
    uint64_t at = allocate(kAsciiSize + text.size() + 1);
    memory.put<uint64_t>(at + kObType, kStrType);
    memory.put<int64_t>(at + kStrLength, static_cast<int64_t>(text.size()));
    memory.put<uint32_t>(at + kStrState, (1u << 2) | (1u << 5) | (1u << 6));  // kind 1, compact, ascii
    for (size_t i = 0; i < text.size(); ++i) memory.put<char>(at + kAsciiSize + i, text[i]);
    return at;
  }
  uint64_t bytes(const std::vector<uint8_t>& data, int64_t claimed_size = -1) {
    uint64_t at = allocate(kBytesData + data.size() + 1);
    memory.put<uint64_t>(at + kObType, kBytesType);
    memory.put<int64_t>(at + kBytesSize, claimed_size >= 0 ? claimed_size : static_cast<int64_t>(data.size()));
    for (size_t i = 0; i < data.size(); ++i) memory.put<uint8_t>(at + kBytesData + i, data[i]);
    return at;
  }
  // A code object whose line table gives: units 0-2 -> first+2, 3-4 -> first+3, 5 -> no line.
  uint64_t code(const std::string& name, const std::string& file, int first_line) {
    uint64_t at = allocate(kCodeAdaptive + 16);
    memory.put<uint64_t>(at + kObType, kCodeType);
    memory.put<uint64_t>(at + kName, str(name));
    memory.put<uint64_t>(at + kQualname, str("Owner." + name));
    memory.put<uint64_t>(at + kFilename, str(file));
    memory.put<int32_t>(at + kFirstLineNo, first_line);
    memory.put<uint64_t>(at + kLinetable, bytes(kLineTable));
    return at;
  }
  void frame(uint64_t at, uint64_t code_object, int instruction, uint64_t previous, int8_t owner = 0) {
    memory.put<uint64_t>(at + kExecutable, code_object);
    memory.put<uint64_t>(at + kInstrPtr, code_object + kCodeAdaptive + 2 * instruction);
    memory.put<uint64_t>(at + kPrevious, previous);
    memory.put<int8_t>(at + kOwner, owner);
  }
  nsc::PythonOffsets offsets() {
    std::string why;
    auto offsets = nsc::python_offsets_from_debug_table(memory, kRuntime, &why);
    BOOST_REQUIRE_MESSAGE(offsets, why);
    offsets->code_type_address = kCodeType;
    offsets->unicode_type_address = kStrType;
    offsets->bytes_type_address = kBytesType;
    return *offsets;
  }
  std::vector<nsc::PythonThread> walk(std::vector<std::string>* errors, nsc::PythonWalkLimits limits = {},
                                      bool check_types = true) {
    nsc::PythonOffsets checked = offsets();
    if (!check_types) checked.code_type_address = checked.unicode_type_address = checked.bytes_type_address = std::nullopt;
    return nsc::walk_python_threads(memory, checked, kRuntime, limits, errors);
  }

  // 0x80|code<<3|(length-1): no-column +2 over 3 units, one-line +1 over 2 units, none over 1 unit.
  const std::vector<uint8_t> kLineTable = {0x80 | 13 << 3 | 2, 0x04, 0x80 | 11 << 3 | 1, 0x01, 0x05,
                                           0x80 | 15 << 3 | 0};
  SyntheticTarget memory;

 private:
  uint64_t allocate(uint64_t size) {
    uint64_t at = next_;
    next_ += (size + 15) & ~uint64_t{15};
    return at;
  }
  int minor_;
  uint64_t next_ = kObjects;
};

// Two runs of the eval loop: inner (innermost frame, then a shim), outer.
void two_runs(PythonMemory& py, int8_t shim_owner, uint64_t tag = 0) {
  uint64_t inner = py.code("inner", "/app/train.py", 60);
  uint64_t outer = py.code("outer", "/app/main.py", 10);
  py.frame(kFrames, inner | tag, 4, kFrames + 0x100);
  py.frame(kFrames + 0x100, 0, 0, kFrames + 0x200, shim_owner);
  py.frame(kFrames + 0x200, outer | tag, 1, 0);
  py.memory.put<uint64_t>(kThread + kCurrentFrame, kFrames);
}

}  // namespace

BOOST_AUTO_TEST_CASE(debug_offsets_3_13_walk) {
  PythonMemory py(13);
  two_runs(py, 3);
  std::vector<std::string> errors;
  auto threads = py.walk(&errors);
  BOOST_TEST(errors.empty());
  BOOST_REQUIRE_EQUAL(threads.size(), 1u);
  BOOST_TEST(threads[0].native_thread_id == 4321u);
  BOOST_TEST(threads[0].thread_id == 0x7f0011223344u);
  BOOST_REQUIRE_EQUAL(threads[0].frames.size(), 2u);  // the shim is no Python frame
  const auto& inner = threads[0].frames[0];
  BOOST_TEST(inner.error == "");
  BOOST_TEST(inner.function == "inner");
  BOOST_TEST(inner.qualname == "Owner.inner");
  BOOST_TEST(inner.file == "/app/train.py");
  BOOST_TEST(*inner.line == 63);  // unit 4: first line + 2 + 1
  BOOST_TEST(inner.entry);        // a shim follows: C called it
  BOOST_TEST(*threads[0].frames[1].line == 12);
  BOOST_TEST(threads[0].frames[1].entry);
}

BOOST_AUTO_TEST_CASE(debug_offsets_3_14_stackref_and_owners) {
  PythonMemory py(14);
  two_runs(py, 4, /*tag=*/1);  // FRAME_OWNED_BY_CSTACK is 4 in 3.14; f_executable is tagged
  std::vector<std::string> errors;
  auto threads = py.walk(&errors);
  BOOST_REQUIRE_EQUAL(threads.size(), 1u);
  BOOST_REQUIRE_EQUAL(threads[0].frames.size(), 2u);
  BOOST_TEST(threads[0].frames[0].function == "inner");
  BOOST_TEST(threads[0].frames[1].function == "outer");
  BOOST_TEST(nsc::debug_offsets_table_size(14) > nsc::debug_offsets_table_size(13));
}

BOOST_AUTO_TEST_CASE(debug_table_rejected) {
  PythonMemory py(13);
  std::string why;
  py.memory.put<uint64_t>(kRuntime + 8, 0x030f00a1);  // 3.15
  BOOST_TEST(!nsc::python_offsets_from_debug_table(py.memory, kRuntime, &why));
  BOOST_TEST(why.find("only 3.13 and 3.14") != std::string::npos);
  py.memory.put<char>(kRuntime, 'y');
  BOOST_TEST(!nsc::python_offsets_from_debug_table(py.memory, kRuntime, &why));
  BOOST_TEST(why.find("no _Py_DebugOffsets cookie") != std::string::npos);
  PythonMemory huge(13);
  huge.table("thread_state.current_frame", uint64_t{1} << 40);
  BOOST_TEST(!nsc::python_offsets_from_debug_table(huge.memory, kRuntime, &why));
  BOOST_TEST(why.find("implausible: thread_state.current_frame") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(frame_cycle_is_caught) {
  PythonMemory py(13);
  uint64_t code = py.code("spin", "/app/x.py", 1);
  py.frame(kFrames, code, 0, kFrames + 0x100);
  py.frame(kFrames + 0x100, code, 0, kFrames);  // previous points back
  py.memory.put<uint64_t>(kThread + kCurrentFrame, kFrames);
  std::vector<std::string> errors;
  auto threads = py.walk(&errors);
  BOOST_REQUIRE_EQUAL(threads[0].frames.size(), 3u);
  BOOST_TEST(threads[0].frames[2].error == "unreadable frame at 0x400000: frame cycle (seen before)");
}

BOOST_AUTO_TEST_CASE(freed_code_object_and_unmapped_frame) {
  PythonMemory py(13);
  uint64_t code = py.code("gone", "/app/x.py", 1);
  py.memory.put<uint64_t>(code + kObType, 0xdeadbeef);  // freed: type no longer PyCode_Type
  py.frame(kFrames, code, 0, 0);
  py.memory.put<uint64_t>(kThread + kCurrentFrame, kFrames);
  std::vector<std::string> errors;
  auto threads = py.walk(&errors);
  BOOST_REQUIRE_EQUAL(threads[0].frames.size(), 1u);
  BOOST_TEST(threads[0].frames[0].error.rfind("unreadable frame at 0x400000: code object", 0) == 0);
  BOOST_TEST(threads[0].frames[0].error.find("not PyCode_Type") != std::string::npos);

  uint64_t good = py.code("ok", "/app/x.py", 1);
  py.frame(kFrames, good, 0, 0x6666000);  // previous is not mapped
  threads = py.walk(&errors);
  BOOST_REQUIRE_EQUAL(threads[0].frames.size(), 2u);
  BOOST_TEST(threads[0].frames[1].error == "unreadable frame at 0x6666000: 0x666604a: not mapped");
}

BOOST_AUTO_TEST_CASE(garbage_owner_and_huge_line_table) {
  PythonMemory py(13);
  uint64_t code = py.code("big", "/app/x.py", 1);
  py.memory.put<uint64_t>(code + kLinetable, py.bytes({0x80}, int64_t{1} << 40));
  py.frame(kFrames, code, 0, kFrames + 0x100);
  py.frame(kFrames + 0x100, code, 0, 0, 77);
  py.memory.put<uint64_t>(kThread + kCurrentFrame, kFrames);
  std::vector<std::string> errors;
  auto threads = py.walk(&errors);
  BOOST_REQUIRE_EQUAL(threads[0].frames.size(), 2u);
  BOOST_TEST(!threads[0].frames[0].line);
  BOOST_TEST(threads[0].frames[0].line_unavailable == "co_linetable of 1099511627776 bytes is not believed");
  BOOST_TEST(threads[0].frames[1].error == "unreadable frame at 0x400100: owner 77 is no frame owner");
}

BOOST_AUTO_TEST_CASE(thread_list_cycle_and_frame_cap) {
  PythonMemory py(13);
  uint64_t code = py.code("f", "/app/x.py", 1);
  for (int i = 0; i < 10; ++i) py.frame(kFrames + 0x80 * i, code, 0, i == 9 ? 0 : kFrames + 0x80 * (i + 1));
  py.memory.put<uint64_t>(kThread + kCurrentFrame, kFrames);
  py.memory.put<uint64_t>(kThread + kThreadNext, kThread);  // the thread list loops
  std::vector<std::string> errors;
  nsc::PythonWalkLimits limits;
  limits.max_frames = 4;
  auto threads = py.walk(&errors, limits);
  BOOST_REQUIRE_EQUAL(threads.size(), 1u);
  BOOST_TEST(threads[0].frames.size() == 4u);
  BOOST_TEST(threads[0].truncated);
  BOOST_REQUIRE_EQUAL(errors.size(), 1u);
  BOOST_TEST(errors[0].find("thread list loops") == 0u);
}

BOOST_AUTO_TEST_CASE(location_table_forms) {
  std::string why;
  // Long form (14): line delta -3 (zigzag 7), end line, columns; then a short form (same line).
  std::vector<uint8_t> table = {0x80 | 14 << 3 | 0, 0x07, 0x00, 0x01, 0x02, 0x80 | 0 << 3 | 1, 0x12};
  BOOST_TEST(*nsc::line_from_location_table(table.data(), table.size(), 20, 0, &why) == 17);
  BOOST_TEST(*nsc::line_from_location_table(table.data(), table.size(), 20, 4, &why) == 17);
  BOOST_TEST(*nsc::line_from_location_table(table.data(), table.size(), 20, -2, &why) == 20);
  BOOST_TEST(!nsc::line_from_location_table(table.data(), table.size(), 20, 6, &why));
  BOOST_TEST(why == "instruction offset 6 is past co_linetable");
  std::vector<uint8_t> corrupt = {0x12, 0x80};
  BOOST_TEST(!nsc::line_from_location_table(corrupt.data(), corrupt.size(), 1, 0, &why));
  BOOST_TEST(why == "co_linetable is corrupt at byte 0");
  // A multi-byte varint: delta +100 = zigzag 200 = 0b11_001000 -> 0x48 (more), 0x03.
  std::vector<uint8_t> wide = {0x80 | 13 << 3 | 0, 0x48, 0x03};
  BOOST_TEST(*nsc::line_from_location_table(wide.data(), wide.size(), 1, 0, &why) == 101);
}

// Random bytes everywhere the walker may look (thread state, frames, code objects,
// strings): it must end, stay within its caps and never invent a line.
BOOST_AUTO_TEST_CASE(random_garbage_memory) {
  uint64_t state = 0x9e3779b97f4a7c15;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  size_t frames_seen = 0;
  for (int round = 0; round < 300; ++round) {
    PythonMemory py(round % 2 ? 13 : 14);
    // Pointers that land inside the blocks half of the time, anywhere otherwise.
    auto pointer = [&] {
      uint64_t bases[] = {kThread, kObjects, kFrames};
      return next() % 2 ? bases[next() % 3] + (next() % 0x800) : next();
    };
    for (uint64_t offset = 0; offset < 0x800; offset += 8) {
      py.memory.put<uint64_t>(kThread + offset, pointer());
      py.memory.put<uint64_t>(kFrames + offset, pointer());
      py.memory.put<uint64_t>(kObjects + offset, next() % 3 ? pointer() : next());
    }
    py.memory.put<uint64_t>(kThread + kCurrentFrame, kFrames + (next() % 0x100));
    std::vector<std::string> errors;
    nsc::PythonWalkLimits limits;
    limits.max_frames = 64;
    auto threads = py.walk(&errors, limits, /*check_types=*/round % 4 < 2);
    BOOST_REQUIRE(threads.size() <= limits.max_threads);
    for (const auto& thread : threads) {
      BOOST_REQUIRE(thread.frames.size() <= limits.max_frames + 1);
      for (const auto& frame : thread.frames) {
        ++frames_seen;
        if (!frame.error.empty()) BOOST_REQUIRE(frame.error.rfind("unreadable frame at 0x", 0) == 0);
        if (!frame.line) BOOST_REQUIRE(!frame.line_unavailable.empty() || !frame.error.empty());
      }
    }
  }
  BOOST_TEST(frames_seen > 0u);
}
