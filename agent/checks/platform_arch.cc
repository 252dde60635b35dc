// platform.arch: the CPU architecture (mixing architectures in one job is a cross-node check) and
// virtualisation: a virtual machine without an RDMA device passed through has no usable RDMA.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 100 (checks/check.h).
NT_HOST_CHECK(PlatformArch, 100,
    CauseInfo{"platform.arch", kArch, kHost, kNone, "CPU architecture and virtualisation",
              "Ranks on different CPU architectures (x86_64 with aarch64) cannot share one NCCL "
              "job, and a virtual machine without SR-IOV/passthrough has no usable RDMA.",
              "Schedule one job on one architecture (nodeSelector kubernetes.io/arch); give VMs "
              "the HCA by PCI passthrough or an SR-IOV VF.",
              "`proc/sys/kernel/arch`, the `hypervisor` CPU flag in `proc/cpuinfo`, RDMA and GPU "
              "PCI functions",
              "fail for a GPU virtual machine without RDMA passthrough; warn for a VM without "
              "GPUs or RDMA, or an architecture NCCL is not built for"});

Finding PlatformArch(const NodeSnapshot& s, const Config&, const CheckContext&) {
  FindingBuilder b(ids::kPlatformArch);
  b.AddFact("architecture", s.arch, "proc/sys/kernel/arch");
  b.AddFact("hypervisor", s.hypervisor, "proc/cpuinfo");
  if (!s.arch.ok()) return b.Skip("the CPU architecture could not be read");
  const std::string& arch = *s.arch.value;
  const bool rdma = HasRdmaHardware(s);
  const bool gpu = HasNvidiaGpu(s);
  if (arch != "x86_64" && arch != "aarch64" && arch != "ppc64le") {
    return b.Warn(arch + ": NCCL is built for x86_64, aarch64 and ppc64le only");
  }
  if (!s.hypervisor.ok()) return b.Pass(arch + " (virtualisation unknown)");
  if (!*s.hypervisor.value) return b.Pass(arch + ", bare metal");
  if (rdma) return b.Pass(arch + " virtual machine with RDMA hardware passed through");
  if (gpu) {
    return b.Fail(arch +
                  " virtual machine with GPUs but no RDMA device passed through: NCCL "
                  "between nodes can only use sockets");
  }
  return b.Warn(arch + " virtual machine without RDMA passthrough (and without GPUs)");
}

}  // namespace nccl_triage::checks
