// Which processes make a GPU busy: the holders of /dev/nvidia<minor> (NodeSnapshot::gpu_holders)
// that have a CUDA context (DeviceHolder::cuda_context: libcuda mapped), other than the node's own
// GPU services (nvidia-persistenced, DCGM, the device plugin, gpu-feature-discovery, nvidia-smi)
// and this agent's children. A probe never runs on a GPU a workload holds; core/gpu_use.h applies
// the same rule to every GPU of a node. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/snapshot.h"

namespace nccl_triage {

// The node's GPU services and the agent itself, by their 15-character comm.
bool IsSystemGpuHolder(std::string_view comm);

// A holder with a CUDA context that is not one of the above: a process that opens the device file
// only (a monitor such as nvtop) does not make the GPU busy.
bool IsWorkloadGpuHolder(const DeviceHolder& h);

// The first workload process holding the GPU at PCI bus id `gpu_bdf` (/dev/nvidia<its minor>), or
// null. When the GPU's minor is unknown (no information file), any workload holder counts: a GPU
// that cannot be told apart is treated as busy.
const DeviceHolder* WorkloadHolderOfGpu(const NodeSnapshot& s, std::string_view gpu_bdf);

// "pid 31337 python3".
std::string HolderText(const DeviceHolder& h);

}  // namespace nccl_triage
