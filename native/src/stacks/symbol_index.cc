#include "stacks/symbol_index.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "util/file_identity.h"
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

// Entries are added in table order: a stable sort by value orders them as libdwfl's tie rules
// read them (value, then table order). An LSD radix sort, 11 bits a pass: 3 passes for a
// library's addresses, against std::sort's 40 % of an index build.
void SymbolIndex::Pass::seal() {
  uint64_t bits = 0;
  for (const Entry& entry : entries) bits |= entry.value;
  std::vector<Entry, BulkAllocator<Entry>> scratch(entries.size());
  constexpr int kDigitBits = 11;
  for (int shift = 0; shift < 64 && (bits >> shift) != 0; shift += kDigitBits) {
    std::vector<size_t> next((size_t{1} << kDigitBits) + 1, 0);
    for (const Entry& entry : entries) ++next[((entry.value >> shift) & ((1u << kDigitBits) - 1)) + 1];
    for (size_t digit = 1; digit < next.size(); ++digit) next[digit] += next[digit - 1];
    for (const Entry& entry : entries) scratch[next[(entry.value >> shift) & ((1u << kDigitBits) - 1)]++] = entry;
    entries.swap(scratch);
  }
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

// The index's own read-only mapping of a module's main file: its .strtab holds the names.
struct SymbolIndex::MappedFile {
  int fd = -1;
  Elf* elf = nullptr;
  const Elf64_Sym* symbols = nullptr;
  size_t count = 0;
  const Elf32_Word* extended_sections = nullptr;  // SHT_SYMTAB_SHNDX, when the table has one
  size_t extended_count = 0;
  const char* names = nullptr;
  size_t names_size = 0;
  ~MappedFile() {
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) close(fd);
  }
};

class SymbolIndex::Recipe {
 public:
  std::shared_ptr<const SymbolIndex> done;  // read through libdwfl, or refused
  std::shared_ptr<MappedFile> file;
  std::string path;
  size_t first_global = 0;
  uint64_t bias = 0;
};

namespace {

const Elf_Data* section_data(Elf* elf, size_t index, GElf_Shdr* header) {
  Elf_Scn* scn = elf_getscn(elf, index);
  if (scn == nullptr || gelf_getshdr(scn, header) == nullptr) return nullptr;
  Elf_Data* data = elf_getdata(scn, nullptr);
  return data != nullptr && data->d_buf != nullptr ? data : nullptr;
}

// Maps a mapped file range's pages in one call (Linux 5.14+; older kernels fault them one by one):
// the index reads the whole .symtab.
void populate(const void* start, size_t size) {
  auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t from = reinterpret_cast<uintptr_t>(start) & ~(page - 1);
  uintptr_t to = reinterpret_cast<uintptr_t>(start) + size;
  madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_READ);
}

// `path`'s .symtab, mapped, when it is the table libdwfl reads for the module: 64-bit native,
// the same entry count and first global, the same name and value at a few entries (libdwfl
// takes the main file's .symtab whenever it is sound). Null otherwise.
std::shared_ptr<SymbolIndex::MappedFile> map_symtab(Dwfl_Module* module, const char* path, int count) {
  auto file = std::make_shared<SymbolIndex::MappedFile>();
  file->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (file->fd < 0) return nullptr;
  file->elf = elf_begin(file->fd, ELF_C_READ_MMAP, nullptr);
  const char* ident = file->elf != nullptr ? elf_getident(file->elf, nullptr) : nullptr;
  if (ident == nullptr || elf_kind(file->elf) != ELF_K_ELF || ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB)
    return nullptr;
  size_t symtab_index = 0;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(file->elf, scn)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(scn, &header) == nullptr) continue;
    if (header.sh_type == SHT_SYMTAB) symtab_index = elf_ndxscn(scn);
  }
  GElf_Shdr symtab, strtab;
  const Elf_Data* symbols = symtab_index ? section_data(file->elf, symtab_index, &symtab) : nullptr;
  if (symbols == nullptr || symtab.sh_entsize != sizeof(Elf64_Sym) || symbols->d_size / sizeof(Elf64_Sym) != static_cast<size_t>(count) ||
      static_cast<int>(symtab.sh_info) != dwfl_module_getsymtab_first_global(module))
    return nullptr;
  const Elf_Data* names = section_data(file->elf, symtab.sh_link, &strtab);
  if (names == nullptr || strtab.sh_type != SHT_STRTAB || names->d_size > UINT32_MAX) return nullptr;
  populate(symbols->d_buf, symbols->d_size);
  file->symbols = static_cast<const Elf64_Sym*>(symbols->d_buf);
  file->count = static_cast<size_t>(count);
  file->names = static_cast<const char*>(names->d_buf);
  file->names_size = names->d_size;
  while ((scn = elf_nextscn(file->elf, scn)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(scn, &header) == nullptr || header.sh_type != SHT_SYMTAB_SHNDX || header.sh_link != symtab_index) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || data->d_buf == nullptr) return nullptr;
    file->extended_sections = static_cast<const Elf32_Word*>(data->d_buf);
    file->extended_count = data->d_size / sizeof(Elf32_Word);
  }
  for (int i : {1, count / 2, count - 1}) {  // the same table as libdwfl's: spot checks
    if (i < 1 || i >= count) continue;
    GElf_Sym symbol;
    GElf_Addr address = 0;
    const char* name = dwfl_module_getsym_info(module, i, &symbol, &address, nullptr, nullptr, nullptr);
    const Elf64_Sym& mine = file->symbols[i];
    bool same_name = name == nullptr ? mine.st_name >= file->names_size
                                     : mine.st_name < file->names_size && std::strcmp(name, file->names + mine.st_name) == 0;
    if (!same_name || symbol.st_value != mine.st_value || symbol.st_size != mine.st_size) return nullptr;
  }
  return file;
}

}  // namespace

// Entries whose name lies outside the string table: a corrupt table, said once.
void SymbolIndex::note_nameless(size_t nameless, size_t symbols) {
  if (nameless > 0 && note_.empty())
    note_ = std::to_string(nameless) + " of " + std::to_string(symbols) + " symbols name no string (a corrupt table): left out";
}

void SymbolIndex::read_sections(Elf* elf) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(scn, &header) != nullptr && (header.sh_flags & SHF_ALLOC))
      sections_.push_back({header.sh_addr, header.sh_addr + header.sh_size, static_cast<uint32_t>(elf_ndxscn(scn))});
  }
  std::sort(sections_.begin(), sections_.end(), [](const Section& a, const Section& b) {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  });
}

// libdwfl's reading of a symbol (__libdwfl_getsym) replayed on the mapped table: which entries
// it answers with, and their link-time values (an SHN_ABS or SHN_COMMON value is taken as an
// address, as libdwfl does). An empty name is told at lookup (has_name): no name is read here.
void SymbolIndex::read_mapped_symtab(size_t first_global, uint64_t bias) {
  const MappedFile& file = *mapped_;
  size_t section_count = 0;
  elf_getshdrnum(file.elf, &section_count);
  std::vector<char> allocated(section_count, 0);  // a section index past the table counts as allocated
  for (size_t i = 0; i < section_count; ++i) {
    GElf_Shdr header;
    Elf_Scn* scn = elf_getscn(file.elf, i);
    allocated[i] = scn == nullptr || gelf_getshdr(scn, &header) == nullptr || (header.sh_flags & SHF_ALLOC);
  }
  size_t global_from = std::max<size_t>(first_global, 1);
  local_.entries.reserve(std::min(global_from, file.count) - 1);
  global_.entries.reserve(file.count - std::min(global_from, file.count));
  size_t nameless = 0;
  for (size_t i = 1; i < file.count; ++i) {
    const Elf64_Sym& symbol = file.symbols[i];
    if (symbol.st_name >= file.names_size) {
      ++nameless;
      continue;
    }
    int type = ELF64_ST_TYPE(symbol.st_info);
    if (symbol.st_shndx == SHN_UNDEF || type == STT_SECTION || type == STT_FILE ||
        type == STT_TLS)
      continue;
    uint32_t section = symbol.st_shndx;
    if (section == SHN_XINDEX) section = i < file.extended_count ? file.extended_sections[i] : 0;
    bool in_table = symbol.st_shndx == SHN_XINDEX || symbol.st_shndx < SHN_LORESERVE;
    if (in_table && section < section_count && !allocated[section]) continue;  // libdwfl: not an address
    bool taken_as_address = symbol.st_shndx == SHN_ABS || symbol.st_shndx == SHN_COMMON;
    uint64_t value = taken_as_address ? symbol.st_value - bias : symbol.st_value;
    uint32_t label_section = 0;
    if (symbol.st_size == 0)
      label_section = section >= SHN_LORESERVE && section != SHN_XINDEX ? kAbsoluteSection : section_of(value);
    Entry entry{value, symbol.st_size, static_cast<uint32_t>(i), symbol.st_name, label_section, binding_rank(symbol.st_info)};
    (i >= global_from ? global_ : local_).entries.push_back(entry);
  }
  note_nameless(nameless, file.count - 1);
}

void SymbolIndex::read_through_libdwfl(Dwfl_Module* module, int count, uint64_t bias) {
  int first_global = dwfl_module_getsymtab_first_global(module);
  int global_from = std::max(first_global, 1);
  // Sized once: growing vectors of 10^6 entries cost more (copies, page faults) than the sort.
  local_.entries.reserve(static_cast<size_t>(std::max(0, std::min(global_from, count) - 1)));
  global_.entries.reserve(static_cast<size_t>(count - std::min(global_from, count)));
  names_.reserve(static_cast<size_t>(count) * 16);
  size_t nameless = 0;  // entries whose name lies outside the string table: a corrupt table
  for (int i = 1; i < count; ++i) {
    GElf_Sym symbol;
    GElf_Addr address = 0;
    GElf_Word section_index = 0;
    const char* name = dwfl_module_getsym_info(module, i, &symbol, &address, &section_index, nullptr, nullptr);
    nameless += name == nullptr;
    if (!is_code_or_data_symbol(symbol, name) || section_index == static_cast<GElf_Word>(-1)) continue;
    uint64_t value = address - bias;
    uint32_t label_section = 0;
    if (symbol.st_size == 0)
      label_section = section_index >= SHN_LORESERVE && section_index != SHN_XINDEX ? kAbsoluteSection : section_of(value);
    Entry entry{value, symbol.st_size, static_cast<uint32_t>(i), static_cast<uint32_t>(names_.size()), label_section,
                binding_rank(symbol.st_info)};
    if (names_.size() > UINT32_MAX - 4096) {
      refused_ = "symbol names over 4 GiB: not read";
      global_ = {};
      local_ = {};
      return;
    }
    names_.append(name).push_back('\0');
    (i >= global_from ? global_ : local_).entries.push_back(entry);
  }
  note_nameless(nameless, static_cast<size_t>(count - 1));
}

std::shared_ptr<SymbolIndex::Recipe> SymbolIndex::prepare(Dwfl_Module* module, size_t max_symbols) {
  auto recipe = std::make_shared<Recipe>();
  auto index = std::make_shared<SymbolIndex>();
  recipe->done = index;
  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(module, &bias);
  int count = dwfl_module_getsymtab(module);
  if (elf == nullptr) return recipe;  // no file: frames stay unsymbolized
  std::string problem = symtab_problem(elf);
  if (!problem.empty())
    index->note_ = ".symtab unreadable (" + problem + "): " + (count > 0 ? "only .dynsym's names used" : "no names");
  if (count <= 0) return recipe;
  if (static_cast<size_t>(count) > max_symbols) {
    index->refused_ = "symbol table of " + std::to_string(count) + " entries (over " +
                      std::to_string(max_symbols) + "): not read";
    return recipe;
  }
  const char* main_file = nullptr;
  dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, &main_file, nullptr);
  if (problem.empty() && main_file != nullptr)
    if (std::shared_ptr<MappedFile> file = map_symtab(module, main_file, count)) {
      recipe->done.reset();
      recipe->file = std::move(file);
      recipe->path = main_file;
      recipe->first_global = static_cast<size_t>(dwfl_module_getsymtab_first_global(module));
      recipe->bias = bias;
      return recipe;
    }
  const char* name = dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  PhaseSubject subject(name != nullptr ? name : "");
  PhaseTimer timer("stacks.index_build");
  index->read_sections(elf);
  index->read_through_libdwfl(module, count, bias);
  index->global_.seal();
  index->local_.seal();
  return recipe;
}

std::shared_ptr<const SymbolIndex> SymbolIndex::finish(Recipe& recipe) {
  if (recipe.done) return recipe.done;
  PhaseSubject subject(recipe.path);
  PhaseTimer timer("stacks.index_build");
  auto index = std::make_shared<SymbolIndex>();
  index->mapped_ = recipe.file;
  index->mapped_names_ = recipe.file->names;
  index->mapped_names_size_ = recipe.file->names_size;
  index->read_sections(recipe.file->elf);
  index->read_mapped_symtab(recipe.first_global, recipe.bias);
  index->global_.seal();
  index->local_.seal();
  return index;
}

std::shared_ptr<const SymbolIndex> SymbolIndex::build(Dwfl_Module* module, size_t max_symbols) {
  return finish(*prepare(module, max_symbols));
}

std::string SymbolIndex::name_of(const Entry& entry) const {
  const char* base = mapped_names_ != nullptr ? mapped_names_ : names_.c_str();
  size_t size = mapped_names_ != nullptr ? mapped_names_size_ : names_.size();
  const char* name = base + entry.name_offset;
  return std::string(name, strnlen(name, size - entry.name_offset));  // a table's last name may lack its NUL
}

// libdwfl's rule for a sized symbol that contains the address, replayed over the candidates in
// its table order: a later one wins when it starts higher or is better bound; at the same start
// when it is smaller and no worse bound.
SymbolIndex::PassResult SymbolIndex::search(const Pass& pass, uint64_t address) const {
  PassResult result;
  auto after = std::upper_bound(pass.entries.begin(), pass.entries.end(), address,
                                [](uint64_t at, const Entry& entry) { return at < entry.value; });
  result.below = static_cast<size_t>(after - pass.entries.begin());
  size_t below = result.below;
  if (below == 0) return result;
  std::vector<const Entry*> containing;
  for (size_t i = below, seen = 0; i > 0 && pass.max_end[i - 1] > address && seen < kMaxCandidates; --i, ++seen) {
    const Entry& entry = pass.entries[i - 1];
    if (entry.size != 0 && address - entry.value < entry.size && has_name(entry)) containing.push_back(&entry);
  }
  std::sort(containing.begin(), containing.end(),
            [](const Entry* a, const Entry* b) { return a->table_order < b->table_order; });
  for (const Entry* candidate : containing) {
    const Entry* best = result.sized;
    if (best == nullptr || best->value < candidate->value || best->binding_rank < candidate->binding_rank ||
        (best->value == candidate->value && best->size > candidate->size && best->binding_rank <= candidate->binding_rank))
      result.sized = candidate;
  }
  // A label can only be the answer at the highest start of a named symbol below the address, as
  // the last of the table's labels there (libdwfl keeps replacing it), and in the address's own
  // section.
  size_t top_end = below;
  for (size_t seen = 0; top_end > 0 && !has_name(pass.entries[top_end - 1]) && seen < kMaxCandidates; ++seen) --top_end;
  if (top_end == 0 || !has_name(pass.entries[top_end - 1])) return result;
  uint64_t top = pass.entries[top_end - 1].value;
  uint32_t address_section = section_of(address);
  for (size_t i = top_end; i > 0 && pass.entries[i - 1].value == top; --i) {
    const Entry& entry = pass.entries[i - 1];
    bool same_section = entry.section == kAbsoluteSection ? entry.value == address : entry.section == address_section;
    if (entry.size == 0 && same_section && has_name(entry) &&
        (result.sizeless == nullptr || result.sizeless->table_order < entry.table_order))
      result.sizeless = &entry;
  }
  return result;
}

bool SymbolIndex::ends_above(const Pass& pass, size_t below, uint64_t value) const {
  for (size_t i = below, seen = 0; i > 0 && pass.max_end[i - 1] > value; --i, ++seen) {
    if (seen == kMaxCandidates) return true;  // deeply overlapping symbols: the bound's answer
    const Entry& entry = pass.entries[i - 1];
    uint64_t end = entry.size > UINT64_MAX - entry.value ? UINT64_MAX : entry.value + entry.size;
    if (end > value && has_name(entry)) return true;
  }
  return false;
}

std::optional<SymbolHit> SymbolIndex::lookup(uint64_t link_address) const {
  PassResult globals = search(global_, link_address);
  if (globals.sized != nullptr) return SymbolHit{name_of(*globals.sized), link_address - globals.sized->value};
  bool exact_label = globals.sizeless != nullptr && globals.sizeless->value == link_address &&
                     !ends_above(global_, globals.below, link_address);
  PassResult locals;
  if (!exact_label) {
    locals = search(local_, link_address);
    if (locals.sized != nullptr) return SymbolHit{name_of(*locals.sized), link_address - locals.sized->value};
  }
  const Entry* label = globals.sizeless;
  if (locals.sizeless != nullptr && (label == nullptr || locals.sizeless->value >= label->value)) label = locals.sizeless;
  if (label == nullptr || ends_above(global_, globals.below, label->value) || ends_above(local_, locals.below, label->value))
    return std::nullopt;
  return SymbolHit{name_of(*label), link_address - label->value};
}

// One slot per build-id (or file): the first process to need it prepares the build and starts it;
// others wait for that build alone, other modules are not held up.
struct SymbolIndexCache::Slot {
  std::promise<std::shared_ptr<const SymbolIndex>> built;
  Pending pending{built.get_future().share()};
  std::future<void> worker;  // a build on its own thread; waited for at exit at the latest
};

struct SymbolIndexCache::State {
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<Slot>> by_key;
  std::map<std::string, size_t> builds;
};

SymbolIndexCache::SymbolIndexCache() : state_(std::make_shared<State>()) {}

SymbolIndexCache& SymbolIndexCache::run_wide() {
  static SymbolIndexCache cache;
  return cache;
}

namespace {

SymbolIndexCache::Pending ready(std::shared_ptr<const SymbolIndex> index) {
  std::promise<std::shared_ptr<const SymbolIndex>> promise;
  promise.set_value(std::move(index));
  return promise.get_future().share();
}

// What makes two processes' modules the same for the cache: the build-id, else the main file's
// path and identity; "" when neither is known (not shared).
std::string cache_key(const std::string& build_id, Dwfl_Module* module) {
  if (!build_id.empty()) return "build-id " + build_id;
  const char* main_file = nullptr;
  dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, &main_file, nullptr);
  if (main_file == nullptr) return "";
  std::optional<FileIdentity> identity = file_identity(main_file);
  if (!identity) return "";
  return "file " + std::to_string(identity->device) + ":" + std::to_string(identity->inode) + ":" +
         std::to_string(identity->size) + ":" + std::to_string(identity->modified_ns) + " " + main_file;
}

}  // namespace

SymbolIndexCache::Pending SymbolIndexCache::request(const std::string& build_id, Dwfl_Module* module) {
  // Without its file (not found here, or rejected for its build-id) a module has no symbols in
  // this process; another process, or a later request with a sysroot, may find the file.
  GElf_Addr bias = 0;
  std::string key = dwfl_module_getelf(module, &bias) != nullptr ? cache_key(build_id, module) : "";
  if (key.empty()) return ready(SymbolIndex::build(module));
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    std::shared_ptr<Slot>& entry = state_->by_key[key];
    if (entry) return entry->pending;
    entry = slot = std::make_shared<Slot>();
    ++state_->builds[key];
  }
  std::shared_ptr<SymbolIndex::Recipe> recipe;
  try {
    recipe = SymbolIndex::prepare(module);  // needs this thread's Dwfl; the rest does not
  } catch (...) {
    slot->built.set_exception(std::current_exception());
    return slot->pending;
  }
  Slot* waiting = slot.get();  // the slot outlives its worker: ~Slot waits for it first
  auto finish = [waiting, recipe] {
    try {
      waiting->built.set_value(SymbolIndex::finish(*recipe));
    } catch (...) {
      waiting->built.set_exception(std::current_exception());
    }
  };
  if (recipe->done) {
    finish();
    return slot->pending;
  }
  try {
    std::future<void> worker = std::async(std::launch::async, finish);
    std::lock_guard<std::mutex> lock(state_->mutex);
    slot->worker = std::move(worker);
  } catch (const std::system_error&) {
    finish();  // no thread to be had: build it here
  }
  return slot->pending;
}

size_t SymbolIndexCache::builds_of(const std::string& build_id) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto found = state_->builds.find("build-id " + build_id);
  return found == state_->builds.end() ? 0 : found->second;
}

}  // namespace nsc
