// The symbol index of stacks/symbol_index.cc (issue 35): the same answers as libdwfl's own
// dwfl_module_addrinfo on every module this test process maps (libodd_symbols.so's aliases,
// nested and sizeless symbols included), one index per build-id for a whole run (two live
// processes of one build: each module indexed once), and a bounded refusal of a table too large.
#define BOOST_TEST_MODULE stacks_symbols
#include <boost/test/unit_test.hpp>

#include <elf.h>
#include <elfutils/libdwfl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <memory>
#include <sstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "target_test_support.h"
#include "stacks/symbol_index.h"
#include "stacks/thread_stacks.h"
#include "target/build_ids.h"

extern "C" int odd_symbols_present(void);

namespace fs = std::filesystem;

namespace {

const std::string kFixture = std::string(NCCLSCOPE_BINARY_DIR) + "/fixtures/stack_fixture";

struct DwflDeleter {
  void operator()(Dwfl* dwfl) const { dwfl_end(dwfl); }
};

char* debuginfo_path = nullptr;
const Dwfl_Callbacks kCallbacks = {dwfl_linux_proc_find_elf, dwfl_standard_find_debuginfo, nullptr, &debuginfo_path};

// This process's modules, as the live unwinder reports a process's.
std::unique_ptr<Dwfl, DwflDeleter> own_modules() {
  std::unique_ptr<Dwfl, DwflDeleter> dwfl(dwfl_begin(&kCallbacks));
  BOOST_REQUIRE(dwfl);
  BOOST_REQUIRE(dwfl_linux_proc_report(dwfl.get(), getpid()) == 0);
  BOOST_REQUIRE(dwfl_report_end(dwfl.get(), nullptr, nullptr) == 0);
  return dwfl;
}

std::vector<Dwfl_Module*> modules_of(Dwfl* dwfl) {
  std::vector<Dwfl_Module*> modules;
  dwfl_getmodules(
      dwfl,
      [](Dwfl_Module* module, void**, const char*, Dwarf_Addr, void* arg) -> int {
        static_cast<std::vector<Dwfl_Module*>*>(arg)->push_back(module);
        return DWARF_CB_OK;
      },
      &modules, 0);
  return modules;
}

std::string module_name(Dwfl_Module* module) {
  const char* name = dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  return name != nullptr ? name : "";
}

// Addresses around a symbol: before it, its start, inside, its last byte, just past its end.
std::vector<GElf_Addr> probes_around(GElf_Addr start, GElf_Word size) {
  std::vector<GElf_Addr> probes = {start - 1, start, start + 1};
  if (size > 0) {
    probes.push_back(start + size / 2);
    probes.push_back(start + size - 1);
    probes.push_back(start + size);
  }
  return probes;
}

// libdwfl's answer and the index's, as "name+offset" ("-" for none).
std::string libdwfl_answer(Dwfl_Module* module, GElf_Addr address) {
  GElf_Off offset = 0;
  GElf_Sym symbol;
  const char* name = dwfl_module_addrinfo(module, address, &offset, &symbol, nullptr, nullptr, nullptr);
  return name == nullptr ? "-" : std::string(name) + "+" + std::to_string(offset);
}

std::string index_answer(const nsc::SymbolIndex& index, GElf_Addr address, GElf_Addr bias) {
  std::optional<nsc::SymbolHit> hit = index.lookup(address - bias);
  return hit ? hit->name + "+" + std::to_string(hit->offset) : "-";
}

// Every symbol of small modules, an even sample of at most `per_module` of larger ones (libdwfl
// pays a pass over the whole table per answer).
size_t compare_module(Dwfl_Module* module, size_t per_module, std::vector<std::string>* differences,
                      size_t* symbols_in_module) {
  GElf_Addr bias = 0;
  if (dwfl_module_getelf(module, &bias) == nullptr) return 0;
  int count = dwfl_module_getsymtab(module);
  if (count <= 1) return 0;
  Dwarf_Addr low = 0, high = 0;  // the unwinder asks only for addresses inside the module
  dwfl_module_info(module, nullptr, &low, &high, nullptr, nullptr, nullptr, nullptr);
  *symbols_in_module = static_cast<size_t>(count);
  std::shared_ptr<const nsc::SymbolIndex> index = nsc::SymbolIndex::build(module);
  size_t step = std::max<size_t>(1, static_cast<size_t>(count) / per_module);
  size_t compared = 0;
  for (int i = 1; i < count; i += static_cast<int>(step)) {
    GElf_Sym symbol;
    GElf_Addr start = 0;
    if (dwfl_module_getsym_info(module, i, &symbol, &start, nullptr, nullptr, nullptr) == nullptr) continue;
    for (GElf_Addr address : probes_around(start, static_cast<GElf_Word>(symbol.st_size))) {
      if (address < low || address >= high) continue;
      std::string expected = libdwfl_answer(module, address), got = index_answer(*index, address, bias);
      ++compared;
      if (expected != got && differences->size() < 20)
        differences->push_back(module_name(module) + " @0x" + (std::ostringstream() << std::hex << address).str() +
                               ": libdwfl " + expected + ", index " + got);
    }
  }
  return compared;
}

// A stack_fixture process, killed at the end of the test.
class FixtureProcess {
 public:
  FixtureProcess() {
    int pipe_fds[2];
    BOOST_REQUIRE(pipe(pipe_fds) == 0);
    pid_ = fork();
    BOOST_REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(pipe_fds[1], 1);
      close(pipe_fds[0]);
      execl(kFixture.c_str(), kFixture.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(pipe_fds[1]);
    output_ = fdopen(pipe_fds[0], "r");
    char line[256];
    while (std::fgets(line, sizeof line, output_) != nullptr)
      if (std::string(line) == "ready\n") {
        nsc::testing::wait_until_all_threads_sleep(pid_);
        return;
      }
    BOOST_FAIL("stack_fixture did not become ready");
  }
  ~FixtureProcess() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    if (output_ != nullptr) std::fclose(output_);
  }
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  FILE* output_ = nullptr;
};

bool names_function(const std::vector<nsc::ThreadStack>& threads, const std::string& function) {
  for (const nsc::ThreadStack& thread : threads)
    for (const nsc::StackFrame& frame : thread.frames)
      if (frame.function == function && frame.module == "stack_fixture") return true;
  return false;
}

// The first mapped file whose path contains `part`.
std::string mapped_path(int pid, const std::string& part) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    size_t slash = line.find('/');
    if (slash != std::string::npos && line.find(part, slash) != std::string::npos) return line.substr(slash);
  }
  return "";
}

bool fixture_present() { return fs::exists(kFixture); }

}  // namespace

BOOST_AUTO_TEST_CASE(index_answers_as_libdwfl_on_every_module_of_this_process) {
  BOOST_REQUIRE(odd_symbols_present() == 1);
  auto dwfl = own_modules();
  std::vector<std::string> differences;
  size_t compared = 0, modules = 0;
  bool saw_odd_symbols = false;
  for (Dwfl_Module* module : modules_of(dwfl.get())) {
    bool odd = module_name(module).find("libodd_symbols.so") != std::string::npos;
    size_t symbols = 0;
    size_t here = compare_module(module, odd ? SIZE_MAX : 300, &differences, &symbols);
    if (here == 0) continue;
    ++modules;
    compared += here;
    if (odd) {
      saw_odd_symbols = true;
      BOOST_TEST(symbols >= 12u, "libodd_symbols.so's table has its odd symbols (" << symbols << ")");
    }
  }
  BOOST_TEST_MESSAGE(compared << " addresses in " << modules << " modules compared");
  BOOST_TEST(saw_odd_symbols);
  BOOST_TEST(modules >= 4u);  // the test, libodd_symbols, libc, libstdc++ at least
  BOOST_TEST(compared >= 1000u);
  for (const std::string& difference : differences) BOOST_TEST_MESSAGE(difference);
  BOOST_TEST(differences.empty());
}

BOOST_AUTO_TEST_CASE(nested_aliases_and_labels_get_the_expected_names) {
  auto dwfl = own_modules();
  for (Dwfl_Module* module : modules_of(dwfl.get())) {
    if (module_name(module).find("libodd_symbols.so") == std::string::npos) continue;
    GElf_Addr bias = 0;
    BOOST_REQUIRE(dwfl_module_getelf(module, &bias) != nullptr);
    std::shared_ptr<const nsc::SymbolIndex> index = nsc::SymbolIndex::build(module);
    auto address_of = [&](const char* wanted) {
      for (int i = 1; i < dwfl_module_getsymtab(module); ++i) {
        GElf_Sym symbol;
        GElf_Addr address = 0;
        const char* name = dwfl_module_getsym_info(module, i, &symbol, &address, nullptr, nullptr, nullptr);
        if (name != nullptr && std::string(name) == wanted) return address;
      }
      BOOST_FAIL(std::string("no symbol ") + wanted);
      return GElf_Addr{0};
    };
    // Three aliases: the global one. Inside the local region: the global function it holds, the
    // local function after it (the nearer start), a label only past every sized symbol's end;
    // two sized aliases: the smaller one where both cover the address.
    BOOST_TEST(index_answer(*index, address_of("odd_local_alias") + 4, bias) == "odd_global_alias+4");
    BOOST_TEST(index_answer(*index, address_of("odd_inside_region") + 20, bias) == "odd_inside_region+20");
    BOOST_TEST(index_answer(*index, address_of("odd_local_in_region") + 8, bias) == "odd_local_in_region+8");
    BOOST_TEST(index_answer(*index, address_of("odd_label_after") + 8, bias) == "odd_label_after+8");
    BOOST_TEST(index_answer(*index, address_of("odd_big") + 8, bias) == "odd_small+8");
    BOOST_TEST(index_answer(*index, address_of("odd_big") + 40, bias) == "odd_big+40");
    return;
  }
  BOOST_FAIL("libodd_symbols.so is not mapped");
}

BOOST_AUTO_TEST_CASE(two_processes_of_one_build_index_each_module_once,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) { return fixture_present(); })) {
  std::optional<std::string> fixture_id = nsc::build_id_of_file(kFixture);
  BOOST_REQUIRE(fixture_id);
  nsc::SymbolIndexCache& cache = nsc::SymbolIndexCache::run_wide();
  BOOST_TEST(cache.builds_of(*fixture_id) == 0u);
  FixtureProcess first, second;
  std::vector<std::string> warnings;
  std::vector<nsc::ThreadStack> first_threads = nsc::unwind_live_threads(first.pid(), nsc::StackOptions{}, &warnings);
  BOOST_TEST(cache.builds_of(*fixture_id) == 1u);
  std::vector<nsc::ThreadStack> second_threads = nsc::unwind_live_threads(second.pid(), nsc::StackOptions{}, &warnings);
  BOOST_TEST(cache.builds_of(*fixture_id) == 1u);  // the second process reused the first one's index
  BOOST_TEST(names_function(first_threads, "fixture_wait_in_user_code"));
  BOOST_TEST(names_function(second_threads, "fixture_poll_loop"));
  // libc too: one index for both processes.
  std::optional<std::string> libc_id = nsc::build_id_of_file(mapped_path(second.pid(), "/libc.so"));
  BOOST_REQUIRE(libc_id);
  BOOST_TEST(cache.builds_of(*libc_id) == 1u);
}

BOOST_AUTO_TEST_CASE(a_table_over_the_bound_is_refused_with_a_reason) {
  auto dwfl = own_modules();
  for (Dwfl_Module* module : modules_of(dwfl.get())) {
    if (module_name(module).find("libodd_symbols.so") == std::string::npos) continue;
    GElf_Addr bias = 0;
    BOOST_REQUIRE(dwfl_module_getelf(module, &bias) != nullptr);
    std::shared_ptr<const nsc::SymbolIndex> bounded = nsc::SymbolIndex::build(module, 4);
    BOOST_TEST(bounded->size() == 0u);
    BOOST_TEST(bounded->refused().find("entries (over 4): not read") != std::string::npos, bounded->refused());
    std::shared_ptr<const nsc::SymbolIndex> whole = nsc::SymbolIndex::build(module);
    BOOST_TEST(whole->refused() == "");
    BOOST_TEST(whole->size() >= 12u);
    return;
  }
  BOOST_FAIL("libodd_symbols.so is not mapped");
}

// Issue 35, bad input: damaged copies of libodd_symbols.so, each read as an offline module.
namespace {

const std::string kOddLibrary = std::string(NCCLSCOPE_BINARY_DIR) + "/fixtures/oddlib/libodd_symbols.so";

// Copies the library to `path`, lets `damage` edit its .symtab section header (and the bytes),
// and writes `hole` zero bytes more at the end (a sparse file: no disk used).
void write_damaged_copy(const std::string& path, const std::function<void(Elf64_Shdr*, std::string*)>& damage,
                        size_t hole = 0) {
  std::ifstream in(kOddLibrary, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_REQUIRE(bytes.size() > sizeof(Elf64_Ehdr));
  const auto* ehdr = reinterpret_cast<const Elf64_Ehdr*>(bytes.data());
  Elf64_Shdr* symtab = nullptr;
  for (unsigned i = 0; i < ehdr->e_shnum; ++i) {
    auto* section = reinterpret_cast<Elf64_Shdr*>(&bytes[ehdr->e_shoff + i * sizeof(Elf64_Shdr)]);
    if (section->sh_type == SHT_SYMTAB) symtab = section;
  }
  BOOST_REQUIRE(symtab != nullptr);
  damage(symtab, &bytes);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (hole > 0) fs::resize_file(path, bytes.size() + hole);
}

struct OfflineModule {
  std::unique_ptr<Dwfl, DwflDeleter> dwfl;
  Dwfl_Module* module = nullptr;
  explicit OfflineModule(const std::string& path) {
    static const Dwfl_Callbacks offline = {dwfl_build_id_find_elf, dwfl_standard_find_debuginfo,
                                           dwfl_offline_section_address, &debuginfo_path};
    dwfl.reset(dwfl_begin(&offline));
    module = dwfl_report_offline(dwfl.get(), "damaged", path.c_str(), -1);
    dwfl_report_end(dwfl.get(), nullptr, nullptr);
    BOOST_REQUIRE(module != nullptr);
  }
};

std::shared_ptr<const nsc::SymbolIndex> index_of_damaged(const std::function<void(Elf64_Shdr*, std::string*)>& damage,
                                                         size_t hole = 0) {
  std::string path = (fs::temp_directory_path() / ("ncclscope-damaged-" + std::to_string(getpid()) + ".so")).string();
  write_damaged_copy(path, damage, hole);
  OfflineModule offline(path);
  std::shared_ptr<const nsc::SymbolIndex> index = nsc::SymbolIndex::build(offline.module);
  fs::remove(path);
  return index;
}

bool odd_library_present() { return fs::exists(kOddLibrary); }

}  // namespace

BOOST_AUTO_TEST_CASE(a_sound_table_has_no_note, *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
                       return odd_library_present();
                     })) {
  auto index = index_of_damaged([](Elf64_Shdr*, std::string*) {});
  BOOST_TEST(index->note() == "");
  BOOST_TEST(index->refused() == "");
  BOOST_TEST(index->size() >= 12u);
}

BOOST_AUTO_TEST_CASE(an_unreadable_symtab_falls_back_to_dynsym_with_a_note,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) { return odd_library_present(); })) {
  auto whole = index_of_damaged([](Elf64_Shdr*, std::string*) {});
  struct Case {
    const char* what;
    std::function<void(Elf64_Shdr*, std::string*)> damage;
    const char* said;
  };
  std::vector<Case> cases = {
      {"offset past the end", [](Elf64_Shdr* s, std::string* b) { s->sh_offset = b->size() + (1u << 30); }, ".symtab unreadable ("},
      {"size past the end", [](Elf64_Shdr* s, std::string*) { s->sh_size = (uint64_t{1} << 40) * 24; }, ".symtab unreadable ("},
      {"string table link to itself", [](Elf64_Shdr* s, std::string* b) {
         const auto* ehdr = reinterpret_cast<const Elf64_Ehdr*>(b->data());
         s->sh_link = static_cast<Elf64_Word>((reinterpret_cast<char*>(s) - (b->data() + ehdr->e_shoff)) / sizeof(Elf64_Shdr));
       }, "is not one"},
      {"string table link out of range", [](Elf64_Shdr* s, std::string*) { s->sh_link = 9999; }, "(section 9999) is not one"},
      {"entry size 0", [](Elf64_Shdr* s, std::string*) { s->sh_entsize = 0; }, "(entry size 0)"},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.what) {
      auto index = index_of_damaged(c.damage);
      BOOST_TEST(index->note().find(c.said) != std::string::npos, index->note());
      BOOST_TEST(index->note().find("only .dynsym's names used") != std::string::npos, index->note());
      BOOST_TEST(index->refused() == "");
      BOOST_TEST(index->size() > 0u);  // .dynsym's exported names
      BOOST_TEST(index->size() < whole->size());
    }
  }
}

BOOST_AUTO_TEST_CASE(entries_that_name_no_string_are_left_out_with_a_note,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) { return odd_library_present(); })) {
  size_t entries = 0;
  auto index = index_of_damaged([&](Elf64_Shdr* s, std::string* b) {
    entries = s->sh_size / sizeof(Elf64_Sym);
    for (size_t i = 1; i < entries; ++i)
      reinterpret_cast<Elf64_Sym*>(&(*b)[s->sh_offset + i * sizeof(Elf64_Sym)])->st_name = 0xfffffff0u;
  });
  BOOST_TEST(index->size() == 0u);
  BOOST_TEST(index->note() == std::to_string(entries - 1) + " of " + std::to_string(entries - 1) +
                                  " symbols name no string (a corrupt table): left out");
}

BOOST_AUTO_TEST_CASE(an_enormous_table_is_refused_before_it_is_read,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) { return odd_library_present(); })) {
  // 25 M entries of zeros in a sparse hole at the end of the file: over the bound of 20 M.
  const size_t entries = 25'000'000;
  size_t file_size = 0;
  auto index = index_of_damaged(
      [&](Elf64_Shdr* s, std::string* b) {
        file_size = (b->size() + 4095) / 4096 * 4096;
        b->resize(file_size);
        s->sh_offset = file_size;
        s->sh_size = entries * sizeof(Elf64_Sym);
        s->sh_info = static_cast<Elf64_Word>(entries);
      },
      entries * sizeof(Elf64_Sym));
  BOOST_TEST(index->size() == 0u);
  BOOST_TEST(index->refused() == "symbol table of 25000000 entries (over 20000000): not read", index->refused());
}

// libdwfl skips a symbol whose name is empty; the index tells such names only at lookup. Names
// emptied by pointing them at the NUL that ends another name (a linker may share it): every
// address of the module gets libdwfl's answer, the emptied names never.
BOOST_AUTO_TEST_CASE(symbols_with_empty_names_are_skipped_as_libdwfl_skips_them,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) { return odd_library_present(); })) {
  const std::set<std::string> emptied = {"odd_big", "odd_global_alias", "odd_label_after", "odd_inside_region"};
  size_t emptied_count = 0;
  std::string path = (fs::temp_directory_path() / ("ncclscope-empty-names-" + std::to_string(getpid()) + ".so")).string();
  write_damaged_copy(path, [&](Elf64_Shdr* symtab, std::string* bytes) {
    const auto* ehdr = reinterpret_cast<const Elf64_Ehdr*>(bytes->data());
    const auto* strtab = reinterpret_cast<const Elf64_Shdr*>(&(*bytes)[ehdr->e_shoff + symtab->sh_link * sizeof(Elf64_Shdr)]);
    for (size_t i = 1; i < symtab->sh_size / sizeof(Elf64_Sym); ++i) {
      auto* symbol = reinterpret_cast<Elf64_Sym*>(&(*bytes)[symtab->sh_offset + i * sizeof(Elf64_Sym)]);
      std::string name = &(*bytes)[strtab->sh_offset + symbol->st_name];
      if (emptied.count(name) == 0) continue;
      symbol->st_name += static_cast<Elf64_Word>(name.size());  // its own terminating NUL
      ++emptied_count;
    }
  });
  BOOST_REQUIRE(emptied_count >= emptied.size());
  {
    OfflineModule offline(path);
    std::vector<std::string> differences;
    size_t symbols = 0;
    size_t compared = compare_module(offline.module, 100000, &differences, &symbols);
    BOOST_TEST(compared >= 50u);
    for (const std::string& difference : differences) BOOST_TEST_MESSAGE(difference);
    BOOST_TEST(differences.empty());
  }
  fs::remove(path);
}
