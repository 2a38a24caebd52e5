// `ncclscope audit INPUT...`: named invariants over each process's decoded state
// (docs/audit.md). The audit module builds the ncclscope.audit/1 document; this file
// parses options, calls it, and prints.
#include <cstdio>
#include <iostream>

#include "audit/audit.h"
#include "audit/audit_inputs.h"
#include "audit/audit_text.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc::cli {
namespace {

const char kAuditUsage[] =
    "usage: ncclscope audit [options] INPUT...\n"
    "  INPUT is one process's state: a core file or a snapshot (`ncclscope state --json` output);\n"
    "  give every rank of a job to check the rules across ranks too.\n"
    "  --core CORE                a core file (repeatable)\n"
    "  --pid PID                  a live process on this machine (repeatable; read frozen, resumed)\n"
    "  --exe PATH, --sysroot DIR, --solib-search-path D:D, --profile-path D:D   as for state\n"
    "  --verbose                  list every rule not checked and why (text)\n"
    "  --json                     print the ncclscope.audit/1 document\n"
    "exit status: 0 no error-severity finding, 1 an error-severity finding or an input read in part,\n"
    "2 no input usable, 64 usage\n";

audit::AuditLoadRequest request_from_options(const ParsedOptions& options) {
  audit::AuditLoadRequest request;
  request.paths = options.positional;
  for (const std::string& core : options.all("--core")) request.paths.push_back(core);
  for (const std::string& pid : options.all("--pid")) request.pids.push_back(parse_pid(pid));
  if (request.paths.empty() && request.pids.empty()) throw UsageError("no input given");
  StateRequest& state = request.options;
  library_options_into(options, &state);
  state.stacks = false;  // no rule reads host stacks
  state.progress = false;
  return request;
}

}  // namespace

int run_audit_command(const std::vector<std::string>& args) {
  return run_guarded("audit", nullptr, [&]() -> int {
    ParsedOptions options = parse_options(
        args, {"--core", "--pid", "--exe", "--sysroot", "--solib-search-path", "--profile-path"},
        {"--json", "--verbose", "--help", "-h"});
    if (options.has("--help") || options.has("-h")) {
      std::fputs(kAuditUsage, stdout);
      return kExitOk;
    }
    audit::LoadedAuditInputs loaded = audit::load_audit_inputs(request_from_options(options));
    for (const audit::AuditInputFailure& failure : loaded.failures)
      std::fprintf(stderr, "ncclscope audit: %s\n", escape_for_terminal(failure.reason).c_str());
    nlohmann::json document = audit::build_audit_document(loaded.inputs, loaded.failures);
    if (options.has("--json")) std::cout << document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else std::cout << audit::render_audit_text(document, options.has("--verbose"));
    return audit::audit_exit_code(document);
  });
}

}  // namespace nsc::cli
