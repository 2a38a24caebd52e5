// Issue 32: the in-flight C++ exception on synthetic memory laid out as libstdc++ lays it out
// (the real layout is checked on a kernel-written core by tests/cli/uncaught_exception_core_test.sh):
// a stack word pointing to the _Unwind_Exception or to the thrown object, the type_info's
// name, the message as a COW string, a short and a long std::string, a rethrown (dependent)
// header, a type name the core did not save and no local file holds (type unavailable, message
// still read), and what is not one (another language's exception class, an unreadable type name,
// control bytes where a message would be).
#define BOOST_TEST_MODULE cxx_exception
#include <boost/test/unit_test.hpp>

#include <cstring>

#include "stacks/cxx_exception.h"
#include "target/core_notes.h"

using nsc::InFlightException;

namespace {

constexpr uint64_t kBase = 0x100000, kSize = 0x40000;
constexpr uint64_t kStack = kBase, kSp = kStack + 0x100;
constexpr uint64_t kHeap = kBase + 0x20000;
constexpr uint64_t kHeader = kHeap + 0x1000;       // _Unwind_Exception
constexpr uint64_t kObject = kHeader + 32;         // the thrown object
constexpr uint64_t kTypeInfo = kHeap + 0x100, kTypeName = kHeap + 0x180;
constexpr uint64_t kClass = 0x474e5543432b2b00;
constexpr uint64_t kUnsavedLibrary = 0x7f0000000000;  // a library's .rodata the core left out

class FlatTarget : public nsc::Target {
 public:
  FlatTarget() : bytes_(kSize, 0) {
    nsc::MemoryRegion region;
    region.start = kBase;
    region.end = kBase + kSize;
    region.readable = region.writable = true;
    regions_.push_back(region);
    nsc::MappedFile library;
    library.start = kUnsavedLibrary;
    library.end = kUnsavedLibrary + 0x1000;
    library.path = "/nonexistent/ncclscope-test/libtorch_cuda.so";
    files_.push_back(library);
  }
  std::string describe() const override { return "synthetic memory"; }
  bool is_core() const override { return true; }
  int pid() const override { return 1; }
  bool read(uint64_t addr, void* buf, size_t len, nsc::ReadError* error) override {
    if (addr < kBase || addr + len > kBase + kSize) {
      error->address = addr;
      bool in_library = addr >= kUnsavedLibrary && addr < kUnsavedLibrary + 0x1000;
      error->reason = in_library ? nsc::ReadFailure::kNotSavedInCore : nsc::ReadFailure::kNotMapped;
      return false;
    }
    std::memcpy(buf, &bytes_[addr - kBase], len);
    return true;
  }
  const std::vector<nsc::MemoryRegion>& regions() const override { return regions_; }
  const std::vector<nsc::MappedFile>& mapped_files() const override { return files_; }
  std::vector<nsc::ThreadInfo> threads() override { return {}; }
  std::string executable() const override { return ""; }

  void put(uint64_t addr, const void* data, size_t len) { std::memcpy(&bytes_[addr - kBase], data, len); }
  void word(uint64_t addr, uint64_t value) { put(addr, &value, 8); }
  void text(uint64_t addr, const std::string& s) { put(addr, s.c_str(), s.size() + 1); }

 private:
  std::vector<uint8_t> bytes_;
  std::vector<nsc::MemoryRegion> regions_;
  std::vector<nsc::MappedFile> files_;
};

nsc::ThreadInfo thread_at(uint64_t sp) {
  nsc::ThreadInfo thread;
  thread.tid = 7;
  thread.prstatus = nsc::prstatus_from_registers(7, {{"rsp", sp}, {"rip", 0x1000}});
  return thread;
}

// An exception of type `mangled` whose header a stack word 0x40 above sp points to.
void put_exception(FlatTarget* memory, const std::string& mangled, uint64_t stack_word = kHeader) {
  memory->word(kHeader, kClass);
  memory->word(kHeader - 80, kTypeInfo);
  memory->word(kTypeInfo + 8, kTypeName);
  memory->text(kTypeName, mangled);
  memory->word(kObject, 0xdead0000);  // the vptr
  memory->word(kSp + 0x40, stack_word);
}

std::optional<InFlightException> find(FlatTarget* memory) { return nsc::find_in_flight_exception(*memory, thread_at(kSp), {}); }

}  // namespace

BOOST_AUTO_TEST_CASE(runtime_error_cow_message) {
  FlatTarget memory;
  put_exception(&memory, "N7fixture16CollectiveFailedE");
  uint64_t chars = kHeap + 0x2018;
  memory.word(chars - 24, 20);  // _Rep: length, capacity, refcount
  memory.word(chars - 16, 20);
  memory.text(chars, "rank 1 lost its peer");
  memory.word(kObject + 8, chars);
  auto exception = find(&memory);
  BOOST_REQUIRE(exception);
  BOOST_TEST(exception->type == "fixture::CollectiveFailed");
  BOOST_TEST(exception->object == kObject);
  BOOST_TEST(exception->stack_address == kSp + 0x40);
  BOOST_REQUIRE(exception->message);
  BOOST_TEST(*exception->message == "rank 1 lost its peer");
  BOOST_TEST(exception->message_offset == 8u);
  BOOST_TEST(nsc::in_flight_exception_text(nsc::in_flight_exception_json(*exception)) ==
             "terminate: fixture::CollectiveFailed: \"rank 1 lost its peer\" (message found by pattern)");
}

BOOST_AUTO_TEST_CASE(std_string_short_and_long_from_a_pointer_to_the_object) {
  FlatTarget memory;
  put_exception(&memory, "N3c1016DistBackendErrorE", kObject);  // the stack holds the object's address
  memory.word(kObject + 8, kObject + 24);  // short string: its own buffer
  memory.word(kObject + 16, 5);
  memory.text(kObject + 24, "short");
  BOOST_REQUIRE(find(&memory));
  BOOST_TEST(find(&memory)->type == "c10::DistBackendError");
  BOOST_TEST(*find(&memory)->message == "short");

  std::string line = "NCCL error\nsecond line: " + std::string(40, 'y');
  memory.word(kObject + 8, kHeap + 0x3000);  // long string: heap buffer, length <= capacity
  memory.word(kObject + 16, line.size());
  memory.word(kObject + 24, 100);
  memory.text(kHeap + 0x3000, line);
  auto exception = find(&memory);
  BOOST_REQUIRE(exception && exception->message);
  BOOST_TEST(*exception->message == line);
  BOOST_TEST(nsc::in_flight_exception_text(nsc::in_flight_exception_json(*exception)) ==
             "terminate: c10::DistBackendError: \"NCCL error...\" (message found by pattern)");
}

BOOST_AUTO_TEST_CASE(rethrown_through_a_dependent_header) {
  FlatTarget memory;
  put_exception(&memory, "N3c1016DistBackendErrorE", kHeap + 0x5000);
  memory.word(kHeap + 0x5000, kClass | 1);       // the dependent header ...
  memory.word(kHeap + 0x5000 - 80, kObject);     // ... points to the primary object
  auto exception = find(&memory);
  BOOST_REQUIRE(exception);
  BOOST_TEST(exception->rethrown);
  BOOST_TEST(exception->object == kObject);
  BOOST_TEST(exception->type == "c10::DistBackendError");
  BOOST_TEST(!exception->message);
  BOOST_TEST(nsc::in_flight_exception_text(nsc::in_flight_exception_json(*exception)) ==
             "terminate: c10::DistBackendError (message not found)");
}

BOOST_AUTO_TEST_CASE(type_name_not_in_the_core_and_no_local_library) {
  FlatTarget memory;
  put_exception(&memory, "N3c1016DistBackendErrorE", kObject);
  memory.word(kTypeInfo + 8, kUnsavedLibrary + 0x40);  // the name: in the library's unsaved .rodata
  memory.word(kObject + 8, kObject + 24);
  memory.word(kObject + 16, 5);
  memory.text(kObject + 24, "timed");
  auto exception = find(&memory);
  BOOST_REQUIRE(exception);
  BOOST_TEST(exception->type.empty());
  BOOST_TEST(exception->type_name.empty());
  BOOST_TEST(exception->type_name_unavailable.find("libtorch_cuda.so, not saved in the core") != std::string::npos);
  BOOST_REQUIRE(exception->message);
  BOOST_TEST(*exception->message == "timed");
  nlohmann::json json = nsc::in_flight_exception_json(*exception);
  BOOST_TEST(json["type"].is_null());
  BOOST_TEST(json["type_name"].is_null());
  BOOST_TEST(json["type_name_from"].is_null());
  BOOST_TEST(json["type_name_unavailable"].is_string());
  BOOST_TEST(nsc::in_flight_exception_text(json) == "terminate: type unavailable: \"timed\" (message found by pattern)");
  memory.word(kHeader, 0x474e5543432b2b02);  // without libstdc++'s exception class: nothing
  BOOST_TEST(!find(&memory));
}

BOOST_AUTO_TEST_CASE(what_is_not_an_exception) {
  FlatTarget memory;
  put_exception(&memory, "N7fixture16CollectiveFailedE");
  memory.word(kHeader, 0x474e5543432b2b02);  // neither class
  BOOST_TEST(!find(&memory));
  put_exception(&memory, "N7fixture16CollectiveFailedE");
  memory.word(kTypeInfo + 8, 0x10);  // the name is unreadable
  BOOST_TEST(!find(&memory));
  put_exception(&memory, "not a type name!");
  BOOST_TEST(!find(&memory));
  put_exception(&memory, "N7fixture16CollectiveFailedE");
  uint64_t chars = kHeap + 0x2018;
  memory.word(chars - 24, 3);
  memory.word(chars - 16, 3);
  memory.put(chars, "\x01\x02\x03", 4);  // control bytes: no message
  memory.word(kObject + 8, chars);
  BOOST_REQUIRE(find(&memory));
  BOOST_TEST(!find(&memory)->message);
  nsc::ThreadInfo no_registers;
  BOOST_TEST(!nsc::find_in_flight_exception(memory, no_registers, {}));
  BOOST_TEST(nsc::in_flight_exception_text(nlohmann::json("hostile")).empty());
  BOOST_TEST(nsc::in_flight_exception_text(nlohmann::json{{"type", 5}, {"message", "x"}}).empty());
}
