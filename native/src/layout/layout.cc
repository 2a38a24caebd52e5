#include "layout/layout.h"

#include <array>
#include <utility>

namespace nsc {

namespace {

constexpr std::array<std::pair<ValueKind, const char*>, 9> kValueKindNames = {{
    {ValueKind::kSigned, "signed"},
    {ValueKind::kUnsigned, "unsigned"},
    {ValueKind::kBool, "bool"},
    {ValueKind::kFloat, "float"},
    {ValueKind::kPointer, "pointer"},
    {ValueKind::kStruct, "struct"},
    {ValueKind::kUnion, "union"},
    {ValueKind::kEnum, "enum"},
    {ValueKind::kOther, "other"},
}};

}  // namespace

const char* value_kind_name(ValueKind kind) {
  for (const auto& [value, name] : kValueKindNames)
    if (value == kind) return name;
  return "other";
}

std::optional<ValueKind> value_kind_from_name(const std::string& name) {
  for (const auto& [value, text] : kValueKindNames)
    if (name == text) return value;
  return std::nullopt;
}

const MemberLayout* StructLayout::find(const std::string& member) const {
  for (const MemberLayout& candidate : members)
    if (candidate.name == member) return &candidate;
  return nullptr;
}

std::optional<std::string> EnumLayout::name_of(int64_t value) const {
  auto found = values.find(value);
  if (found == values.end()) return std::nullopt;
  return found->second;
}

const StructLayout* LayoutProfile::find_struct(const std::string& name) const {
  auto found = structs.find(name);
  return found == structs.end() ? nullptr : &found->second;
}

const EnumLayout* LayoutProfile::find_enum(const std::string& name) const {
  auto found = enums.find(name);
  return found == enums.end() ? nullptr : &found->second;
}

const std::vector<std::string>& required_struct_names() {
  // Roots the decoders read; everything they hold by value comes along.
  static const std::vector<std::string> names = {
      "ncclComm", "ncclChannel", "ncclRing", "ncclTree", "ncclChannelPeer", "ncclConnector",
      "ncclConnInfo", "ncclSharedResources", "ncclProxyState", "ncclProxyProgressState",
      "ncclProxyArgs", "ncclProxySubArgs", "ncclProxyOp", "ncclProxyOps", "ncclProxyOpsPool",
      "ncclProxyPool", "ncclConfig_t", "ncclKernelPlanner", "ncclKernelPlanner::Peer",
      "ncclTaskColl", "ncclTaskP2p", "ncclKernelPlan",
      // NCCL 2.21's planner: struct ncclTasks, queuing struct ncclInfo (info.h).
      "ncclTasks", "ncclTasks::Peer", "ncclInfo", "ncclPeerInfo", "ncclStrongStream",
      "ncclCudaStreamList", "ncclGroupJob", "ncclCommCallback", "ncclDevComm", "ncclDevChannel",
      "ncclKernelComm", "ncclDevCommAndChannels", "ncclWorkList",
      // Device-side connection state (connection_decoder.cc, kernel view).
      "ncclDevChannelPeer", "ncclKernelCommAndChannels", "ncclDevKernelArgs", "ncclRecvMem", "ncclSendMem",
      // CUDA resources NCCL holds (nccl_cuda_decoder.cc).
      "ncclReg", "ncclIpcRegInfo", "ncclCommEventCallback", "ncclStrongStreamCapture",
      "ncclCudaContext", "ncclProxyConnection", "p2pResources",
  };
  return names;
}

const std::vector<std::string>& required_enum_names() {
  static const std::vector<std::string> names = {
      "ncclResult_t", "ncclFunc_t", "ncclDataType_t", "ncclRedOp_t", "ncclRedOp_dummy_t",
      "ncclDevRedOp_t", "ncclPattern_t", "ncclAlgorithm_t", "p2pType",
  };
  return names;
}

const std::vector<std::string>& wanted_symbol_names() {
  static const std::vector<std::string> names = {
      "ncclComms", "nNcclComms", "ncclLastProxyState", "ncclGroupDepth", "ncclGroupCommHead",
      "ncclGroupCommPreconnectHead", "ncclGroupError", "ncclLastError",
  };
  return names;
}

}  // namespace nsc
