#include "snapshot/python_document.h"

#include <memory>
#include <string>
#include <vector>

#include "python/python_stacks.h"
#include "stacks/thread_stacks.h"
#include "target/core_file.h"
#include "target/live_process.h"
#include "util/errors.h"
#include "util/schemas.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

struct CollectedStacks {
  PythonStacks python;
  std::vector<ThreadStack> native;
  std::vector<std::string> native_warnings;
};

CollectedStacks collect(const PythonRequest& request) {
  const StateRequest& where = request.target;
  CollectedStacks result;
  std::unique_ptr<Target> target = where.core_path.empty() ? open_live(where.pid, where.freeze)
                                                           : open_core(where.core_path, where.executable);
  PythonSearch search;
  search.library.sysroot = where.sysroot;
  search.library.solib_search_path = where.solib_search_path;
  search.profile_path = where.profile_path;
  result.python = read_python_stacks(*target, search);
  target->resume();  // the Python state is read: the process runs again
  if (!request.merge_native) return result;
  StackOptions options;
  options.executable = where.executable;
  options.sysroot = where.sysroot;
  options.solib_search_path = where.solib_search_path;
  result.native = unwind_threads(*target, options, &result.native_warnings);
  return result;
}

const ThreadStack* native_of(const CollectedStacks& stacks, uint64_t tid) {
  for (const ThreadStack& stack : stacks.native)
    if (static_cast<uint64_t>(stack.tid) == tid) return &stack;
  return nullptr;
}

json thread_entry(const CollectedStacks& stacks, const PythonThread& thread) {
  json entry = python_thread_json(thread);
  const ThreadStack* native = native_of(stacks, thread.native_thread_id);
  if (native == nullptr) return entry;
  std::string note;
  json native_frames = json::array();
  for (const StackFrame& frame : native->frames) native_frames.push_back(to_json(frame));
  entry["merged_frames"] = merged_stack_json(native_frames, thread, &note);
  if (!note.empty()) entry["merge_note"] = note;
  return entry;
}

}  // namespace

json build_python_document(const PythonRequest& request) {
  CollectedStacks stacks = collect(request);
  if (!stacks.python.unavailable.empty()) throw BadInput(stacks.python.unavailable);
  json threads = json::array();
  for (const PythonThread& thread : stacks.python.threads) threads.push_back(thread_entry(stacks, thread));
  json warnings = json::array();
  for (const std::string& warning : stacks.native_warnings) warnings.push_back(valid_utf8(warning));
  return {{"schema", kPythonSchema}, {"python", python_summary_json(stacks.python)},
          {"threads", threads}, {"warnings", warnings}};
}

int python_exit_code(const json& document) {
  if (!document["python"].value("errors", json::array()).empty()) return 1;
  for (const auto& thread : document["threads"]) {
    if (thread.contains("error") || thread.value("truncated", false)) return 1;
    for (const auto& frame : thread["frames"])
      if (frame.contains("error") || frame["line"].is_null()) return 1;
  }
  return 0;
}

}  // namespace nsc
