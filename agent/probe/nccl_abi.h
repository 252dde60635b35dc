// The slice of the CUDA driver and NCCL C ABIs that the probe uses, declared here so that
// nccl-triage builds without CUDA or NCCL headers and loads both libraries with dlopen.
//
// Every prototype follows cuda.h 13.0 and nccl.h (NCCL_FACTS A1-A7); values that only exist in
// newer libraries are looked up with dlsym and treated as absent when NULL. Plain declarations.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

namespace nccl_triage::abi {

// ------------------------------------------------------------------ CUDA driver API
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUstream_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;

inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorStubLibrary = 34;
inline constexpr CUresult kCudaErrorNoDevice = 100;
inline constexpr CUresult kCudaErrorNotReady = 600;

using CuInitFn = CUresult (*)(unsigned int flags);
using CuDriverGetVersionFn = CUresult (*)(int* version);
using CuDeviceGetCountFn = CUresult (*)(int* count);
using CuDeviceGetFn = CUresult (*)(CUdevice* device, int ordinal);
using CuDeviceGetByPciBusIdFn = CUresult (*)(CUdevice* device, const char* pci_bus_id);
using CuDeviceGetNameFn = CUresult (*)(char* name, int len, CUdevice device);
using CuDeviceGetPciBusIdFn = CUresult (*)(char* bus_id, int len, CUdevice device);
using CuDevicePrimaryCtxRetainFn = CUresult (*)(CUcontext* ctx, CUdevice device);
using CuDevicePrimaryCtxReleaseFn = CUresult (*)(CUdevice device);
using CuCtxSetCurrentFn = CUresult (*)(CUcontext ctx);
using CuMemAllocFn = CUresult (*)(CUdeviceptr* ptr, size_t bytes);
using CuMemFreeFn = CUresult (*)(CUdeviceptr ptr);
using CuMemsetD32Fn = CUresult (*)(CUdeviceptr dst, unsigned int value, size_t count);
using CuMemcpyDtoHFn = CUresult (*)(void* dst, CUdeviceptr src, size_t bytes);
using CuMemcpyHtoDFn = CUresult (*)(CUdeviceptr dst, const void* src, size_t bytes);
using CuStreamCreateFn = CUresult (*)(CUstream* stream, unsigned int flags);
using CuStreamSynchronizeFn = CUresult (*)(CUstream stream);
using CuStreamQueryFn = CUresult (*)(CUstream stream);
using CuStreamDestroyFn = CUresult (*)(CUstream stream);
using CUevent = void*;
using CuEventCreateFn = CUresult (*)(CUevent* event, unsigned int flags);
using CuEventRecordFn = CUresult (*)(CUevent event, CUstream stream);
using CuEventSynchronizeFn = CUresult (*)(CUevent event);
using CuEventElapsedTimeFn = CUresult (*)(float* milliseconds, CUevent start, CUevent end);
using CuEventDestroyFn = CUresult (*)(CUevent event);
using CuGetErrorStringFn = CUresult (*)(CUresult error, const char** str);

// ------------------------------------------------------------------ NCCL
using ncclResult_t = int;
struct ncclComm;
using ncclComm_t = ncclComm*;

inline constexpr int kNcclUniqueIdBytes = 128;
struct ncclUniqueId {
  char internal[kNcclUniqueIdBytes];
};

inline constexpr ncclResult_t kNcclSuccess = 0;
inline constexpr ncclResult_t kNcclSystemError = 2;
inline constexpr ncclResult_t kNcclInvalidUsage = 5;
inline constexpr ncclResult_t kNcclRemoteError = 6;
inline constexpr ncclResult_t kNcclInProgress = 7;
inline constexpr ncclResult_t kNcclTimeout = 8;

inline constexpr int kNcclUint32 = 3;  // ncclDataType_t
inline constexpr int kNcclSum = 0;     // ncclRedOp_t

// The 2.18 prefix of ncclConfig_t (NCCL_FACTS A6): accepted by every library from 2.14 on, which
// copies min(size, its sizeof) bytes and restores defaults for fields newer than `version`.
struct NcclConfig218 {
  size_t size = sizeof(NcclConfig218);
  unsigned int magic = 0xcafebeef;
  unsigned int version = 21800;
  int blocking = INT_MIN;
  int cga_cluster_size = INT_MIN;
  int min_ctas = INT_MIN;
  int max_ctas = INT_MIN;
  const char* net_name = nullptr;
  int split_share = INT_MIN;
};
static_assert(sizeof(NcclConfig218) == 48 && offsetof(NcclConfig218, net_name) == 32,
              "ncclConfig_t 2.18 prefix layout (LP64)");

using NcclGetVersionFn = ncclResult_t (*)(int* version);
using NcclGetUniqueIdFn = ncclResult_t (*)(ncclUniqueId* id);
using NcclCommInitRankFn = ncclResult_t (*)(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                            int rank);
using NcclCommInitRankConfigFn = ncclResult_t (*)(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                                  int rank, NcclConfig218* config);
using NcclAllReduceFn = ncclResult_t (*)(const void* send, void* recv, size_t count, int datatype,
                                         int op, ncclComm_t comm, CUstream stream);
using NcclCommGetAsyncErrorFn = ncclResult_t (*)(ncclComm_t comm, ncclResult_t* error);
using NcclCommFn = ncclResult_t (*)(ncclComm_t comm);  // Abort, Destroy, Finalize
using NcclGetErrorStringFn = const char* (*)(ncclResult_t result);
using NcclGetLastErrorFn = const char* (*)(ncclComm_t comm);

}  // namespace nccl_triage::abi
