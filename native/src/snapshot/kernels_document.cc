#include "snapshot/kernels_document.h"

#include "nccl/kernel_view.h"
#include "util/schemas.h"

namespace nsc {

using nlohmann::json;

json build_kernels_document(const json& state, const json& kernels) {
  json communicators = json::array();
  for (const json& comm : state.value("communicators", json::array()))
    communicators.push_back({{"address", comm.value("address", json())},
                             {"comm_hash", comm.value("comm_hash", json())},
                             {"rank", comm.value("rank", json())},
                             {"nranks", comm.value("nranks", json())},
                             {"cuda_dev", comm.value("cuda_dev", json())},
                             {"device", comm.value("device", json())}});
  return {{"schema", kKernelsSchema},
          {"tool", state.value("tool", json())},
          {"target", state.value("target", json())},
          {"nccl", state.value("nccl", json())},
          {"kernels", build_kernel_view(state, kernels)},
          {"communicators", communicators},
          {"errors", state.value("errors", json::array())}};
}

}  // namespace nsc
