// The launcher-environment reader on a synthetic initial stack laid out as Linux
// does (argc, argv[], envp[], auxv copy, strings, AT_EXECFN's string at the top):
// the good case and each way a core can spoil it, and the launcher object's rules.
#define BOOST_TEST_MODULE launcher_environment
#include <boost/test/unit_test.hpp>

#include <elf.h>

#include <cstring>
#include <string>
#include <vector>

#include "snapshot/launcher_section.h"
#include "target/core_file.h"
#include "target/launcher_environment.h"
#include "target/live_process.h"
#include "target_test_support.h"
#include "temp_dir.h"

using namespace nsc;

namespace {

constexpr uint64_t kBase = 0x7ffd00000000, kSize = 0x8000, kHeapString = 0x555500001000;

// A core-like target holding one stack mapping; bytes can be marked not saved, and
// every successful read() (the recorded kind) is kept to check what was read.
class StackTarget : public Target {
 public:
  StackTarget() : bytes_(kSize, 0), saved_(kSize, true) {
    MemoryRegion region;
    region.start = kBase;
    region.end = kBase + kSize;
    region.readable = region.writable = true;
    region.path = "[stack]";
    regions_.push_back(region);
  }
  std::string describe() const override { return "synthetic stack"; }
  bool is_core() const override { return true; }
  int pid() const override { return 1; }
  bool read(uint64_t addr, void* buf, size_t len, ReadError* error) override {
    if (!scan_read(addr, buf, len, error)) return false;
    recorded_.push_back({addr, addr + len});
    return true;
  }
  bool scan_read(uint64_t addr, void* buf, size_t len, ReadError* error) override {
    if (addr < kBase || addr + len > kBase + kSize) return fail(addr, ReadFailure::kNotMapped, error);
    for (size_t i = 0; i < len; ++i)
      if (!saved_[addr - kBase + i]) return fail(addr + i, ReadFailure::kNotSavedInCore, error);
    std::memcpy(buf, &bytes_[addr - kBase], len);
    return true;
  }
  const std::vector<MemoryRegion>& regions() const override { return regions_; }
  const std::vector<MappedFile>& mapped_files() const override { return files_; }
  std::vector<ThreadInfo> threads() override { return {}; }
  std::string executable() const override { return ""; }
  std::vector<uint8_t> auxv() const override { return auxv_; }

  void put(uint64_t addr, const void* data, size_t len) { std::memcpy(&bytes_[addr - kBase], data, len); }
  void put_word(uint64_t addr, uint64_t value) { put(addr, &value, 8); }
  uint64_t word(uint64_t addr) const { uint64_t v; std::memcpy(&v, &bytes_[addr - kBase], 8); return v; }
  void unsave(uint64_t start, uint64_t end) { std::fill(saved_.begin() + (start - kBase), saved_.begin() + (end - kBase), false); }
  void save(uint64_t start, uint64_t end) { std::fill(saved_.begin() + (start - kBase), saved_.begin() + (end - kBase), true); }
  // A slice: only what read() returned so far stays saved in `other`.
  void keep_only_what_was_read(StackTarget* other) const {
    other->unsave(kBase, kBase + kSize);
    for (const auto& [from, to] : recorded_) other->save(from, to);
  }
  bool read_touched(uint64_t start, uint64_t end) const {
    for (const auto& [from, to] : recorded_)
      if (from < end && to > start) return true;
    return false;
  }

  std::vector<MemoryRegion> regions_;
  std::vector<uint8_t> auxv_;

 private:
  bool fail(uint64_t addr, ReadFailure reason, ReadError* error) {
    if (error) *error = ReadError{addr, reason, ""};
    return false;
  }
  std::vector<uint8_t> bytes_;
  std::vector<bool> saved_;
  std::vector<MappedFile> files_;
  std::vector<std::pair<uint64_t, uint64_t>> recorded_;
};

// Lays out argv/envp the way the kernel's create_elf_tables does.
struct InitialStackImage {
  StackTarget target;
  uint64_t sp = 0, envp_at = 0, auxv_at = 0;
  std::vector<uint64_t> string_at;  // argv strings, then env strings

  InitialStackImage(const std::vector<std::string>& argv, const std::vector<std::string>& envp) {
    const std::string execfn = "/usr/bin/python3";
    uint64_t top = kBase + kSize - 8;  // 8 zero bytes at the very top
    uint64_t execfn_at = top - execfn.size() - 1;
    target.put(execfn_at, execfn.c_str(), execfn.size() + 1);
    std::vector<std::string> all(argv);
    all.insert(all.end(), envp.begin(), envp.end());
    size_t blob = 0;
    for (const std::string& s : all) blob += s.size() + 1;
    uint64_t at = execfn_at - blob;
    uint64_t strings_low = at;
    for (const std::string& s : all) {
      string_at.push_back(at);
      target.put(at, s.c_str(), s.size() + 1);
      at += s.size() + 1;
    }
    uint64_t random_at = (strings_low - 16) & ~uint64_t{15};
    std::vector<uint64_t> auxv = {AT_SYSINFO_EHDR, 0x7ffff7fc1000, AT_PAGESZ, 4096, AT_RANDOM, random_at,
                                  AT_EXECFN, execfn_at, AT_NULL, 0};
    target.auxv_.resize(auxv.size() * 8);
    std::memcpy(target.auxv_.data(), auxv.data(), target.auxv_.size());
    uint64_t words = 1 + argv.size() + 1 + envp.size() + 1;
    auxv_at = (random_at - auxv.size() * 8) & ~uint64_t{15};
    sp = auxv_at - words * 8;
    target.put_word(sp, argv.size());
    for (size_t i = 0; i < argv.size(); ++i) target.put_word(sp + 8 * (1 + i), string_at[i]);
    envp_at = sp + 8 * (argv.size() + 2);
    for (size_t i = 0; i < envp.size(); ++i) target.put_word(envp_at + 8 * i, string_at[argv.size() + i]);
    target.put(auxv_at, auxv.data(), auxv.size() * 8);
  }
};

const std::vector<std::string> kArgv = {"python3", "train.py", "--steps=10"};
const std::vector<std::string> kEnvp = {"PATH=/usr/bin", "SECRET_TOKEN=hunter2", "RANK=3",
                                        "WORLD_SIZE=4", "HOME=/root", "MASTER_PORT=29500"};

bool has_note(const LauncherEnvironment& env, const std::string& text) {
  for (const std::string& note : env.notes)
    if (note.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(initial_stack_gives_the_allowlisted_variables_only) {
  InitialStackImage image(kArgv, kEnvp);
  LauncherEnvironment env = read_launcher_environment(image.target);
  BOOST_TEST(env.unavailable == "");
  BOOST_TEST(env.source == "initial stack");
  BOOST_TEST(env.notes.empty());
  BOOST_REQUIRE_EQUAL(env.variables.size(), 3u);
  BOOST_TEST(env.variables["RANK"] == "3");
  BOOST_TEST(env.variables["WORLD_SIZE"] == "4");
  BOOST_TEST(env.variables["MASTER_PORT"] == "29500");
  // The secret's value was never read through read() (what a slice keeps), nor PATH's.
  uint64_t secret = image.string_at[kArgv.size() + 1] + std::strlen("SECRET_TOKEN=");
  BOOST_TEST(!image.target.read_touched(secret, secret + 7));
  uint64_t path_value = image.string_at[kArgv.size()] + std::strlen("PATH=");
  BOOST_TEST(!image.target.read_touched(path_value, path_value + 8));
  // ... while RANK's string and the auxv copy were (the slice keeps them).
  BOOST_TEST(image.target.read_touched(image.string_at[kArgv.size() + 2], image.string_at[kArgv.size() + 2] + 6));
  BOOST_TEST(image.target.read_touched(image.auxv_at, image.auxv_at + 8));
}

// `ncclscope slice` keeps what read() returned (RecordingTarget): that alone must give the same answer.
BOOST_AUTO_TEST_CASE(what_was_read_suffices_for_the_same_answer) {
  for (bool truncated : {false, true}) {
    InitialStackImage image(kArgv, kEnvp), slice(kArgv, kEnvp);
    uint64_t rank = image.string_at[kArgv.size() + 2];
    if (truncated) image.target.unsave(rank + 5, rank + 7);
    LauncherEnvironment full = read_launcher_environment(image.target);
    image.target.keep_only_what_was_read(&slice.target);
    LauncherEnvironment sliced = read_launcher_environment(slice.target);
    BOOST_TEST(sliced.unavailable == full.unavailable);
    BOOST_TEST((sliced.variables == full.variables));
    BOOST_TEST(sliced.notes == full.notes, truncated);
    BOOST_TEST(full.variables.size() == (truncated ? 2u : 3u));
    // The slice holds no value byte of SECRET_TOKEN or PATH.
    uint64_t secret = image.string_at[kArgv.size() + 1] + std::strlen("SECRET_TOKEN=");
    std::string value(7, '\0');
    BOOST_TEST(!slice.target.scan_read(secret, value.data(), 1, nullptr));
  }
}

BOOST_AUTO_TEST_CASE(empty_environment_is_read_as_empty) {
  InitialStackImage image(kArgv, {});
  LauncherEnvironment env = read_launcher_environment(image.target);
  BOOST_TEST(env.unavailable == "");
  BOOST_TEST(env.variables.empty());
}

BOOST_AUTO_TEST_CASE(no_auxv_note_is_a_reason) {
  InitialStackImage image(kArgv, kEnvp);
  image.target.auxv_.clear();
  LauncherEnvironment env = read_initial_stack_environment(image.target, {}, image.sp);
  BOOST_TEST(env.unavailable.find("no auxiliary vector") != std::string::npos);
  BOOST_TEST(env.variables.empty());
}

BOOST_AUTO_TEST_CASE(stack_mapping_not_saved_is_a_reason) {
  InitialStackImage image(kArgv, kEnvp);
  image.target.regions_[0].saved = false;
  LauncherEnvironment env = read_launcher_environment(image.target);
  BOOST_TEST(env.unavailable.find("not saved in core") != std::string::npos, env.unavailable);
}

BOOST_AUTO_TEST_CASE(initial_stack_bytes_not_saved_is_a_reason) {
  InitialStackImage image(kArgv, kEnvp);
  image.target.unsave(image.sp, kBase + kSize);  // only the deep stack was kept
  LauncherEnvironment env = read_launcher_environment(image.target);
  BOOST_TEST(env.unavailable.find("auxv copy not found") != std::string::npos, env.unavailable);
}

BOOST_AUTO_TEST_CASE(no_mapping_holds_the_stack) {
  InitialStackImage image(kArgv, kEnvp);
  std::vector<uint8_t> auxv = image.target.auxv_;
  uint64_t elsewhere = 0x1000;
  std::memcpy(auxv.data() + 7 * 8, &elsewhere, 8);  // AT_EXECFN's value
  LauncherEnvironment env = read_initial_stack_environment(image.target, auxv, 0);
  BOOST_TEST(env.unavailable.find("initial stack not found") != std::string::npos, env.unavailable);
}

BOOST_AUTO_TEST_CASE(main_thread_sp_finds_the_stack_when_execfn_does_not) {
  InitialStackImage image(kArgv, kEnvp);
  std::vector<uint8_t> auxv = image.target.auxv_;
  uint64_t elsewhere = 0x1000;
  std::memcpy(auxv.data() + 7 * 8, &elsewhere, 8);
  // The auxv compared against the stack copy must be the one there: patch the copy too.
  image.target.put_word(image.auxv_at + 7 * 8, elsewhere);
  LauncherEnvironment env = read_initial_stack_environment(image.target, auxv, image.sp);
  BOOST_TEST(env.unavailable == "");
  BOOST_TEST(env.variables["RANK"] == "3");
}

BOOST_AUTO_TEST_CASE(truncated_value_is_a_note_not_a_value) {
  InitialStackImage image(kArgv, kEnvp);
  uint64_t rank = image.string_at[kArgv.size() + 2];
  image.target.unsave(rank + 5, rank + 7);  // "RANK=3\0": the '3' and the NUL lost
  LauncherEnvironment env = read_launcher_environment(image.target);
  BOOST_TEST(env.variables.count("RANK") == 0u);
  BOOST_TEST(has_note(env, "RANK at "));
  BOOST_TEST(has_note(env, "truncated: "));
  BOOST_TEST(env.variables["WORLD_SIZE"] == "4");
}

BOOST_AUTO_TEST_CASE(unreadable_string_is_counted) {
  InitialStackImage image(kArgv, kEnvp);
  uint64_t home = image.string_at[kArgv.size() + 4];
  image.target.unsave(home, home + 4);
  LauncherEnvironment env = read_launcher_environment(image.target);
  BOOST_TEST(has_note(env, "1 environment string(s) unreadable"));
  BOOST_TEST(env.variables["MASTER_PORT"] == "29500");
}

BOOST_AUTO_TEST_CASE(slot_rewritten_by_setenv_reads_the_launchers_string) {
  InitialStackImage image(kArgv, kEnvp);
  image.target.put_word(image.envp_at + 2 * 8, kHeapString);  // setenv("RANK", "7", 1)
  LauncherEnvironment env = read_launcher_environment(image.target);
  BOOST_TEST(env.unavailable == "");
  BOOST_TEST(env.variables["RANK"] == "3");  // what the launcher set
  BOOST_TEST(has_note(env, "1 envp[] slot(s) point off the initial stack"));
  BOOST_TEST(has_note(env, "0 not found"));
}

BOOST_AUTO_TEST_CASE(last_slot_rewritten_is_found_below_execfn) {
  InitialStackImage image(kArgv, kEnvp);
  image.target.put_word(image.envp_at + 5 * 8, kHeapString);  // MASTER_PORT, the last one
  image.target.put_word(image.envp_at + 4 * 8, kHeapString);  // and HOME before it
  LauncherEnvironment env = read_launcher_environment(image.target);
  BOOST_TEST(env.variables["MASTER_PORT"] == "29500");
  BOOST_TEST(has_note(env, "2 envp[] slot(s)"));
}

BOOST_AUTO_TEST_CASE(slots_cleared_by_unsetenv_are_passed_over) {
  InitialStackImage image(kArgv, kEnvp);
  // unsetenv("HOME"): later slots move down one, the old last slot becomes NULL.
  image.target.put_word(image.envp_at + 4 * 8, image.target.word(image.envp_at + 5 * 8));
  image.target.put_word(image.envp_at + 5 * 8, 0);
  LauncherEnvironment env = read_launcher_environment(image.target);
  BOOST_TEST(env.unavailable == "");
  BOOST_TEST(env.variables["RANK"] == "3");
  BOOST_TEST(env.variables["MASTER_PORT"] == "29500");
  BOOST_TEST(has_note(env, "1 envp[] slot(s) cleared by the program"));
}

BOOST_AUTO_TEST_CASE(arrays_not_as_the_kernel_left_them_are_a_reason) {
  InitialStackImage image(kArgv, kEnvp);
  image.target.put_word(image.sp, 99);  // argc
  LauncherEnvironment env = read_launcher_environment(image.target);
  BOOST_TEST(env.unavailable.find("argc check failed") != std::string::npos, env.unavailable);
  BOOST_TEST(env.variables.empty());
  InitialStackImage other(kArgv, kEnvp);
  other.target.put_word(other.auxv_at - 8, 0x1234);  // envp[]'s NULL overwritten
  env = read_launcher_environment(other.target);
  BOOST_TEST(env.unavailable.find("is not envp[]'s NULL") != std::string::npos, env.unavailable);
}

BOOST_AUTO_TEST_CASE(environ_block_keeps_allowlisted_names_only) {
  std::string block("RANK=5\0SECRET_TOKEN=x\0LOCAL_RANK=1\0RANKX=9\0=junk\0noequals\0", 58);
  LauncherEnvironment env = parse_environ_block(block);
  BOOST_REQUIRE_EQUAL(env.variables.size(), 2u);
  BOOST_TEST(env.variables["RANK"] == "5");
  BOOST_TEST(env.variables["LOCAL_RANK"] == "1");
}

BOOST_AUTO_TEST_CASE(launcher_object_rank_precedence_and_bad_values) {
  LauncherEnvironment env;
  env.source = "initial stack";
  env.variables = {{"SLURM_PROCID", "2"}, {"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}};
  nlohmann::json out = launcher_json(env);
  BOOST_TEST(out["rank"] == 3);
  BOOST_TEST(out["rank_from"] == "RANK");
  BOOST_TEST(out["world_size"] == 4);
  BOOST_TEST(out["local_rank"] == 1);
  BOOST_TEST(out["unavailable"].is_null());

  env.variables = {{"SLURM_PROCID", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}};
  out = launcher_json(env);
  BOOST_TEST(out["rank"] == 1);
  BOOST_TEST(out["rank_from"] == "OMPI_COMM_WORLD_RANK");
  BOOST_TEST(out["world_size"].is_null());

  for (const char* bad : {"abc", "-1", "", "3 ", "99999999999"}) {
    env.variables = {{"RANK", bad}, {"SLURM_PROCID", "2"}};
    out = launcher_json(env);
    BOOST_TEST(out["rank"].is_null(), bad);  // never 0, never the next variable
    BOOST_TEST(out["rank_from"].is_null());
    BOOST_TEST(out["unavailable"].get<std::string>().find("is not a non-negative integer") != std::string::npos);
  }
  env.variables = {{"RANK", "4"}, {"WORLD_SIZE", "4"}};
  out = launcher_json(env);
  BOOST_TEST(out["rank"].is_null());
  BOOST_TEST(out["unavailable"] == "RANK=4 is not below WORLD_SIZE=4");

  env.variables = {{"RANK", "1"}, {"WORLD_SIZE", "two"}};
  out = launcher_json(env);
  BOOST_TEST(out["rank"] == 1);
  BOOST_TEST(out["world_size"].is_null());
  BOOST_TEST(out["notes"].dump().find("WORLD_SIZE=\\\"two\\\" is not a non-negative integer") != std::string::npos,
             out["notes"].dump());

  env.variables = {{"RANK", "0"}, {"WORLD_SIZE", "0"}};
  out = launcher_json(env);
  BOOST_TEST(out["rank"] == 0);
  BOOST_TEST(out["world_size"].is_null());
  BOOST_TEST(out["notes"].dump().find("WORLD_SIZE=0 is not a world size") != std::string::npos);

  env.variables = {{"MASTER_PORT", "29500"}};
  out = launcher_json(env);
  BOOST_TEST(out["rank"].is_null());
  BOOST_TEST(out["unavailable"].get<std::string>().find("no rank variable set") != std::string::npos);

  LauncherEnvironment failed;
  failed.unavailable = "stack mapping 0x1-0x2 not saved in core";
  out = launcher_json(failed);
  BOOST_TEST(out["unavailable"] == failed.unavailable);
  BOOST_TEST(out["source"].is_null());
}

namespace {

// A real process that called setenv("RANK", "7") and unsetenv() after start, read live
// (/proc/PID/environ holds the launcher's strings), from a gcore and from a kernel core
// (the initial stack, the rewritten slot and the moved slots noted). Each read is made
// once, where this machine allows it; the cases that need one are skipped without it.
struct RewrittenEnvironment {
  TempDir dir{"launcher-env"};
  LauncherEnvironment live, from_gcore, from_kernel_core;
  bool gdb_present = false, gcore_made = false, kernel_core_made = false;

  RewrittenEnvironment() {
    setenv("RANK", "3", 1);
    setenv("WORLD_SIZE", "4", 1);
    setenv("FIXTURE_GONE", "1", 1);
    setenv("LOCAL_RANK", "1", 1);  // after FIXTURE_GONE: its slot moves down
    setenv("SECRET_TOKEN", "hunter2", 1);
    testing::FixtureProcess fixture("environ_fixture", dir.path, true);
    LiveProcess process(fixture.pid(), false);
    live = read_launcher_environment(process);
    gdb_present = testing::have_gdb();
    std::string gcore = dir.path + "/fixture.gcore";
    gcore_made = gdb_present && testing::make_gcore(fixture.pid(), gcore);
    if (gcore_made) from_gcore = read_launcher_environment(*open_core_file(gcore, ""));
    std::string kernel_core = testing::kernel_core_path(dir.path, fixture.pid());
    kernel_core_made = !kernel_core.empty() && fixture.abort_and_wait() && access(kernel_core.c_str(), R_OK) == 0;
    if (kernel_core_made) from_kernel_core = read_launcher_environment(*open_core_file(kernel_core, ""));
  }
};

RewrittenEnvironment& rewritten() {
  static RewrittenEnvironment instance;
  return instance;
}

boost::test_tools::assertion_result gdb_present(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(rewritten().gdb_present);
  if (!result) result.message() << "gdb absent: no gcore";
  return result;
}

boost::test_tools::assertion_result kernel_core_made(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(rewritten().kernel_core_made);
  if (!result) result.message() << "no kernel core written here (core_pattern)";
  return result;
}

// What the launcher set, not setenv's 7, and never a secret.
void expect_launcher(LauncherEnvironment env, const std::string& source) {
  BOOST_TEST(env.unavailable == "", source);
  BOOST_TEST(env.source.rfind(source, 0) == 0u, env.source);
  BOOST_TEST(env.variables["RANK"] == "3", source);
  BOOST_TEST(env.variables["WORLD_SIZE"] == "4", source);
  BOOST_TEST(env.variables["LOCAL_RANK"] == "1", source);
  BOOST_TEST(env.variables.count("SECRET_TOKEN") == 0u);
}

}  // namespace

BOOST_AUTO_TEST_CASE(real_process_that_rewrote_its_environment_live) {
  expect_launcher(rewritten().live, "/proc/");
}

BOOST_AUTO_TEST_CASE(real_process_that_rewrote_its_environment_gcore, *boost::unit_test::precondition(gdb_present)) {
  BOOST_REQUIRE(rewritten().gcore_made);
  const LauncherEnvironment& from_gcore = rewritten().from_gcore;
  expect_launcher(from_gcore, "initial stack");
  BOOST_TEST(has_note(from_gcore, "1 envp[] slot(s) point off the initial stack"));
  BOOST_TEST(has_note(from_gcore, "1 envp[] slot(s) cleared by the program (unsetenv)"));
}

BOOST_AUTO_TEST_CASE(real_process_that_rewrote_its_environment_kernel_core,
                     *boost::unit_test::precondition(gdb_present) * boost::unit_test::precondition(kernel_core_made)) {
  BOOST_REQUIRE(rewritten().gcore_made);
  expect_launcher(rewritten().from_kernel_core, "initial stack");
  BOOST_TEST(rewritten().from_kernel_core.notes == rewritten().from_gcore.notes);
}

// What a shared slice keeps of each argument (issue 37): the program, option names, never a value.
BOOST_AUTO_TEST_CASE(visible_argument_prefixes) {
  using nsc::visible_argument_prefix;
  BOOST_TEST(visible_argument_prefix("/usr/bin/python3", 0) == 16u);
  BOOST_TEST(visible_argument_prefix("train.py", 1) == 0u);
  BOOST_TEST(visible_argument_prefix("--password=hunter2", 2) == 11u);  // "--password="
  BOOST_TEST(visible_argument_prefix("--password", 2) == 10u);
  BOOST_TEST(visible_argument_prefix("hunter2", 3) == 0u);              // its value
  BOOST_TEST(visible_argument_prefix("-phunter2", 1) == 2u);            // "-p"
  BOOST_TEST(visible_argument_prefix("-", 1) == 0u);
}
