// The catalogue's ids as compile-time symbols: code names an id as ids::kIbPortState, never as a
// string. Each constant is a CauseId, whose constructor runs at compile time and does not compile
// for an id that is not in the catalogue (core/catalogue.h), so a mistyped id here is a build
// error, and a mistyped constant elsewhere is an unknown name. One constant per catalogue entry,
// in catalogue order; the name is the id in PascalCase.
#pragma once

#include "core/catalogue.h"

namespace nccl_triage::ids {

// host checks: one per NT_HOST_CHECK of agent/checks/*.cc (k + its function's name), collected by
// the build (cmake/collect_host_checks.cmake)
#define NT_HOST_CHECK_ENTRY(function, id) inline constexpr CauseId k##function{id};
#include "core/host_check_list.inc"
#undef NT_HOST_CHECK_ENTRY

// workload containers
inline constexpr CauseId kEnvIbDisable{"env.ib_disable"};
inline constexpr CauseId kEnvIbHca{"env.ib_hca"};

// classifier / probe causes
inline constexpr CauseId kNetConnect{"net.connect"};
inline constexpr CauseId kNetConfig{"net.config"};
inline constexpr CauseId kIbFabric{"ib.fabric"};
inline constexpr CauseId kIbGdrAcs{"ib.gdr_acs"};
inline constexpr CauseId kIbHcaSelection{"ib.hca_selection"};
inline constexpr CauseId kIbPortDownRuntime{"ib.port_down_runtime"};
inline constexpr CauseId kIbVerbsCall{"ib.verbs_call"};
inline constexpr CauseId kHostSyscall{"host.syscall"};
inline constexpr CauseId kIbRdmaCoreMissing{"ib.rdma_core_missing"};
inline constexpr CauseId kShmIpc{"shm.ipc"};
inline constexpr CauseId kGpuDuplicate{"gpu.duplicate"};
inline constexpr CauseId kGpuVisibility{"gpu.visibility"};
inline constexpr CauseId kGpuP2p{"gpu.p2p"};
inline constexpr CauseId kGpuMixed{"gpu.mixed"};
inline constexpr CauseId kGpuHealth{"gpu.health"};
inline constexpr CauseId kNcclEnvMismatch{"nccl.env_mismatch"};
inline constexpr CauseId kIbNicMismatch{"ib.nic_mismatch"};
inline constexpr CauseId kVersionsMismatch{"versions.mismatch"};
inline constexpr CauseId kCudaDriver{"cuda.driver"};
inline constexpr CauseId kNcclApiUsage{"nccl.api_usage"};
inline constexpr CauseId kNcclLibrary{"nccl.library"};
inline constexpr CauseId kJobLauncher{"job.launcher"};
inline constexpr CauseId kIbSharp{"ib.sharp"};
inline constexpr CauseId kNcclTopology{"nccl.topology"};
inline constexpr CauseId kNcclEnvValue{"nccl.env_value"};
inline constexpr CauseId kEfaFabric{"efa.fabric"};
inline constexpr CauseId kHostMemoryPressure{"host.memory_pressure"};
inline constexpr CauseId kNcclTopoFile{"nccl.topo_file"};
inline constexpr CauseId kNetPlugin{"net.plugin"};
inline constexpr CauseId kIbMtuMismatch{"ib.mtu_mismatch"};
inline constexpr CauseId kNcclInternal{"nccl.internal"};
inline constexpr CauseId kNcclSystem{"nccl.system"};
inline constexpr CauseId kPeerExited{"peer.exited"};
inline constexpr CauseId kNcclTimeout{"nccl.timeout"};
inline constexpr CauseId kProbeTransport{"probe.transport"};
inline constexpr CauseId kProbeData{"probe.data"};
inline constexpr CauseId kIbBandwidth{"ib.bandwidth"};
inline constexpr CauseId kProbeIntraNode{"probe.intra_node"};
inline constexpr CauseId kProbeNoNccl{"probe.no_nccl"};
inline constexpr CauseId kProbeNoCuda{"probe.no_cuda"};
inline constexpr CauseId kProbeNoGpu{"probe.no_gpu"};

// kernel log
inline constexpr CauseId kKernelLinkFlap{"kernel.link_flap"};
inline constexpr CauseId kKernelCableModule{"kernel.cable_module"};
inline constexpr CauseId kKernelHcaAer{"kernel.hca_aer"};
inline constexpr CauseId kKernelGpuAer{"kernel.gpu_aer"};
inline constexpr CauseId kKernelXid{"kernel.xid"};
inline constexpr CauseId kKernelGpuOffBus{"kernel.gpu_off_bus"};

// cross-node (coordinator)
inline constexpr CauseId kPairPkeyPartition{"pair.pkey_partition"};
inline constexpr CauseId kPairLinkLayer{"pair.link_layer"};
inline constexpr CauseId kPairVersionSkew{"pair.version_skew"};
inline constexpr CauseId kPairArchMixed{"pair.arch_mixed"};

}  // namespace nccl_triage::ids
