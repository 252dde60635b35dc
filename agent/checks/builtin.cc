#include "checks/builtin.h"

#include <array>

namespace nccl_triage {

void RegisterBuiltinChecks(CheckRegistry& registry) {
  // Catalogue order: architecture first, then ib_resource, as the README table lists them.
  static constexpr std::array kBuiltins = {
      Check{"versions.nccl", &checks::VersionsNccl},
      Check{"versions.cuda_driver", &checks::VersionsCudaDriver},
      Check{"versions.ofed_kernel", &checks::VersionsOfedKernel},
      Check{"container.host_network", &checks::ContainerHostNetwork},
      Check{"container.rdma_devices", &checks::ContainerRdmaDevices},
      Check{"container.ipc_lock", &checks::ContainerIpcLock},
      Check{"limits.memlock", &checks::LimitsMemlock},
      Check{"limits.nofile", &checks::LimitsNofile},
      Check{"security.lsm", &checks::SecurityLsm},
      Check{"platform.arch", &checks::PlatformArch},
      Check{"shm.size", &checks::ShmSize},
      Check{"net.socket_ifname", &checks::NetSocketIfname},
      Check{"ib.hca_present", &checks::IbHcaPresent},
      Check{"ib.driver", &checks::IbDriver},
      Check{"ib.port_state", &checks::IbPortState},
      Check{"ib.port_rate", &checks::IbPortRate},
      Check{"ib.subnet_manager", &checks::IbSubnetManager},
      Check{"ib.pkey", &checks::IbPkey},
      Check{"ib.gid", &checks::IbGid},
      Check{"ib.port_errors", &checks::IbPortErrors},
      Check{"ib.mr_register", &checks::IbMrRegister},
      Check{"ib.contention", &checks::IbContention},
      Check{"ib.peermem", &checks::IbPeermem},
  };
  for (const auto& c : kBuiltins) {
    // The table above is fixed at compile time and tested; a rejection here is a programming
    // error that the registry tests catch, so the status is deliberately not propagated.
    (void)registry.Register(c);
  }
}

}  // namespace nccl_triage
