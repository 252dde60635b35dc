// ib.peermem: GPUDirect RDMA lets the HCA read and write GPU memory directly. Without
// nvidia_peermem (or the older nv_peer_mem) NCCL stages through host memory: slower, not broken,
// hence a warning.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 240 (checks/check.h).
NT_HOST_CHECK(IbPeermem, 240,
    CauseInfo{"ib.peermem", kIb, kHost, kSlowsIb, "GPUDirect RDMA module",
              "Without nvidia_peermem (or nv_peer_mem, or dma-buf support) NCCL copies through "
              "host memory: it works, but slower.",
              "modprobe nvidia_peermem (shipped with the NVIDIA driver) and load it at boot.",
              "`sys/module/{nvidia_peermem,nv_peer_mem}` with GPUs and HCAs present",
              "warn when neither module is loaded (slower, not broken)"});

Finding IbPeermem(const NodeSnapshot& s, const Config&, const CheckContext&) {
  if (auto skip = SkipWithoutHcas(ids::kIbPeermem, s)) return *skip;
  FindingBuilder b(ids::kIbPeermem);
  if (!HasNvidiaGpu(s)) {
    b.Add("NVIDIA GPUs", "none", "proc/driver/nvidia/gpus");
    return b.Skip("no NVIDIA GPU on this node");
  }
  for (const char* m : {"nvidia_peermem", "nv_peer_mem"}) {
    b.Add(std::string("module ") + m, ModuleLoaded(s, m) ? "loaded" : "not loaded",
          ModuleSource(s, m));
  }
  if (ModuleLoaded(s, "nvidia_peermem")) return b.Pass("nvidia_peermem loaded: GPUDirect RDMA");
  if (ModuleLoaded(s, "nv_peer_mem")) return b.Pass("nv_peer_mem loaded: GPUDirect RDMA");
  return b.Warn(
      "GPUs and HCAs present but no GPUDirect RDMA module loaded: NCCL stages through "
      "host memory (unless the driver and kernel support DMA-BUF)");
}

}  // namespace nccl_triage::checks
