// Finding and loading libcuda.so.1 and libnccl.so.2 with dlopen, and resolving their symbols.
//
// Search order (the same for both libraries; the README documents it):
//   1. the configured paths (ProbeConfig::{nccl,cuda}_library_paths), in order; an entry that is a
//      directory means <dir>/<soname>;
//   2. the SONAME itself, through the dynamic loader (LD_LIBRARY_PATH, the binary's RUNPATH,
//      /etc/ld.so.cache, the default directories) — skipped when only configured paths are
//      allowed;
//   3. well-known install locations under the root: for NCCL the pip wheel layout
//      <prefix>/lib/python3.*/{site,dist}-packages/nvidia/nccl/lib/libnccl.so.2 for the usual
//      Python prefixes (/usr, /usr/local, /opt/conda, /opt/*/.venv, /opt/*), plus
//      /usr/local/nccl/lib and /usr/local/cuda*/lib{64,}; for CUDA the driver's container mounts
//      (/usr/local/nvidia/lib64, /usr/lib64, /usr/lib/x86_64-linux-gnu, /usr/lib/aarch64-linux-gnu)
//      — also skipped then.
// Loaded libraries are never dlclosed: NCCL starts threads that would outlive the code.
// Thread-compatible; used only inside the probe child.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "probe/nccl_abi.h"

namespace nccl_triage {

inline constexpr const char* kNcclSoname = "libnccl.so.2";
inline constexpr const char* kCudaSoname = "libcuda.so.1";

struct LibrarySearch {
  std::vector<std::string> configured;  // file or directory paths, tried first
  bool default_search = true;           // the loader's own search, then the well-known locations
  std::string root = "/";               // prefix for the well-known locations
};

// The candidate list in order (configured, soname, well-known paths that exist). Pure apart from
// globbing the well-known patterns under the root.
std::vector<std::string> LibraryCandidates(const LibrarySearch& search, const std::string& soname);

// A dlopen'ed library. `path` is the file the loader resolved; `tried` lists what was attempted
// (for the "not found" detail).
struct LoadedLibrary {
  void* handle = nullptr;
  std::string path;
  std::vector<std::string> tried;
  std::string error;  // the last dlerror when nothing loaded
  void* Symbol(const char* name) const;
};

StatusOr<LoadedLibrary> LoadLibrary(const LibrarySearch& search, const std::string& soname);

// The CUDA driver entry points the probe calls; NULL members are absent from the library.
struct CudaApi {
  abi::CuInitFn init = nullptr;
  abi::CuDriverGetVersionFn driver_get_version = nullptr;
  abi::CuDeviceGetCountFn device_get_count = nullptr;
  abi::CuDeviceGetFn device_get = nullptr;
  abi::CuDeviceGetByPciBusIdFn device_get_by_pci_bus_id = nullptr;  // absent before CUDA 4.1
  abi::CuDeviceGetNameFn device_get_name = nullptr;
  abi::CuDeviceGetPciBusIdFn device_get_pci_bus_id = nullptr;
  abi::CuDevicePrimaryCtxRetainFn primary_ctx_retain = nullptr;
  abi::CuDevicePrimaryCtxReleaseFn primary_ctx_release = nullptr;
  abi::CuCtxSetCurrentFn ctx_set_current = nullptr;
  abi::CuMemAllocFn mem_alloc = nullptr;
  abi::CuMemFreeFn mem_free = nullptr;
  abi::CuMemsetD32Fn memset_d32 = nullptr;
  abi::CuMemcpyDtoHFn memcpy_dtoh = nullptr;
  abi::CuMemcpyHtoDFn memcpy_htod = nullptr;
  abi::CuStreamCreateFn stream_create = nullptr;
  abi::CuStreamSynchronizeFn stream_synchronize = nullptr;
  abi::CuStreamQueryFn stream_query = nullptr;
  abi::CuStreamDestroyFn stream_destroy = nullptr;
  // Device-side timing of the timed all-reduces; without all five the probe times on the host.
  abi::CuEventCreateFn event_create = nullptr;
  abi::CuEventRecordFn event_record = nullptr;
  abi::CuEventSynchronizeFn event_synchronize = nullptr;
  abi::CuEventElapsedTimeFn event_elapsed_time = nullptr;
  abi::CuEventDestroyFn event_destroy = nullptr;
  abi::CuGetErrorStringFn get_error_string = nullptr;
  abi::CuGetErrorStringFn get_error_name = nullptr;
};

// The NCCL entry points; NULL members are absent (an older library, NCCL_FACTS A4).
struct NcclApi {
  abi::NcclGetVersionFn get_version = nullptr;
  abi::NcclGetUniqueIdFn get_unique_id = nullptr;
  abi::NcclCommInitRankFn comm_init_rank = nullptr;
  abi::NcclCommInitRankConfigFn comm_init_rank_config = nullptr;  // 2.14+
  abi::NcclAllReduceFn all_reduce = nullptr;
  abi::NcclCommGetAsyncErrorFn comm_get_async_error = nullptr;  // 2.4+
  abi::NcclCommFn comm_abort = nullptr;                         // 2.4+
  abi::NcclCommFn comm_destroy = nullptr;
  abi::NcclCommFn comm_finalize = nullptr;  // 2.14+
  abi::NcclGetErrorStringFn get_error_string = nullptr;
  abi::NcclGetLastErrorFn get_last_error = nullptr;  // 2.13+
};

// Resolves the symbols; fails when one the probe cannot do without is missing (it names it).
StatusOr<CudaApi> ResolveCuda(const LoadedLibrary& lib);
StatusOr<NcclApi> ResolveNccl(const LoadedLibrary& lib);

// "2.28.9" from ncclGetVersion's integer (NCCL_FACTS A5: 2804 is 2.8.4, 22809 is 2.28.9).
std::string DecodeNcclVersion(int code);

}  // namespace nccl_triage
