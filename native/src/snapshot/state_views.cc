#include "snapshot/state_views.h"

#include <algorithm>
#include <map>
#include <set>

#include "snapshot/field_text.h"
#include "snapshot/kernels_text.h"
#include "util/errors.h"
#include "util/json_access.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;
using Lines = std::vector<std::string>;

const char* const kCollectives[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
constexpr size_t kMaxRejectedShown = 5;
constexpr size_t kMaxListItems = 64;  // long lists (user_ranks of a 2,048-rank ring) are truncated

bool is_collective(const std::string& name) {
  return std::find(std::begin(kCollectives), std::end(kCollectives), name) != std::end(kCollectives);
}

void append(Lines& lines, const Lines& more) { lines.insert(lines.end(), more.begin(), more.end()); }

std::string join(const Lines& items, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
  return out;
}

// Ranks as text, "?" for null, capped at kMaxListItems with "... (N more)".
// Ranks as text; with `nranks` known, a value outside 0..nranks-1 is flagged, never shown as a
// rank ("<impossible -1>": torn or corrupt memory).
Lines rank_list(const json& values, const json& nranks = nullptr) {
  Lines items;
  if (!values.is_array()) return items;
  for (size_t i = 0; i < values.size() && i < kMaxListItems; ++i) {
    const json& value = values[i];
    bool impossible = nranks.is_number_integer() && value.is_number() &&
                      (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() >= nranks.get<int64_t>());
    items.push_back(value.is_null() ? "?" : impossible ? "<impossible " + plain_text(value) + ">" : plain_text(value));
  }
  if (values.size() > kMaxListItems) items.push_back("... (" + std::to_string(values.size() - kMaxListItems) + " more)");
  return items;
}

bool is_integer(const json& value) { return value.is_number_integer() || value.is_number_unsigned(); }

// --- identity and health ---------------------------------------------------

std::string launched_text(const json& comm) {
  FieldText field(comm);
  if (!field.has("seq_launched")) return "launched n/a";
  const json& seq = field.raw("seq_launched");
  if (seq.is_null()) return "launched " + unreadable_text(field.reason("seq_launched"));
  FieldText seq_field = field.child("seq_launched");
  Lines names(std::begin(kCollectives), std::end(kCollectives));
  if (seq.is_object())
    for (const auto& [name, value] : seq.items())  // nlohmann orders keys: sorted, as wanted
      if (!is_collective(name) && name != "unavailable") names.push_back(name);
  Lines parts;
  for (const std::string& name : names) {
    if (!seq_field.has(name)) continue;
    const json& value = seq_field.raw(name);
    if (value.is_null()) parts.push_back(name + "=" + seq_field.text(name));
    else if (truthy(value)) parts.push_back(name + "=" + plain_text(value));
  }
  return "launched " + (parts.empty() ? std::string("none") : join(parts, " "));
}

// One short text per health flag that is not in its normal state.
Lines health_problems(const json& comm) {
  FieldText field(comm);
  if (!field.has("health")) return {};
  if (field.raw("health").is_null()) return {unreadable_text(field.reason("health"))};
  FieldText health = field.child("health");
  static const std::pair<const char*, json> kNormal[] = {
      {"async_result", "ncclSuccess"}, {"proxy_async_result", "ncclSuccess"}, {"abort_flag", false},
      {"destroy_flag", false},         {"init_state", "ncclSuccess"},          {"finalize_called", false},
      {"revoked", false}};
  Lines problems;
  for (const auto& [key, normal] : kNormal) {
    if (!health.has(key)) continue;
    const json& value = health.raw(key);
    if (value.is_null()) {
      problems.push_back(std::string(key) + " " + health.text(key));
    } else if (normal.is_boolean()) {
      if (truthy(value)) problems.push_back(std::string(key) == "abort_flag" ? "ABORT_FLAG" : key);
    } else if (value != normal) {
      problems.push_back(std::string(key) + "=" + plain_text(value));
    }
  }
  return problems;
}

std::string health_text(const json& comm) {
  Lines problems = health_problems(comm);
  return problems.empty() ? "ok" : join(problems, ", ");
}

std::string target_line(const json& document) {
  FieldText root(document);
  FieldText target = root.child("target");
  FieldText nccl = root.child("nccl");
  const json& kind = target.raw("kind");
  std::string where;
  if (kind == "core") {
    where = "core " + target.text("path") + " (pid " + target.text("pid") + ")";
  } else if (kind == "live") {
    where = "live pid " + target.text("pid");
  } else if (kind == "callback") {
    where = "gdb-supplied memory";
    if (truthy(target.raw("pid"))) where += " of pid " + target.text("pid");
  } else if (kind == "snapshot") {
    where = "snapshot " + target.text("path");
  } else {
    where = truthy(kind) ? plain_text(kind) : "unknown target";
  }
  if (truthy(target.raw("executable"))) where += " " + target.text("executable");
  std::string line = "NCCL " + nccl.text("version", plain_text, "?") + " in " + where;
  if (truthy(nccl.raw("layout_source"))) line += "; layout " + nccl.text("layout_source");
  if (truthy(nccl.raw("build_id_mismatch"))) line += " (BUILD-ID MISMATCH)";
  FieldText discovery = root.child("discovery");
  if (truthy(discovery.raw("method"))) line += "; found by " + discovery.text("method");
  return line;
}

// Entries of every `unavailable` map inside value.
size_t count_unreadable(const json& value) {
  size_t total = 0;
  if (value.is_object()) {
    const json& own = json_member(value, "unavailable");
    total += own.is_object() ? own.size() : own.is_null() ? 0 : 1;
    for (const auto& [key, member] : value.items())
      if (key != "unavailable") total += count_unreadable(member);
  } else if (value.is_array()) {
    for (const json& element : value) total += count_unreadable(element);
  }
  return total;
}

// --- nccl-state ---------------------------------------------------------------

const json& nccl_libraries(const json& document) { return json_member(json_member(document, "nccl"), "libraries"); }

// One line per libnccl when several are mapped (issue 17); none for one.
Lines library_lines(const json& libraries) {
  if (!libraries.is_array() || libraries.size() < 2) return {};
  Lines lines{std::to_string(libraries.size()) + " libnccl mapped:"};
  for (const json& library : libraries) {
    FieldText field(library);
    std::string version = truthy(field.raw("version")) ? field.text("version") : "?";
    std::string line = "  lib " + field.text("index") + "  NCCL " + version + "  " + field.text("library");
    if (truthy(field.raw("unavailable")))
      line += ": communicators unavailable (" + field.text("unavailable") + ")";
    else
      line += ": " + field.text("communicators") + " communicator(s), layout " + field.text("layout_source");
    lines.push_back(line);
  }
  return lines;
}

std::string comm_library_text(const json& comm) {
  const json& library = json_member(comm, "library");
  return library.is_object() ? "lib " + FieldText(library).text("index") : "lib ?";
}

// The PyTorch process group joined to this communicator, or null.
const json* process_group_of(const json& comm, const json* document) {
  if (document == nullptr) return nullptr;
  const json& groups = json_member(json_member(*document, "torch"), "process_groups");
  if (!groups.is_array()) return nullptr;
  for (const json& group : groups)
    if (truthy(json_member(group, "communicator")) && json_member(group, "communicator") == json_member(comm, "address"))
      return &group;
  return nullptr;
}

std::string error_summary(const json& errors) {
  std::map<std::string, size_t> kinds;
  for (const json& error : errors) {
    const json& kind = json_member(error, "kind");
    kinds[kind.is_string() ? kind.get<std::string>() : "other"] += 1;
  }
  Lines parts;
  for (const auto& [kind, count] : kinds) parts.push_back(escape_for_terminal(kind) + " " + std::to_string(count));
  return "; " + std::to_string(errors.size()) + " error" + plural(errors.size()) + " (" + join(parts, ", ") + ")";
}

// --- nccl-ring -----------------------------------------------------------------

// " (ring.next is 17)" when prev/next contradict userRanks (torn or corrupt memory).
std::string ring_disagreement(const FieldText& ring, const json& user_ranks) {
  json expected_next = user_ranks.size() > 1 ? user_ranks[1] : user_ranks[0];
  json expected_prev = user_ranks.back();
  Lines notes;
  for (const auto& [key, expected] : {std::pair<const char*, const json&>{"prev", expected_prev}, {"next", expected_next}}) {
    const json& value = ring.raw(key);
    if (is_integer(value) && value != expected) notes.push_back(std::string("ring.") + key + " is " + value.dump());
  }
  return notes.empty() ? "" : " (" + join(notes, ", ") + ")";
}

// "0 -> 1 -> 0" from user_ranks (starting at this rank), else "prev -> rank -> next".
std::string ring_picture(const FieldText& channel, const json& rank, const json& nranks) {
  if (!channel.has("ring")) return "n/a";
  if (channel.raw("ring").is_null()) return channel.text("ring");
  FieldText ring = channel.child("ring");
  const json& user_ranks = ring.raw("user_ranks");
  if (user_ranks.is_array() && !user_ranks.empty()) {
    Lines items = rank_list(user_ranks, nranks);
    if (user_ranks.size() <= kMaxListItems) items.push_back(items.front());
    return join(items, " -> ") + ring_disagreement(ring, user_ranks);
  }
  return ring.text("prev") + " -> " + (rank.is_null() ? "?" : plain_text(rank)) + " -> " + ring.text("next");
}

std::string tree_picture(const FieldText& channel) {
  if (!channel.has("tree")) return "n/a";
  if (channel.raw("tree").is_null()) return channel.text("tree");
  FieldText tree = channel.child("tree");
  const json& down = tree.raw("down");
  std::string down_text;
  if (down.is_array()) {
    Lines ranks;
    for (const json& value : down)
      if (value != -1) ranks.push_back(value.is_null() ? "?" : plain_text(value));
    down_text = "[" + join(ranks, " ") + "]";
  } else {
    down_text = tree.text("down");
  }
  return "up " + tree.text("up") + " down " + down_text;
}

struct ChannelGroup {
  std::vector<long long> ids;
  std::string picture;
};

std::string channel_label(const std::vector<long long>& ids) {
  return ids.size() == 1 ? "ch" + std::to_string(ids[0])
                         : "ch" + std::to_string(ids.front()) + "-" + std::to_string(ids.back());
}

// Channel lines of one communicator; consecutive channels with the same picture grouped unless expand.
Lines ring_lines(const json& comm, bool expand, const std::string& indent) {
  FieldText field(comm);
  const json& channels = field.raw("channels");
  if (!channels.is_array()) return {indent + "channels " + field.text("channels")};
  if (channels.empty()) return {indent + "no channels"};
  FieldText channels_field = field.child("channels");
  std::vector<ChannelGroup> groups;
  for (size_t index = 0; index < channels.size(); ++index) {
    FieldText channel = channels_field.item(index);
    std::string picture = "ring: " + ring_picture(channel, json_member(comm, "rank"), json_member(comm, "nranks")) + "   tree: " + tree_picture(channel);
    const json& id = json_member(channels[index], "id");
    long long channel_id = is_integer(id) ? id.get<long long>() : static_cast<long long>(index);
    if (!expand && !groups.empty() && groups.back().picture == picture && groups.back().ids.back() + 1 == channel_id)
      groups.back().ids.push_back(channel_id);
    else
      groups.push_back({{channel_id}, picture});
  }
  std::vector<Lines> rows;
  for (const ChannelGroup& group : groups) rows.push_back({channel_label(group.ids), group.picture});
  return table_lines(rows, indent);
}

// --- nccl-proxy ----------------------------------------------------------------

const char* const kSubColumns[] = {"channel", "peer", "nsteps", "posted", "received", "transmitted", "done"};

Lines proxy_op_lines(const FieldText& op, const std::string& indent) {
  Lines lines{indent + "op " + op.text("address", hex_text) + " opCount " + op.text("op_count") + " " +
              op.text("collective", plain_text, "?") + " " + op.text("pattern", plain_text, "?") + " " +
              op.text("protocol", plain_text, "?") + " nsubs " + op.text("nsubs") + " done " + op.text("done")};
  const json& subs = op.raw("subs");
  if (!subs.is_array()) {
    if (op.has("subs")) lines.push_back(indent + "  subs " + op.text("subs"));
    return lines;
  }
  std::vector<Lines> rows{Lines(std::begin(kSubColumns), std::end(kSubColumns))};
  FieldText subs_field = op.child("subs");
  for (size_t index = 0; index < subs.size(); ++index) {
    FieldText sub = subs_field.item(index);
    Lines row;
    for (const char* column : kSubColumns) row.push_back(sub.text(column));
    rows.push_back(row);
  }
  append(lines, table_lines(rows, indent + "  "));
  return lines;
}

Lines proxy_lines(const json& comm, const std::string& indent) {
  FieldText field(comm);
  if (!field.has("proxy_ops")) return {indent + "proxy ops n/a"};
  const json& ops = field.raw("proxy_ops");
  if (!ops.is_array()) return {indent + "proxy ops " + field.text("proxy_ops")};
  if (ops.empty()) return {indent + "no proxy ops in flight"};
  FieldText ops_field = field.child("proxy_ops");
  Lines lines;
  for (size_t index = 0; index < ops.size(); ++index) append(lines, proxy_op_lines(ops_field.item(index), indent));
  return lines;
}

// --- nccl-comm -----------------------------------------------------------------

Lines planned_lines(const json& comm, const std::string& indent) {
  FieldText field(comm);
  if (!field.has("planned")) return {};
  if (field.raw("planned").is_null()) return {indent + "planned " + field.text("planned")};
  FieldText planned = field.child("planned");
  Lines lines{indent + "planned: " + planned.text("n_tasks_coll") + " coll task(s), " + planned.text("n_tasks_p2p") +
              " p2p task(s), " + planned.text("unlaunched_plans") + " unlaunched plan(s), in group " +
              planned.text("in_group")};
  for (const json& coll : array_or_empty(planned.raw("colls"))) {
    FieldText task(coll);
    lines.push_back(indent + "  " + task.text("collective") + " count " + task.text("count") + " " +
                    task.text("datatype") + " " + task.text("op") + " root " + task.text("root"));
  }
  for (const json& p2p : array_or_empty(planned.raw("p2p"))) {
    FieldText task(p2p);
    lines.push_back(indent + "  " + task.text("kind") + " peer " + task.text("peer") + " count " + task.text("count") +
                    " " + task.text("datatype"));
  }
  return lines;
}

// "  awaiting: 4 launched plan(s) not reclaimed; newest AllReduce #4 count 1048576 ncclFloat32 ncclSum
// send 0x7f.. recv 0x7f..": the collective a hung rank's kernel runs (docs/numerics.md).
Lines launched_plan_lines(const json& comm, const std::string& indent) {
  FieldText field(comm);
  if (!json_member(comm, "launched").is_object()) return {};
  FieldText launched = field.child("launched");
  const json& plans = launched.raw("plans_awaiting_reclaim");
  if (!is_integer(plans)) return {indent + "awaiting: launched plans not reclaimed " + launched.text("plans_awaiting_reclaim")};
  std::string line = indent + "awaiting: " + plans.dump() + " launched plan(s) not reclaimed";
  const json& colls = launched.raw("colls");
  if (colls.is_array() && !colls.empty()) {
    FieldText newest(colls.back());
    const json& seq = newest.raw("seq");
    line += "; newest " + newest.text("collective") + (is_integer(seq) ? " #" + seq.dump() : "") + " count " +
            newest.text("count") + " " + newest.text("datatype") + " " + newest.text("op") + " send " +
            newest.text("sendbuff") + " recv " + newest.text("recvbuff");
  }
  const json& p2p = launched.raw("p2p");
  if (p2p.is_array() && !p2p.empty()) line += "; " + std::to_string(p2p.size()) + " p2p task(s)";
  return {line};
}

// Every `unavailable` entry inside value as "path: <unreadable ...>".
Lines unavailable_lines(const json& value, const std::string& path, const std::string& indent) {
  Lines lines;
  if (value.is_object()) {
    const json& own = json_member(value, "unavailable");
    if (own.is_object())
      for (const auto& [key, reason] : own.items())
        lines.push_back(indent + escape_for_terminal(path.empty() ? key : path + "." + key) + ": " +
                        unreadable_text(reason.is_string() ? reason.get<std::string>() : reason.dump()));
    for (const auto& [key, member] : value.items())
      if (key != "unavailable") append(lines, unavailable_lines(member, path.empty() ? key : path + "." + key, indent));
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i)
      append(lines, unavailable_lines(value[i], path + "[" + std::to_string(i) + "]", indent));
  }
  return lines;
}

// "0 (per channel: 32 x 0)" or "0 (per channel: 0 0 0 0)".
std::string p2p_count_text(const FieldText& field) {
  const json& p2p = field.raw("p2p_op_count");
  if (!p2p.is_object()) return field.text("p2p_op_count");
  FieldText p2p_field = field.child("p2p_op_count");
  std::string text = p2p_field.text("total");
  const json& per_channel = p2p_field.raw("per_channel");
  if (!per_channel.is_array() || per_channel.empty()) return text;
  bool all_same = std::all_of(per_channel.begin(), per_channel.end(), [&](const json& v) { return v == per_channel[0]; });
  if (per_channel.size() > 4 && all_same)
    return text + " (per channel: " + std::to_string(per_channel.size()) + " x " + plain_text(per_channel[0]) + ")";
  return text + " (per channel: " + join(rank_list(per_channel), " ") + ")";
}

// Before NCCL 2.24 the count lives in ncclSharedResources; split comms with splitShare share it.
std::string coll_op_count_note(const json& comm, const json* document) {
  if (document == nullptr || json_member(comm, "coll_op_count_of") != "ncclSharedResources") return "";
  const json& shared = json_member(comm, "shared_resources");
  const json& communicators = json_member(*document, "communicators");
  Lines others;
  if (shared.is_string() && communicators.is_array())
    for (const json& other : communicators)
      if (json_member(other, "address") != json_member(comm, "address") && json_member(other, "shared_resources") == shared)
        others.push_back(hex_text(json_member(other, "comm_hash")));
  return others.empty() ? "" : " (shared with " + join(others, ", ") + ": splitShare)";
}

Lines identity_lines(const json& comm, const ViewOptions& options) {
  FieldText field(comm);
  Lines lines{"communicator " + field.text("address", hex_text) + "  hash " + field.text("comm_hash", hex_text),
              "  rank " + field.text("rank") + " of " + field.text("nranks") + "  node " + field.text("node") + "/" +
                  field.text("nnodes") + "  local rank " + field.text("local_rank") + "/" + field.text("local_ranks"),
              "  cuda dev " + field.text("cuda_dev") + "  nvml dev " + field.text("nvml_dev") + "  bus " +
                  field.text("bus_id") + "  channels " + field.text("nchannels")};
  if (options.document != nullptr && nccl_libraries(*options.document).size() > 1 && json_member(comm, "library").is_object()) {
    FieldText library = field.child("library");
    lines.push_back("  library " + comm_library_text(comm) + "  NCCL " + library.text("version", plain_text, "?") + "  " +
                    library.text("path"));
  }
  if (const json* group = process_group_of(comm, options.document)) {
    FieldText pg(*group);
    lines.push_back("  process group '" + pg.text("desc") + "' (name " + pg.text("name") + "), ranks " +
                    join(rank_list(pg.raw("ranks")), ","));
  }
  return lines;
}

Lines counter_lines(const json& comm, const ViewOptions& options) {
  FieldText field(comm);
  Lines lines;
  const json& seq = field.raw("seq_launched");
  if (seq.is_object()) {
    FieldText seq_field = field.child("seq_launched");
    Lines parts;
    for (const char* name : kCollectives)
      if (seq_field.has(name)) parts.push_back(std::string(name) + " " + seq_field.text(name));
    lines.push_back("  launched  " + join(parts, "  "));
  } else {
    lines.push_back("  " + launched_text(comm));
  }
  lines.push_back("  coll_op_count " + field.text("coll_op_count") + coll_op_count_note(comm, options.document) +
                  "  op_count " + field.text("op_count") + "  p2p_op_count " + p2p_count_text(field));
  lines.push_back("  health " + health_text(comm));
  const json& health = field.raw("health");
  if (health.is_object()) {
    FieldText health_field = field.child("health");
    Lines flags;
    for (const auto& [key, value] : health.items())
      if (key != "unavailable") flags.push_back(key + " " + health_field.text(key));
    lines.push_back("    " + join(flags, "  "));
  }
  return lines;
}

Lines comm_detail_lines(const json& comm, const ViewOptions& options) {
  Lines lines = identity_lines(comm, options);
  append(lines, counter_lines(comm, options));
  lines.push_back("  channels:");
  append(lines, ring_lines(comm, options.expand, "    "));
  lines.push_back("  proxy ops:");
  append(lines, proxy_lines(comm, "    "));
  append(lines, planned_lines(comm, "  "));
  append(lines, launched_plan_lines(comm, "  "));
  Lines unreadable = unavailable_lines(comm, "", "    ");
  if (!unreadable.empty()) {
    lines.push_back("  unreadable:");
    append(lines, unreadable);
  }
  const json& warnings = json_member(comm, "warnings");
  if (warnings.is_array() && !warnings.empty()) {
    lines.push_back("  warnings:");
    for (const json& warning : warnings) lines.push_back("    " + plain_text(warning));
  }
  return lines;
}

// --- nccl-threads --------------------------------------------------------------

// "0x7f3a48123456 cudaStreamSynchronize+16 in libcudart.so.13", "0x7f3a48123456 ?? in libcuda.so.1".
std::string frame_text(const json& frame) {
  FieldText field(frame);
  std::string text = field.text("pc", hex_text, "?");
  const json& function = field.raw("function");
  if (truthy(function)) {
    text += " " + plain_text(function);
    if (!field.raw("offset").is_null()) text += "+" + plain_text(field.raw("offset"));
    if (truthy(field.raw("module"))) text += " in " + plain_text(field.raw("module"));
    return text;
  }
  text += " ??";
  if (truthy(field.raw("module"))) text += " in " + plain_text(field.raw("module"));
  const json& offset = field.raw("offset");  // into the module: what symbolizes the frame later
  if (is_integer(offset)) text += " +" + hex_text(offset);
  return text;
}

// "Worker.run (/app/train.py:62)", or the frame's "unreadable frame at 0x..." text.
std::string python_frame_text(const json& frame) {
  if (!frame.is_object()) return "?";
  if (truthy(json_member(frame, "error"))) return plain_text(json_member(frame, "error"));
  const json& name = truthy(json_member(frame, "qualname")) ? json_member(frame, "qualname") : json_member(frame, "function");
  const json& file = json_member(frame, "file");
  const json& line = json_member(frame, "line");
  return (truthy(name) ? plain_text(name) : "?") + " (" + (truthy(file) ? plain_text(file) : "?") + ":" +
         (line.is_null() ? "?" : plain_text(line)) + ")";
}

// "(not unwound: --no-stacks)": why a thread of the document has no stack.
std::string not_unwound_text(const json& data) {
  const json& kind = json_member(data, "target_kind");
  if (kind == "core") return "unknown (not unwound: --no-stacks)";
  if (kind == "live") return "unknown (stack not unwound: live needs --stacks)";
  return "unknown";
}

// Lines "#0 ..." (or "py#0 ...") of at most max_frames frames, then "... N more".
Lines frame_lines(const json& frames, long max_frames, const char* label, const char* what,
                  std::string (*text)(const json&)) {
  size_t shown = max_frames < 0 ? frames.size() : std::min(frames.size(), static_cast<size_t>(max_frames));
  Lines lines;
  for (size_t i = 0; i < shown; ++i) lines.push_back("    " + std::string(label) + std::to_string(i) + " " + text(frames[i]));
  if (shown < frames.size())
    lines.push_back("    ... " + std::to_string(frames.size() - shown) + " more " + what + "(s)");
  return lines;
}

Lines thread_lines(const json& thread, const json& data, long max_frames) {
  FieldText field(thread);
  std::string head = "thread " + field.text("tid");
  if (!field.raw("gdb_num").is_null()) head = "[" + plain_text(field.raw("gdb_num")) + "] " + head;
  if (truthy(field.raw("name"))) head += " \"" + plain_text(field.raw("name")) + "\"";
  if (truthy(field.raw("state"))) head += " [" + plain_text(field.raw("state")) + "]";
  const json& frames = field.raw("frames");
  bool unwound = frames.is_array();
  bool has_frames = unwound && !frames.empty();
  head += " blocked in " + (field.raw("blocked_in").is_null() && !has_frames ? not_unwound_text(data)
                                                                             : field.text("blocked_in", plain_text, "unknown"));
  Lines lines{head};
  if (!unwound) {
    if (field.has("frames")) lines.push_back("    frames " + field.text("frames"));
    return lines;
  }
  append(lines, frame_lines(frames, max_frames, "#", "frame", frame_text));
  if (!has_frames && truthy(field.raw("error"))) lines.push_back("    no frames: " + field.text("error"));
  const json& python_frames = json_member(json_member(thread, "python"), "frames");
  if (python_frames.is_array() && !python_frames.empty())
    append(lines, frame_lines(python_frames, max_frames, "py#", "Python frame", python_frame_text));
  return lines;
}

}  // namespace

std::string comm_title(const json& comm) {
  FieldText field(comm);
  return "comm " + field.text("comm_hash", hex_text) + " rank " + field.text("rank") + "/" + field.text("nranks") + " (" +
         field.text("address", hex_text) + ")";
}

namespace {

// "unavailable" for null, as every view says it.
std::string value_text(const json& value) { return value.is_null() ? "unavailable" : plain_text(value); }

std::string watchdog_line(const json& dog) {
  std::string line = "watchdog pg " + value_text(json_member(dog, "pg_uid")) + " (rank " + value_text(json_member(dog, "pg_rank")) +
                     "/" + value_text(json_member(dog, "pg_size")) + ", thread " + value_text(json_member(dog, "tid")) +
                     "): heartbeat " + value_text(json_member(dog, "heartbeat")) + ", timeout " +
                     value_text(json_member(dog, "timeout_ms")) + " ms, error " + value_text(json_member(dog, "error"));
  if (json_member(dog, "terminating") == true) line += ", terminating";
  if (json_member(dog, "exception_stored") == true) line += ", rethrew an exception";
  return line;
}

std::string monitor_line(const json& monitor) {
  return "heartbeat monitor pg " + value_text(json_member(monitor, "pg_uid")) + " (thread " +
         value_text(json_member(monitor, "tid")) + "): heartbeat timeout " +
         value_text(json_member(monitor, "heartbeat_timeout_s")) + " s, monitoring " +
         value_text(json_member(monitor, "monitoring_enabled")) + ", stop requested " +
         value_text(json_member(monitor, "terminate_requested")) + ", work list last changed at steady " +
         value_text(json_member(monitor, "last_work_list_update_steady_ns")) + " ns";
}

bool watchdog_failed(const json& dog) {
  const json& error = json_member(dog, "error");
  return (error.is_string() && error != "SUCCESS") || json_member(dog, "terminating") == true ||
         json_member(dog, "exception_stored") == true;
}

}  // namespace

Lines torch_liveness_lines(const json& document) {
  const json& liveness = json_member(json_member(document, "torch"), "liveness");
  if (!liveness.is_object()) return {};
  if (json_member(liveness, "unavailable").is_string())
    return {"watchdog unavailable: " + plain_text(json_member(liveness, "unavailable"))};
  Lines lines;
  for (const json& dog : array_or_empty(json_member(liveness, "watchdogs"))) lines.push_back(watchdog_line(dog));
  for (const json& monitor : array_or_empty(json_member(liveness, "heartbeat_monitors"))) lines.push_back(monitor_line(monitor));
  lines.push_back("shouldDump_ " + value_text(json_member(liveness, "should_dump")) + "; " +
                  value_text(json_member(liveness, "threads_scanned")) + " threads searched");
  return lines;
}

Lines failure_lines(const json& document) {
  Lines lines;
  const json& signal = json_member(document, "fatal_signal");
  if (signal.is_object()) {
    bool failure = json_member(signal, "failure") == true;
    lines.push_back(std::string(failure ? "FATAL SIGNAL " : "signal ") + escape_for_terminal(plain_text(json_member(signal, "text"))));
  }
  for (const json& comm : array_or_empty(json_member(document, "communicators"))) {
    Lines problems = health_problems(comm);
    // Only errors: a field the core did not save is in the communicator's unreadable list.
    problems.erase(std::remove_if(problems.begin(), problems.end(),
                                  [](const std::string& p) { return p.find("<unreadable") != std::string::npos; }),
                   problems.end());
    if (!problems.empty()) lines.push_back("NCCL ERROR " + comm_title(comm) + ": " + join(problems, ", "));
  }
  const json& last_error = json_member(json_member(document, "nccl"), "last_error");
  if (json_member(last_error, "text").is_string() && !last_error["text"].get<std::string>().empty())
    lines.push_back("NCCL last error: \"" + escape_for_terminal(last_error["text"].get<std::string>()) + "\"");
  const json& liveness = json_member(json_member(document, "torch"), "liveness");
  for (const json& dog : array_or_empty(json_member(liveness, "watchdogs")))
    if (watchdog_failed(dog)) lines.push_back("PYTORCH " + watchdog_line(dog));
  if (json_member(liveness, "should_dump") == true)
    lines.push_back("PYTORCH shouldDump_ set: a watchdog of this process saw a failure, or a peer signalled one");
  return lines;
}

std::string render_state_list(const json& document) {
  Lines lines{target_line(document)};
  append(lines, failure_lines(document));
  const json& libraries = nccl_libraries(document);
  bool several_libraries = libraries.is_array() && libraries.size() > 1;
  append(lines, library_lines(libraries));
  const json& communicators = json_member(document, "communicators");
  const json& comms = array_or_empty(communicators);
  std::vector<Lines> rows;
  size_t warnings = 0;
  for (size_t index = 0; index < comms.size(); ++index) {
    const json& comm = comms[index];
    FieldText field(comm);
    std::string device = field.text("cuda_dev");
    if (truthy(field.raw("bus_id"))) device += " (" + field.text("bus_id") + ")";
    Lines row{"#" + std::to_string(index), field.text("address", hex_text), "hash " + field.text("comm_hash", hex_text),
              "rank " + field.text("rank") + "/" + field.text("nranks"), "dev " + device, launched_text(comm),
              "health " + health_text(comm)};
    if (several_libraries) row.insert(row.begin() + 1, comm_library_text(comm));
    if (const json* group = process_group_of(comm, &document))
      row.push_back("pg '" + plain_text(json_member(*group, "desc")) + "' (" + plain_text(json_member(*group, "name")) + ")");
    rows.push_back(row);
    const json& comm_warnings = json_member(comm, "warnings");
    warnings += comm_warnings.is_array() ? comm_warnings.size() : 0;
  }
  append(lines, table_lines(rows));
  std::string summary = std::to_string(comms.size()) + " communicator" + plural(comms.size());
  size_t unreadable = count_unreadable(comms);
  if (unreadable > 0)
    summary += "; " + std::to_string(unreadable) + " unreadable field" + plural(unreadable) + " (nccl-comm ADDR for detail)";
  if (warnings > 0) summary += "; " + std::to_string(warnings) + " warning" + plural(warnings);
  const json& errors = json_member(document, "errors");
  if (errors.is_array() && !errors.empty()) summary += error_summary(errors);
  lines.push_back(summary);
  const json& rejected = json_member(json_member(document, "discovery"), "rejected");
  if (rejected.is_array()) {
    for (size_t i = 0; i < rejected.size() && i < kMaxRejectedShown; ++i)
      lines.push_back("rejected candidate " + hex_text(json_member(rejected[i], "address")) + ": " +
                      plain_text(json_member(rejected[i], "why")));
    if (rejected.size() > kMaxRejectedShown)
      lines.push_back("... " + std::to_string(rejected.size() - kMaxRejectedShown) +
                      " more rejected candidates (--json lists them)");
  }
  return joined_lines(lines);
}

std::string render_comm_details(const json& communicators, const ViewOptions& options) {
  if (!communicators.is_array() || communicators.empty()) return "no communicators\n";
  std::string out;
  for (size_t i = 0; i < communicators.size(); ++i)
    out += (i ? "\n" : "") + joined_lines(comm_detail_lines(communicators[i], options));
  return out;
}

std::string render_rings(const json& data, const ViewOptions& options) {
  Lines lines;
  const json& communicators = json_member(data, "communicators");
  for (const json& comm : array_or_empty(communicators)) {
    lines.push_back(comm_title(comm));
    append(lines, ring_lines(comm, options.expand, "  "));
  }
  if (lines.empty()) lines.push_back("no communicators");
  return joined_lines(lines);
}

std::string render_proxy(const json& data) {
  Lines lines;
  const json& communicators = json_member(data, "communicators");
  for (const json& comm : array_or_empty(communicators)) {
    const json& ops = json_member(comm, "proxy_ops");
    size_t count = ops.is_array() ? ops.size() : 0;
    lines.push_back(comm_title(comm) + ": " + std::to_string(count) + " proxy op" + plural(count));
    append(lines, proxy_lines(comm, "  "));
  }
  if (lines.empty()) lines.push_back("no communicators");
  return joined_lines(lines);
}

std::string render_threads(const json& data, const ViewOptions& options) {
  Lines lines;
  const json& threads = json_member(data, "threads");
  const json& list = array_or_empty(threads);
  for (const json& thread : list) append(lines, thread_lines(thread, data, options.max_frames));
  const json& warnings = json_member(data, "warnings");
  for (const json& warning : array_or_empty(warnings))
    lines.push_back("note: " + plain_text(warning.is_object() ? json_member(warning, "reason") : warning));
  std::string summary = std::to_string(list.size()) + " thread" + plural(list.size());
  const json& source = json_member(data, "source");
  if (truthy(source)) summary += " (from " + plain_text(source) + ")";
  lines.push_back(summary);
  return joined_lines(lines);
}

std::string render_view(const std::string& view, const json& data, const ViewOptions& options) {
  if (view == "state") return render_state_list(data);
  if (view == "comm") return render_comm_details(data, options);
  if (view == "ring") return render_rings(data, options);
  if (view == "proxy") return render_proxy(data);
  if (view == "threads") return render_threads(data, options);
  if (view == "kernels") return render_kernels_text(data);
  throw UsageError("render: unknown view '" + view + "' (state, comm, ring, proxy, threads, kernels)");
}

}  // namespace nsc
