// PyTorch's flight-recorder records matched across ranks (triage/fr_match.cc, issue 31), on
// synthetic records: coalesced groups matched whole, op by op as torchfrtrace does (a group
// differing only in a later op, or one op short, is a mismatch), and sends paired with
// receives after a ring wrapped (aligned at each side's first operation not completed, the
// older operations whose partner is gone counted as lost).
#define BOOST_TEST_MODULE fr_match
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

#include "torch/fr_records.h"
#include "triage/fr_match.h"

using nlohmann::json;
using nsc::torch::FrRankRecords;
using nsc::triage::FrMatch;
using nsc::triage::FrRankInput;

namespace {

struct Entry {
  std::string op;          // "broadcast", "coalesced", "send 0->1", "recv 1<-0"
  int64_t seq = 0;         // collective_seq_id, or p2p_seq_id for a send or receive
  int64_t elements = 4;    // input and output sizes [[elements]]; 0 for [[]]
  std::string state = "completed";
};

json entry_json(int64_t record_id, const Entry& e) {
  bool p2p = e.op.rfind("send", 0) == 0 || e.op.rfind("recv", 0) == 0;
  json sizes = e.elements ? json{{e.elements}} : json{json::array()};
  return {{"record_id", record_id}, {"process_group", {"0", "default_pg"}},
          {"collective_seq_id", p2p ? 0 : e.seq}, {"p2p_seq_id", p2p ? e.seq : 0},
          {"profiling_name", "nccl:" + e.op}, {"input_sizes", sizes}, {"output_sizes", sizes},
          {"input_dtypes", {"Float"}}, {"output_dtypes", {"Float"}}, {"state", e.state}, {"is_p2p", p2p},
          {"frames", json::array()}};
}

// One rank's records on pg "0" (ranks 0..size-1), record ids from `first_record_id` (above 0:
// the ring wrapped).
std::shared_ptr<FrRankRecords> rank_records(int size, int64_t first_record_id, const std::vector<Entry>& entries) {
  std::vector<int> ranks;
  for (int r = 0; r < size; ++r) ranks.push_back(r);
  json section = {{"process_groups", {{{"name", "0"}, {"desc", "default_pg"}, {"ranks", ranks}}}},
                  {"entries", json::array()}};
  for (size_t i = 0; i < entries.size(); ++i) section["entries"].push_back(entry_json(first_record_id + i, entries[i]));
  return std::make_shared<FrRankRecords>(nsc::torch::fr_records_from_torch_section(section));
}

FrMatch match(const std::vector<std::shared_ptr<FrRankRecords>>& ranks) {
  std::vector<FrRankInput> inputs;
  for (size_t r = 0; r < ranks.size(); ++r) inputs.push_back({static_cast<int>(r), static_cast<int>(r), ranks[r].get()});
  return nsc::triage::match_flight_records(inputs, ranks.size());
}

const json& only_group(const FrMatch& m) {
  BOOST_REQUIRE_EQUAL(m.section["groups"].size(), 1u);
  return m.section["groups"][0];
}

std::vector<Entry> coalesced_job(int64_t second_broadcast_elements, bool drop_second = false) {
  std::vector<Entry> out = {{"all_reduce", 1}, {"broadcast", 2}};
  if (!drop_second) out.push_back({"broadcast", 2, second_broadcast_elements});
  out.push_back({"coalesced", 2, 0});
  out.push_back({"all_reduce", 3});
  return out;
}

const nsc::triage::Finding* finding(const FrMatch& m, const std::string& kind) {
  for (const auto& f : m.findings)
    if (f.kind == kind) return &f;
  return nullptr;
}

}  // namespace

BOOST_AUTO_TEST_CASE(coalesced_groups_that_agree_match) {
  FrMatch m = match({rank_records(3, 0, coalesced_job(4)), rank_records(3, 0, coalesced_job(4)),
                     rank_records(3, 0, coalesced_job(4))});
  const json& group = only_group(m);
  BOOST_TEST(group["collectives_checked"].get<int>() == 3);
  BOOST_TEST(group["fully_matched"].get<int>() == 3);
  BOOST_TEST(m.section["checks"].empty());
}

BOOST_AUTO_TEST_CASE(coalesced_group_differing_in_its_second_op_is_a_size_mismatch) {
  // Rank 2's second broadcast of the group is 5 elements: its first op agrees with the others.
  FrMatch m = match({rank_records(3, 0, coalesced_job(4)), rank_records(3, 0, coalesced_job(4)),
                     rank_records(3, 0, coalesced_job(5))});
  const json& group = only_group(m);
  BOOST_TEST(group["not_matched"].get<int>() == 1);
  BOOST_REQUIRE_EQUAL(m.section["checks"].size(), 1u);
  const json& check = m.section["checks"][0];
  BOOST_TEST(check["collective_seq_id"].get<int>() == 2);
  BOOST_TEST(check["coalesced_ops"].get<int>() == 3);
  BOOST_TEST(check["match_state"].get<std::string>() == "SIZE_OR_SYNTAX_MISMATCH");
  BOOST_REQUIRE_EQUAL(check["differing"].size(), 1u);
  BOOST_TEST(check["differing"][0]["rank"].get<int>() == 2);
  BOOST_TEST(check["differing"][0]["why"].get<std::string>() ==
             "op 2 of the coalesced group: input sizes [[5]] vs [[4]]");
  const nsc::triage::Finding* mismatch = finding(m, "pg-size-mismatch");
  BOOST_REQUIRE(mismatch != nullptr);
  BOOST_TEST(mismatch->culprits == std::vector<int>{2});
}

BOOST_AUTO_TEST_CASE(coalesced_group_one_op_short_is_a_type_mismatch) {
  // Rank 1's group holds one broadcast and the end entry: its "coalesced" meets their broadcast.
  FrMatch m = match({rank_records(3, 0, coalesced_job(4)), rank_records(3, 0, coalesced_job(4, true)),
                     rank_records(3, 0, coalesced_job(4))});
  BOOST_REQUIRE_EQUAL(m.section["checks"].size(), 1u);
  const json& check = m.section["checks"][0];
  BOOST_TEST(check["match_state"].get<std::string>() == "COLLECTIVE_TYPE_MISMATCH");
  BOOST_TEST(check["differing"][0]["rank"].get<int>() == 1);
  BOOST_TEST(check["differing"][0]["why"].get<std::string>() ==
             "op 2 of the coalesced group: coalesced where the others issued broadcast");
  BOOST_TEST(finding(m, "pg-type-mismatch") != nullptr);
}

namespace {

std::vector<Entry> sends(int completed, int pending) {
  std::vector<Entry> out;
  for (int i = 0; i < completed + pending; ++i) out.push_back({"send 0->1", i + 1, 4, i < completed ? "completed" : "scheduled"});
  return out;
}
std::vector<Entry> recvs(int completed, int pending) {
  std::vector<Entry> out;
  for (int i = 0; i < completed + pending; ++i) out.push_back({"recv 1<-0", i + 1, 4, i < completed ? "completed" : "started"});
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(wrapped_rings_pair_what_both_hold) {
  // Both rings wrapped; rank 0 holds 3 sends, rank 1 5 receives, all completed: paired last
  // with last, rank 1's 2 oldest receives pair with sends rank 0's ring lost.
  FrMatch m = match({rank_records(2, 100, sends(3, 0)), rank_records(2, 40, recvs(5, 0))});
  const json& group = only_group(m);
  BOOST_TEST(group["p2p_pairs_checked"].get<int>() == 1);
  BOOST_TEST(group["p2p_unmatched"].get<int>() == 0);
  BOOST_TEST(group["p2p_partners_lost"].get<int>() == 2);
  bool noted = false;
  for (const json& note : m.section["notes"]) noted |= note.get<std::string>().find("2 older operation(s)") != std::string::npos;
  BOOST_TEST(noted);
}

BOOST_AUTO_TEST_CASE(wrapped_rings_a_send_whose_receive_was_never_issued) {
  // Rank 0 waits in its 4th held send; rank 1 completed every receive it holds and issued no
  // more: it never issued the receive rank 0 waits on.
  FrMatch m = match({rank_records(2, 100, sends(3, 1)), rank_records(2, 40, recvs(6, 0))});
  const json& group = only_group(m);
  BOOST_TEST(group["p2p_unmatched"].get<int>() == 1);
  BOOST_TEST(group["p2p_partners_lost"].get<int>() == 3);
  BOOST_REQUIRE_EQUAL(m.section["checks"].size(), 1u);
  BOOST_TEST(m.section["checks"][0]["match_state"].get<std::string>() == "MISSING_RANKS");
  BOOST_TEST(m.section["checks"][0]["aligned"].get<std::string>().find("wrapped") != std::string::npos);
  const nsc::triage::Finding* unmatched = finding(m, "pg-p2p-unmatched");
  BOOST_REQUIRE(unmatched != nullptr);
  BOOST_TEST(unmatched->waiting == std::vector<int>{0});
  BOOST_TEST(unmatched->culprits == std::vector<int>{1});
}

BOOST_AUTO_TEST_CASE(wrapped_rings_a_send_whose_receive_is_posted) {
  // Rank 1's receive for rank 0's waiting send is there, started: both wait in the same pair.
  FrMatch m = match({rank_records(2, 100, sends(3, 1)), rank_records(2, 40, recvs(5, 1))});
  BOOST_TEST(only_group(m)["p2p_unmatched"].get<int>() == 0);
  BOOST_TEST(finding(m, "pg-p2p-unmatched") == nullptr);
  BOOST_TEST(finding(m, "pg-queued") == nullptr);
}
