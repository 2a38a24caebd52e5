// Address -> symbol for one module, built once from the symbol table libdwfl chose for it and
// shared by every process of a run that maps the same build (issue 35).
//
// Why not dwfl_module_addrinfo: libdwfl (0.188) answers each lookup with a linear pass over
// the whole symbol table, so a module of 10^6 symbols (XLA, jaxlib, libtorch_cuda) cost
// milliseconds per frame and seconds per process. This index sorts the table once (by
// link-time address, so processes that load the module at other addresses share it) and answers
// by binary search, with libdwfl's choice of symbol: a sized symbol that contains the address,
// the one starting highest; global and weak symbols before local ones; at equal start the
// smaller or better-bound one, as libdwfl's tie rule; a sizeless label (hand-written assembly) only
// when no sized symbol contains the address, none ends above the label, and both lie in one
// section.
//
// A main file with a sound .symtab (the table libdwfl then uses) is read from the index's own
// read-only mapping of the file: no libdwfl call per symbol, no copy of the names (libtorch_cpu's
// are 80 MB), and so built on a thread of its own while the unwinder goes on. Other modules
// (.dynsym only, a debug file's table) are read through libdwfl, their names copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/bulk_memory.h"

typedef struct Dwfl_Module Dwfl_Module;
typedef struct Elf Elf;

namespace nsc {

struct SymbolHit {
  std::string name;     // as in the table (mangled, "@@VERSION" kept)
  uint64_t offset = 0;  // address - symbol start
};

class SymbolIndex {
 public:
  // The most symbols indexed for one module: a larger table (corrupt, or beyond any real
  // library: libtorch_cuda.so has ~0.6 M) is refused in bounded time, not sorted.
  static constexpr size_t kMaxSymbols = 20'000'000;
  // A lookup inspects at most this many symbols below the address (a table of deeply
  // overlapping symbols): past it, the best one seen is answered.
  static constexpr size_t kMaxCandidates = 4096;

  // Reads the module's symbol table (its .symtab, else .dynsym, or a debug file's: libdwfl's
  // choice). Never throws for a bad table: refused() says why it holds no symbols, note() what
  // of a damaged table was left out.
  static std::shared_ptr<const SymbolIndex> build(Dwfl_Module* module, size_t max_symbols = kMaxSymbols);

  // The part of a build that needs the module's Dwfl (not thread-safe): a recipe that any thread
  // may finish. For a .symtab read from its own mapping, finishing is the whole work.
  class Recipe;
  struct MappedFile;  // a module's main file, mapped read-only, with its .symtab and .strtab
  static std::shared_ptr<Recipe> prepare(Dwfl_Module* module, size_t max_symbols = kMaxSymbols);
  static std::shared_ptr<const SymbolIndex> finish(Recipe& recipe);

  // The symbol of a link-time address (runtime address minus the module's load bias).
  std::optional<SymbolHit> lookup(uint64_t link_address) const;

  size_t size() const { return global_.entries.size() + local_.entries.size(); }
  const std::string& refused() const { return refused_; }  // "" when indexed
  // "" for a sound table; else e.g. ".symtab unreadable (...): only .dynsym's names used" or
  // "12 of 37 symbols name no string (a corrupt table): left out".
  const std::string& note() const { return note_; }

 private:
  struct Entry {
    uint64_t value;        // link-time start
    uint64_t size;
    uint32_t table_order;  // position in libdwfl's table: its tie-breaks follow that order
    uint32_t name_offset;  // into names_ (a copy) or the mapped string table
    uint32_t section;      // main-file section holding a sizeless symbol's value (labels); 0 = none
    uint8_t binding_rank;  // global 3, weak 2, local 1, other 0 (libdwfl's preference)
  };
  // One of libdwfl's two passes (global and weak symbols, then local ones), sorted by value.
  struct Pass {
    // Bulk memory (huge pages advised): 10^6 entries fault in 32 MB of fresh pages otherwise.
    std::vector<Entry, BulkAllocator<Entry>> entries;
    std::vector<uint64_t, BulkAllocator<uint64_t>> max_end;  // max(value + size) over entries[0..i]
    void seal();
  };
  struct PassResult {
    const Entry* sized = nullptr;     // the chosen sized symbol containing the address
    const Entry* sizeless = nullptr;  // the label candidate, if no sized one
    size_t below = 0;                 // entries [0, below) start at or below the address
  };
  PassResult search(const Pass& pass, uint64_t address) const;
  // Whether a named symbol of pass.entries[0, below) ends above `value` (a label there is hidden).
  bool ends_above(const Pass& pass, size_t below, uint64_t value) const;
  // libdwfl skips symbols with an empty name; the mapped table's are told apart only here, at
  // lookup, so that a build never reads the names (a cache miss each in an 80 MB .strtab).
  bool has_name(const Entry& entry) const {
    return mapped_names_ == nullptr || mapped_names_[entry.name_offset] != '\0';
  }
  uint32_t section_of(uint64_t link_address) const;
  std::string name_of(const Entry& entry) const;
  void read_mapped_symtab(size_t count, uint64_t bias);
  void read_through_libdwfl(Dwfl_Module* module, int count, uint64_t bias);
  void read_sections(Elf* elf);
  void note_nameless(size_t nameless, size_t symbols);

  Pass global_;
  Pass local_;
  std::basic_string<char, std::char_traits<char>, BulkAllocator<char>> names_;  // copied names, NUL-terminated
  std::shared_ptr<MappedFile> mapped_;  // the file whose .strtab holds the names, when read directly
  const char* mapped_names_ = nullptr;
  size_t mapped_names_size_ = 0;
  struct Section {
    uint64_t start, end;
    uint32_t index;
  };
  std::vector<Section> sections_;  // SHF_ALLOC sections of the main file, by start
  std::string refused_;
  std::string note_;
};

// The run's indexes, one per GNU build-id (or, without one, per file: path, device, inode, size,
// modification time): the first process that needs a module's symbols starts its index, every
// later process (and thread) of the run reuses it. A module without either is indexed per use.
class SymbolIndexCache {
 public:
  static SymbolIndexCache& run_wide();

  using Pending = std::shared_future<std::shared_ptr<const SymbolIndex>>;
  // Starts the module's index (on a thread of its own when it can be read from its file) and
  // returns it to wait on: a process asks for every module its frames are in before it waits
  // for the first, so that the large ones are built at once. Call from the thread that owns the
  // module's Dwfl. `build_id` "" means none.
  Pending request(const std::string& build_id, Dwfl_Module* module);
  std::shared_ptr<const SymbolIndex> index_for(const std::string& build_id, Dwfl_Module* module) {
    return request(build_id, module).get();
  }

  // How many indexes were built for this build-id in this run (tests: 1 for two processes).
  size_t builds_of(const std::string& build_id) const;

 private:
  struct Slot;
  struct State;
  SymbolIndexCache();
  std::shared_ptr<State> state_;
};

}  // namespace nsc
