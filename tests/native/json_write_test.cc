// The report writer (util/json_write.cc) writes exactly what nlohmann's dump(2) with the
// "replace" error handler writes: escapes, invalid UTF-8, numbers, empty and nested containers,
// nested indents, and big arrays written over the CPUs.
#define BOOST_TEST_MODULE json_write
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <functional>
#include <random>
#include <string>

#include "util/json_raw.h"
#include "util/json_write.h"

#include "json_write_helpers.h"

using nlohmann::json;

namespace {

std::string nlohmann_text(const json& value) { return value.dump(2, ' ', false, json::error_handler_t::replace); }


void check(const json& value) {
  std::string want = nlohmann_text(value), appended;
  nsc::append_pretty_json(value, &appended);
  BOOST_CHECK_EQUAL(appended, want);
  BOOST_CHECK_EQUAL(streamed(value, 1), want);     // every array over the CPUs
  BOOST_CHECK_EQUAL(streamed(value, 4096), want);  // the CLI's threshold
}

// Strings a snapshot may carry: escapes, control bytes, DEL, UTF-8 valid and not.
const char* const kStrings[] = {"", "plain", "quote \" here", "back\\slash", "tab\there", "new\nline", "\r\b\f",
                                "\x01\x1f", "del \x7f", "caf\xc3\xa9", "\xe2\x82\xac euro", "\xf0\x9f\x98\x80",
                                "bad \xff byte", "cut \xe2\x82", "\xc3", "/slash/", "0x6db0a96d9cb7fc37"};

json random_value(std::mt19937& random, int depth) {
  return ::random_value(random, depth, {std::begin(kStrings), std::end(kStrings)});
}

}  // namespace

BOOST_AUTO_TEST_CASE(scalars_and_strings_match_nlohmann) {
  for (const char* text : kStrings) {
    check(json(text));
    check(json{{text, text}});  // as a key too
  }
  for (json value : {json(nullptr), json(true), json(false), json(0), json(-1), json(INT64_MIN), json(INT64_MAX),
                     json(UINT64_MAX), json(1.5), json(-0.0), json(1e300), json(3.0), json(0.1),
                     json(std::numeric_limits<double>::quiet_NaN()), json(std::numeric_limits<double>::infinity())})
    check(value);
  BOOST_CHECK_EQUAL(streamed(json("caf\xc3\xa9 \xff"), 1), "\"caf\xc3\xa9 \xef\xbf\xbd\"");
}

BOOST_AUTO_TEST_CASE(containers_match_nlohmann) {
  check(json::object());
  check(json::array());
  check(json{{"a", json::array()}, {"b", json::object()}, {"c", {{"d", {1, 2, json::array({json::object()})}}}}});
  check(json::array({json::array(), json::array({json::array()}), nullptr}));
  std::mt19937 random(35);
  for (int i = 0; i < 2000; ++i) check(random_value(random, 0));
}

BOOST_AUTO_TEST_CASE(big_arrays_over_the_cpus_keep_their_order) {
  // A report's shape: per-rank arrays at the first and third level, one element a world
  // communicator's size, lengths around the window (4,096) and chunk (256) sizes.
  std::mt19937 random(3);
  for (size_t n : {1u, 255u, 256u, 257u, 4095u, 4096u, 4097u, 9000u}) {
    json nodes = json::array(), members = json::array();
    for (size_t i = 0; i < n; ++i) {
      nodes.push_back({{"id", i}, {"label", "rank " + std::to_string(i)}, {"doing", kStrings[i % std::size(kStrings)]},
                       {"waits_in", i % 3 ? json::array() : json::array({random_value(random, 2)})}});
      members.push_back(i);
    }
    json report = {{"communicators", json::array({{{"ranks_seen", members}}, {{"ranks_seen", json::array()}}})},
                   {"graph", {{"nodes", nodes}, {"edges", json::array()}}},
                   {"inputs", nodes},
                   {"verdict", "hang"}};
    std::string want = nlohmann_text(report);
    BOOST_CHECK(streamed(report, 1) == want);
    BOOST_CHECK(streamed(report, 256) == want);
    BOOST_CHECK(streamed(report, 4096) == want);
  }
}

BOOST_AUTO_TEST_CASE(elements_of_a_megabyte_stream_in_order) {
  // A world communicator among small ones: its counters a raw value of MBs, its ranks an array
  // of 200,000 numbers. Such elements are written on their own, drained as they grow.
  nsc::JsonText counters;
  counters.begin_array();
  for (int rank = 0; rank < 60000; ++rank)
    counters.begin_object().key("AllReduce").number(rank % 7).key("Broadcast").null().end_object();
  counters.end_array();
  json world_ranks = json::array();
  for (int rank = 0; rank < 200000; ++rank) world_ranks.push_back(rank);
  json comms = json::array();
  for (size_t i = 0; i < 3000; ++i) {
    json comm = {{"comm_hash", "0x" + std::to_string(i)}, {"ranks_seen", json::array({i, i + 1})}};
    if (i == 0 || i == 1500) comm["seq_launched"] = nsc::raw_json(counters.text());
    if (i == 2999) comm["world_ranks"] = world_ranks;
    comms.push_back(comm);
  }
  json report = {{"communicators", comms}, {"verdict", "hang"}};
  std::string want = nlohmann_text(nsc::with_raw_json_values(report));
  BOOST_CHECK(streamed(report, 1) == want);
  BOOST_CHECK(streamed(report, 4096) == want);

  // Drained: the pieces handed out, then what is left, are the text written whole.
  std::string whole, drained, pieces;
  nsc::append_pretty_compact_json(counters.text(), 4, &whole);
  size_t drains = 0;
  std::function<void()> drain = [&] { pieces += drained, drained.clear(), ++drains; };
  drained = "prefix ";
  nsc::append_pretty_compact_json(counters.text(), 4, &drained, &drain);
  BOOST_CHECK_GT(drains, 1u);
  BOOST_CHECK(pieces + drained == "prefix " + whole);
}
