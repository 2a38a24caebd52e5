// The `ncclscope.triage/1` document as one self-contained HTML page (`triage --html FILE`):
// the verdict, the wait-for graph as inline SVG laid out here (layered, no Graphviz), a ranks x
// communicators table of launched collectives, findings, and the stack prefix tree as
// collapsible <details>. No script, no external resource; every string from the document
// (much of it read from target memory) is escaped.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "triage/graph_groups.h"
#include "triage/process_view.h"
#include "triage/rank_set.h"
#include "triage/triage.h"
#include "util/json_access.h"
#include "util/json_raw.h"
#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;


// Control bytes and invalid UTF-8 as \xNN (escape_for_terminal), then the HTML specials.
std::string html(std::string_view untrusted) {
  std::string printable = escape_for_terminal(untrusted);
  std::string out;
  out.reserve(printable.size());
  for (char c : printable) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string html_of(const json& value, const std::string& fallback = "") { return html(json_text(value, fallback)); }

// A count or an index: any non-negative JSON integer (signed or unsigned), else 0 / not valid.
bool as_index(const json& value, size_t* out) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0) return false;
  *out = static_cast<size_t>(value.get<int64_t>());
  return true;
}
size_t count_of(const json& value) {
  size_t count = 0;
  return as_index(value, &count) ? count : 0;
}

// At most `limit` characters (UTF-8 aware) for a box in the SVG; the full text is its <title>.
std::string shorten(const std::string& text, size_t limit) {
  std::vector<size_t> starts;  // byte offset of each character
  for (size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) starts.push_back(i);
  if (starts.size() <= limit) return text;
  return text.substr(0, starts[limit - 1]) + "\u2026";
}

std::string ranks_text(const json& ranks) {
  std::vector<int> values;
  for (const json& rank : ranks)
    if (rank.is_number_integer()) values.push_back(rank.get<int>());
  return triage::ranks_phrase(values);
}

std::string role_fill(const std::string& role) {
  if (role == "culprit") return "#f4cccc";
  if (role == "suspect") return "#f9cb9c";
  if (role == "waiting") return "#fff2cc";
  if (role == "absent") return "#eeeeee";
  if (role == "waited-on") return "#d9ead3";
  return "#ffffff";
}

const char kStyle[] = R"css(
body{font-family:Helvetica,Arial,sans-serif;margin:1.5em;color:#222;max-width:90em}
h1{font-size:1.4em;margin:0 0 .3em} h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid #ccc}
.verdict{display:inline-block;padding:.2em .7em;border-radius:.3em;font-weight:bold;font-size:1.2em}
.verdict-hang{background:#f4cccc} .verdict-mismatch{background:#f9cb9c} .verdict-no-hang{background:#d9ead3}
.verdict-incomplete{background:#fff2cc} .verdict-error{background:#cccccc} .verdict-crash{background:#ea9999}
.headline{font-size:1.2em;line-height:1.5;font-weight:bold} .summary{font-size:.95em;line-height:1.4} .error{color:#a00}
table{border-collapse:collapse;font-size:.9em} td,th{border:1px solid #bbb;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.culprit{background:#f4cccc} td.differs{background:#f9cb9c} td.none{color:#999} td.unknown{background:#eee}
code,.frames{font-family:Menlo,Consolas,monospace;font-size:.88em}
details{margin-left:1.2em} summary{cursor:pointer} .leaf{margin-left:2.4em}
.who{font-weight:bold} .finding{margin:.4em 0} .kind{font-family:monospace;background:#eef;padding:0 .3em}
svg text{font-family:Helvetica,Arial,sans-serif}
.legend{font-size:.85em;margin:.4em 0 .8em} .legend span.item{margin-right:1.4em;white-space:nowrap}
.swatch{display:inline-block;width:1.1em;height:.8em;border:1px solid #666;border-radius:.2em;vertical-align:middle}
.line{display:inline-block;width:2.6em;vertical-align:middle;border-top:2px solid #555}
.line-p2p{border-top-style:dashed} .line-queued{border-top:2px dotted #888} .line-cycle{border-top-color:#cc0000}
td.state-completed{background:#d9ead3} td.state-started{background:#fff2cc} td.state-scheduled{background:#f9cb9c}
td.state-missing{background:#eeeeee;color:#777} td.diverges{outline:2px solid #cc0000}
)css";

// ---- the wait-for graph as SVG: layered left (waiting) to right (waited on) ----

struct Layout {
  std::vector<int> layer;               // per drawn node
  std::vector<std::vector<int>> order;  // per layer: drawn nodes top to bottom
};

// Longest-path layering over the drawn graph with the edges that close a cycle left out
// (found by a depth-first search); within a layer, nodes sorted by their predecessors' rows.
Layout layer_graph(size_t count, const std::set<std::pair<int, int>>& arcs) {
  std::vector<std::vector<int>> out(count);
  for (const auto& [a, b] : arcs)
    if (a != b) out[a].push_back(b);
  std::vector<int> state(count, 0);  // 0 new, 1 on the stack, 2 done
  std::set<std::pair<int, int>> back;
  for (size_t root = 0; root < count; ++root) {
    if (state[root] != 0) continue;
    std::vector<std::pair<int, size_t>> stack = {{static_cast<int>(root), 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < out[node].size()) {
        int child = out[node][next++];
        if (state[child] == 1) back.insert({node, child});
        else if (state[child] == 0) {
          state[child] = 1;
          stack.push_back({child, 0});
        }
      } else {
        state[node] = 2;
        stack.pop_back();
      }
    }
  }
  // Longest path from the sources: a node one layer right of everything that waits on it.
  std::vector<int> indegree(count, 0);
  std::vector<std::vector<int>> forward(count);
  for (const auto& [a, b] : arcs)
    if (a != b && !back.count({a, b})) {
      forward[a].push_back(b);
      ++indegree[b];
    }
  Layout layout;
  layout.layer.assign(count, 0);
  std::vector<int> ready;
  for (size_t n = 0; n < count; ++n)
    if (indegree[n] == 0) ready.push_back(static_cast<int>(n));
  for (size_t i = 0; i < ready.size(); ++i)
    for (int child : forward[ready[i]]) {
      layout.layer[child] = std::max(layout.layer[child], layout.layer[ready[i]] + 1);
      if (--indegree[child] == 0) ready.push_back(child);
    }
  int layers = count == 0 ? 0 : *std::max_element(layout.layer.begin(), layout.layer.end()) + 1;
  layout.order.resize(layers);
  std::vector<double> row(count, 0);
  for (int l = 0; l < layers; ++l) {
    std::vector<std::pair<double, int>> keyed;
    for (size_t n = 0; n < count; ++n) {
      if (layout.layer[n] != l) continue;
      double sum = 0;
      int seen = 0;
      for (const auto& [a, b] : arcs)
        if (b == static_cast<int>(n) && a != b && layout.layer[a] < l) {
          sum += row[a];
          ++seen;
        }
      keyed.push_back({seen ? sum / seen : static_cast<double>(n) * 1e-6, static_cast<int>(n)});
    }
    std::stable_sort(keyed.begin(), keyed.end());
    for (size_t i = 0; i < keyed.size(); ++i) {
      row[keyed[i].second] = static_cast<double>(i);
      layout.order[l].push_back(keyed[i].second);
    }
  }
  return layout;
}

void render_svg(const json& graph, std::ostringstream& page) {
  const json& nodes = json_member(graph, "nodes");
  const json& edges = json_member(graph, "edges");
  if (!nodes.is_array() || nodes.empty()) {
    page << "<p>No graph: no usable input.</p>\n";
    return;
  }
  triage::GraphGroups groups = triage::group_graph_nodes(graph, 64);
  size_t count = groups.members.size();
  // Drawn arcs (group a waits on group b) and their labels.
  std::map<std::pair<int, int>, std::vector<std::string>> arc_labels;
  std::map<std::pair<int, int>, bool> arc_p2p, arc_cyclic;
  for (const json& edge : edges) {
    std::string label = json_text(edge["label"]);
    for (const json& from : edge["from"])
      for (const json& to : edge["to"]) {
        std::pair<int, int> arc{groups.group_of_node[from.get<size_t>()], groups.group_of_node[to.get<size_t>()]};
        auto& labels = arc_labels[arc];
        if (std::find(labels.begin(), labels.end(), label) == labels.end()) labels.push_back(label);
        arc_p2p[arc] = arc_p2p[arc] || edge["kind"] == "p2p";
        arc_cyclic[arc] = arc_cyclic[arc] ||
                          (groups.in_cycle.count(from.get<int>()) && groups.in_cycle.count(to.get<int>()));
      }
  }
  std::set<std::pair<int, int>> arcs;
  for (const auto& [arc, labels] : arc_labels) arcs.insert(arc);
  Layout layout = layer_graph(count, arcs);
  constexpr int kBoxWidth = 250, kBoxHeight = 54, kColumnGap = 130, kRowGap = 34, kMargin = 20;
  size_t rows = 0;
  for (const auto& column : layout.order) rows = std::max(rows, column.size());
  int width = kMargin * 2 + static_cast<int>(layout.order.size()) * (kBoxWidth + kColumnGap) - kColumnGap;
  // 30 above for the legend; one row gap below for the arcs of cycle edges.
  int height = kMargin * 2 + static_cast<int>(rows) * (kBoxHeight + kRowGap) + 30;
  std::vector<int> x(count), y(count);
  for (size_t l = 0; l < layout.order.size(); ++l)
    for (size_t i = 0; i < layout.order[l].size(); ++i) {
      x[layout.order[l][i]] = kMargin + static_cast<int>(l) * (kBoxWidth + kColumnGap);
      y[layout.order[l][i]] = kMargin + 30 + static_cast<int>(i) * (kBoxHeight + kRowGap);
    }
  page << "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"wait-graph\" width=\"" << width << "\" height=\"" << height
       << "\" viewBox=\"0 0 " << width << " " << height
       << "\" style=\"max-width:100%;height:auto\" role=\"img\">\n"
       << "<title>wait-for graph</title>\n"
       << "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" "
          "orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#555\"/></marker>"
          "<marker id=\"arrow-cycle\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" "
          "orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#cc0000\"/></marker></defs>\n"
       << "<text x=\"" << kMargin << "\" y=\"" << kMargin + 8 << "\" font-size=\"12\" fill=\"#555\">"
       << "an arrow A \u2192 B: A waits on B</text>\n";
  // Edges first, boxes over them.
  for (const auto& [arc, labels] : arc_labels) {
    auto [a, b] = arc;
    bool cyclic = arc_cyclic[arc];
    std::string color = cyclic ? "#cc0000" : "#555";
    std::string marker = cyclic ? "url(#arrow-cycle)" : "url(#arrow)";
    std::string label;
    for (size_t i = 0; i < labels.size() && i < 3; ++i) label += (label.empty() ? "" : ", ") + labels[i];
    if (labels.size() > 3) label += ", +" + std::to_string(labels.size() - 3);
    std::ostringstream path;
    int label_x = 0, label_y = 0;
    if (a == b) {  // a group waiting on itself (alike ranks wait on each other)
      int cx = x[a] + kBoxWidth / 2, top = y[a];
      path << "M" << cx - 30 << "," << top << " C" << cx - 30 << "," << top - 28 << " " << cx + 30 << ","
           << top - 28 << " " << cx + 30 << "," << top;
      label_x = cx;
      label_y = top - 24;
    } else if (layout.layer[a] < layout.layer[b]) {
      int x1 = x[a] + kBoxWidth, y1 = y[a] + kBoxHeight / 2, x2 = x[b], y2 = y[b] + kBoxHeight / 2;
      path << "M" << x1 << "," << y1 << " C" << x1 + kColumnGap / 2 << "," << y1 << " " << x2 - kColumnGap / 2 << ","
           << y2 << " " << x2 << "," << y2;
      label_x = (x1 + x2) / 2;
      label_y = (y1 + y2) / 2 - 4;
    } else {  // back or same-layer edge (a cycle): around below the boxes
      int x1 = x[a] + kBoxWidth / 2, y1 = y[a] + kBoxHeight, x2 = x[b] + kBoxWidth / 2, y2 = y[b] + kBoxHeight;
      int dip = std::max(y1, y2) + kRowGap - 6;
      path << "M" << x1 << "," << y1 << " C" << x1 << "," << dip << " " << x2 << "," << dip << " " << x2 << "," << y2;
      label_x = (x1 + x2) / 2;
      label_y = dip - 2;
    }
    page << "<g class=\"edge\"><path d=\"" << path.str() << "\" fill=\"none\" stroke=\"" << color
         << "\" stroke-width=\"" << (cyclic ? 2 : 1.3) << "\"" << (arc_p2p[arc] ? " stroke-dasharray=\"6,4\"" : "")
         << " marker-end=\"" << marker << "\"/><text x=\"" << label_x << "\" y=\"" << label_y
         << "\" font-size=\"11\" text-anchor=\"middle\" fill=\"" << color << "\">" << html(shorten(label, 40))
         << "</text></g>\n";
  }
  for (size_t g = 0; g < count; ++g) {
    const json& first = nodes[groups.members[g].front()];
    std::string role = json_text(first["role"]);
    std::string label = groups.label(nodes, g), doing = json_text(first["doing"]);
    bool cyclic = groups.in_cycle.count(groups.members[g].front()) > 0;
    page << "<g class=\"node role-" << html(role) << "\"><title>" << html(label + " [" + role + "]: " + doing)
         << "</title><rect x=\"" << x[g] << "\" y=\"" << y[g] << "\" width=\"" << kBoxWidth << "\" height=\""
         << kBoxHeight << "\" rx=\"8\" fill=\"" << role_fill(role) << "\" stroke=\"" << (cyclic ? "#cc0000" : "#666")
         << "\" stroke-width=\"" << (cyclic ? 2 : 1) << "\"" << (role == "absent" ? " stroke-dasharray=\"5,3\"" : "")
         << "/><text x=\"" << x[g] + 8 << "\" y=\"" << y[g] + 20 << "\" font-size=\"13\" font-weight=\"bold\">"
         << html(shorten(label + (role.empty() ? "" : " \u00b7 " + role), 34)) << "</text><text x=\"" << x[g] + 8
         << "\" y=\"" << y[g] + 40 << "\" font-size=\"11\">" << html(shorten(doing, 40)) << "</text></g>\n";
  }
  page << "</svg>\n";
  if (groups.members.size() < nodes.size())
    page << "<p>" << nodes.size() << " nodes drawn as " << count
         << " boxes: ranks in the same situation (role, activity, edges) share one.</p>\n";
}

// The graph as Graphviz laid it out (`dot -Tsvg` of the DOT `--dot` writes): its <svg>
// element, named and scalable. Labels reach it escaped twice: by the DOT writer, then as XML.
void embed_graphviz_svg(const std::string& svg, std::ostringstream& page) {
  size_t start = svg.find("<svg"), end = svg.rfind("</svg>");
  if (start == std::string::npos || end == std::string::npos || end < start) {
    page << "<p>Graphviz gave no drawing.</p>\n";
    return;
  }
  page << "<svg id=\"wait-graph\" style=\"max-width:100%;height:auto\" role=\"img\""
       << svg.substr(start + 4, end + 6 - start - 4) << "\n";
}

// What the boxes' colours and the arrows' strokes mean (the same in both drawings).
void render_legend(std::ostringstream& page) {
  page << "<p id=\"legend\" class=\"legend\">";
  for (const char* role : {"culprit", "suspect", "waiting", "waited-on", "absent"})
    page << "<span class=\"item\"><span class=\"swatch\" style=\"background:" << role_fill(role) << "\"></span> "
         << role << "</span>";
  page << "<br><span class=\"item\"><span class=\"line\"></span> A \u2192 B: A waits on B, which never issued the "
          "operation (B may be to blame)</span><span class=\"item\"><span class=\"line line-p2p\"></span> the same, for a "
          "send/recv</span><br><span class=\"item\"><span class=\"line line-queued\"></span> queued: B issued it, its GPU "
          "has not reached it (never blamed by itself)</span><span class=\"item\"><span class=\"line line-cycle\"></span> "
          "in a cycle</span></p>\n";
}

// ---- per rank: where it is, its Python stack, its last flight-recorder entry per group ----

// "all_reduce #4 (scheduled) at run_tpdp (train.py:96)" from a flight_recorder entry.
std::string entry_text(const json& entry) {
  std::string seq = json_member(entry, json_member(entry, "is_p2p") == true ? "p2p_seq_id" : "collective_seq_id").dump();
  std::string text = json_text(json_member(entry, "op"), "?") + " #" + seq + " (" + json_text(json_member(entry, "state"), "?") + ")";
  return json_member(entry, "call_site").is_string() ? text + " at " + json_text(entry["call_site"]) : text;
}

const json* recorder_rank(const json& report, const json& rank) {
  for (const json& entry : json_member(json_member(report, "flight_recorder"), "ranks"))
    if (json_member(entry, "rank") == rank) return &entry;
  return nullptr;
}

const json* input_named(const json& inputs, const json& name) {
  for (const json& input : inputs)
    if (json_member(input, "name") == name) return &input;
  return nullptr;
}

void render_rank_panel(const json& report, const json& inputs, std::ostringstream& page) {
  constexpr size_t kMaxRows = 256;
  page << "<table id=\"rank-panel\">\n<tr><th>rank</th><th>role</th><th>host</th><th>pid</th><th>blocked in</th>"
          "<th>Python stack (innermost first)</th><th>last flight-recorder entry per process group</th></tr>\n";
  size_t rows = 0, processes = 0;
  for (const json& node : json_member(json_member(report, "graph"), "nodes")) {
    if (json_member(node, "kind") != "process") continue;
    if (++processes > kMaxRows) continue;
    ++rows;
    const json* input = input_named(inputs, json_member(node, "input"));
    auto input_cell = [&](const char* key) {
      const json& value = input ? json_member(*input, key) : json_member(node, "none");
      return value.is_string() ? html(value.get<std::string>()) : value.is_number() ? value.dump() : std::string("unknown");
    };
    std::string stack;
    for (const json& frame : json_member(node, "python_stack")) stack += (stack.empty() ? "" : "<br>") + html_of(frame);
    std::string recorded;
    if (const json* ranked = recorder_rank(report, json_member(node, "world_rank")))
      for (const json& group : json_member(*ranked, "groups"))
        recorded += (recorded.empty() ? "" : "<br>") + html(json_text(json_member(group, "desc"), "?")) + ": " +
                    html(entry_text(json_member(group, "last_enqueued")));
    std::string role = json_text(json_member(node, "role"));
    page << "<tr><td>" << html_of(json_member(node, "label")) << "</td><td class=\"" << (role == "culprit" ? "culprit" : "")
         << "\">" << html(role) << "</td><td>" << input_cell("hostname") << "</td><td>" << input_cell("pid") << "</td><td>"
         << html_of(json_member(node, "blocked_in"), "unknown") << "</td><td class=\"frames\">"
         << (stack.empty() ? "none read" : stack) << "</td><td>" << (recorded.empty() ? "no records" : recorded)
         << "</td></tr>\n";
  }
  page << "</table>\n";
  if (processes > rows) page << "<p>" << rows << " of " << processes << " ranks shown.</p>\n";
}

// ---- PyTorch's flight recorder: each group's last entries, ranks x collectives ----

void render_group_timeline(const json& report, const json& group, std::ostringstream& page) {
  std::string name = json_text(json_member(group, "pg"));
  std::map<int64_t, std::map<int, const json*>> by_seq;  // collective seq -> rank -> entry
  std::map<int, std::string> p2p;                       // rank -> its recent sends/receives
  std::map<int, int64_t> last_seq;
  std::vector<int> ranks;
  for (const json& ranked : json_member(json_member(report, "flight_recorder"), "ranks"))
    for (const json& entry_group : json_member(ranked, "groups")) {
      if (json_member(entry_group, "pg") != name || !json_member(entry_group, "recent").is_array()) continue;
      int rank = json_member(ranked, "rank").get<int>();
      ranks.push_back(rank);
      for (const json& entry : entry_group["recent"]) {
        if (json_member(entry, "is_p2p") == true) {
          p2p[rank] += (p2p[rank].empty() ? "" : ", ") + entry_text(entry);
        } else if (json_member(entry, "collective_seq_id").is_number_integer()) {
          by_seq[entry["collective_seq_id"].get<int64_t>()][rank] = &entry;
        }
      }
      if (json_member(json_member(entry_group, "last_enqueued"), "collective_seq_id").is_number_integer())
        last_seq[rank] = entry_group["last_enqueued"]["collective_seq_id"].get<int64_t>();
    }
  if (ranks.empty()) return;
  page << "<h3>pg " << html(json_text(json_member(group, "desc"), name)) << " (" << html(name) << ", "
       << html(ranks_text(json_member(group, "ranks"))) << ")</h3>\n<table class=\"fr-timeline\">\n<tr><th>rank</th>";
  for (const auto& [seq, cells] : by_seq) page << "<th>#" << seq << "</th>";
  if (!p2p.empty()) page << "<th>recent send/recv</th>";
  page << "</tr>\n";
  for (int rank : ranks) {
    page << "<tr><td>" << rank << "</td>";
    for (const auto& [seq, cells] : by_seq) {
      auto found = cells.find(rank);
      if (found == cells.end()) {
        bool never = last_seq.count(rank) && last_seq[rank] < seq;
        page << "<td class=\"state-missing\">" << (never ? "not issued" : "not in its last entries") << "</td>";
        continue;
      }
      const json& entry = *found->second;
      std::string state = json_text(json_member(entry, "state"), "unknown");
      page << "<td class=\"state-" << html(state) << "\" title=\"" << html(entry_text(entry) + " " +
           json_text(json_member(entry, "input_sizes")) + " " + json_text(json_member(entry, "input_dtypes")))
           << "\">" << html(json_text(json_member(entry, "op"), "?")) << "<br>" << html(state) << "</td>";
    }
    if (!p2p.empty()) page << "<td class=\"frames\">" << html(shorten(p2p[rank], 200)) << "</td>";
    page << "</tr>\n";
  }
  page << "</table>\n";
}

void render_flight_recorder(const json& report, std::ostringstream& page) {
  const json& section = json_member(report, "flight_recorder");
  page << "<p>Each process group's last entries per rank, oldest first (PyTorch's flight recorder, matched by "
          "sequence id as torchfrtrace does). Green: completed; yellow: started; orange: scheduled.</p>\n";
  for (const json& divergence : json_member(section, "divergences"))
    page << "<p class=\"finding\">" << html_of(json_member(divergence, "text")) << "</p>\n";
  for (const json& group : json_member(section, "groups")) render_group_timeline(report, group, page);
  if (json_member(section, "ranks").size() > 64)
    page << "<p>More than 64 ranks: per-rank entries are in the JSON report (flight_recorder.ranks).</p>\n";
}

// ---- ranks x communicators: launched collectives ----

std::string counters_text(const json& counters, bool* unknown) {
  std::string text;
  *unknown = false;
  if (!counters.is_object()) return "";
  // NCCL's order (ncclFunc_t), then any name a later schema adds.
  std::vector<std::string> names(triage::kCollectiveNames, triage::kCollectiveNames + triage::kNumCollectives);
  for (const auto& [name, value] : counters.items())
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  for (const std::string& name : names) {
    if (!counters.contains(name)) continue;
    const json& value = counters[name];
    if (value.is_null()) *unknown = true;
    else if (value.is_number_integer() && value.get<int64_t>() != 0)
      text += (text.empty() ? "" : ", ") + name + " " + std::to_string(value.get<int64_t>());
  }
  if (*unknown) text += (text.empty() ? "" : ", ") + std::string("some unavailable");
  return text.empty() ? "none" : text;
}

void render_counter_table(const json& report, std::ostringstream& page) {
  const json& comms = json_member(report, "communicators");
  if (!comms.is_array() || comms.empty()) {
    page << "<p>No communicator was decoded.</p>\n";
    return;
  }
  // Rows: processes by world rank (else input name); columns: communicators.
  struct Row {
    bool has_world = false;
    int world = 0;
    std::string input;
  };
  std::map<std::string, Row> rows;  // keyed by input name
  for (const json& comm : comms) {
    const json inputs = raw_json_value(json_member(comm, "inputs"));
    const json& world = json_member(comm, "world_ranks");
    for (size_t i = 0; i < inputs.size(); ++i) {
      Row& row = rows[json_text(inputs[i])];
      row.input = json_text(inputs[i]);
      if (i < world.size() && world[i].is_number_integer()) {
        row.has_world = true;
        row.world = world[i].get<int>();
      }
    }
  }
  std::vector<const Row*> ordered;
  for (const auto& [name, row] : rows) ordered.push_back(&row);
  std::stable_sort(ordered.begin(), ordered.end(), [](const Row* a, const Row* b) {
    if (a->has_world != b->has_world) return a->has_world;
    return a->has_world && a->world != b->world ? a->world < b->world : a->input < b->input;
  });
  // Per communicator: input -> (its own rank, counters text); a strict majority's text is the norm.
  std::vector<std::map<std::string, std::pair<int, std::string>>> cells(comms.size());
  std::vector<std::map<std::string, bool>> unknown(comms.size());
  std::vector<std::string> norm(comms.size());
  std::vector<std::set<int>> culprits(comms.size());  // comm ranks a finding blames
  std::vector<bool> telling(comms.size(), false);     // a finding that explains or blames
  for (size_t c = 0; c < comms.size(); ++c) {
    const json inputs = raw_json_value(json_member(comms[c], "inputs"));
    const json& ranks = json_member(comms[c], "ranks_seen");
    const json launched = raw_json_value(json_member(comms[c], "seq_launched"));
    std::map<std::string, size_t> votes;
    for (size_t i = 0; i < inputs.size(); ++i) {
      bool missing_value = false;
      std::string text = i < launched.size() ? counters_text(launched[i], &missing_value) : "";
      int rank = i < ranks.size() && ranks[i].is_number_integer() ? ranks[i].get<int>() : -1;
      cells[c][json_text(inputs[i])] = {rank, text};
      unknown[c][json_text(inputs[i])] = missing_value || text.empty();
      ++votes[text];
    }
    for (const auto& [text, n] : votes)
      if (2 * n > inputs.size()) norm[c] = text;  // a tie (2 ranks) has none
    for (const json& finding : json_member(comms[c], "findings")) {
      for (const json& rank : json_member(finding, "culprit_comm_ranks"))
        if (rank.is_number_integer()) culprits[c].insert(rank.get<int>());
      telling[c] = telling[c] || json_member(finding, "explains_hang") == true || !json_member(finding, "culprit_comm_ranks").empty();
    }
  }
  auto cell_class = [&](size_t c, const std::string& input) -> std::string {
    auto found = cells[c].find(input);
    if (found == cells[c].end()) return "none";
    const auto& [rank, text] = found->second;
    if (culprits[c].count(rank)) return "culprit";
    if (unknown[c][input]) return "unknown";
    return !norm[c].empty() && text != norm[c] ? "differs" : "";
  };
  // Thousands of ranks in hundreds of communicators (TP x PP x DP): the world and the
  // communicators with a telling finding first, then the rest in order, up to kMaxColumns;
  // rows whose cells stand out first, then the others in rank order, up to kMaxRows.
  constexpr size_t kMaxColumns = 24, kMaxRows = 512;
  std::vector<size_t> columns;
  for (int pass = 0; pass < 3; ++pass)
    for (size_t c = 0; c < comms.size() && columns.size() < kMaxColumns; ++c) {
      bool world = json_member(comms[c], "is_world") == true;
      bool take = pass == 0 ? world : pass == 1 ? !world && telling[c] : !world && !telling[c];
      if (take) columns.push_back(c);
    }
  std::sort(columns.begin(), columns.end());
  std::vector<const Row*> shown;
  std::vector<bool> picked(ordered.size(), false);
  for (int pass = 0; pass < 2; ++pass)
    for (size_t r = 0; r < ordered.size() && shown.size() < kMaxRows; ++r) {
      if (picked[r]) continue;
      bool stands_out = false;
      for (size_t c : columns) {
        std::string cls = cell_class(c, ordered[r]->input);
        stands_out = stands_out || (!cls.empty() && cls != "none");
      }
      if (pass == 1 || stands_out) {
        picked[r] = true;
        shown.push_back(ordered[r]);
      }
    }
  std::vector<const Row*> display;
  for (size_t r = 0; r < ordered.size(); ++r)
    if (picked[r]) display.push_back(ordered[r]);
  page << "<table id=\"launched\">\n<tr><th>rank</th><th>input</th>";
  for (size_t c : columns) {
    const json& comm = comms[c];
    std::string head = json_text(comm["comm_hash"]);
    if (json_member(comm, "is_world") == true) head += " (world)";
    const json& pg = json_member(comm, "process_group");
    if (pg.is_object()) head += " pg " + json_text(pg["desc"]) + " " + json_text(pg["name"]);
    page << "<th>" << html(head) << "</th>";
  }
  page << "</tr>\n";
  for (const Row* row : display) {
    page << "<tr><td>" << (row->has_world ? std::to_string(row->world) : "?") << "</td><td>" << html(row->input) << "</td>";
    for (size_t c : columns) {
      std::string cls = cell_class(c, row->input);
      if (cls == "none") {
        page << "<td class=\"none\">not a member</td>";
        continue;
      }
      const auto& [rank, text] = cells[c].find(row->input)->second;
      page << "<td" << (cls.empty() ? "" : " class=\"" + cls + "\"") << ">";
      if (!row->has_world || rank != row->world) page << "comm rank " << rank << ": ";
      page << html(text.empty() ? "not in the document" : text) << "</td>";
    }
    page << "</tr>\n";
  }
  page << "</table>\n";
  if (columns.size() < comms.size() || display.size() < ordered.size())
    page << "<p id=\"launched-cut\">Shown: " << display.size() << " of " << ordered.size() << " ranks (those whose cells "
         << "stand out first), " << columns.size() << " of " << comms.size()
         << " communicators (the world's and those with a finding that explains the hang or blames a rank first); "
            "--json has them all.</p>\n";
  page << "<p>Collectives each rank launched on each communicator (NCCL's seqNumber: launches, not "
          "completions). Red: a rank a finding blames on that communicator; orange: counters that differ "
          "from what most of its ranks launched; grey: a counter the input could not read.</p>\n";
}

// ---- findings, stacks, inputs ----

// A communicator whose findings neither explain the hang nor name a rank (no-hang-evident,
// in-flight-consistent, counters-unavailable...): one line each, folded when there are many.
bool quiet_communicator(const json& comm) {
  for (const json& finding : json_member(comm, "findings"))
    if (json_member(finding, "explains_hang") == true || !json_member(finding, "culprit_ranks").empty() ||
        !json_member(finding, "waiting_ranks").empty())
      return false;
  return json_member(comm, "warnings").empty() && json_member(comm, "missing_ranks").empty();
}

void render_findings(const json& report, std::ostringstream& page) {
  std::vector<const json*> quiet;
  for (const json& comm : json_member(report, "communicators"))
    if (quiet_communicator(comm)) quiet.push_back(&comm);
  bool fold = quiet.size() > 8;
  for (const json& comm : json_member(report, "communicators")) {
    if (fold && quiet_communicator(comm)) continue;
    std::string nranks = comm["nranks"].is_number_integer() ? std::to_string(comm["nranks"].get<int>()) : "?";
    page << "<h3><code>" << html_of(comm["comm_hash"]) << "</code>" << (json_member(comm, "is_world") == true ? " (world)" : "")
         << ": " << html(nranks) << " ranks, inputs hold " << html(ranks_text(comm["ranks_seen"])) << ", missing "
         << html(comm["missing_ranks"].empty() ? std::string("none") : ranks_text(comm["missing_ranks"])) << "</h3>\n";
    for (const json& warning : json_member(comm, "warnings")) page << "<p class=\"error\">warning: " << html_of(warning) << "</p>\n";
    for (const json& finding : json_member(comm, "findings")) {
      page << "<div class=\"finding\"><span class=\"kind\">" << html_of(finding["kind"]) << "</span> ";
      if (finding["collective"].is_string()) page << html_of(finding["collective"]);
      if (finding["seq"].is_number_integer()) page << " #" << finding["seq"].get<int64_t>();
      page << html(finding_roles_text(finding, json_member(report, "verdict") == "hang" || json_member(report, "verdict") == "crash"));
      page << "<ul>";
      for (const json& evidence : json_member(finding, "evidence")) page << "<li>" << html_of(evidence) << "</li>";
      page << "</ul></div>\n";
    }
  }
  if (!fold) return;
  page << "<details id=\"quiet-communicators\"><summary>" << quiet.size()
       << " more communicators where no rank waits (their findings, one line each)</summary>\n<ul>";
  for (const json* comm : quiet) {
    std::string kinds;
    for (const json& finding : json_member(*comm, "findings")) kinds += (kinds.empty() ? "" : ", ") + json_text(finding["kind"]);
    page << "<li><code>" << html_of((*comm)["comm_hash"]) << "</code>: ranks " << html(ranks_text((*comm)["ranks_seen"]))
         << ": " << html(kinds.empty() ? std::string("no finding") : kinds) << "</li>";
  }
  page << "</ul></details>\n";
}

void render_tree(const json& node, int depth, std::ostringstream& page) {
  // A chain of single children with the same ranks and thread count reads as one line.
  std::string frames = json_text(node["frame"]);
  const json* current = &node;
  while (json_member(*current, "children").size() == 1) {
    const json& child = (*current)["children"][0];
    if (child["rank_set"] != (*current)["rank_set"] || child["threads"] != (*current)["threads"]) break;
    frames += " > " + json_text(child["frame"]);
    current = &child;
  }
  std::string set = json_text(node["rank_set"]);
  size_t threads = count_of(json_member(node, "threads")), nranks = count_of(json_member(node, "nranks"));
  std::string who = set.empty() ? "no rank" : (nranks == 1 ? "rank " : "ranks ") + set;
  std::string head = "<span class=\"who\">" + html(who) + "</span> (" + std::to_string(threads) + " thread" +
                     (threads == 1 ? "" : "s") + "): <span class=\"frames\">" + html(frames) + "</span>";
  const json& children = json_member(*current, "children");
  if (children.empty() || depth >= 40) {
    page << "<div class=\"leaf\">" << head << "</div>\n";
    return;
  }
  page << "<details class=\"tree\"" << (depth < 2 ? " open" : "") << "><summary>" << head << "</summary>\n";
  for (const json& child : children) render_tree(child, depth + 1, page);
  page << "</details>\n";
}

void render_stacks(const json& report, std::ostringstream& page) {
  const json& classes = json_member(report, "stack_classes");
  page << "<h3>Each rank's application thread</h3>\n<ul>";
  for (const json& entry : json_member(classes, "principal")) {
    std::string who = entry["ranks"].empty() ? "" : ranks_text(entry["ranks"]);
    for (const json& input : json_member(entry, "inputs")) who += (who.empty() ? "" : ", ") + json_text(input);
    page << "<li><span class=\"who\">" << html(who) << "</span>: " << html_of(entry["description"]) << "</li>";
  }
  page << "</ul>\n<h3>All threads (prefix tree, outermost frame first)</h3>\n";
  if (json_member(classes, "tree").is_object()) render_tree(classes["tree"], 0, page);
}

void render_inputs(const json& inputs, std::ostringstream& page) {
  page << "<table id=\"inputs\">\n<tr><th>input</th><th>kind</th><th>status</th><th>world rank</th><th>pid</th>"
          "<th>host</th><th>NCCL</th><th>problems</th></tr>\n";
  for (const json& input : inputs) {
    auto cell = [&](const char* key) {
      const json& value = json_member(input, key);
      return value.is_string() ? html(value.get<std::string>()) : value.is_number() ? value.dump() : std::string();
    };
    std::string problems;
    for (const json& problem : json_member(input, "problems")) problems += (problems.empty() ? "" : "; ") + json_text(problem);
    if (json_member(input, "error").is_string()) problems += (problems.empty() ? "" : "; ") + json_text(input["error"]);
    page << "<tr><td>" << cell("name") << "</td><td>" << cell("kind") << "</td><td>" << cell("status") << "</td><td>"
         << cell("world_rank") << "</td><td>" << cell("pid") << "</td><td>" << cell("hostname") << "</td><td>"
         << cell("nccl_version") << "</td><td>" << html(problems) << "</td></tr>\n";
  }
  page << "</table>\n";
}

// Buffer numerics (present only when a buffer was read or a numerics document given): the
// sentences triage wrote, then the counts of what was read and what was not readable here.
void render_numerics(const json& section, std::ostringstream& page) {
  page << "<ul>\n";
  for (const json& buffer : json_member(section, "buffers"))
    if (json_member(buffer, "text").is_string()) page << "<li>" << html_of(buffer["text"]) << "</li>\n";
  for (const json& sentence : json_member(section, "entered_through")) page << "<li>" << html_of(sentence) << "</li>\n";
  page << "</ul>\n<p>" << html(json_member(section, "read").dump()) << " buffers read, " << html(json_member(section, "unreadable").dump())
       << " not readable here (device memory: nccl-numerics under cuda-gdb)</p>\n";
}

}  // namespace

std::string render_triage_html(const nlohmann::json& report, const std::string& graph_svg) {
  std::string verdict = json_text(json_member(report, "verdict"), "error");
  std::ostringstream page;
  const json inputs = readable_inputs(report);
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<meta name=\"generator\" content=\"ncclscope " << html_of(json_member(json_member(report, "tool"), "version"))
       << "\">\n<title>ncclscope triage: " << html(verdict) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n"
       << "<h1>ncclscope triage</h1>\n<p><span id=\"verdict\" class=\"verdict verdict-" << html(verdict) << "\">"
       << html(verdict) << "</span></p>\n<p id=\"headline\" class=\"headline\">";
  for (const json& line : json_member(json_member(report, "headline"), "lines")) page << html_of(line) << "<br>";
  page << "</p>\n<p id=\"summary\" class=\"summary\">" << html_of(json_member(report, "summary")) << "</p>\n";
  const json& culprits = json_member(report, "culprit_ranks");
  const json& suspects = json_member(report, "suspect_ranks");
  if (culprits.is_array() && !culprits.empty())
    page << "<p id=\"culprits\">Culprit " << html(ranks_text(culprits)) << "</p>\n";
  if (suspects.is_array() && !suspects.empty())
    page << "<p id=\"suspects\">Suspect " << html(ranks_text(suspects)) << "</p>\n";
  for (const json& error : json_member(report, "errors"))
    page << "<p class=\"error\">" << html(triage_error_label(inputs, error)) << html_of(json_member(error, "message")) << "</p>\n";
  page << "<section id=\"graph\">\n<h2>Wait-for graph</h2>\n";
  render_legend(page);
  if (!graph_svg.empty()) {
    embed_graphviz_svg(graph_svg, page);
  } else {
    page << "<p>Graphviz (dot) was not found: the graph below is a simple built-in layered drawing.</p>\n";
    render_svg(json_member(report, "graph"), page);
  }
  for (const json& reason : json_member(json_member(report, "graph"), "blame")) {
    std::vector<std::string> labels;
    size_t index = 0;
    for (const json& id : json_member(reason, "nodes"))
      if (as_index(id, &index) && index < report["graph"]["nodes"].size())
        labels.push_back(json_text(report["graph"]["nodes"][index]["label"]));
    std::string who;
    for (const std::string& label : labels) who += (who.empty() ? "" : ", ") + label;
    page << "<p>" << html(blamed_as_culprit(report, reason) ? "culprit" : "suspect")
         << " " << html(who) << ": " << html_of(reason["rule"]) << "</p>\n";
  }
  page << "</section>\n<section id=\"ranks\">\n<h2>Ranks</h2>\n";
  render_rank_panel(report, inputs, page);
  if (json_member(report, "flight_recorder").is_object()) {
    page << "</section>\n<section id=\"fr-timeline\">\n<h2>PyTorch flight recorder</h2>\n";
    render_flight_recorder(report, page);
  }
  page << "</section>\n<section id=\"counters\">\n<h2>Launched collectives (ranks \u00d7 communicators)</h2>\n";
  render_counter_table(report, page);
  page << "</section>\n<section id=\"findings\">\n<h2>Findings</h2>\n";
  render_findings(report, page);
  if (json_member(report, "numerics").is_object()) {
    page << "</section>\n<section id=\"numerics\">\n<h2>Numerics (buffers of the stuck collectives)</h2>\n";
    render_numerics(report["numerics"], page);
  }
  page << "</section>\n<section id=\"stacks\">\n<h2>Stacks</h2>\n";
  render_stacks(report, page);
  page << "</section>\n<section id=\"input-list\">\n<h2>Inputs</h2>\n";
  render_inputs(inputs, page);
  page << "</section>\n</body>\n</html>\n";
  return page.str();
}

}  // namespace nsc
