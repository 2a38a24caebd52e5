// Decoders on synthetic memory laid out by each committed header-built profile
// (native/profiles/nccl-X.Y.Z.headers.json, one per NCCL version PyTorch ships): the same
// communicator written with each version's offsets decodes to the same values, and the fields a
// version does not have are "unavailable: not in NCCL X" rather than 0.
#define BOOST_TEST_MODULE decoder_versions
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>


#include "layout/header_profile.h"
#include "layout/layout_profile.h"
#include "nccl/comm_decoder.h"
#include "nccl/comm_scanner.h"
#include "nccl/object_view.h"
#include "support/synthetic.h"

using nlohmann::json;
using nsc::LayoutProfile;
using nsc::test::SyntheticTarget;

namespace {

constexpr uint64_t kHeap = 0x10000000;
constexpr uint64_t kComm = 0x10000040;       // 16-aligned, inside the heap block
constexpr uint64_t kAbortFlag = 0x40000000;  // "cudaHostAlloc" memory
constexpr uint64_t kName = 0x40000100;
constexpr uint64_t kTask = 0x40001000;       // one queued AllReduce
constexpr uint64_t kShared = 0x40002000;     // ncclSharedResources (collOpCount: NCCL 2.23 and older)
constexpr int kAllReduce = 4;                // ncclFunc_t: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce

bool file_exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

std::string profile_path(const std::string& version) {
  return std::string(NCCLSCOPE_SOURCE_DIR) + "/native/profiles/" + nsc::header_profile_file_name(version);
}

// Writes `value` into the field at `path` of the `type` struct at `base`, with the field's size.
void put_field(SyntheticTarget& target, const LayoutProfile& layout, const std::string& type, uint64_t base,
               const std::string& path, uint64_t value) {
  nsc::ObjectView view = nsc::ObjectView::of(target, layout, type, base);
  std::string why;
  auto field = view.resolve(path, &why);
  BOOST_REQUIRE_MESSAGE(field, layout.nccl_version << " " << type << "." << path << ": " << why);
  uint64_t size = field->member->element_size;
  BOOST_REQUIRE(size == 1 || size == 2 || size == 4 || size == 8);
  for (uint64_t byte = 0; byte < size; ++byte)
    target.put<uint8_t>(base + field->offset + byte, static_cast<uint8_t>(value >> (8 * byte)));
}

bool has_field(const LayoutProfile& layout, const std::string& type, const std::string& path) {
  SyntheticTarget none;
  return nsc::ObjectView::of(none, layout, type, 0).has(path);
}

// One 2-rank communicator, rank 1, AllReduce launched 7 times, one AllReduce queued in the
// planner (ncclKernelPlanner or 2.21's ncclTasks), named "tp0" where the version has a name.
void fill_comm(SyntheticTarget& target, const LayoutProfile& layout) {
  const nsc::StructLayout* comm = layout.find_struct("ncclComm");
  target.add_block(kHeap, comm->size + 0x100);
  target.add_block(kAbortFlag, 0x3000);
  auto put = [&](const std::string& path, uint64_t value) { put_field(target, layout, "ncclComm", kComm, path, value); };
  if (has_field(layout, "ncclComm", "startMagic")) {  // NCCL 2.21+
    put("startMagic", nsc::kNcclMagic);
    put("endMagic", nsc::kNcclMagic);
  }
  put("commHash", 0x2879453b282e94f9ull);
  put("rank", 1);
  put("nRanks", 2);
  put("cudaDev", 0);
  put("nChannels", 2);
  put("sharedRes", kShared);
  put_field(target, layout, "ncclSharedResources", kShared, "refCount", 1);  // as commAlloc sets them
  put_field(target, layout, "ncclSharedResources", kShared, "owner", kComm);
  if (has_field(layout, "ncclComm", "collOpCount")) put("collOpCount", 7);
  else put_field(target, layout, "ncclSharedResources", kShared, "collOpCount", 7);  // NCCL <= 2.23
  put("abortFlag", kAbortFlag);
  if (has_field(layout, "ncclComm", "seqNumber")) put("seqNumber[" + std::to_string(kAllReduce) + "]", 7);
  const char* name_field = has_field(layout, "ncclComm", "config.commName") ? "config.commName"
                           : has_field(layout, "ncclComm", "commName")      ? "commName"
                                                                            : nullptr;
  if (name_field != nullptr) {
    put(name_field, kName);
    for (size_t i = 0; i < 4; ++i) target.put<char>(kName + i, "tp0"[i]);
  }
  bool planner = has_field(layout, "ncclComm", "planner");
  std::string tasks = planner ? "planner." : "tasks.";
  put(tasks + "nTasksColl", 1);
  put(tasks + "nTasksP2p", 0);
  const char* queue = planner ? (has_field(layout, "ncclComm", "planner.collTaskQueue.head")
                                     ? "collTaskQueue.head" : "collSorter.head")
                              : "collQueue.head";
  put(tasks + queue, kTask);
  std::string task_type = !planner && has_field(layout, "ncclInfo", "next") ? "ncclInfo" : "ncclTaskColl";
  put_field(target, layout, task_type, kTask, task_type == "ncclInfo" ? "coll" : "func", kAllReduce);
  put_field(target, layout, task_type, kTask, "count", 1024);
}

struct Version {
  const char* number;
  int64_t max_channels;
  bool has_seq_number, has_planner, has_name, has_bcast_count;
};

// What each tag's src/include/comm.h, device.h and nccl.h.in say (checked by hand there).
const Version kVersions[] = {
    {"2.18.6", 32, false, false, false, false},  // no NCCL_MAGIC: found by sharedRes->owner
    {"2.20.5", 32, false, false, false, false},
    {"2.21.5", 32, false, false, false, false},
    {"2.26.2", 64, true, true, true, false},
    {"2.27.7", 64, true, true, true, false},
    {"2.28.3", 64, true, true, true, false},
    {"2.28.9", 64, true, true, true, false},
    {"2.29.7", 64, true, true, true, true},
    {"2.30.7", 64, true, true, true, true},
};

void check_version(const Version& version) {
  std::string path = profile_path(version.number);
  BOOST_TEST_CONTEXT("NCCL " << version.number) {
    BOOST_REQUIRE_MESSAGE(file_exists(path), "missing " << path);
    LayoutProfile layout = nsc::read_layout_profile(path);
    BOOST_TEST(nsc::is_header_profile(layout));
    BOOST_TEST(layout.nccl_version == version.number);
    BOOST_TEST(layout.constants.at("MAXCHANNELS") == version.max_channels);

    SyntheticTarget target;
    fill_comm(target, layout);
    nsc::Discovery discovery = nsc::discover_communicators(target, layout, {});
    BOOST_TEST(discovery.method == "scan");
    BOOST_REQUIRE(discovery.addresses.size() == 1u);
    BOOST_TEST(discovery.addresses[0] == kComm);
    BOOST_TEST(discovery.scan_anchor == (has_field(layout, "ncclComm", "startMagic") ? "startMagic" : "sharedRes->owner"));

    json errors = json::array();
    json comm = nsc::decode_communicator(target, layout, kComm, &errors);
    BOOST_TEST(comm["rank"] == 1);
    BOOST_TEST(comm["nranks"] == 2);
    BOOST_TEST(comm["comm_hash"] == "0x2879453b282e94f9");
    BOOST_TEST(comm["coll_op_count"] == 7);
    BOOST_TEST(comm["health"]["abort_flag"] == false);
    const json& unavailable = comm["unavailable"];
    std::string not_here = std::string("not in NCCL ") + version.number;
    if (version.has_seq_number) {
      BOOST_TEST(comm["seq_launched"]["AllReduce"] == 7);
    } else {
      BOOST_TEST(unavailable["seq_launched"].get<std::string>().rfind(not_here, 0) == 0);
    }
    if (version.has_name) {
      BOOST_TEST(comm["comm_name"] == "tp0");
    } else {
      BOOST_TEST(comm["comm_name"].is_null());
      BOOST_TEST(unavailable["comm_name"].get<std::string>().rfind(not_here, 0) == 0);
    }
    const json& planned = comm["planned"];
    BOOST_TEST(planned["planner_type"] == (version.has_planner ? "ncclKernelPlanner" : "ncclTasks"));
    BOOST_TEST(planned["n_tasks_coll"] == 1);
    BOOST_REQUIRE(planned["colls"].size() == 1u);
    BOOST_TEST(planned["colls"][0]["collective"] == "AllReduce");
    BOOST_TEST(planned["colls"][0]["count"] == 1024);
    if (version.has_bcast_count) {
      BOOST_TEST(planned["n_tasks_bcast"] == 0);
    } else {
      BOOST_TEST(planned["n_tasks_bcast"].is_null());
      BOOST_TEST(unavailable["planned.n_tasks_bcast"].get<std::string>().rfind(not_here, 0) == 0);
    }
    BOOST_TEST(errors.empty(), errors.dump());
    BOOST_TEST(comm["warnings"].empty(), comm["warnings"].dump());
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_shipped_version_decodes_by_name) {
  for (const Version& version : kVersions) check_version(version);
}

// A header profile is checked against the target by size: a comm whose endMagic is not where
// the profile puts it is rejected with both sizes (the CLI then refuses the profile).
BOOST_AUTO_TEST_CASE(header_profile_size_mismatch_names_both_sizes) {
  LayoutProfile layout = nsc::read_layout_profile(profile_path("2.29.7"));
  SyntheticTarget target;
  fill_comm(target, layout);
  const nsc::StructLayout* comm = layout.find_struct("ncclComm");
  uint64_t end_offset = comm->find("endMagic")->offset;
  target.put<uint64_t>(kComm + end_offset, 0);        // not where the profile says ...
  target.put<uint64_t>(kComm + end_offset - 16, nsc::kNcclMagic);  // ... 16 bytes earlier
  std::string why = nsc::check_comm_candidate(target, layout, kComm);
  BOOST_TEST(why.find("sizeof check failed") == 0u, why);
  BOOST_TEST(why.find("sizeof(ncclComm) = " + std::to_string(comm->size)) != std::string::npos, why);
  BOOST_TEST(why.find("sizeof(ncclComm) = " + std::to_string(comm->size - 16) + ")") != std::string::npos, why);
}

// NCCL 2.18-2.20 (no NCCL_MAGIC): comms are found by their ncclSharedResources, whose owner
// points back; a split comm sharing its parent's resources (splitShare) too; a sharedRes whose
// owner does not point back, or whose refCount is not a count, is no comm.
BOOST_AUTO_TEST_CASE(before_nccl_magic_comms_are_found_by_shared_resources_owner) {
  LayoutProfile layout = nsc::read_layout_profile(profile_path("2.20.5"));
  SyntheticTarget target;
  fill_comm(target, layout);
  const nsc::StructLayout* comm_type = layout.find_struct("ncclComm");
  const uint64_t child = 0x20000000, decoy = 0x30000000, decoy_shared = 0x30008000;
  for (uint64_t base : {child, decoy}) {
    target.add_block(base, comm_type->size + 0x100);
    put_field(target, layout, "ncclComm", base, "rank", 0);
    put_field(target, layout, "ncclComm", base, "nRanks", 2);
  }
  put_field(target, layout, "ncclComm", child, "sharedRes", kShared);  // split with splitShare
  put_field(target, layout, "ncclSharedResources", kShared, "refCount", 2);
  target.add_block(decoy_shared, 0x1000);  // owner -> decoy, but decoy->sharedRes is elsewhere
  put_field(target, layout, "ncclSharedResources", decoy_shared, "refCount", 1);
  put_field(target, layout, "ncclSharedResources", decoy_shared, "owner", decoy);
  put_field(target, layout, "ncclComm", decoy, "sharedRes", kShared + 0x100);
  nsc::Discovery discovery = nsc::discover_communicators(target, layout, {});
  BOOST_TEST(discovery.scan_anchor == "sharedRes->owner");
  BOOST_TEST(discovery.addresses == (std::vector<uint64_t>{kComm, child}), discovery.rejected.dump());

  put_field(target, layout, "ncclSharedResources", kShared, "refCount", 0);  // not a live count
  discovery = nsc::discover_communicators(target, layout, {});
  BOOST_TEST(discovery.addresses.empty());
  BOOST_TEST(nsc::check_comm_candidate(target, layout, kComm) == "sharedRes->refCount is 0");
}
