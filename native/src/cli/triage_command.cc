// `ncclscope triage INPUT...`: one input per rank (snapshots, cores, directories
// of them, live pids) merged into one verdict (docs/triage.md).
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/options.h"
#include "snapshot/numerics_document.h"
#include "snapshot/state_document.h"
#include "triage/inputs.h"
#include "triage/triage.h"
#include "util/errors.h"
#include "util/input_file.h"
#include "util/json_write.h"
#include "util/phase_times.h"
#include "util/strings.h"

extern char** environ;

namespace nsc::cli {
namespace {

const char kUsage[] =
    "usage: ncclscope triage [options] INPUT...\n"
    "  INPUT is one rank's state: a snapshot (`ncclscope state --json` output),\n"
    "  a core file, or a directory (its core*, *.core and *.json files); each may be\n"
    "  xz-compressed (rank0.core.xz: read from a private unpacked copy, removed after).\n"
    "  A kernel view (`nccl-kernels --json` under cuda-gdb, schema ncclscope.kernels/1,\n"
    "  e.g. rank0.kernels.json) joins the rank holding its communicator; so does a numerics\n"
    "  document (`nccl-numerics --json` under cuda-gdb, ncclscope.numerics/1). Buffers in a\n"
    "  core's or live process's host memory are measured by triage itself (4 MiB whole, else\n"
    "  64 chunks of 16 KiB): NaN, Inf and underflow are reported beside the verdict.\n"
    "options:\n"
    "  --pid PID                 a live process on this machine (repeatable)\n"
    "  --json                    print the ncclscope.triage/1 document\n"
    "  --dot FILE                write the wait-for graph as Graphviz DOT\n"
    "  --svg FILE                render the graph to SVG with Graphviz `dot`\n"
    "  --html FILE               write one self-contained HTML page (verdict, graph, counters, stacks)\n"
    "  --jobs N                  inputs decoded in parallel (default: one per CPU)\n"
    "  --exe PATH                the ranks' executable (for cores; default: from the core)\n"
    "  --sysroot DIR             like gdb's `set sysroot` (for cores)\n"
    "  --solib-search-path DIRS  colon-separated, like gdb's solib-search-path\n"
    "  --profile-path DIRS       extra layout profile directories\n"
    "exit status: 0 ok (any verdict), 1 some inputs unusable, 2 nothing usable, 64 usage\n";

struct TriageArgs {
  triage::LoadRequest load;
  bool json = false;
  std::string dot_path, svg_path, html_path;
};

// The last of an option given under two names (--jobs / -j, --exe / --executable).
std::string last_value(const ParsedOptions& options, const char* name, const char* alias) {
  std::string value = options.value(name);
  return value.empty() ? options.value(alias) : value;
}

TriageArgs parse_args(const std::vector<std::string>& args) {
  ParsedOptions options = parse_options(
      args, {"--dot", "--svg", "--html", "--pid", "--jobs", "-j", "--sysroot", "--exe", "--executable",
             "--solib-search-path", "--profile-path"}, {"--json"});
  TriageArgs parsed;
  parsed.json = options.has("--json");
  parsed.dot_path = options.value("--dot");
  parsed.svg_path = options.value("--svg");
  parsed.html_path = options.value("--html");
  for (const std::string& pid : options.all("--pid")) parsed.load.pids.push_back(parse_pid(pid));
  std::string jobs = last_value(options, "--jobs", "-j");
  if (!jobs.empty()) {
    uint64_t count = 0;
    if (!parse_u64(jobs, &count) || count == 0 || count > 1024) throw UsageError("--jobs " + jobs + ": not a count");
    parsed.load.jobs = static_cast<unsigned>(count);
  }
  parsed.load.sysroot = options.value("--sysroot");
  parsed.load.executable = last_value(options, "--exe", "--executable");
  for (const auto& list : options.all("--solib-search-path"))
    for (const auto& dir : split_colon_list(list)) parsed.load.solib_search_path.push_back(dir);
  for (const auto& list : options.all("--profile-path"))
    for (const auto& dir : split_colon_list(list)) parsed.load.profile_path.push_back(dir);
  parsed.load.paths = options.positional;
  if (parsed.load.paths.empty() && parsed.load.pids.empty()) throw UsageError("no input given");
  return parsed;
}

bool find_in_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  for (const std::string& dir : split_colon_list(path ? path : "/usr/bin:/bin")) {
    std::string candidate = dir + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

bool write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "ncclscope triage: %s: cannot write\n", path.c_str());
    return false;
  }
  return true;
}

// Runs `dot -Tsvg -o svg_path dot_file` without a shell; `quiet`: no message on failure.
bool render_svg(const std::string& dot_text, const std::string& svg_path, bool quiet = false) {
  if (!find_in_path("dot")) {
    if (!quiet)
      std::fprintf(stderr, "ncclscope triage: --svg: Graphviz `dot` is not installed; "
                           "use --dot FILE and render it where Graphviz is\n");
    return false;
  }
  char temp[] = "/tmp/ncclscope-triage-XXXXXX";
  int fd = mkstemp(temp);
  if (fd < 0) return false;
  close(fd);
  bool ok = write_text_file(temp, dot_text);
  if (ok) {
    std::vector<std::string> argv_text = {"dot", "-Tsvg", "-o", svg_path, temp};
    std::vector<char*> argv;
    for (std::string& arg : argv_text) argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_t child = 0;
    int status = 0;
    ok = posix_spawnp(&child, "dot", nullptr, nullptr, argv.data(), environ) == 0 &&
         waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok && !quiet) std::fprintf(stderr, "ncclscope triage: --svg: `dot -Tsvg` failed\n");
  }
  unlink(temp);
  return ok;
}

// The graph as Graphviz lays it out, for the HTML page; "" without Graphviz (the page says so).
std::string graphviz_svg(const std::string& dot_text) {
  char temp[] = "/tmp/ncclscope-triage-svg-XXXXXX";
  int fd = mkstemp(temp);
  if (fd < 0) return "";
  close(fd);
  std::string svg;
  if (render_svg(dot_text, temp, true)) {
    try {
      svg = read_regular_file(temp, temp);
    } catch (const std::exception&) {
      svg.clear();
    }
  }
  unlink(temp);
  return svg;
}

// The report as json::dump(2) writes it, straight to stdout (util/json_write.h): no second copy
// of a document that is 400 MB at 100,000 ranks, and its per-rank arrays written over the CPUs.
void print_json(const nlohmann::json& report) {
  write_pretty_json(report, stdout);
  std::fputs("\n", stdout);
}

// The report is left to the process's exit, never torn down: freeing its million nodes one by
// one was a tenth of the CPU of a run at 4,096 ranks (perf). Reachable from here until exit, so
// LeakSanitizer does not count it.
nlohmann::json* exit_report = nullptr;

}  // namespace

int run_triage_command(const std::vector<std::string>& args) {
  TriageArgs parsed;
  try {
    for (const std::string& arg : args)
      if (arg == "-h" || arg == "--help") {
        std::fputs(kUsage, stdout);
        return kExitOk;
      }
    parsed = parse_args(args);
  } catch (const UsageError& error) {
    std::fprintf(stderr, "ncclscope triage: %s\n%s", error.what(), kUsage);
    return kExitUsage;
  }
  parsed.load.build_state = [](const StateRequest& request) { return build_state_document(request); };
  parsed.load.build_numerics = [](const StateRequest& request, const nlohmann::json& state) {
    return numerics_of_target(request, state, triage_numerics_options());
  };
  TriageOptions options;
  options.leave_analysis_to_exit = true;
  delete exit_report;  // a second run in one process frees the first's
  exit_report = new nlohmann::json;
  nlohmann::json& report = *exit_report;
  try {
    triage::LoadedInputs loaded = [&] {
      PhaseTimer timer("triage.load");
      return triage::load_triage_inputs(parsed.load);
    }();
    PhaseTimer timer("triage.analysis");
    report = triage_processes(std::move(loaded.processes), loaded.failures, options, std::move(loaded.kernel_views),
                              std::move(loaded.numerics_views));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ncclscope triage: %s\n", error.what());
    return kExitBadInput;
  }
  int exit_code = triage_exit_code(report);
  bool error_verdict = report["verdict"] == "error";
  if (parsed.json || error_verdict) {
    for (const auto& error : report["errors"])
      std::fprintf(stderr, "ncclscope triage: %s\n",
                   escape_for_terminal(error["message"].get<std::string>()).c_str());
    // A kernel view that joins no rank is a warning, not an error (the text report lists it).
    if (report.contains("kernel_views"))
      for (const auto& warning : report["kernel_views"]["warnings"])
        std::fprintf(stderr, "ncclscope triage: warning: %s\n", escape_for_terminal(warning.get<std::string>()).c_str());
  }
  {
    PhaseTimer timer("triage.output");
    if (parsed.json) print_json(report);
    else if (!error_verdict) std::cout << render_triage_text(report);
  }
  if (!error_verdict && (!parsed.dot_path.empty() || !parsed.svg_path.empty())) {
    std::string dot = render_triage_dot(report, options);
    if (!parsed.dot_path.empty()) write_text_file(parsed.dot_path, dot);
    if (!parsed.svg_path.empty()) render_svg(dot, parsed.svg_path);
  }
  // The page says an error verdict too (what was unusable and why).
  if (!parsed.html_path.empty() &&
      !write_text_file(parsed.html_path, render_triage_html(report, graphviz_svg(render_triage_dot(report, options)))))
    exit_code = kExitBadInput;  // the page was asked for and is not there
  return exit_code;
}

}  // namespace nsc::cli
