// Stacks over a Target alone (unwind_threads_over_target): a callback target whose memory and
// registers come from a gcore of the stack fixture gives the same frames as the core path on
// that core; so does the generic path over the core itself; and bad registers or unreadable
// stacks end in a thread's error, never a crash or a hang.
#define BOOST_TEST_MODULE stacks_callback
#include <boost/test/unit_test.hpp>

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <sys/procfs.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "snapshot/state_document.h"
#include "stacks/thread_stacks.h"
#include "target/callback_target.h"
#include "target/core_file.h"
#include "target/core_notes.h"
#include "util/errors.h"
#include "util/strings.h"
#include "support/elf_edit.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kFixture = std::string(NCCLSCOPE_BINARY_DIR) + "/fixtures/stack_fixture";

bool gdb_available() { return std::system("gdb --version > /dev/null 2>&1") == 0; }

// Without gdb (to make the core) or the fixture, the cases report skipped.
boost::test_tools::assertion_result core_inputs_present(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(gdb_available() && fs::exists(kFixture));
  if (!result) result.message() << "gdb or " << kFixture << " missing: no core of the fixture";
  return result;
}

// A gcore of the stack fixture with 2 extra sleepers (5 threads), made once for all cases.
struct FixtureCore {
  // copy_program: run a private copy (bin/stack_fixture here), so that its file can be changed.
  explicit FixtureCore(bool copy_program = false) {
    char pattern[] = "/tmp/nsc-stacks-cb-XXXXXX";
    directory = mkdtemp(pattern);
    path = directory + "/fixture.core";
    program = kFixture;
    if (copy_program) {
      fs::create_directories(directory + "/bin");
      program = directory + "/bin/stack_fixture";
      fs::copy_file(kFixture, program);
    }
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) return;
    pid_t pid = fork();
    if (pid == 0) {
      dup2(pipe_fds[1], 1);
      close(pipe_fds[0]);
      execl(program.c_str(), program.c_str(), "--extra-threads", "2", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(pipe_fds[1]);
    FILE* output = fdopen(pipe_fds[0], "r");
    char line[256];
    bool ready = false;
    while (!ready && std::fgets(line, sizeof line, output) != nullptr) ready = std::string(line) == "ready\n";
    if (ready) {
      usleep(200 * 1000);  // "ready" comes just before the main thread's pause()
      std::string command = "gdb -nx -batch -p " + std::to_string(pid) + " -ex 'gcore " + path + "' > /dev/null 2>&1";
      made = std::system(command.c_str()) == 0 && fs::exists(path);
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    std::fclose(output);
  }
  ~FixtureCore() { fs::remove_all(directory); }
  std::string directory, path, program;
  bool made = false;
};

const FixtureCore& fixture_core() {
  static FixtureCore core;
  BOOST_REQUIRE_MESSAGE(core.made, "gdb gcore of the stack fixture failed");
  return core;
}

// The registers gdb would read of frame 0, from a thread's NT_PRSTATUS: "0x..." by name.
json registers_json(const nsc::ThreadInfo& thread) {
  static const std::map<std::string, size_t> kOffsets = {
      {"rax", offsetof(user_regs_struct, rax)}, {"rdx", offsetof(user_regs_struct, rdx)},
      {"rcx", offsetof(user_regs_struct, rcx)}, {"rbx", offsetof(user_regs_struct, rbx)},
      {"rsi", offsetof(user_regs_struct, rsi)}, {"rdi", offsetof(user_regs_struct, rdi)},
      {"rbp", offsetof(user_regs_struct, rbp)}, {"rsp", offsetof(user_regs_struct, rsp)},
      {"r8", offsetof(user_regs_struct, r8)},   {"r9", offsetof(user_regs_struct, r9)},
      {"r10", offsetof(user_regs_struct, r10)}, {"r11", offsetof(user_regs_struct, r11)},
      {"r12", offsetof(user_regs_struct, r12)}, {"r13", offsetof(user_regs_struct, r13)},
      {"r14", offsetof(user_regs_struct, r14)}, {"r15", offsetof(user_regs_struct, r15)},
      {"rip", offsetof(user_regs_struct, rip)}, {"orig_rax", offsetof(user_regs_struct, orig_rax)},
      {"fs_base", offsetof(user_regs_struct, fs_base)}};
  json registers = json::object();
  for (const auto& [name, offset] : kOffsets) {
    uint64_t value = 0;
    std::memcpy(&value, thread.prstatus.data() + offsetof(elf_prstatus, pr_reg) + offset, sizeof value);
    registers[name] = nsc::hex(value);
  }
  return registers;
}

// The request a front end would send for the core: its regions (the vDSO named as gdb's
// `info proc mappings` names it) and its threads with their registers.
json regions_json(nsc::Target& core) {
  uint64_t vdso = nsc::auxv_value(core.auxv(), AT_SYSINFO_EHDR).value_or(0);
  json regions = json::array();
  for (const nsc::MemoryRegion& region : core.regions()) {
    std::string path = region.path;
    if (path.empty() && region.start <= vdso && vdso < region.end) path = "[vdso]";
    regions.push_back({{"start", nsc::hex(region.start)}, {"end", nsc::hex(region.end)},
                       {"writable", region.writable}, {"saved", region.saved}, {"path", path},
                       {"file_offset", nsc::hex(region.file_offset)}});
  }
  return regions;
}

json threads_json(nsc::Target& core) {
  json threads = json::array();
  for (const nsc::ThreadInfo& thread : core.threads())
    threads.push_back({{"tid", thread.tid}, {"name", "t" + std::to_string(thread.tid)},
                       {"registers", registers_json(thread)}});
  return threads;
}

nsc::StateRequest callback_request(nsc::Target& core, json threads) {
  nsc::StateRequest request;
  request.read_memory = [target = &core](uint64_t address, void* buffer, uint64_t length, std::string* why) {
    nsc::ReadError error;
    if (target->read(address, buffer, length, &error)) return true;
    *why = error.message();
    return false;
  };
  request.callback_regions = regions_json(core);
  request.callback_threads = std::move(threads);
  request.executable = core.executable();
  request.pid = core.pid();
  request.progress = false;
  return request;
}

std::string frames_text(const json& thread) {
  std::ostringstream out;
  for (const json& frame : thread["frames"])
    out << frame["pc"].get<std::string>() << " " << frame["function"] << " [" << frame["module"].get<std::string>() << "] ";
  return out.str();
}

const json* thread_with_tid(const json& threads, int tid) {
  for (const json& thread : threads)
    if (thread["tid"] == tid) return &thread;
  return nullptr;
}

bool has_function(const json& thread, const std::string& name) {
  for (const json& frame : thread["frames"])
    if (frame["function"].is_string() && nsc::bare_function_name(frame["function"].get<std::string>()) == name)
      return true;
  return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(generic_path_over_the_core_equals_the_core_path, *boost::unit_test::precondition(core_inputs_present)) {
  auto core = nsc::open_core(fixture_core().path, "");
  std::vector<std::string> core_warnings, generic_warnings;
  auto by_core = nsc::unwind_threads(*core, nsc::StackOptions{}, &core_warnings);
  auto by_target = nsc::unwind_threads_over_target(*core, nsc::StackOptions{}, &generic_warnings);
  for (const auto& warning : generic_warnings) BOOST_TEST_MESSAGE("warning: " << warning);
  BOOST_TEST(core_warnings.empty());
  BOOST_TEST(generic_warnings.empty());
  BOOST_REQUIRE(by_core.size() == 5u);
  BOOST_REQUIRE(by_target.size() == by_core.size());
  size_t frames_compared = 0;
  for (size_t i = 0; i < by_core.size(); ++i) {
    BOOST_TEST((nsc::to_json(by_target[i]) == nsc::to_json(by_core[i])),
               "tid " << by_core[i].tid << "\n  core:   " << frames_text(nsc::to_json(by_core[i]))
                      << "\n  target: " << frames_text(nsc::to_json(by_target[i])));
    frames_compared += by_core[i].frames.size();
  }
  BOOST_TEST(frames_compared >= 5u * 4u);  // each thread: at least wait, caller, start frames
  BOOST_TEST_MESSAGE("generic path over the core: " << frames_compared << " frames equal in " << by_core.size() << " threads");
}

BOOST_AUTO_TEST_CASE(callback_target_from_a_core_equals_the_core_path, *boost::unit_test::precondition(core_inputs_present)) {
  auto core = nsc::open_core(fixture_core().path, "");
  nsc::StateRequest by_core_request;
  by_core_request.core_path = fixture_core().path;
  by_core_request.progress = false;
  json by_core = nsc::build_state_document(by_core_request);
  json by_callback = nsc::build_state_document(callback_request(*core, threads_json(*core)));
  BOOST_TEST(by_callback["target"]["kind"] == "callback");
  BOOST_TEST_MESSAGE("callback warnings: " << by_callback["warnings"].dump());
  for (const json& warning : by_callback["warnings"]) BOOST_TEST(warning["kind"] != "stacks", warning.dump());
  const json& core_threads = by_core["threads"];
  const json& callback_threads = by_callback["threads"];
  BOOST_REQUIRE(core_threads.size() == 5u);
  BOOST_REQUIRE(callback_threads.size() == core_threads.size());
  size_t frames_compared = 0, named = 0;
  for (const json& expected : core_threads) {
    const json* actual = thread_with_tid(callback_threads, expected["tid"].get<int>());
    BOOST_REQUIRE(actual != nullptr);
    BOOST_TEST((*actual)["frames"] == expected["frames"],
               "tid " << expected["tid"] << "\n  core:     " << frames_text(expected) << "\n  callback: " << frames_text(*actual));
    BOOST_TEST((*actual)["blocked_in"] == expected["blocked_in"]);
    BOOST_TEST((*actual).value("syscall", "") == expected.value("syscall", ""));  // orig_rax from the registers
    BOOST_TEST((*actual)["name"] == "t" + std::to_string(expected["tid"].get<int>()));  // the front end's name
    BOOST_TEST(!actual->contains("error"));
    frames_compared += expected["frames"].size();
    for (const json& frame : expected["frames"]) named += frame["function"].is_string() ? 1 : 0;
  }
  const json* main_thread = thread_with_tid(callback_threads, by_core["target"]["pid"].get<int>());
  BOOST_REQUIRE(main_thread != nullptr);
  BOOST_TEST(has_function(*main_thread, "fixture_wait_in_user_code"));
  BOOST_TEST((*main_thread)["blocked_in"] == "sleep");
  BOOST_TEST(frames_compared >= 20u);
  BOOST_TEST(named >= frames_compared / 2);
  BOOST_TEST_MESSAGE("callback target vs core: " << frames_compared << " frames (" << named
                                                 << " symbolized) equal in " << core_threads.size() << " threads");
}

BOOST_AUTO_TEST_CASE(a_file_of_another_build_is_not_used_for_symbols, *boost::unit_test::precondition(core_inputs_present)) {
  FixtureCore copied(/*copy_program=*/true);
  BOOST_REQUIRE_MESSAGE(copied.made, "gdb gcore of the copied stack fixture failed");
  std::string good_copy = copied.directory + "/good_stack_fixture";
  fs::copy_file(copied.program, good_copy);
  nsc_test::corrupt_build_id(copied.program);  // the file at the recorded path is now another build
  auto core = nsc::open_core(copied.path, "");
  json threads = threads_json(*core);
  json document = nsc::build_state_document(callback_request(*core, threads));
  size_t mismatch_frames = 0;
  for (const json& thread : document["threads"]) {
    BOOST_TEST(!has_function(thread, "fixture_wait_in_user_code"));
    for (const json& frame : thread["frames"])
      if (frame["module"].get<std::string>().rfind("stack_fixture (build-id mismatch: core ", 0) == 0) {
        ++mismatch_frames;
        BOOST_TEST(frame["function"].is_null());
      }
  }
  BOOST_TEST(mismatch_frames >= 5u);
  bool warned = false;
  for (const json& warning : document["warnings"])
    warned = warned || warning["reason"].get<std::string>().find("stack_fixture: build-id mismatch: the core records") != std::string::npos;
  BOOST_TEST(warned, document["warnings"].dump());
  // The right file named as the executable (gdb's `file`): symbols again.
  nsc::StateRequest with_executable = callback_request(*core, threads);
  with_executable.executable = good_copy;
  json fixed = nsc::build_state_document(with_executable);
  const json* main_thread = thread_with_tid(fixed["threads"], core->pid());
  BOOST_REQUIRE(main_thread != nullptr);
  BOOST_TEST(has_function(*main_thread, "fixture_wait_in_user_code"), main_thread->dump());
}

BOOST_AUTO_TEST_CASE(bad_registers_and_unreadable_stacks_are_per_thread_errors,
                     *boost::unit_test::precondition(core_inputs_present)) {
  auto core = nsc::open_core(fixture_core().path, "");
  json threads = threads_json(*core);
  BOOST_REQUIRE(threads.size() == 5u);
  threads[1].erase("registers");                         // a thread gdb could not read
  threads[1]["registers_unavailable"] = "thread is running";
  threads[2]["registers"]["rsp"] = "0x10";               // torn: the stack pointer in no mapping
  threads[3]["registers"]["rip"] = "0xdeadbeef";         // torn: code in no module
  threads[3]["registers"]["rbp"] = "0x20";
  threads[4]["registers"].erase("rip");                  // half a register set
  threads[4]["registers"]["rax"] = "<unavailable>";
  auto start = std::chrono::steady_clock::now();
  json document = nsc::build_state_document(callback_request(*core, threads));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST(seconds < 30.0);
  const json& out = document["threads"];
  BOOST_REQUIRE(out.size() == 5u);
  BOOST_TEST_MESSAGE(out.dump(1));
  BOOST_TEST(out[0]["frames"].size() >= 4u);  // the intact thread still unwinds
  BOOST_TEST(!out[0].contains("error"));
  BOOST_TEST(out[1]["frames"].empty());
  BOOST_TEST(out[1]["error"] == "no registers: thread is running");
  // rsp 0x10: the innermost frame (rip) stands; its return address could not be read.
  BOOST_TEST(out[2]["frames"].size() == 1u);
  BOOST_TEST(out[2]["frames"][0]["pc"] == threads[2]["registers"]["rip"]);
  BOOST_TEST(out[2].value("error", "").find("stack memory unreadable: 0x") != std::string::npos, out[2].dump());
  BOOST_TEST(out[3]["frames"][0]["pc"] == "0xdeadbeef");
  BOOST_TEST(out[3]["frames"].size() <= 2u);
  BOOST_TEST(out[3].contains("error"));
  BOOST_TEST(out[4]["frames"].empty());
  BOOST_TEST(out[4]["error"] == "no registers: no rip from the front end");

  // Every stack read refused (a remote that cannot read the stack): errors, not a crash.
  nsc::StateRequest refusing = callback_request(*core, threads_json(*core));
  auto inner = refusing.read_memory;
  refusing.read_memory = [inner, core = core.get()](uint64_t address, void* buffer, uint64_t length, std::string* why) {
    for (const nsc::ThreadInfo& thread : core->threads()) {
      uint64_t sp = nsc::stack_pointer_of(thread).value_or(0);
      if (address + length > sp - 65536 && address < sp + (1u << 20)) {
        *why = "stack withheld";
        return false;
      }
    }
    return inner(address, buffer, length, why);
  };
  json refused = nsc::build_state_document(refusing);
  for (const json& thread : refused["threads"]) {
    BOOST_TEST(thread["frames"].size() <= 1u);
    BOOST_TEST(thread.value("error", "").find("stack withheld") != std::string::npos, thread.dump());
  }

  // Another architecture: threads listed, no frames, one warning.
  nsc::StateRequest arm = callback_request(*core, threads_json(*core));
  arm.callback_architecture = "aarch64";
  json arm_document = nsc::build_state_document(arm);
  BOOST_REQUIRE(arm_document["threads"].size() == 5u);
  for (const json& thread : arm_document["threads"]) {
    BOOST_TEST(thread["frames"].empty());
    BOOST_TEST(thread["error"] == "no registers: registers of aarch64 are not understood (x86-64 only)");
  }
  size_t stack_warnings = 0;
  for (const json& warning : arm_document["warnings"]) stack_warnings += warning["kind"] == "stacks" ? 1 : 0;
  BOOST_TEST(stack_warnings == 1u);

  // A thread entry without a tid is a malformed request, said in one line.
  nsc::StateRequest no_tid = callback_request(*core, json::array({json::object({{"name", "x"}})}));
  BOOST_CHECK_EXCEPTION(nsc::build_state_document(no_tid), nsc::UsageError, [](const nsc::UsageError& error) {
    return std::string(error.what()) == "threads: each entry needs an integer \"tid\"";
  });
}

BOOST_AUTO_TEST_CASE(registers_become_a_prstatus_the_core_helpers_read) {
  nsc::ThreadInfo thread;
  thread.prstatus = nsc::prstatus_from_registers(42, {{"rip", 0x401000}, {"rsp", 0x7ffc0000}, {"rbp", 0x7ffc0100},
                                                      {"fs_base", 0x7f0000001000}, {"xmm0", 5}});
  BOOST_TEST(nsc::instruction_pointer_of(thread).value() == 0x401000u);
  BOOST_TEST(nsc::stack_pointer_of(thread).value() == 0x7ffc0000u);
  BOOST_TEST(nsc::thread_pointer_of(thread).value() == 0x7f0000001000u);
  BOOST_TEST(!nsc::syscall_of(thread).has_value());  // orig_rax not given: in no system call
  auto dwarf = nsc::dwarf_registers_of(thread);
  BOOST_REQUIRE(dwarf.has_value());
  BOOST_TEST((*dwarf)[16] == 0x401000u);  // rip
  BOOST_TEST((*dwarf)[7] == 0x7ffc0000u);  // rsp
  BOOST_TEST((*dwarf)[6] == 0x7ffc0100u);  // rbp
  BOOST_TEST((*dwarf)[0] == 0u);
  nsc::CoreNotes notes;
  nsc::add_core_note(NT_PRSTATUS, "CORE", thread.prstatus.data(), thread.prstatus.size(), &notes);
  BOOST_REQUIRE(notes.threads.size() == 1u);
  BOOST_TEST(notes.threads[0].tid == 42);
  BOOST_TEST((nsc::missing_unwind_registers({{"rip", 1}}) == std::vector<std::string>{"rsp"}));

  // A callback target with no threads: one warning, no stacks.
  std::vector<std::string> warnings;
  nsc::CallbackTarget from_gdb("gdb memory", 0, nullptr, {}, "");
  BOOST_TEST(nsc::unwind_threads(from_gdb, nsc::StackOptions{}, &warnings).empty());
  BOOST_REQUIRE(warnings.size() == 1u);
  BOOST_TEST(warnings[0] == "stacks gdb memory: no core file, no process of ours and no thread registers to unwind from");
}
