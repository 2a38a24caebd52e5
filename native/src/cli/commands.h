// One function per `ncclscope` subcommand; main.cc dispatches to them.
// Each returns the process exit code: 0 ok, 1 partial, 2 bad input, 64 usage.
#pragma once

#include <string>
#include <vector>

namespace nsc::cli {

constexpr int kExitOk = 0;
constexpr int kExitPartial = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitUsage = 64;

int run_state_command(const std::vector<std::string>& args);   // state_command.cc
int run_layout_command(const std::vector<std::string>& args);  // layout_command.cc
int run_triage_command(const std::vector<std::string>& args);  // triage_command.cc
int run_slice_command(const std::vector<std::string>& args);   // slice_command.cc
int run_cuda_streams_command(const std::vector<std::string>& args);  // cuda_command.cc
int run_cuda_ipc_command(const std::vector<std::string>& args);      // cuda_command.cc
int run_py_stacks_command(const std::vector<std::string>& args);     // python_command.cc
int run_fr_dump_command(const std::vector<std::string>& args);       // fr_dump_command.cc
int run_numerics_command(const std::vector<std::string>& args);      // numerics_command.cc
int run_audit_command(const std::vector<std::string>& args);         // audit_command.cc

}  // namespace nsc::cli
