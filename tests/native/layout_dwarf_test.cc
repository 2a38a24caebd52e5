// DWARF layouts of the real libnccl 2.28.9 (or, when it is absent, the
// committed profile of that build). Every expected value below was read with
// gdb 13: gdb -nx --batch -ex 'set max-value-size unlimited' \
//   -ex 'ptype/o struct ncclComm' /usr/local/cuda-13.0/lib/libnccl.so.2
#define BOOST_TEST_MODULE layout_dwarf
#include <boost/test/unit_test.hpp>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "layout/dwarf_layout.h"
#include "layout/elf_file.h"
#include "layout/layout_profile.h"
#include "util/errors.h"

namespace nsc {
// Lets Boost.Test print ValueKind in failure messages.
std::ostream& operator<<(std::ostream& out, ValueKind kind) { return out << value_kind_name(kind); }
}  // namespace nsc

namespace {

const char kRealLibrary[] = "/usr/local/cuda-13.0/lib/libnccl.so.2";
const char kBuildId[] = "9fcf74d93a8c3605bf7718f594d0a24366e38536";

std::string committed_profile_path() {
  return std::string(NCCLSCOPE_SOURCE_DIR) + "/native/profiles/" + kBuildId + ".json";
}

bool real_library_present() { return access(kRealLibrary, R_OK) == 0; }

// Cases that need the real library are skipped (reported), never passed without running.
boost::test_tools::assertion_result real_library_available(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(real_library_present());
  if (!result) result.message() << kRealLibrary << " absent";
  return result;
}

// The layout under test: from DWARF when the library is here, else the committed profile.
const nsc::LayoutProfile& profile_2_28_9() {
  static const nsc::LayoutProfile profile = real_library_present()
                                                ? nsc::extract_layout_from_dwarf(kRealLibrary)
                                                : nsc::read_layout_profile(committed_profile_path());
  return profile;
}

const nsc::MemberLayout& member(const std::string& type, const std::string& name) {
  const nsc::StructLayout* layout = profile_2_28_9().find_struct(type);
  BOOST_REQUIRE_MESSAGE(layout != nullptr, "struct " << type);
  const nsc::MemberLayout* found = layout->find(name);
  BOOST_REQUIRE_MESSAGE(found != nullptr, type << "." << name);
  return *found;
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

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(identity_of_the_build) {
  BOOST_TEST_MESSAGE((real_library_present() ? "source: DWARF of " : "source: committed profile ")
                     << profile_2_28_9().source);
  BOOST_TEST(profile_2_28_9().build_id == kBuildId);
  BOOST_TEST(profile_2_28_9().nccl_version == "2.28.9");
  BOOST_TEST(profile_2_28_9().constants.at("MAXCHANNELS") == 64);
  BOOST_TEST(profile_2_28_9().constants.at("NCCL_VERSION_CODE") == 22809);
  // Stamped with the current roots (a stale committed profile fails here).
  BOOST_TEST(profile_2_28_9().constants.at(nsc::kRootsFingerprintConstant) ==
             nsc::required_roots_fingerprint());
}

BOOST_AUTO_TEST_CASE(ncclComm_members_match_gdb) {
  const nsc::StructLayout* comm = profile_2_28_9().find_struct("ncclComm");
  BOOST_REQUIRE(comm != nullptr);
  BOOST_TEST(comm->size == 1082968u);
  BOOST_TEST(!comm->is_union);

  const auto& start_magic = member("ncclComm", "startMagic");
  BOOST_TEST(start_magic.offset == 0u);
  BOOST_TEST(start_magic.size == 8u);
  BOOST_TEST(member("ncclComm", "endMagic").offset == 1082960u);

  const auto& rank = member("ncclComm", "rank");
  BOOST_TEST(rank.offset == 1066192u);
  BOOST_TEST(rank.size == 4u);
  BOOST_TEST(rank.kind == nsc::ValueKind::kSigned);
  BOOST_TEST(rank.type_name == "int");
  BOOST_TEST(member("ncclComm", "nRanks").offset == 1066196u);

  const auto& comm_hash = member("ncclComm", "commHash");
  BOOST_TEST(comm_hash.offset == 1066184u);
  BOOST_TEST(comm_hash.kind == nsc::ValueKind::kUnsigned);
  BOOST_TEST(comm_hash.size == 8u);

  const auto& seq_number = member("ncclComm", "seqNumber");
  BOOST_TEST(seq_number.offset == 1075728u);
  BOOST_TEST(seq_number.array_dims == std::vector<uint64_t>{5}, boost::test_tools::per_element());
  BOOST_TEST(seq_number.element_size == 8u);
  BOOST_TEST(seq_number.size == 40u);

  const auto& channels = member("ncclComm", "channels");
  BOOST_TEST(channels.offset == 160u);
  BOOST_TEST(channels.array_dims == std::vector<uint64_t>{64}, boost::test_tools::per_element());
  BOOST_TEST(channels.element_size == 408u);
  BOOST_TEST(channels.size == 26112u);
  BOOST_TEST(channels.kind == nsc::ValueKind::kStruct);
  BOOST_TEST(channels.type_name == "ncclChannel");

  const auto& async_result = member("ncclComm", "asyncResult");
  BOOST_TEST(async_result.offset == 1069044u);
  BOOST_TEST(async_result.kind == nsc::ValueKind::kEnum);
  BOOST_TEST(async_result.type_name == "ncclResult_t");

  const auto& abort_flag = member("ncclComm", "abortFlag");
  BOOST_TEST(abort_flag.offset == 1069048u);
  BOOST_TEST(abort_flag.kind == nsc::ValueKind::kPointer);
  BOOST_TEST(abort_flag.type_name == "unsigned int");  // uint32_t*, typedef resolved
  BOOST_TEST(abort_flag.size == 8u);

  const auto& shared_res = member("ncclComm", "sharedRes");
  BOOST_TEST(shared_res.offset == 136u);
  BOOST_TEST(shared_res.type_name == "ncclSharedResources");
  BOOST_TEST(member("ncclComm", "proxyState").offset == 1069312u);
  BOOST_TEST(member("ncclComm", "config").offset == 1075592u);
  BOOST_TEST(member("ncclComm", "config").size == 80u);
}

BOOST_AUTO_TEST_CASE(types_held_by_value_come_along) {
  // ncclComm.planner (by value) -> ncclKernelPlanner -> WipPlan -> Channel.
  BOOST_TEST(member("ncclComm", "planner").offset == 1069536u);
  BOOST_TEST(member("ncclComm", "planner").type_name == "ncclKernelPlanner");
  const auto& wip_channels = member("ncclKernelPlanner::WipPlan", "channels");
  BOOST_TEST(wip_channels.type_name == "ncclKernelPlanner::WipPlan::Channel");
  BOOST_TEST(wip_channels.array_dims == std::vector<uint64_t>{64}, boost::test_tools::per_element());
  BOOST_TEST(wip_channels.size == 5120u);
  // ncclChannel -> ncclRing (gdb: ptype/o struct ncclRing: prev 0, next 4, userRanks 8, index 16; 24).
  BOOST_TEST(profile_2_28_9().find_struct("ncclRing")->size == 24u);
  BOOST_TEST(member("ncclRing", "userRanks").offset == 8u);
  BOOST_TEST(member("ncclRing", "userRanks").kind == nsc::ValueKind::kPointer);
  BOOST_TEST(member("ncclRing", "index").offset == 16u);
  BOOST_TEST(member("ncclTree", "down").array_dims == std::vector<uint64_t>{3},
             boost::test_tools::per_element());
  BOOST_TEST(member("ncclTree", "down").offset == 8u);
  // Pointers are not followed unless the pointee is a root: ncclTopoSystem stays out.
  BOOST_TEST(member("ncclComm", "topo").type_name == "ncclTopoSystem");
  BOOST_TEST(profile_2_28_9().find_struct("ncclTopoSystem") == nullptr);
}

BOOST_AUTO_TEST_CASE(nested_typedef_and_anonymous_types) {
  // A nested root, named as gdb names it.
  const nsc::StructLayout* peer = profile_2_28_9().find_struct("ncclKernelPlanner::Peer");
  BOOST_REQUIRE(peer != nullptr);
  BOOST_TEST(peer->size == 40u);
  BOOST_TEST(member("ncclKernelPlanner", "peers").type_name == "ncclKernelPlanner::Peer");
  BOOST_TEST(member("ncclKernelPlanner", "peers").offset == 672u);
  // ncclConfig_t is a typedef: stored under it and under the struct's own tag.
  const nsc::StructLayout* config = profile_2_28_9().find_struct("ncclConfig_t");
  BOOST_REQUIRE(config != nullptr);
  BOOST_TEST(config->size == 80u);
  BOOST_TEST(config->find("magic")->offset == 8u);  // gdb: size_t size at 0, magic at 8
  BOOST_TEST(config->find("nvlinkCentricSched")->offset == 76u);
  BOOST_TEST(profile_2_28_9().find_struct("ncclConfig_v22800") != nullptr);
  // Bitfields: gdb prints "96: 0 int32_t nMaxChannels : 8" ... "100: 3 uint32_t devFuncId : 29".
  const auto& dev_func_id = member("ncclTaskColl", "devFuncId");
  BOOST_TEST(dev_func_id.offset == 100u);
  BOOST_TEST(dev_func_id.bit_offset == 3u);
  BOOST_TEST(dev_func_id.bit_size == 29u);
  const auto& n_warps = member("ncclTaskColl", "nWarps");
  BOOST_TEST(n_warps.offset * 8 + n_warps.bit_offset == 97u * 8);
  BOOST_TEST(n_warps.bit_size == 8u);
  // An anonymous union member flattens into its parent (ncclProxyOp.task.{coll,p2p} stays named).
  BOOST_TEST(member("ncclProxyOp", "task").kind == nsc::ValueKind::kUnion);
}

BOOST_AUTO_TEST_CASE(every_root_of_2_28_9_is_present) {
  // 2.28.9's host DWARF has every root except ncclDevCommAndChannels (device-only there) and
  // NCCL 2.21's planner, struct ncclTasks (gone since 2.22).
  for (const std::string& root : nsc::required_struct_names()) {
    if (root == "ncclDevCommAndChannels" || root.rfind("ncclTasks", 0) == 0) continue;
    BOOST_TEST(profile_2_28_9().find_struct(root) != nullptr, root);
  }
  BOOST_TEST(profile_2_28_9().find_struct("ncclTasks") == nullptr);
  BOOST_TEST(profile_2_28_9().find_struct("ncclDevCommAndChannels") == nullptr);
  for (const char* name : {"ncclResult_t", "ncclFunc_t", "ncclDataType_t", "ncclRedOp_t",
                           "ncclDevRedOp_t", "ncclPattern_t"})
    BOOST_TEST(profile_2_28_9().find_enum(name) != nullptr, name);
}

BOOST_AUTO_TEST_CASE(ncclResult_t_values) {
  const nsc::EnumLayout* result = profile_2_28_9().find_enum("ncclResult_t");
  BOOST_REQUIRE(result != nullptr);
  BOOST_TEST(result->size == 4u);
  const char* names[] = {"ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError",
                         "ncclInternalError",   "ncclInvalidArgument",    "ncclInvalidUsage",
                         "ncclRemoteError",     "ncclInProgress"};
  for (int64_t value = 0; value < 8; ++value)
    BOOST_TEST(result->name_of(value).value_or("?") == names[value]);
  BOOST_TEST(!result->name_of(99).has_value());
  // Aliases keep the first name; values above INT32_MAX keep their sign.
  BOOST_TEST(profile_2_28_9().find_enum("ncclDataType_t")->name_of(0).value_or("?") == "ncclInt8");
  BOOST_TEST(profile_2_28_9().find_enum("ncclRedOp_t")->name_of(0x7fffffff).value_or("?") ==
             "ncclMaxRedOp");
  BOOST_TEST(profile_2_28_9().find_enum("ncclFunc_t")->name_of(4).value_or("?") ==
             "ncclFuncAllReduce");
}

BOOST_AUTO_TEST_CASE(symbols_from_symtab) {
  // readelf -sW: ncclComms 0xb72dc48, nNcclComms 0xb72dc44, _ZL18ncclLastProxyState
  // 0xb705c40, ncclGroupDepth TLS 0x1044, ncclGroupError TLS 0x1040.
  const auto& symbols = profile_2_28_9().symbols;
  BOOST_TEST(symbols.at("ncclComms") == 0xb72dc48u);
  BOOST_TEST(symbols.at("nNcclComms") == 0xb72dc44u);
  BOOST_TEST(symbols.at("ncclLastProxyState") == 0xb705c40u);
  BOOST_TEST(symbols.at("ncclGroupDepth@tls") == 0x1044u);
  BOOST_TEST(symbols.at("ncclGroupError@tls") == 0x1040u);
  BOOST_TEST(symbols.at("ncclGroupCommHead@tls") == 0x1030u);
  BOOST_TEST(symbols.count("ncclGroupDepth") == 0u);  // a TLS offset is not an address
}

BOOST_AUTO_TEST_CASE(dwarf_equals_committed_profile, *boost::unit_test::precondition(real_library_available)) {
  nsc::LayoutProfile committed = nsc::read_layout_profile(committed_profile_path());
  nlohmann::json from_dwarf = nsc::layout_profile_to_json(profile_2_28_9());
  nlohmann::json from_file = nsc::layout_profile_to_json(committed);
  from_dwarf.erase("library");
  from_file.erase("library");
  BOOST_TEST((from_dwarf == from_file));
  BOOST_TEST(committed.source == "profile:" + committed_profile_path());
}

// Its speed against gdb is measured by bench/ (docs/bench-layout.md), never asserted here: a
// loaded CI machine must not fail a test on wall time.
BOOST_AUTO_TEST_CASE(extraction_of_the_whole_real_library, *boost::unit_test::precondition(real_library_available)) {
  auto start = std::chrono::steady_clock::now();
  nsc::LayoutProfile profile = nsc::extract_layout_from_dwarf(kRealLibrary);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_MESSAGE("extraction took " << seconds << " s");
  BOOST_TEST(profile.structs.size() == profile_2_28_9().structs.size());
}

BOOST_AUTO_TEST_CASE(elf_helpers_on_the_real_library, *boost::unit_test::precondition(real_library_available)) {
  BOOST_TEST(nsc::read_build_id(kRealLibrary).value_or("") == kBuildId);
  BOOST_TEST(nsc::nccl_version_string(kRealLibrary).value_or("") == "2.28.9+cuda13.0");
  BOOST_TEST(nsc::has_debug_info(kRealLibrary));
  auto symbols = nsc::read_symbols(kRealLibrary, {"ncclComms", "ncclGroupDepth", "noSuchThing"});
  BOOST_TEST(symbols.at("ncclComms").size == 8u);
  BOOST_TEST(symbols.at("ncclGroupDepth").is_tls);
  BOOST_TEST(symbols.count("noSuchThing") == 0u);
}

BOOST_AUTO_TEST_CASE(elf_helpers) {
  BOOST_TEST(!nsc::has_debug_info("/bin/true"));
  BOOST_TEST(!nsc::read_build_id("/nonexistent/libnccl.so.2").has_value());
  BOOST_TEST(nsc::nccl_version_number("2.28.9+cuda13.0") == "2.28.9");
  BOOST_TEST(nsc::nccl_version_number("2.21.5") == "2.21.5");
}

BOOST_AUTO_TEST_CASE(library_without_dwarf_gives_one_clear_line) {
  std::string message = bad_input_message([] { nsc::extract_layout_from_dwarf("/bin/true"); });
  BOOST_TEST_MESSAGE(message);
  BOOST_TEST(contains(message, "/bin/true"));
  BOOST_TEST(contains(message, "no DWARF"));
  std::string build_id = nsc::read_build_id("/bin/true").value_or("none");
  BOOST_TEST(contains(message, "build-id " + build_id));
  BOOST_TEST(contains(message, "NCCL unknown"));
  BOOST_TEST(contains(message, "ncclscope layout extract LIB -o"));
  BOOST_TEST(!contains(message, "\n"));
}

BOOST_AUTO_TEST_CASE(unreadable_or_non_elf_inputs) {
  std::string missing = bad_input_message([] { nsc::extract_layout_from_dwarf("/nonexistent/x.so"); });
  BOOST_TEST(contains(missing, "/nonexistent/x.so"));
  BOOST_TEST(contains(missing, "No such file"));
  std::string text_file = std::string(NCCLSCOPE_BINARY_DIR) + "/layout_dwarf_test_not_elf.txt";
  std::ofstream(text_file) << "not an ELF file at all\n";
  std::string not_elf = bad_input_message([&] { nsc::extract_layout_from_dwarf(text_file); });
  BOOST_TEST(contains(not_elf, text_file + ": not an ELF file"));
  std::remove(text_file.c_str());
}
