// The one text renderer of ncclscope.state/1 (snapshot/state_views.cc): the CLI's `state`
// text shows each communicator exactly as gdb's nccl-comm does, and no document shape,
// however torn, makes a view throw. gdb's exact lines are checked by tests/gdb/test_commands.py
// through the C API on the same document.
#define BOOST_TEST_MODULE state_views
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "snapshot/state_text.h"
#include "snapshot/state_views.h"
#include "util/errors.h"
#include "util/json_access.h"

namespace {

using nlohmann::json;

const char kDocument[] = NCCLSCOPE_SOURCE_DIR "/tests/gdb/data/state_two_comms.json";

json load_document() {
  std::ifstream in(kDocument);
  BOOST_TEST_REQUIRE(in.good(), "cannot open " << kDocument);
  return json::parse(in);
}

const char* const kViews[] = {"state", "comm", "ring", "proxy", "threads", "kernels"};

// The data each gdb command would hand the view (commands.py's collect functions).
json view_data(const std::string& view, const json& document) {
  const json& communicators = nsc::json_member(document, "communicators");
  if (view == "comm") return communicators;
  if (view == "ring" || view == "proxy" || view == "kernels") return json{{"communicators", communicators}};
  if (view == "threads") return json{{"threads", nsc::json_member(document, "threads")}, {"source", "document"}};
  return document;
}

// Replaces one value somewhere in the document by a value of another type.
void mutate(json& value, std::mt19937& random) {
  static const json kReplacements[] = {nullptr, 7, -1, "0x\x1b[2J", json::array(), json::object(), true, 1.5,
                                       json::array({nullptr, "x"}), json{{"unavailable", "why"}}};
  if ((value.is_object() || value.is_array()) && !value.empty() && random() % 4 != 0) {
    auto it = value.begin();
    std::advance(it, random() % value.size());
    mutate(*it, random);
    return;
  }
  value = kReplacements[random() % (sizeof kReplacements / sizeof kReplacements[0])];
}

}  // namespace

BOOST_AUTO_TEST_CASE(cli_state_text_shows_each_communicator_as_nccl_comm_does) {
  json document = load_document();
  nsc::ViewOptions options;
  options.document = &document;
  std::string comm_view = nsc::render_comm_details(document["communicators"], options);
  std::string cli_text = nsc::render_state_text(document);
  BOOST_TEST(!comm_view.empty());
  BOOST_TEST(cli_text.find(comm_view) != std::string::npos, cli_text);
  BOOST_TEST(comm_view.find("communicator 0x55d0c8a1b2c0  hash 0x6db0a96d9cb7fc37\n") == 0u, comm_view);
}

BOOST_AUTO_TEST_CASE(cli_threads_are_the_threads_view) {
  json document = load_document();
  nsc::ViewOptions options;
  options.max_frames = 4;
  json data = {{"threads", document["threads"]}, {"warnings", json::array()}, {"target_kind", document["target"]["kind"]}};
  std::string threads_view = nsc::render_threads(data, options);
  BOOST_TEST(nsc::render_state_text(document).find(threads_view) != std::string::npos);
  BOOST_TEST(threads_view.find("thread 4250 \"evil\\x1b[2Jname\"") != std::string::npos, threads_view);
  BOOST_TEST(threads_view.find('\x1b') == std::string::npos);
}

BOOST_AUTO_TEST_CASE(threads_without_stacks_say_why) {
  json data = {{"threads", json::array({json{{"tid", 7}, {"name", "main"}, {"blocked_in", nullptr}}})},
               {"target_kind", "core"}};
  BOOST_TEST(nsc::render_threads(data, {}) == "thread 7 \"main\" blocked in unknown (not unwound: --no-stacks)\n1 thread\n");
  data["target_kind"] = "live";
  BOOST_TEST(nsc::render_threads(data, {}).find("(stack not unwound: live needs --stacks)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unsymbolized_frames_keep_their_module_offset) {
  json data = {{"threads", json::array({json{{"tid", 1}, {"blocked_in", "poll/epoll"},
                                             {"frames", json::array({json{{"pc", "0x7f0d0cd1b79d"}, {"function", nullptr},
                                                                          {"module", "libc.so.6"}, {"offset", 1161117}},
                                                                     json{{"pc", "0x10"}, {"function", "poll"},
                                                                          {"module", "libc.so.6"}, {"offset", 16}}})}}})}};
  std::string text = nsc::render_threads(data, {});
  BOOST_TEST(text.find("    #0 0x7f0d0cd1b79d ?? in libc.so.6 +0x11b79d\n") != std::string::npos, text);
  BOOST_TEST(text.find("    #1 0x10 poll+16 in libc.so.6\n") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(an_unknown_view_is_a_usage_error) {
  BOOST_CHECK_THROW(nsc::render_view("channels", json::object(), {}), nsc::UsageError);
}

BOOST_AUTO_TEST_CASE(no_torn_document_makes_a_view_throw) {
  json original = load_document();
  std::mt19937 random(20261204);
  for (int round = 0; round < 3000; ++round) {
    json document = original;
    for (int edits = 1 + round % 4; edits > 0; --edits) mutate(document, random);
    nsc::ViewOptions options;
    options.document = &document;
    options.expand = round % 2 == 0;
    for (const char* view : kViews) {
      std::string text;
      BOOST_CHECK_NO_THROW(text = nsc::render_view(view, view_data(view, document), options));
      BOOST_TEST(text.find('\x1b') == std::string::npos, view);
    }
    BOOST_CHECK_NO_THROW(nsc::render_state_text(document));
  }
}

// Issue 37: a value the decoder flagged as impossible prints as flagged with its value, never as
// a real device number or as merely "unreadable".
BOOST_AUTO_TEST_CASE(impossible_values_print_as_flagged) {
  json document = load_document();
  json& comm = document["communicators"][0];
  comm["cuda_dev"] = nullptr;
  comm["unavailable"]["cuda_dev"] = "impossible value -7 (a CUDA device is 0..1023)";
  nsc::ViewOptions options;
  options.document = &document;
  std::string text = nsc::render_comm_details(document["communicators"], options);
  BOOST_TEST(text.find("cuda dev <impossible value -7 (a CUDA device is 0..1023)>") != std::string::npos, text);
}

// issue 37: gdb's nccl-ring printed "5 -> -1 -> 1099511627776" from torn userRanks.
BOOST_AUTO_TEST_CASE(impossible_ring_ranks_print_as_flagged) {
  json document = load_document();
  json& comm = document["communicators"][0];
  comm["channels"][0]["ring"]["user_ranks"] = json::array({1, -1, 1099511627776LL});
  nsc::ViewOptions options;
  options.document = &document;
  std::string text = nsc::render_rings(json{{"communicators", document["communicators"]}}, options);
  BOOST_TEST(text.find("1 -> <impossible -1> -> <impossible 1099511627776> -> 1") != std::string::npos, text);
  BOOST_TEST(text.find("0 -> 1 -> 0") != std::string::npos, text);  // channel 1 is intact
}
