// Profile search path, user cache, and the profile-or-DWARF choice of
// load_layout_for_library, on the layout_types_fixture binary (with and
// without its DWARF) and on the real libnccl 2.28.9 when present.
#define BOOST_TEST_MODULE layout_store
#include <boost/test/unit_test.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "layout/dwarf_layout.h"
#include "layout/elf_file.h"
#include "layout/layout_profile.h"
#include "layout/profile_store.h"
#include "util/errors.h"

namespace {

const char kRealLibrary[] = "/usr/local/cuda-13.0/lib/libnccl.so.2";
const char kRealBuildId[] = "9fcf74d93a8c3605bf7718f594d0a24366e38536";

std::string fixture_path() {
  return std::string(NCCLSCOPE_BINARY_DIR) + "/fixtures/layout_types_fixture";
}

// A fresh scratch directory per test, used as $XDG_CACHE_HOME and for files.
struct Scratch {
  std::string dir;
  Scratch() {
    char pattern[] = "/tmp/layout_store_test.XXXXXX";
    dir = mkdtemp(pattern);
    setenv("XDG_CACHE_HOME", (dir + "/cache").c_str(), 1);
    unsetenv("NCCLSCOPE_PROFILE_PATH");
    unsetenv("NCCLSCOPE_NO_PROFILE_CACHE");
  }
  ~Scratch() { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::string make_dir(const std::string& name) const {
    std::string path = dir + "/" + name;
    mkdir(path.c_str(), 0755);
    return path;
  }
  std::string cache_dir() const { return dir + "/cache/ncclscope/profiles"; }
};

nsc::LayoutProfile tiny_profile(const std::string& build_id) {
  nsc::LayoutProfile profile;
  profile.build_id = build_id;
  profile.nccl_version = "2.99.0";
  profile.library = "/x/libnccl.so.2";
  nsc::StructLayout layout;
  layout.name = "ncclRing";
  layout.size = 24;
  layout.members = {{"prev", 0, 4, nsc::ValueKind::kSigned, "int", 4, {}, 0, 0}};
  profile.structs["ncclRing"] = layout;
  profile.constants[nsc::kRootsFingerprintConstant] = nsc::required_roots_fingerprint();
  return profile;
}

bool file_exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Cases that strip the fixture with objcopy, or read the real library, are skipped
// (reported) where that is missing, never passed without running.
boost::test_tools::assertion_result objcopy_present(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(std::system("objcopy --version > /dev/null 2>&1") == 0);
  if (!result) result.message() << "objcopy unavailable";
  return result;
}

boost::test_tools::assertion_result real_library_present(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(access(kRealLibrary, R_OK) == 0);
  if (!result) result.message() << kRealLibrary << " absent";
  return result;
}

// The fixture without its DWARF (same build-id), at `path`.
void strip_fixture(const std::string& fixture, const std::string& path) {
  BOOST_REQUIRE(std::system(("objcopy --strip-debug '" + fixture + "' '" + path + "'").c_str()) == 0);
}

template <typename Body>
std::string bad_input_message(Body body) {
  try {
    body();
  } catch (const nsc::BadInput& error) {
    return error.what();
  }
  return "(no BadInput thrown)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(search_order) {
  Scratch scratch;
  setenv("NCCLSCOPE_PROFILE_PATH", "/env/one::/env/two", 1);
  std::vector<std::string> dirs = nsc::profile_search_dirs({"/caller", "/env/one"});
  BOOST_REQUIRE(dirs.size() >= 6u);
  BOOST_TEST(dirs[0] == "/caller");
  BOOST_TEST(dirs[1] == "/env/one");  // duplicates appear once, at their first place
  BOOST_TEST(dirs[2] == "/env/two");
  // Shipped profiles: beside the binaries first (the build copies them to share/), then the source.
  BOOST_TEST(dirs[3] == std::string(NCCLSCOPE_BINARY_DIR) + "/tests/../share/ncclscope/profiles");
  BOOST_TEST(dirs[4] == std::string(NCCLSCOPE_SOURCE_DIR) + "/native/profiles");
  BOOST_TEST(dirs.back() == scratch.cache_dir());
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/someone", 1);
  BOOST_TEST(nsc::user_profile_cache_dir() == "/home/someone/.cache/ncclscope/profiles");
}

BOOST_AUTO_TEST_CASE(build_ids_are_checked_before_use_as_file_names) {
  BOOST_TEST(nsc::is_valid_build_id(kRealBuildId));
  BOOST_TEST(!nsc::is_valid_build_id("../../etc/passwd"));
  BOOST_TEST(!nsc::is_valid_build_id("9FCF"));
  BOOST_TEST(!nsc::is_valid_build_id(""));
  BOOST_TEST(nsc::find_profile_files("../native/profiles/x", {"/"}).empty());
}

BOOST_AUTO_TEST_CASE(corrupt_or_foreign_profiles_are_skipped_with_a_note) {
  Scratch scratch;
  std::string first = scratch.make_dir("first"), second = scratch.make_dir("second"),
              third = scratch.make_dir("third");
  std::ofstream(first + "/abcd.json") << "{\"schema\":";                  // truncated
  nsc::write_layout_profile(tiny_profile("ef01"), second + "/abcd.json");  // another build
  nsc::write_layout_profile(tiny_profile("abcd"), third + "/abcd.json");
  std::vector<std::string> notes;
  auto profile = nsc::load_profile_by_build_id("abcd", {first, second, third}, &notes);
  BOOST_REQUIRE(profile.has_value());
  BOOST_TEST(profile->source == "profile:" + third + "/abcd.json");
  BOOST_REQUIRE(notes.size() == 2u);
  BOOST_TEST(contains(notes[0], first + "/abcd.json: not valid JSON"));
  BOOST_TEST(notes[1] == "skipped " + second + "/abcd.json: it is for build-id ef01");
  BOOST_TEST(!nsc::load_profile_by_build_id("abce", {first, second, third}, &notes).has_value());
}

BOOST_AUTO_TEST_CASE(save_to_cache_creates_the_directory) {
  Scratch scratch;
  std::string path = nsc::save_to_cache(tiny_profile("0123abcd"));
  BOOST_TEST(path == scratch.cache_dir() + "/0123abcd.json");
  BOOST_TEST(nsc::read_layout_profile(path).find_struct("ncclRing")->size == 24u);
  BOOST_CHECK_THROW(nsc::save_to_cache(tiny_profile("")), nsc::BadInput);
}

BOOST_AUTO_TEST_CASE(dwarf_then_cache_then_stripped_copy, *boost::unit_test::precondition(objcopy_present)) {
  Scratch scratch;
  std::string fixture = fixture_path();
  BOOST_REQUIRE_MESSAGE(file_exists(fixture), fixture << " (build the layout_types_fixture target)");
  std::string build_id = nsc::read_build_id(fixture).value_or("");
  BOOST_REQUIRE(nsc::is_valid_build_id(build_id));

  // No profile anywhere: DWARF, then cached under the build-id.
  std::string why;
  nsc::LayoutProfile first = nsc::load_layout_for_library(fixture, "", {}, &why);
  BOOST_TEST(first.source == "dwarf:" + fixture);
  std::string cached = scratch.cache_dir() + "/" + build_id + ".json";
  BOOST_TEST(why == "DWARF of " + fixture + "; cached as " + cached);
  BOOST_TEST(file_exists(cached));

  // Second time: the cached profile, no DWARF.
  nsc::LayoutProfile second = nsc::load_layout_for_library(fixture, build_id, {}, &why);
  BOOST_TEST(second.source == "profile:" + cached);
  BOOST_TEST(why == "profile " + cached);

  // A stripped copy of the same build decodes through the profile.
  std::string stripped = scratch.dir + "/stripped_fixture";
  strip_fixture(fixture, stripped);
  BOOST_TEST(!nsc::has_debug_info(stripped));
  BOOST_TEST(nsc::read_build_id(stripped).value_or("") == build_id);
  nsc::LayoutProfile from_profile = nsc::load_layout_for_library(stripped, "", {}, &why);
  BOOST_TEST(from_profile.source == "profile:" + cached);

  // Without the cache: one clear line naming the file, build-id and the remedy.
  std::remove(cached.c_str());
  std::string message =
      bad_input_message([&] { nsc::load_layout_for_library(stripped, "", {}, &why); });
  BOOST_TEST_MESSAGE(message);
  BOOST_TEST(contains(message, "layout " + stripped + ": no DWARF debug info (build-id " + build_id));
  BOOST_TEST(contains(message, "ncclscope layout extract LIB -o <build-id>.json"));
  BOOST_TEST(!contains(message, "\n"));
}

BOOST_AUTO_TEST_CASE(caller_and_environment_directories_come_first) {
  Scratch scratch;
  std::string fixture = fixture_path();
  BOOST_REQUIRE(file_exists(fixture));
  std::string build_id = nsc::read_build_id(fixture).value_or("");
  std::string caller = scratch.make_dir("caller"), env = scratch.make_dir("env");
  nsc::write_layout_profile(tiny_profile(build_id), env + "/" + build_id + ".json");
  setenv("NCCLSCOPE_PROFILE_PATH", env.c_str(), 1);
  std::string why;
  BOOST_TEST(nsc::load_layout_for_library(fixture, "", {caller}, &why).source ==
             "profile:" + env + "/" + build_id + ".json");
  nsc::write_layout_profile(tiny_profile(build_id), caller + "/" + build_id + ".json");
  BOOST_TEST(nsc::load_layout_for_library(fixture, "", {caller}, &why).source ==
             "profile:" + caller + "/" + build_id + ".json");
  // A profile is used even when no local copy of the library exists (core from elsewhere).
  BOOST_TEST(nsc::load_layout_for_library("", build_id, {caller}, &why).find_struct("ncclRing"));
  // Upper-case ids (as some tools print them) are accepted.
  std::string upper = build_id;
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  BOOST_TEST(nsc::load_layout_for_library("", upper, {caller}, &why).build_id == build_id);
}

// The fixture and, in a scratch directory, a profile for its build-id made for older layout roots.
struct OldRootsProfile {
  Scratch scratch;
  std::string fixture = fixture_path(), build_id, dir, path;
  OldRootsProfile() {
    setenv("NCCLSCOPE_NO_PROFILE_CACHE", "1", 1);
    BOOST_REQUIRE(file_exists(fixture));
    build_id = nsc::read_build_id(fixture).value_or("");
    dir = scratch.make_dir("old");
    nsc::LayoutProfile old = tiny_profile(build_id);
    old.constants[nsc::kRootsFingerprintConstant] = nsc::required_roots_fingerprint() ^ 1;
    path = dir + "/" + build_id + ".json";
    nsc::write_layout_profile(old, path);
  }
};

BOOST_FIXTURE_TEST_CASE(profile_made_for_older_roots_yields_to_dwarf, OldRootsProfile) {
  std::string why;
  nsc::LayoutProfile fresh = nsc::load_layout_for_library(fixture, "", {dir}, &why);
  BOOST_TEST(fresh.source == "dwarf:" + fixture);
  BOOST_TEST(why == "DWARF of " + fixture + "; re-extracted: " + path +
                        " was made for older layout roots");
  BOOST_TEST(fresh.constants.at(nsc::kRootsFingerprintConstant) == nsc::required_roots_fingerprint());
  // A current profile later in the search path beats the older one before it.
  std::string cached = nsc::save_to_cache(tiny_profile(build_id));
  BOOST_TEST(nsc::load_layout_for_library(fixture, "", {dir}, &why).source == "profile:" + cached);
  BOOST_TEST(why == "profile " + cached);
  std::remove(cached.c_str());
}

// Without DWARF a profile made for older layout roots is still the best there is.
BOOST_FIXTURE_TEST_CASE(profile_made_for_older_roots_is_kept_without_dwarf, OldRootsProfile,
                        *boost::unit_test::precondition(objcopy_present)) {
  std::string stripped = scratch.dir + "/stripped_fixture";
  strip_fixture(fixture, stripped);
  std::string why;
  nsc::LayoutProfile kept = nsc::load_layout_for_library(stripped, "", {dir}, &why);
  BOOST_TEST(kept.source == "profile:" + path);
  BOOST_TEST(why == "profile " + path + " (made for older layout roots)");
}

BOOST_AUTO_TEST_CASE(stripped_library_with_a_separate_debug_file, *boost::unit_test::precondition(objcopy_present)) {
  Scratch scratch;
  setenv("NCCLSCOPE_NO_PROFILE_CACHE", "1", 1);
  std::string fixture = fixture_path();
  BOOST_REQUIRE(file_exists(fixture));
  std::string build_id = nsc::read_build_id(fixture).value_or("");
  std::string stripped = scratch.dir + "/stripped_fixture";
  std::string debug_dir = scratch.make_dir("debug") + "/.build-id/" + build_id.substr(0, 2);
  std::string debug_file = debug_dir + "/" + build_id.substr(2) + ".debug";
  std::string commands = "mkdir -p '" + debug_dir + "' && objcopy --only-keep-debug '" + fixture +
                         "' '" + debug_file + "' && objcopy --strip-debug '" + fixture + "' '" +
                         stripped + "'";
  BOOST_REQUIRE(std::system(commands.c_str()) == 0);
  setenv("NCCLSCOPE_DEBUG_FILE_DIRECTORY", (scratch.dir + "/debug").c_str(), 1);
  std::string why;
  nsc::LayoutProfile profile = nsc::load_layout_for_library(stripped, "", {}, &why);
  BOOST_TEST(profile.source == "dwarf:" + debug_file);
  BOOST_TEST(profile.build_id == build_id);
  BOOST_TEST(profile.library == stripped);
  unsetenv("NCCLSCOPE_DEBUG_FILE_DIRECTORY");
  std::string message =
      bad_input_message([&] { nsc::load_layout_for_library(stripped, "", {}, &why); });
  BOOST_TEST(contains(message, "no separate debug file under /usr/lib/debug/.build-id"));
}

BOOST_AUTO_TEST_CASE(nothing_to_go_on) {
  Scratch scratch;
  std::string why;
  std::string message =
      bad_input_message([&] { nsc::load_layout_for_library("", "abcdef01", {}, &why); });
  BOOST_TEST(contains(message, "no layout profile for build-id abcdef01"));
  BOOST_TEST(contains(message, "no local copy of the library"));
  BOOST_TEST(contains(message, "ncclscope layout extract LIB -o <build-id>.json"));
}

BOOST_AUTO_TEST_CASE(mismatching_file_uses_its_own_dwarf_with_a_note) {
  Scratch scratch;
  setenv("NCCLSCOPE_NO_PROFILE_CACHE", "1", 1);
  std::string fixture = fixture_path();
  BOOST_REQUIRE(file_exists(fixture));
  std::string why;
  nsc::LayoutProfile profile = nsc::load_layout_for_library(fixture, "deadbeef", {}, &why);
  BOOST_TEST(profile.source == "dwarf:" + fixture);
  BOOST_TEST(contains(why, "differs from the target's deadbeef"));
  BOOST_TEST(!file_exists(scratch.cache_dir()));  // caching was disabled
}

BOOST_AUTO_TEST_CASE(real_library_uses_the_shipped_profile, *boost::unit_test::precondition(real_library_present)) {
  Scratch scratch;
  std::string why;
  auto start = std::chrono::steady_clock::now();
  nsc::LayoutProfile profile = nsc::load_layout_for_library(kRealLibrary, kRealBuildId, {}, &why);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The build's copy beside the binaries (share/ncclscope/profiles) comes before the source tree's.
  std::string shipped = nsc::installed_profile_dir() + "/" + kRealBuildId + ".json";
  BOOST_TEST(why == "profile " + shipped);
  BOOST_TEST(profile.find_struct("ncclComm")->size == 1082968u);
  BOOST_TEST_MESSAGE("profile load took " << seconds << " s");  // measured in bench/, never asserted
}
