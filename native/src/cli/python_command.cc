// `ncclscope py-stacks`: the Python stack of every thread of one process (core
// or live; live reads do not stop the process unless --freeze), optionally
// merged with the native stacks (--native: cores, or live with a brief ptrace stop).
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "python/python_stacks.h"
#include "stacks/thread_stacks.h"
#include "target/core_file.h"
#include "target/live_process.h"
#include "util/errors.h"
#include "util/schemas.h"
#include "util/strings.h"

namespace nsc::cli {
namespace {

const char kPyStacksUsage[] =
    "usage: ncclscope py-stacks (--core CORE | CORE | --pid PID) [options]\n"
    "  --exe PATH, --sysroot DIR, --solib-search-path D:D   where the interpreter's file is (cores)\n"
    "  --profile-path D:D         extra directories of layout profiles (<build-id>.json)\n"
    "  --freeze                   live: stop all threads while reading; always resumed\n"
    "  --native                   merge with native stacks (live: stops each thread for a few ms)\n"
    "  --json                     print an ncclscope.python/1 document\n";

struct Result {
  PythonStacks python;
  std::vector<ThreadStack> native;
  std::vector<std::string> native_warnings;
};

Result collect(const StateRequest& request, bool native) {
  Result result;
  std::unique_ptr<Target> target = request.core_path.empty() ? open_live(request.pid, request.freeze)
                                                             : open_core(request.core_path, request.executable);
  PythonSearch search;
  search.library.sysroot = request.sysroot;
  search.library.solib_search_path = request.solib_search_path;
  search.profile_path = request.profile_path;
  result.python = read_python_stacks(*target, search);
  target->resume();  // the Python state is read: the process runs again
  if (!native) return result;
  StackOptions options;
  options.executable = request.executable;
  options.sysroot = request.sysroot;
  options.solib_search_path = request.solib_search_path;
  result.native = unwind_threads(*target, options, &result.native_warnings);
  return result;
}

const ThreadStack* native_of(const Result& result, uint64_t tid) {
  for (const ThreadStack& stack : result.native)
    if (static_cast<uint64_t>(stack.tid) == tid) return &stack;
  return nullptr;
}

nlohmann::json document_of(const Result& result) {
  nlohmann::json threads = nlohmann::json::array();
  for (const PythonThread& thread : result.python.threads) {
    nlohmann::json entry = python_thread_json(thread);
    if (const ThreadStack* native = native_of(result, thread.native_thread_id)) {
      std::string note;
      nlohmann::json native_frames = nlohmann::json::array();
      for (const StackFrame& frame : native->frames) native_frames.push_back(to_json(frame));
      entry["merged_frames"] = merged_stack_json(native_frames, thread, &note);
      if (!note.empty()) entry["merge_note"] = note;
    }
    threads.push_back(entry);
  }
  nlohmann::json warnings = nlohmann::json::array();
  for (const std::string& warning : result.native_warnings) warnings.push_back(valid_utf8(warning));
  return {{"schema", kPythonSchema}, {"python", python_summary_json(result.python)},
          {"threads", threads}, {"warnings", warnings}};
}

void print_text(const nlohmann::json& document) {
  const nlohmann::json& python = document["python"];
  std::printf("CPython %s at %s (%s), %zu threads\n",
              python["version"].is_string() ? python["version"].get<std::string>().c_str() : "?",
              escape_for_terminal(python["interpreter"].get<std::string>()).c_str(),
              python["layout_source"].is_string() ? escape_for_terminal(python["layout_source"].get<std::string>()).c_str() : "-",
              document["threads"].size());
  for (const auto& error : python.value("errors", nlohmann::json::array()))
    std::printf("  error: %s\n", escape_for_terminal(error.get<std::string>()).c_str());
  for (const auto& thread : document["threads"]) {
    std::printf("\nThread %s (tid %llu)%s:\n", thread["thread_id"].get<std::string>().c_str(),
                static_cast<unsigned long long>(thread["native_thread_id"].get<uint64_t>()),
                thread.contains("merged_frames") ? ", merged with native frames" : "");
    if (thread.contains("error")) std::printf("  %s\n", escape_for_terminal(thread["error"].get<std::string>()).c_str());
    bool merged = thread.contains("merged_frames") && !thread["merged_frames"].empty();
    for (const auto& frame : merged ? thread["merged_frames"] : thread["frames"]) {
      if (frame.contains("error")) {
        std::printf("  %s\n", escape_for_terminal(frame["error"].get<std::string>()).c_str());
      } else if (frame.value("kind", "python") == "python") {
        std::string line = frame["line"].is_number() ? std::to_string(frame["line"].get<int64_t>()) : "?";
        std::printf("  %s (%s:%s)%s\n", escape_for_terminal(frame.value("qualname", frame["function"]).get<std::string>()).c_str(),
                    escape_for_terminal(frame["file"].get<std::string>()).c_str(), line.c_str(),
                    !merged && frame.value("entry", false) ? "  [called from C]" : "");
      } else {
        std::printf("  %s %s\n", frame["function"].is_string() ? escape_for_terminal(frame["function"].get<std::string>()).c_str() : "??",
                    frame["module"].is_string() ? ("(" + escape_for_terminal(frame["module"].get<std::string>()) + ")").c_str() : "");
      }
    }
    if (thread.value("truncated", false)) std::printf("  ... (more frames not shown)\n");
    if (thread.contains("merge_note")) std::printf("  note: %s\n", thread["merge_note"].get<std::string>().c_str());
  }
}

int exit_code_of(const nlohmann::json& document) {
  if (!document["python"].value("errors", nlohmann::json::array()).empty()) return kExitPartial;
  for (const auto& thread : document["threads"]) {
    if (thread.contains("error") || thread.value("truncated", false)) return kExitPartial;
    for (const auto& frame : thread["frames"])
      if (frame.contains("error") || frame["line"].is_null()) return kExitPartial;
  }
  return kExitOk;
}

}  // namespace

int run_py_stacks_command(const std::vector<std::string>& args) {
  return run_guarded("py-stacks", nullptr, [&]() -> int {
    ParsedOptions options = parse_options(
        args, {"--core", "--pid", "--exe", "--sysroot", "--solib-search-path", "--profile-path"},
        {"--json", "--freeze", "--native", "--help", "-h"});
    if (options.has("--help") || options.has("-h")) {
      std::fputs(kPyStacksUsage, stdout);
      return kExitOk;
    }
    Result result = collect(target_request_from_options(options), options.has("--native"));
    if (!result.python.unavailable.empty()) throw BadInput(result.python.unavailable);
    nlohmann::json document = document_of(result);
    if (options.has("--json")) std::cout << document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else print_text(document);
    return exit_code_of(document);
  });
}

}  // namespace nsc::cli
