#include "exporter/kube_publisher.h"

#include <algorithm>
#include <cmath>

#include "base/text.h"

namespace nccl_triage {
namespace {

bool SameCondition(const NodeCondition& a, const NodeCondition& b) {
  return a.status == b.status && a.reason == b.reason && a.message == b.message;
}

std::string Hint(int status) {
  switch (status) {
    case 401: return " (the service account token was refused)";
    case 403: return " (RBAC: the agent's ClusterRole lacks this permission)";
    case 404: return " (the object does not exist: check POD_NAME/POD_NAMESPACE or the node name)";
    default: return "";
  }
}

}  // namespace

KubePublisher::KubePublisher(KubeClient& client, KubePublisherOptions options, Clock& clock,
                             Logger& log)
    : client_(client),
      options_(std::move(options)),
      clock_(clock),
      log_(log),
      rng_(options_.jitter_seed ? options_.jitter_seed : std::random_device{}()) {}

KubePublisher::~KubePublisher() { Stop(); }

void KubePublisher::Start() {
  worker_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

void KubePublisher::Stop() {
  if (worker_.joinable()) {
    worker_.request_stop();
    worker_.join();
  }
}

KubePublisher::Stats KubePublisher::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void KubePublisher::OnState(const AgentStateView& view) {
  if (!view.ready) return;  // nothing judged yet: publish nothing rather than "unknown"
  std::lock_guard lock(mu_);
  Clock::TimePoint now = clock_.Now();
  int64_t now_ms = clock_.NowUnixMs();
  auto arm = [&](Channel& ch) {
    if (!ch.pending) {
      ch.pending = true;
      ch.due = now;
    }
  };

  if (options_.annotate_pod && !options_.pod_name.empty() && !options_.pod_namespace.empty()) {
    DesiredAnnotations desired = AnnotationsFor(view, options_.report_max_bytes);
    if (!ann_desired_ || ann_desired_->fingerprint != desired.fingerprint) {
      ann_changed_at_ms_ = now_ms;
    }
    ann_desired_ = std::move(desired);
    if (!ann_applied_ || ann_applied_->fingerprint != ann_desired_->fingerprint) arm(ann_);
  }

  if (options_.node_condition) {
    NodeCondition c = ConditionFor(view);
    if (!cond_desired_ || cond_desired_->status != c.status) cond_transition_ms_ = now_ms;
    c.last_transition_unix_ms = cond_transition_ms_;
    cond_desired_ = c;
    if (!cond_applied_ || !SameCondition(*cond_applied_, c)) arm(cond_);
  }

  if (options_.events) {
    NodeVerdict v = view.Verdict();
    bool changed = last_verdict_ ? (last_verdict_->fault_class != v.fault_class ||
                                    last_verdict_->basis != v.basis ||
                                    last_verdict_->causes != v.causes)
                                 : v.fault_class != FaultClass::kHealthy;
    if (changed) {
      KubeEvent e;
      e.ns = options_.events_namespace;
      e.involved_name = options_.node;
      e.involved_uid = options_.node;
      e.host = options_.node;
      e.type = v.fault_class == FaultClass::kHealthy ? "Normal" : "Warning";
      e.reason = "NcclFabric" + PascalCase(ToString(v.fault_class));
      e.message = "nccl-triage verdict " + std::string(ToString(v.fault_class)) + " (basis " +
                  std::string(ToString(v.basis)) + ")";
      if (!v.causes.empty()) e.message += ", causes " + Join(v.causes, ",");
      if (last_verdict_) {
        e.message += "; was " + std::string(ToString(last_verdict_->fault_class));
        if (!last_verdict_->causes.empty()) e.message += " (" + Join(last_verdict_->causes, ",") + ")";
      }
      e.at_unix_ms = now_ms;
      events_.push_back(std::move(e));
      while (events_.size() > options_.max_queued_events) {
        events_.pop_front();
        ++stats_.events_dropped;
      }
      arm(ev_);
    }
    last_verdict_ = v;
  }
  dirty_ = true;
  wake_.notify_all();
}

KubePublisher::Outcome KubePublisher::Classify(const KubeResponse& r, const Channel& ch) const {
  if (r.ok()) return Outcome::kDone;
  if (r.Retryable() && ch.failures + 1 < options_.max_attempts) return Outcome::kRetry;
  return Outcome::kGiveUp;
}

void KubePublisher::AfterCall(Outcome outcome, const KubeResponse& r, Channel& ch,
                              Clock::TimePoint now) {
  ++stats_.calls;
  if (outcome == Outcome::kDone) {
    ch.failures = 0;
    ch.logged_error.clear();
    return;
  }
  ++stats_.failures;
  ++ch.failures;
  if (outcome == Outcome::kRetry) {
    double base = static_cast<double>(options_.initial_backoff.count()) *
                  std::pow(2.0, std::min(ch.failures - 1, 30));
    base = std::min(base, static_cast<double>(options_.max_backoff.count()));
    // Equal jitter: half fixed, half random, so agents of a whole cluster do not retry in step.
    std::uniform_real_distribution<double> jitter(0.5, 1.0);
    auto delay = std::chrono::duration_cast<Clock::Duration>(
        std::chrono::duration<double, std::milli>(base * jitter(rng_)));
    if (r.status == 429 && r.retry_after) {
      delay = std::max<Clock::Duration>(delay, *r.retry_after);
    }
    ch.due = now + delay;
  } else {
    // Given up: wait a long back-off (about one cycle) before trying the newest state again.
    ch.failures = 0;
    ch.due = now + options_.max_backoff;
    if (r.status == 429 && r.retry_after) {
      ch.due = now + std::max<Clock::Duration>(options_.max_backoff, *r.retry_after);
    }
  }
}

void KubePublisher::RunAnnotations(std::unique_lock<std::mutex>& lock, Clock::TimePoint now) {
  DesiredAnnotations desired = *ann_desired_;
  AnnotationPatch patch;
  for (const auto& [k, v] : desired.values) patch[k] = v;
  patch[std::string(kAnnotationUpdated)] = FormatRfc3339(ann_changed_at_ms_);
  lock.unlock();
  KubeResponse r = client_.PatchPodAnnotations(options_.pod_namespace, options_.pod_name, patch);
  lock.lock();
  Outcome outcome = Classify(r, ann_);
  std::string what = "patch annotations of pod " + options_.pod_namespace + "/" + options_.pod_name;
  if (outcome == Outcome::kDone) {
    if (!ann_.logged_error.empty()) log_.Info("kube", what + ": succeeded again");
    ann_applied_ = desired;
    // A newer state may have arrived while the call was in flight.
    ann_.pending = ann_desired_->fingerprint != desired.fingerprint;
    ann_.due = now;
  }
  std::string error = r.Describe();
  if (outcome != Outcome::kDone && ann_.logged_error != error) {
    log_.Warn("kube", what + ": " + error + Hint(r.status) +
                          (outcome == Outcome::kRetry ? "; retrying with back-off"
                                                      : "; giving up until later"));
    ann_.logged_error = error;
  }
  AfterCall(outcome, r, ann_, now);
}

void KubePublisher::RunCondition(std::unique_lock<std::mutex>& lock, Clock::TimePoint now) {
  NodeCondition c = *cond_desired_;
  c.last_heartbeat_unix_ms = clock_.NowUnixMs();
  lock.unlock();
  KubeResponse r = client_.PatchNodeCondition(options_.node, c);
  lock.lock();
  Outcome outcome = Classify(r, cond_);
  std::string what = "patch condition " + std::string(kConditionType) + " of node " + options_.node;
  if (outcome == Outcome::kDone) {
    if (!cond_.logged_error.empty()) log_.Info("kube", what + ": succeeded again");
    cond_applied_ = c;
    cond_sent_at_ = now;
    cond_.pending = !SameCondition(*cond_desired_, c);
    cond_.due = now;
  }
  std::string error = r.Describe();
  if (outcome != Outcome::kDone && cond_.logged_error != error) {
    log_.Warn("kube", what + ": " + error + Hint(r.status) +
                          (outcome == Outcome::kRetry ? "; retrying with back-off"
                                                      : "; giving up until later"));
    cond_.logged_error = error;
  }
  AfterCall(outcome, r, cond_, now);
}

void KubePublisher::RunEvents(std::unique_lock<std::mutex>& lock, Clock::TimePoint now) {
  KubeEvent e = events_.front();
  lock.unlock();
  KubeResponse r = client_.CreateEvent(e);
  lock.lock();
  // 409: an event of this name exists already (a retry whose first attempt did arrive).
  Outcome outcome = r.status == 409 ? Outcome::kDone : Classify(r, ev_);
  std::string error = r.Describe();
  if (outcome != Outcome::kDone && ev_.logged_error != error) {
    log_.Warn("kube", "create event " + e.reason + ": " + error + Hint(r.status) +
                          (outcome == Outcome::kRetry ? "; retrying with back-off"
                                                      : "; dropping it"));
    ev_.logged_error = error;
  }
  if (outcome == Outcome::kDone && !ev_.logged_error.empty()) {
    log_.Info("kube", "create event: succeeded again");
  }
  if (outcome != Outcome::kRetry && !events_.empty()) events_.pop_front();
  AfterCall(outcome, r, ev_, now);
  if (outcome == Outcome::kGiveUp) ev_.due = now;  // an event is dropped, not parked
  ev_.pending = !events_.empty();
}

std::optional<Clock::TimePoint> KubePublisher::RunDue() {
  std::unique_lock lock(mu_);
  for (int round = 0; round < 64; ++round) {
    Clock::TimePoint now = clock_.Now();
    if (cond_applied_ && !cond_.pending && now >= cond_sent_at_ + options_.heartbeat) {
      cond_.pending = true;
      cond_.due = now;
    }
    bool did = false;
    if (ann_.pending && ann_.due <= now && ann_desired_) {
      RunAnnotations(lock, now);
      did = true;
    }
    if (cond_.pending && cond_.due <= clock_.Now() && cond_desired_) {
      RunCondition(lock, clock_.Now());
      did = true;
    }
    if (ev_.pending && ev_.due <= clock_.Now() && !events_.empty()) {
      RunEvents(lock, clock_.Now());
      did = true;
    }
    if (!did) break;
  }
  std::optional<Clock::TimePoint> next;
  auto consider = [&](const Channel& ch) {
    if (ch.pending && (!next || ch.due < *next)) next = ch.due;
  };
  consider(ann_);
  consider(cond_);
  consider(ev_);
  if (cond_applied_ && !cond_.pending) {
    Clock::TimePoint beat = cond_sent_at_ + options_.heartbeat;
    if (!next || beat < *next) next = beat;
  }
  return next;
}

void KubePublisher::Loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    std::optional<Clock::TimePoint> next = RunDue();
    std::unique_lock lock(mu_);
    if (dirty_) {
      dirty_ = false;
      continue;
    }
    if (next) {
      auto wait = *next - clock_.Now();
      wake_.wait_for(lock, stop, std::max<Clock::Duration>(wait, Clock::Duration::zero()),
                     [&] { return dirty_; });
    } else {
      wake_.wait(lock, stop, [&] { return dirty_; });
    }
    dirty_ = false;
  }
}

}  // namespace nccl_triage
