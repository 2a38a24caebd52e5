#include "stacks/symbol_index.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "util/phase_times.h"

namespace nsc {
namespace {

constexpr uint32_t kAbsoluteSection = 0xffffffff;  // SHN_ABS and the like: matches its exact address only

uint8_t binding_rank(unsigned char info) {
  switch (GELF_ST_BIND(info)) {
    case STB_GLOBAL: return 3;
    case STB_WEAK: return 2;
    case STB_LOCAL: return 1;
    default: return 0;
  }
}

bool is_code_or_data_symbol(const GElf_Sym& symbol, const char* name) {
  int type = GELF_ST_TYPE(symbol.st_info);
  return name != nullptr && name[0] != '\0' && symbol.st_shndx != SHN_UNDEF && type != STT_SECTION &&
         type != STT_FILE && type != STT_TLS;
}

// Why the file's own .symtab cannot be read, or "" (sound, or none): libdwfl then falls back
// to .dynsym without a word, and a person should know why frames show fewer names.
std::string symtab_problem(Elf* elf) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(scn, &header) == nullptr || header.sh_type != SHT_SYMTAB) continue;
    if (header.sh_entsize != gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT))
      return "entry size " + std::to_string(header.sh_entsize);
    GElf_Shdr names;
    Elf_Scn* names_scn = elf_getscn(elf, header.sh_link);
    if (names_scn == nullptr || gelf_getshdr(names_scn, &names) == nullptr || names.sh_type != SHT_STRTAB)
      return "its string table (section " + std::to_string(header.sh_link) + ") is not one";
    if (elf_getdata(scn, nullptr) == nullptr) return elf_errmsg(-1);
    return "";
  }
  return "";
}

}  // namespace

void SymbolIndex::Pass::seal() {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.value != b.value ? a.value < b.value : a.table_order < b.table_order;
  });
  max_end.resize(entries.size());
  uint64_t highest = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& entry = entries[i];
    uint64_t end = entry.size > UINT64_MAX - entry.value ? UINT64_MAX : entry.value + entry.size;  // corrupt sizes saturate
    highest = std::max(highest, end);
    max_end[i] = highest;
  }
}

// As libdwfl places an address in a section: sections sorted by start (then end), found by
// bisection; a section's end address still belongs to it unless the next section starts there.
uint32_t SymbolIndex::section_of(uint64_t link_address) const {
  size_t low = 0, high = sections_.size();
  while (low < high) {
    size_t middle = (low + high) / 2;
    const Section& section = sections_[middle];
    if (link_address < section.start) {
      high = middle;
    } else if (link_address > section.end) {
      low = middle + 1;
    } else {
      if (link_address == section.end && middle + 1 < sections_.size() && sections_[middle + 1].start == link_address)
        return sections_[middle + 1].index;
      return section.index;
    }
  }
  return 0;
}

std::shared_ptr<const SymbolIndex> SymbolIndex::build(Dwfl_Module* module, size_t max_symbols) {
  auto index = std::make_shared<SymbolIndex>();
  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(module, &bias);
  int count = dwfl_module_getsymtab(module);
  if (elf == nullptr) return index;  // no file: frames stay unsymbolized
  if (std::string problem = symtab_problem(elf); !problem.empty())
    index->note_ = ".symtab unreadable (" + problem + "): " + (count > 0 ? "only .dynsym's names used" : "no names");
  if (count <= 0) return index;
  if (static_cast<size_t>(count) > max_symbols) {
    index->refused_ = "symbol table of " + std::to_string(count) + " entries (over " +
                      std::to_string(max_symbols) + "): not read";
    return index;
  }
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(scn, &header) != nullptr && (header.sh_flags & SHF_ALLOC))
      index->sections_.push_back({header.sh_addr, header.sh_addr + header.sh_size, static_cast<uint32_t>(elf_ndxscn(scn))});
  }
  std::sort(index->sections_.begin(), index->sections_.end(), [](const Section& a, const Section& b) {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  });
  int first_global = dwfl_module_getsymtab_first_global(module);
  int global_from = std::max(first_global, 1);
  // Sized once: growing vectors of 10^6 entries cost more (copies, page faults) than the sort.
  index->local_.entries.reserve(static_cast<size_t>(std::max(0, std::min(global_from, count) - 1)));
  index->global_.entries.reserve(static_cast<size_t>(count - std::min(global_from, count)));
  index->names_.reserve(static_cast<size_t>(count) * 16);
  size_t nameless = 0;  // entries whose name lies outside the string table: a corrupt table
  for (int i = 1; i < count; ++i) {
    GElf_Sym symbol;
    GElf_Addr address = 0;
    GElf_Word section_index = 0;
    const char* name = dwfl_module_getsym_info(module, i, &symbol, &address, &section_index, nullptr, nullptr);
    nameless += name == nullptr;
    if (!is_code_or_data_symbol(symbol, name) || section_index == static_cast<GElf_Word>(-1)) continue;
    uint64_t value = address - bias;
    Entry entry{value, symbol.st_size, static_cast<uint32_t>(i), static_cast<uint32_t>(index->names_.size()),
                section_index >= SHN_LORESERVE && section_index != SHN_XINDEX ? kAbsoluteSection : index->section_of(value),
                binding_rank(symbol.st_info)};
    if (index->names_.size() > UINT32_MAX - 4096) {
      index->refused_ = "symbol names over 4 GiB: not read";
      index->global_ = {};
      index->local_ = {};
      return index;
    }
    index->names_.append(name).push_back('\0');
    (i >= global_from ? index->global_ : index->local_).entries.push_back(entry);
  }
  index->global_.seal();
  index->local_.seal();
  if (nameless > 0 && index->note_.empty())
    index->note_ = std::to_string(nameless) + " of " + std::to_string(count - 1) +
                   " symbols name no string (a corrupt table): left out";
  return index;
}

// libdwfl's rule for a sized symbol that contains the address, replayed over the candidates in
// its table order: a later one wins when it starts higher or is better bound; at the same start
// when it is smaller and no worse bound.
SymbolIndex::PassResult SymbolIndex::search(const Pass& pass, uint64_t address) const {
  PassResult result;
  auto after = std::upper_bound(pass.entries.begin(), pass.entries.end(), address,
                                [](uint64_t at, const Entry& entry) { return at < entry.value; });
  size_t below = static_cast<size_t>(after - pass.entries.begin());  // entries [0, below) start at or below
  if (below == 0) return result;
  result.max_end = pass.max_end[below - 1];
  std::vector<const Entry*> containing;
  for (size_t i = below, seen = 0; i > 0 && pass.max_end[i - 1] > address && seen < kMaxCandidates; --i, ++seen) {
    const Entry& entry = pass.entries[i - 1];
    if (entry.size != 0 && address - entry.value < entry.size) containing.push_back(&entry);
  }
  std::sort(containing.begin(), containing.end(),
            [](const Entry* a, const Entry* b) { return a->table_order < b->table_order; });
  for (const Entry* candidate : containing) {
    const Entry* best = result.sized;
    if (best == nullptr || best->value < candidate->value || best->binding_rank < candidate->binding_rank ||
        (best->value == candidate->value && best->size > candidate->size && best->binding_rank <= candidate->binding_rank))
      result.sized = candidate;
  }
  // A label can only be the answer at the highest start below the address, as the last of the
  // table's labels there (libdwfl keeps replacing it), and in the address's own section.
  uint64_t top = pass.entries[below - 1].value;
  uint32_t address_section = section_of(address);
  for (size_t i = below; i > 0 && pass.entries[i - 1].value == top; --i) {
    const Entry& entry = pass.entries[i - 1];
    bool same_section = entry.section == kAbsoluteSection ? entry.value == address : entry.section == address_section;
    if (entry.size == 0 && same_section && (result.sizeless == nullptr || result.sizeless->table_order < entry.table_order))
      result.sizeless = &entry;
  }
  return result;
}

std::optional<SymbolHit> SymbolIndex::lookup(uint64_t link_address) const {
  PassResult globals = search(global_, link_address);
  if (globals.sized != nullptr) return SymbolHit{name_of(*globals.sized), link_address - globals.sized->value};
  bool exact_label = globals.sizeless != nullptr && globals.sizeless->value == link_address &&
                     globals.sizeless->value >= globals.max_end;
  PassResult locals;
  if (!exact_label) {
    locals = search(local_, link_address);
    if (locals.sized != nullptr) return SymbolHit{name_of(*locals.sized), link_address - locals.sized->value};
  }
  const Entry* label = globals.sizeless;
  if (locals.sizeless != nullptr && (label == nullptr || locals.sizeless->value >= label->value)) label = locals.sizeless;
  if (label == nullptr || label->value < std::max(globals.max_end, locals.max_end)) return std::nullopt;
  return SymbolHit{name_of(*label), link_address - label->value};
}

// One slot per build-id: the first process to need it builds it, others of the same build wait
// for that build alone (ranks unwinding concurrently), other build-ids are not held up.
struct SymbolIndexCache::Slot {
  std::once_flag built;
  std::shared_ptr<const SymbolIndex> index;
};

struct SymbolIndexCache::State {
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<Slot>> by_build_id;
  std::map<std::string, size_t> builds;
};

SymbolIndexCache::SymbolIndexCache() : state_(std::make_shared<State>()) {}

SymbolIndexCache& SymbolIndexCache::run_wide() {
  static SymbolIndexCache cache;
  return cache;
}

std::shared_ptr<const SymbolIndex> SymbolIndexCache::index_for(const std::string& build_id, Dwfl_Module* module) {
  // Without its file (not found here, or rejected for its build-id) a module has no symbols in
  // this process; another process, or a later request with a sysroot, may find the file.
  GElf_Addr bias = 0;
  if (build_id.empty() || dwfl_module_getelf(module, &bias) == nullptr) return SymbolIndex::build(module);
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    std::shared_ptr<Slot>& entry = state_->by_build_id[build_id];
    if (!entry) entry = std::make_shared<Slot>();
    slot = entry;
  }
  std::call_once(slot->built, [&] {
    const char* name = dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    PhaseSubject subject(name != nullptr ? name : build_id);
    PhaseTimer timer("stacks.index_build");
    slot->index = SymbolIndex::build(module);
    std::lock_guard<std::mutex> lock(state_->mutex);
    ++state_->builds[build_id];
  });
  return slot->index;
}

size_t SymbolIndexCache::builds_of(const std::string& build_id) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto found = state_->builds.find(build_id);
  return found == state_->builds.end() ? 0 : found->second;
}

}  // namespace nsc
