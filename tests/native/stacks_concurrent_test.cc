// Live unwinds of several processes at once (triage --pid reads its ranks concurrently, each
// with its own libdwfl session): every thread's frames must be those of the serial run, and hold
// the chain its process printed; no frame lost, none from another process; every process left
// running. Four chain_fixture processes of different seeds, unwound together in many rounds.
#define BOOST_TEST_MODULE stacks_concurrent
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "stacks/thread_stacks.h"
#include "target/proc_maps.h"
#include "target_test_support.h"
#include "util/strings.h"

namespace {

const std::string kFixture = std::string(NCCLSCOPE_BINARY_DIR) + "/fixtures/chain_fixture";
constexpr int kProcesses = 4;
constexpr int kThreadsPerProcess = 24;  // + main
constexpr int kRounds = 12;

// A chain_fixture process (killed at the end) and the chain each of its threads printed.
class ChainProcess {
 public:
  explicit ChainProcess(int seed) {
    FILE* output = nullptr;
    pid_ = nsc::testing::spawn_with_stdout({kFixture, std::to_string(kThreadsPerProcess), std::to_string(seed)}, &output);
    BOOST_REQUIRE(pid_ > 0 && output != nullptr);
    char line[512];
    while (std::fgets(line, sizeof line, output) != nullptr && std::string(line) != "ready\n") {
      std::istringstream words(line);
      std::string word;
      int tid = 0;
      words >> word >> tid;
      while (words >> word) chains_[tid].push_back(word);
    }
    std::fclose(output);
    if (chains_.size() != static_cast<size_t>(kThreadsPerProcess + 1)) {
      stop();  // the destructor does not run for a constructor that fails
      BOOST_FAIL("chain_fixture printed " << chains_.size() << " chains");
    }
    nsc::testing::wait_until_all_threads_sleep(pid_);
  }
  ~ChainProcess() { stop(); }
  void stop() {
    if (pid_ > 0 && kill(pid_, SIGKILL) == 0) waitpid(pid_, nullptr, 0);
  }
  int pid() const { return pid_; }
  const std::map<int, std::vector<std::string>>& chains() const { return chains_; }

 private:
  int pid_ = -1;
  std::map<int, std::vector<std::string>> chains_;  // tid -> functions, outermost first
};

// Every field of every frame, one thread a line: two unwinds agree iff their texts are equal.
std::string describe(const std::vector<nsc::ThreadStack>& threads) {
  std::ostringstream out;
  for (const nsc::ThreadStack& thread : threads) {
    out << thread.tid << " " << thread.blocked_in << " '" << thread.error << "':";
    for (const nsc::StackFrame& frame : thread.frames)
      out << " " << nsc::hex(frame.pc) << " " << frame.function << "+" << frame.offset << "[" << frame.module << "]";
    out << "\n";
  }
  return out.str();
}

// The frames' functions below chain_park, outermost first, as the fixture printed them.
std::vector<std::string> chain_in_frames(const nsc::ThreadStack& thread) {
  std::vector<std::string> links;
  for (auto frame = thread.frames.rbegin(); frame != thread.frames.rend(); ++frame)
    if (frame->function.rfind("chain_link_", 0) == 0) links.push_back(frame->function);
  return links;
}

// TracerPid of a thread (0: nobody traces it), -1 when unreadable.
long tracer_of(int pid, int tid) {
  std::optional<std::string> status =
      nsc::read_proc_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/status");
  size_t at = status ? status->find("\nTracerPid:") : std::string::npos;
  return at == std::string::npos ? -1 : std::strtol(status->c_str() + at + 11, nullptr, 10);
}

std::vector<nsc::ThreadStack> unwind(int pid) {
  std::vector<std::string> warnings;
  return nsc::unwind_live_threads(pid, nsc::StackOptions{}, &warnings);
}

}  // namespace

BOOST_AUTO_TEST_CASE(concurrent_unwinds_equal_serial_ones) {
  std::vector<std::unique_ptr<ChainProcess>> processes;
  for (int seed = 1; seed <= kProcesses; ++seed) processes.push_back(std::make_unique<ChainProcess>(seed));

  // Serial: each thread holds exactly the chain its process printed, in order, above chain_park.
  std::vector<std::string> serial;
  for (const auto& process : processes) {
    std::vector<nsc::ThreadStack> threads = unwind(process->pid());
    BOOST_REQUIRE_EQUAL(threads.size(), process->chains().size());
    for (const nsc::ThreadStack& thread : threads) {
      BOOST_TEST_CONTEXT("pid " << process->pid() << " tid " << thread.tid) {
        BOOST_TEST(chain_in_frames(thread) == process->chains().at(thread.tid), boost::test_tools::per_element());
        BOOST_TEST(thread.error.empty());
      }
    }
    serial.push_back(describe(threads));
  }
  BOOST_TEST(serial[0] != serial[1]);  // the processes differ: a swap would show

  size_t differing = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::string> concurrent(processes.size());
    std::vector<std::thread> workers;
    for (size_t i = 0; i < processes.size(); ++i)
      workers.emplace_back([&, i] { concurrent[i] = describe(unwind(processes[i]->pid())); });
    for (std::thread& worker : workers) worker.join();
    for (size_t i = 0; i < processes.size(); ++i) {
      if (concurrent[i] == serial[i]) continue;
      ++differing;
      BOOST_TEST_MESSAGE("round " << round << " pid " << processes[i]->pid() << " differs:\n" << concurrent[i]);
    }
  }
  BOOST_TEST(differing == 0u);

  // Nothing left stopped or traced.
  for (const auto& process : processes) nsc::testing::wait_until_all_threads_sleep(process->pid());
  for (const auto& process : processes)
    for (const auto& [tid, chain] : process->chains())
      BOOST_TEST(tracer_of(process->pid(), tid) == 0);
}
