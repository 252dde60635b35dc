// LeaderElector: leader election between coordinator replicas on a coordination.k8s.io/v1 Lease,
// with the semantics of client-go's leaderelection package (docs/agent-and-coordinator.md,
// "Two coordinators").
//
// The Lease holds the leader's identity (the pod name), the lease duration, when the holder
// acquired it and last renewed it (MicroTime) and how many times it changed hands. Every
// retry_period each replica reads it:
//   - none there: it creates one naming itself (a 409 AlreadyExists means another was first);
//   - held by another: it may take it over only once the record has not changed for
//     lease_duration, measured on its own monotonic clock from when it last saw the record change
//     (never from the timestamps in it: the replicas' wall clocks need not agree);
//   - held by itself, or free, or expired: it writes its renewal (or its acquisition, with
//     leaseTransitions + 1) with a PUT carrying the resourceVersion it read. A 409 Conflict means
//     someone else wrote the Lease in between: this replica has lost, at once (fencing).
// A leader that has not renewed for renew_deadline stops leading even if no one else took over.
//
// IsLeader() is the fence that every mutating call checks first: true only while this replica
// holds the Lease and its last successful renewal was sent less than renew_deadline ago. Since
// another replica waits lease_duration (> renew_deadline) from when it saw that renewal, the two
// never both believe they lead, whatever their threads are doing. LeaderFencedKubeClient puts that
// check in front of every write of a KubeClient.
//
// Thread-safety: IsLeader and Snapshot may be called from any thread; TryAcquireOrRenew, Run and
// Release from one thread at a time (the election thread). The client, logger and clock must
// outlive the elector.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>

#include "base/clock.h"
#include "base/status.h"
#include "kube/kube_api.h"

namespace nccl_triage {

class Logger;

struct LeaderElectionOptions {
  std::string lease_namespace;
  std::string lease_name = "nccl-triage-coordinator";
  std::string identity;  // holderIdentity: the pod name
  std::chrono::milliseconds lease_duration{15'000};
  std::chrono::milliseconds renew_deadline{10'000};
  std::chrono::milliseconds retry_period{2'000};
};

// client-go's rules: lease_duration > renew_deadline > 1.2 x retry_period (its jitter factor), a
// retry period of at least 1 s (the Lease counts in seconds), a namespace, a name and an identity.
Status ValidateLeaderElection(const LeaderElectionOptions& options);

// The spec of a Lease, as read or as written.
struct LeaseRecord {
  std::string holder;  // spec.holderIdentity; empty: free
  int lease_duration_seconds = 0;
  std::string acquire_time;  // MicroTime, "2026-01-02T03:04:05.000000Z"
  std::string renew_time;
  int64_t transitions = 0;  // spec.leaseTransitions
  friend bool operator==(const LeaseRecord&, const LeaseRecord&) = default;
};

// A Lease object: the record, and the metadata.resourceVersion of an update (empty: a create).
nlohmann::json LeaseBody(const std::string& ns, const std::string& name, const LeaseRecord& record,
                         const std::string& resource_version);
// The record and metadata.resourceVersion of a Lease as the API returns it; an error for a body
// that is not one.
StatusOr<std::pair<LeaseRecord, std::string>> ParseLease(std::string_view body);
// Kubernetes' MicroTime: RFC 3339 with six fractional digits, in UTC.
std::string FormatMicroTime(int64_t unix_ms);

class LeaderElector {
 public:
  LeaderElector(KubeClient& kube, LeaderElectionOptions options, Logger& log, Clock& clock);

  // One try, client-go's tryAcquireOrRenew: reads the Lease and creates, renews or takes it over
  // when this replica may. True when this replica holds the Lease after it. A loss (another
  // holder, a 409, or renew_deadline passed since the last renewal) is taken at once.
  bool TryAcquireOrRenew();
  // The fence: this replica holds the Lease and renewed it less than renew_deadline ago.
  bool IsLeader() const;
  // Tries every retry_period until `stop`; `on_change(true)` when this replica starts leading,
  // `on_change(false)` when it stops (called from this thread; IsLeader() is already false).
  // On stop, a leader gives the Lease up (Release).
  void Run(std::stop_token stop, const std::function<void(bool leading)>& on_change);
  // Gives the Lease up when this replica holds it: holderIdentity emptied, so a successor takes
  // it at its next try instead of after lease_duration (client-go's ReleaseOnCancel).
  void Release();

  struct State {
    bool leader = false;
    std::string holder;  // the holder last read ("" when none or unknown)
    int64_t transitions = 0;
    std::string last_error;  // the last failed call, "" after a success
  };
  State Snapshot() const;
  const LeaderElectionOptions& options() const { return options_; }
  std::string LeaseRef() const { return options_.lease_namespace + "/" + options_.lease_name; }

 private:
  // The outcome of a try, with mu_ not held.
  bool Attempt();
  void Lost(const std::string& why);

  KubeClient& kube_;
  LeaderElectionOptions options_;
  Logger& log_;
  Clock& clock_;

  // The record last read or written, and when (monotonic) it last changed in our eyes.
  std::optional<LeaseRecord> observed_;
  Clock::TimePoint observed_at_{};

  mutable std::mutex mu_;
  bool holding_ = false;
  Clock::TimePoint renewed_at_{};  // when the request of the last successful renewal was sent
  State state_;
};

// A KubeClient whose writes (patches, creates of events) first ask the elector whether this
// replica still leads, and are refused without a request when not (status 0, an error naming
// the Lease). Reads and reviews go through. Both must outlive it.
class LeaderFencedKubeClient final : public KubeClient {
 public:
  LeaderFencedKubeClient(KubeClient& inner, const LeaderElector& elector)
      : inner_(inner), elector_(elector) {}

  KubeResponse PatchPodAnnotations(const std::string& ns, const std::string& pod,
                                   const AnnotationPatch& annotations) override;
  KubeResponse PatchNodeCondition(const std::string& node, const NodeCondition& c) override;
  KubeResponse CreateEvent(const KubeEvent& event) override;
  KubeResponse GetPod(const std::string& ns, const std::string& name) override;
  KubeResponse ListPods(const std::string& field_selector) override;
  KubeResponse GetNode(const std::string& name) override;
  KubeResponse PatchPodAnnotationsIfUid(const std::string& ns, const std::string& pod,
                                        const std::string& uid,
                                        const AnnotationPatch& annotations) override;
  KubeResponse ListNamespacedPods(const std::string& ns, const PodListQuery& query) override;
  KubeResponse StreamPodLog(const std::string& ns, const std::string& pod, const PodLogQuery& query,
                            const LogChunkSink& sink) override;
  KubeResponse CreateTokenReview(const std::string& token,
                                 const std::vector<std::string>& audiences) override;
  KubeResponse CreateSubjectAccessReview(const AccessReviewRequest& request) override;
  KubeResponse ListNodes(const NodeListQuery& query) override;
  KubeResponse PatchNode(const std::string& node, const NodePatch& patch) override;
  KubeResponse WatchNodes(const NodeWatchQuery& query, const LineSink& sink,
                          std::stop_token stop) override;
  // The coordinator's state (coordinator/state_store.h): read by any replica, written only by
  // the leader.
  KubeResponse GetConfigMap(const std::string& ns, const std::string& name) override;
  KubeResponse PutConfigMap(const std::string& ns, const std::string& name,
                            const std::map<std::string, std::string>& data,
                            const std::string& resource_version) override;
  KubeResponse PatchPodLabels(const std::string& ns, const std::string& pod,
                              const LabelPatch& labels) override;

  // Writes refused so far (the tests and the metrics).
  uint64_t refused() const;

 private:
  // The refusal, or nullopt when this replica leads.
  std::optional<KubeResponse> Fence(const char* what);

  KubeClient& inner_;
  const LeaderElector& elector_;
  mutable std::mutex mu_;
  uint64_t refused_ = 0;
};

}  // namespace nccl_triage
