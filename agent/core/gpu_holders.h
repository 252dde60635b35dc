// Which GPUs of a node are busy, and why. A GPU is busy when
//   - a workload process holds its device file /dev/nvidia<minor> (NodeSnapshot::gpu_holders)
//     with a CUDA context (DeviceHolder::cuda_context: libcuda mapped), other than the node's own
//     GPU services (nvidia-persistenced, DCGM, the device plugin, gpu-feature-discovery,
//     nvidia-smi) and this agent's children; a process that opens the device file only (a monitor
//     such as nvtop) does not count; or
//   - the kubelet assigned it to a container (NodeSnapshot::gpu_allocations, from pod-resources):
//     the container owns it even before its first CUDA call, e.g. while its job loads data.
// A GPU that cannot be told apart (no minor for the holder rule; an assignment that names no GPU
// of this node, a MIG device for one) is treated as busy. A probe never runs on a busy GPU;
// core/gpu_use.h applies this rule to every GPU of a node. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/snapshot.h"

namespace nccl_triage {

// The node's GPU services and the agent itself, by their 15-character comm.
bool IsSystemGpuHolder(std::string_view comm);

// A holder with a CUDA context that is not one of the above.
bool IsWorkloadGpuHolder(const DeviceHolder& h);

// The PCI bus id of the GPU a kubelet device id names: "GPU-<uuid>" (the NVIDIA device plugin's
// default; "GPU-<uuid>::N" is a time-sliced replica of it) by the GPU's UUID, a bare index ("3",
// the plugin's index strategy) by NVML's order, which is PCI bus id order; nullopt for a MIG
// device ("MIG-...") or an id that names no GPU of the snapshot.
std::optional<std::string> GpuOfDeviceId(const NodeSnapshot& s, std::string_view id);

// Why the GPU at PCI bus id `gpu_bdf` is busy, or nullopt when it is idle:
// "python3 pid 5150 holds /dev/nvidia0" or "assigned to ml/train-0/worker (nvidia.com/gpu)".
std::optional<std::string> GpuBusyBy(const NodeSnapshot& s, std::string_view gpu_bdf);

// "python3 pid 5150 holds /dev/nvidia0".
std::string DescribeHolder(const DeviceHolder& holder);
// "assigned to ml/train-0/worker (nvidia.com/gpu)".
std::string DescribeAllocation(const GpuAllocation& allocation);

}  // namespace nccl_triage
