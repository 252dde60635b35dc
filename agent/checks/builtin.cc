#include "checks/builtin.h"

#include <array>
#include <stdexcept>
#include <string>

#include "core/ids.h"

namespace nccl_triage {
namespace {

// Catalogue order: architecture first, then ib_resource, as the README table lists them.
constexpr std::array kBuiltins = {
    Check{ids::kVersionsNccl, &checks::VersionsNccl},
    Check{ids::kVersionsCudaDriver, &checks::VersionsCudaDriver},
    Check{ids::kVersionsOfedKernel, &checks::VersionsOfedKernel},
    Check{ids::kContainerHostNetwork, &checks::ContainerHostNetwork},
    Check{ids::kContainerRdmaDevices, &checks::ContainerRdmaDevices},
    Check{ids::kContainerIpcLock, &checks::ContainerIpcLock},
    Check{ids::kLimitsMemlock, &checks::LimitsMemlock},
    Check{ids::kLimitsNofile, &checks::LimitsNofile},
    Check{ids::kSecurityLsm, &checks::SecurityLsm},
    Check{ids::kPlatformArch, &checks::PlatformArch},
    Check{ids::kShmSize, &checks::ShmSize},
    Check{ids::kNetSocketIfname, &checks::NetSocketIfname},
    Check{ids::kIbHcaPresent, &checks::IbHcaPresent},
    Check{ids::kIbDriver, &checks::IbDriver},
    Check{ids::kIbPortState, &checks::IbPortState},
    Check{ids::kIbPortRate, &checks::IbPortRate},
    Check{ids::kIbSubnetManager, &checks::IbSubnetManager},
    Check{ids::kIbPkey, &checks::IbPkey},
    Check{ids::kIbGid, &checks::IbGid},
    Check{ids::kIbPortErrors, &checks::IbPortErrors},
    Check{ids::kIbMrRegister, &checks::IbMrRegister},
    Check{ids::kIbVerbsView, &checks::IbVerbsView},
    Check{ids::kIbContention, &checks::IbContention},
    Check{ids::kIbPeermem, &checks::IbPeermem},
    Check{ids::kIbRailTopology, &checks::IbRailTopology},
};

// What the registry would reject at run time, and what the README's check table needs, decided
// when this file is built: the table is exactly the catalogue's host checks, in its order, each
// with a function.
constexpr bool IsTheCataloguesHostChecksInOrder() {
  constexpr auto kHostChecks = CatalogueIds<CauseKind::kHostCheck>();
  if (kHostChecks.size() != kBuiltins.size()) return false;
  for (size_t i = 0; i < kBuiltins.size(); ++i) {
    if (kBuiltins[i].id != kHostChecks[i] || kBuiltins[i].run == nullptr) return false;
  }
  return true;
}
static_assert(IsTheCataloguesHostChecksInOrder(),
              "kBuiltins must list every host check of the catalogue once, in catalogue order");

}  // namespace

Status RegisterBuiltinChecks(CheckRegistry& registry) {
  for (const auto& c : kBuiltins) {
    if (Status s = registry.Register(c); !s.ok()) {
      return Internal("built-in checks: " + s.message());
    }
  }
  return Status::Ok();
}

CheckRegistry BuiltinCheckRegistry() {
  CheckRegistry registry;
  if (Status s = RegisterBuiltinChecks(registry); !s.ok()) throw std::logic_error(s.message());
  return registry;
}

}  // namespace nccl_triage
