#include "snapshot/kernels_text.h"

#include <set>
#include <vector>

#include "snapshot/field_text.h"
#include "snapshot/state_text.h"
#include "snapshot/state_views.h"
#include "util/json_access.h"
#include "util/strings.h"

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


// "AllReduce Sum f32 RING SIMPLE", or the invocation when the name was not NCCL's.
std::string kernel_what(const json& decoded, const json& fallback) {
  if (!decoded.is_object() || decoded.empty()) return plain_text(fallback);
  std::string out;
  for (const char* key : {"collective", "op", "datatype", "algorithm", "protocol", "detail"})
    if (truthy(json_member(decoded, key))) out += (out.empty() ? "" : " ") + plain_text(json_member(decoded, key));
  return out;
}

bool is_wait_kind(const json& wait) {
  const json& kind = json_member(wait, "kind");
  return kind.is_string() && kind.get<std::string>().rfind("waiting", 0) == 0;
}

// What one block does: "RING SIMPLE: waiting for data from rank 1 at step 24".
std::string block_text(const json& block) {
  std::string what;
  for (const char* key : {"algorithm", "protocol"})
    if (truthy(json_member(block, key))) what += (what.empty() ? "" : " ") + plain_text(json_member(block, key));
  if (what.empty()) what = "function unknown";
  const json& waits = json_member(block, "waits");
  std::string waiting;
  for (const json& wait : array_or_empty(waits))
    if (is_wait_kind(wait)) waiting += (waiting.empty() ? "" : "; ") + plain_text(json_member(wait, "text"));
  if (!waiting.empty()) return what + ": " + waiting;
  if (json_member(block, "state") == "unknown") {
    std::set<std::string> reasons;
    if (truthy(json_member(block, "reason"))) {
      reasons.insert(json_member(block, "reason").is_string() ? json_member(block, "reason").get<std::string>() : "");
    } else {
      for (const json& wait : array_or_empty(waits))
        if (json_member(wait, "kind") == "unknown")
          reasons.insert(cell_text(json_member(wait, "direction")) + " " + cell_text(json_member(wait, "peer")) + ": " +
                         cell_text(json_member(wait, "text")));
    }
    std::string joined;
    for (const std::string& reason : reasons) joined += (joined.empty() ? "" : "; ") + reason;
    return what + ": wait unknown (" + escape_for_terminal(joined.empty() ? "counters unavailable" : joined) + ")";
  }
  return what + ": not waiting on a peer (data and slots available)";
}

// "; ring 1 -> me -> 1, tree up 1" when every block of the group has the same neighbours.
std::string peers_text(const std::vector<const json*>& blocks) {
  const json& first = json_member(*blocks.front(), "peers");
  if (!truthy(first)) return "";
  for (const json* block : blocks)
    if (json_member(*block, "peers") != first) return "";
  std::string text = "; ring " + cell_text(json_member(first, "ring_prev")) + " -> me -> " +
                     cell_text(json_member(first, "ring_next"));
  const json& up = json_member(first, "tree_up");
  if (!up.is_null() && up != -1) text += ", tree up " + cell_text(up);
  const json& down = json_member(first, "tree_down");
  if (truthy(down) && down.is_array()) {
    std::string ranks;
    for (const json& rank : down) ranks += (ranks.empty() ? "" : ",") + cell_text(rank);
    text += ", tree down " + ranks;
  }
  return escape_for_terminal(text);
}

long long block_number(const json& block) {
  const json& number = json_member(block, "block");
  return number.is_number_integer() ? number.get<long long>() : -1;
}

// "channel 3", "channels 0-23", "channels 0,2,5", "channel unknown".
std::string channels_text(const std::vector<const json*>& members) {
  std::vector<long long> channels;
  for (const json* member : members) {
    const json& channel = json_member(*member, "channel");
    if (!channel.is_number_integer()) return "channel unknown";
    channels.push_back(channel.get<long long>());
  }
  if (channels.size() == 1) return "channel " + std::to_string(channels[0]);
  bool consecutive = true;
  for (size_t i = 1; i < channels.size(); ++i) consecutive = consecutive && channels[i] == channels[0] + static_cast<long long>(i);
  if (consecutive) return "channels " + std::to_string(channels.front()) + "-" + std::to_string(channels.back());
  std::string listed;
  for (long long channel : channels) listed += (listed.empty() ? "" : ",") + std::to_string(channel);
  return "channels " + listed;
}

// Consecutive blocks with the same text and neighbours as one line.
std::vector<std::string> block_group_lines(const json& blocks) {
  struct Group {
    std::vector<const json*> members;
    std::string text;
  };
  std::vector<Group> groups;
  for (const json& block : array_or_empty(blocks)) {
    std::string text = block_text(block);
    if (!groups.empty() && groups.back().text == text && block_number(*groups.back().members.back()) + 1 == block_number(block) &&
        json_member(*groups.back().members.back(), "peers") == json_member(block, "peers"))
      groups.back().members.push_back(&block);
    else
      groups.push_back({{&block}, text});
  }
  std::vector<std::string> lines;
  for (const Group& group : groups) {
    long long first = block_number(*group.members.front()), last = block_number(*group.members.back());
    std::string span = group.members.size() == 1 ? "block " + std::to_string(first)
                                                 : "blocks " + std::to_string(first) + "-" + std::to_string(last);
    lines.push_back("    " + span + " (" + channels_text(group.members) + peers_text(group.members) + ") " + group.text);
  }
  return lines;
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

std::string queued_work_phrase(const json& work) {
  std::string counts;
  for (const auto& [name, count] : json_member(work, "seq_launched").items())
    if (count.is_number_integer() && count.get<int64_t>() > 0) counts += (counts.empty() ? "" : ", ") + name + "=" + count.dump();
  return "launched " + (counts.empty() ? std::string("nothing known") : counts);
}

std::string other_kernel_sentence(const json& kernel) {
  FieldText field(kernel);
  const json& name = field.raw("name");
  std::string text = "GPU " + field.text("device") + " runs " +
                     plain_text(name.is_string() && !name.get<std::string>().empty() ? name : field.raw("invocation")) +
                     " (grid " + field.text("grid_dim") + ", block " + field.text("block_dim") + ", " + field.text("status");
  const json& stream = field.raw("stream");
  text += stream.is_string() ? ", stream " + stream.get<std::string>()
                             : ", stream unavailable: " + plain_text(json_member(field.raw("unavailable"), "stream"));
  text += ")";
  std::string queued;
  for (const json& work : array_or_empty(field.raw("queued_behind")))
    queued += (queued.empty() ? "" : "; ") + comm_title(work) + " " + queued_work_phrase(work) + ", no kernel of it resident";
  if (queued.empty()) return text + "; no NCCL work of this process launched on this device";
  return text + "; NCCL work that may be queued behind it (inferred: same device; cuda-gdb shows no stream, so "
                "neither the order nor the newest launch's start is proven here): " + queued;
}

std::string render_kernels_text(const json& document) {
  std::vector<std::string> lines;
  const json& kernels = json_member(document, "kernels");
  for (const json& kernel : array_or_empty(kernels)) {
    FieldText field(kernel);
    lines.push_back("kernel " + field.text("kernel") + " on device " + field.text("device") + " (grid " + field.text("grid") +
                    ", " + field.text("status") + (truthy(field.raw("focus")) ? ", focus" : "") +
                    "): " + kernel_what(field.raw("nccl"), field.raw("invocation")));
    lines.push_back("    " + field.text("grid_dim") + " blocks x " + field.text("block_dim") + " threads; channel mask " +
                    field.text("channel_mask"));
    const json& match = field.raw("communicator_match");
    if (truthy(field.raw("communicator")))
      lines.push_back("    " + comm_title(field.raw("communicator")) + " [" + plain_text(match) + "]");
    else
      lines.push_back("    communicator unknown: " + plain_text(match));
    for (const json& note : array_or_empty(field.raw("notes")))
      lines.push_back("    note: " + plain_text(note));
    for (const json& wait : array_or_empty(field.raw("waits")))
      lines.push_back("    => " + plain_text(json_member(wait, "text")));
    for (const std::string& line : block_group_lines(field.raw("blocks"))) lines.push_back(line);
  }
  const json& others = json_member(document, "other_kernels");
  for (const json& kernel : array_or_empty(others)) {
    lines.push_back("kernel " + cell_text(json_member(kernel, "kernel")) + " on device " +
                    cell_text(json_member(kernel, "device")) + ": " + plain_text(json_member(kernel, "invocation")) +
                    " (not NCCL)");
    const json& text = json_member(kernel, "text");
    if (text.is_string()) lines.push_back("    " + plain_text(text));
  }
  size_t shown = kernels.is_array() ? kernels.size() : 0;
  const json& total = json_member(document, "total_kernels");
  size_t resident = total.is_number_unsigned() ? total.get<size_t>() : 0;
  lines.push_back(std::to_string(shown) + " NCCL kernel" + plural(shown) + " (" + std::to_string(resident) + " kernel" +
                  plural(resident) + " resident)");
  return joined_lines(lines);
}

}  // namespace nsc
