// Symbol lookups in one large module: ncclscope's index (built once, then a bisection per
// lookup) against libdwfl's dwfl_module_addrinfo (what eu-stack answers each frame with: a pass
// over the whole table), on the same addresses, checking both give the same names.
//
//   build/bench/symbol_index_bench LIBRARY [LOOKUPS]   (default 200 lookups)
#include <elfutils/libdwfl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "stacks/symbol_index.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

char* debuginfo_path = nullptr;
const Dwfl_Callbacks kOffline = {dwfl_build_id_find_elf, dwfl_standard_find_debuginfo, dwfl_offline_section_address,
                                 &debuginfo_path};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s LIBRARY [LOOKUPS]\n", argv[0]);
    return 64;
  }
  size_t lookups = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 200;
  Dwfl* dwfl = dwfl_begin(&kOffline);
  Dwfl_Module* module = dwfl_report_offline(dwfl, "bench", argv[1], -1);
  dwfl_report_end(dwfl, nullptr, nullptr);
  GElf_Addr bias = 0;
  if (module == nullptr || dwfl_module_getelf(module, &bias) == nullptr) {
    std::fprintf(stderr, "%s: not an ELF file libdwfl can read\n", argv[1]);
    return 2;
  }
  int count = dwfl_module_getsymtab(module);
  std::vector<GElf_Addr> addresses;  // inside symbols spread evenly over the table
  for (int i = 1; count > 1 && addresses.size() < lookups; i += std::max(1, count / static_cast<int>(lookups))) {
    GElf_Sym symbol;
    GElf_Addr address = 0;
    if (dwfl_module_getsym_info(module, i, &symbol, &address, nullptr, nullptr, nullptr) != nullptr && symbol.st_size > 1)
      addresses.push_back(address + symbol.st_size / 2);
  }
  auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const nsc::SymbolIndex> index = nsc::SymbolIndex::build(module);
  double build_s = seconds_since(start);
  std::vector<std::string> ours;
  for (GElf_Addr address : addresses) {
    std::optional<nsc::SymbolHit> hit = index->lookup(address - bias);
    ours.push_back(hit ? hit->name + "+" + std::to_string(hit->offset) : "-");
  }
  double index_s = seconds_since(start);
  start = std::chrono::steady_clock::now();
  size_t differences = 0;
  for (size_t i = 0; i < addresses.size(); ++i) {
    GElf_Off offset = 0;
    GElf_Sym symbol;
    const char* name = dwfl_module_addrinfo(module, addresses[i], &offset, &symbol, nullptr, nullptr, nullptr);
    differences += (name == nullptr ? std::string("-") : std::string(name) + "+" + std::to_string(offset)) != ours[i];
  }
  double libdwfl_s = seconds_since(start);
  std::printf("%s: %d symbols, %zu lookups: index %.1f ms (build %.1f ms), libdwfl %.1f ms, %.1fx; %zu differences\n",
              argv[1], count, addresses.size(), index_s * 1e3, build_s * 1e3, libdwfl_s * 1e3, libdwfl_s / index_s,
              differences);
  dwfl_end(dwfl);
  return differences == 0 ? 0 : 1;
}
