// KubePublisher: sends the agent's verdict to the Kubernetes API without ever making the agent
// wait for it. A StateSink: OnState() computes what should be published and returns at once; a
// worker thread of its own does the calls.
//
// Three channels, each independent of the others:
//  - pod annotations on the agent's own pod (JSON merge patch), sent only when the verdict,
//    basis, causes or a check's status changed (the `updated` key is not compared);
//  - the NcclFabricReady node condition (optional), sent on change and as a heartbeat;
//  - an Event on every verdict change (optional), in a small bounded queue.
// Failures: 429, 5xx, timeouts and connection errors are retried with exponential back-off and
// jitter (429 waits at least Retry-After); 401/403/404 and other client errors are given up with
// one log line and tried again at the next state change (the next cycle). A streak of identical
// errors is logged once, and recovery once. The newest desired state always replaces an older
// one that is still waiting. Thread-safe; the client, clock and logger must outlive it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/log.h"
#include "exporter/annotations.h"
#include "kube/kube_api.h"
#include "state/state_sink.h"

namespace nccl_triage {

struct KubePublisherOptions {
  std::string node;
  std::string pod_namespace;  // POD_NAMESPACE; annotations need both
  std::string pod_name;       // POD_NAME
  bool annotate_pod = true;
  bool node_condition = false;
  bool events = false;
  std::string events_namespace = "default";  // events about a Node live in "default"
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{60'000};
  int max_attempts = 8;  // retryable failures in a row before waiting for the next state
  std::chrono::milliseconds heartbeat{std::chrono::minutes(5)};  // node condition refresh
  size_t max_queued_events = 32;
  size_t report_max_bytes = kReportAnnotationMaxBytes;
  uint64_t jitter_seed = 0;  // 0: random
};

class KubePublisher final : public StateSink {
 public:
  KubePublisher(KubeClient& client, KubePublisherOptions options, Clock& clock, Logger& log);
  ~KubePublisher() override;
  KubePublisher(const KubePublisher&) = delete;
  KubePublisher& operator=(const KubePublisher&) = delete;

  // Starts / stops the worker thread (Stop waits for the call in flight, bounded by the
  // client's timeouts).
  void Start();
  void Stop();

  void OnState(const AgentStateView& view) override;

  // Does every call that is due now on the caller's thread and returns when the next one is due
  // (nullopt: nothing pending). The worker loops on it; tests call it with a fake clock.
  std::optional<Clock::TimePoint> RunDue();

  struct Stats {
    uint64_t calls = 0;
    uint64_t failures = 0;
    uint64_t events_dropped = 0;
  };
  Stats stats() const;

 private:
  struct Channel {
    bool pending = false;
    Clock::TimePoint due{};
    int failures = 0;          // consecutive
    std::string logged_error;  // the error last logged (a streak is logged once)
  };
  enum class Outcome { kDone, kRetry, kGiveUp };

  Outcome Classify(const KubeResponse& r, const Channel& ch) const;
  void AfterCall(Outcome outcome, const KubeResponse& r, Channel& ch, Clock::TimePoint now);
  void RunAnnotations(std::unique_lock<std::mutex>& lock, Clock::TimePoint now);
  void RunCondition(std::unique_lock<std::mutex>& lock, Clock::TimePoint now);
  void RunEvents(std::unique_lock<std::mutex>& lock, Clock::TimePoint now);
  void Loop(std::stop_token stop);

  KubeClient& client_;
  const KubePublisherOptions options_;
  Clock& clock_;
  Logger& log_;

  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  std::jthread worker_;
  bool dirty_ = false;  // OnState since the worker last looked
  std::mt19937_64 rng_;
  Stats stats_;

  // Annotations.
  Channel ann_;
  std::optional<DesiredAnnotations> ann_desired_;
  std::optional<DesiredAnnotations> ann_applied_;
  int64_t ann_changed_at_ms_ = 0;

  // Node condition.
  Channel cond_;
  std::optional<NodeCondition> cond_desired_;
  std::optional<NodeCondition> cond_applied_;
  Clock::TimePoint cond_sent_at_{};
  int64_t cond_transition_ms_ = 0;

  // Events.
  Channel ev_;
  std::deque<KubeEvent> events_;
  std::optional<NodeVerdict> last_verdict_;
};

}  // namespace nccl_triage
