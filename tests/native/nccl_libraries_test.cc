// Several libnccl in one process (issue 17 item 4): each library's communicators are found and
// decoded with that library's own layout, and each communicator names its library. Synthetic
// memory: two library images (ELF header + GNU build-id in memory, as a core keeps them), one
// heap, comms laid out by the shipped header profiles of NCCL 2.28.9 and 2.30.7.
#define BOOST_TEST_MODULE nccl_libraries
#include <boost/test/unit_test.hpp>

#include <elf.h>
#include <stdlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "layout/header_profile.h"
#include "layout/layout_profile.h"
#include "nccl/comm_scanner.h"
#include "nccl/object_view.h"
#include "snapshot/state_document.h"
#include "snapshot/state_text.h"
#include "support/synthetic.h"
#include "temp_dir.h"
#include "util/errors.h"

using nlohmann::json;
using nsc::LayoutProfile;
using nsc::test::SyntheticTarget;

namespace {

constexpr uint64_t kImageA = 0x7f0000000000;  // first mapped: /opt/a/libnccl.so.2
constexpr uint64_t kImageB = 0x7f0000100000;  // second: /opt/b/libnccl.so.2
constexpr uint64_t kImageSize = 0x2000;
constexpr uint64_t kHeap = 0x10000000;
constexpr uint64_t kCommA = 0x10000040;
constexpr uint64_t kCommB = 0x10200040;       // past a 2.28.9 comm (1,082,968 bytes) at kCommA
constexpr uint64_t kHeapSize = 0x400000;
constexpr uint64_t kAux = 0x40000000;         // abort flags and shared resources
const char kPathA[] = "/opt/a/libnccl.so.2";
const char kPathB[] = "/opt/b/libnccl.so.2";
const char kBuildIdA[] = "aa00000000000000000000000000000000000001";
const char kBuildIdB[] = "bb00000000000000000000000000000000000002";

LayoutProfile header_profile(const std::string& version) {
  return nsc::read_layout_profile(std::string(NCCLSCOPE_SOURCE_DIR) + "/native/profiles/" +
                                  nsc::header_profile_file_name(version));
}

std::vector<uint8_t> hex_bytes(const std::string& hex) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(std::stoi(hex.substr(i, 2), nullptr, 16));
  return bytes;
}

// A library image as a core keeps its first page: ELF header, PT_LOAD at 0, PT_NOTE with the build-id.
void add_library_image(SyntheticTarget& target, uint64_t base, const std::string& path, const std::string& build_id) {
  uint8_t* image = target.add_file_block(base, kImageSize, path);
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_phoff = sizeof header;
  header.e_phentsize = sizeof(Elf64_Phdr);
  header.e_phnum = 2;
  Elf64_Phdr phdrs[2]{};
  phdrs[0].p_type = PT_LOAD;
  phdrs[0].p_memsz = kImageSize;
  std::vector<uint8_t> id = hex_bytes(build_id);
  Elf64_Nhdr note{4, static_cast<Elf64_Word>(id.size()), NT_GNU_BUILD_ID};
  phdrs[1].p_type = PT_NOTE;
  phdrs[1].p_vaddr = 0x200;
  phdrs[1].p_memsz = sizeof note + 4 + id.size();
  std::memcpy(image, &header, sizeof header);
  std::memcpy(image + sizeof header, phdrs, sizeof phdrs);
  std::memcpy(image + 0x200, &note, sizeof note);
  std::memcpy(image + 0x200 + sizeof note, "GNU", 4);
  std::memcpy(image + 0x200 + sizeof note + 4, id.data(), id.size());
}

void put_field(SyntheticTarget& target, const LayoutProfile& layout, const std::string& type, uint64_t base,
               const std::string& path, uint64_t value) {
  std::string why;
  auto field = nsc::ObjectView::of(target, layout, type, base).resolve(path, &why);
  BOOST_REQUIRE_MESSAGE(field, layout.nccl_version << " " << type << "." << path << ": " << why);
  for (uint64_t byte = 0; byte < field->member->element_size; ++byte)
    target.put<uint8_t>(base + field->offset + byte, static_cast<uint8_t>(value >> (8 * byte)));
}

// A 2-rank communicator (rank `rank`), AllReduce launched `launched` times; `aux` is its own
// corner of the aux block (abort flag, shared resources).
void put_comm(SyntheticTarget& target, const LayoutProfile& layout, uint64_t address, uint64_t comm_hash,
              int rank, uint64_t launched, uint64_t aux) {
  auto put = [&](const std::string& path, uint64_t value) { put_field(target, layout, "ncclComm", address, path, value); };
  put("startMagic", nsc::kNcclMagic);
  put("endMagic", nsc::kNcclMagic);
  put("commHash", comm_hash);
  put("rank", rank);
  put("nRanks", 2);
  put("nChannels", 2);
  put("abortFlag", aux);
  put("sharedRes", aux + 0x100);
  put("seqNumber[4]", launched);  // AllReduce
  put("collOpCount", launched);
}

// The heap and aux blocks with the two library images mapped (comms are added by each test).
void add_process(SyntheticTarget& target) {
  add_library_image(target, kImageA, kPathA, kBuildIdA);
  add_library_image(target, kImageB, kPathB, kBuildIdB);
  target.add_block(kHeap, kHeapSize);
  target.add_block(kAux, 0x10000);
}

std::vector<nsc::LibraryForDiscovery> both_libraries(const SyntheticTarget& target, const LayoutProfile& a,
                                                     const LayoutProfile& b) {
  std::vector<nsc::LibraryForDiscovery> libraries(2);
  libraries[0].name = kPathA;
  libraries[0].layout = &a;
  libraries[1].name = kPathB;
  libraries[1].layout = &b;
  for (const nsc::MappedFile& file : target.mapped_files())
    libraries[file.path == kPathA ? 0 : 1].image.push_back(file);
  return libraries;
}

// Profiles for the two build-ids in a directory of their own; the document is built hermetically.
struct ProfileDir {
  TempDir dir{"ncclscope-libraries"};
  ProfileDir() {
    ::setenv("NCCLSCOPE_NO_SHIPPED_PROFILES", "1", 1);
    ::setenv("XDG_CACHE_HOME", dir.path.c_str(), 1);
  }
  void add(const std::string& build_id, LayoutProfile profile) const {
    profile.build_id = build_id;
    nsc::write_layout_profile(profile, dir.path + "/" + build_id + ".json");
  }
};

// Profiles by build-id for both stand-in libraries: A is 2.28.9, B is 2.30.7.
struct TwoLibraryProfiles {
  ProfileDir profiles;
  LayoutProfile a = header_profile("2.28.9"), b = header_profile("2.30.7");
  TwoLibraryProfiles() {
    profiles.add(kBuildIdA, a);
    profiles.add(kBuildIdB, b);
  }
};

json state_of(SyntheticTarget& target, const ProfileDir& profiles) {
  nsc::StateRequest request;
  request.target = &target;
  request.stacks = false;
  request.progress = false;
  request.profile_path = {profiles.dir.path};
  return nsc::build_state_document(request);
}

size_t count_kind(const json& problems, const std::string& kind) {
  size_t count = 0;
  for (const json& problem : problems) count += problem.value("kind", "") == kind;
  return count;
}

}  // namespace

// Discovery: one scan, each candidate to the library whose layout accepts it.
BOOST_AUTO_TEST_CASE(each_library_gets_the_comm_its_layout_accepts) {
  LayoutProfile a = header_profile("2.28.9"), b = header_profile("2.30.7");
  SyntheticTarget target;
  add_process(target);
  put_comm(target, a, kCommA, 0x1111, 0, 3, kAux);
  put_comm(target, b, kCommB, 0x2222, 1, 5, kAux + 0x1000);
  std::vector<nsc::Discovery> found = nsc::discover_communicators_of_libraries(target, both_libraries(target, a, b), {});
  BOOST_REQUIRE_EQUAL(found.size(), 2u);
  BOOST_TEST(found[0].addresses == std::vector<uint64_t>{kCommA});
  BOOST_TEST(found[1].addresses == std::vector<uint64_t>{kCommB});
  BOOST_TEST(found[0].method == "scan");
  BOOST_TEST(found[0].candidates == found[1].candidates);  // one scan, shared
  // The other library's comm and the endMagic echoes are not rejected candidates.
  BOOST_TEST(found[0].rejected.empty(), found[0].rejected.dump());
  BOOST_TEST(found[1].rejected.empty(), found[1].rejected.dump());
}

// The regression seen on the GPU machine: decoding with the first mapped library's layout
// (a preloaded one the program never used) found 0 communicators.
BOOST_AUTO_TEST_CASE(wrong_library_layout_finds_no_comm_the_right_one_does) {
  LayoutProfile a = header_profile("2.28.9"), b = header_profile("2.30.7");
  SyntheticTarget target;
  add_process(target);
  put_comm(target, b, kCommB, 0x2222, 1, 5, kAux);
  nsc::Discovery first_only = nsc::discover_communicators(target, a, {});
  BOOST_TEST(first_only.addresses.empty());  // what the first library alone gives
  std::vector<nsc::Discovery> found = nsc::discover_communicators_of_libraries(target, both_libraries(target, a, b), {});
  BOOST_TEST(found[0].addresses.empty());
  BOOST_TEST(found[0].rejected.empty(), found[0].rejected.dump());
  BOOST_TEST(found[1].addresses == std::vector<uint64_t>{kCommB});
}

// Two libraries of one layout size: the comm goes to the library its pointers point into;
// when nothing tells them apart, to the first, and the attribution says so.
BOOST_AUTO_TEST_CASE(equal_layouts_are_told_apart_by_pointers_into_the_image) {
  LayoutProfile a = header_profile("2.28.9"), b = header_profile("2.28.9");
  SyntheticTarget target;
  add_process(target);
  put_comm(target, a, kCommA, 0x1111, 0, 3, kAux);
  put_comm(target, a, kCommB, 0x2222, 1, 5, kAux + 0x1000);
  put_field(target, a, "ncclComm", kCommB, "ncclNet", kImageB + 0x800);  // a static ncclNet_t of B
  std::vector<nsc::Discovery> found = nsc::discover_communicators_of_libraries(target, both_libraries(target, a, b), {});
  BOOST_TEST(found[0].addresses == std::vector<uint64_t>{kCommA});
  BOOST_TEST(found[1].addresses == std::vector<uint64_t>{kCommB});
  BOOST_REQUIRE_EQUAL(found[0].attribution.size(), 1u);
  BOOST_TEST(found[0].attribution[0]["why"].get<std::string>().find("do not tell them apart") != std::string::npos);
  BOOST_REQUIRE_EQUAL(found[1].attribution.size(), 1u);
  BOOST_TEST(found[1].attribution[0]["why"].get<std::string>().find("1 into the image of /opt/b/libnccl.so.2") !=
             std::string::npos, found[1].attribution.dump());
}

// The state document: each communicator names its library, nccl.libraries lists both, the
// single-library fields describe the first library with communicators; the text shows both.
BOOST_AUTO_TEST_CASE(document_names_each_communicators_library) {
  TwoLibraryProfiles two;
  const ProfileDir& profiles = two.profiles;
  const LayoutProfile &a = two.a, &b = two.b;
  SyntheticTarget target;
  add_process(target);
  put_comm(target, a, kCommA, 0x1111, 0, 3, kAux);
  put_comm(target, b, kCommB, 0x2222, 1, 5, kAux + 0x1000);
  json document = state_of(target, profiles);
  BOOST_TEST(document["errors"].empty(), document["errors"].dump());
  const json& comms = document["communicators"];
  BOOST_REQUIRE_EQUAL(comms.size(), 2u);
  BOOST_TEST(comms[0]["comm_hash"] == "0x1111");
  BOOST_TEST(comms[0]["seq_launched"]["AllReduce"] == 3);
  BOOST_TEST(comms[0]["library"]["index"] == 0);
  BOOST_TEST(comms[0]["library"]["path"] == kPathA);
  BOOST_TEST(comms[0]["library"]["version"] == "2.28.9");
  BOOST_TEST(comms[0]["library"]["build_id"] == kBuildIdA);
  BOOST_TEST(comms[1]["comm_hash"] == "0x2222");
  BOOST_TEST(comms[1]["rank"] == 1);
  BOOST_TEST(comms[1]["seq_launched"]["AllReduce"] == 5);
  BOOST_TEST(comms[1]["library"]["index"] == 1);
  BOOST_TEST(comms[1]["library"]["version"] == "2.30.7");
  BOOST_TEST(comms[1]["library"]["layout_source"].get<std::string>().find(kBuildIdB) != std::string::npos);
  const json& libraries = document["nccl"]["libraries"];
  BOOST_REQUIRE_EQUAL(libraries.size(), 2u);
  BOOST_TEST(libraries[0]["communicators"] == 1);
  BOOST_TEST(libraries[1]["communicators"] == 1);
  BOOST_TEST(libraries[1]["library"] == kPathB);
  BOOST_TEST(libraries[1]["unavailable"].is_null());
  BOOST_TEST(document["nccl"]["library"] == kPathA);
  BOOST_TEST(document["nccl"]["version"] == "2.28.9");
  const json& discoveries = document["discovery"]["libraries"];  // each library's own
  BOOST_REQUIRE_EQUAL(discoveries.size(), 2u);
  BOOST_TEST(discoveries[1]["library"] == kPathB);
  BOOST_TEST(discoveries[1]["discovery"]["method"] == "scan");
  BOOST_TEST(discoveries[1]["discovery"]["rejected"].empty());
  BOOST_TEST(nsc::state_exit_code(document) == 0);
  std::string text = nsc::render_state_text(document);
  BOOST_TEST(text.find("libraries  2 libnccl mapped") != std::string::npos, text);
  BOOST_TEST(text.find("  lib 1    2.30.7  /opt/b/libnccl.so.2  build-id " + std::string(kBuildIdB) +
                       "  1 communicator(s)") != std::string::npos, text);
  BOOST_TEST(text.find("  library lib 1  NCCL 2.30.7  /opt/b/libnccl.so.2\n") != std::string::npos, text);
}

// A preloaded library nobody uses, mapped first: listed with 0 communicators, no error; the
// other library is the primary one.
BOOST_AUTO_TEST_CASE(document_unused_first_library_is_listed_with_zero) {
  TwoLibraryProfiles two;
  const ProfileDir& profiles = two.profiles;
  const LayoutProfile &a = two.a, &b = two.b;
  SyntheticTarget target;
  add_process(target);
  put_comm(target, b, kCommB, 0x2222, 1, 5, kAux);
  json document = state_of(target, profiles);
  BOOST_TEST(document["errors"].empty(), document["errors"].dump());
  BOOST_REQUIRE_EQUAL(document["communicators"].size(), 1u);
  BOOST_TEST(document["communicators"][0]["library"]["path"] == kPathB);
  BOOST_TEST(document["nccl"]["libraries"][0]["communicators"] == 0);
  BOOST_TEST(document["nccl"]["libraries"][0]["unavailable"].is_null());
  BOOST_TEST(document["nccl"]["version"] == "2.30.7");  // the primary: the one with communicators
  BOOST_TEST(document["nccl"]["library"] == kPathB);
  BOOST_TEST(nsc::state_exit_code(document) == 0);
}

// One library without any layout: a warning names it, its communicators are unavailable (an
// error says its candidates are most likely them, not corrupt ones), the other still decodes.
BOOST_AUTO_TEST_CASE(document_library_without_layout_is_unavailable_the_other_decodes) {
  ProfileDir profiles;
  LayoutProfile a = header_profile("2.28.9"), b = header_profile("2.30.7");
  profiles.add(kBuildIdA, a);  // none for B
  SyntheticTarget target;
  add_process(target);
  put_comm(target, a, kCommA, 0x1111, 0, 3, kAux);
  put_comm(target, b, kCommB, 0x2222, 1, 5, kAux + 0x1000);
  json document = state_of(target, profiles);
  BOOST_REQUIRE_EQUAL(document["communicators"].size(), 1u);
  BOOST_TEST(document["communicators"][0]["comm_hash"] == "0x1111");
  const json& b_entry = document["nccl"]["libraries"][1];
  BOOST_TEST(b_entry["communicators"].is_null());
  BOOST_TEST(b_entry["layout_source"].is_null());
  BOOST_TEST(b_entry["unavailable"].get<std::string>().find(kBuildIdB) != std::string::npos, b_entry.dump());
  BOOST_TEST(document["discovery"]["libraries"][1]["discovery"].is_null());  // nothing looked for
  bool warned = false;
  for (const json& warning : document["warnings"])
    warned |= warning["kind"] == "library" && warning["subject"] == kPathB;
  BOOST_TEST(warned, document["warnings"].dump());
  BOOST_TEST(count_kind(document["errors"], "discovery") == 0u, document["errors"].dump());
  BOOST_REQUIRE_EQUAL(count_kind(document["errors"], "library"), 1u);
  BOOST_TEST(document["errors"][0]["subject"] == kPathB);
  BOOST_TEST(document["errors"][0]["reason"].get<std::string>().find("1 communicator candidate(s)") == 0u);
  BOOST_TEST(nsc::state_exit_code(document) == 1);
  std::string text = nsc::render_state_text(document);
  BOOST_TEST(text.find("  lib 1    unavailable  /opt/b/libnccl.so.2") != std::string::npos, text);
}

// With no layout for the only library, bad input as before (one library: nothing to decode).
BOOST_AUTO_TEST_CASE(document_no_layout_at_all_is_bad_input) {
  ProfileDir profiles;
  SyntheticTarget target;
  add_library_image(target, kImageA, kPathA, kBuildIdA);
  target.add_block(kHeap, 0x1000);
  BOOST_CHECK_THROW(state_of(target, profiles), nsc::BadInput);
}

// One library: the document keeps its single-library shape, plus libraries[] of one, and the
// text has no library lines.
BOOST_AUTO_TEST_CASE(document_one_library_keeps_its_shape) {
  ProfileDir profiles;
  LayoutProfile a = header_profile("2.28.9");
  profiles.add(kBuildIdA, a);
  SyntheticTarget target;
  add_library_image(target, kImageA, kPathA, kBuildIdA);
  target.add_block(kHeap, kHeapSize);
  target.add_block(kAux, 0x10000);
  put_comm(target, a, kCommA, 0x1111, 0, 3, kAux);
  json document = state_of(target, profiles);
  BOOST_TEST(document["errors"].empty(), document["errors"].dump());
  BOOST_TEST(document["nccl"]["version"] == "2.28.9");
  BOOST_TEST(document["nccl"]["libraries"].size() == 1u);
  BOOST_TEST(document["discovery"]["method"] == "scan");
  BOOST_TEST(!document["discovery"].contains("libraries"));
  BOOST_REQUIRE_EQUAL(document["communicators"].size(), 1u);
  BOOST_TEST(document["communicators"][0]["library"]["index"] == 0);
  std::string text = nsc::render_state_text(document);
  BOOST_TEST(text.find("\nlibraries ") == std::string::npos, text);
  BOOST_TEST(text.find("  library lib") == std::string::npos, text);
}
