#include "nccl/object_view.h"

#include <cstring>

#include "nccl/nccl_names.h"
#include "util/strings.h"

namespace nsc {
namespace {

struct PathStep {
  std::string member;
  std::vector<uint64_t> indices;
};

// Splits "channels[3].tree.down[1]" into steps; false on malformed input.
bool parse_path(const std::string& path, std::vector<PathStep>* steps) {
  size_t i = 0;
  while (i <= path.size()) {
    PathStep step;
    size_t start = i;
    while (i < path.size() && path[i] != '.' && path[i] != '[') ++i;
    step.member = path.substr(start, i - start);
    if (step.member.empty()) return false;
    while (i < path.size() && path[i] == '[') {
      size_t close = path.find(']', i);
      if (close == std::string::npos) return false;
      uint64_t index = 0;
      if (!parse_u64(std::string_view(path).substr(i + 1, close - i - 1), &index)) return false;
      step.indices.push_back(index);
      i = close + 1;
    }
    steps->push_back(std::move(step));
    if (i == path.size()) break;
    if (path[i] != '.') return false;
    ++i;
  }
  return !steps->empty();
}

// Byte offset of element `indices` within an array member (row-major).
std::optional<uint64_t> element_offset(const MemberLayout& member,
                                       const std::vector<uint64_t>& indices, std::string* why) {
  if (indices.size() > member.array_dims.size()) {
    *why = "member " + member.name + " is not an array of that rank";
    return std::nullopt;
  }
  uint64_t stride = member.element_size;
  for (size_t d = indices.size(); d < member.array_dims.size(); ++d) stride *= member.array_dims[d];
  uint64_t offset = 0;
  for (size_t d = indices.size(); d-- > 0;) {
    if (indices[d] >= member.array_dims[d]) {
      *why = "index " + std::to_string(indices[d]) + " out of bounds for " + member.name + "[" +
             std::to_string(member.array_dims[d]) + "]";
      return std::nullopt;
    }
    offset += indices[d] * stride;
    stride *= member.array_dims[d];
  }
  return offset;
}

}  // namespace

ObjectView ObjectView::of(Target& target, const LayoutProfile& layout, const std::string& type_name,
                          uint64_t address) {
  return ObjectView(&target, &layout, layout.find_struct(type_name), address);
}

std::optional<ResolvedField> ObjectView::resolve(const std::string& path, std::string* why) const {
  std::vector<PathStep> steps;
  if (!parse_path(path, &steps)) {
    *why = "malformed field path '" + path + "'";
    return std::nullopt;
  }
  const StructLayout* current = type_;
  ResolvedField resolved;
  for (size_t s = 0; s < steps.size(); ++s) {
    if (current == nullptr) {
      *why = "field " + path + ": not a struct at '" + steps[s].member + "'";
      return std::nullopt;
    }
    const MemberLayout* member = current->find(steps[s].member);
    if (member == nullptr) {
      std::string what = "struct " + current->name + " has no member " + steps[s].member;
      *why = layout_ != nullptr ? not_in_version(*layout_, what) : what;
      return std::nullopt;
    }
    auto offset = element_offset(*member, steps[s].indices, why);
    if (!offset) return std::nullopt;
    resolved.offset += member->offset + *offset;
    resolved.member = member;
    resolved.whole_array = steps[s].indices.size() < member->array_dims.size();
    bool last = s + 1 == steps.size();
    if (!last) {
      if (member->kind != ValueKind::kStruct && member->kind != ValueKind::kUnion) {
        *why = "field " + path + ": " + member->name + " is not a struct";
        return std::nullopt;
      }
      current = layout_->find_struct(member->type_name);
    }
  }
  return resolved;
}

bool ObjectView::has(const std::string& path) const {
  std::string why;
  return valid() && resolve(path, &why).has_value();
}

Fetched<uint64_t> read_raw_integer(Target& target, uint64_t address, uint64_t size) {
  if (size != 1 && size != 2 && size != 4 && size != 8)
    return Fetched<uint64_t>::missing("unsupported integer size " + std::to_string(size), address);
  uint64_t raw = 0;  // little-endian target (x86-64): low bytes first
  ReadError error;
  if (!target.read(address, &raw, size, &error))
    return Fetched<uint64_t>::missing(error.message(), address);
  Fetched<uint64_t> fetched;
  fetched.value = raw;
  fetched.address = address;
  return fetched;
}

int64_t sign_extend(uint64_t raw, uint64_t size) {
  if (size >= 8) return static_cast<int64_t>(raw);
  uint64_t sign_bit = 1ull << (size * 8 - 1);
  uint64_t mask = (1ull << (size * 8)) - 1;
  raw &= mask;
  return static_cast<int64_t>((raw ^ sign_bit) - sign_bit);
}

Fetched<uint64_t> ObjectView::unsigned_integer(const std::string& path) const {
  if (!valid()) return Fetched<uint64_t>::missing("type not in layout");
  std::string why;
  auto field = resolve(path, &why);
  if (!field) return Fetched<uint64_t>::missing(why);
  if (field->whole_array) return Fetched<uint64_t>::missing(path + " is an array");
  const MemberLayout& member = *field->member;
  switch (member.kind) {
    case ValueKind::kSigned: case ValueKind::kUnsigned: case ValueKind::kBool:
    case ValueKind::kEnum: case ValueKind::kPointer:
      break;
    default:
      return Fetched<uint64_t>::missing(path + " is not an integer");
  }
  auto fetched = read_raw_integer(*target_, address_ + field->offset, member.element_size);
  if (fetched.ok() && member.bit_size != 0) {
    uint64_t value = *fetched.value >> member.bit_offset;
    if (member.bit_size < 64) value &= (1ull << member.bit_size) - 1;
    fetched.value = value;
  }
  return fetched;
}

Fetched<int64_t> ObjectView::integer(const std::string& path) const {
  auto raw = unsigned_integer(path);
  Fetched<int64_t> fetched;
  fetched.unavailable = raw.unavailable;
  fetched.address = raw.address;
  if (!raw.ok()) return fetched;
  std::string why;
  const MemberLayout& member = *resolve(path, &why)->member;
  bool is_signed = member.kind == ValueKind::kSigned || member.kind == ValueKind::kEnum;
  if (member.bit_size != 0)
    fetched.value = is_signed ? sign_extend(*raw.value << (64 - member.bit_size), 8) >>
                                    (64 - member.bit_size)
                              : static_cast<int64_t>(*raw.value);
  else
    fetched.value = is_signed ? sign_extend(*raw.value, member.element_size)
                              : static_cast<int64_t>(*raw.value);
  return fetched;
}

Fetched<uint64_t> ObjectView::pointer(const std::string& path) const {
  std::string why;
  auto field = valid() ? resolve(path, &why) : std::nullopt;
  if (field && field->member->kind != ValueKind::kPointer)
    return Fetched<uint64_t>::missing(path + " is not a pointer");
  return unsigned_integer(path);
}

ObjectView ObjectView::member(const std::string& path) const {
  std::string why;
  auto field = valid() ? resolve(path, &why) : std::nullopt;
  if (!field || field->whole_array ||
      (field->member->kind != ValueKind::kStruct && field->member->kind != ValueKind::kUnion))
    return ObjectView();
  return ObjectView(target_, layout_, layout_->find_struct(field->member->type_name),
                    address_ + field->offset);
}

Fetched<ObjectView> ObjectView::deref(const std::string& path, const std::string& as_type) const {
  auto pointer_value = pointer(path);
  if (!pointer_value.ok()) return Fetched<ObjectView>::missing(pointer_value.unavailable);
  if (*pointer_value.value == 0)
    return Fetched<ObjectView>::missing(path + " is NULL");  // absent, not a read error
  std::string why;
  std::string type_name = as_type.empty() ? resolve(path, &why)->member->type_name : as_type;
  const StructLayout* type = layout_->find_struct(type_name);
  if (type == nullptr)
    return Fetched<ObjectView>::missing("struct " + type_name + " not in layout");
  Fetched<ObjectView> fetched;
  fetched.value = ObjectView(target_, layout_, type, *pointer_value.value);
  fetched.address = *pointer_value.value;
  return fetched;
}

uint64_t ObjectView::array_length(const std::string& path) const {
  std::string why;
  auto field = valid() ? resolve(path, &why) : std::nullopt;
  if (!field || field->member->array_dims.empty() || !field->whole_array) return 0;
  return field->member->array_dims.front();
}

Fetched<std::string> ObjectView::enum_name(const std::string& path) const {
  auto value = integer(path);
  if (!value.ok()) return Fetched<std::string>::missing(value.unavailable, value.address);
  std::string why;
  const MemberLayout& member = *resolve(path, &why)->member;
  const EnumLayout* enumeration = layout_->find_enum(member.type_name);
  Fetched<std::string> fetched;
  fetched.address = value.address;
  auto name = enumeration ? enumeration->name_of(*value.value) : std::nullopt;
  fetched.value = name ? *name : member.type_name + "(" + std::to_string(*value.value) + ")";
  return fetched;
}

}  // namespace nsc
