// `ncclscope layout ...` end to end: runs the built CLI binary.
#define BOOST_TEST_MODULE layout_command
#include <boost/test/unit_test.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "layout/layout_profile.h"

namespace {

const char kRealLibrary[] = "/usr/local/cuda-13.0/lib/libnccl.so.2";

// Skipped (reported) where the real library is absent, never passed without running.
boost::test_tools::assertion_result real_library_present(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(access(kRealLibrary, R_OK) == 0);
  if (!result) result.message() << kRealLibrary << " absent";
  return result;
}

const char kBuildId[] = "9fcf74d93a8c3605bf7718f594d0a24366e38536";

std::string committed_profile() {
  return std::string(NCCLSCOPE_SOURCE_DIR) + "/native/profiles/" + kBuildId + ".json";
}

std::string scratch(const std::string& name) {
  return std::string(NCCLSCOPE_BINARY_DIR) + "/layout_command_test_" + name;
}

std::string read_all(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

struct Run {
  int status = -1;
  std::string out, err;
};

// Runs `ncclscope layout ARGS` with a private cache directory.
Run layout(const std::string& args) {
  std::string binary = std::string(NCCLSCOPE_BINARY_DIR) + "/bin/ncclscope";
  BOOST_REQUIRE_MESSAGE(access(binary.c_str(), X_OK) == 0, binary << " (build ncclscope_cli)");
  std::string out = scratch("stdout"), err = scratch("stderr");
  std::string command = "XDG_CACHE_HOME='" + scratch("cache") + "' NCCLSCOPE_PROFILE_PATH= " +
                        binary + " layout " + args + " >'" + out + "' 2>'" + err + "'";
  int raw = std::system(command.c_str());
  Run run;
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  run.out = read_all(out);
  run.err = read_all(err);
  return run;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t line_count(const std::string& text) {
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

}  // namespace

BOOST_AUTO_TEST_CASE(usage_errors_exit_64) {
  Run none = layout("");
  BOOST_TEST(none.status == 64);
  BOOST_TEST(contains(none.err, "ncclscope layout: missing subcommand"));
  BOOST_TEST(contains(none.err, "usage: ncclscope layout extract LIB -o FILE.json"));
  BOOST_TEST(layout("frobnicate").status == 64);
  BOOST_TEST(layout("extract").status == 64);
  BOOST_TEST(contains(layout("extract /bin/true").err, "extract needs -o FILE.json"));
  BOOST_TEST(layout("show").status == 64);
  BOOST_TEST(layout("show a b c d").status == 64);
  BOOST_TEST(layout("extract --bogus x").status == 64);
  Run help = layout("--help");
  BOOST_TEST(help.status == 0);
  BOOST_TEST(contains(help.out, "ptype/o-like table"));
}

BOOST_AUTO_TEST_CASE(bad_input_exits_2_with_one_line) {
  Run no_dwarf = layout("extract /bin/true -o " + scratch("never.json"));
  BOOST_TEST(no_dwarf.status == 2);
  BOOST_TEST(line_count(no_dwarf.err) == 1u);
  BOOST_TEST(contains(no_dwarf.err, "ncclscope layout: layout /bin/true: no DWARF debug info"));
  BOOST_TEST(access(scratch("never.json").c_str(), F_OK) != 0);

  std::ofstream(scratch("corrupt.json")) << "{\"schema\":\"ncclscope.layout/1\",\"build_id\":7}";
  Run corrupt = layout("show " + scratch("corrupt.json"));
  BOOST_TEST(corrupt.status == 2);
  BOOST_TEST(corrupt.err == "ncclscope layout: layout profile " + scratch("corrupt.json") +
                                ": bad key build_id: expected a string\n");

  Run missing_type = layout("show " + committed_profile() + " ncclNoSuchStruct");
  BOOST_TEST(missing_type.status == 2);
  BOOST_TEST(contains(missing_type.err, "no struct or enum named ncclNoSuchStruct"));

  Run missing_file = layout("show /nonexistent/p.json");
  BOOST_TEST(missing_file.status == 2);
}

BOOST_AUTO_TEST_CASE(show_struct_as_ptype_table) {
  Run run = layout("show " + committed_profile() + " ncclComm");
  BOOST_TEST(run.status == 0);
  // Same columns as gdb's ptype/o for the members this level shows.
  BOOST_TEST(contains(run.out, "/* offset      |    size */  type = struct ncclComm {\n"));
  BOOST_TEST(contains(run.out, "/* 1066192      |       4 */    int rank;\n"));
  BOOST_TEST(contains(run.out, "/*    160      |   26112 */    struct ncclChannel channels[64];\n"));
  BOOST_TEST(contains(run.out, "/* 1075728      |      40 */    long unsigned int seqNumber[5];\n"));
  BOOST_TEST(contains(run.out, "/* 1069048      |       8 */    unsigned int *abortFlag;\n"));
  BOOST_TEST(contains(run.out, "/* 1069044      |       4 */    enum ncclResult_t asyncResult;\n"));
  BOOST_TEST(contains(run.out, "/* total size (bytes): 1082968 */"));

  Run bits = layout("show " + committed_profile() + " ncclTaskColl");
  BOOST_TEST(contains(bits.out, "/*  100:3      |       4 */    unsigned int devFuncId : 29;\n"));

  Run result = layout("show " + committed_profile() + " ncclResult_t");
  BOOST_TEST(result.status == 0);
  BOOST_TEST(contains(result.out, "enum ncclResult_t (4 bytes) {\n"));
  BOOST_TEST(contains(result.out, "         7  ncclInProgress\n"));

  Run as_json = layout("show " + committed_profile() + " ncclRing --json");
  nlohmann::json ring = nlohmann::json::parse(as_json.out);
  BOOST_TEST(ring["size"] == 24);
  BOOST_TEST(ring["members"][2]["name"] == "userRanks");
  BOOST_TEST(ring["members"][2]["kind"] == "pointer");
}

BOOST_AUTO_TEST_CASE(show_summary) {
  Run run = layout("show " + committed_profile());
  BOOST_TEST(run.status == 0);
  BOOST_TEST(contains(run.out, "  build-id      " + std::string(kBuildId) + "\n"));
  BOOST_TEST(contains(run.out, "  nccl version  2.28.9\n"));
  BOOST_TEST(contains(run.out, "     1082968  ncclComm (158 members)\n"));
  BOOST_TEST(contains(run.out, "  ncclComms                        0xb72dc48\n"));
}

BOOST_AUTO_TEST_CASE(extract_real_library, *boost::unit_test::precondition(real_library_present)) {
  std::string output = scratch("extracted.json");
  Run run = layout(std::string("extract ") + kRealLibrary + " -o " + output);
  BOOST_TEST(run.status == 0);
  BOOST_TEST(contains(run.err, "ncclscope layout: wrote " + output));
  BOOST_TEST(contains(run.err, "NCCL 2.28.9, build-id " + std::string(kBuildId)));
  // What the CLI writes is byte for byte the committed profile.
  BOOST_TEST(read_all(output) == read_all(committed_profile()));

  // show LIB uses the shipped profile of its build-id; --dwarf reads the DWARF.
  Run from_library = layout(std::string("show ") + kRealLibrary);
  // The build's own copy of the shipped profiles comes first (share/ncclscope/profiles).
  BOOST_TEST(contains(from_library.out, "  source        profile:"));
  BOOST_TEST(contains(from_library.out, std::string("/profiles/") + kBuildId + ".json"));
  Run forced = layout(std::string("show ") + kRealLibrary + " ncclRing --dwarf");
  BOOST_TEST(contains(forced.out, "/*      8      |       8 */    int *userRanks;\n"));
  // A type no decoder needs comes from the DWARF on demand (gdb: struct ncclTopoNode).
  Run on_demand = layout(std::string("show ") + kRealLibrary + " ncclTopoNode");
  BOOST_TEST(on_demand.status == 0);
  BOOST_TEST(contains(on_demand.out, "type = struct ncclTopoNode {"));
}
