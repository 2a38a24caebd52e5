// CUDA injection (CUDA_INJECTION64_PATH=<this .so>): libcuda calls
// InitializeInjection when the process initialises CUDA. We subscribe to CUPTI
// callbacks for the stream, event, graph, IPC, cuMem and context calls only
// (not whole domains, so other API calls cost nothing). libcupti is opened with
// dlopen so this library loads (and its handlers can be driven in tests) where
// no CUDA driver exists.
#include <dlfcn.h>
#include <limits.h>
#include <link.h>

#include <cstdio>
#include <cstring>

#include <cstdlib>

#include <type_traits>

#include <cupti.h>

#include "recorder.h"

namespace nsc::recorder {
namespace {

// Inside a runtime call we record, the driver calls it makes are the same event.
thread_local int t_runtime_depth = 0;

uint64_t value(const void* pointer) { return reinterpret_cast<uint64_t>(pointer); }
template <typename T>
uint64_t out_value(T* pointer) {  // an output parameter, valid at API exit when non-null
  if (pointer == nullptr) return 0;
  if constexpr (std::is_pointer_v<T>) return reinterpret_cast<uint64_t>(*pointer);
  else return uint64_t(*pointer);  // CUdeviceptr, CUmemGenericAllocationHandle
}

void emit(RecordKind kind, RecordPhase phase, RecordApi api, uint32_t cbid, uint64_t a0 = 0,
          uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0, uint64_t a4 = 0) {
  record(kind, phase, api, int32_t(cbid), a0, a1, a2, a3, a4);
}

// Runtime API. Records the call at entry (inputs), or at exit (outputs, result).
void on_runtime(CUpti_CallbackId cbid, const CUpti_CallbackData* data) {
  bool enter = data->callbackSite == CUPTI_API_ENTER;
  if (enter) ++t_runtime_depth;
  else --t_runtime_depth;
  RecordPhase phase = enter ? RecordPhase::kEnter : RecordPhase::kExit;
  const void* p = data->functionParams;
  uint64_t result = enter ? 0 : uint64_t(*static_cast<const cudaError_t*>(data->functionReturnValue));
  constexpr RecordApi api = RecordApi::kRuntime;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020:
      if (!enter) emit(RecordKind::kStreamCreate, phase, api, cbid, out_value(static_cast<const cudaStreamCreate_v3020_params*>(p)->pStream), 0, 0, result);
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithFlags_v5000: {
      auto* args = static_cast<const cudaStreamCreateWithFlags_v5000_params*>(p);
      if (!enter) emit(RecordKind::kStreamCreate, phase, api, cbid, out_value(args->pStream), args->flags, 0, result);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithPriority_v5050: {
      auto* args = static_cast<const cudaStreamCreateWithPriority_v5050_params*>(p);
      if (!enter) emit(RecordKind::kStreamCreate, phase, api, cbid, out_value(args->pStream), args->flags, uint64_t(int64_t(args->priority)), result);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050:
      if (enter) emit(RecordKind::kStreamDestroy, phase, api, cbid, value(static_cast<const cudaStreamDestroy_v5050_params*>(p)->stream));
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
      emit(RecordKind::kStreamSynchronize, phase, api, cbid, value(static_cast<const cudaStreamSynchronize_v3020_params*>(p)->stream), 0, 0, result);
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020:
      if (!enter) emit(RecordKind::kEventCreate, phase, api, cbid, out_value(static_cast<const cudaEventCreate_v3020_params*>(p)->event), 0, 0, result);
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020: {
      auto* args = static_cast<const cudaEventCreateWithFlags_v3020_params*>(p);
      if (!enter) emit(RecordKind::kEventCreate, phase, api, cbid, out_value(args->event), args->flags, 0, result);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020:
      if (enter) emit(RecordKind::kEventDestroy, phase, api, cbid, value(static_cast<const cudaEventDestroy_v3020_params*>(p)->event));
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000: {
      auto* args = static_cast<const cudaEventRecord_v3020_params*>(p);
      if (enter) emit(RecordKind::kEventRecord, phase, api, cbid, value(args->event), value(args->stream));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010: {
      auto* args = static_cast<const cudaEventRecordWithFlags_v11010_params*>(p);
      if (enter) emit(RecordKind::kEventRecord, phase, api, cbid, value(args->event), value(args->stream), args->flags);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000: {
      auto* args = static_cast<const cudaStreamWaitEvent_v3020_params*>(p);
      if (enter) emit(RecordKind::kStreamWaitEvent, phase, api, cbid, value(args->stream), value(args->event), args->flags);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
      emit(RecordKind::kEventSynchronize, phase, api, cbid, value(static_cast<const cudaEventSynchronize_v3020_params*>(p)->event), 0, 0, result);
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
      emit(RecordKind::kDeviceSynchronize, phase, api, cbid, 0, 0, 0, result);
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000: {
      auto* args = static_cast<const cudaGraphLaunch_v10000_params*>(p);
      if (enter) emit(RecordKind::kGraphLaunch, phase, api, cbid, value(args->graphExec), value(args->stream));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaIpcGetMemHandle_v4010: {
      auto* args = static_cast<const cudaIpcGetMemHandle_v4010_params*>(p);
      if (!enter) emit(RecordKind::kIpcGetMemHandle, phase, api, cbid, value(args->devPtr),
                       args->handle ? fingerprint(args->handle, sizeof(*args->handle)) : 0, 0, result);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaIpcOpenMemHandle_v4010: {
      auto* args = static_cast<const cudaIpcOpenMemHandle_v4010_params*>(p);
      if (!enter) emit(RecordKind::kIpcOpenMemHandle, phase, api, cbid, out_value(args->devPtr),
                       fingerprint(&args->handle, sizeof(args->handle)), args->flags, result);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaIpcCloseMemHandle_v4010:
      if (!enter) emit(RecordKind::kIpcCloseMemHandle, phase, api, cbid, value(static_cast<const cudaIpcCloseMemHandle_v4010_params*>(p)->devPtr), 0, 0, result);
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaIpcGetEventHandle_v4010: {
      auto* args = static_cast<const cudaIpcGetEventHandle_v4010_params*>(p);
      if (!enter) emit(RecordKind::kIpcGetEventHandle, phase, api, cbid, value(args->event),
                       args->handle ? fingerprint(args->handle, sizeof(*args->handle)) : 0, 0, result);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaIpcOpenEventHandle_v4010: {
      auto* args = static_cast<const cudaIpcOpenEventHandle_v4010_params*>(p);
      if (!enter) emit(RecordKind::kIpcOpenEventHandle, phase, api, cbid, out_value(args->event),
                       fingerprint(&args->handle, sizeof(args->handle)), 0, result);
      break;
    }
    default:
      break;
  }
}

// Driver API: the cuMem and context calls (no runtime twin), and driver-level
// stream/event calls made outside any recorded runtime call.
void on_driver(CUpti_CallbackId cbid, const CUpti_CallbackData* data) {
  if (t_runtime_depth > 0) return;
  bool enter = data->callbackSite == CUPTI_API_ENTER;
  RecordPhase phase = enter ? RecordPhase::kEnter : RecordPhase::kExit;
  const void* p = data->functionParams;
  uint64_t result = enter ? 0 : uint64_t(*static_cast<const CUresult*>(data->functionReturnValue));
  constexpr RecordApi api = RecordApi::kDriver;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuStreamCreate: {
      auto* args = static_cast<const cuStreamCreate_params*>(p);
      if (!enter) emit(RecordKind::kStreamCreate, phase, api, cbid, out_value(args->phStream), args->Flags, 0, result);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamCreateWithPriority: {
      auto* args = static_cast<const cuStreamCreateWithPriority_params*>(p);
      if (!enter) emit(RecordKind::kStreamCreate, phase, api, cbid, out_value(args->phStream), args->flags, uint64_t(int64_t(args->priority)), result);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2:
      if (enter) emit(RecordKind::kStreamDestroy, phase, api, cbid, value(static_cast<const cuStreamDestroy_v2_params*>(p)->hStream));
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
      emit(RecordKind::kStreamSynchronize, phase, api, cbid, value(static_cast<const cuStreamSynchronize_params*>(p)->hStream), 0, 0, result);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuEventCreate: {
      auto* args = static_cast<const cuEventCreate_params*>(p);
      if (!enter) emit(RecordKind::kEventCreate, phase, api, cbid, out_value(args->phEvent), args->Flags, 0, result);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2:
      if (enter) emit(RecordKind::kEventDestroy, phase, api, cbid, value(static_cast<const cuEventDestroy_v2_params*>(p)->hEvent));
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz: {
      auto* args = static_cast<const cuEventRecord_params*>(p);
      if (enter) emit(RecordKind::kEventRecord, phase, api, cbid, value(args->hEvent), value(args->hStream));
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz: {
      auto* args = static_cast<const cuEventRecordWithFlags_params*>(p);
      if (enter) emit(RecordKind::kEventRecord, phase, api, cbid, value(args->hEvent), value(args->hStream), args->flags);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz: {
      auto* args = static_cast<const cuStreamWaitEvent_params*>(p);
      if (enter) emit(RecordKind::kStreamWaitEvent, phase, api, cbid, value(args->hStream), value(args->hEvent), args->Flags);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
      emit(RecordKind::kEventSynchronize, phase, api, cbid, value(static_cast<const cuEventSynchronize_params*>(p)->hEvent), 0, 0, result);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
      emit(RecordKind::kContextSynchronize, phase, api, cbid, 0, 0, 0, result);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
      auto* args = static_cast<const cuGraphLaunch_params*>(p);
      if (enter) emit(RecordKind::kGraphLaunch, phase, api, cbid, value(args->hGraph), value(args->hStream));
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuIpcGetMemHandle: {
      auto* args = static_cast<const cuIpcGetMemHandle_params*>(p);
      if (!enter) emit(RecordKind::kIpcGetMemHandle, phase, api, cbid, uint64_t(args->dptr),
                       args->pHandle ? fingerprint(args->pHandle, sizeof(*args->pHandle)) : 0, 0, result);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2: {
      auto* args = static_cast<const cuIpcOpenMemHandle_v2_params*>(p);
      if (!enter) emit(RecordKind::kIpcOpenMemHandle, phase, api, cbid, out_value(args->pdptr),
                       fingerprint(&args->handle, sizeof(args->handle)), args->Flags, result);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle:
      if (!enter) emit(RecordKind::kIpcCloseMemHandle, phase, api, cbid, uint64_t(static_cast<const cuIpcCloseMemHandle_params*>(p)->dptr), 0, 0, result);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      auto* args = static_cast<const cuMemCreate_params*>(p);
      if (!enter) emit(RecordKind::kMemCreate, phase, api, cbid, out_value(args->handle), args->size, 0, result);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemExportToShareableHandle: {
      auto* args = static_cast<const cuMemExportToShareableHandle_params*>(p);
      uint64_t shared = 0;  // the fd for POSIX handles, a fingerprint for fabric handles
      if (!enter && args->shareableHandle != nullptr)
        shared = args->handleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                     ? uint64_t(*static_cast<const int*>(args->shareableHandle))
                     : fingerprint(args->shareableHandle, sizeof(CUmemFabricHandle));
      if (!enter) emit(RecordKind::kMemExport, phase, api, cbid, args->handle, uint64_t(args->handleType), shared, result);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemImportFromShareableHandle: {
      auto* args = static_cast<const cuMemImportFromShareableHandle_params*>(p);
      uint64_t shared = args->shHandleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                            ? value(args->osHandle)
                            : (args->osHandle ? fingerprint(args->osHandle, sizeof(CUmemFabricHandle)) : 0);
      if (!enter) emit(RecordKind::kMemImport, phase, api, cbid, out_value(args->handle), uint64_t(args->shHandleType), shared, result);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      auto* args = static_cast<const cuMemMap_params*>(p);
      if (!enter) emit(RecordKind::kMemMap, phase, api, cbid, uint64_t(args->ptr), args->size, args->offset, result, args->handle);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      auto* args = static_cast<const cuMemUnmap_params*>(p);
      if (!enter) emit(RecordKind::kMemUnmap, phase, api, cbid, uint64_t(args->ptr), args->size, 0, result);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
      if (!enter) emit(RecordKind::kMemRelease, phase, api, cbid, static_cast<const cuMemRelease_params*>(p)->handle, 0, 0, result);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve: {
      auto* args = static_cast<const cuMemAddressReserve_params*>(p);
      if (!enter) emit(RecordKind::kMemAddressReserve, phase, api, cbid, out_value(args->ptr), args->size, args->alignment, result);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree: {
      auto* args = static_cast<const cuMemAddressFree_params*>(p);
      if (!enter) emit(RecordKind::kMemAddressFree, phase, api, cbid, uint64_t(args->ptr), args->size, 0, result);
      break;
    }
    default:
      break;
  }
}

// Resource domain: contexts (primary ones included) and streams as CUDA creates them.
void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) {
  constexpr RecordApi api = RecordApi::kResource;
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
      emit(RecordKind::kContextCreate, RecordPhase::kInstant, api, cbid, value(data->context));
      break;
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
      emit(RecordKind::kContextDestroy, RecordPhase::kInstant, api, cbid, value(data->context));
      break;
    default:
      break;
  }
}

}  // namespace
}  // namespace nsc::recorder

// The CUPTI callback; exported so a test driver can call it with fabricated data.
extern "C" __attribute__((visibility("default"))) void CUPTIAPI ncclscope_recorder_cupti_callback(
    void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  using namespace nsc::recorder;
  switch (domain) {
    case CUPTI_CB_DOMAIN_RUNTIME_API: on_runtime(cbid, static_cast<const CUpti_CallbackData*>(data)); break;
    case CUPTI_CB_DOMAIN_DRIVER_API: on_driver(cbid, static_cast<const CUpti_CallbackData*>(data)); break;
    case CUPTI_CB_DOMAIN_RESOURCE: on_resource(cbid, static_cast<const CUpti_ResourceData*>(data)); break;
    default: break;
  }
}

namespace {

using SubscribeFunction = CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
using EnableCallbackFunction = CUptiResult (*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);

const CUpti_CallbackId kRuntimeCallbacks[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithFlags_v5000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithPriority_v5050, CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaIpcGetMemHandle_v4010,
    CUPTI_RUNTIME_TRACE_CBID_cudaIpcOpenMemHandle_v4010, CUPTI_RUNTIME_TRACE_CBID_cudaIpcCloseMemHandle_v4010,
    CUPTI_RUNTIME_TRACE_CBID_cudaIpcGetEventHandle_v4010, CUPTI_RUNTIME_TRACE_CBID_cudaIpcOpenEventHandle_v4010,
};
const CUpti_CallbackId kDriverCallbacks[] = {
    CUPTI_DRIVER_TRACE_CBID_cuStreamCreate, CUPTI_DRIVER_TRACE_CBID_cuStreamCreateWithPriority,
    CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz, CUPTI_DRIVER_TRACE_CBID_cuEventCreate,
    CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2, CUPTI_DRIVER_TRACE_CBID_cuEventRecord,
    CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz, CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags,
    CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz, CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, CUPTI_DRIVER_TRACE_CBID_cuIpcGetMemHandle,
    CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2, CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle,
    CUPTI_DRIVER_TRACE_CBID_cuMemCreate, CUPTI_DRIVER_TRACE_CBID_cuMemExportToShareableHandle,
    CUPTI_DRIVER_TRACE_CBID_cuMemImportFromShareableHandle, CUPTI_DRIVER_TRACE_CBID_cuMemMap,
    CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
    CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree,
};

}  // namespace

namespace {

// pip wheels (PyTorch) ship libcupti beside libcudart, or in a sibling cuda_cupti package.
int find_cudart_directory(dl_phdr_info* info, size_t, void* out) {
  const char* name = info->dlpi_name;
  const char* base = name ? strrchr(name, '/') : nullptr;
  if (base == nullptr || strncmp(base + 1, "libcudart.so", 12) != 0) return 0;
  snprintf(static_cast<char*>(out), PATH_MAX, "%.*s", int(base - name), name);
  return 1;
}

void* open_cupti_beside_cudart() {
  char directory[PATH_MAX] = {0};
  dl_iterate_phdr(find_cudart_directory, directory);
  if (directory[0] == '\0') return nullptr;
  const char* relative[] = {"/libcupti.so.13", "/libcupti.so", "/../../cuda_cupti/lib/libcupti.so.13",
                            "/../../cuda_cupti/lib/libcupti.so"};
  for (const char* suffix : relative) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s%s", directory, suffix);
    if (void* handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL)) return handle;
  }
  return nullptr;
}

}  // namespace

// Called by libcuda at CUDA initialisation when CUDA_INJECTION64_PATH names this library.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  // NCCLSCOPE_CUPTI_LIBRARY first, then the loader's path, then the usual CUDA homes.
  const char* candidates[] = {getenv("NCCLSCOPE_CUPTI_LIBRARY"), "libcupti.so.13", "libcupti.so",
                              "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
                              "/usr/local/cuda/lib64/libcupti.so"};
  void* cupti = nullptr;
  for (const char* candidate : candidates)
    if (candidate != nullptr && cupti == nullptr) cupti = dlopen(candidate, RTLD_NOW | RTLD_GLOBAL);
  if (cupti == nullptr) cupti = open_cupti_beside_cudart();
  if (cupti == nullptr) return 0;
  auto subscribe = reinterpret_cast<SubscribeFunction>(dlsym(cupti, "cuptiSubscribe"));
  auto enable = reinterpret_cast<EnableCallbackFunction>(dlsym(cupti, "cuptiEnableCallback"));
  if (subscribe == nullptr || enable == nullptr) return 0;
  CUpti_SubscriberHandle subscriber;
  // CUPTI allows one subscriber per process: a profiler attached later will fail to subscribe.
  if (subscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(ncclscope_recorder_cupti_callback), nullptr) != CUPTI_SUCCESS)
    return 0;
  for (CUpti_CallbackId cbid : kRuntimeCallbacks) enable(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  for (CUpti_CallbackId cbid : kDriverCallbacks) enable(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  enable(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  enable(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  nsc::recorder::mark_source(nsc::recorder::kSourceCupti);
  return 1;
}
