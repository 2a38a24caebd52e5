#include "triage/rank_set.h"

#include <algorithm>
#include <cstdlib>

namespace nsc::triage {

namespace {

bool strictly_increasing(const std::vector<int>& ranks) {
  return std::adjacent_find(ranks.begin(), ranks.end(), [](int a, int b) { return a >= b; }) == ranks.end();
}

}  // namespace

void normalize_ranks(std::vector<int>* ranks) {
  if (strictly_increasing(*ranks)) return;  // the usual case: one pass, no sort (100,000 ranks)
  std::sort(ranks->begin(), ranks->end());
  ranks->erase(std::unique(ranks->begin(), ranks->end()), ranks->end());
}

std::string format_rank_set(const std::vector<int>& given) {
  if (!strictly_increasing(given)) {
    std::vector<int> ranks = given;
    normalize_ranks(&ranks);
    return format_rank_set(ranks);
  }
  const std::vector<int>& ranks = given;
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(ranks[i]);
    // Two neighbours read better as "3,4" than "3-4"; three or more become a range.
    if (j == i + 1) text += "," + std::to_string(ranks[j]);
    else if (j > i) text += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

std::string ranks_phrase(const std::vector<int>& ranks) {
  if (ranks.empty()) return "no rank";
  bool one = std::all_of(ranks.begin(), ranks.end(), [&](int rank) { return rank == ranks.front(); });
  return (one ? "rank " : "ranks ") + format_rank_set(ranks);
}

std::string ranks_phrase_start(const std::vector<int>& ranks, size_t max_chars) {
  std::string text = ranks_phrase(ranks);
  if (text.size() <= max_chars) return text;
  size_t cut = text.rfind(',', max_chars);
  return text.substr(0, cut == std::string::npos ? max_chars : cut) + ",...";
}

bool parse_rank_set(const std::string& text, std::vector<int>* ranks) {
  ranks->clear();
  size_t position = 0;
  while (position < text.size()) {
    size_t comma = text.find(',', position);
    std::string item = text.substr(position, comma == std::string::npos ? std::string::npos
                                                                       : comma - position);
    char* end = nullptr;
    long first = std::strtol(item.c_str(), &end, 10);
    if (end == item.c_str() || first < 0) return false;
    long last = first;
    if (*end == '-') {
      const char* second = end + 1;
      last = std::strtol(second, &end, 10);
      if (end == second || last < first) return false;
    }
    if (*end != '\0') return false;
    for (long rank = first; rank <= last; ++rank) ranks->push_back(static_cast<int>(rank));
    if (comma == std::string::npos) break;
    position = comma + 1;
  }
  return true;
}

}  // namespace nsc::triage
