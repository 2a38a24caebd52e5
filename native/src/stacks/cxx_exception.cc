#include "stacks/cxx_exception.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "target/core_notes.h"
#include "util/errors.h"
#include "util/json_access.h"
#include "util/strings.h"

namespace nsc {
namespace {

// libstdc++'s x86-64 layout (unwind-cxx.h), checked on a real core with gdb: `info symbol`
// of the word 80 bytes before the _Unwind_Exception is "typeinfo for T", of the word 32 bytes
// after it "vtable for T + 16".
constexpr uint64_t kGnuCxxClass = 0x474e5543432b2b00;           // "GNUCC++\0"
constexpr uint64_t kGnuCxxDependentClass = 0x474e5543432b2b01;  // "GNUCC++\x01"
constexpr uint64_t kTypeBeforeHeader = 80;   // __cxa_exception::exceptionType (dependent: primaryException)
constexpr uint64_t kObjectAfterHeader = 32;  // sizeof(_Unwind_Exception), 16-aligned
constexpr size_t kMaxTypeName = 512;
constexpr uint64_t kObjectWordsScanned = 24;  // string members looked for in the object's first words
constexpr uint64_t kSsoCapacity = 15;         // std::string's local buffer (new ABI)

std::optional<uint64_t> read_word(Target& target, uint64_t address) {
  uint64_t value = 0;
  ReadError error;
  if (address < 4096 || !target.read_value(address, &value, &error)) return std::nullopt;
  return value;
}

// Characters of a mangled type name (std::type_info::name(); '*' marks a local type).
bool is_type_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '*' || c == '$' || c == '.')) return false;
  return true;
}

std::string demangle_type(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : "";
}

// Text a program would put in an exception message: no control bytes other than \n \r \t.
bool is_message_text(const std::string& bytes) {
  if (bytes.empty()) return false;
  for (char c : bytes) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 && u != '\n' && u != '\r' && u != '\t') return false;
    if (u == 0x7f) return false;
  }
  return true;
}

// `length` bytes at `address` followed by a NUL, when they read as message text.
std::optional<std::string> read_text(Target& target, uint64_t address, uint64_t length, bool* truncated) {
  if (length == 0 || length > (1u << 20)) return std::nullopt;
  size_t take = static_cast<size_t>(std::min<uint64_t>(length, kMaxMessage));
  std::string bytes(take + (take == length ? 1 : 0), '\0');
  ReadError error;
  if (!target.read(address, bytes.data(), bytes.size(), &error)) return std::nullopt;
  if (take == length) {
    if (bytes.back() != '\0') return std::nullopt;
    bytes.pop_back();
  }
  if (!is_message_text(bytes)) return std::nullopt;
  *truncated = take < length;
  return bytes;
}

// A std::string (new ABI: pointer, length, local buffer or capacity) at `at`: its pointer
// points to its own buffer 16 bytes on (short), or length <= capacity (long).
std::optional<std::string> std_string_at(Target& target, uint64_t at, bool* truncated) {
  auto pointer = read_word(target, at), length = read_word(target, at + 8), capacity = read_word(target, at + 16);
  if (!pointer || !length) return std::nullopt;
  bool local = *pointer == at + 16 && *length <= kSsoCapacity;
  bool heap = *pointer != at + 16 && capacity && *length > kSsoCapacity && *length <= *capacity;
  return local || heap ? read_text(target, *pointer, *length, truncated) : std::nullopt;
}

// libstdc++'s reference-counted string (std::runtime_error's __cow_string): a pointer to the
// characters, after a header {length, capacity, refcount}.
std::optional<std::string> cow_string_at(Target& target, uint64_t at, bool* truncated) {
  auto pointer = read_word(target, at);
  if (!pointer || *pointer < 24) return std::nullopt;
  auto length = read_word(target, *pointer - 24), capacity = read_word(target, *pointer - 16);
  if (!length || !capacity || *length > *capacity) return std::nullopt;
  return read_text(target, *pointer, *length, truncated);
}

// The first string member after the vptr: std::exception subclasses keep their message in one
// (runtime_error: a COW string at +8; c10::Error: std::string msg_ right after the vptr).
void find_message(Target& target, InFlightException* exception) {
  for (uint64_t word = 1; word < kObjectWordsScanned; ++word) {
    uint64_t at = exception->object + word * 8;
    bool truncated = false;
    std::optional<std::string> text = std_string_at(target, at, &truncated);
    if (!text) text = cow_string_at(target, at, &truncated);
    if (!text) continue;
    exception->message = std::move(text);
    exception->message_offset = word * 8;
    exception->message_truncated = truncated;
    return;
  }
}

// The file mapped at `address` (its base name), or "an unnamed mapping".
std::string file_mapped_at(Target& target, uint64_t address) {
  for (const MappedFile& mapping : target.mapped_files())
    if (address >= mapping.start && address < mapping.end && !mapping.path.empty())
      return mapping.path.substr(mapping.path.rfind('/') + 1);
  return "an unnamed mapping";
}

// A NUL-terminated string at `address` in a file-backed mapping the core did not save, read
// from the local copy of that file (`file` gets its path); nullopt when there is none or the
// build-ids differ.
std::optional<std::string> read_c_string_from_file(Target& target, uint64_t address, const LibrarySearch& search,
                                                   std::string* file) {
  for (const MappedFile& mapping : target.mapped_files()) {
    if (address < mapping.start || address >= mapping.end || mapping.path.empty() || mapping.path[0] != '/') continue;
    LibrarySearch checked = search;
    checked.mismatch_leaves_no_file = true;  // never a name from another build
    std::string local;
    try {
      local = resolve_mapped_library(target, mapping.path, checked).local_path;
    } catch (const BadInput&) {
      return std::nullopt;
    }
    int fd = local.empty() ? -1 : open(local.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string bytes(kMaxTypeName, '\0');
    ssize_t got = pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(mapping.file_offset + (address - mapping.start)));
    close(fd);
    size_t end = got > 0 ? bytes.find('\0') : std::string::npos;
    if (end == std::string::npos || static_cast<ssize_t>(end) >= got) return std::nullopt;
    *file = local;
    return bytes.substr(0, end);
  }
  return std::nullopt;
}

// The exception whose _Unwind_Exception is at `header`, when the header is a valid one.
std::optional<InFlightException> decode_header(Target& target, uint64_t header, const LibrarySearch& search, int depth = 0) {
  auto exception_class = read_word(target, header);
  auto type_word = read_word(target, header - kTypeBeforeHeader);
  if (!exception_class || !type_word) return std::nullopt;
  if (*exception_class == kGnuCxxDependentClass && depth == 0) {
    std::optional<InFlightException> primary = decode_header(target, *type_word - kObjectAfterHeader, search, 1);
    if (primary) primary->rethrown = true;
    return primary;
  }
  if (*exception_class != kGnuCxxClass) return std::nullopt;
  auto name_pointer = read_word(target, *type_word + 8);  // std::type_info: vptr, then __name
  if (!name_pointer) return std::nullopt;
  ReadError error;
  std::optional<std::string> name = read_c_string(target, *name_pointer, kMaxTypeName, &error);
  std::string name_file;
  bool name_not_here = !name && error.reason == ReadFailure::kNotSavedInCore;
  if (name_not_here) name = read_c_string_from_file(target, *name_pointer, search, &name_file);
  InFlightException exception;
  if (name) {
    if (!is_type_name(*name)) return std::nullopt;
    exception.type_name = *name;
    exception.type = demangle_type(name->front() == '*' ? name->substr(1) : *name);
  } else if (name_not_here) {  // libstdc++'s 8-byte exception class already vouches for the header
    exception.type_name_unavailable = "its name lies in " + file_mapped_at(target, *name_pointer) +
                                      ", not saved in the core, and no local copy of that file was found";
  } else {
    return std::nullopt;
  }
  exception.type_name_file = name_file;
  exception.unwind_header = header;
  exception.object = header + kObjectAfterHeader;
  find_message(target, &exception);
  return exception;
}

bool is_readable(Target& target, uint64_t address) {
  const MemoryRegion* region = find_region(target.regions(), address);
  return region != nullptr && region->readable && region->saved;
}

// The thread's stack words from its stack pointer up, as far as they can be read.
std::vector<uint64_t> stack_words(Target& target, uint64_t sp) {
  std::vector<uint64_t> words;
  constexpr size_t kPage = 4096;
  for (uint64_t at = sp & ~uint64_t(7); at < sp + kStackScanBytes;) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(kPage - at % kPage, sp + kStackScanBytes - at)) & ~size_t(7);
    if (chunk == 0) break;
    std::vector<uint64_t> part(chunk / 8);
    ReadError error;
    if (!target.read(at, part.data(), chunk, &error)) break;
    words.insert(words.end(), part.begin(), part.end());
    at += chunk;
  }
  return words;
}

// The index among `words` of a dependent exception (std::rethrow_exception's) referring to
// `primary`: the stack may hold a pointer to the primary before the dependent one (clang's code).
std::optional<size_t> rethrown_further_up(Target& target, const std::vector<uint64_t>& words, size_t from,
                                          const InFlightException& primary, const LibrarySearch& search) {
  for (size_t i = from; i < words.size(); ++i) {
    uint64_t pointer = words[i];
    if (pointer < 4096 || pointer % 8 != 0 || !is_readable(target, pointer)) continue;
    auto exception_class = read_word(target, pointer);
    if (!exception_class || *exception_class != kGnuCxxDependentClass) continue;
    std::optional<InFlightException> dependent = decode_header(target, pointer, search);
    if (dependent && dependent->object == primary.object) return i;
  }
  return std::nullopt;
}

// The exception a stack word points to (at its _Unwind_Exception or at the object after it).
std::optional<InFlightException> exception_pointed_by(Target& target, uint64_t pointer, const LibrarySearch& search) {
  if (pointer < 4096 || pointer % 8 != 0) return std::nullopt;
  for (uint64_t header : {pointer, pointer - kObjectAfterHeader})
    if (is_readable(target, header))
      if (std::optional<InFlightException> exception = decode_header(target, header, search)) return exception;
  return std::nullopt;
}

}  // namespace

std::optional<InFlightException> find_in_flight_exception(Target& target, const ThreadInfo& thread,
                                                          const LibrarySearch& search) {
  std::optional<uint64_t> sp = stack_pointer_of(thread);
  if (!sp) return std::nullopt;
  std::vector<uint64_t> words = stack_words(target, *sp);
  uint64_t first_word = *sp & ~uint64_t(7);
  for (size_t i = 0; i < words.size(); ++i) {
    std::optional<InFlightException> exception = exception_pointed_by(target, words[i], search);
    if (!exception) continue;
    exception->stack_address = first_word + i * 8;
    if (!exception->rethrown)
      if (std::optional<size_t> dependent = rethrown_further_up(target, words, i + 1, *exception, search)) {
        exception->rethrown = true;
        exception->dependent_stack_address = first_word + *dependent * 8;
      }
    return exception;
  }
  return std::nullopt;
}

void reread_in_flight_exception(Target& target, const InFlightException& exception, const LibrarySearch& search) {
  for (uint64_t word : {exception.stack_address, exception.dependent_stack_address})
    if (word != 0)
      if (std::optional<uint64_t> pointer = read_word(target, word)) exception_pointed_by(target, *pointer, search);
}

nlohmann::json in_flight_exception_json(const InFlightException& exception) {
  nlohmann::json message = nullptr;
  if (exception.message)
    message = {{"text", valid_utf8(*exception.message)},
               {"offset", exception.message_offset},
               {"truncated", exception.message_truncated},
               {"found_by", "pattern"}};
  nlohmann::json name_from = !exception.type_name_unavailable.empty() ? nlohmann::json(nullptr)
                             : exception.type_name_file.empty()       ? nlohmann::json("memory")
                                                                      : nlohmann::json(valid_utf8(exception.type_name_file));
  nlohmann::json out = {
      {"type", exception.type.empty() ? nlohmann::json(nullptr) : nlohmann::json(exception.type)},
      {"type_name", exception.type_name_unavailable.empty() ? nlohmann::json(valid_utf8(exception.type_name)) : nlohmann::json(nullptr)},
      {"type_name_from", name_from},
      {"object", hex(exception.object)},
      {"rethrown", exception.rethrown},
      {"found_at", hex(exception.stack_address)},
      {"message", message}};
  if (!exception.type_name_unavailable.empty())
    out["type_name_unavailable"] = valid_utf8(exception.type_name_unavailable);
  return out;
}

std::string in_flight_exception_text(const nlohmann::json& exception) {
  auto text_of = [](const nlohmann::json& object, const char* key) {
    const nlohmann::json& value = json_member(object, key);
    return value.is_string() ? value.get<std::string>() : std::string();
  };
  std::string type = text_of(exception, "type"), type_name = text_of(exception, "type_name");
  bool type_unavailable = json_member(exception, "type_name_unavailable").is_string();
  if (type.empty() && type_name.empty() && !type_unavailable) return "";
  std::string text = "terminate: " + (!type.empty() ? type : !type_name.empty() ? "type " + type_name : "type unavailable");
  const nlohmann::json& message = json_member(exception, "message");
  std::string body = text_of(message, "text");
  if (body.empty()) return text + " (message not found)";
  size_t line_end = body.find('\n');
  bool cut = line_end != std::string::npos || json_member(message, "truncated") == true;
  return text + ": \"" + body.substr(0, line_end) + (cut ? "...\"" : "\"") + " (message found by pattern)";
}

}  // namespace nsc
