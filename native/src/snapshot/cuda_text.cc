#include "snapshot/cuda_text.h"

#include <sstream>

#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

std::string text_of(const json& value) {
  if (value.is_string()) return escape_for_terminal(value.get<std::string>());
  if (value.is_null()) return "?";
  return value.dump();
}

std::string describe_nccl_op(const json& op) {
  if (!op.is_object()) return "";
  std::string text = text_of(op["collective"]);
  if (op.contains("seq")) text += " seq " + text_of(op["seq"]);
  text += " count " + text_of(op["count"]) + " " + text_of(op["datatype"]) + " comm " + text_of(op["comm_hash"]);
  return text;
}

void render_header(std::ostringstream& out, const json& document) {
  const json& recorder = document["recorder"];
  out << "target: " << text_of(document["target"]["description"]) << "\n";
  if (!recorder.value("found", false)) {
    out << "flight recorder: not found: " << text_of(recorder.value("why", json("?"))) << "\n";
    return;
  }
  out << "flight recorder at " << text_of(recorder["address"]) << " (pid " << text_of(recorder["pid"])
      << ", sources " << recorder["sources"].dump() << ", " << recorder["threads"].size() << " threads)\n";
  for (const auto& warning : recorder["warnings"]) out << "warning: " << text_of(warning) << "\n";
}

// "thread 12 (python) blocked in cudaStreamSynchronize stream 0x..": from the recorder.
void render_blocked_threads(std::ostringstream& out, const json& recorder) {
  for (const auto& thread : recorder["threads"]) {
    if (!thread["blocked_in"].is_object()) continue;
    const auto& blocked = thread["blocked_in"];
    out << "thread " << thread["tid"] << " (" << text_of(thread["name"]) << ") blocked in "
        << text_of(blocked["call"]);
    if (blocked.contains("stream")) out << " stream " << text_of(blocked["stream"]);
    if (blocked.contains("event")) out << " event " << text_of(blocked["event"]);
    out << "\n";
  }
}

std::string after_op(const json& step) {
  return step["after_nccl_op"].is_object() ? " after " + describe_nccl_op(step["after_nccl_op"]) : "";
}

void render_chain(std::ostringstream& out, const json& chain) {
  out << "chain:";
  for (const auto& step : chain["steps"]) {
    std::string kind = step["step"];
    if (kind == "host_thread_blocked")
      out << " thread " << step["tid"] << " in " << text_of(step["call"])
          << (step["stream"].is_string() ? "(" + text_of(step["stream"]) + ")" : "");
    else if (kind == "stream_waits_event")
      out << " -> " << text_of(step["stream"]) << " waits on event " << text_of(step["event"])
          << " -> recorded on " << text_of(step["event_recorded_on"]) << after_op(step);
    else if (kind == "event_recorded")
      out << " -> event " << text_of(step["event"]) << " recorded on " << text_of(step["stream"]) << after_op(step);
    else if (kind == "stream_runs_nccl_op")
      out << " -> " << text_of(step["stream"]) << " last ran " << describe_nccl_op(step["nccl_op"]);
  }
  out << "\n";
}

void render_stream(std::ostringstream& out, const json& stream) {
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

void render_recorder_streams(std::ostringstream& out, const json& recorder) {
  render_blocked_threads(out, recorder);
  for (const auto& chain : recorder["chains"]) render_chain(out, chain);
  for (const auto& stream : recorder["streams"]) render_stream(out, stream);
  for (const auto& comm : recorder["comms"])
    out << "comm " << text_of(comm["comm_hash"]) << " rank " << comm["rank"] << "/" << comm["nranks"]
        << ": last seq " << comm["last_seq"].dump() << ", " << comm["ops"].size() << " ops recorded\n";
}

// With --nccl: the threads whose own stack is in CUDA, and the streams each communicator holds.
void render_nccl_streams(std::ostringstream& out, const json& document) {
  for (const auto& thread : document.value("threads_blocked_in_cuda", json::array()))
    out << "thread " << thread["tid"] << " (" << text_of(thread["name"]) << ") stack in "
        << text_of(thread["blocked_in"]) << "\n";
  for (const auto& comm : document.value("nccl_communicators", json::array())) {
    const auto& cuda = comm["cuda"];
    out << "nccl comm " << text_of(comm["address"]) << " (hash " << text_of(comm["comm_hash"]) << ")";
    if (!cuda.is_object()) {
      out << ": no cuda section (decoder not wired into this build)\n";
      continue;
    }
    out << ": device stream " << text_of(cuda["device_stream"].is_object() ? cuda["device_stream"]["stream"] : json())
        << ", host stream " << text_of(cuda["host_stream"].is_object() ? cuda["host_stream"]["stream"] : json())
        << ", user streams " << cuda["user_streams"].dump() << "\n";
  }
}

void render_recorder_ipc(std::ostringstream& out, const json& recorder) {
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

// With --nccl: each communicator's registered buffers and P2P transport mappings.
void render_nccl_registrations(std::ostringstream& out, const json& document) {
  for (const auto& comm : document.value("nccl_communicators", json::array())) {
    const auto& cuda = comm["cuda"];
    if (!cuda.is_object() || !cuda["registrations"].is_object()) continue;
    const auto& registrations = cuda["registrations"];
    out << "nccl comm " << text_of(comm["address"]) << ": " << text_of(registrations["population"])
        << " registered buffers\n";
    for (const auto& buffer : registrations.value("buffers", json::array()))
      out << "  " << text_of(buffer.value("begin", json())) << " size "
          << text_of(buffer.value("size", json())) << " state "
          << buffer.value("state", json()).dump() << ", " << buffer.value("ipc_imports", json::array()).size()
          << " peer imports\n";
    for (const auto& connector : cuda.value("p2p_transport", json::array()))
      out << "  p2p channel " << connector["channel"] << " " << text_of(connector["direction"]) << " peer "
          << connector["peer"] << " " << text_of(connector.value("type", json())) << " mapped send "
          << text_of(connector.value("send_mem_ipc", json())) << " recv "
          << text_of(connector.value("recv_mem_ipc", json())) << "\n";
  }
}

}  // namespace

std::string render_cuda_streams_text(const json& document) {
  std::ostringstream out;
  render_header(out, document);
  if (document["recorder"].value("found", false)) render_recorder_streams(out, document["recorder"]);
  render_nccl_streams(out, document);
  return out.str();
}

std::string render_cuda_ipc_text(const json& document) {
  std::ostringstream out;
  render_header(out, document);
  if (document["recorder"].value("found", false)) render_recorder_ipc(out, document["recorder"]);
  render_nccl_registrations(out, document);
  return out.str();
}

}  // namespace nsc
