#include "snapshot/kernels_document.h"

#include "nccl/kernel_view.h"
#include "snapshot/kernels_text.h"
#include "util/schemas.h"

namespace nsc {

using nlohmann::json;

namespace {

// The published "text" of every wait, worded from its facts.
json with_wait_texts(json kernels) {
  for (json& kernel : kernels) {
    json& blocks = kernel["blocks"];
    for (json& wait : kernel["waits"]) wait["text"] = kernel_wait_sentence(wait, blocks.size());
    for (json& block : blocks)
      for (json& wait : block["waits"]) wait["text"] = connection_wait_sentence(wait);
  }
  return kernels;
}

}  // namespace

json build_kernels_document(const json& state, const json& kernels, const json& other_kernels) {
  json communicators = json::array();
  for (const json& comm : state.value("communicators", json::array()))
    communicators.push_back({{"address", comm.value("address", json())},
                             {"comm_hash", comm.value("comm_hash", json())},
                             {"rank", comm.value("rank", json())},
                             {"nranks", comm.value("nranks", json())},
                             {"cuda_dev", comm.value("cuda_dev", json())},
                             {"device", comm.value("device", json())}});
  json view = build_kernel_view(state, kernels);
  json others = build_other_kernels(state, view, other_kernels);
  for (json& kernel : others) kernel["text"] = other_kernel_sentence(kernel);
  return {{"schema", kKernelsSchema},
          {"tool", state.value("tool", json())},
          {"target", state.value("target", json())},
          {"nccl", state.value("nccl", json())},
          {"kernels", with_wait_texts(std::move(view))},
          {"other_kernels", std::move(others)},
          {"communicators", communicators},
          {"errors", state.value("errors", json::array())}};
}

}  // namespace nsc
