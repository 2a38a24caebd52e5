// `ncclscope layout`: extract, show and locate layout profiles of libnccl builds.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/options.h"
#include "layout/dwarf_layout.h"
#include "layout/elf_file.h"
#include "layout/header_profile.h"
#include "layout/layout_profile.h"
#include "layout/profile_store.h"
#include "python/python_layout.h"
#include "torch/torch_layout.h"
#include "util/errors.h"
#include "util/input_file.h"
#include "util/strings.h"

namespace nsc::cli {
namespace {

const char kLayoutUsage[] =
    "usage: ncclscope layout extract LIB -o FILE.json [--root TYPE]... [--enum ENUM]... [--cache] [--headers]\n"
    "       ncclscope layout show LIB|FILE.json [STRUCT|ENUM] [--json] [--dwarf] [--profile-path D:D]\n"
    "       ncclscope layout dirs [--profile-path D:D]\n"
    "       ncclscope layout python DWARF_FILE --interpreter PYTHON -o FILE.json\n"
    "       ncclscope layout torch DWARF_FILE --torch-version V (--libtorch LIB | --libtorch-symbols F\n"
    "                              --libtorch-headers F | --from-source) -o FILE.json\n"
    "  extract         read struct layouts from the DWARF of LIB into a profile (<build-id>.json\n"
    "                  in a profile directory makes a stripped library of that build decodable);\n"
    "                  -o - writes to stdout; --cache also stores it in the user cache;\n"
    "                  --root adds a type beyond the ones the decoders need (--enum an enum); --headers: LIB is\n"
    "                  NCCL's headers built with -g (scripts/nccl-layout-from-headers.sh), the\n"
    "                  profile is keyed by NCCL version (nccl-<version>.headers.json), not build-id\n"
    "  show            a profile, or one struct as a ptype/o-like table (offset, size, member);\n"
    "                  for LIB the profile of its build-id is used first, --dwarf forces DWARF\n"
    "  dirs            the profile search path, in order\n"
    "  python          a CPython 3.11/3.12 profile: structs from DWARF_FILE (the interpreter with\n"
    "                  its debug file, or native/src/python/layout_tu.c built -g against that\n"
    "                  version's headers), build-id, symbols and Py_Version from PYTHON\n"
    "  torch           a PyTorch flight recorder profile: structs from DWARF_FILE (a linked ELF of\n"
    "                  native/src/torch/recorder_layout_tu.cpp built -g against the wheel's headers:\n"
    "                  scripts/torch-layout-from-tu.sh), build-id and the recorder's singleton symbol\n"
    "                  from libtorch_cuda.so (or `readelf -sW` / `readelf -n` text of it); store it as\n"
    "                  native/profiles/torch/<build-id>.json; --from-source: a TU built from a release\n"
    "                  tag's source tree (scripts/torch-layout-from-source.sh), no build-id nor symbol,\n"
    "                  stored as native/profiles/torch/torch-X.Y.Z.json and chosen by torch version\n";

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<std::string> profile_dirs_from(const ParsedOptions& options) {
  std::vector<std::string> dirs;
  for (const auto& list : options.all("--profile-path"))
    for (const auto& dir : split_colon_list(list)) dirs.push_back(dir);
  return dirs;
}

std::string summary_line(const LayoutProfile& profile) {
  std::ostringstream line;
  line << profile.structs.size() << " structs, " << profile.enums.size() << " enums, "
       << profile.symbols.size() << " symbols; NCCL "
       << (profile.nccl_version.empty() ? "unknown" : profile.nccl_version) << ", build-id "
       << (profile.build_id.empty() ? "none" : profile.build_id);
  return line.str();
}

int run_extract(const ParsedOptions& options) {
  if (options.positional.size() != 2) throw UsageError("extract takes one library");
  std::string output = options.value("-o", options.value("--output"));
  if (output.empty() && !options.has("--cache")) throw UsageError("extract needs -o FILE.json");
  const std::string& library = options.positional[1];
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> roots = required_struct_names();
  for (const auto& extra : options.all("--root")) roots.push_back(extra);
  std::vector<std::string> enums = required_enum_names();
  for (const auto& extra : options.all("--enum")) enums.push_back(extra);
  LayoutProfile profile = extract_layout_from_dwarf(library, roots, enums);
  if (options.has("--headers")) {
    if (options.has("--cache")) throw UsageError("--headers profiles are keyed by version: use -o");
    profile = as_header_profile(std::move(profile), nccl_version_string(library).value_or(""));
  }
  double elapsed = seconds_since(start);
  if (output == "-") {
    std::cout << format_layout_profile(profile);
  } else if (!output.empty()) {
    write_layout_profile(profile, output);
    std::fprintf(stderr, "ncclscope layout: wrote %s (%s) in %.3f s\n",
                 escape_for_terminal(output).c_str(), summary_line(profile).c_str(), elapsed);
  }
  if (options.has("--cache"))
    std::fprintf(stderr, "ncclscope layout: cached as %s\n",
                 escape_for_terminal(save_to_cache(profile)).c_str());
  return kExitOk;
}

bool is_elf_file(const std::string& path) {
  return read_file_head(path, "layout " + path, 4) == "\x7f" "ELF";
}

std::string type_text(const MemberLayout& member) {
  switch (member.kind) {
    case ValueKind::kStruct:
      return "struct " + member.type_name;
    case ValueKind::kUnion:
      return "union " + member.type_name;
    case ValueKind::kEnum:
      return "enum " + member.type_name;
    case ValueKind::kPointer:
      return member.type_name + " *";
    default:
      return member.type_name.empty() ? "?" : member.type_name;
  }
}

std::string declarator_text(const MemberLayout& member) {
  std::string text = type_text(member);
  if (text.back() != '*') text += ' ';
  text += member.name;
  for (uint64_t dim : member.array_dims) text += "[" + std::to_string(dim) + "]";
  if (member.bit_size != 0) text += " : " + std::to_string(member.bit_size);
  return text + ";";
}

// Like gdb's ptype/o: "/* offset | size */ declaration", one level deep.
void print_struct_table(const StructLayout& layout) {
  std::printf("/* offset      |    size */  type = %s %s {\n", layout.is_union ? "union" : "struct",
              escape_for_terminal(layout.name).c_str());
  for (const MemberLayout& member : layout.members) {
    std::string offset = std::to_string(member.offset);
    if (member.bit_size != 0) offset += ":" + std::to_string(member.bit_offset);
    std::printf("/* %6s      | %7llu */    %s\n", offset.c_str(),
                static_cast<unsigned long long>(member.size),
                escape_for_terminal(declarator_text(member)).c_str());
  }
  std::printf("\n                               /* total size (bytes): %7llu */\n"
              "                             }\n",
              static_cast<unsigned long long>(layout.size));
}

void print_enum_table(const EnumLayout& layout) {
  std::printf("enum %s (%llu bytes) {\n", escape_for_terminal(layout.name).c_str(),
              static_cast<unsigned long long>(layout.size));
  for (const auto& [value, name] : layout.values)
    std::printf("  %8lld  %s\n", static_cast<long long>(value), escape_for_terminal(name).c_str());
  std::printf("}\n");
}

void print_profile_summary(const LayoutProfile& profile) {
  std::printf("layout of %s\n", escape_for_terminal(profile.library).c_str());
  std::printf("  source        %s\n", escape_for_terminal(profile.source).c_str());
  std::printf("  build-id      %s\n", profile.build_id.c_str());
  std::printf("  nccl version  %s\n", escape_for_terminal(profile.nccl_version).c_str());
  std::printf("structs (%zu):\n", profile.structs.size());
  for (const auto& [name, layout] : profile.structs)
    std::printf("  %10llu  %s%s (%zu members)\n", static_cast<unsigned long long>(layout.size),
                layout.is_union ? "union " : "", escape_for_terminal(name).c_str(),
                layout.members.size());
  std::printf("enums (%zu):\n", profile.enums.size());
  for (const auto& [name, layout] : profile.enums)
    std::printf("  %s (%zu values)\n", escape_for_terminal(name).c_str(), layout.values.size());
  std::printf("symbols (%zu):\n", profile.symbols.size());
  for (const auto& [name, value] : profile.symbols)
    std::printf("  %-32s %s\n", escape_for_terminal(name).c_str(), hex(value).c_str());
  std::printf("constants (%zu):\n", profile.constants.size());
  for (const auto& [name, value] : profile.constants)
    std::printf("  %-32s %lld\n", escape_for_terminal(name).c_str(), static_cast<long long>(value));
}

LayoutProfile load_for_show(const std::string& input, const std::string& type_name,
                            const ParsedOptions& options) {
  if (!is_elf_file(input)) return read_layout_profile(input);
  if (options.has("--dwarf")) {
    std::vector<std::string> roots = required_struct_names();
    if (!type_name.empty()) roots.push_back(type_name);
    return extract_layout_from_dwarf(input, roots, required_enum_names());
  }
  std::string why;
  LayoutProfile profile = load_layout_for_library(input, "", profile_dirs_from(options), &why);
  bool has_type = type_name.empty() || profile.find_struct(type_name) || profile.find_enum(type_name);
  if (!has_type && has_debug_info(input)) {
    // Not a decoder type: read it from the DWARF on demand.
    std::vector<std::string> roots = {type_name};
    return extract_layout_from_dwarf(input, roots, {type_name});
  }
  return profile;
}

int run_show(const ParsedOptions& options) {
  if (options.positional.size() < 2 || options.positional.size() > 3)
    throw UsageError("show takes LIB|FILE.json and an optional STRUCT");
  const std::string& input = options.positional[1];
  std::string type_name = options.positional.size() == 3 ? options.positional[2] : "";
  LayoutProfile profile = load_for_show(input, type_name, options);
  bool json_output = options.has("--json");
  if (type_name.empty()) {
    if (json_output) std::cout << format_layout_profile(profile);
    else print_profile_summary(profile);
    return kExitOk;
  }
  if (const StructLayout* layout = profile.find_struct(type_name)) {
    if (json_output) {
      LayoutProfile only_one;
      only_one.structs[type_name] = *layout;
      std::cout << layout_profile_to_json(only_one)["structs"][type_name].dump(1) << "\n";
    } else {
      print_struct_table(*layout);
    }
    return kExitOk;
  }
  if (const EnumLayout* layout = profile.find_enum(type_name)) {
    if (json_output) {
      LayoutProfile only_one;
      only_one.enums[type_name] = *layout;
      std::cout << layout_profile_to_json(only_one)["enums"][type_name].dump(1) << "\n";
    } else {
      print_enum_table(*layout);
    }
    return kExitOk;
  }
  throw BadInput("layout " + input + ": no struct or enum named " + type_name);
}

int run_python(const ParsedOptions& options) {
  if (options.positional.size() != 2) throw UsageError("python takes one DWARF file");
  std::string interpreter = options.value("--interpreter");
  std::string output = options.value("-o", options.value("--output"));
  if (interpreter.empty() || output.empty()) throw UsageError("python needs --interpreter PYTHON and -o FILE.json");
  auto start = std::chrono::steady_clock::now();
  LayoutProfile profile = extract_python_layout(options.positional[1], interpreter);
  double elapsed = seconds_since(start);
  if (output == "-") {
    std::cout << format_layout_profile(profile);
    return kExitOk;
  }
  write_layout_profile(profile, output);
  std::fprintf(stderr, "ncclscope layout: wrote %s (CPython %s, %zu structs, build-id %s) in %.3f s\n",
               escape_for_terminal(output).c_str(),
               py_version_text(static_cast<uint32_t>(profile.constants.at(kPyVersionHexConstant))).c_str(),
               profile.structs.size(), profile.build_id.c_str(), elapsed);
  return kExitOk;
}

int run_torch(const ParsedOptions& options) {
  if (options.positional.size() != 2) throw UsageError("torch takes one DWARF file");
  std::string output = options.value("-o", options.value("--output"));
  if (output.empty()) throw UsageError("torch needs -o FILE.json");
  LibtorchFacts facts;
  facts.library = options.value("--libtorch");
  facts.symbols_text = options.value("--libtorch-symbols");
  facts.headers_text = options.value("--libtorch-headers");
  facts.torch_version = options.value("--torch-version");
  facts.from_source = options.has("--from-source");
  if (facts.from_source && !(facts.library.empty() && facts.symbols_text.empty() && facts.headers_text.empty()))
    throw UsageError("torch --from-source takes no --libtorch* facts (a source tree has no library)");
  auto start = std::chrono::steady_clock::now();
  LayoutProfile profile = extract_torch_layout(options.positional[1], facts);
  double elapsed = seconds_since(start);
  if (output == "-") {
    std::cout << format_layout_profile(profile);
    return kExitOk;
  }
  write_layout_profile(profile, output);
  std::fprintf(stderr, "ncclscope layout: wrote %s (torch %s, %zu structs, libtorch_cuda build-id %s) in %.3f s\n",
               escape_for_terminal(output).c_str(), escape_for_terminal(torch_version_of_profile(profile)).c_str(),
               profile.structs.size(), profile.build_id.c_str(), elapsed);
  return kExitOk;
}

int run_dirs(const ParsedOptions& options) {
  for (const std::string& dir : profile_search_dirs(profile_dirs_from(options)))
    std::printf("%s\n", escape_for_terminal(dir).c_str());
  return kExitOk;
}

}  // namespace

int run_layout_command(const std::vector<std::string>& args) {
  return run_guarded("layout", kLayoutUsage, [&]() -> int {
    ParsedOptions options = parse_options(args, {"-o", "--output", "--root", "--enum", "--profile-path", "--interpreter",
                                           "--libtorch", "--libtorch-symbols", "--libtorch-headers", "--torch-version"},
                                          {"--json", "--dwarf", "--cache", "--headers", "--from-source", "--help", "-h"});
    if (options.has("--help") || options.has("-h")) {
      std::fputs(kLayoutUsage, stdout);
      return kExitOk;
    }
    if (options.positional.empty()) throw UsageError("missing subcommand");
    const std::string& subcommand = options.positional[0];
    if (subcommand == "extract") return run_extract(options);
    if (subcommand == "show") return run_show(options);
    if (subcommand == "dirs") return run_dirs(options);
    if (subcommand == "python") return run_python(options);
    if (subcommand == "torch") return run_torch(options);
    throw UsageError("unknown subcommand '" + subcommand + "'");
  });
}

}  // namespace nsc::cli
