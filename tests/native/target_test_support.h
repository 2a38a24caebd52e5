// Helpers for the Target tests: run tests/fixtures/memory_fixture, read its
// JSON, dump it with gdb's gcore, look at /proc state. Header-only.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace nsc::testing {

inline std::string fixture_path(const std::string& name) {
  return std::string(NCCLSCOPE_BINARY_DIR) + "/fixtures/" + name;
}

char process_state(int pid, int tid = 0);

// Starts argv[0] with argv, its stdout a pipe read through *output; its pid, -1 if it could not start.
inline int spawn_with_stdout(const std::vector<std::string>& argv, FILE** output) {
  int pipe_fds[2];
  if (argv.empty() || pipe(pipe_fds) != 0) return -1;
  int pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    close(pipe_fds[0]);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  if (pid < 0) {
    close(pipe_fds[0]);
    return -1;
  }
  *output = fdopen(pipe_fds[0], "r");
  return pid;
}

// The fixture process: started in the constructor, killed in the destructor.
class FixtureProcess {
 public:
  // working_dir: where the fixture runs (a kernel core lands there); allow_core: RLIMIT_CORE unlimited.
  explicit FixtureProcess(const std::string& name = "memory_fixture",
                          const std::string& working_dir = "", bool allow_core = false) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(pipe_fds[1], 1);
      close(pipe_fds[0]);
      if (!working_dir.empty() && chdir(working_dir.c_str()) != 0) _exit(126);
      if (allow_core) {
        rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
        setrlimit(RLIMIT_CORE, &unlimited);
      }
      execl(fixture_path(name).c_str(), name.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(pipe_fds[1]);
    FILE* out = fdopen(pipe_fds[0], "r");
    char line[4096] = {0};
    if (!fgets(line, sizeof line, out)) throw std::runtime_error("fixture printed nothing");
    fclose(out);
    info_ = nlohmann::json::parse(line);
    wait_until_sleeping();
  }
  ~FixtureProcess() {
    if (pid_ > 0) kill(pid_, SIGKILL);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  // Kills it with SIGABRT and waits: the kernel writes its core (if allowed).
  bool abort_and_wait() {
    kill(pid_, SIGABRT);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFSIGNALED(status) && WCOREDUMP(status);
  }
  int pid() const { return pid_; }
  const nlohmann::json& info() const { return info_; }
  uint64_t address(const std::string& key) const {
    uint64_t value = 0;
    parse_u64(info_.at(key).get<std::string>(), &value);
    return value;
  }

 private:
  // After printing, the fixture still has to reach pause(): wait for 'S'.
  void wait_until_sleeping() const;

  int pid_ = -1;
  nlohmann::json info_;
};

// State letter of /proc/PID/status ("S (sleeping)" -> 'S'), '?' if unreadable.
inline char process_state(int pid, int tid) {
  std::string path = "/proc/" + std::to_string(pid) +
                     (tid ? "/task/" + std::to_string(tid) : std::string()) + "/status";
  std::ifstream status(path);
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("State:", 0) == 0) return line.size() > 7 ? line[7] : '?';
  return '?';
}

inline void FixtureProcess::wait_until_sleeping() const {
  for (int i = 0; i < 2000 && process_state(pid_) != 'S'; ++i) usleep(1000);
}

// Waits (up to 2 s) until every thread of `pid` sleeps ('S'): a fixture that printed "ready"
// just before pause() may not have entered it yet.
inline void wait_until_all_threads_sleep(int pid) {
  for (int attempt = 0; attempt < 400; ++attempt) {
    bool all_sleeping = true;
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task"))
      all_sleeping = all_sleeping && process_state(pid, std::stoi(task.path().filename().string())) == 'S';
    if (all_sleeping) return;
    usleep(5000);
  }
}

inline bool have_gdb() { return std::system("gdb --version > /dev/null 2>&1") == 0; }

// Bytes of readable mappings (/proc/PID/maps): a sanitizer build maps terabytes of shadow.
inline uint64_t readable_mapped_bytes(int pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  uint64_t total = 0;
  while (std::getline(maps, line)) {
    unsigned long long start = 0, end = 0;
    char read_flag = '-';
    if (std::sscanf(line.c_str(), "%llx-%llx %c", &start, &end, &read_flag) == 3 && read_flag == 'r')
      total += end - start;
  }
  return total;
}

// Dumps the process with gdb's gcore (the process keeps running). Refuses a
// process with more than 4 GiB mapped: gcore would write all of it (an ASan
// build's shadow filled the disk with a 6 TB file).
inline bool make_gcore(int pid, const std::string& core_path) {
  if (readable_mapped_bytes(pid) > (4ull << 30)) return false;
  std::string command = "gdb -nx -batch -p " + std::to_string(pid) + " -ex 'gcore " + core_path +
                        "' > /dev/null 2>&1";
  return std::system(command.c_str()) == 0 && access(core_path.c_str(), R_OK) == 0;
}

// Where the kernel writes the core of `pid` run in `dir`, when core_pattern is
// a plain file name ("core", "core.%p", "/tmp/core.%p"); "" otherwise (piped to a handler).
inline std::string kernel_core_path(const std::string& dir, int pid) {
  std::ifstream pattern_file("/proc/sys/kernel/core_pattern");
  std::string pattern;
  std::getline(pattern_file, pattern);
  if (pattern.empty() || pattern[0] == '|') return "";
  std::string path;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      path += pattern[i];
    } else if (i + 1 < pattern.size() && pattern[i + 1] == 'p') {
      path += std::to_string(pid);
      ++i;
    } else {
      return "";  // other specifiers (%e, %t, ...) are not worth guessing
    }
  }
  std::ifstream uses_pid_file("/proc/sys/kernel/core_uses_pid");
  int uses_pid = 0;
  uses_pid_file >> uses_pid;
  if (uses_pid && pattern.find("%p") == std::string::npos) path += "." + std::to_string(pid);
  return path[0] == '/' ? path : dir + "/" + path;
}

inline std::string make_temp_dir() {
  char pattern[] = "/tmp/ncclscope-test-XXXXXX";
  if (!mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

inline void copy_file_prefix(const std::string& from, const std::string& to, uint64_t bytes) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary);
  std::string buffer(1 << 20, '\0');
  while (bytes > 0 && in) {
    in.read(buffer.data(), std::min<uint64_t>(buffer.size(), bytes));
    out.write(buffer.data(), in.gcount());
    bytes -= in.gcount();
  }
}

}  // namespace nsc::testing
