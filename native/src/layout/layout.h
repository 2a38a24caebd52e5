// Layout: struct, enum and symbol facts of one libnccl build, from DWARF or
// from a cached profile (JSON). Decoders look members up by name; no offset
// is ever hard-coded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nsc {

// What a member (or array element) holds, enough for decoders to read it.
enum class ValueKind { kSigned, kUnsigned, kBool, kFloat, kPointer, kStruct, kUnion, kEnum, kOther };

const char* value_kind_name(ValueKind kind);
std::optional<ValueKind> value_kind_from_name(const std::string& name);

struct MemberLayout {
  std::string name;
  uint64_t offset = 0;              // bytes from the start of the containing struct
  uint64_t size = 0;                // total bytes (whole array for arrays)
  ValueKind kind = ValueKind::kOther;  // of the element for arrays
  std::string type_name;            // struct/union/enum name, pointee for pointers ("ncclComm")
  uint64_t element_size = 0;        // size of one element (== size when not an array)
  std::vector<uint64_t> array_dims; // empty when not an array; [64] for channels[64]
  uint32_t bit_size = 0;            // bitfields only
  uint32_t bit_offset = 0;          // bitfields only (from the start of the member's storage unit)
};

struct StructLayout {
  std::string name;  // "ncclComm", nested: "ncclKernelPlanner::Peer"
  uint64_t size = 0;
  bool is_union = false;
  std::vector<MemberLayout> members;
  const MemberLayout* find(const std::string& member) const;
};

struct EnumLayout {
  std::string name;  // "ncclResult_t"
  uint64_t size = 4;
  std::map<int64_t, std::string> values;
  std::optional<std::string> name_of(int64_t value) const;
};

struct LayoutProfile {
  std::string build_id;      // lower-case hex GNU build-id of the library
  std::string nccl_version;  // "2.28.9" (empty if unknown)
  std::string library;       // path it was extracted from (informational)
  std::string source;        // "dwarf:<path>" or "profile:<path>"
  std::map<std::string, StructLayout> structs;
  std::map<std::string, EnumLayout> enums;
  // Symbol values (link-time addresses) of the objects decoders use, e.g.
  // ncclComms, nNcclComms, ncclLastProxyState. Add the load bias to use them.
  std::map<std::string, uint64_t> symbols;
  // Compile-time constants decoders need (NCCL_MAGIC, MAXCHANNELS, ...), when known.
  std::map<std::string, int64_t> constants;

  const StructLayout* find_struct(const std::string& name) const;
  const EnumLayout* find_enum(const std::string& name) const;
};

// The struct/enum names a profile must hold for the decoders (roots; types
// reachable from them by value are included too).
const std::vector<std::string>& required_struct_names();
const std::vector<std::string>& required_enum_names();
const std::vector<std::string>& wanted_symbol_names();

}  // namespace nsc
