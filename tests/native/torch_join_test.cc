// The process group -> communicator join on real inputs: 27 rank processes of 5 PyTorch 2.11
// scenarios captured on the GPU machine (run5: TP2xDP2, PP4xDP2; tests/data/torch_join/run5.json
// holds each rank's pg_config and entries from PyTorch's own dump, its decoded communicators and
// launcher rank, and the ground truth: each group's ncclComm* as the job itself printed it).
// A unique match must be the true communicator; what stays open must be "ambiguous" or "none".
#define BOOST_TEST_MODULE torch_join
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <map>

#include "torch/pg_join.h"

namespace {

nlohmann::json load_cases() {
  std::ifstream in(std::string(NCCLSCOPE_TEST_DATA) + "/torch_join/run5.json");
  BOOST_REQUIRE_MESSAGE(in, "tests/data/torch_join/run5.json missing");
  return nlohmann::json::parse(in);
}

nsc::FlightRecorderState recorder_of(const nlohmann::json& rank) {
  nsc::FlightRecorderState state;
  for (const auto& group : rank["pg_config"])
    state.process_groups.push_back({group["name"], group["desc"], group["ranks"].get<std::vector<uint64_t>>()});
  for (const auto& item : rank["entries"]) {
    nsc::RecorderEntry entry;
    entry.pg_id = item["pg_id"];
    entry.pg_name = item["process_group"][0];
    entry.pg_desc = item["process_group"][1];
    entry.collective_seq_id = item["collective_seq_id"];
    entry.is_p2p = item["is_p2p"];
    state.entries.push_back(entry);
  }
  return state;
}

}  // namespace

BOOST_AUTO_TEST_CASE(unique_matches_are_the_true_communicators) {
  nlohmann::json cases = load_cases();
  BOOST_REQUIRE(cases.size() == 27u);
  int unique = 0, ambiguous = 0, none = 0, wrong = 0, true_missed = 0;
  for (const auto& [name, rank] : cases.items()) {
    nsc::FlightRecorderState state = recorder_of(rank);
    nlohmann::json groups = nsc::join_process_groups(state, rank["communicators"], rank["launcher_rank"].get<int64_t>());
    for (const auto& group : groups) {
      std::string truth;
      for (const auto& known : rank["truth"])
        if (known["desc"] == group["desc"] && known["ranks"] == group["ranks"] && known["address"].is_string())
          truth = known["address"];
      std::string match = group["match"];
      if (match == "unique") {
        ++unique;
        if (group["communicator"] != truth) {
          ++wrong;
          BOOST_ERROR(name + " pg " + group["desc"].get<std::string>() + ": joined " + group["communicator"].dump() +
                      ", truth " + truth);
        }
      } else if (match == "ambiguous") {
        ++ambiguous;
        bool listed = false;
        for (const auto& candidate : group["candidates"]) listed = listed || candidate == truth;
        if (!truth.empty() && !listed) ++true_missed;
      } else if (match == "none") {
        ++none;
      }
    }
  }
  BOOST_TEST_MESSAGE("run5 join: " << unique << " unique, " << ambiguous << " ambiguous, " << none << " none");
  BOOST_TEST(wrong == 0);
  BOOST_TEST(true_missed == 0);  // an ambiguous answer still names the true communicator
  BOOST_TEST(unique > 0);
}

// Across the ranks of each scenario, comm_hash settles what one process could not.
BOOST_AUTO_TEST_CASE(ranks_together_settle_the_ambiguous) {
  nlohmann::json cases = load_cases();
  std::map<std::string, std::vector<nlohmann::json>> jobs;
  std::map<std::string, std::vector<nlohmann::json>> truths;
  for (const auto& [name, rank] : cases.items()) {
    nsc::FlightRecorderState state = recorder_of(rank);
    nlohmann::json document = {{"communicators", rank["communicators"]}, {"torch", nlohmann::json::object()}};
    document["torch"]["process_groups"] =
        nsc::join_process_groups(state, rank["communicators"], rank["launcher_rank"].get<int64_t>());
    jobs[rank["scenario"]].push_back(document);
    truths[rank["scenario"]].push_back(rank["truth"]);
  }
  int unique = 0, ambiguous = 0, wrong = 0;
  for (auto& [scenario, documents] : jobs) {
    nsc::resolve_process_groups_across_ranks(&documents);
    for (size_t i = 0; i < documents.size(); ++i)
      for (const auto& group : documents[i]["torch"]["process_groups"]) {
        std::string truth;
        for (const auto& known : truths[scenario][i])
          if (known["desc"] == group["desc"] && known["ranks"] == group["ranks"] && known["address"].is_string())
            truth = known["address"];
        if (group["match"] == "unique") {
          ++unique;
          if (group["communicator"] != truth) ++wrong;
        } else if (group["match"] == "ambiguous") {
          ++ambiguous;
        }
      }
  }
  BOOST_TEST_MESSAGE("run5 join across ranks: " << unique << " unique, " << ambiguous << " ambiguous");
  BOOST_TEST(wrong == 0);
  BOOST_TEST(ambiguous == 0);
}
