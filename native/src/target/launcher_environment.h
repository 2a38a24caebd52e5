// The launcher's environment variables of a process (RANK, SLURM_PROCID, ...), as
// the launcher set them: live from /proc/PID/environ, in a core from the initial
// process stack (envp[] and its strings, found through the NT_AUXV copy that the
// kernel puts right after envp[]'s NULL). An environment holds secrets: only the
// names in the allowlist below are ever kept, and in a core only their strings are
// read through Target::read (so a slice keeps them and nothing else of environ).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "target/target.h"

namespace nsc {

// RANK, LOCAL_RANK, WORLD_SIZE, ..., SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, ...
const std::vector<std::string>& launcher_variable_names();
bool is_launcher_variable(std::string_view name);

struct LauncherEnvironment {
  std::map<std::string, std::string> variables;  // allowlisted names only; values untrusted
  std::string source;       // "initial stack" or "/proc/PID/environ"; "" when not read
  std::string unavailable;  // why nothing could be read ("" when read)
  std::vector<std::string> notes;  // what limited the answer (rewritten slots, truncated strings)
  // In a core: where the launcher's environment strings lie on the initial stack, [start, end);
  // 0/0 when not found. `ncclscope slice` drops these bytes but for the allowlisted values.
  uint64_t strings_start = 0;
  uint64_t strings_end = 0;
  // In a core: the command-line (argv) strings, right below the environment's, [start, end);
  // 0/0 when not found. `ncclscope slice` redacts them but for visible_argument_prefix.
  uint64_t arguments_start = 0;
  uint64_t arguments_end = 0;
};

// How much of argument `index` of a command line a shared slice keeps: all of argv[0] (the
// program) and of a long option name ("--password"), "--name=" of "--name=value", "-p" of a
// short option ("-pVALUE"), nothing of any other argument (a value or a positional:
// "--password hunter2" keeps "--password" only).
size_t visible_argument_prefix(std::string_view argument, size_t index);

// Live (LiveProcess): /proc/PID/environ. Otherwise: the initial stack, through target.auxv().
LauncherEnvironment read_launcher_environment(Target& target);

// The initial-stack walk alone (testable on synthetic memory): auxv is the raw
// NT_AUXV (key/value pairs through AT_NULL); main_thread_sp a fallback to find the
// stack mapping when AT_EXECFN does not point into one (0 if unknown).
LauncherEnvironment read_initial_stack_environment(Target& target, const std::vector<uint8_t>& auxv,
                                                   uint64_t main_thread_sp);

// Keeps the allowlisted NAME=VALUE entries of a NUL-separated environ block.
LauncherEnvironment parse_environ_block(const std::string& block);

}  // namespace nsc
