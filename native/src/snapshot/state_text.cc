#include "snapshot/state_text.h"

#include <algorithm>
#include <sstream>

#include "snapshot/state_views.h"
#include "util/json_access.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

constexpr long kCliFramesPerThread = 4;  // gdb nccl-threads --frames shows more

const json& field(const json& object, const char* key) { return json_member(object, key); }

// "launcher   RANK=3 LOCAL_RANK=1 WORLD_SIZE=4 (from the initial stack)"
void render_launcher(const json& launcher, std::ostringstream& out) {
  if (!launcher.is_object()) return;
  out << "launcher  ";
  const json& variables = field(launcher, "variables");
  const json& rank_from = field(launcher, "rank_from");
  if (rank_from.is_string())
    out << " " << rank_from.get<std::string>() << "=" << cell_text(field(launcher, "rank"));
  static const char* const kShown[] = {"LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                                       "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_LOCALID", "SLURM_NTASKS"};
  if (variables.is_object())
    for (const char* name : kShown)
      if (variables.contains(name) && variables[name].is_string())
        out << " " << name << "=" << escape_for_terminal(variables[name].get<std::string>());
  const json& why = field(launcher, "unavailable");
  if (why.is_string()) out << " rank unavailable: " << escape_for_terminal(why.get<std::string>());
  const json& source = field(launcher, "source");
  if (source.is_string())
    out << " (from " << (source == "initial stack" ? "the initial stack" : escape_for_terminal(source.get<std::string>()))
        << ")";
  out << "\n";
}

// Several libnccl mapped (issue 17): one line each; with one, the nccl/layout lines say it all.
void render_libraries(const json& libraries, std::ostringstream& out) {
  if (!libraries.is_array() || libraries.size() < 2) return;
  out << "libraries  " << libraries.size() << " libnccl mapped; each communicator says its own\n";
  for (const json& library : libraries) {
    out << "  lib " << cell_text(field(library, "index")) << "    " << cell_text(field(library, "version")) << "  "
        << escape_for_terminal(cell_text(field(library, "library"))) << "  build-id "
        << cell_text(field(library, "build_id")) << "  ";
    if (field(library, "unavailable").is_string())
      out << "communicators unavailable: " << escape_for_terminal(field(library, "unavailable").get<std::string>());
    else
      out << cell_text(field(library, "communicators")) << " communicator(s), layout "
          << escape_for_terminal(cell_text(field(library, "layout_source")));
    out << "\n";
  }
}

void render_header(const json& document, std::ostringstream& out) {
  const json& target = field(document, "target");
  out << "target     ";
  if (field(target, "kind") == "core")
    out << "core " << escape_for_terminal(cell_text(field(target, "path")));
  else
    out << "live pid " << cell_text(field(target, "pid"));
  if (field(target, "executable").is_string())
    out << "  exe " << escape_for_terminal(field(target, "executable").get<std::string>());
  out << "\n";
  render_launcher(field(document, "launcher"), out);
  const json& nccl = field(document, "nccl");
  if (nccl.is_object()) {
    out << "nccl       " << cell_text(field(nccl, "version")) << "  "
        << escape_for_terminal(cell_text(field(nccl, "library"))) << "  build-id "
        << cell_text(field(nccl, "build_id")) << "\n"
        << "layout     " << escape_for_terminal(cell_text(field(nccl, "layout_source"))) << "\n";
    if (field(nccl, "build_id_mismatch") == true)
      out << "WARNING    libnccl build-id differs from the target's: decoded anyway (--force-mismatch)\n";
    render_libraries(field(nccl, "libraries"), out);
  }
  const json& discovery = field(document, "discovery");
  if (discovery.is_object()) {
    out << "discovery  " << cell_text(field(discovery, "method")) << ": "
        << field(document, "communicators").size() << " communicator(s)";
    size_t corrupt = 0;
    for (const json& error : field(document, "errors")) corrupt += field(error, "kind") == "discovery";
    if (corrupt > 0) out << ", " << corrupt << " found but rejected as corrupt (see errors)";
    if (field(discovery, "method") == "scan")
      out << ", " << cell_text(field(discovery, "regions_scanned")) << " regions, "
          << cell_text(field(discovery, "bytes_scanned")) << " bytes, "
          << cell_text(field(discovery, "candidates")) << " candidates"
          << (field(discovery, "scan_anchor") == "sharedRes->owner" ? " (by sharedRes->owner: no NCCL_MAGIC before 2.21)" : "");
    out << "\n";
  }
}

void render_python(const json& document, std::ostringstream& out) {
  const json& python = field(document, "python");
  if (!python.is_object()) return;
  out << "\npython  CPython " << cell_text(field(python, "version")) << " at "
      << escape_for_terminal(cell_text(field(python, "interpreter"))) << ", " << cell_text(field(python, "threads"))
      << " thread states, layout " << escape_for_terminal(cell_text(field(python, "layout_source"))) << "\n";
  if (field(python, "unavailable").is_string())
    out << "  no Python stacks: " << escape_for_terminal(field(python, "unavailable").get<std::string>()) << "\n";
}

// "nccl:all_reduce pg '1' (tp0) coll #4 completed [65536] Float at torch_multigroup.py:165 in tpdp_step"
std::string torch_entry_text(const json& entry) {
  const json& group = field(entry, "process_group");
  std::string text = cell_text(field(entry, "profiling_name")) + " pg " +
                     (group.is_array() && group.size() == 2 ? "'" + cell_text(group[0]) + "' (" + cell_text(group[1]) + ")" : "?");
  text += field(entry, "is_p2p") == true ? " p2p #" + cell_text(field(entry, "p2p_seq_id"))
                                         : " coll #" + cell_text(field(entry, "collective_seq_id"));
  text += " " + cell_text(field(entry, "state"));
  const json& sizes = field(entry, "input_sizes");
  const json& dtypes = field(entry, "input_dtypes");
  if (sizes.is_array() && !sizes.empty()) text += " " + sizes[0].dump() + (dtypes.is_array() && !dtypes.empty() ? " " + cell_text(dtypes[0]) : "");
  // The caller's line: the first frame outside torch/distributed.
  const json& frames = field(entry, "frames");
  if (frames.is_array())
    for (const json& frame : frames) {
      std::string file = cell_text(field(frame, "filename"));
      if (file.find("/torch/") != std::string::npos) continue;
      text += " at " + file.substr(file.find_last_of('/') == std::string::npos ? 0 : file.find_last_of('/') + 1) + ":" +
              cell_text(field(frame, "line")) + " in " + cell_text(field(frame, "name"));
      break;
    }
  return text;
}

void render_torch(const json& document, std::ostringstream& out) {
  const json& torch = field(document, "torch");
  if (!torch.is_object()) return;
  out << "\ntorch   flight recorder, torch " << cell_text(field(torch, "torch_version")) << ", libtorch_cuda build-id "
      << cell_text(field(torch, "build_id")) << "\n";
  for (const std::string& line : torch_liveness_lines(document)) out << "  " << escape_for_terminal(line) << "\n";
  if (field(torch, "unavailable").is_string()) {
    out << "  not read: " << escape_for_terminal(field(torch, "unavailable").get<std::string>()) << "\n";
    return;
  }
  const json& entries = field(torch, "entries");
  out << "  " << (entries.is_array() ? entries.size() : 0) << " entries (ring of " << cell_text(field(torch, "max_entries"))
      << ", next record id " << cell_text(field(torch, "next_record_id")) << ")"
      << (field(torch, "enabled") == true ? "" : ", recorder disabled") << "\n";
  for (const json& group : field(torch, "process_groups")) {
    std::string ranks;
    for (const json& rank : field(group, "ranks")) ranks += (ranks.empty() ? "" : ",") + rank.dump();
    out << "  pg '" << escape_for_terminal(cell_text(field(group, "name"))) << "' ("
        << escape_for_terminal(cell_text(field(group, "desc"))) << ") ranks " << ranks << ": communicator "
        << (field(group, "communicator").is_string() ? field(group, "communicator").get<std::string>()
                                                      : cell_text(field(group, "match")))
        << "\n";
  }
  size_t shown = 0, count = entries.is_array() ? entries.size() : 0;
  for (size_t i = count > 8 ? count - 8 : 0; i < count; ++i, ++shown)
    out << "  #" << cell_text(field(entries[i], "record_id")) << " " << escape_for_terminal(torch_entry_text(entries[i])) << "\n";
  if (count > shown) out << "  (" << count - shown << " older entries in --json)\n";
}

void render_threads(const json& document, std::ostringstream& out) {
  render_torch(document, out);
  render_python(document, out);
  const json& threads = field(document, "threads");
  if (!threads.is_array() || threads.empty()) return;
  // Cores are unwound unless --no-stacks; live targets only with --stacks.
  json data = {{"threads", threads}, {"target_kind", field(field(document, "target"), "kind")}};
  data["warnings"] = field(document, "warnings").is_array() ? field(document, "warnings") : json::array();
  ViewOptions options;
  options.max_frames = kCliFramesPerThread;
  out << "\n" << nsc::render_threads(data, options);
}

}  // namespace

std::string cell_text(const nlohmann::json& value) {
  if (value.is_null()) return "unavailable";
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

std::string render_state_text(const nlohmann::json& document) {
  std::ostringstream out;
  render_header(document, out);
  for (const std::string& line : failure_lines(document)) out << line << "\n";
  const json& signal_unavailable = field(document, "fatal_signal_unavailable");
  if (field(field(document, "target"), "kind") == "core" && signal_unavailable.is_string())
    out << "signal     unavailable: " << escape_for_terminal(signal_unavailable.get<std::string>()) << "\n";
  ViewOptions options;
  options.document = &document;
  const json& communicators = field(document, "communicators");
  if (communicators.is_array() && !communicators.empty()) out << "\n" << render_comm_details(communicators, options);
  render_threads(document, out);
  const json& errors = field(document, "errors");
  if (errors.is_array() && !errors.empty()) {
    out << "\nerrors (" << errors.size() << ")\n";
    for (const json& error : errors)
      out << "  " << escape_for_terminal(cell_text(field(error, "subject"))) << ": "
          << escape_for_terminal(cell_text(field(error, "reason"))) << "\n";
  }
  return out.str();
}

}  // namespace nsc
