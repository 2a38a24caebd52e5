// Text and Graphviz DOT renderers of the `ncclscope.triage/1` document.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "triage/finding_kinds.h"
#include "triage/graph_groups.h"
#include "triage/rank_set.h"
#include "triage/triage.h"
#include "util/json_access.h"
#include "util/json_raw.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;


// "rank 0", "ranks 0,2-7", plus labels of nodes outside the world comm.
std::string nodes_phrase(const json& graph, const json& ids) {
  std::vector<int> ranks;
  std::vector<std::string> others;
  for (const json& id : ids) {
    const json& node = graph["nodes"][id.get<size_t>()];
    if (node["world_rank"].is_number_integer() && node["kind"] == "process")
      ranks.push_back(node["world_rank"].get<int>());
    else
      others.push_back(json_text(node["label"]));
  }
  std::string text = ranks.empty() ? "" : triage::ranks_phrase(ranks);
  for (size_t i = 0; i < others.size(); ++i) {
    if (i == 3) {
      text += " and " + std::to_string(others.size() - 3) + " more";
      break;
    }
    text += (text.empty() ? "" : ", ") + others[i];
  }
  return text;
}

std::string phrase_of_ranks(const json& ranks) {
  return triage::ranks_phrase(ranks.get<std::vector<int>>());
}

// A finding's ranks in world numbering, its communicator's own in parentheses where they
// differ; its own alone (said so) when a world rank is unknown.
std::string finding_ranks(const json& finding, const std::string& role) {
  const json& world = finding[role + "_ranks"];
  const json& own = finding.contains(role + "_comm_ranks") ? finding[role + "_comm_ranks"] : world;
  bool known = world.size() == own.size() &&
               std::all_of(world.begin(), world.end(), [](const json& r) { return r.is_number_integer(); });
  if (!known) return phrase_of_ranks(own) + " of this communicator";
  if (world == own) return phrase_of_ranks(world);
  return phrase_of_ranks(world) + " (" + phrase_of_ranks(own) + " of this communicator)";
}

// The text report as it is built: each line made safe for a terminal as it is added (target
// strings may hold escapes), then its newline, into one buffer (212,782 lines at 100,000 ranks:
// none kept apart).
class TerminalLines {
 public:
  void push_back(std::string_view line) {
    append_escaped_for_terminal(&text_, line);
    text_ += '\n';
  }
  void reserve(size_t bytes) { text_.reserve(bytes); }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

void render_tree(const json& node, int depth, TerminalLines* lines) {
  // A chain of single children with the same ranks and thread count reads as one line.
  std::string frames = json_text(node["frame"]);
  const json* current = &node;
  while ((*current)["children"].size() == 1) {
    const json& child = (*current)["children"][0];
    if (child["rank_set"] != (*current)["rank_set"] || child["threads"] != (*current)["threads"]) break;
    frames += " > " + json_text(child["frame"]);
    current = &child;
  }
  std::string set = json_text(node["rank_set"]);
  std::string who = set.empty() ? "no rank" : (node["nranks"].get<size_t>() == 1 ? "rank " : "ranks ") + set;
  lines->push_back(std::string(2 + 2 * depth, ' ') + who + " (" + std::to_string(node["threads"].get<size_t>()) +
                   " thread" + (node["threads"].get<size_t>() == 1 ? "" : "s") + "): " + frames);
  if (depth >= 40) return;  // deep trees: the top is what tells ranks apart
  for (const json& child : (*current)["children"]) render_tree(child, depth + 1, lines);
}

std::string dot_quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// Present only when some input had the flight recorder loaded.
void render_recorder(const json& recorder, TerminalLines* lines) {
  lines->push_back("");
  size_t with = recorder["inputs"].size(), without = recorder["inputs_without_recorder"].size();
  lines->push_back("Flight recorder (" + std::to_string(with) + " of " + std::to_string(with + without) + " inputs):");
  lines->push_back("  numbering: " + json_text(recorder["numbering"]));
  size_t compared = recorder.value("compared_collectives", 0);
  if (compared == 0)
    lines->push_back("  arguments: no collective was recorded by two ranks at the same seq: nothing to compare");
  else if (recorder["mismatches"].empty())
    lines->push_back("  arguments: " + std::to_string(compared) + " collective" + (compared == 1 ? "" : "s") +
                     " recorded by two or more ranks, all with the same count, datatype and root");
  // Thousands of ranks: the first few of each, the rest counted (all are in --json).
  constexpr size_t kShown = 8;
  const json& mismatches = recorder["mismatches"];
  for (size_t i = 0; i < mismatches.size() && i < kShown; ++i) lines->push_back("  " + json_text(mismatches[i]["text"]));
  if (mismatches.size() > kShown)
    lines->push_back("  ... and " + std::to_string(mismatches.size() - kShown) + " more mismatches (--json: recorder.mismatches)");
  const json& chains = recorder["chains"];
  for (size_t i = 0; i < chains.size() && i < kShown; ++i) lines->push_back("  chain: " + json_text(chains[i]["text"]));
  if (chains.size() > kShown)
    lines->push_back("  ... and " + std::to_string(chains.size() - kShown) + " more chains (--json: recorder.chains)");
  if (recorder["chains"].empty()) lines->push_back("  chains: no recorded thread is blocked in a synchronize");
}

// Present only when kernel views were given (cuda-gdb `nccl-kernels --json`).
void render_kernel_views(const json& section, TerminalLines* lines) {
  lines->push_back("");
  const json& inputs = section["inputs"];
  lines->push_back("Kernel views (" + std::to_string(inputs.size()) + (inputs.size() == 1 ? " input" : " inputs") +
                   ", cuda-gdb nccl-kernels; peers are ranks of the kernel's communicator):");
  for (const json& view : inputs) {
    std::string head = "  " + json_text(view["input"]);
    const json& joined = view["joined_to"];
    if (joined.is_null()) {
      head += ": not joined";
    } else {
      head += " -> " + (joined["world_rank"].is_number_integer() ? "rank " + joined["world_rank"].dump() : json_text(joined["input"]));
      if (joined["pid_agrees"] == false)
        head += " (pid " + view["pid"].dump() + " in the view, " + joined["pid"].dump() + " in " + json_text(joined["input"]) +
                ": joined by communicator and rank)";
      if (view["kernels"].empty()) head += ": no NCCL kernel resident";
    }
    lines->push_back(head);
    for (const json& kernel : view["kernels"]) {
      std::string where = "kernel " + (kernel["kernel"].is_number_integer() ? kernel["kernel"].dump() : "?");
      if (kernel["device"].is_number_integer()) where += ", device " + kernel["device"].dump();
      if (kernel["comm_hash"].is_string())
        where += ", comm " + json_text(kernel["comm_hash"]) + " rank " + kernel["rank"].dump();
      lines->push_back("    " + where + ": " + json_text(kernel["text"]));
    }
    for (const json& error : view["errors"]) lines->push_back("    view error: " + json_text(error));
  }
  for (const json& warning : section["warnings"]) lines->push_back("  warning: " + json_text(warning));
}

// Present only when a buffer was read or a numerics document given (numerics_join.cc).
void render_numerics(const json& section, TerminalLines* lines) {
  constexpr size_t kShown = 8;
  lines->push_back("");
  lines->push_back("Numerics (buffers of the collective each rank is in; " + section["read"].dump() + " read, " +
                   section["unreadable"].dump() + " not readable here):");
  size_t shown = 0;
  for (const json& buffer : section["buffers"])
    if (buffer.contains("text") && shown++ < kShown) lines->push_back("  " + json_text(buffer["text"]));
  if (shown > kShown) lines->push_back("  ... and " + std::to_string(shown - kShown) + " more (--json: numerics.buffers)");
  for (const json& sentence : json_member(section, "entered_through")) lines->push_back("  " + json_text(sentence));
  if (shown == 0 && section["read"].get<size_t>() > 0)
    lines->push_back("  no buffer read holds NaN or Inf, none is mostly underflowed");
  if (section["unreadable"].get<size_t>() > 0)
    lines->push_back("  buffers not readable here are in device memory: run nccl-numerics --json under cuda-gdb "
                     "on those ranks and give triage the files");
}


}  // namespace

json readable_inputs(const json& report) { return with_raw_json_values(json_member(report, "inputs")); }

std::string triage_error_label(const json& inputs, const json& error) {
  const json& name = json_member(error, "input");
  if (name.is_string() && inputs.is_array())
    for (const json& input : inputs)
      if (json_member(input, "name") == name && json_member(input, "status") == "partial") return "partial: ";
  return "error: ";
}

// ": rank 1 waits; rank 3 never launched it (the verdict's culprit)": each side's local role.
std::string finding_roles_text(const json& finding, bool hang) {
  std::string text;
  if (!json_member(finding, "waiting_ranks").empty()) text += finding_ranks(finding, "waiting") + " waiting";
  const json& far = json_member(finding, "waited_on_comm_ranks");
  if (!far.empty()) {
    std::string role = json_text(json_member(finding, "waited_on_role"));
    std::string who = json_member(finding, "waited_on_ranks").size() == far.size()
                          ? finding_ranks(finding, "waited_on") : phrase_of_ranks(far) + " of this communicator";
    text += (text.empty() ? "" : "; ") + who + (role.empty() ? "" : " " + role) +
            (json_member(finding, "culprits_absent") == true ? " (no input)" : "");
    const json& blamed = json_member(finding, "culprit_ranks");
    if (!blamed.empty())
      text += std::string(" (") + (blamed.size() == far.size() ? "" : phrase_of_ranks(blamed) + ": ") +
              (hang ? "the verdict's culprit" : "a suspect") + (blamed.size() == 1 ? "" : "s") + ")";
  }
  return text.empty() ? "" : ": " + text;
}

bool blamed_as_culprit(const json& report, const json& reason) {
  const std::string kind = json_text(json_member(reason, "kind"));
  return json_member(report, "verdict") == "hang" && (kind == "skipped" || kind == "skipped-in-cycle");
}

// A crash: how each rank failed, the origin first (report "crash", crash.cc).
static void append_crash_lines(const json& report, TerminalLines* lines) {
  const json& crash = json_member(report, "crash");
  if (!crash.is_object()) return;
  lines->push_back("");
  lines->push_back("How each rank failed (origin by rule " + json_text(crash["rule"]) + "):");
  std::set<int> origin;
  for (const char* key : {"origin_nodes", "suspect_nodes"})
    for (const json& id : crash[key]) origin.insert(id.get<int>());
  for (const json& rank : crash["ranks"]) {
    const json& nodes = json_member(report["graph"], "nodes");
    size_t id = rank["node"].get<size_t>();
    json node = nodes.is_array() && id < nodes.size() ? nodes[id] : json();
    std::string role = origin.count(rank["node"].get<int>()) ? "origin" : rank["reaction"] == true ? "reaction" : "-";
    lines->push_back("  " + json_text(json_member(node, "label")) + " [" + json_text(rank["kind"]) + ", " + role + "]: " +
                     json_text(rank["text"]));
  }
}

namespace {

// What the text says of the inputs section, gathered in one pass: a process's entry is raw
// text; only the members read are built, an entry at a time (100,000 entries: no array of them).
struct InputsDigest {
  json partial = json::array();  // the partial inputs' {name, status}: the errors' labels
  std::map<std::string, size_t> inputs_by_note;  // a stack note and how many inputs it covers
  size_t ok = 0, failed = 0, ignored = 0, duplicates = 0, views_joined = 0, views = 0;
};

InputsDigest digest_inputs(const json& report) {
  InputsDigest digest;
  for (const json& entry : json_member(report, "inputs")) {
    const json input = json_members(entry, {"kind", "name", "stack_notes", "status"});
    if (input.contains("stack_notes"))
      for (const json& note : input["stack_notes"]) ++digest.inputs_by_note[json_text(note)];
    if (input.value("status", "") == "partial") digest.partial.push_back(input);
    if (input.value("kind", "") == "kernels") {
      ++digest.views;
      digest.views_joined += input["status"] == "ok" ? 1 : 0;
      continue;
    }
    if (input["status"] == "duplicate") ++digest.duplicates;
    else (input["status"] == "ok" || input["status"] == "partial" ? digest.ok
          : input["status"] == "ignored"                           ? digest.ignored
                                                                   : digest.failed)++;
  }
  return digest;
}

// A communicator's lines: its ranks, then each finding with its evidence. Each member is looked
// up once (37,533 communicators at 100,000 ranks).
void render_communicator(const json& comm, bool hang, TerminalLines* lines) {
  const json& nranks = comm["nranks"];
  const json& missing_ranks = comm["missing_ranks"];
  const json& ranks_seen = comm["ranks_seen"];
  bool world = comm["is_world"].get<bool>();
  std::string missing = missing_ranks.empty() ? "none" : triage::format_rank_set(missing_ranks.get<std::vector<int>>());
  const json* group = find_json_member(comm, "process_group");
  std::string pg = group != nullptr && group->is_object()
                       ? "pg " + json_text((*group)["desc"]) + ", name " + json_text((*group)["name"])
                       : "";
  std::string label = world ? (pg.empty() ? "world" : "world, " + pg) : pg;
  lines->push_back("  " + json_text(comm["comm_hash"]) + (label.empty() ? "" : " (" + label + ")") + ": " +
                   (nranks.is_number_integer() ? std::to_string(nranks.get<int>()) : "?") + " ranks, inputs hold " +
                   triage::format_rank_set(ranks_seen.get<std::vector<int>>()) + ", missing " + missing);
  if (!world && ranks_seen.size() > 16)
    lines->push_back("    ranks here are this communicator's own (world_ranks in --json maps them)");
  if (!world && ranks_seen.size() <= 16) {
    const json& world_ranks = comm["world_ranks"];
    std::string map;
    for (size_t i = 0; i < ranks_seen.size(); ++i)
      if (world_ranks[i].is_number_integer())
        map += (map.empty() ? "" : ", ") + std::to_string(ranks_seen[i].get<int>()) + "=world " +
               std::to_string(world_ranks[i].get<int>());
    if (!map.empty()) lines->push_back("    ranks here are this communicator's own: " + map);
  }
  for (const json& duplicate : comm["duplicate_inputs"])
    lines->push_back("    duplicate: rank " + std::to_string(duplicate["rank"].get<int>()) + " in " +
                     json_text(duplicate["kept"]) + " and " + json_text(duplicate["ignored"]) + " (ignored)");
  for (const json& warning : comm["warnings"]) lines->push_back("    warning: " + json_text(warning));
  for (const json& finding : comm["findings"]) {
    std::string head = "    [" + json_text(finding["kind"]) + "]";
    if (finding["collective"].is_string()) head += " " + json_text(finding["collective"]);
    if (finding["seq"].is_number_integer()) head += " #" + std::to_string(finding["seq"].get<int64_t>());
    // Recorder findings also give the recorder's own 0-based seq.
    if (finding.contains("recorder_seq")) head += " (seq " + finding["recorder_seq"].dump() + ")";
    lines->push_back(head + finding_roles_text(finding, hang));
    for (const json& explained : json_member(finding, "explained_by"))
      lines->push_back("      " + phrase_of_ranks(explained["ranks"]) + ": " + json_text(explained["text"]) +
                       ", which explains " + (explained["ranks"].size() == 1 ? "its" : "their") + " absence here");
    for (const json& evidence : finding["evidence"]) lines->push_back("      - " + json_text(evidence));
  }
}

}  // namespace

std::string render_triage_text(const nlohmann::json& report) {
  TerminalLines lines;
  // At scale the communicators' lines are most of the text (about 600 bytes each at 100,000
  // ranks): room made once, not regrown and copied through each doubling.
  lines.reserve(1024 * json_member(report, "communicators").size());
  const InputsDigest inputs = digest_inputs(report);
  // The headline alone is the first paragraph: what a person reads and acts on.
  for (const json& line : json_member(json_member(report, "headline"), "lines")) lines.push_back(json_text(line));
  lines.push_back("");
  lines.push_back("Why (verdict " + json_text(report["verdict"], "error") + "): " + json_text(report["summary"]));
  for (const json& error : report["errors"])
    lines.push_back(triage_error_label(inputs.partial, error) + json_text(error["message"]));
  if (report.value("verdict", "") == "error") return lines.take();
  const json& graph = report["graph"];
  append_crash_lines(report, &lines);
  for (const json& finding : report.value("startup", json::array())) {
    lines.push_back("");
    lines.push_back("Start-up (no communicator yet; ranks from the launcher's environment):");
    lines.push_back("  [" + json_text(finding["kind"]) + "]" +
                    (finding["waiting_ranks"].empty() ? "" : " waiting " + phrase_of_ranks(finding["waiting_ranks"])) +
                    (finding["culprit_ranks"].empty() ? "" : ", never arrived " + phrase_of_ranks(finding["culprit_ranks"])));
    for (const json& evidence : finding["evidence"]) lines.push_back("      - " + json_text(evidence));
  }
  lines.push_back("");
  lines.push_back("Communicators (" + std::to_string(report["communicators"].size()) + "):");
  bool hang = report.value("verdict", "") == "hang" || report.value("verdict", "") == "crash";
  for (const json& comm : report["communicators"]) render_communicator(comm, hang, &lines);
  if (report.contains("recorder")) render_recorder(report["recorder"], &lines);
  if (report.contains("kernel_views")) render_kernel_views(report["kernel_views"], &lines);
  if (report.contains("numerics")) render_numerics(report["numerics"], &lines);
  lines.push_back("");
  size_t nedges = graph["edges"].size();
  lines.push_back("Wait-for graph: " + std::to_string(graph["nodes"].size()) + " nodes, " + std::to_string(nedges) +
                  (nedges == 1 ? " edge, " : " edges, ") +
                  (graph["cycles"].empty() ? std::string("no cycle") : std::to_string(graph["cycles"].size()) + " cycle(s)"));
  for (const json& edge : graph["edges"]) {
    std::string line = "  " + nodes_phrase(graph, edge["from"]) + " -> " + nodes_phrase(graph, edge["to"]) + ": " +
                       json_text(edge["label"]) + " on " + json_text(edge["comm_hash"]) + " (" + json_text(edge["kind"]) + ")";
    lines.push_back(line);
    for (const json& relation : edge["peer_relations"]) lines.push_back("      " + json_text(relation));
    if (edge.contains("kernel"))
      for (const json& wait : edge["kernel"]) lines.push_back("      kernel: " + json_text(wait["text"]));
  }
  for (const json& cycle : graph["cycles"])
    lines.push_back("  cycle (deadlock): " + nodes_phrase(graph, cycle));
  if (graph["longest_chain"].size() > 2) {
    std::string chain;
    for (const json& id : graph["longest_chain"])
      chain += (chain.empty() ? "" : " -> ") + json_text(graph["nodes"][id.get<size_t>()]["label"]);
    lines.push_back("  longest chain: " + chain);
  }
  for (const json& reason : graph["blame"]) {
    lines.push_back("  " + std::string(blamed_as_culprit(report, reason) ? "culprit" : "suspect") +
                    " " + nodes_phrase(graph, reason["nodes"]) + ": " + json_text(reason["rule"]));
    for (const json& line : json_member(reason, "program_order")) lines.push_back("    - " + json_text(line));
  }
  lines.push_back("");
  lines.push_back("Stack classes (each rank's application thread):");
  for (const json& entry : report["stack_classes"]["principal"]) {
    std::string who = entry["ranks"].empty() ? "" : phrase_of_ranks(entry["ranks"]);
    for (const json& input : entry["inputs"]) who += (who.empty() ? "" : ", ") + json_text(input);
    lines.push_back("  " + who + ": " + json_text(entry["description"]));
  }
  for (const auto& [note, count] : inputs.inputs_by_note)
    lines.push_back("  note: frames in " + note + " are not symbolized (" + std::to_string(count) +
                    (count == 1 ? " input)" : " inputs)"));
  lines.push_back("All threads (prefix tree, outermost frame first):");
  render_tree(report["stack_classes"]["tree"], 0, &lines);
  lines.push_back("");
  lines.push_back("Inputs: " + std::to_string(inputs.ok) + " usable, " + std::to_string(inputs.failed) + " unusable" +
                  (inputs.ignored ? ", " + std::to_string(inputs.ignored) + " ignored (JSON files that are not snapshots)" : "") +
                  (inputs.duplicates ? ", " + std::to_string(inputs.duplicates) + " set aside as duplicates" : "") +
                  (inputs.views ? "; kernel views: " + std::to_string(inputs.views_joined) + " joined, " +
                                      std::to_string(inputs.views - inputs.views_joined) + " not joined"
                                : ""));
  return lines.take();
}

// Long text on lines of about `width` characters, broken at spaces: Graphviz sizes a box to
// its longest line, and a one-line sentence makes the whole drawing unreadably small.
std::string wrap_words(const std::string& text, size_t width) {
  std::string out, line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t space = text.find(' ', start);
    std::string word = text.substr(start, space == std::string::npos ? std::string::npos : space - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += (out.empty() ? "" : "\n") + line;
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    if (space == std::string::npos) break;
    start = space + 1;
  }
  return out + (out.empty() || line.empty() ? "" : "\n") + line;
}

// An edge whose far side issued the operation but has not reached it (queued behind its own
// work): drawn dotted and grey, apart from a wait on a rank that never issued it.
bool queued_edge(const json& edge) {
  for (const triage::FindingKind& kind : triage::finding_kinds())
    if (edge["finding"] == kind.name) return !kind.may_blame;
  return false;
}

std::string render_triage_dot(const nlohmann::json& report, const TriageOptions& options) {
  const json& graph = report["graph"];
  const json& nodes = graph["nodes"];
  const json& edges = graph["edges"];
  // Group alike nodes (same role, activity and edges) once there are too many to draw.
  triage::GraphGroups groups = triage::group_graph_nodes(graph, options.graph_group_threshold);
  const std::set<int>& in_cycle = groups.in_cycle;
  const std::vector<int>& group_of_node = groups.group_of_node;
  const std::vector<std::vector<int>>& members = groups.members;
  std::ostringstream dot;
  dot << "digraph ncclscope_triage {\n"
      << "  graph [rankdir=LR, fontname=\"Helvetica\", label=" << dot_quote("ncclscope triage: " + json_text(report["verdict"]))
      << ", labelloc=t];\n"
      << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fillcolor=\"#ffffff\"];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=10];\n";
  for (size_t g = 0; g < members.size(); ++g) {
    const json& first = nodes[members[g].front()];
    std::string role = json_text(first["role"]);
    std::string label = escape_for_terminal(groups.label(nodes, g));
    std::string doing = json_text(first["doing"]);
    if (!doing.empty()) label += "\n" + wrap_words(escape_for_terminal(doing), 48);
    std::string fill = role == "culprit" ? "#f4cccc" : role == "waiting" ? "#fff2cc"
                       : role == "waiting-culprit" || role == "suspect" ? "#f9cb9c" : role == "absent" ? "#eeeeee"
                       : role == "waited-on" ? "#d9ead3" : "#ffffff";
    // class: the HTML page's legend and tests find each box's role in Graphviz's SVG.
    dot << "  n" << g << " [label=" << dot_quote(label) << ", fillcolor=\"" << fill << "\", class="
        << dot_quote("role-" + role) << ", tooltip=" << dot_quote(label + " [" + role + "]");
    if (role == "absent") dot << ", style=\"rounded,dashed,filled\"";
    if (in_cycle.count(members[g].front())) dot << ", color=\"#cc0000\", penwidth=2";
    dot << "];\n";
  }
  std::set<std::tuple<int, int, size_t>> drawn;
  for (size_t e = 0; e < edges.size(); ++e) {
    std::string where = edges[e]["comm_hash"].is_string() ? json_text(edges[e]["comm_hash"])
                        : edges[e]["process_group"].is_string() ? "pg " + json_text(edges[e]["process_group"]) : "";
    std::string label = json_text(edges[e]["label"]) + "\n" + where;
    bool queued = queued_edge(edges[e]);
    // Groups first: a 2,048 x 2,048 edge draws as one arrow between two groups.
    std::map<int, int> from_groups, to_groups;  // group -> a member node
    for (const json& from : edges[e]["from"]) from_groups.emplace(group_of_node[from.get<size_t>()], from.get<int>());
    for (const json& to : edges[e]["to"]) to_groups.emplace(group_of_node[to.get<size_t>()], to.get<int>());
    for (const auto& [a, from_node] : from_groups)
      for (const auto& [b, to_node] : to_groups) {
        if (!drawn.insert({a, b, e}).second) continue;
        bool cyclic = in_cycle.count(from_node) && in_cycle.count(to_node);
        dot << "  n" << a << " -> n" << b << " [label=" << dot_quote(label);
        dot << ", class=" << (queued ? "\"queued\"" : "\"waits-on\"");
        if (queued) dot << ", style=dotted, color=\"#888888\", fontcolor=\"#666666\"";
        else if (edges[e]["kind"] == "p2p") dot << ", style=dashed";
        if (cyclic) dot << ", color=\"#cc0000\", penwidth=2";
        dot << "];\n";
      }
  }
  dot << "}\n";
  return dot.str();
}

}  // namespace nsc
