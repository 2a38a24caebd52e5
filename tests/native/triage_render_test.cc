// Rank-set formatting, stack classes and the text/DOT renderers.
#define BOOST_TEST_MODULE triage_render
#include <boost/test/unit_test.hpp>

#include "triage/inputs.h"
#include "triage/rank_set.h"
#include "triage/triage.h"
#include "triage_synthetic.h"
#include "util/strings.h"

using nlohmann::json;
using namespace synthetic;
using nsc::triage::format_rank_set;
using nsc::triage::ranks_phrase;

BOOST_AUTO_TEST_CASE(rank_sets_read_like_people_write_them) {
  BOOST_TEST(format_rank_set({0, 2, 3, 4, 5, 6, 7}) == "0,2-7");
  BOOST_TEST(format_rank_set({7, 1, 3, 2, 2}) == "1-3,7");
  BOOST_TEST(format_rank_set({3, 4}) == "3,4");
  BOOST_TEST(format_rank_set({}) == "");
  BOOST_TEST(ranks_phrase({1}) == "rank 1");
  BOOST_TEST(ranks_phrase({0, 2, 3, 4}) == "ranks 0,2-4");
  BOOST_TEST(ranks_phrase({}) == "no rank");
  // A long set's start, cut at a comma (a DOT group's label: Graphviz refuses strings over 16 KB).
  std::vector<int> every_other;
  for (int rank = 0; rank < 20000; rank += 2) every_other.push_back(rank);
  std::string start = nsc::triage::ranks_phrase_start(every_other, 160);
  BOOST_TEST(start.rfind("ranks 0,2,4,", 0) == 0u);
  BOOST_TEST(start.size() <= 164u);
  BOOST_TEST(start.substr(start.size() - 4) == ",...");
  BOOST_TEST(start.find(",,") == std::string::npos);
  BOOST_TEST(nsc::triage::ranks_phrase_start({0, 2, 3, 4}, 160) == "ranks 0,2-4");
  std::vector<int> parsed;
  BOOST_TEST(nsc::triage::parse_rank_set("0,2-4,9", &parsed));
  BOOST_TEST(parsed == (std::vector<int>{0, 2, 3, 4, 9}));
  BOOST_TEST(!nsc::triage::parse_rank_set("3-1", &parsed));
  BOOST_TEST(!nsc::triage::parse_rank_set("a", &parsed));
}

// The text report's every line goes through this: target strings may hold terminal escapes.
BOOST_AUTO_TEST_CASE(text_is_made_safe_for_a_terminal) {
  using nsc::escape_for_terminal;
  BOOST_TEST(escape_for_terminal("rank 3 waits in ncclAllReduce") == "rank 3 waits in ncclAllReduce");
  BOOST_TEST(escape_for_terminal("a\\b") == "a\\\\b");
  BOOST_TEST(escape_for_terminal("\x1b[31mred") == "\\x1b[31mred");
  BOOST_TEST(escape_for_terminal("del\x7f") == "del\\x7f");
  BOOST_TEST(escape_for_terminal("nel\xc2\x85.") == "nel\\xc2\\x85.");  // a C1 control
  BOOST_TEST(escape_for_terminal("caf\xc3\xa9 \xe2\x82\xac") == "caf\xc3\xa9 \xe2\x82\xac");  // valid UTF-8 kept
  BOOST_TEST(escape_for_terminal("\xff") == "\\xff");
  BOOST_TEST(escape_for_terminal("cut \xe2\x82") == "cut \\xe2\\x82");  // a sequence the text ends inside
  BOOST_TEST(escape_for_terminal(std::string("nul\0end", 7)) == "nul\\x00end");
  std::string out = "label: ";
  nsc::append_escaped_for_terminal(&out, "a\tb");
  BOOST_TEST(out == "label: a\\x09b");
}

BOOST_AUTO_TEST_CASE(natural_order_of_file_names) {
  BOOST_TEST(nsc::triage::natural_less("rank-2.json", "rank-10.json"));
  BOOST_TEST(!nsc::triage::natural_less("rank-10.json", "rank-2.json"));
  BOOST_TEST(nsc::triage::natural_less("core.99", "core.100"));
}

BOOST_AUTO_TEST_CASE(stack_tree_holds_rank_sets_outermost_first) {
  json report = nsc::triage_documents(as_inputs(missing_collective(8, 1)), nsc::TriageOptions{});
  const json& tree = report["stack_classes"]["tree"];
  BOOST_TEST(tree["frame"] == "all threads");
  BOOST_TEST(tree["rank_set"] == "0-7");
  BOOST_TEST(tree["threads"] == 16);  // main + proxy thread per rank
  const json* start = nullptr;
  for (const json& child : tree["children"])
    if (child["frame"] == "_start") start = &child;
  BOOST_REQUIRE(start != nullptr);
  BOOST_TEST((*start)["threads"] == 8);
  const json& main_node = (*start)["children"][0]["children"][0];
  BOOST_TEST(main_node["frame"] == "main");
  BOOST_REQUIRE_EQUAL(main_node["children"].size(), 2u);
  std::map<std::string, std::string> ranks_by_frame;
  for (const json& child : main_node["children"]) ranks_by_frame[child["frame"]] = child["rank_set"];
  BOOST_TEST(ranks_by_frame["pause"] == "1");
  BOOST_TEST(ranks_by_frame["cudaStreamSynchronize"] == "0,2-7");
  const json& classes = report["stack_classes"]["principal"];
  BOOST_REQUIRE_EQUAL(classes.size(), 2u);
  BOOST_TEST(classes[0]["rank_set"] == "1");
  BOOST_TEST(classes[0]["frames"][0] == "_start");
  BOOST_TEST(classes[0]["frames"].back() == "pause");
}

BOOST_AUTO_TEST_CASE(text_report_puts_the_verdict_first) {
  json report = nsc::triage_documents(as_inputs(missing_collective(2, 1)), nsc::TriageOptions{});
  std::string text = nsc::render_triage_text(report);
  BOOST_TEST(text.rfind("HANG in communicator 0x6db0a96d9cb7fc37 (2 ranks): AllGather #1 (NCCL launch count) never "
                        "issued by rank 1.\nCulprit: rank 1, in pause() in main().\n"
                        "Waiting: rank 0 in cudaStreamSynchronize() in main().\n\n"
                        "Why (verdict hang): Hang. On communicator 0x6db0a96d9cb7fc37 (2 ranks), rank 1 never launched "
                        "AllGather #1, which rank 0 launched and waits for.", 0) == 0u, text);
  BOOST_TEST(text.find("[missing-collective] AllGather #1: rank 0 waiting; rank 1 never launched it (the verdict's culprit)\n") !=
             std::string::npos, text);
  BOOST_TEST(report["headline"]["what"] == "hang");
  BOOST_TEST(report["headline"]["lines"].size() == 3u);
  BOOST_TEST(text.find("  rank 0 -> rank 1: AllGather #1 on 0x6db0a96d9cb7fc37 (collective)\n") != std::string::npos);
  BOOST_TEST(text.find("ring: rank 0 receives from rank 1 on channels 0,1") != std::string::npos);
  BOOST_TEST(text.find("      rank 1 (1 thread): pause\n") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(text_escapes_strings_from_target_memory) {
  std::vector<json> documents = missing_collective(2, 1);
  documents[1]["threads"][0]["frames"][0]["function"] = "evil\x1b[2Jname";
  json report = nsc::triage_documents(as_inputs(documents), nsc::TriageOptions{});
  std::string text = nsc::render_triage_text(report);
  BOOST_TEST(text.find('\x1b') == std::string::npos);
  BOOST_TEST(text.find("evil\\x1b[2Jname") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(dot_draws_each_rank_up_to_the_threshold) {
  json report = nsc::triage_documents(as_inputs(missing_collective(2, 1)), nsc::TriageOptions{});
  std::string dot = nsc::render_triage_dot(report, nsc::TriageOptions{});
  BOOST_TEST(dot.rfind("digraph ncclscope_triage {\n", 0) == 0u);
  BOOST_TEST(dot.find("  n0 -> n1 [label=\"AllGather #1\\n0x6db0a96d9cb7fc37\", class=\"waits-on\"];\n") != std::string::npos,
             dot);
  BOOST_TEST(dot.find("  n1 [label=\"rank 1\\npause() called from main() [user-code]\", fillcolor=\"#f4cccc\", "
                      "class=\"role-culprit\"") != std::string::npos, dot);
  BOOST_TEST(dot.substr(dot.size() - 2) == "}\n");
}

BOOST_AUTO_TEST_CASE(dot_groups_alike_ranks_above_the_threshold) {
  json report = nsc::triage_documents(as_inputs(missing_collective(100, 42)), nsc::TriageOptions{});
  std::string dot = nsc::render_triage_dot(report, nsc::TriageOptions{});
  BOOST_TEST(dot.find("label=\"ranks 0-41,43-99 (99)\\ncudaStreamSynchronize() called from main()") != std::string::npos, dot);
  BOOST_TEST(dot.find("label=\"rank 42\\npause()") != std::string::npos, dot);
  size_t arrows = 0;
  for (size_t at = dot.find(" -> "); at != std::string::npos; at = dot.find(" -> ", at + 1)) ++arrows;
  BOOST_TEST(arrows == 1u);
  nsc::TriageOptions every_rank;
  every_rank.graph_group_threshold = 1000;
  std::string full = nsc::render_triage_dot(report, every_rank);
  arrows = 0;
  for (size_t at = full.find(" -> "); at != std::string::npos; at = full.find(" -> ", at + 1)) ++arrows;
  BOOST_TEST(arrows == 99u);
}

BOOST_AUTO_TEST_CASE(dot_marks_the_cycle) {
  std::vector<json> documents;
  for (int rank = 0; rank < 2; ++rank) {
    json doc = rank_document(rank, 2, {0, 0, 0, 0, 3}, waiting_thread(0));
    doc["communicators"][0]["proxy_ops"].push_back(proxy_op("Send", "ncclPatternSend", (rank + 1) % 2));
    documents.push_back(doc);
  }
  json report = nsc::triage_documents(as_inputs(documents), nsc::TriageOptions{});
  std::string dot = nsc::render_triage_dot(report, nsc::TriageOptions{});
  BOOST_TEST(dot.find("n0 -> n1 [label=\"Send\\n0x6db0a96d9cb7fc37\", class=\"waits-on\", style=dashed, color=\"#cc0000\", penwidth=2];") !=
             std::string::npos, dot);
  BOOST_TEST(dot.find("n1 -> n0 [label=\"Send\\n0x6db0a96d9cb7fc37\", class=\"waits-on\", style=dashed, color=\"#cc0000\", penwidth=2];") !=
             std::string::npos, dot);
}
