// A workload's NCCL settings, read from its (already filtered) environment, and the checks of
// the catalogue's workload kind (env.ib_disable, env.ib_hca) that judge them against the host.
//
// Settings that the host checks already judge (NCCL_SOCKET_IFNAME -> net.socket_ifname,
// NCCL_IB_GID_INDEX -> ib.gid) are not judged here: they are handed to those checks through the
// per-container Config (see judge.h). Pure functions; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/nccl_device_list.h"
#include "core/snapshot.h"

namespace nccl_triage::workload {

struct NcclSettings {
  std::optional<std::string> ib_disable;     // NCCL_IB_DISABLE
  std::optional<std::string> net;            // NCCL_NET
  std::optional<std::string> socket_ifname;  // NCCL_SOCKET_IFNAME
  std::optional<std::string> ib_hca;         // NCCL_IB_HCA
  std::optional<std::string> ib_gid_index;   // NCCL_IB_GID_INDEX
  friend bool operator==(const NcclSettings&, const NcclSettings&) = default;
};

NcclSettings NcclSettingsFrom(const std::map<std::string, std::string>& env);


// The RDMA devices NCCL can open in a container: the host's devices whose uverbs node is in the
// container's /dev/infiniband, or all the host's devices when the container has none (the
// missing passthrough is container.rdma_devices' finding, not a second one here).
std::vector<const IbDevice*> OpenableDevices(const NodeSnapshot& host,
                                             const std::vector<std::string>& container_dev_ib);

// env.ib_disable: warn when NCCL_IB_DISABLE (non-zero) or NCCL_NET=Socket keeps NCCL off the
// node's RDMA devices; pass when IB is allowed; pass (nothing to use) on a node without HCAs.
Finding EnvIbDisable(const NcclSettings& settings, const NodeSnapshot& host,
                     std::string_view env_source);

// env.ib_hca: fail when NCCL_IB_HCA selects no port of the devices the container can open,
// warn when some of its names match nothing, pass when unset or all match; skip when the node
// has no RDMA device.
Finding EnvIbHca(const NcclSettings& settings, const NodeSnapshot& host,
                 const std::vector<std::string>& container_dev_ib, std::string_view env_source);

}  // namespace nccl_triage::workload
