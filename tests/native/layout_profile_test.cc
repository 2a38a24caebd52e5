// Layout profile JSON: round trip and rejection of corrupt input.
#define BOOST_TEST_MODULE layout_profile
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <random>
#include <sstream>

#include "layout/layout_profile.h"
#include "util/errors.h"

using nlohmann::json;

namespace {

const char kBuildId[] = "9fcf74d93a8c3605bf7718f594d0a24366e38536";

std::string committed_profile_path() {
  return std::string(NCCLSCOPE_SOURCE_DIR) + "/native/profiles/" + kBuildId + ".json";
}

std::string committed_text() {
  std::ifstream file(committed_profile_path(), std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

nsc::LayoutProfile small_profile() {
  nsc::LayoutProfile profile;
  profile.build_id = "00ff10";
  profile.nccl_version = "2.21.5";
  profile.library = "/opt/nccl/lib/libnccl.so.2";
  nsc::StructLayout outer;
  outer.name = "Outer";
  outer.size = 48;
  nsc::MemberLayout count{"count", 0, 8, nsc::ValueKind::kUnsigned, "long unsigned int", 8, {}, 0, 0};
  nsc::MemberLayout grid{"grid", 8, 24, nsc::ValueKind::kSigned, "int", 4, {2, 3}, 0, 0};
  nsc::MemberLayout flag{"flag", 32, 4, nsc::ValueKind::kUnsigned, "unsigned int", 4, {}, 3, 5};
  nsc::MemberLayout next{"next", 40, 8, nsc::ValueKind::kPointer, "Outer", 8, {}, 0, 0};
  outer.members = {count, grid, flag, next};
  profile.structs["Outer"] = outer;
  nsc::StructLayout either;
  either.name = "Either";
  either.size = 8;
  either.is_union = true;
  either.members = {{"as_int", 0, 4, nsc::ValueKind::kSigned, "int", 4, {}, 0, 0},
                    {"as_double", 0, 8, nsc::ValueKind::kFloat, "double", 8, {}, 0, 0}};
  profile.structs["Either"] = either;
  nsc::EnumLayout sign;
  sign.name = "Sign_t";
  sign.size = 4;
  sign.values = {{-1, "kMinus"}, {0, "kZero"}, {0x7fffffff, "kMax"}};
  profile.enums["Sign_t"] = sign;
  profile.symbols = {{"ncclComms", 0xb72dc48}, {"ncclGroupDepth@tls", 0x1044}};
  profile.constants = {{"MAXCHANNELS", 32}, {"NEGATIVE", -5}};
  return profile;
}

std::string rejection(const std::string& text) {
  try {
    nsc::parse_layout_profile(text, "test.json");
  } catch (const nsc::BadInput& error) {
    return error.what();
  }
  return "(accepted)";
}

std::string rejection(const json& document) { return rejection(document.dump()); }

json committed_json() { return json::parse(committed_text()); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(round_trip_keeps_every_field) {
  nsc::LayoutProfile original = small_profile();
  nsc::LayoutProfile copy = nsc::parse_layout_profile(nsc::format_layout_profile(original), "mem");
  BOOST_TEST((nsc::layout_profile_to_json(copy) == nsc::layout_profile_to_json(original)));
  BOOST_TEST(copy.source == "profile:mem");
  const nsc::MemberLayout* grid = copy.find_struct("Outer")->find("grid");
  BOOST_TEST(grid->array_dims == std::vector<uint64_t>({2, 3}), boost::test_tools::per_element());
  BOOST_TEST(grid->element_size == 4u);
  const nsc::MemberLayout* flag = copy.find_struct("Outer")->find("flag");
  BOOST_TEST(flag->bit_size == 3u);
  BOOST_TEST(flag->bit_offset == 5u);
  BOOST_TEST(copy.find_struct("Outer")->find("next")->type_name == "Outer");
  BOOST_TEST(copy.find_struct("Either")->is_union);
  BOOST_TEST(copy.find_enum("Sign_t")->name_of(-1).value_or("?") == "kMinus");
  BOOST_TEST(copy.find_enum("Sign_t")->name_of(0x7fffffff).value_or("?") == "kMax");
  BOOST_TEST(copy.symbols.at("ncclGroupDepth@tls") == 0x1044u);
  BOOST_TEST(copy.constants.at("NEGATIVE") == -5);
}

BOOST_AUTO_TEST_CASE(committed_profile_round_trips_and_is_small) {
  std::string text = committed_text();
  BOOST_TEST_MESSAGE("committed 2.28.9 profile: " << text.size() << " bytes");
  BOOST_TEST(text.size() < 1000000u);
  nsc::LayoutProfile profile = nsc::read_layout_profile(committed_profile_path());
  BOOST_TEST(profile.structs.size() > 80u);
  BOOST_TEST(nsc::format_layout_profile(profile) == text);  // byte-identical rewrite
  BOOST_TEST(profile.find_struct("ncclComm")->find("rank")->offset == 1066192u);
}

BOOST_AUTO_TEST_CASE(write_is_atomic_and_readable) {
  std::string path = std::string(NCCLSCOPE_BINARY_DIR) + "/layout_profile_test_out.json";
  nsc::write_layout_profile(small_profile(), path);
  nsc::LayoutProfile back = nsc::read_layout_profile(path);
  BOOST_TEST(back.source == "profile:" + path);
  BOOST_TEST(back.find_struct("Outer")->size == 48u);
  std::remove(path.c_str());
  BOOST_CHECK_THROW(nsc::write_layout_profile(small_profile(), "/nonexistent/dir/p.json"),
                    nsc::BadInput);
}

// Every rank of a run reads the same profiles: one parse per file per run (issue 35), and a
// profile rewritten meanwhile (a new file: temporary + rename) is parsed again.
BOOST_AUTO_TEST_CASE(a_profile_file_is_parsed_once_per_run_until_it_changes) {
  std::string path = std::string(NCCLSCOPE_BINARY_DIR) + "/layout_profile_test_once.json";
  nsc::write_layout_profile(small_profile(), path);
  size_t before = nsc::layout_profile_parses(path);
  nsc::LayoutProfile first = nsc::read_layout_profile(path);
  nsc::LayoutProfile second = nsc::read_layout_profile(path);
  BOOST_TEST(nsc::layout_profile_parses(path) == before + 1);
  BOOST_TEST((nsc::layout_profile_to_json(first) == nsc::layout_profile_to_json(second)));
  BOOST_TEST(second.source == "profile:" + path);
  nsc::LayoutProfile changed = small_profile();
  changed.constants["NEGATIVE"] = -6;
  nsc::write_layout_profile(changed, path);
  BOOST_TEST(nsc::read_layout_profile(path).constants.at("NEGATIVE") == -6);
  BOOST_TEST(nsc::layout_profile_parses(path) == before + 2);
  std::remove(path.c_str());
  BOOST_CHECK_THROW(nsc::read_layout_profile(path), nsc::BadInput);  // gone: not answered from memory
}

BOOST_AUTO_TEST_CASE(truncated_or_empty_json) {
  std::string text = committed_text();
  std::string truncated = rejection(text.substr(0, text.size() / 2));
  BOOST_TEST(contains(truncated, "layout profile test.json: not valid JSON"));
  BOOST_TEST(!contains(truncated, "\n"));
  BOOST_TEST(contains(rejection(std::string("")), "not valid JSON"));
  std::string missing = "(none)";
  try {
    nsc::read_layout_profile("/nonexistent/p.json");
  } catch (const nsc::BadInput& error) {
    missing = error.what();
  }
  BOOST_TEST(missing == "layout profile /nonexistent/p.json: cannot open: No such file or directory");
}

BOOST_AUTO_TEST_CASE(wrong_schema_or_shape) {
  json document = committed_json();
  document["schema"] = "ncclscope.layout/2";
  BOOST_TEST(rejection(document) ==
             "layout profile test.json: bad key schema: is \"ncclscope.layout/2\", expected "
             "\"ncclscope.layout/1\"");
  BOOST_TEST(contains(rejection(json::array()), "bad key (top level): expected a JSON object"));
  document = committed_json();
  document.erase("structs");
  BOOST_TEST(contains(rejection(document), "bad key structs: missing"));
  document = committed_json();
  document["build_id"] = "9FCF74D9";
  BOOST_TEST(contains(rejection(document), "bad key build_id: expected lower-case hex"));
  document = committed_json();
  document["build_id"] = "../../etc/passwd";
  BOOST_TEST(contains(rejection(document), "bad key build_id"));
}

BOOST_AUTO_TEST_CASE(negative_or_huge_numbers) {
  json document = committed_json();
  document["structs"]["ncclComm"]["size"] = -1;
  BOOST_TEST(contains(rejection(document), "bad key structs.ncclComm.size: expected an unsigned"));
  document = committed_json();
  document["structs"]["ncclComm"]["size"] = 1.5;
  BOOST_TEST(contains(rejection(document), "bad key structs.ncclComm.size"));
  document = committed_json();
  document["structs"]["ncclComm"]["members"][1]["offset"] = uint64_t{1} << 40;
  BOOST_TEST(contains(rejection(document), "bad key structs.ncclComm.members[1].offset"));
  document = committed_json();
  document["enums"]["ncclResult_t"]["size"] = 3;
  BOOST_TEST(contains(rejection(document), "bad key enums.ncclResult_t.size"));
  document = committed_json();
  document["symbols"]["ncclComms"] = -8;
  BOOST_TEST(contains(rejection(document), "bad key symbols.ncclComms"));
}

BOOST_AUTO_TEST_CASE(huge_or_inconsistent_array_dims) {
  json document = committed_json();
  json& channels = document["structs"]["ncclComm"]["members"];
  size_t index = 0;
  while (channels[index]["name"] != "channels") ++index;
  std::string key = "bad key structs.ncclComm.members[" + std::to_string(index) + "].dims";
  channels[index]["dims"] = {65536, 65536, 65536};
  BOOST_TEST(contains(rejection(document), key + ": too many elements"));
  channels[index]["dims"] = {uint64_t{1} << 33};
  BOOST_TEST(contains(rejection(document), key));
  channels[index]["dims"] = {63};  // 63 * 408 != 26112
  BOOST_TEST(contains(rejection(document), key + ": element_size times the dims"));
  channels[index]["dims"] = json::array();
  BOOST_TEST(contains(rejection(document), key));
}

BOOST_AUTO_TEST_CASE(member_outside_its_struct_or_unknown_kind) {
  json document = committed_json();
  document["structs"]["ncclRing"]["members"][0]["offset"] = 100;
  BOOST_TEST(contains(rejection(document), "past the struct size 24"));
  document = committed_json();
  document["structs"]["ncclRing"]["members"][0]["kind"] = "quaternion";
  BOOST_TEST(contains(rejection(document), "unknown kind \"quaternion\""));
  document = committed_json();
  document["structs"]["ncclRing"]["members"][0].erase("name");
  BOOST_TEST(contains(rejection(document), "bad key structs.ncclRing.members[0].name: missing"));
  document = committed_json();
  document["enums"]["ncclResult_t"]["values"][0] = json::array({"zero", "ncclSuccess"});
  BOOST_TEST(contains(rejection(document), "bad key enums.ncclResult_t.values[0]"));
}

BOOST_AUTO_TEST_CASE(random_corruption_never_crashes) {
  std::string text = committed_text();
  std::mt19937 random(12345);
  int accepted = 0, rejected = 0;
  for (int round = 0; round < 300; ++round) {
    std::string mutated = text;
    for (int flips = 0; flips < 4; ++flips)
      mutated[random() % mutated.size()] = static_cast<char>("0123456789-{}[]\",:x\xff"[random() % 21]);
    try {
      nsc::parse_layout_profile(mutated, "fuzz.json");
      ++accepted;
    } catch (const nsc::BadInput& error) {
      ++rejected;
      BOOST_TEST(std::string(error.what()).rfind("layout profile fuzz.json: ", 0) == 0u);
    }
  }
  BOOST_TEST_MESSAGE(accepted << " mutated profiles accepted, " << rejected << " rejected");
  BOOST_TEST(rejected > 100);
}
