#include "python/python_stacks.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "layout/elf_file.h"
#include "layout/profile_store.h"
#include "python/python_layout.h"
#include "target/build_ids.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

std::string basename_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// python3, python3.11, libpython3.12.so.1.0 (the "(deleted)" suffix of replaced files too).
bool is_interpreter_path(const std::string& path) {
  std::string name = basename_of(path);
  return name.rfind("python3", 0) == 0 || name.rfind("libpython3", 0) == 0;
}

std::vector<std::string> interpreter_candidates(const Target& target) {
  std::vector<std::string> paths;
  for (const MappedFile& mapping : target.mapped_files())
    if (mapping.file_offset == 0 && is_interpreter_path(mapping.path) &&
        std::find(paths.begin(), paths.end(), mapping.path) == paths.end())
      paths.push_back(mapping.path);
  return paths;
}

struct Interpreter {
  ResolvedLibrary library;
  std::string build_id;
  std::map<std::string, uint64_t> symbols;  // link-time values
  std::optional<uint32_t> version_hex;
  std::optional<LayoutProfile> profile;     // by build-id, when one exists
  std::vector<std::string> notes;
};

void read_local_symbols(Interpreter* interpreter) {
  if (interpreter->library.local_path.empty()) return;
  try {
    for (const auto& [name, symbol] : read_symbols(interpreter->library.local_path, python_symbol_names()))
      interpreter->symbols[name] = symbol.value;
    if (interpreter->symbols.count("Py_Version"))
      interpreter->version_hex = py_version_in_file(interpreter->library.local_path, interpreter->symbols["Py_Version"]);
  } catch (const BadInput& error) {
    interpreter->notes.push_back(error.what());
  }
}

Interpreter inspect_interpreter(Target& target, const std::string& path, const PythonSearch& search) {
  Interpreter interpreter;
  // A local file of another build must not lend its symbols: keep only what the target says
  // (its build-id, then a profile of that build).
  LibrarySearch library_search = search.library;
  library_search.force_mismatch = true;
  interpreter.library = resolve_mapped_library(target, path, library_search);
  if (interpreter.library.warning.rfind("build-id mismatch", 0) == 0) {
    interpreter.library.local_file_missing = interpreter.library.warning;
    interpreter.library.local_path.clear();
    interpreter.library.warning.clear();
  }
  interpreter.build_id = interpreter.library.build_id_in_target.empty() ? interpreter.library.build_id_of_file
                                                                        : interpreter.library.build_id_in_target;
  read_local_symbols(&interpreter);
  if (is_valid_build_id(interpreter.build_id))
    interpreter.profile = load_profile_by_build_id(interpreter.build_id, profile_search_dirs(search.profile_path),
                                                   &interpreter.notes);
  if (interpreter.profile) {
    for (const auto& [name, value] : interpreter.profile->symbols) interpreter.symbols.emplace(name, value);
    auto version = interpreter.profile->constants.find(kPyVersionHexConstant);
    if (!interpreter.version_hex && version != interpreter.profile->constants.end())
      interpreter.version_hex = static_cast<uint32_t>(version->second);
  }
  return interpreter;
}

std::string make_profile_hint(const Interpreter& interpreter) {
  return "make one with `ncclscope layout python DWARF_FILE --interpreter " +
         (interpreter.library.local_path.empty() ? std::string("INTERPRETER") : interpreter.library.local_path) +
         " -o " + (interpreter.build_id.empty() ? "<build-id>" : interpreter.build_id) +
         ".json` (DWARF_FILE: the interpreter's debug file, or native/src/python/layout_tu.c built -g "
         "against that version's headers: scripts/python-layout-from-headers.sh) and put it in "
         "--profile-path or $NCCLSCOPE_PROFILE_PATH";
}

// Offsets for 3.11/3.12: the profile by build-id, else the interpreter's own DWARF (then cached).
std::optional<PythonOffsets> offsets_from_profile_or_dwarf(Interpreter& interpreter, std::string* why,
                                                           std::string* source) {
  if (!interpreter.profile && !interpreter.library.local_path.empty()) {
    try {
      interpreter.profile = extract_python_layout(interpreter.library.local_path, interpreter.library.local_path);
      const char* no_cache = std::getenv("NCCLSCOPE_NO_PROFILE_CACHE");
      if (no_cache == nullptr || *no_cache == 0) {
        try {
          save_to_cache(*interpreter.profile);
        } catch (const BadInput&) {
          // An uncached profile still decodes.
        }
      }
    } catch (const BadInput& error) {
      interpreter.notes.push_back(error.what());
    }
  }
  if (!interpreter.profile) {
    *why = "no layout profile for build-id " + (interpreter.build_id.empty() ? "(unknown)" : interpreter.build_id) +
           " and no DWARF" + (interpreter.library.local_path.empty() ? " (no local copy: " +
                                  interpreter.library.local_file_missing + ")" : "") +
           "; " + make_profile_hint(interpreter);
    return std::nullopt;
  }
  try {
    PythonOffsets offsets = python_offsets_from_layout(*interpreter.profile);
    *source = interpreter.profile->source;
    return offsets;
  } catch (const BadInput& error) {
    *why = error.what();
    return std::nullopt;
  }
}

void add_type_addresses(const Interpreter& interpreter, PythonOffsets* offsets) {
  uint64_t bias = interpreter.library.load_bias;
  auto address_of = [&](const char* name) -> std::optional<uint64_t> {
    auto found = interpreter.symbols.find(name);
    return found == interpreter.symbols.end() ? std::nullopt : std::optional<uint64_t>(found->second + bias);
  };
  offsets->code_type_address = address_of("PyCode_Type");
  offsets->unicode_type_address = address_of("PyUnicode_Type");
  offsets->bytes_type_address = address_of("PyBytes_Type");
}

void read_from(Target& target, Interpreter& interpreter, const PythonSearch& search, PythonStacks* stacks) {
  stacks->build_id = interpreter.build_id;
  std::string subject = "python interpreter " + stacks->interpreter + " (build-id " +
                        (interpreter.build_id.empty() ? "unknown" : interpreter.build_id);
  auto runtime = interpreter.symbols.find("_PyRuntime");
  if (runtime == interpreter.symbols.end()) {
    stacks->unavailable = subject + "): no _PyRuntime symbol (stripped, no local copy or not CPython) and no "
                          "layout profile; " + make_profile_hint(interpreter);
    return;
  }
  stacks->runtime_address = runtime->second + interpreter.library.load_bias;
  std::string why;
  std::optional<PythonOffsets> offsets = python_offsets_from_debug_table(target, stacks->runtime_address, &why);
  if (!offsets && !interpreter.version_hex) {
    // Py_Version exists from 3.11: an older interpreter is named by its file (a guess, said so).
    std::string name = basename_of(stacks->interpreter);
    size_t at = name.find("python3.");
    std::string minor = at == std::string::npos ? "" : name.substr(at + 8, name.find_first_not_of("0123456789", at + 8) - at - 8);
    if (!minor.empty() && std::stoi(minor) < 11)
      stacks->unavailable = subject + "): no Py_Version (older than 3.11; its file name says 3." + minor +
                            "): not supported (3.11-3.14 are)";
    else
      stacks->unavailable = subject + "): version unknown (no Py_Version) and " + why;
    return;
  }
  uint32_t version = offsets ? offsets->version_hex : *interpreter.version_hex;
  stacks->version = py_version_text(version);
  subject = "CPython " + stacks->version + " at " + stacks->interpreter + " (build-id " +
            (interpreter.build_id.empty() ? "unknown" : interpreter.build_id);
  int minor = static_cast<int>((version >> 16) & 0xff);
  if ((version >> 24) != 3 || minor < 11 || minor > 14) {
    stacks->unavailable = subject + "): version " + stacks->version + " is not supported (3.11-3.14 are" +
                          (minor == 10 ? "; 3.10 frames are not decoded yet)" : ")");
    return;
  }
  if (!offsets && minor >= 13) {
    stacks->unavailable = subject + "): " + why;
    return;
  }
  std::string source;
  if (!offsets) offsets = offsets_from_profile_or_dwarf(interpreter, &why, &source);
  if (!offsets) {
    stacks->unavailable = subject + "): " + why;
    return;
  }
  stacks->layout_source = offsets->source;
  add_type_addresses(interpreter, &*offsets);
  stacks->offsets = offsets;
  stacks->threads = walk_python_threads(target, *offsets, stacks->runtime_address, search.limits, &stacks->errors);
}

}  // namespace

PythonStacks read_python_stacks(Target& target, const PythonSearch& search) {
  PythonStacks stacks;
  std::vector<std::string> candidates = interpreter_candidates(target);
  stacks.interpreter_mapped = !candidates.empty();
  if (candidates.empty()) {
    stacks.unavailable = target.describe() + ": no python3.X or libpython3.X mapped";
    return stacks;
  }
  // A libpython holds the runtime when both are mapped: the executable is then a stub.
  std::stable_sort(candidates.begin(), candidates.end(), [](const std::string& a, const std::string& b) {
    return (basename_of(a).rfind("lib", 0) == 0) > (basename_of(b).rfind("lib", 0) == 0);
  });
  for (const std::string& path : candidates) {
    try {
      Interpreter interpreter = inspect_interpreter(target, path, search);
      if (!interpreter.symbols.count("_PyRuntime") && &path != &candidates.back()) continue;
      stacks.interpreter = path;
      read_from(target, interpreter, search, &stacks);
      for (const std::string& note : interpreter.notes)
        if (!stacks.unavailable.empty()) stacks.errors.push_back(note);
      return stacks;
    } catch (const BadInput& error) {
      stacks.interpreter = path;
      stacks.unavailable = error.what();
    }
  }
  return stacks;
}

json python_summary_json(const PythonStacks& stacks) {
  json summary = {{"interpreter", valid_utf8(stacks.interpreter)},
                  {"version", stacks.version.empty() ? json(nullptr) : json(stacks.version)},
                  {"build_id", stacks.build_id.empty() ? json(nullptr) : json(stacks.build_id)},
                  {"layout_source", stacks.layout_source.empty() ? json(nullptr) : json(valid_utf8(stacks.layout_source))},
                  {"runtime", stacks.runtime_address ? json(hex(stacks.runtime_address)) : json(nullptr)},
                  {"threads", stacks.threads.size()}};
  if (!stacks.unavailable.empty()) summary["unavailable"] = valid_utf8(stacks.unavailable);
  if (!stacks.errors.empty()) {
    json errors = json::array();
    for (const std::string& error : stacks.errors) errors.push_back(valid_utf8(error));
    summary["errors"] = errors;
  }
  return summary;
}

json python_thread_json(const PythonThread& thread) {
  json frames = json::array();
  for (const PythonFrame& frame : thread.frames) {
    if (!frame.error.empty()) {
      frames.push_back({{"address", hex(frame.address)}, {"error", valid_utf8(frame.error)}});
      continue;
    }
    json entry = {{"function", valid_utf8(frame.function)}, {"qualname", valid_utf8(frame.qualname)},
                  {"file", valid_utf8(frame.file)}, {"line", frame.line ? json(*frame.line) : json(nullptr)},
                  {"entry", frame.entry}, {"address", hex(frame.address)}, {"code", hex(frame.code)}};
    if (!frame.line) entry["line_unavailable"] = valid_utf8(frame.line_unavailable);
    frames.push_back(entry);
  }
  json result = {{"thread_state", hex(thread.thread_state)}, {"thread_id", hex(thread.thread_id)},
                 {"native_thread_id", thread.native_thread_id}, {"frames", frames}};
  if (thread.truncated) result["truncated"] = true;
  if (!thread.error.empty()) result["error"] = valid_utf8(thread.error);
  return result;
}

const PythonThread* python_thread_for_tid(const PythonStacks& stacks, int tid) {
  for (const PythonThread& thread : stacks.threads)
    if (tid > 0 && thread.native_thread_id == static_cast<uint64_t>(tid)) return &thread;
  return nullptr;
}

std::string python_frame_text(const PythonFrame& frame) {
  if (!frame.error.empty()) return frame.error;
  std::string line = frame.line ? std::to_string(*frame.line) : "?";
  return frame.file + ":" + line + " in " + frame.qualname;
}

namespace {

// "_PyEval_EvalFrameDefault", also with a compiler suffix (".lto_priv.0", ".cold").
bool is_eval_loop(const json& frame) {
  const json function = frame.value("function", json());
  if (!function.is_string()) return false;
  std::string name = function.get<std::string>();
  return name.substr(0, name.find('.')) == "_PyEval_EvalFrameDefault";
}

}  // namespace

json merged_stack_json(const json& native, const PythonThread& python, std::string* note) {
  // Python frames grouped by eval-loop run, innermost run first.
  std::vector<std::vector<const PythonFrame*>> runs(1);
  for (const PythonFrame& frame : python.frames) {
    runs.back().push_back(&frame);
    if (frame.entry || !frame.error.empty()) runs.emplace_back();
  }
  if (runs.back().empty()) runs.pop_back();
  size_t eval_frames = std::count_if(native.begin(), native.end(), is_eval_loop);
  if (eval_frames == 0) return json::array();  // nothing to merge into: the native stack stands alone
  if (eval_frames != runs.size())
    *note = std::to_string(runs.size()) + " Python eval-loop runs but " + std::to_string(eval_frames) +
            " _PyEval_EvalFrameDefault native frames: paired from the innermost";
  json merged = json::array();
  size_t run = 0, eval_seen = 0;
  auto push_run = [&](size_t index) {
    for (const PythonFrame* frame : runs[index]) {
      json entry = {{"kind", "python"}};
      if (!frame->error.empty()) entry["error"] = valid_utf8(frame->error);
      else entry.update({{"function", valid_utf8(frame->qualname)}, {"file", valid_utf8(frame->file)},
                         {"line", frame->line ? json(*frame->line) : json(nullptr)}});
      merged.push_back(entry);
    }
  };
  for (const json& frame : native) {
    if (is_eval_loop(frame) && run < runs.size()) {
      push_run(run++);
      if (++eval_seen == eval_frames)
        while (run < runs.size()) push_run(run++);  // unpaired outer runs at the outermost loop
      continue;
    }
    json entry = frame;
    entry["kind"] = "native";
    merged.push_back(entry);
  }
  return merged;
}

std::vector<const PythonThread*> attach_python_to_threads(const PythonStacks& stacks, json* threads) {
  std::vector<const PythonThread*> unjoined;
  for (const PythonThread& python : stacks.threads) {
    json* match = nullptr;
    for (json& thread : *threads)
      if (thread.value("tid", 0) > 0 && static_cast<uint64_t>(thread.value("tid", 0)) == python.native_thread_id)
        match = &thread;
    if (match == nullptr) {
      unjoined.push_back(&python);
      continue;
    }
    (*match)["python"] = python_thread_json(python);
    const json native = match->value("frames", json::array());
    if (native.empty()) continue;
    std::string note;
    json merged = merged_stack_json(native, python, &note);
    if (!merged.empty()) (*match)["merged_frames"] = merged;
    if (!note.empty()) (*match)["merge_note"] = note;
  }
  return unjoined;
}

}  // namespace nsc
