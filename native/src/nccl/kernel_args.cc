#include "nccl/kernel_args.h"

#include <algorithm>
#include <bitset>
#include <iterator>

#include "util/json_access.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

constexpr uint64_t kArgsAlignment = 16;  // ncclShmemData is 16-byte aligned

std::string trimmed(const std::string& text) {
  const char* space = " \t\n\r\f\v";
  size_t first = text.find_first_not_of(space);
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(space) - first + 1);
}

// The name of a debugger's function text: "f(int) const" -> "f".
std::string function_name(const std::string& text) { return trimmed(text.substr(0, text.find('('))); }

uint64_t layout_field(const json& layout, const char* key, uint64_t fallback) {
  std::optional<uint64_t> value = json_u64(json_member(layout, key));
  return value ? *value : fallback;
}

KernelArgsLayout layout_from_json(const json& layout) {
  KernelArgsLayout out;
  out.comm_offset = layout_field(layout, "comm_offset", out.comm_offset);
  out.channel_mask_offset = layout_field(layout, "channel_mask_offset", out.channel_mask_offset);
  out.size = layout_field(layout, "size", out.size);
  return out;
}

// One block as the debugger saw it -> its function and channel (mask: the kernel's
// channel mask when its arguments were found).
json block_facts(const json& seen, std::optional<uint64_t> mask) {
  const json& index = json_member(seen, "block");
  json block = {{"block", index}, {"channel", nullptr}, {"channel_source", nullptr},
                {"function", nullptr}, {"running", nullptr}};
  const json& unavailable = json_member(seen, "unavailable");
  if (!unavailable.is_null()) {
    block["unavailable"] = unavailable;
    return block;
  }
  const json& function = json_member(seen, "function");
  if (function.is_string()) {
    block["function"] = function_name(function.get<std::string>());
    block["running"] = decode_running_function(block["function"]);
  }
  std::optional<uint64_t> block_index = json_u64(index);
  std::optional<unsigned> channel = mask && block_index ? nth_set_bit(*mask, *block_index) : std::nullopt;
  if (!channel) return block;
  block["channel"] = *channel;
  block["channel_source"] = "channel mask";
  // ncclShmem.channelId: the int after the arguments (NCCL 2.19+ ncclShmemData order).
  if (std::optional<uint64_t> word = json_u64(json_member(seen, "channel_word"))) {
    uint64_t stored = *word & 0xffffffffu;
    block["channel_in_shared"] = stored;
    if (stored == *channel) block["channel_source"] = "channel mask, confirmed by the block's shared memory";
  }
  return block;
}

json not_found(std::string reason) { return {{"found", false}, {"reason", std::move(reason)}}; }

}  // namespace

std::optional<uint64_t> json_u64(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return static_cast<uint64_t>(value.get<int64_t>());
  uint64_t parsed = 0;
  if (value.is_string() && parse_u64(value.get<std::string>(), &parsed)) return parsed;
  return std::nullopt;
}

json decode_nccl_kernel_name(const json& invocation, const std::string& prefix) {
  if (!invocation.is_string()) return nullptr;
  std::string name = function_name(invocation.get<std::string>());
  name = trimmed(name.substr(0, name.find('<')));  // template arguments are not part of the name
  if (name.compare(0, prefix.size(), prefix) != 0) return nullptr;
  std::vector<std::string> parts;
  std::string rest = name.substr(prefix.size());
  for (size_t start = 0;;) {
    size_t end = rest.find('_', start);
    parts.push_back(rest.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  static const char* const keys[] = {"collective", "op", "datatype", "algorithm", "protocol"};
  json decoded = {{"kernel_name", name}};
  if (parts.size() == std::size(keys)) {
    for (size_t index = 0; index < parts.size(); ++index) decoded[keys[index]] = parts[index];
    return decoded;
  }
  decoded["collective"] = parts[0];
  std::string detail;
  for (size_t index = 1; index < parts.size(); ++index) detail += (index > 1 ? "_" : "") + parts[index];
  decoded["detail"] = detail;
  return decoded;
}

json decode_running_function(const json& function) {
  json decoded = decode_nccl_kernel_name(function, "ncclDevFunc_");
  return decoded.is_null() ? decode_nccl_kernel_name(function) : decoded;
}

std::optional<unsigned> nth_set_bit(uint64_t mask, uint64_t n) {
  uint64_t seen = 0;
  for (unsigned bit = 0; bit < 64; ++bit) {
    if (!(mask >> bit & 1)) continue;
    if (seen == n) return bit;
    ++seen;
  }
  return std::nullopt;
}

std::optional<uint64_t> find_kernel_args(const std::vector<std::optional<uint64_t>>& words,
                                         const std::set<uint64_t>& dev_comms, uint64_t nblocks,
                                         const KernelArgsLayout& layout) {
  if (layout.comm_offset % 8 || layout.channel_mask_offset % 8) return std::nullopt;
  uint64_t comm_word = layout.comm_offset / 8, mask_word = layout.channel_mask_offset / 8;
  uint64_t reach = std::max(comm_word, mask_word);
  if (reach >= words.size()) return std::nullopt;
  for (uint64_t index = 0; index + reach < words.size(); index += kArgsAlignment / 8) {
    const std::optional<uint64_t>& comm = words[index + comm_word];
    const std::optional<uint64_t>& mask = words[index + mask_word];
    if (comm && mask && *mask != 0 && dev_comms.count(*comm) && std::bitset<64>(*mask).count() == nblocks)
      return index * 8;
  }
  return std::nullopt;
}

json kernel_args_answer(const json& request) {
  const json& shared = json_member(request, "shared_words");
  if (!shared.is_array()) return not_found("no shared_words given");
  std::vector<std::optional<uint64_t>> words;
  size_t not_values = 0;
  for (const json& word : shared) {
    words.push_back(json_u64(word));
    not_values += !words.back();
  }
  std::set<uint64_t> dev_comms;
  const json& comms = json_member(request, "dev_comms");
  for (const json& comm : comms.is_array() ? comms : json::array())
    if (std::optional<uint64_t> value = json_u64(comm)) dev_comms.insert(*value);
  if (dev_comms.empty()) return not_found("no communicator's devComm known (the state has no device sections)");
  std::optional<uint64_t> nblocks = json_u64(json_member(request, "nblocks"));
  if (!nblocks || *nblocks == 0 || *nblocks > 64)
    return not_found("grid of " + json_member(request, "nblocks").dump(-1, ' ', false, json::error_handler_t::replace) + " blocks: a channel mask has 1 to 64");
  KernelArgsLayout layout = layout_from_json(json_member(request, "args_layout"));
  if (layout.comm_offset % 8 || layout.channel_mask_offset % 8)
    return not_found("ncclDevKernelArgs layout: comm and channelMask offsets are not 8-byte aligned");
  std::optional<uint64_t> offset = find_kernel_args(words, dev_comms, *nblocks, layout);
  if (!offset) {
    std::string reason = "no 16-byte aligned devComm and " + std::to_string(*nblocks) + "-bit channel mask in " +
                         std::to_string(words.size()) + " shared words";
    if (not_values) reason += " (" + std::to_string(not_values) + " of them not 64-bit values)";
    return not_found(reason);
  }
  return {{"found", true},
          {"args_shared_offset", hex(*offset)},
          {"dev_comm", hex(*words[(*offset + layout.comm_offset) / 8])},
          {"channel_mask", hex(*words[(*offset + layout.channel_mask_offset) / 8])},
          {"channel_id_offset", *offset + layout.size}};
}

json kernel_facts(const json& seen) {
  if (!seen.is_object()) return {{"notes", json::array({"kernel entry is not an object"})}};
  json kernel = seen;
  for (const char* input : {"args", "nblocks", "shared_memory_error", "blocks"}) kernel.erase(input);
  kernel["nccl"] = decode_nccl_kernel_name(json_member(seen, "invocation"));
  kernel["dev_comm"] = kernel["channel_mask"] = nullptr;
  kernel["notes"] = json::array();
  const json& error = json_member(seen, "shared_memory_error");
  if (error.is_string()) kernel["notes"].push_back("shared memory unreadable: " + error.get<std::string>());
  const json& args = json_member(seen, "args");
  std::optional<uint64_t> dev_comm = json_u64(json_member(args, "dev_comm"));
  std::optional<uint64_t> mask = json_u64(json_member(args, "channel_mask"));
  std::optional<uint64_t> args_offset = json_u64(json_member(args, "args_shared_offset"));
  bool found = json_member(args, "found") == true && dev_comm && mask && args_offset;
  if (found) {
    kernel["dev_comm"] = hex(*dev_comm);
    kernel["channel_mask"] = hex(*mask);
    kernel["args_shared_offset"] = hex(*args_offset);
  } else {
    std::string note = "kernel arguments not found in shared memory: channels unknown";
    const json& reason = json_member(args, "reason");
    if (reason.is_string()) note += " (" + reason.get<std::string>() + ")";
    else if (json_member(args, "found") == true) note += " (kernel-args answer malformed)";
    kernel["notes"].push_back(note);
  }
  json blocks = json::array();
  const json& seen_blocks = json_member(seen, "blocks");
  for (const json& seen_block : seen_blocks.is_array() ? seen_blocks : json::array())
    blocks.push_back(block_facts(seen_block, found ? mask : std::nullopt));
  std::optional<uint64_t> nblocks = json_u64(json_member(seen, "nblocks"));
  if (nblocks && *nblocks > blocks.size())
    kernel["notes"].push_back(std::to_string(blocks.size()) + " blocks shown of " + std::to_string(*nblocks));
  kernel["blocks"] = blocks;
  return kernel;
}

json kernel_names_answer(const json& request) {
  json decoded = json::array();
  const json& names = json_member(request, "names");
  for (const json& name : names.is_array() ? names : json::array()) decoded.push_back(decode_nccl_kernel_name(name));
  return {{"nccl", decoded}};
}

}  // namespace nsc
