// Judging a workload container with the catalogue's own checks.
//
// The host checks judge a NodeSnapshot; a container is judged by building, per process, the
// NodeSnapshot that process would have gathered about itself: its own limits, capabilities,
// network namespace (against the host's), /dev/infiniband, /dev/shm mount and interfaces, on top
// of the host's hardware facts (HCAs, uverbs, GIDs, memory), and the Config its environment
// implies (NCCL_SOCKET_IFNAME -> expect.socket_ifname, NCCL_IB_GID_INDEX -> expect.ib_gid_index).
// The same check functions then run on it (kWorkloadHostChecks), followed by the catalogue's
// workload checks of the NCCL environment (nccl_env.h). A container's finding per check is the
// worst over its processes. One catalogue, one set of rules.
//
// Everything here is a pure function of plain values; thread-safe.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "checks/check.h"
#include "core/catalogue.h"
#include "core/config.h"
#include "core/snapshot.h"
#include "workload/workload.h"

namespace nccl_triage::workload {

// The host checks that apply to a container, in catalogue order: the catalogue's host checks
// marked kRunsInContainers. The others judge the node's hardware, which a container shares with
// the host and the agent already reports. versions.nccl judges the NCCL library mapped in the
// process (it lives in the image), handed to the check as the probe result it otherwise reads the
// version from.
inline constexpr auto kWorkloadHostChecks =
    CatalogueIds<CauseKind::kHostCheck, kRunsInContainers>();

// Every check id a workload verdict can carry, in the order findings are listed.
std::vector<std::string_view> WorkloadCheckIds();

// What the node advertises through the API (status.allocatable), for the RDMA resource finding.
struct NodeResources {
  bool known = false;                       // the node object was read
  std::vector<std::string> rdma_resources;  // allocatable names starting with "rdma/"
  std::string error;                        // why it is unknown
};

// The NodeSnapshot a process would have gathered about itself (see the file comment).
NodeSnapshot ProcessCheckSnapshot(const ProcessFacts& process, const Fact<std::string>& host_netns,
                                  const NodeSnapshot& host);

// The Config its environment implies: the base config with the workload's NCCL_SOCKET_IFNAME and
// NCCL_IB_GID_INDEX in place of the agent's own expectations (unset in the workload: unset).
Config ProcessCheckConfig(const ProcessFacts& process, const Config& base);

// All workload findings for one process: the host checks of kWorkloadHostChecks run through
// `registry` (which must hold them; a missing one is reported as skip), then env.ib_disable and
// env.ib_hca.
std::vector<Finding> JudgeProcess(const ProcessFacts& process, const Fact<std::string>& host_netns,
                                  const NodeSnapshot& host, const Config& config,
                                  const CheckRegistry& registry);

// The device plugin side of container.rdma_devices: the node advertises rdma/* resources and the
// container requests none of them. `devices_present` says whether the container has the uverbs
// devices anyway (privileged, a hostPath mount): then it is a warn, otherwise a fail. nullopt when
// there is nothing to say (the node advertises none, or the container requests one).
std::optional<Finding> RdmaResourceFinding(const PodContainer& pod, const NodeResources& node,
                                           bool devices_present);

// The verdict on one container: per check the worst finding over its processes (with the pid in
// the evidence), the RDMA resource finding merged into container.rdma_devices, the class and the
// failing causes as a node report computes them.
ContainerVerdict JudgeContainer(const ContainerFacts& container, const PodContainer& pod,
                                const Fact<std::string>& host_netns, const NodeSnapshot& host,
                                const Config& config, const NodeResources& node,
                                const CheckRegistry& registry);

}  // namespace nccl_triage::workload
