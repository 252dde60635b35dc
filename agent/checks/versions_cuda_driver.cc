// versions.cuda_driver: the NVIDIA driver must be at least the first branch that supports the
// GPU generation (from the model name), or expect.gpu_driver_min when configured.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"
#include "core/probe_result.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 20 (checks/check.h).
NT_HOST_CHECK(VersionsCudaDriver, 20,
    CauseInfo{"versions.cuda_driver", kArch, kHost, kNone, "GPU driver vs GPU and CUDA",
              "A driver too old for the GPU generation or for the CUDA version NCCL was built "
              "against makes every CUDA call fail before NCCL touches the network.",
              "Install a driver branch that supports the GPU and the CUDA toolkit of the image "
              "(CUDA 12.x needs driver >= 525, CUDA 13 needs >= 580), or use the CUDA forward "
              "compatibility package.",
              "`proc/driver/nvidia/version` (or `sys/module/nvidia/version`), GPU models in "
              "`proc/driver/nvidia/gpus/*/information`",
              "fail when the driver is older than the GPU generation needs (A100 450, H100/H200 "
              "525, B200 570) or `expect.gpu_driver_min`, or GPUs are on PCI with no driver "
              "loaded; skip for an unknown generation"});

Finding VersionsCudaDriver(const NodeSnapshot& s, const Config& c, const CheckContext& ctx) {
  FindingBuilder b(ids::kVersionsCudaDriver);
  const auto gpu_pci = NvidiaGpuPci(s);
  if (s.gpus.empty() && gpu_pci.empty()) {
    b.Add("NVIDIA GPUs", "none", "proc/driver/nvidia/gpus, sys/bus/pci/devices");
    return b.Skip("no NVIDIA GPU on this node");
  }
  for (const auto& g : s.gpus) b.Add("GPU " + g.bdf, g.model, g.source);
  if (s.gpus.empty()) {
    b.Add("NVIDIA GPUs on PCI", std::to_string(gpu_pci.size()), "sys/bus/pci/devices");
  }

  // The driver version: proc/driver/nvidia/version, else sys/module/nvidia/version.
  std::string driver;
  b.AddFact("driver", s.nvidia_driver_version, "proc/driver/nvidia/version");
  if (s.nvidia_driver_version.ok()) {
    driver = *s.nvidia_driver_version.value;
  } else if (const KernelModule* m = FindModule(s, "nvidia");
             m && m->loaded && !m->version.empty()) {
    driver = m->version;
    b.Add("module nvidia", driver, ModuleSource(s, "nvidia"));
  }
  if (ctx.probe != nullptr && ctx.probe->cuda_driver_version > 0) {
    const int v = ctx.probe->cuda_driver_version;
    b.Add("CUDA driver API", std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10),
          "probe: cuDriverGetVersion");
  }
  if (driver.empty()) {
    const KernelModule* m = FindModule(s, "nvidia");
    if (m != nullptr && !m->loaded && s.nvidia_driver_version.error == "missing") {
      b.Add("module nvidia", "not loaded", ModuleSource(s, "nvidia"));
      return b.Fail("NVIDIA GPUs present but the NVIDIA driver is not loaded");
    }
    return b.Skip("the NVIDIA driver version could not be read");
  }
  const std::vector<int> have = ParseVersion(driver);
  if (have.empty()) return b.Skip("cannot interpret the driver version '" + driver + "'");

  std::string need, why;
  if (c.expect.gpu_driver_min) {
    need = *c.expect.gpu_driver_min;
    why = "expect.gpu_driver_min";
    b.Add("required", need, "config: expect.gpu_driver_min");
  } else {
    for (const auto& g : s.gpus) {
      auto gen = GenerationOf(g.model);
      if (!gen) continue;
      if (need.empty() || CompareVersions(ParseVersion(gen->driver_min), ParseVersion(need)) > 0) {
        need = std::string(gen->driver_min);
        why = std::string(gen->name) + " (" + g.model + ")";
      }
    }
    if (need.empty()) {
      return b.Skip(
          "driver " + driver + "; no known minimum for " +
          (s.gpus.empty() ? std::string("GPUs without a model name") : s.gpus.front().model) +
          " (set expect.gpu_driver_min)");
    }
    b.Add("required", ">= " + need, "GPU generation " + why);
  }
  if (CompareVersions(have, ParseVersion(need)) < 0) {
    return b.Fail("driver " + driver + " is older than " + need + " required by " + why);
  }
  return b.Pass("driver " + driver + " >= " + need + " required by " + why);
}

}  // namespace nccl_triage::checks
