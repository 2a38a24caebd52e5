#define BOOST_TEST_MODULE target_live
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <cstring>
#include <vector>

#include "target/build_ids.h"
#include "target/live_process.h"
#include "target/memory_chunks.h"
#include "target_test_support.h"
#include "util/errors.h"

using namespace nsc;
using nsc::testing::FixtureProcess;
using nsc::testing::process_state;

namespace {

constexpr uint64_t kSmallTag = 0x5A5A5A5A00000000ull;
constexpr uint64_t kBigTag = 0xB16B16B100000000ull;

void check_patterns(Target& target, const FixtureProcess& fixture) {
  std::vector<uint64_t> small(8);
  ReadError error;
  BOOST_REQUIRE(target.read(fixture.address("small"), small.data(), 64, &error));
  for (uint64_t i = 0; i < 8; ++i) BOOST_TEST(small[i] == (kSmallTag | i));

  uint64_t big_words = fixture.info()["big_words"];
  std::vector<uint64_t> big(big_words);
  BOOST_REQUIRE_MESSAGE(target.read(fixture.address("big"), big.data(), big_words * 8, &error),
                        error.message());
  BOOST_TEST(big[0] == kBigTag);
  BOOST_TEST(big[big_words - 1] == (kBigTag | (big_words - 1)));
  BOOST_TEST(big[123457] == (kBigTag | 123457));

  auto text = read_c_string(target, fixture.address("string"), 256, &error);
  BOOST_REQUIRE(text);
  BOOST_TEST(*text == "ncclscope memory fixture: hello");
}

// Follows node->next from the cycle head; returns the number of steps back to it.
int cycle_length(Target& target, uint64_t head) {
  uint64_t node = head;
  for (int steps = 1; steps <= 10; ++steps) {
    uint64_t next = 0;
    ReadError error;
    if (!target.read_value(node, &next, &error)) return -1;
    if (next == head) return steps;
    node = next;
  }
  return -1;
}

// State once the thread stops running (up to 2 s): 'S' after a resume, 't' if left stopped.
char settled_state(int pid, int tid) {
  char state = process_state(pid, tid);
  for (int i = 0; i < 2000 && state == 'R'; ++i, state = process_state(pid, tid)) usleep(1000);
  return state;
}

}  // namespace

BOOST_AUTO_TEST_CASE(reads_patterns_without_stopping_the_process) {
  FixtureProcess fixture;
  auto target = open_live(fixture.pid(), false);
  BOOST_TEST(!target->is_core());
  BOOST_TEST(target->pid() == fixture.pid());
  BOOST_TEST(target->describe() == "pid " + std::to_string(fixture.pid()));
  check_patterns(*target, fixture);
  BOOST_TEST(cycle_length(*target, fixture.address("cycle")) == 3);
  BOOST_TEST(process_state(fixture.pid()) == 'S');  // never stopped by a plain read
  BOOST_TEST(target->executable() == nsc::testing::fixture_path("memory_fixture"));
}

BOOST_AUTO_TEST_CASE(threads_have_names_and_states) {
  FixtureProcess fixture;
  auto target = open_live(fixture.pid(), false);
  auto threads = target->threads();
  BOOST_REQUIRE_EQUAL(threads.size(), 2u);
  BOOST_TEST(threads[0].tid == fixture.pid());
  BOOST_TEST(threads[0].name == "memory_fixture");
  BOOST_TEST(threads[1].tid == fixture.info()["worker_tid"].get<int>());
  BOOST_TEST(threads[1].name == "fixture-worker");
  BOOST_TEST(threads[1].state == 'S');
  BOOST_TEST(threads[1].prstatus.empty());  // registers only when frozen
}

BOOST_AUTO_TEST_CASE(freeze_stops_every_thread_and_always_resumes) {
  FixtureProcess fixture;
  int worker = fixture.info()["worker_tid"];
  {
    auto target = open_live(fixture.pid(), true);
    BOOST_TEST(process_state(fixture.pid(), fixture.pid()) == 't');  // tracing stop
    BOOST_TEST(process_state(fixture.pid(), worker) == 't');
    check_patterns(*target, fixture);
    auto threads = target->threads();
    BOOST_REQUIRE_EQUAL(threads.size(), 2u);
    BOOST_TEST(threads[1].prstatus.size() == 336u);  // NT_PRSTATUS-shaped registers
  }
  // Resumed threads run briefly (R) back into pause(): wait for them to sleep again.
  BOOST_TEST(settled_state(fixture.pid(), fixture.pid()) == 'S');
  BOOST_TEST(settled_state(fixture.pid(), worker) == 'S');
  // Still alive and unchanged: read again without freezing.
  auto again = open_live(fixture.pid(), false);
  check_patterns(*again, fixture);
  BOOST_TEST(cycle_length(*again, fixture.address("cycle")) == 3);
}

BOOST_AUTO_TEST_CASE(proc_mem_fallback_reads_the_same_bytes) {
  FixtureProcess fixture;
  LiveProcess target(fixture.pid(), false);
  target.set_use_proc_mem(true);
  check_patterns(target, fixture);
  ReadError error;
  uint64_t word;
  BOOST_TEST(!target.read(0x10, &word, 8, &error));
  BOOST_TEST(error.message() == "0x10: not mapped");
}

BOOST_AUTO_TEST_CASE(failed_reads_say_why) {
  FixtureProcess fixture;
  auto target = open_live(fixture.pid(), false);
  uint64_t word = 0;
  ReadError error;
  BOOST_TEST(!target->read(0x10, &word, 8, &error));
  BOOST_TEST(error.message() == "0x10: not mapped");
  // A read running off the end of a mapping followed by a hole: fails at the end.
  const auto& regions = target->regions();
  for (size_t i = 0; i + 1 < regions.size(); ++i) {
    if (!regions[i].readable || regions[i + 1].start == regions[i].end) continue;
    if (regions[i].path == "[vvar]" || regions[i].path == "[vsyscall]") continue;
    uint64_t two[2];
    BOOST_TEST(!target->read(regions[i].end - 8, two, 16, &error));
    BOOST_TEST(error.address == regions[i].end);
    BOOST_TEST(read_failure_text(error.reason) == std::string("not mapped"));
    break;
  }
}

BOOST_AUTO_TEST_CASE(chunk_sweep_covers_the_big_buffer) {
  FixtureProcess fixture;
  auto target = open_live(fixture.pid(), false);
  uint64_t big = fixture.address("big");
  const MemoryRegion* region = find_region(target->regions(), big);
  BOOST_REQUIRE(region);
  uint64_t found_at = 0;
  ChunkScanStats stats;
  for_each_chunk(*target, region->start, region->end, 1 << 20,
                 [&](uint64_t address, const uint8_t* bytes, size_t size) {
                   for (size_t at = 0; at + 8 <= size; at += 8) {
                     uint64_t word;
                     std::memcpy(&word, bytes + at, 8);
                     if (word == (kBigTag | 1000) && !found_at) found_at = address + at;
                   }
                 }, &stats);
  BOOST_TEST(found_at == big + 8000);
  BOOST_TEST(stats.bytes_visited == region->size());
  BOOST_TEST(stats.bytes_unreadable == 0u);
}

BOOST_AUTO_TEST_CASE(build_ids_in_memory_match_the_files) {
  FixtureProcess fixture;
  auto target = open_live(fixture.pid(), false);
  int checked = 0;
  for (const MappedObjectBuildId& object : mapped_object_build_ids(*target)) {
    if (object.path.find("libc.so") == std::string::npos) continue;
    BOOST_REQUIRE_MESSAGE(object.build_id, object.unavailable_reason);
    BOOST_TEST(*object.build_id == build_id_of_file(object.path).value_or("?"));
    BOOST_TEST(object.build_id->size() == 40u);  // SHA-1 build-id
    ++checked;
  }
  BOOST_TEST(checked == 1);
}

BOOST_AUTO_TEST_CASE(missing_pid_is_bad_input) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // reaped: the pid no longer exists
  try {
    open_live(child, false);
    BOOST_FAIL("expected BadInput");
  } catch (const BadInput& error) {
    BOOST_TEST(error.what() == "pid " + std::to_string(child) + ": no such process");
  }
  BOOST_CHECK_THROW(open_live(-5, false), BadInput);
}

namespace {

// Skipped (reported) unless root, which alone can switch to an unprivileged user.
boost::test_tools::assertion_result running_as_root(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(getuid() == 0);
  if (!result) result.message() << "needs root to switch to an unprivileged user";
  return result;
}

}  // namespace

// As another (unprivileged) user the process may not be traced: one line with a hint.
BOOST_AUTO_TEST_CASE(other_users_process_is_bad_input_with_a_hint, *boost::unit_test::precondition(running_as_root)) {
  FixtureProcess fixture;
  int pipe_fds[2];
  BOOST_REQUIRE(pipe(pipe_fds) == 0);
  pid_t child = fork();
  if (child == 0) {
    close(pipe_fds[0]);
    std::string message = "(no error)";
    if (setgid(65534) == 0 && setuid(65534) == 0) {
      try {
        open_live(fixture.pid(), false);
      } catch (const BadInput& error) {
        message = error.what();
      }
    }
    ssize_t ignored = write(pipe_fds[1], message.data(), message.size());
    (void)ignored;
    _exit(0);
  }
  close(pipe_fds[1]);
  char buffer[1024] = {0};
  ssize_t n = read(pipe_fds[0], buffer, sizeof buffer - 1);
  close(pipe_fds[0]);
  waitpid(child, nullptr, 0);
  std::string message(buffer, n > 0 ? n : 0);
  BOOST_TEST(message.find("pid " + std::to_string(fixture.pid()) + ": may not trace (") == 0u);
  BOOST_TEST(message.find("process uid 0 differs from ours (65534)") != std::string::npos);
  BOOST_TEST(message.find("run as the same user or root, or set ptrace_scope to 0") != std::string::npos);
  BOOST_TEST(process_state(fixture.pid()) == 'S');
}

// Ctrl-C while frozen: the handler detaches every thread, then the signal still
// ends the tool (re-raised with the previous disposition).
BOOST_AUTO_TEST_CASE(sigint_while_frozen_resumes_and_still_terminates) {
  FixtureProcess fixture;
  pid_t tool = fork();
  if (tool == 0) {
    auto target = open_live(fixture.pid(), true);
    if (process_state(fixture.pid()) != 't') _exit(3);  // not frozen: fail loudly
    raise(SIGINT);
    _exit(4);  // the handler swallowed the signal
  }
  int status = 0;
  waitpid(tool, &status, 0);
  BOOST_TEST(WIFSIGNALED(status));
  BOOST_TEST((WIFSIGNALED(status) ? WTERMSIG(status) : -WEXITSTATUS(status)) == SIGINT);
  BOOST_TEST(settled_state(fixture.pid(), fixture.pid()) == 'S');
  BOOST_TEST(settled_state(fixture.pid(), fixture.info()["worker_tid"].get<int>()) == 'S');
}

BOOST_AUTO_TEST_CASE(freeze_of_a_traced_process_names_the_tracer) {
  FixtureProcess fixture;
  auto first = open_live(fixture.pid(), true);  // we are now its tracer
  try {
    open_live(fixture.pid(), true);
    BOOST_FAIL("expected BadInput");
  } catch (const BadInput& error) {
    std::string message = error.what();
    BOOST_TEST(message.find("pid " + std::to_string(fixture.pid()) + ": may not trace") == 0u);
    BOOST_TEST(message.find("already traced by pid " + std::to_string(getpid())) != std::string::npos);
  }
  first.reset();
  BOOST_TEST(settled_state(fixture.pid(), fixture.pid()) == 'S');
}
