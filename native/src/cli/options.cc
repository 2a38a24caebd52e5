#include "cli/options.h"

#include <cstdio>

#include "cli/commands.h"
#include "util/errors.h"
#include "util/strings.h"

namespace nsc::cli {

std::string ParsedOptions::value(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() || it->second.empty() ? fallback : it->second.back();
}

const std::vector<std::string>& ParsedOptions::all(const std::string& name) const {
  static const std::vector<std::string> kEmpty;
  auto it = values.find(name);
  return it == values.end() ? kEmpty : it->second;
}

ParsedOptions parse_options(const std::vector<std::string>& args,
                            const std::set<std::string>& value_options,
                            const std::set<std::string>& flag_options) {
  ParsedOptions parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-' || arg == "--") {
      if (arg == "--") {
        parsed.positional.insert(parsed.positional.end(), args.begin() + i + 1, args.end());
        break;
      }
      parsed.positional.push_back(arg);
      continue;
    }
    std::string name = arg;
    std::string inline_value;
    bool has_inline = false;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
      has_inline = true;
    }
    if (flag_options.count(name) && !has_inline) {
      parsed.flags.insert(name);
    } else if (value_options.count(name)) {
      if (!has_inline && i + 1 >= args.size()) throw UsageError("option " + name + " needs a value");
      parsed.values[name].push_back(has_inline ? inline_value : args[++i]);
    } else {
      throw UsageError("unknown option " + arg);
    }
  }
  return parsed;
}

int parse_pid(const std::string& text) {
  uint64_t pid = 0;
  if (!parse_u64(text, &pid) || pid == 0 || pid > 0x3fffffff) throw UsageError("--pid " + text + ": not a process id");
  return static_cast<int>(pid);
}

void library_options_into(const ParsedOptions& options, StateRequest* request) {
  request->executable = options.value("--exe");
  request->sysroot = options.value("--sysroot");
  for (const auto& list : options.all("--solib-search-path"))
    for (const auto& dir : split_colon_list(list)) request->solib_search_path.push_back(dir);
  for (const auto& list : options.all("--profile-path"))
    for (const auto& dir : split_colon_list(list)) request->profile_path.push_back(dir);
}

StateRequest target_request_from_options(const ParsedOptions& options) {
  StateRequest request;
  request.core_path = options.value("--core");
  if (request.core_path.empty() && options.positional.size() == 1) request.core_path = options.positional[0];
  if (options.positional.size() > 1) throw UsageError("one target only");
  std::string pid_text = options.value("--pid");
  if (!pid_text.empty()) request.pid = parse_pid(pid_text);
  if (request.core_path.empty() == (request.pid == 0))
    throw UsageError("give exactly one of --core CORE or --pid PID");
  library_options_into(options, &request);
  request.force_mismatch = options.has("--force-mismatch");
  request.freeze = options.has("--freeze");
  return request;
}

int run_guarded(const char* name, const char* usage_text, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& error) {
    std::string what = escape_for_terminal(error.what());
    if (usage_text != nullptr) std::fprintf(stderr, "ncclscope %s: %s\n%s", name, what.c_str(), usage_text);
    else std::fprintf(stderr, "ncclscope %s: %s (usage: see ncclscope %s --help)\n", name, what.c_str(), name);
    return kExitUsage;
  } catch (const BadInput& error) {
    std::fprintf(stderr, "ncclscope %s: %s\n", name, escape_for_terminal(error.what()).c_str());
    return kExitBadInput;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ncclscope %s: internal error: %s\n", name, escape_for_terminal(error.what()).c_str());
    return kExitBadInput;
  }
}

}  // namespace nsc::cli
