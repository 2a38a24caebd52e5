// Raw JSON values (util/json_raw.h): JsonText writes what nlohmann's dump() writes; a document
// holding raw values is written (write_pretty_json, append_pretty_json) exactly as dump(2)
// writes the same document with each raw value replaced by its value.
#define BOOST_TEST_MODULE json_raw
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <random>
#include <string>

#include "util/json_raw.h"
#include "util/json_write.h"

#include "json_write_helpers.h"

using nlohmann::json;

namespace {

const char* const kStrings[] = {"", "plain", "quote \" here", "back\\slash", "tab\there", "new\nline", "\x01\x1f",
                                "del \x7f", "caf\xc3\xa9", "{[,:]}", "\"", "\\", "0x6db0a96d9cb7fc37"};

// Values JsonText can write: no floating point, integers within int64, valid UTF-8.
json random_value(std::mt19937& random, int depth) {
  return ::random_value(random, depth, {std::begin(kStrings), std::end(kStrings)}, false);
}

// The value through JsonText (an object's keys in nlohmann's order: its own iteration order).
void write(const json& value, nsc::JsonText* out) {
  switch (value.type()) {
    case json::value_t::object:
      out->begin_object();
      for (const auto& [key, child] : value.items()) {
        out->key(key);
        write(child, out);
      }
      out->end_object();
      return;
    case json::value_t::array:
      out->begin_array();
      for (const json& child : value) write(child, out);
      out->end_array();
      return;
    case json::value_t::string: out->string(value.get<std::string>()); return;
    case json::value_t::boolean: out->boolean(value.get<bool>()); return;
    case json::value_t::null: out->null(); return;
    default: out->number(value.get<int64_t>());
  }
}

std::string pretty(const json& value) { return value.dump(2, ' ', false, json::error_handler_t::replace); }


// Every container of `value` replaced by a raw value with a chance of one in `odds`.
json with_raw_parts(const json& value, std::mt19937& random, unsigned odds) {
  if (!value.is_structured()) return value;
  if (random() % odds == 0) {
    nsc::JsonText text;
    write(value, &text);
    return nsc::raw_json(text.text());
  }
  json out = value;
  for (json& child : out) child = with_raw_parts(child, random, odds);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(json_text_writes_what_dump_writes) {
  std::mt19937 random(36);
  for (int i = 0; i < 3000; ++i) {
    json value = random_value(random, 0);
    nsc::JsonText text;
    write(value, &text);
    BOOST_REQUIRE_EQUAL(text.text(), value.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  nsc::JsonText small;
  small.begin_object().key("a").number_or_null(std::nullopt).key("b").string_or_null("").key("c").string_or_null("x");
  BOOST_CHECK_EQUAL(small.end_object().text(), R"({"a":null,"b":null,"c":"x"})");
  nsc::JsonText invalid;  // invalid UTF-8 repaired as the report's writer repairs it
  BOOST_CHECK_EQUAL(invalid.string("bad \xff byte").text(), json("bad \xff byte").dump(-1, ' ', false, json::error_handler_t::replace));
}

BOOST_AUTO_TEST_CASE(raw_values_are_written_as_their_values) {
  std::mt19937 random(35);
  for (int i = 0; i < 2000; ++i) {
    json value = json{{"graph", {{"nodes", json::array({random_value(random, 1), random_value(random, 1)})}}},
                      {"inputs", random_value(random, 1)}};
    json mixed = with_raw_parts(value, random, 3);
    std::string want = pretty(value);
    BOOST_REQUIRE(nsc::with_raw_json_values(mixed) == value);
    std::string appended;
    nsc::append_pretty_json(mixed, &appended);
    BOOST_REQUIRE_EQUAL(appended, want);
    BOOST_REQUIRE_EQUAL(streamed(mixed, 1), want);  // every array over the CPUs
  }
}

BOOST_AUTO_TEST_CASE(raw_value_reads_back) {
  json raw = nsc::raw_json(R"({"a":[1,{}],"b":"x"})");
  BOOST_CHECK(nsc::is_raw_json(raw));
  BOOST_CHECK(!nsc::is_raw_json(json::binary({1, 2})));  // a binary value of no subtype is not one
  BOOST_CHECK(nsc::raw_json_value(raw) == json::parse(R"({"a":[1,{}],"b":"x"})"));
  BOOST_CHECK(nsc::raw_json_value(json(3)) == json(3));
  BOOST_CHECK_EQUAL(streamed(json{{"k", raw}}, 4096), "{\n  \"k\": {\n    \"a\": [\n      1,\n      {}\n    ],\n    \"b\": \"x\"\n  }\n}");
}

// A top-level string member, read from a raw object's text as from a document (triage's exit
// code reads each input's status this way): any value, any key order, nested keys of the same
// name ignored.
BOOST_AUTO_TEST_CASE(string_member_reads_the_same_raw_or_not) {
  std::mt19937 random(37);
  for (int i = 0; i < 3000; ++i) {
    json value = random_value(random, 0);
    if (!value.is_object()) value = json{{"wrapped", value}};
    if (i % 2) value["status"] = kStrings[i % std::size(kStrings)];
    if (i % 3 == 0) value["nested"] = json{{"status", "inner"}};
    if (i % 5 == 0) value["status"] = json::array({"not", "a string"});
    nsc::JsonText text;
    write(value, &text);
    json raw = nsc::raw_json(text.text());
    std::optional<std::string> want;
    if (value.contains("status") && value["status"].is_string()) want = value["status"].get<std::string>();
    BOOST_REQUIRE(nsc::json_string_member(value, "status") == want);
    BOOST_REQUIRE(nsc::json_string_member(raw, "status") == want);
  }
  BOOST_CHECK(!nsc::json_string_member(json(3), "status"));
  BOOST_CHECK(!nsc::json_string_member(nsc::raw_json("[1,2]"), "status"));
  BOOST_CHECK(nsc::json_string_member(nsc::raw_json(R"({"a":"caf\u00e9 \u2603","status":"partial"})"), "status") ==
              std::optional<std::string>("partial"));  // \u escapes: the scanner declines, the parser reads it
}

// A few members of an object, raw or not: the same document either way, whatever the members'
// values (nested containers, same-named keys inside them), and {} for what is not an object.
BOOST_AUTO_TEST_CASE(picked_members_are_the_same_raw_or_not) {
  std::mt19937 random(38);
  for (int i = 0; i < 3000; ++i) {
    json value = random_value(random, 0);
    if (!value.is_object()) value = json{{"wrapped", value}};
    if (i % 2) value["status"] = random_value(random, 1);
    if (i % 3 == 0) value["nested"] = json{{"status", "inner"}, {"name", json::array({1, "x", nullptr})}};
    if (i % 4 == 0) value["name"] = json{{"deep", json::array({json::object(), json::array({25, false})})}};
    json want = json::object();
    for (const char* key : {"name", "status"})
      if (value.contains(key)) want[key] = value[key];
    nsc::JsonText text;
    write(value, &text);
    BOOST_REQUIRE(nsc::json_members(value, {"name", "status"}) == want);
    BOOST_REQUIRE(nsc::json_members(nsc::raw_json(text.text()), {"name", "status"}) == want);
  }
  BOOST_CHECK(nsc::json_members(json(3), {"status"}) == json::object());
  BOOST_CHECK(nsc::json_members(nsc::raw_json("[1,2]"), {"status"}) == json::object());
  BOOST_CHECK(nsc::json_members(nsc::raw_json(R"({"a":"caf\u00e9","status":["ok"]})"), {"status"}) ==
              json({{"status", json::array({"ok"})}}));  // \u escapes: the scanner declines, the parser reads it
}
