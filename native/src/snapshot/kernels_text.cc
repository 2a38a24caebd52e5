#include "snapshot/kernels_text.h"

#include "util/json_access.h"

namespace nsc {
namespace {

using nlohmann::json;

std::string number_text(const json& value) {
  return value.is_number_unsigned() ? std::to_string(value.get<uint64_t>())
                                    : value.is_number_integer() ? std::to_string(value.get<int64_t>()) : "?";
}

// The peer as a rank number; -1 when the connection did not say.
int64_t peer_rank(const json& wait) {
  const json& peer = json_member(wait, "peer");
  return peer.is_number_integer() ? peer.get<int64_t>() : -1;
}

std::string rank_text(const json& wait) { return "rank " + std::to_string(peer_rank(wait)); }

// " (8 steps received since the kernel started)": how the receiver's position was found.
std::string received_since_launch(const json& wait) {
  if (json_member(wait, "position_from") == "step_at_launch")
    return " (nothing received since the kernel started; head is in " + rank_text(wait) + "'s memory)";
  const json& since = json_member(wait, "steps_since_launch");
  if (!since.is_number_unsigned()) return "";
  if (since.get<uint64_t>() == 0) return " (nothing received since the kernel started)";
  return " (" + number_text(since) + " steps received since the kernel started)";
}

// "rank 1 consumed up to step 24 (nothing since the kernel started)"; the peer as the
// connection gave it ("rank null" when it did not), as this sentence always said.
std::string consumed_fact(const json& wait) {
  const json& consumed = json_member(wait, "consumed_step");
  std::string text = "rank " + json_member(wait, "peer").dump() + " consumed up to step " + number_text(consumed);
  if (json_member(wait, "step_at_launch") == consumed) text += " (nothing since the kernel started)";
  return text;
}

std::string protocol_of(const json& wait) {
  const json& protocol = json_member(wait, "protocol");
  return protocol.is_string() ? protocol.get<std::string>() : "?";
}

std::string unknown_sentence(const json& wait) {
  const json& reason = json_member(wait, "unknown_reason");
  std::string code = reason.is_string() ? reason.get<std::string>() : "";
  if (code == "connection-state-unavailable") return "connection state unavailable";
  if (code == "peer-data-unreadable") return "data posted by " + rank_text(wait) + " unreadable";
  if (code == "position-unavailable") return "recv head and step at launch unavailable";
  if (code == "position-unreadable")
    return rank_text(wait) + " posted " + json_member(wait, "posted_since_launch").dump() +
           " steps since the kernel started at step " + number_text(json_member(wait, "step_at_launch")) +
           "; this rank's position (head in " + rank_text(wait) + "'s memory) unreadable";
  if (code == "send-head-unavailable") return "send head counter unavailable";
  if (code == "send-posted-unreadable") return consumed_fact(wait) + "; what this rank posted is unreadable";
  if (code == "send-flags-unreadable") return consumed_fact(wait) + "; " + protocol_of(wait) + " flags in its buffer unreadable";
  if (code == "send-posted-slots-unavailable") return protocol_of(wait) + " posted slots unavailable";
  return "wait unknown";
}

// A send side with free slots, or a receive side whose data arrived.
std::string ready_sentence(const json& wait) {
  const json& in_flight = json_member(wait, "in_flight");
  const json& nccl_steps = json_member(wait, "nccl_steps");
  if (!in_flight.is_number_unsigned() || !nccl_steps.is_number_unsigned())
    return "data from " + rank_text(wait) + " for step " + number_text(json_member(wait, "step")) + " has arrived";
  return std::to_string(nccl_steps.get<uint64_t>() - in_flight.get<uint64_t>()) + " of " + number_text(nccl_steps) +
         " slots free towards " + rank_text(wait);
}

}  // namespace

std::string peer_wait_phrase(const std::string& kind, int64_t peer, const char* verb) {
  std::string rank = "rank " + std::to_string(peer);
  return kind == "waiting-for-data" ? std::string(verb) + " for data from " + rank
                                    : std::string(verb) + " for " + rank + " to free a slot";
}

std::string connection_wait_sentence(const json& wait) {
  const json& kind = json_member(wait, "kind");
  if (kind == "waiting-for-data")
    return peer_wait_phrase("waiting-for-data", peer_rank(wait)) + " at step " +
           number_text(json_member(wait, "step")) + received_since_launch(wait);
  if (kind == "waiting-for-slot")
    return peer_wait_phrase("waiting-for-slot", peer_rank(wait)) + " (all " +
           number_text(json_member(wait, "nccl_steps")) + " posted, " + rank_text(wait) + " consumed up to step " +
           number_text(json_member(wait, "consumed_step")) + ")";
  if (kind == "ready") return ready_sentence(wait);
  return unknown_sentence(wait);
}

std::string kernel_wait_sentence(const json& wait, size_t total_blocks) {
  return peer_wait_phrase(json_member(wait, "kind") == "waiting-for-data" ? "waiting-for-data" : "waiting-for-slot",
                          peer_rank(wait)) +
         " (" + number_text(json_member(wait, "blocks")) + " of " + std::to_string(total_blocks) + " blocks)";
}

}  // namespace nsc
