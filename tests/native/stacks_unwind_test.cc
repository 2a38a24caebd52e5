// Unwinds the stack_fixture process live and from a gdb-made core; checks the
// frames, blocked_in, that the live process is left running, build-id
// mismatch handling, sysroot/solib-search-path, and corrupt cores.
#define BOOST_TEST_MODULE stacks_unwind
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "target_test_support.h"
#include "stacks/thread_stacks.h"
#include "target/callback_target.h"
#include "target/core_file.h"
#include "target/live_process.h"
#include "util/strings.h"
#include "support/elf_edit.h"

namespace fs = std::filesystem;

namespace {

const std::string kFixture = std::string(NCCLSCOPE_BINARY_DIR) + "/fixtures/stack_fixture";

// The fixture process, killed when the test ends.
class Fixture {
 public:
  explicit Fixture(const std::string& program, int extra_threads = 0,
                   const std::vector<std::string>& more_args = {}) {
    int pipe_fds[2];
    BOOST_REQUIRE(pipe(pipe_fds) == 0);
    pid_ = fork();
    BOOST_REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(pipe_fds[1], 1);
      close(pipe_fds[0]);
      std::vector<std::string> args = {program, "--extra-threads", std::to_string(extra_threads)};
      args.insert(args.end(), more_args.begin(), more_args.end());
      std::vector<char*> argv;
      for (std::string& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(program.c_str(), argv.data());
      _exit(127);
    }
    close(pipe_fds[1]);
    output_ = fdopen(pipe_fds[0], "r");
    char line[256];
    while (std::fgets(line, sizeof line, output_) != nullptr) {
      std::string text(line);
      if (text == "ready\n") {
        if (std::find(more_args.begin(), more_args.end(), "--churn") == more_args.end())
          nsc::testing::wait_until_all_threads_sleep(pid_);
        return;
      }
      // "tid NAME TID": NAME may hold spaces? No: fixture names have none.
      if (text.rfind("tid ", 0) == 0) {
        size_t last_space = text.rfind(' ');
        std::string name = text.substr(4, last_space - 4);
        tids_[name] = std::atoi(text.c_str() + last_space + 1);
      }
    }
    BOOST_FAIL("stack_fixture did not become ready");
  }
  ~Fixture() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    if (output_ != nullptr) std::fclose(output_);
  }
  int pid() const { return pid_; }
  int tid(const std::string& name) const { return tids_.at(name); }
  size_t thread_count() const { return tids_.size(); }

 private:
  int pid_ = -1;
  FILE* output_ = nullptr;
  std::map<std::string, int> tids_;
};

const nsc::ThreadStack* find_thread(const std::vector<nsc::ThreadStack>& threads, int tid) {
  for (const auto& thread : threads)
    if (thread.tid == tid) return &thread;
  return nullptr;
}

bool has_function(const nsc::ThreadStack& thread, const std::string& bare_name) {
  for (const auto& frame : thread.frames)
    if (nsc::bare_function_name(frame.function) == bare_name) return true;
  return false;
}

std::string task_status_field(int pid, int tid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) +
                       "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field + ":", 0) == 0) {
      std::string value = line.substr(field.size() + 1);
      return value.substr(value.find_first_not_of(" \t"));
    }
  return "";
}

std::string describe(const nsc::ThreadStack& thread) {
  std::ostringstream out;
  out << "tid " << thread.tid << " " << nsc::escape_for_terminal(thread.name) << " state "
      << thread.state << " blocked_in " << thread.blocked_in << " error '" << thread.error
      << "'\n";
  for (const auto& frame : thread.frames)
    out << "  " << nsc::hex(frame.pc) << " " << frame.function << "+" << frame.offset << " ["
        << frame.module << "]\n";
  return out.str();
}

// The main thread, poller and evil thread look as the fixture placed them.
void check_fixture_threads(const std::vector<nsc::ThreadStack>& threads, const Fixture& fixture) {
  const nsc::ThreadStack* main_thread = find_thread(threads, fixture.pid());
  BOOST_REQUIRE(main_thread != nullptr);
  BOOST_TEST_MESSAGE(describe(*main_thread));
  BOOST_TEST(has_function(*main_thread, "fixture_wait_in_user_code"));
  BOOST_TEST(has_function(*main_thread, "pause"));
  BOOST_TEST(main_thread->blocked_in == "sleep");
  const nsc::StackFrame* user = nsc::innermost_user_frame(main_thread->frames);
  BOOST_REQUIRE(user != nullptr);
  BOOST_TEST(user->function == "fixture_wait_in_user_code");
  BOOST_TEST(user->module == "stack_fixture");
  BOOST_TEST(user->inexact);  // a return address, looked up at pc-1

  const nsc::ThreadStack* poller = find_thread(threads, fixture.tid("fx-poller"));
  BOOST_REQUIRE(poller != nullptr);
  BOOST_TEST_MESSAGE(describe(*poller));
  BOOST_TEST(has_function(*poller, "fixture_poll_loop"));
  BOOST_TEST(has_function(*poller, "poll"));
  BOOST_TEST(poller->blocked_in == "poll/epoll");
  // The innermost frame sits in the system call: exact, in libc.
  BOOST_REQUIRE(!poller->frames.empty());
  BOOST_TEST(!poller->frames[0].inexact);
  BOOST_TEST(poller->frames[0].module == "libc.so.6");
  // A clean unwind reaches the outermost frame (clone3/start_thread) without error.
  BOOST_TEST(poller->error == "");
  BOOST_TEST(has_function(*poller, "start_thread"));

  const nsc::ThreadStack* evil = find_thread(threads, fixture.tid("\x1b[31mevil"));
  BOOST_REQUIRE(evil != nullptr);
  BOOST_TEST(has_function(*evil, "fixture_evil_named_wait"));
  BOOST_TEST(evil->blocked_in == "sleep");
}

// The system calls of a fixture nobody has stopped before (after a ptrace stop they
// continue as restart_syscall).
void check_fresh_fixture_syscalls(const std::vector<nsc::ThreadStack>& threads,
                                  const Fixture& fixture) {
  BOOST_TEST(find_thread(threads, fixture.pid())->syscall == 34);  // pause, x86-64
  const nsc::ThreadStack* poller = find_thread(threads, fixture.tid("fx-poller"));
  BOOST_TEST(nsc::syscall_name(poller->syscall) == "poll");
  BOOST_TEST(nsc::to_json(*poller)["syscall"] == "poll");
}

// File offsets [start, end) of a core's PT_NOTE segment.
std::pair<uintmax_t, uintmax_t> note_segment_range(const std::string& core) {
  elf_version(EV_CURRENT);
  int fd = open(core.c_str(), O_RDONLY);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  std::pair<uintmax_t, uintmax_t> range{0, 0};
  size_t count = 0;
  elf_getphdrnum(elf, &count);
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) != nullptr && phdr.p_type == PT_NOTE)
      range = {phdr.p_offset, phdr.p_offset + phdr.p_filesz};
  }
  elf_end(elf);
  close(fd);
  return range;
}

bool gdb_available() { return std::system("gdb --version > /dev/null 2>&1") == 0; }

// Cases that need a core made by gdb are skipped (reported) where gdb is missing.
boost::test_tools::assertion_result gdb_present(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(gdb_available());
  if (!result) result.message() << "gdb not installed: no core of the fixture";
  return result;
}

bool make_core(int pid, const std::string& core_path) {
  std::string command = "gdb -nx -batch -p " + std::to_string(pid) + " -ex 'gcore " + core_path +
                        "' > /dev/null 2>&1";
  return std::system(command.c_str()) == 0 && fs::exists(core_path);
}

struct TempDir {
  TempDir() {
    char pattern[] = "/tmp/nsc-stacks-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

bool any_warning_contains(const std::vector<std::string>& warnings, const std::string& text) {
  for (const auto& warning : warnings)
    if (warning.find(text) != std::string::npos) return true;
  return false;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

BOOST_AUTO_TEST_CASE(live_fixture_unwinds_and_keeps_running) {
  Fixture fixture(kFixture);
  std::vector<std::string> warnings;
  auto start = std::chrono::steady_clock::now();
  auto threads = nsc::unwind_live_threads(fixture.pid(), nsc::StackOptions{}, &warnings);
  BOOST_TEST_MESSAGE("live unwind of " << threads.size() << " threads: " << seconds_since(start)
                                       << " s");
  for (const auto& warning : warnings) BOOST_TEST_MESSAGE("warning: " << warning);
  BOOST_TEST(threads.size() == 3u);
  check_fixture_threads(threads, fixture);
  check_fresh_fixture_syscalls(threads, fixture);
  const nsc::ThreadStack* main_thread = find_thread(threads, fixture.pid());
  BOOST_TEST(main_thread->name == "stack_fixture");
  BOOST_TEST(main_thread->state == 'S');  // read before the thread was stopped
  const nsc::ThreadStack* evil = find_thread(threads, fixture.tid("\x1b[31mevil"));
  BOOST_TEST(evil->name == "\x1b[31mevil");
  BOOST_TEST(nsc::to_json(*evil)["name"] == "\x1b[31mevil");
  // Left running: every thread sleeping again and nobody tracing it.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (const auto& thread : threads) {
    BOOST_TEST(task_status_field(fixture.pid(), thread.tid, "State").substr(0, 1) == "S");
    BOOST_TEST(task_status_field(fixture.pid(), thread.tid, "TracerPid") == "0");
  }
  // A second unwind gives the same picture (the first left nothing attached).
  auto again = nsc::unwind_live_threads(fixture.pid(), nsc::StackOptions{}, &warnings);
  BOOST_TEST(again.size() == 3u);
  check_fixture_threads(again, fixture);
}

BOOST_AUTO_TEST_CASE(live_unwind_bounds_frames_and_names_bad_pids) {
  Fixture fixture(kFixture);
  nsc::StackOptions options;
  options.max_frames = 2;
  std::vector<std::string> warnings;
  auto threads = nsc::unwind_live_threads(fixture.pid(), options, &warnings);
  BOOST_REQUIRE(threads.size() == 3u);
  for (const auto& thread : threads) {
    BOOST_TEST(thread.frames.size() == 2u);
    BOOST_TEST(thread.error == "stopped after 2 frames (max_frames)");
  }
  for (const auto& thread : threads)
    BOOST_TEST(task_status_field(fixture.pid(), thread.tid, "TracerPid") == "0");
  // Through a frozen live Target: unwind_threads ends our freeze first, else no thread would stop.
  {
    auto frozen = nsc::open_live(fixture.pid(), /*freeze=*/true);
    auto through_target = nsc::unwind_threads(*frozen, options, &warnings);
    BOOST_REQUIRE(through_target.size() == 3u);
    for (const auto& thread : through_target) BOOST_TEST(thread.frames.size() == 2u);
  }
  warnings.clear();
  auto none = nsc::unwind_live_threads(999999999, nsc::StackOptions{}, &warnings);
  BOOST_TEST(none.empty());
  BOOST_REQUIRE(warnings.size() == 1u);
  BOOST_TEST(warnings[0].find("stacks pid 999999999: dwfl_linux_proc_report") == 0u);
  // Memory from a callback (gdb's) without threads: said, no stacks.
  warnings.clear();
  nsc::CallbackTarget from_gdb("gdb memory", 0, nullptr, {}, "");
  BOOST_TEST(nsc::unwind_threads(from_gdb, nsc::StackOptions{}, &warnings).empty());
  BOOST_REQUIRE(warnings.size() == 1u);
  BOOST_TEST(warnings[0] == "stacks gdb memory: no core file, no process of ours and no thread registers to unwind from");
}

BOOST_AUTO_TEST_CASE(core_of_the_fixture_unwinds_with_sysroot_solib_and_mismatch,
                     *boost::unit_test::precondition(gdb_present)) {
  TempDir temp;
  // Run a private copy so that its recorded path can be replaced afterwards.
  std::string program = temp.path + "/bin/stack_fixture";
  fs::create_directories(temp.path + "/bin");
  fs::copy_file(kFixture, program);
  std::string core = temp.path + "/fixture.core";
  {
    Fixture fixture(program, 7);
    BOOST_REQUIRE_MESSAGE(make_core(fixture.pid(), core), "gdb gcore failed");
    for (const auto& name : {"stack_fixture", "fx-poller"})
      BOOST_TEST(task_status_field(fixture.pid(), fixture.tid(name), "TracerPid") == "0");

    std::vector<std::string> warnings;
    auto start = std::chrono::steady_clock::now();
    auto threads = nsc::unwind_core_threads(core, nsc::StackOptions{}, &warnings);
    BOOST_TEST_MESSAGE("core unwind of " << threads.size() << " threads: "
                                         << seconds_since(start) << " s");
    for (const auto& warning : warnings) BOOST_TEST_MESSAGE("warning: " << warning);
    BOOST_TEST(threads.size() == 10u);
    check_fixture_threads(threads, fixture);
    check_fresh_fixture_syscalls(threads, fixture);  // gdb's stop did not restart them yet
    const nsc::ThreadStack* main_thread = find_thread(threads, fixture.pid());
    BOOST_TEST(main_thread->name == "stack_fixture");  // NT_PRPSINFO
    BOOST_TEST(main_thread->state == '?');
    BOOST_TEST(find_thread(threads, fixture.tid("fx-poller"))->name == "");
    const nsc::ThreadStack* sleeper = find_thread(threads, fixture.tid("fx-sleeper-3"));
    BOOST_REQUIRE(sleeper != nullptr);
    BOOST_TEST(has_function(*sleeper, "fixture_sleep_loop"));
    BOOST_TEST(sleeper->blocked_in == "sleep");
    BOOST_TEST(warnings.empty());

    // Through the Target that decoded the core (what a state document does): the same stacks.
    auto opened = nsc::open_core(core, "");
    auto through_target = nsc::unwind_threads(*opened, nsc::StackOptions{}, &warnings);
    BOOST_TEST(warnings.empty());
    BOOST_REQUIRE(through_target.size() == threads.size());
    for (size_t i = 0; i < threads.size(); ++i) {
      BOOST_TEST((nsc::to_json(through_target[i]) == nsc::to_json(threads[i])), "tid " << threads[i].tid);
    }

    // The same process live and from its core: same frames.
    auto live = nsc::unwind_live_threads(fixture.pid(), nsc::StackOptions{}, &warnings);
    const nsc::ThreadStack* live_poller = find_thread(live, fixture.tid("fx-poller"));
    const nsc::ThreadStack* core_poller = find_thread(threads, fixture.tid("fx-poller"));
    BOOST_REQUIRE(live_poller->frames.size() == core_poller->frames.size());
    for (size_t i = 0; i < live_poller->frames.size(); ++i) {
      BOOST_TEST(live_poller->frames[i].function == core_poller->frames[i].function);
      BOOST_TEST(live_poller->frames[i].pc == core_poller->frames[i].pc);
    }
  }

  // The program file at the recorded path is now a different build.
  std::string sysroot = temp.path + "/sysroot";
  fs::create_directories(sysroot + temp.path + "/bin");
  fs::copy_file(program, sysroot + program);
  nsc_test::corrupt_build_id(program);
  {
    std::vector<std::string> warnings;
    auto threads = nsc::unwind_core_threads(core, nsc::StackOptions{}, &warnings);
    BOOST_TEST(threads.size() == 10u);
    bool saw_mismatch_label = false;
    for (const auto& thread : threads) {
      BOOST_TEST(!has_function(thread, "fixture_wait_in_user_code"));
      for (const auto& frame : thread.frames) {
        if (frame.module.rfind("stack_fixture (build-id mismatch: core ", 0) == 0) {
          saw_mismatch_label = true;
          BOOST_TEST(frame.function == "");
        }
      }
    }
    BOOST_TEST(saw_mismatch_label);
    BOOST_TEST(any_warning_contains(warnings, "stack_fixture: build-id mismatch: the core records"));
    BOOST_TEST(any_warning_contains(warnings, program + " has "));
  }
  std::vector<nsc::StackOptions> fixes(3);
  fixes[0].sysroot = sysroot;
  fixes[1].solib_search_path = {temp.path + "/nowhere", sysroot + temp.path + "/bin"};
  fixes[2].executable = sysroot + program;
  for (const auto& options : fixes) {
    std::vector<std::string> warnings;
    auto threads = nsc::unwind_core_threads(core, options, &warnings);
    BOOST_TEST(threads.size() == 10u);
    int symbolized_main = 0;
    for (const auto& thread : threads)
      if (has_function(thread, "fixture_wait_in_user_code")) ++symbolized_main;
    BOOST_TEST(symbolized_main == 1);
    BOOST_TEST(!any_warning_contains(warnings, "build-id mismatch"));
  }
}

BOOST_AUTO_TEST_CASE(corrupt_and_truncated_cores_do_not_crash, *boost::unit_test::precondition(gdb_present)) {
  TempDir temp;
  std::string core = temp.path + "/fixture.core";
  {
    Fixture fixture(kFixture);
    BOOST_REQUIRE(make_core(fixture.pid(), core));
  }
  std::vector<std::string> warnings;
  auto missing = nsc::unwind_core_threads(temp.path + "/absent.core", {}, &warnings);
  BOOST_TEST(missing.empty());
  BOOST_TEST(any_warning_contains(warnings, "absent.core: cannot open: No such file or directory"));

  std::string not_core = temp.path + "/text.core";
  std::ofstream(not_core) << "this is not an ELF file\n";
  warnings.clear();
  BOOST_TEST(nsc::unwind_core_threads(not_core, {}, &warnings).empty());
  BOOST_TEST(any_warning_contains(warnings, "text.core: not an ELF file"));

  warnings.clear();
  BOOST_TEST(nsc::unwind_core_threads(kFixture, {}, &warnings).empty());  // ET_EXEC/DYN
  BOOST_TEST(any_warning_contains(warnings, "not a core file (ELF type"));

  // Truncated at several points (gdb writes the notes last: all of these cut them).
  auto size = fs::file_size(core);
  auto [notes_start, notes_end] = note_segment_range(core);
  BOOST_REQUIRE(notes_end > notes_start);
  for (uintmax_t keep : {uintmax_t{64}, uintmax_t{4096}, uintmax_t{65536}, size / 4, size / 2,
                         notes_start + 16, notes_end - 100}) {
    std::string cut = temp.path + "/cut.core";
    fs::copy_file(core, cut, fs::copy_options::overwrite_existing);
    fs::resize_file(cut, keep);
    warnings.clear();
    auto threads = nsc::unwind_core_threads(cut, {}, &warnings);
    BOOST_TEST_MESSAGE("truncated to " << keep << ": " << threads.size() << " threads, "
                                       << warnings.size() << " warnings"
                                       << (warnings.empty() ? "" : ": " + warnings[0]));
    BOOST_TEST(threads.size() <= 3u);
    if (keep >= 4096) BOOST_TEST(any_warning_contains(warnings, "truncated"));
  }
  // Stacks and heap overwritten with noise, notes (registers) intact: gdb writes
  // the notes after the memory, the kernel before it; keep them either way.
  std::string scrambled = temp.path + "/scrambled.core";
  fs::copy_file(core, scrambled);
  {
    std::fstream file(scrambled, std::ios::in | std::ios::out | std::ios::binary);
    uint64_t state = 0x9e3779b97f4a7c15ULL;
    for (uintmax_t offset = 4096; offset + 8 < size; offset += 8) {
      if (offset + 8 > notes_start && offset < notes_end) continue;
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      file.seekp(static_cast<std::streamoff>(offset));
      file.write(reinterpret_cast<const char*>(&state), 8);
    }
  }
  warnings.clear();
  auto threads = nsc::unwind_core_threads(scrambled, {}, &warnings);
  BOOST_TEST_MESSAGE("scrambled core: " << threads.size() << " threads, " << warnings.size()
                                        << " warnings");
  BOOST_TEST(threads.size() == 3u);  // the registers are still there
  for (const auto& thread : threads) {
    BOOST_TEST_MESSAGE(describe(thread));
    BOOST_TEST(thread.frames.size() <= 64u);
    BOOST_TEST(!thread.frames.empty());  // the innermost pc comes from the registers
  }
}

// Threads start and end while the unwinder walks the process: no crash, every
// thread that existed is reported or skipped, and nothing is left stopped or traced.
BOOST_AUTO_TEST_CASE(live_unwind_while_threads_come_and_go) {
  Fixture fixture(kFixture, 0, {"--churn"});
  size_t unwinds_with_errors = 0;
  for (int round = 0; round < 30; ++round) {
    std::vector<std::string> warnings;
    auto threads = nsc::unwind_live_threads(fixture.pid(), nsc::StackOptions{}, &warnings);
    BOOST_TEST(threads.size() >= 4u);  // main, poller, evil, churn (+ a short-lived one)
    BOOST_TEST(find_thread(threads, fixture.tid("fx-poller")) != nullptr);
    for (const auto& thread : threads) {
      if (thread.error.empty()) continue;
      if (unwinds_with_errors++ == 0)
        BOOST_TEST_MESSAGE("first error: " << describe(thread));
    }
  }
  BOOST_TEST_MESSAGE("30 live unwinds under thread churn; threads with errors: "
                     << unwinds_with_errors);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (const auto& entry :
       fs::directory_iterator("/proc/" + std::to_string(fixture.pid()) + "/task")) {
    int tid = std::stoi(entry.path().filename().string());
    std::string tracer = task_status_field(fixture.pid(), tid, "TracerPid");
    BOOST_TEST((tracer.empty() || tracer == "0"));  // empty: the thread has ended since
    std::string state = task_status_field(fixture.pid(), tid, "State");
    BOOST_TEST((state.empty() || (state[0] != 't' && state[0] != 'T')));
  }
}

// Real libnccl 2.28.9 (symbols and DWARF): ncclGetUniqueId leaves NCCL's
// bootstrap root thread waiting in accept(); no GPU is involved.
const char kRealNccl[] = "/usr/local/cuda-13.0/lib/libnccl.so.2";

boost::test_tools::assertion_result real_nccl_present(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(fs::exists(kRealNccl));
  if (!result) result.message() << kRealNccl << " absent";
  return result;
}

// NCCL's bootstrap root thread waits in accept() inside libnccl; the main thread sleeps.
void check_bootstrap_threads(const std::vector<nsc::ThreadStack>& threads, int fixture_pid, const char* how) {
  BOOST_TEST_CONTEXT(how) {
    BOOST_TEST(threads.size() == 4u);
    const nsc::ThreadStack* root = nullptr;
    for (const auto& thread : threads)
      if (has_function(thread, "bootstrapRoot")) root = &thread;
    BOOST_REQUIRE(root != nullptr);
    BOOST_TEST_MESSAGE(describe(*root));
    BOOST_TEST(root->blocked_in == "nccl-bootstrap");
    bool saw_accept_in_nccl = false;
    for (const auto& frame : root->frames) {
      if (frame.function == "ncclSocketAccept(ncclSocket*, ncclSocket*)") {
        saw_accept_in_nccl = true;
        BOOST_TEST(frame.module == "libnccl.so.2");
      }
    }
    BOOST_TEST(saw_accept_in_nccl);
    BOOST_TEST(root->error == "");
    BOOST_TEST(find_thread(threads, fixture_pid)->blocked_in == "sleep");
  }
}

BOOST_AUTO_TEST_CASE(real_libnccl_bootstrap_thread_live, *boost::unit_test::precondition(real_nccl_present)) {
  Fixture fixture(kFixture, 0, {"--nccl-lib", kRealNccl});
  std::vector<std::string> warnings;
  auto start = std::chrono::steady_clock::now();
  auto live = nsc::unwind_live_threads(fixture.pid(), nsc::StackOptions{}, &warnings);
  BOOST_TEST_MESSAGE("live unwind with libnccl: " << seconds_since(start) << " s");
  check_bootstrap_threads(live, fixture.pid(), "live");
  for (const auto& thread : live)
    BOOST_TEST(task_status_field(fixture.pid(), thread.tid, "TracerPid") == "0");
  BOOST_TEST(warnings.empty());
}

BOOST_AUTO_TEST_CASE(real_libnccl_bootstrap_thread_in_a_core, *boost::unit_test::precondition(real_nccl_present) *
                                                                   boost::unit_test::precondition(gdb_present)) {
  Fixture fixture(kFixture, 0, {"--nccl-lib", kRealNccl});
  std::vector<std::string> warnings;
  TempDir temp;
  std::string core = temp.path + "/nccl.core";
  BOOST_REQUIRE(make_core(fixture.pid(), core));
  auto start = std::chrono::steady_clock::now();
  auto from_core = nsc::unwind_core_threads(core, nsc::StackOptions{}, &warnings);
  BOOST_TEST_MESSAGE("core unwind with libnccl (" << fs::file_size(core) / 1048576
                                                  << " MB core): " << seconds_since(start) << " s");
  check_bootstrap_threads(from_core, fixture.pid(), "core");
  BOOST_TEST(warnings.empty());
}
