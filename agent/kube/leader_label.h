// LeaderPodLabel: the label that marks the leading coordinator's pod, so that the coordinator
// Service can select the leader by label while every live replica is Ready (docs/
// agent-and-coordinator.md, "Two coordinators"; a PodDisruptionBudget then counts the standby).
//
// The leader puts kLeaderLabelKey=kLeaderLabelValue on its own pod, then removes it from every
// other pod of `pod_selector` that still carries it (a leader killed with SIGKILL keeps its
// labels; so does one whose patch reached the API server after it lost the Lease), and looks
// again every `resync`. A replica that does not lead removes the label from its own pod: at start
// (the container restarted in a pod that kept it), when it loses the Lease, and on shutdown,
// before the Lease is released.
//
// Every write that adds the label or removes it from another pod asks the fence (the elector's
// IsLeader) first and is not sent when it says no; removing the label from its own pod is never
// fenced (a replica may always step out of the Service). A write already sent when the Lease was
// lost is undone by the new leader's clearing of the others and by this replica's own removal.
//
// Sync does at most a few calls and returns: the caller runs it on a thread of its own with a
// client of its own (a pod patch may wait on admission webhooks; a Lease renewal must not wait
// behind it). Run is that loop.
//
// Thread-safety: Sync, ClearOwn and Run from one thread at a time; Wake and Snapshot from any.
// The client, logger and clock must outlive it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>

#include "base/clock.h"
#include "kube/kube_api.h"

namespace nccl_triage {

class Logger;

inline constexpr const char* kLeaderLabelKey = "nccl-triage.io/coordinator-role";
inline constexpr const char* kLeaderLabelValue = "leader";

struct LeaderLabelOptions {
  std::string pod_namespace;  // POD_NAMESPACE
  std::string pod_name;       // POD_NAME
  // The release's coordinator pods ("app.kubernetes.io/instance=x,app.kubernetes.io/component=
  // coordinator"): the leader clears the label only from these, never from another release's.
  std::string pod_selector;
  std::chrono::milliseconds resync{30'000};  // a leader looks for stale labels this often
  std::chrono::milliseconds retry{2'000};    // Run: the longest wait between two syncs
};

// A namespace, a pod name and a selector; an error naming what is missing.
Status ValidateLeaderLabel(const LeaderLabelOptions& options);

class LeaderPodLabel {
 public:
  // `fence`: whether this replica leads now (LeaderElector::IsLeader), asked before every write
  // but the removal of its own label.
  LeaderPodLabel(KubeClient& kube, LeaderLabelOptions options, std::function<bool()> fence,
                 Logger& log, Clock& clock);

  // One step towards the labels `fence` says: the own label put (leading) or removed (not), and,
  // leading, the others cleared once after the label is put and every `resync` after. A failed
  // call is logged once (until it changes) and tried again at the next Sync.
  void Sync();
  // Removes the label from this replica's own pod (unfenced). True when the API server took it
  // (or the pod is gone).
  bool ClearOwn();
  // Run: sync now instead of after `retry` (the election thread, when leadership changes).
  void Wake();
  // Syncs at start, on Wake and every `retry` until `stop`; then returns (the caller clears its
  // own label before it releases the Lease: ClearOwn).
  void Run(std::stop_token stop);

  struct State {
    bool labelled = false;   // this replica's pod carries the label, as last written or read
    std::string last_error;  // the last failed call, "" after a success
  };
  State Snapshot() const;
  const LeaderLabelOptions& options() const { return options_; }

 private:
  enum class Own { kUnknown, kLabelled, kClear };
  bool LabelOwn();
  // Lists the labelled pods of the selector and clears every one but this replica's; false when a
  // call failed (tried again at the next Sync).
  bool ClearOthers();
  void Failed(const std::string& what, const KubeResponse& r);
  void Succeeded();
  void SetOwn(Own own);

  KubeClient& kube_;
  LeaderLabelOptions options_;
  std::function<bool()> fence_;
  Logger& log_;
  Clock& clock_;

  Own own_ = Own::kUnknown;  // at start the pod may carry a label from a former container
  bool others_clear_ = false;
  Clock::TimePoint next_resync_{};

  mutable std::mutex mu_;
  std::condition_variable_any wake_cv_;
  bool woken_ = false;
  State state_;
};

}  // namespace nccl_triage
