// Per-channel ring and tree topology of a communicator.
#include "nccl/comm_decoder.h"

namespace nsc {
namespace {

constexpr int64_t kMaxUserRanksShown = 256;  // keeps snapshots of huge jobs small

void decode_user_ranks(const ObjectView& ring, int64_t nranks, const std::string& channel, FieldSink& out) {
  if (nranks > kMaxUserRanksShown) {
    out.mark_unavailable("user_ranks", "omitted: nranks > " + std::to_string(kMaxUserRanksShown), 0);
    out.json()["user_ranks"] = nullptr;
    return;
  }
  auto pointer = ring.pointer("userRanks");
  if (!pointer.ok()) {
    out.put("user_ranks", Fetched<int64_t>::missing(pointer.unavailable, pointer.address));
    return;
  }
  if (*pointer.value == 0) {
    out.put("user_ranks", Fetched<int64_t>::missing("userRanks is NULL"));
    return;
  }
  std::vector<int32_t> ranks(static_cast<size_t>(nranks));
  ReadError error;
  if (!ring.target()->read(*pointer.value, ranks.data(), ranks.size() * sizeof(int32_t), &error)) {
    out.put("user_ranks", Fetched<int64_t>::missing(error.message(), *pointer.value));
    return;
  }
  // Each entry is a rank of this communicator: anything else is garbage memory.
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] >= 0 && ranks[i] < nranks) continue;
    std::string why = "impossible: entry " + std::to_string(i) + " is " + std::to_string(ranks[i]) +
                      ", outside 0.." + std::to_string(nranks - 1) + " (torn or never-written memory)";
    out.put("user_ranks", Fetched<int64_t>::missing(why));
    out.warn(channel + " ring.user_ranks " + why);
    return;
  }
  out.json()["user_ranks"] = ranks;
}

void decode_ring(const ObjectView& channel, int64_t nranks, FieldSink& out) {
  ObjectView ring = channel.member("ring");
  FieldSink sink = out.child("ring");
  sink.put("prev", ring.integer("prev"));
  sink.put("next", ring.integer("next"));
  sink.put("index", ring.integer("index"));
  if (nranks > 0)
    decode_user_ranks(ring, nranks, "channel " + std::to_string(out.json().value("id", -1)), sink);
  for (const char* key : {"prev", "next"}) {
    const auto& value = sink.json()[key];
    if (nranks > 0 && value.is_number_integer() &&
        (value.get<int64_t>() < -1 || value.get<int64_t>() >= nranks))
      sink.warn(std::string("channel ") + std::to_string(out.json().value("id", -1)) + " ring." + key +
                " is " + std::to_string(value.get<int64_t>()) + ", outside 0.." +
                std::to_string(nranks - 1));
  }
}

void decode_tree(const ObjectView& channel, FieldSink& out) {
  ObjectView tree = channel.member("tree");
  FieldSink sink = out.child("tree");
  sink.put("up", tree.integer("up"));
  sink.put("depth", tree.integer("depth"));
  nlohmann::json down = nlohmann::json::array();
  for (uint64_t i = 0; i < tree.array_length("down"); ++i) {
    auto value = tree.integer("down[" + std::to_string(i) + "]");
    down.push_back(value.ok() ? nlohmann::json(*value.value) : nlohmann::json(nullptr));
  }
  sink.json()["down"] = down;
}

}  // namespace

void decode_channels(const ObjectView& comm, FieldSink& out) {
  nlohmann::json& channels = out.json()["channels"] = nlohmann::json::array();
  const nlohmann::json& nchannels_json = out.json()["nchannels"];
  const nlohmann::json& nranks_json = out.json()["nranks"];
  if (!nchannels_json.is_number_integer()) return;
  uint64_t capacity = comm.array_length("channels");
  int64_t nchannels = nchannels_json.get<int64_t>();
  if (nchannels < 0 || static_cast<uint64_t>(nchannels) > capacity) {
    out.warn("nChannels is " + std::to_string(nchannels) + ", outside 0.." + std::to_string(capacity));
    nchannels = std::min<int64_t>(std::max<int64_t>(nchannels, 0), capacity);
  }
  nchannels = std::min<int64_t>(nchannels, out.scope().limits.max_channels);
  int64_t nranks = nranks_json.is_number_integer() ? nranks_json.get<int64_t>() : 0;
  if (nranks < 0 || static_cast<uint64_t>(nranks) > out.scope().limits.max_ranks) nranks = 0;
  for (int64_t c = 0; c < nchannels; ++c) {
    std::string path = "channels[" + std::to_string(c) + "]";
    ObjectView channel = comm.member(path);
    channels.push_back({{"id", c}});
    FieldSink sink(&channels.back(), path + ".", &out.scope());
    decode_ring(channel, nranks, sink);
    decode_tree(channel, sink);
  }
}

}  // namespace nsc
