// Leadership: this coordinator replica's part in the election between replicas. It owns the
// election's and the pod label's threads, the client behind the leader's fence, and whether the
// election thread last said this replica leads. That flag is an atomic, written under the Impl's
// mu_ (whose waiters it wakes); the elector and the label keep their own locks.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "coordinator/status_view.h"
#include "kube/kube_api.h"
#include "kube/leader_election.h"
#include "kube/leader_label.h"

namespace nccl_triage {

class Leadership {
 public:
  // `leader` null: no election, this replica always leads. `label` (with `leader`): the leader's
  // pod label, or null.
  Leadership(std::shared_ptr<LeaderElector> leader, std::shared_ptr<LeaderPodLabel> label);

  bool elects() const { return leader_ != nullptr; }

  // The client for this replica's writes: `kube` behind the fence (every write asks the elector
  // first, so none leaves after the Lease is lost), or `kube` itself without an election.
  std::shared_ptr<KubeClient> Fence(std::shared_ptr<KubeClient> kube);
  // The client around the fence (for reads, such as a watch that a standby keeps warm); null
  // without an election.
  KubeClient* unfenced() const { return unfenced_.get(); }

  // Whether this replica may sweep, remediate and accept agents now: it was told it leads, and
  // the elector still says so. Always true without an election.
  bool Leading() const;
  // The election thread's news, recorded under the Impl's mu_.
  void Set(bool leading) { leading_ = leading; }

  // Starts the label's loop (before the first try: a pod whose former container led may still
  // carry the label), then the election; `on_change` is called from the election thread after
  // the label was woken to follow. Nothing without an election.
  void Start(std::function<void(bool leading)> on_change);
  // The label leaves this pod (first at shutdown: agents then reconnect to the successor).
  void StopLabel();
  // The election ends and the Lease is given up (last at shutdown).
  void StopElection();

  // "namespace/name" of the Lease; "" without an election.
  std::string LeaseRef() const;
  // What /status shows of the election; nullopt without one.
  std::optional<CoordinatorView::Leadership> View() const;

 private:
  std::shared_ptr<LeaderElector> leader_;
  std::shared_ptr<LeaderPodLabel> label_;
  std::shared_ptr<KubeClient> unfenced_;
  std::atomic<bool> leading_{false};
  std::jthread election_thread_;
  std::jthread label_thread_;
};

}  // namespace nccl_triage
