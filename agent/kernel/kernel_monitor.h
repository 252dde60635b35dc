// KernelMonitor: the agent's view of the host kernel log, one call per agent cycle.
//
// Each Judge() reads what is new in <root>/dev/kmsg (KmsgFollower: the whole buffer at start,
// then what follows, through ring-buffer wrap), keeps the known events of the last `window_ms`
// (at most `max_events`, the oldest dropped first) and judges them on the snapshot's HCAs and
// GPUs (kernel_judge.h). Records
// the ring buffer overwrote before they were read are counted in every finding's evidence. An
// unreadable kmsg makes every kernel-log id skip with the reason, never fail. Counts() gives the
// totals since start for the metrics, without the records an earlier run counted (the saved
// cursor).
//
// Thread safety: Judge() from one thread (the agent loop); Counts() from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/snapshot.h"
#include "kernel/kernel_judge.h"
#include "kernel/kmsg_follower.h"

namespace nccl_triage::kernel {

struct KernelMonitorOptions {
  std::string root = "/";
  std::string state_dir;          // kmsg.cursor; empty: kept in memory
  int link_flaps_per_hour = 3;
  int64_t flap_stable_ms = 0;  // checks.flap_stable_seconds in ms (kernel_judge.h)
  int64_t window_ms = 24 * 3'600'000;  // how long an event keeps its finding
  size_t max_events = 10'000;
};

class KernelMonitor {
 public:
  explicit KernelMonitor(KernelMonitorOptions options);

  std::vector<Finding> Judge(const NodeSnapshot& snapshot, int64_t now_unix_ms);
  KernelCounts Counts() const;

 private:
  KernelMonitorOptions options_;
  KmsgFollower follower_;
  std::deque<KernelEvent> events_;  // loop thread only
  mutable std::mutex mu_;
  KernelCounts counts_;  // guarded by mu_
};

}  // namespace nccl_triage::kernel
