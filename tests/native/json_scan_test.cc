// The fast JSON scanner (util/json_scan.cc) gives exactly nlohmann's SAX events for every text it
// accepts, accepts only texts nlohmann accepts, and declines the rest.
#define BOOST_TEST_MODULE json_scan
#include <boost/test/unit_test.hpp>

#include <random>
#include <string>
#include <vector>

#include "util/json_scan.h"

using nlohmann::json;

namespace {

// Every event as one line, values included ("u:42", "k:name", "f:1.5|1.5"). Given views, it also
// checks that a key's view still reads the same at every event until the next key.
class EventLog : public nsc::JsonViewSax {
 public:
  std::vector<std::string> events;
  bool key_view(std::string_view v) override {
    key_ = v;
    key_copy_ = std::string(v);
    return add("k:" + key_copy_);
  }
  bool string_view(std::string_view v) override { return add("s:" + std::string(v)); }
  bool null() override { return add("null"); }
  bool boolean(bool v) override { return add(v ? "true" : "false"); }
  bool number_integer(number_integer_t v) override { return add("i:" + std::to_string(v)); }
  bool number_unsigned(number_unsigned_t v) override { return add("u:" + std::to_string(v)); }
  bool number_float(number_float_t v, const string_t& s) override { return add("f:" + std::to_string(v) + "|" + s); }
  bool string(string_t& v) override { return add("s:" + v); }
  bool binary(binary_t&) override { return add("binary"); }
  bool key(string_t& v) override { return add("k:" + v); }
  bool start_object(std::size_t n) override { return add("{" + std::to_string(n)); }
  bool end_object() override { return add("}"); }
  bool start_array(std::size_t n) override { return add("[" + std::to_string(n)); }
  bool end_array() override { return add("]"); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool add(std::string event) {
    if (key_ != key_copy_) events.push_back("key view changed: " + key_copy_);
    events.push_back(std::move(event));
    return true;
  }
  std::string_view key_;
  std::string key_copy_;
};

struct Outcome {
  bool accepted;
  std::vector<std::string> events;
};

Outcome scanned(const std::string& text) {
  EventLog log;
  bool accepted = nsc::scan_json(text, static_cast<json::json_sax_t*>(&log));
  return {accepted, log.events};
}

// The same through key_view and string_view.
Outcome scanned_as_views(const std::string& text) {
  EventLog log;
  bool accepted = nsc::scan_json(text, &log);
  return {accepted, log.events};
}

Outcome parsed(const std::string& text) {
  EventLog log;
  bool accepted = json::sax_parse(text, &log);
  return {accepted, log.events};
}

// The property: accepted by the scanner => accepted by nlohmann, with the same events, as strings
// or as views alike.
void check_agrees(const std::string& text) {
  Outcome fast = scanned(text);
  Outcome views = scanned_as_views(text);
  BOOST_TEST_INFO("text: " << text);
  BOOST_TEST(views.accepted == fast.accepted);
  if (!fast.accepted) return;
  Outcome reference = parsed(text);
  BOOST_REQUIRE(reference.accepted);
  BOOST_TEST(fast.events == reference.events, boost::test_tools::per_element());
  BOOST_TEST(views.events == reference.events, boost::test_tools::per_element());
}

}  // namespace

BOOST_AUTO_TEST_CASE(well_formed_documents_give_the_same_events) {
  const char* texts[] = {
      R"({"schema": "ncclscope.state/1", "a": [1, -2, 0, -0, 3.5, -1e3, 2E+2, 1.0e-2, true, false, null],
          "b": {}, "c": [], "d": [{}, [[]], {"e": {"f": "g"}}], "esc": "q\"b\\s\/n\nt\tr\rb\bf\f"})",
      "  [1,2 , 3 ]\n",
      "\"just a string\"",
      "17",
      "-9",
      "{\"k\":\"\"}",
      "[999999999999999999, -999999999999999999]",  // 18 digits: the scanner's own
      "{\"dup\": 1, \"dup\": 2}",
      R"({"k\"ey": "v\"alue", "k\\2": ["a\nb", {"in\tner": "x\ty"}], "plain": "p\/q"})",  // escaped keys and values
  };
  for (const char* text : texts) {
    Outcome fast = scanned(text);
    BOOST_TEST_INFO("text: " << text);
    BOOST_TEST(fast.accepted);
    check_agrees(text);
  }
}

// Declined: nlohmann decides (and names the error) for all of these.
BOOST_AUTO_TEST_CASE(unusual_or_malformed_texts_are_declined) {
  const char* texts[] = {
      "", "   ", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{1:2}", "[01]", "[1.]", "[.5]", "[-]", "[1e]", "[tru]",
      "[nul]", "{} {}", "{}x", "[\"\\u0041\"]", "[\"caf\xc3\xa9\"]", "[\"tab\there\"]", "\xef\xbb\xbf{}",
      "[12345678901234567890]", "[1234567890123456789]", "[1e999]", "[\"unterminated]", "[\"bad \\x escape\"]",
      "/* comment */ {}", "[1 2]", "{\"a\":1 \"b\":2}", "]", "}",
  };
  for (const char* text : texts) {
    BOOST_TEST_INFO("text: " << text);
    BOOST_TEST(!scanned(text).accepted);
  }
}

BOOST_AUTO_TEST_CASE(deep_nesting_needs_no_recursion) {
  std::string text = std::string(200000, '[') + std::string(200000, ']');
  Outcome fast = scanned(text);
  BOOST_TEST(fast.accepted);
  BOOST_TEST(fast.events.size() == 400000u);
}

// Mutations of a snapshot-like text: byte flips, cuts and insertions of JSON's own characters.
BOOST_AUTO_TEST_CASE(mutated_texts_never_disagree) {
  const std::string base =
      R"({"schema": "ncclscope.state/1", "communicators": [{"comm_hash": "0x6db0a96d9cb7fc37", "rank": 3,
      "nranks": 8, "seq_launched": {"AllReduce": 7, "Reduce": null}, "channels": [{"id": 0, "ring": {"prev": -1,
      "next": 4}}], "health": {"abort_flag": false, "async_result": "ncclSuccess"}}], "threads": [{"tid": 10,
      "frames": [{"pc": "0x7f00", "function": "main", "offset": 16}], "blocked_in": "sleep"}], "x": 1.25e2})";
  const char alphabet[] = "{}[],:\"\\ 0-1.eE+tfnu\x7f\x01\xc3";
  std::mt19937 random(35);
  size_t accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text = base;
    int edits = 1 + static_cast<int>(random() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t at = random() % text.size();
      char c = alphabet[random() % (sizeof alphabet - 1)];
      switch (random() % 4) {
        case 0: text[at] = c; break;
        case 1: text.insert(text.begin() + static_cast<long>(at), c); break;
        case 2: text.erase(at, 1); break;
        default: text.resize(at); break;
      }
    }
    check_agrees(text);
    accepted += scanned(text).accepted;
  }
  // Some mutations stay valid JSON (a digit changed, a space added): the scanner reads those.
  BOOST_TEST(accepted > 1000u);
}

// Strings and whitespace are read sixteen or eight bytes at a time: each byte that ends a plain
// run, at every position of both widths and of the tail, and whitespace runs of every length.
BOOST_AUTO_TEST_CASE(word_at_a_time_reads_stop_at_the_right_byte) {
  const char ends[] = {'"', '\\', '\x01', '\x1f', '\x7f', '\x80', '\xc3', ' ', '~', '\n'};
  size_t accepted = 0;
  for (char end : ends)
    for (size_t at = 0; at < 36; ++at) {
      std::string inner(40, 'a');
      inner[at] = end;
      check_agrees("[\"" + inner + "\"]");  // malformed ones are declined
      accepted += scanned("[\"" + inner + "\"]").accepted;
      inner[at + 1] = 'n';  // "\n" when `end` is the backslash: a valid escape
      check_agrees("{\"" + inner + "\": \"" + inner + "\"}");
    }
  BOOST_TEST(accepted == 3 * 36u);  // ' ', '~' and 0x7f stay in a string
  for (size_t spaces = 0; spaces < 40; ++spaces) {
    std::string pad(spaces, ' '), mixed;
    for (size_t i = 0; i < spaces; ++i) mixed.push_back(" \n\t\r"[i % 4]);
    for (const std::string& ws : {pad, mixed}) {
      std::string text = "{\n" + ws + "\"k\":" + ws + "[1,\n" + ws + "2" + ws + "]" + ws + "}" + ws;
      BOOST_TEST_INFO("whitespace: " << spaces << (ws == pad ? " spaces" : " mixed"));
      BOOST_TEST(scanned(text).accepted);
      check_agrees(text);
      // A form feed or vertical tab is not JSON's whitespace, wherever it falls in the run.
      for (char stray : {'\f', '\v'}) {
        std::string bad = "[" + ws + stray + ws + "1]";
        BOOST_TEST(!scanned(bad).accepted);
        check_agrees(bad);
      }
    }
  }
  json document = {{"schema", "ncclscope.state/1"},
                   {"threads", {{{"module", "/lib/x86_64-linux-gnu/libc.so.6"}, {"tid", 12}, {"names", {"a", "bb", ""}}}}},
                   {"nested", {{"deeper", {{"deepest", {{"path", "/usr/local/cuda-13.0/lib64/libcudart.so.13"}}}}}}}};
  for (int indent : {1, 2, 4, 9}) {
    BOOST_TEST(scanned(document.dump(indent)).accepted);
    check_agrees(document.dump(indent));
  }
}
