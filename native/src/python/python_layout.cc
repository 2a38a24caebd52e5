#include "python/python_layout.h"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "layout/dwarf_layout.h"
#include "layout/elf_file.h"
#include "util/errors.h"

namespace nsc {

const std::vector<std::string>& python_struct_roots() {
  static const std::vector<std::string> roots = {
      "_PyRuntimeState", "PyInterpreterState", "PyThreadState", "_PyCFrame",
      "_PyInterpreterFrame", "PyCodeObject", "PyASCIIObject", "PyCompactUnicodeObject",
      "PyBytesObject", "PyVarObject", "PyObject"};
  return roots;
}

const std::vector<std::string>& python_enum_roots() {
  static const std::vector<std::string> roots = {"_frameowner"};
  return roots;
}

const std::vector<std::string>& python_symbol_names() {
  static const std::vector<std::string> names = {"_PyRuntime", "Py_Version", "PyCode_Type", "PyUnicode_Type", "PyBytes_Type"};
  return names;
}

std::optional<uint32_t> py_version_in_file(const std::string& path, uint64_t address) {
  ElfFile file(path);
  Elf_Scn* section = nullptr;
  while ((section = elf_nextscn(file.elf(), section)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr || header.sh_type == SHT_NOBITS) continue;
    if (address < header.sh_addr || address + 4 > header.sh_addr + header.sh_size) continue;
    Elf_Data* data = elf_getdata(section, nullptr);
    if (data == nullptr || data->d_buf == nullptr || address - header.sh_addr + 4 > data->d_size)
      return std::nullopt;
    uint32_t value = 0;
    std::memcpy(&value, static_cast<const uint8_t*>(data->d_buf) + (address - header.sh_addr), 4);
    return value;
  }
  return std::nullopt;
}

std::string py_version_text(uint32_t version_hex) {
  std::string text = std::to_string(version_hex >> 24) + "." + std::to_string((version_hex >> 16) & 0xff) +
                     "." + std::to_string((version_hex >> 8) & 0xff);
  unsigned level = (version_hex >> 4) & 0xf, serial = version_hex & 0xf;
  if (level == 0xa) text += "a" + std::to_string(serial);
  else if (level == 0xb) text += "b" + std::to_string(serial);
  else if (level == 0xc) text += "rc" + std::to_string(serial);
  return text;
}

namespace {

// Of these big structs the decoder reads a few members; the rest (the whole runtime's
// nested state, hundreds of structs) would only bloat the profile.
const std::map<std::string, std::set<std::string>>& kept_members() {
  static const std::map<std::string, std::set<std::string>> kept = {
      {"_PyRuntimeState", {"interpreters"}}, {"PyInterpreterState", {"next", "threads"}}};
  return kept;
}

// Keeps the roots (trimmed as above) and the structs they hold by value.
void prune_to_roots(LayoutProfile* profile) {
  for (const auto& entry : kept_members()) {
    auto found = profile->structs.find(entry.first);
    if (found == profile->structs.end()) continue;
    const std::set<std::string>& members = entry.second;  // a lambda may not capture a structured binding (clang 14)
    auto& list = found->second.members;
    list.erase(std::remove_if(list.begin(), list.end(), [&](const MemberLayout& m) { return !members.count(m.name); }),
               list.end());
  }
  std::set<std::string> reachable;
  std::vector<std::string> pending = python_struct_roots();
  while (!pending.empty()) {
    std::string name = pending.back();
    pending.pop_back();
    const StructLayout* layout = profile->find_struct(name);
    if (layout == nullptr || !reachable.insert(name).second) continue;
    for (const MemberLayout& member : layout->members)
      if (member.kind == ValueKind::kStruct || member.kind == ValueKind::kUnion) pending.push_back(member.type_name);
  }
  for (auto it = profile->structs.begin(); it != profile->structs.end();)
    it = reachable.count(it->first) ? std::next(it) : profile->structs.erase(it);
}

}  // namespace

LayoutProfile extract_python_layout(const std::string& dwarf_source, const std::string& interpreter) {
  LayoutProfile profile = extract_layout_from_dwarf(dwarf_source, python_struct_roots(), python_enum_roots());
  prune_to_roots(&profile);
  ElfFile file(interpreter);
  profile.build_id = file.build_id().value_or("");
  if (profile.build_id.empty()) throw BadInput("python layout " + interpreter + ": no GNU build-id");
  profile.library = interpreter;
  profile.nccl_version.clear();
  profile.symbols.clear();  // NCCL's names are none of ours; take the interpreter's own
  for (const auto& [name, symbol] : file.symbols(python_symbol_names())) profile.symbols[name] = symbol.value;
  for (const char* name : {"_PyRuntime", "Py_Version"})
    if (!profile.symbols.count(name))
      throw BadInput("python layout " + interpreter + ": no symbol " + name + " (not a CPython interpreter?)");
  std::optional<uint32_t> version = py_version_in_file(interpreter, profile.symbols.at("Py_Version"));
  if (!version) throw BadInput("python layout " + interpreter + ": Py_Version unreadable in the file");
  profile.constants[kPyVersionHexConstant] = *version;
  for (const std::string& root : {std::string("PyThreadState"), std::string("_PyInterpreterFrame"),
                                  std::string("PyCodeObject")})
    if (profile.find_struct(root) == nullptr)
      throw BadInput("python layout " + dwarf_source + ": DWARF has no " + root);
  return profile;
}

}  // namespace nsc
