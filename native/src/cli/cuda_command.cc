// `ncclscope cuda-streams` and `ncclscope cuda-ipc`: the flight recorder's
// view of CUDA streams, events and IPC handles in one process (live or core),
// plus, with --nccl, the streams and registrations each communicator holds.
// The ncclscope.cuda/1 document is built by snapshot/cuda_document.cc; this file
// parses options and renders it.
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/options.h"
#include "snapshot/cuda_document.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc::cli {
namespace {

const char kCudaStreamsUsage[] =
    "usage: ncclscope cuda-streams (--core CORE | CORE | --pid PID) [options]\n"
    "  per CUDA stream: recent operations, pending event waits, blocked host threads,\n"
    "  and the cross-stream chains behind each blocked thread (needs the flight recorder,\n"
    "  libncclscope-recorder.so, loaded by CUDA_INJECTION64_PATH or NCCL_PROFILER_PLUGIN)\n"
    "  --exe PATH      the executable (cores)\n"
    "  --nccl          also decode the streams/events each NCCL communicator holds\n"
    "  --sysroot DIR, --solib-search-path D:D, --profile-path D:D   as for `ncclscope state` (--nccl)\n"
    "  --records       include the whole merged record timeline (JSON)\n"
    "  --json          print JSON\n";

const char kCudaIpcUsage[] =
    "usage: ncclscope cuda-ipc (--core CORE | CORE | --pid PID) [options]\n"
    "  CUDA IPC and cuMem handles exported and imported, mappings, handles opened and never\n"
    "  closed (from the flight recorder), and, with --nccl, the buffers NCCL registered\n"
    "  --exe PATH      the executable (cores)\n"
    "  --nccl          also decode each communicator's registrations and peer imports\n"
    "  --sysroot DIR, --solib-search-path D:D, --profile-path D:D   as for `ncclscope state` (--nccl)\n"
    "  --json          print JSON\n";

std::string text_of(const nlohmann::json& value) {
  if (value.is_string()) return escape_for_terminal(value.get<std::string>());
  if (value.is_null()) return "?";
  return value.dump();
}

std::string describe_nccl_op(const nlohmann::json& op) {
  if (!op.is_object()) return "";
  std::string text = text_of(op["collective"]);
  if (op.contains("seq")) text += " seq " + text_of(op["seq"]);
  text += " count " + text_of(op["count"]) + " " + text_of(op["datatype"]) + " comm " + text_of(op["comm_hash"]);
  return text;
}

void render_header(std::ostringstream& out, const nlohmann::json& document) {
  const nlohmann::json& recorder = document["recorder"];
  out << "target: " << text_of(document["target"]["description"]) << "\n";
  if (!recorder.value("found", false)) {
    out << "flight recorder: not found: " << text_of(recorder.value("why", nlohmann::json("?"))) << "\n";
    return;
  }
  out << "flight recorder at " << text_of(recorder["address"]) << " (pid " << text_of(recorder["pid"])
      << ", sources " << recorder["sources"].dump() << ", " << recorder["threads"].size() << " threads)\n";
  for (const auto& warning : recorder["warnings"]) out << "warning: " << text_of(warning) << "\n";
}

std::string render_streams(const nlohmann::json& document) {
  std::ostringstream out;
  render_header(out, document);
  const nlohmann::json& recorder = document["recorder"];
  if (recorder.value("found", false)) {
    for (const auto& thread : recorder["threads"]) {
      if (!thread["blocked_in"].is_object()) continue;
      const auto& blocked = thread["blocked_in"];
      out << "thread " << thread["tid"] << " (" << text_of(thread["name"]) << ") blocked in "
          << text_of(blocked["call"]);
      if (blocked.contains("stream")) out << " stream " << text_of(blocked["stream"]);
      if (blocked.contains("event")) out << " event " << text_of(blocked["event"]);
      out << "\n";
    }
    for (const auto& chain : recorder["chains"]) {
      out << "chain:";
      for (const auto& step : chain["steps"]) {
        std::string kind = step["step"];
        if (kind == "host_thread_blocked")
          out << " thread " << step["tid"] << " in " << text_of(step["call"])
              << (step["stream"].is_string() ? "(" + text_of(step["stream"]) + ")" : "");
        else if (kind == "stream_waits_event")
          out << " -> " << text_of(step["stream"]) << " waits on event " << text_of(step["event"])
              << " -> recorded on " << text_of(step["event_recorded_on"])
              << (step["after_nccl_op"].is_object() ? " after " + describe_nccl_op(step["after_nccl_op"]) : "");
        else if (kind == "event_recorded")
          out << " -> event " << text_of(step["event"]) << " recorded on " << text_of(step["stream"])
              << (step["after_nccl_op"].is_object() ? " after " + describe_nccl_op(step["after_nccl_op"]) : "");
        else if (kind == "stream_runs_nccl_op")
          out << " -> " << text_of(step["stream"]) << " last ran " << describe_nccl_op(step["nccl_op"]);
      }
      out << "\n";
    }
    for (const auto& stream : recorder["streams"]) {
      out << "stream " << text_of(stream["stream"]);
      if (stream.contains("nccl_roles")) out << " (" << text_of(stream["nccl_roles"][0]) << ")";
      out << ": " << stream["recent_ops"].size() << " recent ops";
      if (!stream["pending_event_waits"].empty())
        out << ", " << stream["pending_event_waits"].size() << " pending event waits";
      if (!stream["blocked_threads"].empty()) out << ", blocks threads " << stream["blocked_threads"].dump();
      out << "\n";
      for (const auto& op : stream["recent_ops"]) {
        out << "  " << text_of(op["record"]);
        if (op.contains("collective")) out << " " << describe_nccl_op(op);
        if (op.contains("event")) out << " event " << text_of(op["event"]);
        out << " (tid " << op["tid"] << ")\n";
      }
    }
    for (const auto& comm : recorder["comms"]) {
      out << "comm " << text_of(comm["comm_hash"]) << " rank " << comm["rank"] << "/" << comm["nranks"]
          << ": last seq " << comm["last_seq"].dump() << ", " << comm["ops"].size() << " ops recorded\n";
    }
  }
  for (const auto& thread : document.value("threads_blocked_in_cuda", nlohmann::json::array()))
    out << "thread " << thread["tid"] << " (" << text_of(thread["name"]) << ") stack in "
        << text_of(thread["blocked_in"]) << "\n";
  for (const auto& comm : document.value("nccl_communicators", nlohmann::json::array())) {
    const auto& cuda = comm["cuda"];
    out << "nccl comm " << text_of(comm["address"]) << " (hash " << text_of(comm["comm_hash"]) << ")";
    if (!cuda.is_object()) {
      out << ": no cuda section (decoder not wired into this build)\n";
      continue;
    }
    out << ": device stream " << text_of(cuda["device_stream"].is_object() ? cuda["device_stream"]["stream"] : nlohmann::json())
        << ", host stream " << text_of(cuda["host_stream"].is_object() ? cuda["host_stream"]["stream"] : nlohmann::json())
        << ", user streams " << cuda["user_streams"].dump() << "\n";
  }
  return out.str();
}

std::string render_ipc(const nlohmann::json& document) {
  std::ostringstream out;
  render_header(out, document);
  const nlohmann::json& recorder = document["recorder"];
  if (recorder.value("found", false)) {
    const auto& ipc = recorder["ipc"];
    out << "exported " << ipc["exported"].size() << ", imported " << ipc["imported"].size()
        << ", opened and never closed " << ipc["opened_never_closed"].size() << "\n";
    for (const auto& handle : ipc["exported"])
      out << "  exported " << text_of(handle["kind"]) << " " << text_of(handle["address"]) << " handle "
          << text_of(handle["handle_fingerprint"]) << "\n";
    for (const auto& handle : ipc["imported"])
      out << "  imported " << text_of(handle["kind"]) << " at " << text_of(handle["address"]) << " handle "
          << text_of(handle["handle_fingerprint"]) << (handle["closed"] == false ? "  NEVER CLOSED" : "") << "\n";
    const auto& cumem = ipc["cumem"];
    out << "cuMem: created " << cumem["created"].size() << ", exported " << cumem["exported"].size()
        << ", imported " << cumem["imported"].size() << ", mapped " << cumem["mapped"].size() << "\n";
    for (const auto& map : cumem["mapped"])
      out << "  map " << text_of(map["address"]) << " size " << map["size"] << " offset " << map["offset"]
          << " handle " << text_of(map["handle"]) << (map["unmapped"] == true ? " (unmapped)" : "") << "\n";
  }
  for (const auto& comm : document.value("nccl_communicators", nlohmann::json::array())) {
    const auto& cuda = comm["cuda"];
    if (!cuda.is_object() || !cuda["registrations"].is_object()) continue;
    const auto& registrations = cuda["registrations"];
    out << "nccl comm " << text_of(comm["address"]) << ": " << text_of(registrations["population"])
        << " registered buffers\n";
    for (const auto& buffer : registrations.value("buffers", nlohmann::json::array()))
      out << "  " << text_of(buffer.value("begin", nlohmann::json())) << " size "
          << text_of(buffer.value("size", nlohmann::json())) << " state "
          << buffer.value("state", nlohmann::json()).dump() << ", " << buffer.value("ipc_imports", nlohmann::json::array()).size()
          << " peer imports\n";
    for (const auto& connector : cuda.value("p2p_transport", nlohmann::json::array()))
      out << "  p2p channel " << connector["channel"] << " " << text_of(connector["direction"]) << " peer "
          << connector["peer"] << " " << text_of(connector.value("type", nlohmann::json())) << " mapped send "
          << text_of(connector.value("send_mem_ipc", nlohmann::json())) << " recv "
          << text_of(connector.value("recv_mem_ipc", nlohmann::json())) << "\n";
  }
  return out.str();
}

int run_cuda_command(const char* name, const char* usage, const std::vector<std::string>& args,
                     bool streams) {
  return run_guarded(name, nullptr, [&]() -> int {
    ParsedOptions options = parse_options(args, {"--core", "--pid", "--exe", "--sysroot", "--solib-search-path", "--profile-path"},
                                          {"--json", "--nccl", "--records", "--help", "-h"});
    if (options.has("--help") || options.has("-h")) {
      std::fputs(usage, stdout);
      return kExitOk;
    }
    CudaRequest request;
    request.target = target_request_from_options(options);
    request.with_nccl = options.has("--nccl");
    request.include_records = streams && options.has("--records");
    nlohmann::json document = build_cuda_document(request);
    if (options.has("--json"))
      std::cout << document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else
      std::cout << (streams ? render_streams(document) : render_ipc(document));
    bool found = document["recorder"].value("found", false);
    return found && document["errors"].empty() ? kExitOk : kExitPartial;
  });
}

}  // namespace

int run_cuda_streams_command(const std::vector<std::string>& args) {
  return run_cuda_command("cuda-streams", kCudaStreamsUsage, args, true);
}

int run_cuda_ipc_command(const std::vector<std::string>& args) {
  return run_cuda_command("cuda-ipc", kCudaIpcUsage, args, false);
}

}  // namespace nsc::cli
