// Cross-rank triage of a hung NCCL job (issue 5): merges one `ncclscope.state/1`
// document per rank into a verdict, findings per communicator, a wait-for graph
// and stack classes: the `ncclscope.triage/1` document (docs/triage.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "triage/kernel_join.h"
#include "triage/numerics_join.h"
#include "triage/process_view.h"

namespace nsc {

// One rank's input: a state document (or a kernel view), or why the input could not be used.
struct TriageInput {
  std::string name;         // file path or "pid 1234": how messages name the input
  std::string kind = "snapshot";  // "snapshot", "core", "live"
  nlohmann::json document;  // ncclscope.state/1, kernels/1 or numerics/1; null when `error` is set
  std::string error;        // one line naming the input and the problem; "" when usable
};

struct TriageOptions {
  // DOT: above this many nodes, ranks in the same situation share one node.
  size_t graph_group_threshold = 64;
  // The caller exits once the report is written (the command line): the analysis is left to
  // the process's exit, not freed block by block (100,000 ranks: millions of blocks).
  bool leave_analysis_to_exit = false;
};

// An input that could not be used, kept for the report's inputs[] and errors[].
struct TriageFailure {
  std::string name;
  std::string kind;
  std::string error;
  // "error": unusable; "ignored": a directory's JSON file of another kind (not counted as an error).
  std::string status = "error";
};

nlohmann::json triage_documents(const std::vector<TriageInput>& inputs, const TriageOptions& options);

// The same from summaries (the CLI's path: each document is freed once summarized).
// Kernel views (`nccl-kernels --json` under cuda-gdb) are optional; without them the
// report is exactly what it was before they existed. So are buffer numerics (documents given,
// or measured by triage in a core's or live process's host memory).
nlohmann::json triage_processes(std::vector<triage::ProcessView> processes,
                                const std::vector<TriageFailure>& failures,
                                const TriageOptions& options,
                                std::vector<triage::KernelView> kernel_views = {},
                                std::vector<triage::NumericsView> numerics_views = {});

// Renderers are pure functions of the triage document.
std::string render_triage_text(const nlohmann::json& report);
// The report's "inputs" with every entry readable: a process's entry is held as raw text
// (util/json_raw.h), parsed back here for the renderers.
nlohmann::json readable_inputs(const nlohmann::json& report);
// "partial: " for an entry of report["errors"] whose input was read, only not all of it (the
// verdict used what was read); "error: " for an input that could not be used. `inputs`:
// readable_inputs(report), or each entry's "name" and "status" (json_members).
std::string triage_error_label(const nlohmann::json& inputs, const nlohmann::json& error);
// ": rank 1 waiting; rank 3 never launched it (the verdict's culprit)": a finding's sides with
// their local roles; "culprit" only where the verdict blames (`hang`: else "a suspect").
std::string finding_roles_text(const nlohmann::json& finding, bool hang);
// A graph.blame entry the verdict counts as a culprit (a hang's skip), not a suspect.
bool blamed_as_culprit(const nlohmann::json& report, const nlohmann::json& reason);
std::string render_triage_dot(const nlohmann::json& report, const TriageOptions& options);
// One self-contained HTML page (inline SVG graph, no script, no external resource): html.cc.
// `graph_svg`: the graph as Graphviz laid it out (`dot -Tsvg` of render_triage_dot); without
// it (no Graphviz) a simple built-in layered drawing, said on the page.
std::string render_triage_html(const nlohmann::json& report, const std::string& graph_svg = "");

// 0 ok (any verdict), 1 partial (some inputs unusable or damaged: status "partial"), 2 nothing
// usable / error verdict.
int triage_exit_code(const nlohmann::json& report);

}  // namespace nsc
