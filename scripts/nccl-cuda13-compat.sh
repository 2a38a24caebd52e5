#!/usr/bin/env bash
# Lets an NCCL older than 2.27 (2.21.5, 2.26.2: what PyTorch 2.5-2.7 ship) build with CUDA 13,
# so real hangs can be captured on them (issue 17). Patches the source tree in place:
#
#   scripts/nccl-cuda13-compat.sh NCCL_SOURCE_DIR [CUDA_HOME]
#
# What CUDA 13 changed under these versions, and what the patch does about it (no struct that
# ncclscope decodes changes: only host code that calls the CUDA runtime and driver):
# * cudaTypedefs.h keeps only versioned PFN_cuX_vN typedefs, and NCCL < 2.27 declares PFN_cuX and
#   loads each entry point unversioned (cudaGetDriverEntryPoint: the newest ABI, which for
#   cuCtxCreate is not the one its proxy.cc calls). Each entry point gets the ABI version NCCL
#   2.27.7 pins for it (its src/misc/cudawrap.cc LOAD_SYM table, below): PFN_cuX is
#   PFN_cuX_v<version>, and LOAD_SYM asks for that version (cudaGetDriverEntryPointByVersion).
#   Entry points not in the table get their newest version.
# * cudaStreamGetCaptureInfo_v2, the 4-argument cudaGraphAddDependencies and
#   cudaStreamUpdateCaptureDependencies are gone: macros call CUDA 13's forms with no edge data
#   (what NCCL 2.27's strongstream.cc passes).
# * libcu++ (<cuda/atomic>) moved to include/cccl: host code gets that include path, as 2.27 has.
# The shim is force-included in host (CXXFLAGS) and device (NVCUFLAGS) compiles.
# * enhcompat.cc (weak stubs of those runtime functions for old drivers) is emptied.
# Device code and everything else is built as the tag has it. Idempotent.
set -euo pipefail
src=${1:?usage: nccl-cuda13-compat.sh NCCL_SOURCE_DIR [CUDA_HOME]}
cuda_home=${2:-${CUDA_HOME:-/usr/local/cuda}}
shim=$src/src/include/ncclscope_cuda13_compat.h
# symbol=ABI version, as NCCL v2.27.7 src/misc/cudawrap.cc loads them.
PINNED_VERSIONS="cuCtxCreate=11040 cuCtxDestroy=4000 cuCtxGetCurrent=4000 cuCtxGetDevice=2000
  cuCtxSetCurrent=4000 cuDeviceGet=2000 cuDeviceGetAttribute=2000 cuGetErrorName=6000
  cuGetErrorString=6000 cuLaunchKernel=4000 cuLaunchKernelEx=11060 cuMemAddressFree=10020
  cuMemAddressReserve=10020 cuMemCreate=10020 cuMemExportToShareableHandle=10020
  cuMemGetAddressRange=3020 cuMemGetAllocationGranularity=10020
  cuMemGetAllocationPropertiesFromHandle=10020 cuMemGetHandleForAddressRange=11070
  cuMemImportFromShareableHandle=10020 cuMemMap=10020 cuMemRelease=10020
  cuMemRetainAllocationHandle=11000 cuMemSetAccess=10020 cuMemUnmap=10020 cuMulticastAddDevice=12010
  cuMulticastBindAddr=12010 cuMulticastBindMem=12010 cuMulticastCreate=12010
  cuMulticastGetGranularity=12010 cuMulticastUnbind=12010 cuPointerGetAttribute=4000"
[ -f "$src/makefiles/common.mk" ] || { echo "nccl-cuda13-compat: $src is not an NCCL source tree" >&2; exit 2; }
minor=$(sed -n 's/^NCCL_MINOR *:= *//p' "$src/makefiles/version.mk")
if [ "${minor:-0}" -ge 27 ]; then
  echo "nccl-cuda13-compat: $src is NCCL 2.$minor: builds with CUDA 13 as it is" >&2
  exit 0
fi
# 2.18-2.20 already load versioned entry points (cuGetProcAddress, PFN_cuX_vN); 2.21-2.26 do not.
unversioned=1
grep -q 'PFN_##symbol##_v##version' "$src/src/include/cudawrap.h" && unversioned=0

{
  echo '// Written by ncclscope scripts/nccl-cuda13-compat.sh: NCCL < 2.27 on CUDA 13.'
  echo '#pragma once'
  echo '#include <cuda.h>'
  echo '#include <cudaTypedefs.h>'
  echo '#include <cuda_runtime_api.h>'
  for pinned in $PINNED_VERSIONS; do
    printf '#define PFN_%s PFN_%s_v%s\n#define ncclscope_pfn_version_%s %s\n' \
      "${pinned%=*}" "${pinned%=*}" "${pinned#*=}" "${pinned%=*}" "${pinned#*=}"
  done
  grep -oE '\*PFN_cu[A-Za-z0-9_]*_v[0-9]+\)' "$cuda_home/include/cudaTypedefs.h" | tr -d '*)' | sort -u |
    sed 's/^\(PFN_cu[A-Za-z0-9_]*\)_v\([0-9]*\)$/\2 \1/' | sort -k2,2 -k1,1n |
    awk '{newest[$2] = $1} END {for (n in newest) printf "#ifndef %s\n#define %s %s_v%s\n#endif\n", n, n, n, newest[n]}'
  cat <<'H'
#if CUDART_VERSION >= 13000
// CUDA 12 signatures NCCL < 2.27 calls, forwarded to CUDA 13's (no edge data, as NCCL 2.27 does).
static inline cudaError_t cudaStreamGetCaptureInfo_v2(cudaStream_t stream, cudaStreamCaptureStatus* status,
    unsigned long long* id, cudaGraph_t* graph, const cudaGraphNode_t** deps, size_t* count) {
  return cudaStreamGetCaptureInfo(stream, status, id, graph, deps, nullptr, count);
}
#define cudaStreamGetCaptureInfo_v3 cudaStreamGetCaptureInfo
static inline cudaError_t ncclscope_cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
    const cudaGraphNode_t* to, size_t count) {
  return cudaGraphAddDependencies(graph, from, to, nullptr, count);
}
static inline cudaError_t ncclscope_cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
    const cudaGraphNode_t* to, const cudaGraphEdgeData* edges, size_t count) {
  return cudaGraphAddDependencies(graph, from, to, edges, count);
}
#define cudaGraphAddDependencies ncclscope_cudaGraphAddDependencies
#define cudaGraphAddDependencies_v2 ncclscope_cudaGraphAddDependencies
static inline cudaError_t ncclscope_cudaStreamUpdateCaptureDependencies(cudaStream_t stream,
    cudaGraphNode_t* deps, size_t count, unsigned int flags) {
  return cudaStreamUpdateCaptureDependencies(stream, deps, nullptr, count, flags);
}
#define cudaStreamUpdateCaptureDependencies ncclscope_cudaStreamUpdateCaptureDependencies
#endif
H
} > "$shim"

grep -q ncclscope_cuda13_compat "$src/makefiles/common.mk" ||
  printf '\n# ncclscope: NCCL < 2.27 on CUDA 13 (scripts/nccl-cuda13-compat.sh)\nCXXFLAGS += -I $(CUDA_INC)/cccl -include %s\nNVCUFLAGS += -include %s\n' \
    "$(realpath "$shim")" "$(realpath "$shim")" >> "$src/makefiles/common.mk"
# CUDA 13's headers need C++17.
sed -i 's/-std=c++1[14]/-std=c++17/g' "$src/makefiles/common.mk"
# Load each entry point at its pinned ABI version (2.21-2.26).
[ $unversioned = 1 ] && sed -i 's/cudaGetDriverEntryPoint(#symbol, (void \*\*) (&pfn_##symbol), cudaEnableDefault/cudaGetDriverEntryPointByVersion(#symbol, (void **) (\&pfn_##symbol), ncclscope_pfn_version_##symbol, cudaEnableDefault/' \
  "$src/src/misc/cudawrap.cc"
[ $unversioned = 0 ] || grep -q 'cudaGetDriverEntryPointByVersion(#symbol' "$src/src/misc/cudawrap.cc" ||
  { echo "nccl-cuda13-compat: $src/src/misc/cudawrap.cc: LOAD_SYM not recognised" >&2; exit 3; }
printf '// Emptied by ncclscope scripts/nccl-cuda13-compat.sh: CUDA 13 has these functions.\n' \
  > "$src/src/enhcompat.cc"
echo "nccl-cuda13-compat: patched $src ($(grep -c '^#define PFN_' "$shim") entry-point names)" >&2
