#include "core/gpu_holders.h"

#include <algorithm>
#include <iterator>
#include <vector>

#include "base/text.h"

namespace nccl_triage {
namespace {

// Holders of /dev/nvidia* on every production GPU node that run no job on the GPU:
// nvidia-persistenced keeps the device files open in persistence mode, DCGM's host engine and
// dcgm-exporter poll them, the device plugin and GPU feature discovery check health, nvidia-smi
// reads, and the agent's own probe children. /proc/<pid>/comm is cut at 15 characters.
constexpr std::string_view kSystemGpuHolders[] = {
    "nvidia-persiste", "nv-hostengine", "dcgm-exporter", "dcgmi",          "nvidia-device-p",
    "gpu-feature-dis", "nvidia-smi",    "nccl-triage",   "nccl-triage-pro"};

std::optional<size_t> Index(std::string_view id) {
  if (id.empty() || id.size() > 4) return std::nullopt;
  size_t n = 0;
  for (char c : id) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<size_t>(c - '0');
  }
  return n;
}

}  // namespace

bool IsSystemGpuHolder(std::string_view comm) {
  return std::find(std::begin(kSystemGpuHolders), std::end(kSystemGpuHolders), comm) !=
         std::end(kSystemGpuHolders);
}

bool IsWorkloadGpuHolder(const DeviceHolder& h) {
  return h.cuda_context && !IsSystemGpuHolder(h.comm);
}

std::optional<std::string> GpuOfDeviceId(const NodeSnapshot& s, std::string_view id) {
  if (size_t replica = id.find("::"); replica != std::string_view::npos) id = id.substr(0, replica);
  if (id.starts_with("GPU-")) {
    for (const auto& g : s.gpus) {
      if (!g.uuid.empty() && EqualsIgnoringAsciiCase(g.uuid, id)) return g.bdf;
    }
    return std::nullopt;
  }
  if (auto n = Index(id)) {
    std::vector<std::string> bdfs;
    for (const auto& g : s.gpus) bdfs.push_back(g.bdf);
    std::sort(bdfs.begin(), bdfs.end());
    if (*n < bdfs.size()) return bdfs[*n];
  }
  return std::nullopt;
}

std::optional<std::string> GpuBusyBy(const NodeSnapshot& s, std::string_view gpu_bdf) {
  auto gpu = std::find_if(s.gpus.begin(), s.gpus.end(),
                          [&](const GpuInfo& g) { return g.bdf == gpu_bdf; });
  const bool any = gpu == s.gpus.end() || gpu->minor < 0;
  const std::string device = any ? "" : "/dev/nvidia" + std::to_string(gpu->minor);
  for (const auto& h : s.gpu_holders) {
    if (IsWorkloadGpuHolder(h) && (any || h.device == device)) return DescribeHolder(h);
  }
  if (!s.gpu_allocations) return std::nullopt;
  for (const auto& a : *s.gpu_allocations) {
    std::optional<std::string> of = GpuOfDeviceId(s, a.device_id);
    if (!of) {
      return DescribeAllocation(a) + ", device " + a.device_id +
             " names no GPU of this node by UUID or index: every GPU counts as busy";
    }
    if (*of == gpu_bdf) return DescribeAllocation(a);
  }
  return std::nullopt;
}

std::string DescribeAllocation(const GpuAllocation& a) {
  return "assigned to " + a.owner + " (" + a.resource + ")";
}

std::string DescribeHolder(const DeviceHolder& h) {
  return h.comm + " pid " + std::to_string(h.pid) + " holds " + h.device;
}

}  // namespace nccl_triage
