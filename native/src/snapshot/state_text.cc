#include "snapshot/state_text.h"

#include <algorithm>
#include <sstream>

#include "util/json_access.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

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

std::string rank_pair(const json& comm, const char* rank_key, const char* count_key) {
  return cell_text(field(comm, rank_key)) + "/" + cell_text(field(comm, count_key));
}

// Before NCCL 2.24 the count lives in ncclSharedResources; split comms with splitShare share it.
std::string coll_op_count_note(const json& comm, const json& document) {
  if (field(comm, "coll_op_count_of") != "ncclSharedResources") return "";
  const json& shared = field(comm, "shared_resources");
  std::string others;
  for (const json& other : field(document, "communicators"))
    if (&other != &comm && shared.is_string() && field(other, "shared_resources") == shared)
      others += (others.empty() ? "" : ", ") + cell_text(field(other, "comm_hash"));
  return others.empty() ? "" : " (shared with " + others + ": splitShare)";
}

void render_counters(const json& comm, const json& document, std::ostringstream& out) {
  out << "  launched  ";
  const json& launched = field(comm, "seq_launched");
  // NCCL's ncclFunc_t order first, then anything a newer version adds.
  static const char* const kOrder[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
  for (const char* name : kOrder)
    if (launched.contains(name)) out << " " << name << " " << cell_text(launched[name]);
  for (const auto& [name, value] : launched.items())
    if (std::find(std::begin(kOrder), std::end(kOrder), name) == std::end(kOrder))
      out << " " << name << " " << cell_text(value);
  out << "   collOpCount " << cell_text(field(comm, "coll_op_count")) << coll_op_count_note(comm, document)
      << "   p2p " << cell_text(field(field(comm, "p2p_op_count"), "total")) << "\n";
  const json& health = field(comm, "health");
  out << "  health     " << cell_text(field(health, "async_result"))
      << "  abort " << cell_text(field(health, "abort_flag"))
      << "  destroy " << cell_text(field(health, "destroy_flag"))
      << "  init " << cell_text(field(health, "init_state"))
      << "  finalize " << cell_text(field(health, "finalize_called"))
      << "  revoked " << cell_text(field(health, "revoked")) << "\n";
}

void render_channels(const json& comm, std::ostringstream& out) {
  const json& channels = field(comm, "channels");
  if (!channels.is_array() || channels.empty()) return;
  out << "  channels   ring prev > me > next        tree up / down\n";
  for (const json& channel : channels) {
    const json& ring = field(channel, "ring");
    const json& tree = field(channel, "tree");
    std::string down;
    for (const json& d : field(tree, "down")) down += (down.empty() ? "" : ",") + cell_text(d);
    std::ostringstream line;
    line << "    ch" << cell_text(field(channel, "id")) << "      " << cell_text(field(ring, "prev"))
         << " > " << cell_text(field(comm, "rank")) << " > " << cell_text(field(ring, "next"));
    std::string text = line.str();
    text.resize(std::max<size_t>(text.size(), 40), ' ');
    out << text << cell_text(field(tree, "up")) << " / " << down << "\n";
  }
}

void render_proxy_ops(const json& comm, std::ostringstream& out) {
  const json& ops = field(comm, "proxy_ops");
  if (ops.is_null()) {
    out << "  proxy ops  unavailable\n";
    return;
  }
  out << "  proxy ops  " << ops.size() << " in flight\n";
  for (const json& op : ops) {
    out << "    op " << cell_text(field(op, "op_count")) << " " << cell_text(field(op, "collective"))
        << " " << cell_text(field(op, "pattern")) << " " << cell_text(field(op, "protocol")) << "\n";
    for (const json& sub : field(op, "subs"))
      out << "      ch" << cell_text(field(sub, "channel")) << " peer " << cell_text(field(sub, "peer"))
          << ": posted " << cell_text(field(sub, "posted")) << " received "
          << cell_text(field(sub, "received")) << " transmitted " << cell_text(field(sub, "transmitted"))
          << " done " << cell_text(field(sub, "done")) << " of " << cell_text(field(sub, "nsteps"))
          << " steps\n";
  }
}

void render_planned(const json& comm, std::ostringstream& out) {
  const json& planned = field(comm, "planned");
  if (!planned.is_object()) return;
  out << "  planned    " << field(planned, "colls").size() << " coll, " << field(planned, "p2p").size()
      << " p2p task(s) not launched, " << cell_text(field(planned, "unlaunched_plans"))
      << " unlaunched plan(s), in group " << cell_text(field(planned, "in_group")) << "\n";
  for (const json& task : field(planned, "colls"))
    out << "    " << cell_text(field(task, "collective")) << " count " << cell_text(field(task, "count"))
        << " " << cell_text(field(task, "datatype")) << " " << cell_text(field(task, "op")) << " root "
        << cell_text(field(task, "root")) << "\n";
  for (const json& task : field(planned, "p2p"))
    out << "    " << cell_text(field(task, "kind")) << " peer " << cell_text(field(task, "peer"))
        << " count " << cell_text(field(task, "count")) << " " << cell_text(field(task, "datatype")) << "\n";
}

// "  awaiting   4 launched plan(s) not reclaimed; newest AllReduce #4 count 1048576 ncclFloat32
// ncclSum send 0x7f.. recv 0x7f..": the collective a hung rank's kernel runs (docs/numerics.md).
void render_launched(const json& comm, std::ostringstream& out) {
  const json& launched = field(comm, "launched");
  if (!launched.is_object()) return;
  const json& plans = field(launched, "plans_awaiting_reclaim");
  if (!plans.is_number()) {
    out << "  awaiting   launched plans not reclaimed: unavailable (below)\n";
    return;
  }
  out << "  awaiting   " << plans.dump() << " launched plan(s) not reclaimed";
  const json& colls = field(launched, "colls");
  if (colls.is_array() && !colls.empty()) {
    const json& newest = colls.back();
    const json& seq = field(newest, "seq");
    out << "; newest " << cell_text(field(newest, "collective")) << (seq.is_number() ? " #" + seq.dump() : "")
        << " count " << cell_text(field(newest, "count")) << " " << cell_text(field(newest, "datatype")) << " "
        << cell_text(field(newest, "op")) << " send " << cell_text(field(newest, "sendbuff")) << " recv "
        << cell_text(field(newest, "recvbuff"));
  }
  const json& p2p = field(launched, "p2p");
  if (p2p.is_array() && !p2p.empty()) out << "; " << p2p.size() << " p2p task(s)";
  out << "\n";
}

void render_notes(const json& comm, std::ostringstream& out) {
  const json& unavailable = field(comm, "unavailable");
  if (unavailable.is_object() && !unavailable.empty()) {
    out << "  unavailable\n";
    for (const auto& [key, why] : unavailable.items())
      out << "    " << key << ": " << escape_for_terminal(cell_text(why)) << "\n";
  }
  for (const json& warning : field(comm, "warnings"))
    out << "  WARNING    " << escape_for_terminal(cell_text(warning)) << "\n";
}

// "  library    lib 1  2.30.7  /opt/nccl/lib/libnccl.so.2", only when several libnccl are mapped.
void render_comm_library(const json& comm, bool several_libraries, std::ostringstream& out) {
  const json& library = field(comm, "library");
  if (!several_libraries || !library.is_object()) return;
  out << "  library    lib " << cell_text(field(library, "index")) << "  " << cell_text(field(library, "version"))
      << "  " << escape_for_terminal(cell_text(field(library, "path"))) << "\n";
}

// "  pg         'dp0' (name 3), ranks 0,2": the PyTorch process group joined to this communicator.
void render_comm_process_group(const json& comm, const json& document, std::ostringstream& out) {
  for (const json& group : field(field(document, "torch"), "process_groups")) {
    if (!field(group, "communicator").is_string() || field(group, "communicator") != field(comm, "address")) continue;
    std::string ranks;
    for (const json& rank : field(group, "ranks")) ranks += (ranks.empty() ? "" : ",") + rank.dump();
    out << "  pg         '" << escape_for_terminal(cell_text(field(group, "desc"))) << "' (name "
        << escape_for_terminal(cell_text(field(group, "name"))) << "), ranks " << ranks << "\n";
  }
}

void render_comm(const json& comm, const json& document, bool several_libraries, std::ostringstream& out) {
  out << "\ncomm " << cell_text(field(comm, "address")) << "  hash " << cell_text(field(comm, "comm_hash"))
      << "  rank " << rank_pair(comm, "rank", "nranks") << "  cuda " << cell_text(field(comm, "cuda_dev"))
      << " (nvml " << cell_text(field(comm, "nvml_dev")) << ", bus " << cell_text(field(comm, "bus_id"))
      << ")  node " << rank_pair(comm, "node", "nnodes") << "  local "
      << rank_pair(comm, "local_rank", "local_ranks") << "  channels " << cell_text(field(comm, "nchannels"))
      << "\n";
  render_comm_library(comm, several_libraries, out);
  render_comm_process_group(comm, document, out);
  render_counters(comm, document, out);
  render_channels(comm, out);
  render_proxy_ops(comm, out);
  render_planned(comm, out);
  render_launched(comm, out);
  render_notes(comm, out);
}

// "cudaStreamSynchronize", or "libcuda.so.1+0x3185c4" for a frame without a symbol.
std::string frame_text(const json& frame) {
  if (field(frame, "function").is_string()) return field(frame, "function").get<std::string>();
  std::string module = field(frame, "module").is_string() ? field(frame, "module").get<std::string>() : "??";
  const json& offset = field(frame, "offset");
  return module + (offset.is_number_unsigned() || offset.is_number_integer() ? "+" + hex(offset.get<uint64_t>()) : "");
}

// "Worker.run (threads_fixture.py:45)", or the frame's "unreadable frame at 0x..." text.
std::string python_frame_text(const json& frame) {
  if (field(frame, "error").is_string()) return field(frame, "error").get<std::string>();
  std::string file = cell_text(field(frame, "file"));
  file = file.substr(file.find_last_of('/') == std::string::npos ? 0 : file.find_last_of('/') + 1);
  return cell_text(field(frame, "qualname")) + " (" + file + ":" +
         (field(frame, "line").is_number() ? field(frame, "line").dump() : "?") + ")";
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

void render_thread_python(const json& thread, std::ostringstream& out) {
  const json& frames = field(field(thread, "python"), "frames");
  if (!frames.is_array() || frames.empty()) return;
  out << "      python:";
  for (size_t i = 0; i < frames.size() && i < 4; ++i)
    out << (i == 0 ? " " : " < ") << escape_for_terminal(python_frame_text(frames[i]));
  if (frames.size() > 4) out << " < ... (" << frames.size() << " frames)";
  out << "\n";
}

void render_threads(const json& document, std::ostringstream& out) {
  render_torch(document, out);
  render_python(document, out);
  const json& threads = field(document, "threads");
  if (!threads.is_array() || threads.empty()) return;
  out << "\nthreads (" << threads.size() << ")\n";
  // Cores are unwound unless --no-stacks; live targets only with --stacks.
  bool core = field(field(document, "target"), "kind") == "core";
  const char* not_unwound = core ? "(not unwound: --no-stacks)" : "(stack not unwound: live needs --stacks)";
  for (const json& thread : threads) {
    const json& blocked_in = field(thread, "blocked_in");
    out << "  " << cell_text(field(thread, "tid")) << " "
        << escape_for_terminal(cell_text(field(thread, "name"))) << "  "
        << (blocked_in.is_null() ? not_unwound : cell_text(blocked_in));
    const json& frames = field(thread, "frames");
    for (size_t i = 0; i < frames.size() && i < 3; ++i)
      out << (i == 0 ? "  at " : " < ") << escape_for_terminal(frame_text(frames[i]));
    out << "\n";
    render_thread_python(thread, out);
  }
  for (const json& warning : field(document, "warnings"))
    out << "  note: " << escape_for_terminal(cell_text(field(warning, "reason"))) << "\n";
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
  const json& libraries = field(field(document, "nccl"), "libraries");
  bool several_libraries = libraries.is_array() && libraries.size() > 1;
  for (const json& comm : field(document, "communicators")) render_comm(comm, document, several_libraries, out);
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
