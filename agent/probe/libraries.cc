#include "probe/libraries.h"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <initializer_list>

#include "base/text.h"

namespace nccl_triage {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string JoinRoot(const std::string& root, const std::string& abs) {
  if (root.empty() || root == "/") return abs;
  return (root.back() == '/' ? root.substr(0, root.size() - 1) : root) + abs;
}

std::vector<std::string> WellKnownPatterns(const std::string& soname) {
  if (soname == kNcclSoname) {
    std::vector<std::string> patterns;
    // pip wheels (nvidia-nccl-cu12/cu13): PyTorch images load NCCL from here, and nothing puts
    // this folder on the loader's path.
    for (const char* prefix : {"/usr/local/lib", "/usr/lib", "/opt/conda/lib", "/opt/*/.venv/lib",
                               "/opt/*/lib", "/root/.local/lib"}) {
      for (const char* kind : {"site-packages", "dist-packages"}) {
        patterns.push_back(std::string(prefix) + "/python3*/" + kind +
                           "/nvidia/nccl/lib/libnccl.so.2");
      }
    }
    patterns.push_back("/usr/local/nccl/lib/libnccl.so.2");
    patterns.push_back("/usr/local/cuda*/lib64/libnccl.so.2");
    patterns.push_back("/usr/local/cuda*/lib/libnccl.so.2");
    return patterns;
  }
  // The NVIDIA container toolkit mounts the driver's user-space libraries here.
  return {"/usr/local/nvidia/lib64/" + soname, "/usr/lib64/" + soname,
          "/usr/lib/x86_64-linux-gnu/" + soname, "/usr/lib/aarch64-linux-gnu/" + soname};
}

template <typename Fn>
void Resolve(const LoadedLibrary& lib, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(lib.Symbol(name));
}

// An entry point the probe cannot run without, and whether it resolved.
struct Needed {
  template <typename Fn>
  Needed(Fn* fn, const char* symbol) : resolved(fn != nullptr), name(symbol) {}
  bool resolved;
  const char* name;
};

// OK when every needed entry point resolved, else NotFound naming those missing.
Status RequireAll(const LoadedLibrary& lib, std::initializer_list<Needed> needed) {
  std::vector<std::string> missing;
  for (const Needed& n : needed) {
    if (!n.resolved) missing.push_back(n.name);
  }
  if (missing.empty()) return Status::Ok();
  return NotFound(lib.path + " lacks " + Join(missing));
}

}  // namespace

void* LoadedLibrary::Symbol(const char* name) const {
  return handle == nullptr ? nullptr : dlsym(handle, name);
}

std::vector<std::string> LibraryCandidates(const LibrarySearch& search, const std::string& soname) {
  std::vector<std::string> out;
  auto add = [&](std::string p) {
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(std::move(p));
  };
  for (const auto& c : search.configured) {
    if (c.empty()) continue;
    add(IsDirectory(c) ? (c.back() == '/' ? c : c + "/") + soname : c);
  }
  if (!search.default_search) return out;
  add(soname);
  for (const auto& pattern : WellKnownPatterns(soname)) {
    glob_t g{};
    if (glob(JoinRoot(search.root, pattern).c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
      std::vector<std::string> hits(g.gl_pathv, g.gl_pathv + g.gl_pathc);
      std::sort(hits.begin(), hits.end());
      for (auto& h : hits) add(std::move(h));
    }
    globfree(&g);
  }
  return out;
}

StatusOr<LoadedLibrary> LoadLibrary(const LibrarySearch& search, const std::string& soname) {
  LoadedLibrary lib;
  for (const auto& candidate : LibraryCandidates(search, soname)) {
    lib.tried.push_back(candidate);
    // RTLD_LOCAL keeps the fake and real symbols of one library from resolving another's.
    void* h = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      lib.error = e != nullptr ? e : "dlopen failed";
      continue;
    }
    lib.handle = h;
    lib.path = candidate;
    // The file the loader resolved (a bare SONAME says nothing about which NCCL was used).
    struct link_map* map = nullptr;
    if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
        map->l_name[0] != '\0') {
      lib.path = map->l_name;
    }
    return lib;
  }
  const std::string tried = Join(lib.tried);
  return NotFound(soname + " not found (tried: " + (tried.empty() ? "nothing" : tried) + ")" +
                  (lib.error.empty() ? "" : "; last error: " + lib.error));
}

StatusOr<CudaApi> ResolveCuda(const LoadedLibrary& lib) {
  CudaApi a;
  Resolve(lib, a.init, "cuInit");
  Resolve(lib, a.driver_get_version, "cuDriverGetVersion");
  Resolve(lib, a.device_get_count, "cuDeviceGetCount");
  Resolve(lib, a.device_get, "cuDeviceGet");
  Resolve(lib, a.device_get_by_pci_bus_id, "cuDeviceGetByPCIBusId");
  Resolve(lib, a.device_get_name, "cuDeviceGetName");
  Resolve(lib, a.device_get_pci_bus_id, "cuDeviceGetPCIBusId");
  Resolve(lib, a.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  Resolve(lib, a.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2");
  if (a.primary_ctx_release == nullptr) {
    Resolve(lib, a.primary_ctx_release, "cuDevicePrimaryCtxRelease");  // drivers before 11.0
  }
  Resolve(lib, a.ctx_set_current, "cuCtxSetCurrent");
  Resolve(lib, a.mem_alloc, "cuMemAlloc_v2");
  Resolve(lib, a.mem_free, "cuMemFree_v2");
  Resolve(lib, a.memset_d32, "cuMemsetD32_v2");
  Resolve(lib, a.memcpy_dtoh, "cuMemcpyDtoH_v2");
  Resolve(lib, a.memcpy_htod, "cuMemcpyHtoD_v2");
  Resolve(lib, a.stream_create, "cuStreamCreate");
  Resolve(lib, a.stream_synchronize, "cuStreamSynchronize");
  Resolve(lib, a.stream_query, "cuStreamQuery");
  Resolve(lib, a.stream_destroy, "cuStreamDestroy_v2");
  Resolve(lib, a.event_create, "cuEventCreate");
  Resolve(lib, a.event_record, "cuEventRecord");
  Resolve(lib, a.event_synchronize, "cuEventSynchronize");
  Resolve(lib, a.event_elapsed_time, "cuEventElapsedTime");
  Resolve(lib, a.event_destroy, "cuEventDestroy_v2");
  Resolve(lib, a.get_error_string, "cuGetErrorString");
  Resolve(lib, a.get_error_name, "cuGetErrorName");
  Status needed = RequireAll(lib, {{a.init, "cuInit"},
                                   {a.device_get, "cuDeviceGet"},
                                   {a.primary_ctx_retain, "cuDevicePrimaryCtxRetain"},
                                   {a.ctx_set_current, "cuCtxSetCurrent"},
                                   {a.mem_alloc, "cuMemAlloc_v2"},
                                   {a.memset_d32, "cuMemsetD32_v2"},
                                   {a.memcpy_dtoh, "cuMemcpyDtoH_v2"},
                                   {a.memcpy_htod, "cuMemcpyHtoD_v2"},
                                   {a.stream_create, "cuStreamCreate"},
                                   {a.stream_synchronize, "cuStreamSynchronize"}});
  if (!needed.ok()) return needed;
  return a;
}

StatusOr<NcclApi> ResolveNccl(const LoadedLibrary& lib) {
  NcclApi a;
  Resolve(lib, a.get_version, "ncclGetVersion");
  Resolve(lib, a.get_unique_id, "ncclGetUniqueId");
  Resolve(lib, a.comm_init_rank, "ncclCommInitRank");
  Resolve(lib, a.comm_init_rank_config, "ncclCommInitRankConfig");
  Resolve(lib, a.all_reduce, "ncclAllReduce");
  Resolve(lib, a.comm_get_async_error, "ncclCommGetAsyncError");
  Resolve(lib, a.comm_abort, "ncclCommAbort");
  Resolve(lib, a.comm_destroy, "ncclCommDestroy");
  Resolve(lib, a.comm_finalize, "ncclCommFinalize");
  Resolve(lib, a.get_error_string, "ncclGetErrorString");
  Resolve(lib, a.get_last_error, "ncclGetLastError");
  Status needed = RequireAll(lib, {{a.get_unique_id, "ncclGetUniqueId"},
                                   {a.comm_init_rank, "ncclCommInitRank"},
                                   {a.all_reduce, "ncclAllReduce"},
                                   {a.comm_destroy, "ncclCommDestroy"},
                                   {a.get_error_string, "ncclGetErrorString"}});
  if (!needed.ok()) return needed;
  return a;
}

std::string DecodeNcclVersion(int v) {
  int major, minor, patch;
  if (v >= 10000) {
    major = v / 10000;
    minor = (v / 100) % 100;
    patch = v % 100;
  } else {
    major = v / 1000;
    minor = (v / 100) % 10;
    patch = v % 100;
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace nccl_triage
