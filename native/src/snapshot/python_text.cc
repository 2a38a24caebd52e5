#include "snapshot/python_text.h"

#include <sstream>

#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

// Strings are streamed as C strings: text stops at an embedded NUL, as it always has.
std::string escaped(const json& value) { return escape_for_terminal(value.get<std::string>()); }

void render_header(std::ostringstream& out, const json& document) {
  const json& python = document["python"];
  out << "CPython " << (python["version"].is_string() ? python["version"].get<std::string>().c_str() : "?")
      << " at " << escaped(python["interpreter"]).c_str() << " ("
      << (python["layout_source"].is_string() ? escaped(python["layout_source"]).c_str() : "-") << "), "
      << document["threads"].size() << " threads\n";
  for (const auto& error : python.value("errors", json::array())) out << "  error: " << escaped(error).c_str() << "\n";
}

void render_frame(std::ostringstream& out, const json& frame, bool merged) {
  if (frame.contains("error")) {
    out << "  " << escaped(frame["error"]).c_str() << "\n";
  } else if (frame.value("kind", "python") == "python") {
    std::string line = frame["line"].is_number() ? std::to_string(frame["line"].get<int64_t>()) : "?";
    out << "  " << escaped(frame.value("qualname", frame["function"])).c_str() << " ("
        << escaped(frame["file"]).c_str() << ":" << line << ")"
        << (!merged && frame.value("entry", false) ? "  [called from C]" : "") << "\n";
  } else {
    out << "  " << (frame["function"].is_string() ? escaped(frame["function"]).c_str() : "??") << " "
        << (frame["module"].is_string() ? "(" + escaped(frame["module"]) + ")" : std::string()).c_str() << "\n";
  }
}

void render_thread(std::ostringstream& out, const json& thread) {
  out << "\nThread " << thread["thread_id"].get<std::string>().c_str() << " (tid "
      << static_cast<unsigned long long>(thread["native_thread_id"].get<uint64_t>()) << ")"
      << (thread.contains("merged_frames") ? ", merged with native frames" : "") << ":\n";
  if (thread.contains("error")) out << "  " << escaped(thread["error"]).c_str() << "\n";
  bool merged = thread.contains("merged_frames") && !thread["merged_frames"].empty();
  for (const auto& frame : merged ? thread["merged_frames"] : thread["frames"]) render_frame(out, frame, merged);
  if (thread.value("truncated", false)) out << "  ... (more frames not shown)\n";
  if (thread.contains("merge_note")) out << "  note: " << thread["merge_note"].get<std::string>().c_str() << "\n";
}

}  // namespace

std::string render_python_text(const json& document) {
  std::ostringstream out;
  render_header(out, document);
  for (const auto& thread : document["threads"]) render_thread(out, thread);
  return out.str();
}

}  // namespace nsc
