// Live sources: what the snapshot can only learn from the running host, never from a file tree.
//
// VerbsProvider asks libibverbs for devices and ports and performs a real memory registration;
// InterfaceAddressProvider lists interface addresses. The gatherer uses them only when the root is
// "/" (or when a test injects a fake), so a fixture root never touches the real hardware. The
// real implementations hold no state between calls; an instance may be shared by threads only if
// each call is made from one thread at a time (libibverbs device lists are per call).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "core/snapshot.h"

namespace nccl_triage {

class VerbsProvider {
 public:
  virtual ~VerbsProvider() = default;
  // Names of the RDMA devices libibverbs sees ("mlx5_0"); an empty list is not an error.
  // Error: libibverbs could not list devices at all (no kernel support, no permission).
  virtual StatusOr<std::vector<std::string>> ListDevices() = 0;
  // ibv_query_port for every port of `device`, with the GID and PKey table lengths.
  virtual StatusOr<std::vector<VerbsPort>> QueryPorts(const std::string& device) = 0;
  // Allocates `bytes` with malloc and registers them with ibv_reg_mr on `device`, then releases
  // everything. The error text names the call and errno, e.g.
  // "ibv_reg_mr: Cannot allocate memory (errno 12)".
  virtual Status RegisterMemory(const std::string& device, uint64_t bytes) = 0;
};

// libibverbs itself.
std::unique_ptr<VerbsProvider> MakeRealVerbsProvider();

class InterfaceAddressProvider {
 public:
  virtual ~InterfaceAddressProvider() = default;
  // Interface name -> its addresses as "address/prefix" ("10.0.0.1/24", "fe80::1/64").
  virtual StatusOr<std::map<std::string, std::vector<std::string>>> Addresses() = 0;
};

// getifaddrs(3).
std::unique_ptr<InterfaceAddressProvider> MakeRealInterfaceAddressProvider();

}  // namespace nccl_triage
