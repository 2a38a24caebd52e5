#include "snapshot/launcher_section.h"

#include <cerrno>
#include <cstdlib>
#include <optional>

#include "util/strings.h"

namespace nsc {
namespace {

using nlohmann::json;

const char* const kRankNames[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
const char* const kLocalRankNames[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"};
const char* const kWorldSizeNames[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"};

std::optional<int> non_negative_int(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  for (char c : text)
    if (c < '0' || c > '9') return std::nullopt;
  return std::atoi(text.c_str());
}

// One number from the first variable of `names` that is set.
struct Pick {
  std::optional<int> value;
  std::string from;     // the variable it came from, "" when none is set
  std::string problem;  // set when that variable's value is not a non-negative integer
};

template <size_t N>
Pick pick(const LauncherEnvironment& environment, const char* const (&names)[N]) {
  Pick out;
  for (const char* name : names) {
    auto found = environment.variables.find(name);
    if (found == environment.variables.end()) continue;
    out.from = name;
    out.value = non_negative_int(found->second);
    if (!out.value)
      out.problem = std::string(name) + "=\"" + valid_utf8(found->second) + "\" is not a non-negative integer";
    return out;
  }
  return out;
}

json number_or_null(const std::optional<int>& value) { return value ? json(*value) : json(nullptr); }

}  // namespace

json launcher_json(const LauncherEnvironment& environment) {
  json variables = json::object();
  for (const auto& [name, value] : environment.variables) variables[name] = valid_utf8(value);
  json notes = json::array();
  for (const std::string& note : environment.notes) notes.push_back(valid_utf8(note));
  Pick rank = pick(environment, kRankNames), local_rank = pick(environment, kLocalRankNames),
       world_size = pick(environment, kWorldSizeNames);
  if (world_size.value == 0) {  // a job has at least one process
    world_size.value.reset();
    world_size.problem = world_size.from + "=0 is not a world size";
  }
  for (const Pick* other : {&local_rank, &world_size})
    if (!other->problem.empty()) notes.push_back(other->problem);
  std::string why = environment.unavailable;
  if (why.empty() && !rank.problem.empty()) why = rank.problem;
  if (why.empty() && rank.from.empty()) why = "no rank variable set (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID)";
  if (why.empty() && world_size.value && *rank.value >= *world_size.value)
    why = rank.from + "=" + std::to_string(*rank.value) + " is not below " + world_size.from + "=" +
          std::to_string(*world_size.value);
  bool rank_known = why.empty();
  return {{"variables", variables},
          {"rank", rank_known ? json(*rank.value) : json(nullptr)},
          {"local_rank", number_or_null(local_rank.value)},
          {"world_size", number_or_null(world_size.value)},
          {"rank_from", rank_known ? json(rank.from) : json(nullptr)},
          {"source", environment.source.empty() ? json(nullptr) : json(valid_utf8(environment.source))},
          {"unavailable", why.empty() ? json(nullptr) : json(valid_utf8(why))},
          {"notes", notes}};
}

}  // namespace nsc
