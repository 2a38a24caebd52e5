// Minimal option parsing shared by the subcommands: "--name value",
// "--name=value", flags, and positional arguments.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "snapshot/state_document.h"

namespace nsc::cli {

struct ParsedOptions {
  std::map<std::string, std::vector<std::string>> values;  // "--core" -> {"a"}
  std::set<std::string> flags;                             // "--json"
  std::vector<std::string> positional;

  bool has(const std::string& name) const { return flags.count(name) || values.count(name); }
  std::string value(const std::string& name, const std::string& fallback = "") const;
  const std::vector<std::string>& all(const std::string& name) const;
};

// Throws nsc::UsageError on an unknown option or a missing value.
ParsedOptions parse_options(const std::vector<std::string>& args,
                            const std::set<std::string>& value_options,
                            const std::set<std::string>& flag_options);


// A process id given on the command line (--pid): 1 .. 0x3fffffff (FUTEX_TID_MASK, above any
// pid_max). Throws nsc::UsageError "--pid TEXT: not a process id".
int parse_pid(const std::string& text);

// --exe, --sysroot, --solib-search-path and --profile-path (colon lists, repeatable) into request.
void library_options_into(const ParsedOptions& options, StateRequest* request);

// The target options shared by state, cuda-streams and cuda-ipc: --core CORE (or one
// positional CORE) | --pid PID, --exe, --sysroot, --solib-search-path, --profile-path,
// --force-mismatch, --freeze. Throws nsc::UsageError on a bad or missing target.
StateRequest target_request_from_options(const ParsedOptions& options);

// Runs one subcommand's body and turns its exceptions into one line on stderr and the exit
// code: UsageError 64 (then `usage_text`, or "see ncclscope NAME --help" when null), BadInput
// 2, anything else 2 as an internal error. Every message is escaped for the terminal.
int run_guarded(const char* name, const char* usage_text, const std::function<int()>& body);

}  // namespace nsc::cli
