// The snapshot gatherer: reads one node's state, once, into a NodeSnapshot.
//
// Everything comes from files under one root (DESIGN "The files a snapshot reads"): "/" on a host,
// a fixture tree in tests and for `--root`. Facts only the running host can give (libibverbs
// queries, a real memory registration, interface addresses) are gathered only when the root is
// "/", or when a test injects fake live sources. A missing, empty or garbled file becomes an error
// inside the matching Fact, never an exception; only a root that cannot be used at all is an error
// Status. The gatherer holds no state between calls; GatherSnapshot is safe to call from several
// threads at once if the injected providers are.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "core/config.h"
#include "core/snapshot.h"
#include "host/live.h"

namespace nccl_triage {

// Kernel modules whose presence (sys/module/<name>) the checks judge: the RDMA core and providers,
// the NVIDIA driver and GPUDirect RDMA modules, and the AppArmor LSM (built in, but it still shows
// under sys/module when enabled).
const std::vector<std::string>& ModulesOfInterest();

struct GatherOptions {
  std::string root = "/";
  std::string node_name;        // empty: proc/sys/kernel/hostname under the root
  std::optional<int> self_pid;  // excluded from the device-holder scan; default getpid() for "/"
                                // and 0 (nobody) for other roots
  uint64_t mr_register_bytes = ChecksConfig{}.mr_register_bytes;
  // Live sources, not owned. nullptr: the real ones when the root is "/", none otherwise.
  // Injecting either one turns live gathering on for any root (tests).
  VerbsProvider* verbs = nullptr;
  InterfaceAddressProvider* addresses = nullptr;
  std::function<int64_t()> now_unix_ms;  // empty: the system clock
};

// Reads the node under options.root. Error: the root does not exist, is not a directory, or
// nothing at all could be read under it.
StatusOr<NodeSnapshot> GatherSnapshot(const GatherOptions& options);

// The same, as an object bound to its root (the form the agent keeps and calls every interval).
class SnapshotGatherer {
 public:
  explicit SnapshotGatherer(std::string root = "/") { options_.root = std::move(root); }
  explicit SnapshotGatherer(GatherOptions options) : options_(std::move(options)) {}

  StatusOr<NodeSnapshot> Gather() const { return GatherSnapshot(options_); }
  const GatherOptions& options() const { return options_; }

 private:
  GatherOptions options_;
};

}  // namespace nccl_triage
