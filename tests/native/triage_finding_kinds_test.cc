// docs/triage.md's finding-kinds table is the code's table (finding_kinds.cc), row for row.
#define BOOST_TEST_MODULE triage_finding_kinds
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "triage/finding_kinds.h"

namespace {

using nsc::triage::FindingKind;
using nsc::triage::VerdictEffect;

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" `");
  size_t end = text.find_last_not_of(" `");
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

// kind -> its cells after the name, from the rows between the finding-kinds markers.
std::map<std::string, std::vector<std::string>> documented_kinds() {
  std::ifstream file(NCCLSCOPE_SOURCE_DIR "/docs/triage.md");
  BOOST_REQUIRE_MESSAGE(file, "docs/triage.md is readable");
  std::map<std::string, std::vector<std::string>> rows;
  bool inside = false;
  for (std::string line; std::getline(file, line);) {
    if (line.find("<!-- finding-kinds: begin -->") != std::string::npos) inside = true;
    if (line.find("<!-- finding-kinds: end -->") != std::string::npos) break;
    std::string row = trim(line);
    if (!inside || row.empty() || row[0] != '|' || row.find("`") == std::string::npos) continue;
    std::vector<std::string> cells;
    std::istringstream parts(row.substr(1));
    for (std::string cell; std::getline(parts, cell, '|');) cells.push_back(trim(cell));
    std::string kind = cells.front();
    cells.erase(cells.begin());
    rows[kind] = cells;
  }
  return rows;
}

std::string effect_text(VerdictEffect effect) {
  return effect == VerdictEffect::kIncomplete ? "incomplete" : effect == VerdictEffect::kMismatch ? "mismatch" : "-";
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_kind_is_documented_as_the_code_defines_it) {
  auto documented = documented_kinds();
  BOOST_TEST(documented.size() == nsc::triage::finding_kinds().size());
  for (const FindingKind& kind : nsc::triage::finding_kinds()) {
    auto row = documented.find(kind.name);
    BOOST_TEST_REQUIRE((row != documented.end()), "docs/triage.md lacks finding kind " << kind.name);
    BOOST_TEST_REQUIRE(row->second.size() >= 3u);
    BOOST_TEST(row->second[0] == effect_text(kind.effect), kind.name);
    BOOST_TEST(row->second[1] == (kind.may_blame ? "yes" : "no"), kind.name);
    BOOST_TEST(row->second[2] == kind.far_role, kind.name);
  }
}

BOOST_AUTO_TEST_CASE(an_unknown_kind_is_a_producer_bug) {
  BOOST_CHECK_THROW(nsc::triage::finding_kind("no-such-kind"), std::logic_error);
  BOOST_TEST(nsc::triage::finding_kind("data-wait").may_blame == false);
  BOOST_TEST(nsc::triage::finding_kind("missing-collective").may_blame == true);
}

BOOST_AUTO_TEST_CASE(no_role_says_culprit) {
  for (const FindingKind& kind : nsc::triage::finding_kinds())
    BOOST_TEST(std::string(kind.far_role).find("culprit") == std::string::npos, kind.name);
}
