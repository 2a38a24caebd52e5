// ObjectView: one struct instance in target memory, read field by field by
// name through the layout. Every read returns either a value or the reason it
// is unavailable; decoders turn the reason into "unavailable", never into 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "layout/layout.h"
#include "target/target.h"

namespace nsc {

template <typename T>
struct Fetched {
  std::optional<T> value;
  std::string unavailable;  // why value is empty ("" when it has one)
  uint64_t address = 0;     // where the field lives (0 when unresolved)

  bool ok() const { return value.has_value(); }
  static Fetched missing(std::string why, uint64_t address = 0) {
    Fetched fetched;
    fetched.unavailable = std::move(why);
    fetched.address = address;
    return fetched;
  }
};

// A member path resolved to its place inside a struct.
struct ResolvedField {
  uint64_t offset = 0;                   // from the start of the outer struct
  const MemberLayout* member = nullptr;  // the last member on the path
  bool whole_array = false;              // path names an array without an index
};

class ObjectView {
 public:
  ObjectView() = default;
  ObjectView(Target* target, const LayoutProfile* layout, const StructLayout* type, uint64_t address)
      : target_(target), layout_(layout), type_(type), address_(address) {}

  // Views a struct by name; an invalid view (valid() == false) when the layout lacks it.
  static ObjectView of(Target& target, const LayoutProfile& layout, const std::string& type_name,
                       uint64_t address);

  bool valid() const { return type_ != nullptr && target_ != nullptr; }
  uint64_t address() const { return address_; }
  const StructLayout* type() const { return type_; }
  const LayoutProfile* layout() const { return layout_; }
  Target* target() const { return target_; }

  // Paths: "rank", "ring.prev", "seqNumber[2]", "channels[3].tree.down[1]".
  bool has(const std::string& path) const;
  std::optional<ResolvedField> resolve(const std::string& path, std::string* why) const;

  Fetched<int64_t> integer(const std::string& path) const;   // signed, unsigned, bool, enum
  Fetched<uint64_t> unsigned_integer(const std::string& path) const;
  Fetched<uint64_t> pointer(const std::string& path) const;  // raw pointer value
  // The struct member at path (by value), as its own view.
  ObjectView member(const std::string& path) const;
  // Follows the pointer at path to a struct of the member's pointee type (or `as_type`).
  Fetched<ObjectView> deref(const std::string& path, const std::string& as_type = "") const;
  // Number of elements of the array member at path (first dimension), 0 if not an array.
  uint64_t array_length(const std::string& path) const;
  // Enum member read and named with the layout's enum ("ncclSuccess"); "<enum>(N)" when unnamed.
  Fetched<std::string> enum_name(const std::string& path) const;

 private:
  Target* target_ = nullptr;
  const LayoutProfile* layout_ = nullptr;
  const StructLayout* type_ = nullptr;
  uint64_t address_ = 0;
};

// Reads a little-endian integer of `size` bytes (1, 2, 4, 8) at address.
Fetched<uint64_t> read_raw_integer(Target& target, uint64_t address, uint64_t size);
// Sign-extends a `size`-byte value.
int64_t sign_extend(uint64_t raw, uint64_t size);

}  // namespace nsc
