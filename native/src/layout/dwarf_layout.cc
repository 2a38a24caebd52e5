#include "layout/dwarf_layout.h"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "layout/elf_file.h"
#include "layout/layout_profile.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc {

namespace {

constexpr int kMaxTypeChain = 64;      // longer typedef/cv/array chains are corrupt DWARF
constexpr int kMaxFlattenDepth = 16;   // anonymous members / base classes nested deeper: corrupt

bool is_aggregate_tag(int tag) {
  return tag == DW_TAG_structure_type || tag == DW_TAG_class_type || tag == DW_TAG_union_type;
}

bool is_qualifier_tag(int tag) {
  return tag == DW_TAG_const_type || tag == DW_TAG_volatile_type ||
         tag == DW_TAG_restrict_type || tag == DW_TAG_atomic_type;
}

// Names end up in JSON: corrupt DWARF must not smuggle invalid UTF-8 in.
std::string die_name(Dwarf_Die* die) {
  const char* name = dwarf_diename(die);
  return name != nullptr ? valid_utf8(name) : "";
}

bool has_true_flag(Dwarf_Die* die, unsigned attribute) {
  Dwarf_Attribute attr;
  bool value = false;
  return dwarf_attr_integrate(die, attribute, &attr) != nullptr &&
         dwarf_formflag(&attr, &value) == 0 && value;
}

bool is_declaration(Dwarf_Die* die) { return has_true_flag(die, DW_AT_declaration); }

bool referenced_type(Dwarf_Die* die, Dwarf_Die* type_out) {
  Dwarf_Attribute attr;
  return dwarf_attr_integrate(die, DW_AT_type, &attr) != nullptr &&
         dwarf_formref_die(&attr, type_out) != nullptr;
}

std::optional<uint64_t> unsigned_attribute(Dwarf_Die* die, unsigned attribute) {
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  if (dwarf_attr_integrate(die, attribute, &attr) == nullptr || dwarf_formudata(&attr, &value) != 0)
    return std::nullopt;
  return value;
}

std::optional<int64_t> signed_attribute(Dwarf_Die* die, unsigned attribute) {
  Dwarf_Attribute attr;
  Dwarf_Sword value = 0;
  if (dwarf_attr_integrate(die, attribute, &attr) == nullptr || dwarf_formsdata(&attr, &value) != 0)
    return std::nullopt;
  return value;
}

// An array bound: DW_FORM_dataN is unsigned here (int x[36864] has upper bound
// 0x8fff in data2, which dwarf_formsdata would sign-extend); only sdata is signed.
std::optional<int64_t> bound_attribute(Dwarf_Die* die, unsigned attribute) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, attribute, &attr) == nullptr) return std::nullopt;
  unsigned form = dwarf_whatform(&attr);
  if (form == DW_FORM_sdata || form == DW_FORM_implicit_const) {
    Dwarf_Sword value = 0;
    if (dwarf_formsdata(&attr, &value) != 0) return std::nullopt;
    return value;
  }
  Dwarf_Word value = 0;
  if (dwarf_formudata(&attr, &value) != 0) return std::nullopt;
  return static_cast<int64_t>(value);  // 0xffff...ff (upper bound of int x[0]) reads as -1
}

uint64_t aggregate_size(Dwarf_Die* die) {
  Dwarf_Word size = 0;
  return dwarf_aggregate_size(die, &size) == 0 ? size : 0;
}

// DW_AT_data_member_location as a constant, or as the DWARF 2 expression
// DW_OP_plus_uconst N / DW_OP_constu N.
uint64_t member_location(Dwarf_Die* member) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(member, DW_AT_data_member_location, &attr) == nullptr) return 0;
  Dwarf_Word value = 0;
  if (dwarf_formudata(&attr, &value) == 0) return value;
  Dwarf_Op* ops = nullptr;
  size_t op_count = 0;
  if (dwarf_getlocation(&attr, &ops, &op_count) == 0 && op_count == 1 &&
      (ops[0].atom == DW_OP_plus_uconst || ops[0].atom == DW_OP_constu))
    return ops[0].number;
  return 0;
}

ValueKind kind_of_base_type(Dwarf_Die* base) {
  uint64_t encoding = unsigned_attribute(base, DW_AT_encoding).value_or(0);
  switch (encoding) {
    case DW_ATE_signed:
    case DW_ATE_signed_char:
      return ValueKind::kSigned;
    case DW_ATE_unsigned:
    case DW_ATE_unsigned_char:
    case DW_ATE_UTF:
      return ValueKind::kUnsigned;
    case DW_ATE_boolean:
      return ValueKind::kBool;
    case DW_ATE_float:
      return ValueKind::kFloat;
    default:
      return ValueKind::kOther;
  }
}

// Array bounds of one DW_TAG_array_type (0 for an unbounded dimension).
void append_array_dims(Dwarf_Die* array, std::vector<uint64_t>* dims) {
  Dwarf_Die child;
  if (dwarf_child(array, &child) != 0) return;
  do {
    if (dwarf_tag(&child) != DW_TAG_subrange_type) continue;
    if (auto count = bound_attribute(&child, DW_AT_count)) {
      dims->push_back(*count > 0 ? static_cast<uint64_t>(*count) : 0);
    } else if (auto upper = bound_attribute(&child, DW_AT_upper_bound)) {
      int64_t lower = bound_attribute(&child, DW_AT_lower_bound).value_or(0);
      dims->push_back(*upper >= lower ? static_cast<uint64_t>(*upper - lower + 1) : 0);
    } else {
      dims->push_back(0);  // flexible array member
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

struct TypeFacts {
  ValueKind kind = ValueKind::kOther;
  std::string type_name;
  uint64_t element_size = 0;
  std::vector<uint64_t> dims;
};

// A type DIE with typedefs and cv-qualifiers peeled off; typedef_name is the
// innermost typedef crossed: it names an anonymous struct/enum the way C++
// linkage (and gdb) does (ncclNet_t -> ncclNet_v11_t -> struct {...}).
struct PeeledType {
  bool is_void = true;
  Dwarf_Die die{};
  std::string typedef_name;
};

PeeledType peel_typedefs(Dwarf_Die* type) {
  PeeledType peeled;
  Dwarf_Die current = *type;
  for (int step = 0; step < kMaxTypeChain; ++step) {
    int tag = dwarf_tag(&current);
    if (tag != DW_TAG_typedef && !is_qualifier_tag(tag)) {
      peeled.is_void = false;
      peeled.die = current;
      return peeled;
    }
    if (tag == DW_TAG_typedef) peeled.typedef_name = die_name(&current);
    if (!referenced_type(&current, &current)) return peeled;  // typedef of void / const void
  }
  return peeled;
}

class DwarfWalker {
 public:
  DwarfWalker(Dwarf* dwarf, LayoutProfile* profile, const std::vector<std::string>& struct_roots,
              const std::vector<std::string>& enum_roots)
      : dwarf_(dwarf), profile_(profile) {
    for (const std::string& root : struct_roots) {
      store_names_[root].push_back(root);
      unfound_roots_.insert(root);
      for (size_t at = root.find("::"); at != std::string::npos; at = root.find("::", at + 2))
        nested_prefixes_.insert(root.substr(0, at));
    }
    for (const std::string& root : enum_roots) {
      enum_roots_.insert(root);
      unfound_roots_.insert(root);
      for (size_t at = root.find("::"); at != std::string::npos; at = root.find("::", at + 2))
        nested_prefixes_.insert(root.substr(0, at));  // c10::ScalarType sits in namespace c10
    }
  }

  void run() {
    Dwarf_Off offset = 0, next_offset = 0;
    size_t header_size = 0;
    while (!unfound_roots_.empty() &&
           dwarf_nextcu(dwarf_, offset, &next_offset, &header_size, nullptr, nullptr, nullptr) == 0) {
      Dwarf_Die unit;
      if (dwarf_offdie(dwarf_, offset + header_size, &unit) != nullptr) walk_unit(&unit);
      offset = next_offset;
    }
  }

 private:
  // Only the unit's direct children are visited (DW_AT_sibling makes that a skip).
  void walk_unit(Dwarf_Die* unit) {
    Dwarf_Die child;
    if (dwarf_child(unit, &child) != 0) return;
    do {
      visit_top_level(&child);
      if (unfound_roots_.empty()) return;
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  void visit_top_level(Dwarf_Die* die) {
    int tag = dwarf_tag(die);
    if (is_aggregate_tag(tag)) {
      std::string name = die_name(die);
      bool wanted = store_names_.count(name) > 0, holds_wanted = nested_prefixes_.count(name) > 0;
      if ((!wanted && !holds_wanted) || is_declaration(die)) return;  // cheap test first
      if (wanted) store_struct_under_wanted_names(die, name);
      if (holds_wanted) visit_scope_for_nested(die, name);
    } else if (tag == DW_TAG_typedef) {
      std::string name = die_name(die);
      if (unfound_roots_.count(name)) visit_root_typedef(die, name);
    } else if (tag == DW_TAG_enumeration_type) {
      std::string name = die_name(die);
      if (enum_roots_.count(name) && unfound_roots_.count(name) && !is_declaration(die))
        add_enum(die, name);
    } else if (tag == DW_TAG_namespace) {
      std::string name = die_name(die);
      if (nested_prefixes_.count(name)) visit_scope_for_nested(die, name);
    }
  }

  // A root named by a typedef (ncclConfig_t, ncclResult_t): store the target under the typedef name.
  void visit_root_typedef(Dwarf_Die* typedef_die, const std::string& name) {
    Dwarf_Die target_die;
    if (!referenced_type(typedef_die, &target_die)) return;
    PeeledType target = peel_typedefs(&target_die);
    if (target.is_void) return;
    int tag = dwarf_tag(&target.die);
    if (enum_roots_.count(name) && tag == DW_TAG_enumeration_type) {
      if (!is_declaration(&target.die)) add_enum(&target.die, name);
      return;
    }
    if (!store_names_.count(name) || !is_aggregate_tag(tag)) return;
    std::string tag_name = die_name(&target.die);
    if (is_declaration(&target.die)) {
      // Only declared here: store the definition under this name when it turns up.
      if (!tag_name.empty()) store_names_[tag_name].push_back(name);
      return;
    }
    qualified_names_.emplace(dwarf_dieoffset(&target.die), tag_name.empty() ? name : tag_name);
    add_struct(&target.die, name);
    if (!tag_name.empty()) add_struct(&target.die, tag_name);  // reachable under its tag name too
  }

  void store_struct_under_wanted_names(Dwarf_Die* die, const std::string& dwarf_name) {
    for (const std::string& name : store_names_[dwarf_name]) add_struct(die, name);
  }

  // Looks inside a struct or namespace for nested roots ("ncclKernelPlanner::Peer").
  void visit_scope_for_nested(Dwarf_Die* scope, const std::string& qualified_scope) {
    Dwarf_Die child;
    if (dwarf_child(scope, &child) != 0) return;
    do {
      int tag = dwarf_tag(&child);
      if (!is_aggregate_tag(tag) && tag != DW_TAG_namespace && tag != DW_TAG_enumeration_type)
        continue;
      std::string name = die_name(&child);
      if (name.empty()) continue;
      std::string qualified = qualified_scope + "::" + name;
      if (tag != DW_TAG_namespace) qualified_names_.emplace(dwarf_dieoffset(&child), qualified);
      if (is_declaration(&child)) continue;
      if (is_aggregate_tag(tag) && store_names_.count(qualified))
        store_struct_under_wanted_names(&child, qualified);
      if (tag == DW_TAG_enumeration_type && enum_roots_.count(qualified))
        add_enum(&child, qualified);
      if (nested_prefixes_.count(qualified)) visit_scope_for_nested(&child, qualified);
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  // Adds the struct and, breadth first, every struct it holds by value.
  void add_struct(Dwarf_Die* die, const std::string& name) {
    pending_structs_.emplace_back(*die, name);
    while (!pending_structs_.empty()) {
      auto [next_die, next_name] = pending_structs_.front();
      pending_structs_.pop_front();
      if (profile_->structs.count(next_name)) continue;
      profile_->structs[next_name] = build_struct(&next_die, next_name);
      unfound_roots_.erase(next_name);
    }
  }

  StructLayout build_struct(Dwarf_Die* die, const std::string& name) {
    StructLayout layout;
    layout.name = name;
    layout.size = aggregate_size(die);
    layout.is_union = dwarf_tag(die) == DW_TAG_union_type;
    register_nested_types(die, name);
    append_members_of(die, 0, name, &layout.members, 0);
    for (MemberLayout& member : layout.members)
      if (member.bit_size != 0 && member.offset + member.size > layout.size)
        shrink_bitfield_storage(&member);
    return layout;
  }

  // A bitfield whose declared storage unit overhangs the struct (packed
  // structs): describe it by the bytes that hold its bits instead.
  static void shrink_bitfield_storage(MemberLayout* member) {
    uint64_t bit_position = member->offset * 8 + member->bit_offset;
    member->offset = bit_position / 8;
    member->bit_offset = static_cast<uint32_t>(bit_position % 8);
    member->size = (member->bit_offset + member->bit_size + 7) / 8;
    member->element_size = member->size;
  }

  // Names nested types before members refer to them ("ncclMemoryStack::Hunk").
  void register_nested_types(Dwarf_Die* scope, const std::string& qualified_scope) {
    Dwarf_Die child;
    if (dwarf_child(scope, &child) != 0) return;
    do {
      int tag = dwarf_tag(&child);
      if (!is_aggregate_tag(tag) && tag != DW_TAG_enumeration_type) continue;
      std::string name = die_name(&child);
      if (!name.empty())
        qualified_names_.emplace(dwarf_dieoffset(&child), qualified_scope + "::" + name);
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  void append_members_of(Dwarf_Die* aggregate, uint64_t base_offset, const std::string& owner,
                         std::vector<MemberLayout>* members, int depth) {
    if (depth > kMaxFlattenDepth) return;
    Dwarf_Die child;
    if (dwarf_child(aggregate, &child) != 0) return;
    do {
      int tag = dwarf_tag(&child);
      if (tag == DW_TAG_member || tag == DW_TAG_inheritance)
        append_member(&child, tag == DW_TAG_inheritance, base_offset, owner, members, depth);
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  void append_member(Dwarf_Die* member, bool is_base_class, uint64_t base_offset,
                     const std::string& owner, std::vector<MemberLayout>* members, int depth) {
    // Static data members are declarations without storage in the object.
    if (is_declaration(member) || has_true_flag(member, DW_AT_external)) return;
    uint64_t offset = base_offset + member_location(member);
    std::string name = die_name(member);
    Dwarf_Die type_die;
    if (!referenced_type(member, &type_die)) return;
    if (is_base_class || name.empty()) {
      // Base classes and anonymous unions/structs: their members read as ours (C semantics).
      PeeledType peeled = peel_typedefs(&type_die);
      if (peeled.is_void || !is_aggregate_tag(dwarf_tag(&peeled.die))) return;
      size_t first_new = members->size();
      append_members_of(&peeled.die, offset, owner, members, depth + 1);
      name_tuple_element(die_name(&peeled.die), first_new, members);
      return;
    }
    MemberLayout layout;
    layout.name = name;
    layout.offset = offset;
    TypeFacts facts = describe_type(&type_die, owner, name);
    layout.kind = facts.kind;
    layout.type_name = facts.type_name;
    layout.element_size = facts.element_size;
    layout.array_dims = facts.dims;
    layout.size = facts.element_size;
    for (uint64_t dim : facts.dims) layout.size *= dim;
    if (auto bit_size = unsigned_attribute(member, DW_AT_bit_size))
      place_bitfield(member, base_offset, static_cast<uint32_t>(*bit_size), &layout);
    members->push_back(std::move(layout));
  }

  // std::tuple's elements all flatten to "_M_head_impl" (one per _Head_base<I, T> base):
  // name each "get<I>" as std::get does, so a decoder can tell them apart.
  static void name_tuple_element(const std::string& base_name, size_t first_new, std::vector<MemberLayout>* members) {
    static const std::string prefix = "_Head_base<";
    if (base_name.rfind(prefix, 0) != 0) return;
    size_t end = base_name.find(',', prefix.size());
    if (end == std::string::npos) return;
    std::string index = base_name.substr(prefix.size(), end - prefix.size());
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) return;
    for (size_t i = first_new; i < members->size(); ++i)
      if ((*members)[i].name == "_M_head_impl") (*members)[i].name = "get<" + index + ">";
  }

  // Bitfields: offset = start of the storage unit, bit_offset from its least significant bit.
  static void place_bitfield(Dwarf_Die* member, uint64_t base_offset, uint32_t bit_size,
                             MemberLayout* layout) {
    uint64_t unit_bytes = layout->element_size > 0 ? layout->element_size : 1;
    int64_t bit_position = 0;  // from the start of the containing struct
    if (auto data_bit_offset = unsigned_attribute(member, DW_AT_data_bit_offset)) {
      bit_position = static_cast<int64_t>(base_offset * 8 + *data_bit_offset);
    } else {
      // DWARF 2/3: DW_AT_bit_offset counts from the most significant bit of the storage unit.
      uint64_t storage_bytes = unsigned_attribute(member, DW_AT_byte_size).value_or(unit_bytes);
      int64_t from_msb = signed_attribute(member, DW_AT_bit_offset).value_or(0);
      bit_position = static_cast<int64_t>(layout->offset * 8) +
                     static_cast<int64_t>(storage_bytes * 8) - from_msb - bit_size;
      unit_bytes = storage_bytes > 0 ? storage_bytes : 1;
    }
    if (bit_position < 0) bit_position = 0;
    uint64_t unit_start = (static_cast<uint64_t>(bit_position) / (unit_bytes * 8)) * unit_bytes;
    layout->offset = unit_start;
    layout->bit_offset = static_cast<uint32_t>(bit_position - static_cast<int64_t>(unit_start * 8));
    layout->bit_size = bit_size;
    layout->size = unit_bytes;
    layout->element_size = unit_bytes;
  }

  TypeFacts describe_type(Dwarf_Die* type, const std::string& owner, const std::string& member) {
    TypeFacts facts;
    Dwarf_Die current = *type;
    std::string typedef_name;
    for (int step = 0;; ++step) {
      if (step >= kMaxTypeChain) return facts;
      int tag = dwarf_tag(&current);
      if (tag == DW_TAG_typedef || is_qualifier_tag(tag)) {
        if (tag == DW_TAG_typedef) typedef_name = die_name(&current);
      } else if (tag == DW_TAG_array_type) {
        append_array_dims(&current, &facts.dims);
        typedef_name.clear();  // a typedef of the array does not name its element
      } else {
        break;
      }
      if (!referenced_type(&current, &current)) {
        facts.type_name = "void";
        return facts;
      }
    }
    facts.element_size = aggregate_size(&current);
    int tag = dwarf_tag(&current);
    switch (tag) {
      case DW_TAG_base_type:
        facts.kind = kind_of_base_type(&current);
        facts.type_name = die_name(&current);
        break;
      case DW_TAG_pointer_type:
      case DW_TAG_reference_type:
      case DW_TAG_rvalue_reference_type:
        facts.kind = ValueKind::kPointer;
        facts.type_name = pointee_name(&current, owner, member, 0);
        if (facts.element_size == 0) facts.element_size = 8;
        break;
      case DW_TAG_enumeration_type:
        facts.kind = ValueKind::kEnum;
        facts.type_name = aggregate_name(&current, typedef_name, owner, member);
        if (!is_declaration(&current)) add_enum(&current, facts.type_name);
        break;
      case DW_TAG_structure_type:
      case DW_TAG_class_type:
      case DW_TAG_union_type:
        facts.kind = tag == DW_TAG_union_type ? ValueKind::kUnion : ValueKind::kStruct;
        facts.type_name = aggregate_name(&current, typedef_name, owner, member);
        if (!is_declaration(&current)) pending_structs_.emplace_back(current, facts.type_name);
        break;
      case DW_TAG_subroutine_type:
        facts.type_name = "function";
        break;
      case DW_TAG_ptr_to_member_type:
        facts.type_name = "pointer-to-member";
        break;
      default:
        facts.type_name = die_name(&current);
        break;
    }
    return facts;
  }

  std::string pointee_name(Dwarf_Die* pointer, const std::string& owner, const std::string& member,
                           int depth) {
    Dwarf_Die target_die;
    if (depth > kMaxTypeChain || !referenced_type(pointer, &target_die)) return "void";
    PeeledType target = peel_typedefs(&target_die);
    if (target.is_void) return "void";
    int tag = dwarf_tag(&target.die);
    if (is_aggregate_tag(tag) || tag == DW_TAG_enumeration_type)
      return aggregate_name(&target.die, target.typedef_name, owner, member);
    if (tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type)
      return pointee_name(&target.die, owner, member, depth + 1) + "*";
    if (tag == DW_TAG_subroutine_type) return "function";
    if (tag == DW_TAG_array_type) return "array";
    return die_name(&target.die);
  }

  // The name a struct/union/enum is stored under: qualified tag name, else the
  // typedef that names it, else "(anonymous Owner::member)".
  std::string aggregate_name(Dwarf_Die* die, const std::string& typedef_name,
                             const std::string& owner, const std::string& member) {
    Dwarf_Off offset = dwarf_dieoffset(die);
    auto known = qualified_names_.find(offset);
    if (known != qualified_names_.end()) return known->second;
    std::string name = die_name(die);
    if (!name.empty())
      name = scope_prefix(die) + name;
    else if (!typedef_name.empty())
      name = typedef_name;
    else
      name = "(anonymous " + owner + "::" + member + ")";
    qualified_names_.emplace(offset, name);
    return name;
  }

  // "A::B::" for a type nested in scopes A and B, "" at the top level. Found by
  // descending from the unit through the children whose span holds the DIE.
  std::string scope_prefix(Dwarf_Die* die) {
    Dwarf_Die unit;
    if (dwarf_diecu(die, &unit, nullptr, nullptr) == nullptr) return "";
    Dwarf_Off target = dwarf_dieoffset(die);
    const std::vector<Dwarf_Off>& top_level = top_level_offsets(&unit);
    auto after = std::upper_bound(top_level.begin(), top_level.end(), target);
    if (after == top_level.begin()) return "";
    Dwarf_Off ancestor_offset = *(after - 1);
    if (ancestor_offset == target) return "";
    Dwarf_Die scope;
    if (dwarf_offdie(dwarf_, ancestor_offset, &scope) == nullptr) return "";
    std::string prefix;
    for (int depth = 0; depth < kMaxTypeChain; ++depth) {
      int tag = dwarf_tag(&scope);
      if (!is_aggregate_tag(tag) && tag != DW_TAG_namespace) return "";  // e.g. function-local
      std::string name = die_name(&scope);
      prefix += (name.empty() ? std::string("(anonymous namespace)") : name) + "::";
      Dwarf_Die child;
      if (dwarf_child(&scope, &child) != 0) return "";
      bool descended = false;
      while (true) {
        if (dwarf_dieoffset(&child) == target) return prefix;
        Dwarf_Die sibling;
        bool has_sibling = dwarf_siblingof(&child, &sibling) == 0;
        if (!has_sibling || dwarf_dieoffset(&sibling) > target) {
          scope = child;
          descended = true;
          break;
        }
        child = sibling;
      }
      if (!descended) return "";
    }
    return "";
  }

  const std::vector<Dwarf_Off>& top_level_offsets(Dwarf_Die* unit) {
    std::vector<Dwarf_Off>& offsets = top_level_by_unit_[dwarf_dieoffset(unit)];
    if (!offsets.empty()) return offsets;
    Dwarf_Die child;
    if (dwarf_child(unit, &child) != 0) return offsets;
    do offsets.push_back(dwarf_dieoffset(&child));
    while (dwarf_siblingof(&child, &child) == 0);
    return offsets;
  }

  void add_enum(Dwarf_Die* die, const std::string& name) {
    if (profile_->enums.count(name)) return;
    EnumLayout layout;
    layout.name = name;
    layout.size = unsigned_attribute(die, DW_AT_byte_size).value_or(4);
    bool is_unsigned = false;
    Dwarf_Die underlying;
    if (referenced_type(die, &underlying)) {
      PeeledType base = peel_typedefs(&underlying);
      is_unsigned = !base.is_void && kind_of_base_type(&base.die) == ValueKind::kUnsigned;
    }
    Dwarf_Die child;
    if (dwarf_child(die, &child) == 0) {
      do {
        if (dwarf_tag(&child) != DW_TAG_enumerator) continue;
        std::optional<int64_t> value;
        if (is_unsigned) {
          if (auto raw = unsigned_attribute(&child, DW_AT_const_value))
            value = static_cast<int64_t>(*raw);
        } else {
          value = signed_attribute(&child, DW_AT_const_value);
        }
        // The first name wins for aliases (ncclInt8 before ncclChar).
        if (value) layout.values.emplace(*value, die_name(&child));
      } while (dwarf_siblingof(&child, &child) == 0);
    }
    profile_->enums[name] = std::move(layout);
    unfound_roots_.erase(name);
  }

  Dwarf* dwarf_;
  LayoutProfile* profile_;
  // DWARF name to look for -> profile names to store it under.
  std::unordered_map<std::string, std::vector<std::string>> store_names_;
  std::unordered_set<std::string> enum_roots_;
  std::unordered_set<std::string> unfound_roots_;
  std::unordered_set<std::string> nested_prefixes_;  // "ncclKernelPlanner" for "ncclKernelPlanner::Peer"
  std::unordered_map<Dwarf_Off, std::string> qualified_names_;
  std::unordered_map<Dwarf_Off, std::vector<Dwarf_Off>> top_level_by_unit_;
  std::deque<std::pair<Dwarf_Die, std::string>> pending_structs_;
};

std::string no_dwarf_message(const std::string& path, const ElfFile& file) {
  std::string version = file.nccl_version_string().value_or("unknown");
  return "layout " + path + ": no DWARF debug info (build-id " +
         file.build_id().value_or("none") + ", NCCL " + version +
         ", no separate debug file under /usr/lib/debug/.build-id or "
         "$NCCLSCOPE_DEBUG_FILE_DIRECTORY) and no layout profile for it; make one from an "
         "unstripped library of the same build with `ncclscope layout extract LIB -o "
         "<build-id>.json` and put it in $NCCLSCOPE_PROFILE_PATH or ~/.cache/ncclscope/profiles";
}

// NCCL_VERSION_CODE as nccl.h computes it (2.9 and later): 2.28.9 -> 22809.
std::optional<int64_t> version_code(const std::string& version) {
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(version.c_str(), "%d.%d.%d", &major, &minor, &patch) != 3) return std::nullopt;
  return major * 10000 + minor * 100 + patch;
}

bool covers(const std::vector<std::string>& requested, const std::vector<std::string>& required) {
  return std::all_of(required.begin(), required.end(), [&](const std::string& name) {
    return std::find(requested.begin(), requested.end(), name) != requested.end();
  });
}

void fill_constants(LayoutProfile* profile) {
  if (const StructLayout* comm = profile->find_struct("ncclComm"))
    if (const MemberLayout* channels = comm->find("channels"))
      if (channels->array_dims.size() == 1)
        profile->constants["MAXCHANNELS"] = static_cast<int64_t>(channels->array_dims[0]);
  if (auto code = version_code(profile->nccl_version)) profile->constants["NCCL_VERSION_CODE"] = *code;
}

void fill_symbols(const ElfFile& file, LayoutProfile* profile) {
  for (const auto& [name, symbol] : file.symbols(wanted_symbol_names())) {
    // A TLS symbol's value is an offset in each thread's block, not an address.
    std::string key = symbol.is_tls ? name + kTlsSymbolSuffix : name;
    profile->symbols.emplace(key, symbol.value);
  }
}

// Directories holding .build-id/xx/rest.debug files (gdb's debug-file-directory).
std::vector<std::string> debug_file_directories() {
  const char* configured = std::getenv("NCCLSCOPE_DEBUG_FILE_DIRECTORY");
  std::vector<std::string> dirs = split_colon_list(configured != nullptr ? configured : "");
  dirs.push_back("/usr/lib/debug");
  return dirs;
}

std::optional<std::string> separate_debug_file(const ElfFile& file) {
  std::optional<std::string> build_id = file.build_id();
  if (!build_id || build_id->size() < 4) return std::nullopt;
  for (const std::string& dir : debug_file_directories()) {
    std::string path = dir + "/.build-id/" + build_id->substr(0, 2) + "/" + build_id->substr(2) + ".debug";
    if (::access(path.c_str(), R_OK) != 0) continue;
    try {
      ElfFile candidate(path);
      if (candidate.has_debug_info() && candidate.build_id() == build_id) return path;
    } catch (const BadInput&) {
      // An unreadable candidate is as good as none.
    }
  }
  return std::nullopt;
}

// Corrupt DWARF can describe members outside their struct; such a layout
// must fail here, as the profile reader would reject it, not mislead decoders.
void check_consistency(const std::string& library_path, const LayoutProfile& profile) {
  std::string origin = "dwarf:" + library_path;
  try {
    layout_profile_from_json(layout_profile_to_json(profile), origin);
  } catch (const BadInput& error) {
    std::string detail = error.what();
    std::string prefix = "layout profile " + origin + ": ";
    if (detail.rfind(prefix, 0) == 0) detail = detail.substr(prefix.size());
    throw BadInput("layout " + library_path + ": inconsistent DWARF: " + detail);
  }
}

}  // namespace

LayoutProfile extract_layout_from_dwarf(const std::string& library_path,
                                        const std::vector<std::string>& struct_roots,
                                        const std::vector<std::string>& enum_roots) {
  ElfFile file(library_path);
  // Stripped library: its DWARF may sit in a separate debug file found by build-id.
  std::unique_ptr<ElfFile> debug_file;
  if (!file.has_debug_info()) {
    std::optional<std::string> debug_path = separate_debug_file(file);
    if (!debug_path) throw BadInput(no_dwarf_message(library_path, file));
    debug_file = std::make_unique<ElfFile>(*debug_path);
  }
  const ElfFile& dwarf_file = debug_file ? *debug_file : file;
  LayoutProfile profile;
  profile.build_id = file.build_id().value_or("");
  profile.nccl_version = nccl_version_number(file.nccl_version_string().value_or(""));
  profile.library = library_path;
  profile.source = "dwarf:" + dwarf_file.path();

  Dwarf* dwarf = dwarf_begin_elf(dwarf_file.elf(), DWARF_C_READ, nullptr);
  if (dwarf == nullptr)
    throw BadInput("layout " + dwarf_file.path() + ": cannot read DWARF: " + dwarf_errmsg(-1));
  try {
    DwarfWalker(dwarf, &profile, struct_roots, enum_roots).run();
  } catch (...) {
    dwarf_end(dwarf);
    throw;
  }
  dwarf_end(dwarf);
  fill_symbols(dwarf_file, &profile);
  if (debug_file) fill_symbols(file, &profile);  // .dynsym of the library for what .symtab lacked
  fill_constants(&profile);
  if (covers(struct_roots, required_struct_names()) && covers(enum_roots, required_enum_names()))
    profile.constants[kRootsFingerprintConstant] = required_roots_fingerprint();
  check_consistency(library_path, profile);
  return profile;
}

int64_t required_roots_fingerprint() {
  // FNV-1a over the root names, kept below 2^31 so the JSON value is small and positive.
  uint32_t hash = 2166136261u;
  auto mix = [&hash](const std::string& text) {
    for (unsigned char c : text) hash = (hash ^ c) * 16777619u;
    hash = (hash ^ '\n') * 16777619u;
  };
  for (const std::string& name : required_struct_names()) mix(name);
  mix("--enums--");
  for (const std::string& name : required_enum_names()) mix(name);
  return static_cast<int64_t>(hash & 0x7fffffffu);
}

LayoutProfile extract_layout_from_dwarf(const std::string& library_path) {
  return extract_layout_from_dwarf(library_path, required_struct_names(), required_enum_names());
}

}  // namespace nsc
