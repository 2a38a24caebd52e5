#include "cli/options.h"

#include "util/errors.h"

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

std::vector<std::string> split_path_list(const std::string& colon_separated) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= colon_separated.size()) {
    size_t end = colon_separated.find(':', start);
    if (end == std::string::npos) end = colon_separated.size();
    if (end > start) parts.push_back(colon_separated.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace nsc::cli
