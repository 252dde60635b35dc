#include "core/gpu_holders.h"

#include <algorithm>
#include <iterator>

namespace nccl_triage {
namespace {

// Holders of /dev/nvidia* on every production GPU node that run no job on the GPU:
// nvidia-persistenced keeps the device files open in persistence mode, DCGM's host engine and
// dcgm-exporter poll them, the device plugin and GPU feature discovery check health, nvidia-smi
// reads, and the agent's own probe children. /proc/<pid>/comm is cut at 15 characters.
constexpr std::string_view kSystemGpuHolders[] = {
    "nvidia-persiste", "nv-hostengine", "dcgm-exporter", "dcgmi",          "nvidia-device-p",
    "gpu-feature-dis", "nvidia-smi",    "nccl-triage",   "nccl-triage-pro"};

}  // namespace

bool IsSystemGpuHolder(std::string_view comm) {
  return std::find(std::begin(kSystemGpuHolders), std::end(kSystemGpuHolders), comm) !=
         std::end(kSystemGpuHolders);
}

const DeviceHolder* FirstWorkloadGpuHolder(const NodeSnapshot& s) {
  for (const auto& h : s.gpu_holders) {
    if (!IsSystemGpuHolder(h.comm)) return &h;
  }
  return nullptr;
}

const DeviceHolder* WorkloadHolderOfGpu(const NodeSnapshot& s, std::string_view gpu_bdf) {
  auto gpu = std::find_if(s.gpus.begin(), s.gpus.end(),
                          [&](const GpuInfo& g) { return g.bdf == gpu_bdf; });
  if (gpu == s.gpus.end() || gpu->minor < 0) return FirstWorkloadGpuHolder(s);
  const std::string device = "/dev/nvidia" + std::to_string(gpu->minor);
  for (const auto& h : s.gpu_holders) {
    if (h.device == device && !IsSystemGpuHolder(h.comm)) return &h;
  }
  return nullptr;
}

std::string HolderText(const DeviceHolder& h) {
  return "pid " + std::to_string(h.pid) + " " + h.comm;
}

}  // namespace nccl_triage
