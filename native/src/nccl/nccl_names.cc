#include "nccl/nccl_names.h"

#include <cstdio>

namespace nsc {

std::string enum_value_name(const LayoutProfile& layout, const std::string& enum_name, int64_t value) {
  if (const EnumLayout* enumeration = layout.find_enum(enum_name)) {
    if (auto name = enumeration->name_of(value)) return *name;
  }
  return enum_name + "(" + std::to_string(value) + ")";
}

std::string collective_name(const LayoutProfile& layout, int64_t func) {
  if (const EnumLayout* enumeration = layout.find_enum("ncclFunc_t")) {
    if (auto name = enumeration->name_of(func)) {
      const std::string prefix = "ncclFunc";
      return name->rfind(prefix, 0) == 0 ? name->substr(prefix.size()) : *name;
    }
  }
  // Stable since NCCL 2.0 (nccl_common.h): the seqNumber[] order.
  static const char* const kNames[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                       "AllReduce"};
  if (func >= 0 && func < 5) return kNames[func];
  return "ncclFunc(" + std::to_string(func) + ")";
}

std::string protocol_name(int64_t protocol) {
  static const char* const kNames[] = {"LL", "LL128", "Simple"};
  if (protocol >= 0 && protocol < 3) return kNames[protocol];
  return "protocol(" + std::to_string(protocol) + ")";
}

std::string algorithm_name(int64_t algorithm) {
  static const char* const kNames[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain",
                                       "NVLS", "NVLSTree", "PAT"};
  if (algorithm >= 0 && algorithm < 7) return kNames[algorithm];
  return "algorithm(" + std::to_string(algorithm) + ")";
}

std::string transport_name(int64_t transport) {
  static const char* const kNames[] = {"p2p", "shm", "net", "collnet", "profiler"};
  if (transport >= 0 && transport < 5) return kNames[transport];
  return "transport(" + std::to_string(transport) + ")";
}

std::string bus_id_text(int64_t bus_id) {
  char text[32];
  std::snprintf(text, sizeof text, "%04llx:%02llx:%02llx.%01llx",
                static_cast<unsigned long long>(bus_id >> 20),
                static_cast<unsigned long long>((bus_id & 0xff000) >> 12),
                static_cast<unsigned long long>((bus_id & 0xff0) >> 4),
                static_cast<unsigned long long>(bus_id & 0xf));
  return text;
}

std::string not_in_version(const LayoutProfile& layout, const std::string& what) {
  std::string version = layout.nccl_version.empty() ? "this NCCL version" : "NCCL " + layout.nccl_version;
  return "not in " + version + " (" + what + ")";
}

}  // namespace nsc
