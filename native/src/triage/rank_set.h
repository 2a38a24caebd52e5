// Rank sets as people read them: "0,2-7". Used by every triage renderer.
#pragma once

#include <string>
#include <vector>

namespace nsc::triage {

// Sorts and de-duplicates in place.
void normalize_ranks(std::vector<int>* ranks);
// "0,2-7" (input need not be sorted); "" for an empty set.
std::string format_rank_set(const std::vector<int>& ranks);
// "rank 1", "ranks 0,2-7", "no rank".
std::string ranks_phrase(const std::vector<int>& ranks);
// ranks_phrase, and when longer than `max_chars` its start cut at a comma: "ranks 16,17,19-23,...".
std::string ranks_phrase_start(const std::vector<int>& ranks, size_t max_chars);
// Verb agreeing with a rank set: verb_for(ranks, "waits", "wait").
inline const char* verb_for(const std::vector<int>& ranks, const char* singular, const char* plural) {
  return ranks.size() == 1 ? singular : plural;
}
// Parses "0,2-7" back (for tests and scripts); false on a malformed set.
bool parse_rank_set(const std::string& text, std::vector<int>* ranks);

}  // namespace nsc::triage
