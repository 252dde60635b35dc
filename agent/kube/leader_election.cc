#include "kube/leader_election.h"

#include <cstdio>
#include <ctime>

#include "base/log.h"

namespace nccl_triage {

Status ValidateLeaderElection(const LeaderElectionOptions& o) {
  using std::chrono::milliseconds;
  if (o.lease_namespace.empty()) return InvalidArgument("leader election needs a namespace");
  if (o.lease_name.empty()) return InvalidArgument("leader election needs a lease name");
  if (o.identity.empty()) {
    return InvalidArgument("leader election needs this replica's identity (the pod name)");
  }
  if (o.retry_period < milliseconds(1000)) {
    return InvalidArgument("the leader election's retry period must be at least 1 s");
  }
  if (o.renew_deadline * 10 <= o.retry_period * 12) {
    return InvalidArgument(
        "the leader election's renew deadline must exceed 1.2 x its retry period");
  }
  if (o.lease_duration <= o.renew_deadline) {
    return InvalidArgument("the leader election's lease duration must exceed its renew deadline");
  }
  return Status::Ok();
}

std::string FormatMicroTime(int64_t unix_ms) {
  const time_t seconds = static_cast<time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  char micros[8];
  std::snprintf(micros, sizeof micros, "%06d", static_cast<int>((unix_ms % 1000) * 1000));
  return std::string(date) + "." + micros + "Z";
}

nlohmann::json LeaseBody(const std::string& ns, const std::string& name, const LeaseRecord& r,
                         const std::string& resource_version) {
  nlohmann::json meta = {{"name", name}, {"namespace", ns}};
  if (!resource_version.empty()) meta["resourceVersion"] = resource_version;
  nlohmann::json spec = {{"holderIdentity", r.holder},
                         {"leaseDurationSeconds", r.lease_duration_seconds},
                         {"leaseTransitions", r.transitions}};
  if (!r.acquire_time.empty()) spec["acquireTime"] = r.acquire_time;
  if (!r.renew_time.empty()) spec["renewTime"] = r.renew_time;
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", meta},
          {"spec", spec}};
}

StatusOr<std::pair<LeaseRecord, std::string>> ParseLease(std::string_view body) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || j.value("kind", "") != "Lease" || !j.contains("metadata") ||
      !j["metadata"].is_object()) {
    return InvalidArgument("not a Lease");
  }
  LeaseRecord r;
  const nlohmann::json spec = j.value("spec", nlohmann::json::object());
  if (!spec.is_object()) return InvalidArgument("a Lease whose spec is not an object");
  auto text = [&](const char* key) {
    auto it = spec.find(key);
    return it != spec.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto number = [&](const char* key) {
    auto it = spec.find(key);
    return it != spec.end() && it->is_number_integer() ? it->get<int64_t>() : int64_t{0};
  };
  r.holder = text("holderIdentity");
  r.lease_duration_seconds = static_cast<int>(number("leaseDurationSeconds"));
  r.acquire_time = text("acquireTime");
  r.renew_time = text("renewTime");
  r.transitions = number("leaseTransitions");
  return std::pair{r, j["metadata"].value("resourceVersion", "")};
}

LeaderElector::LeaderElector(KubeClient& kube, LeaderElectionOptions options, Logger& log,
                             Clock& clock)
    : kube_(kube), options_(std::move(options)), log_(log), clock_(clock) {}

bool LeaderElector::IsLeader() const {
  std::lock_guard lock(mu_);
  return holding_ && clock_.Now() < renewed_at_ + options_.renew_deadline;
}

LeaderElector::State LeaderElector::Snapshot() const {
  std::lock_guard lock(mu_);
  State s = state_;
  s.leader = holding_ && clock_.Now() < renewed_at_ + options_.renew_deadline;
  return s;
}

void LeaderElector::Lost(const std::string& why) {
  {
    std::lock_guard lock(mu_);
    if (!holding_) return;
    holding_ = false;
  }
  log_.Warn("leader-election", "lost the lease " + LeaseRef() + ": " + why);
}

bool LeaderElector::TryAcquireOrRenew() {
  const bool held = Attempt();
  std::lock_guard lock(mu_);
  // A renewal that did not succeed within the renew deadline ends the leadership even when the
  // Lease still names us (client-go's renew loop gives up then too).
  if (holding_ && clock_.Now() >= renewed_at_ + options_.renew_deadline) {
    holding_ = false;
    log_.Warn("leader-election", "lost the lease " + LeaseRef() + ": not renewed within " +
                                     std::to_string(options_.renew_deadline.count()) + " ms");
  }
  return held && holding_;
}

bool LeaderElector::Attempt() {
  const std::string& ns = options_.lease_namespace;
  const std::string& name = options_.lease_name;
  auto failed = [&](const std::string& what, const KubeResponse& r) {
    std::lock_guard lock(mu_);
    const std::string error = what + ": " + r.Describe();
    if (error != state_.last_error) log_.Warn("leader-election", error);
    state_.last_error = error;
    return false;
  };
  const Clock::TimePoint sent = clock_.Now();
  LeaseRecord mine;
  mine.holder = options_.identity;
  mine.lease_duration_seconds = static_cast<int>(
      std::chrono::duration_cast<std::chrono::seconds>(options_.lease_duration).count());
  mine.acquire_time = mine.renew_time = FormatMicroTime(clock_.NowUnixMs());

  KubeResponse got = kube_.GetLease(ns, name);
  if (got.status == 404) {
    KubeResponse created = kube_.CreateLease(ns, LeaseBody(ns, name, mine, ""));
    if (created.status == 409) {
      return false;  // another replica created it first: its record is read at the next try
    }
    if (!created.ok()) return failed("cannot create the lease " + LeaseRef(), created);
    std::lock_guard lock(mu_);
    observed_ = mine;
    observed_at_ = clock_.Now();
    holding_ = true;
    renewed_at_ = sent;
    state_ = {.leader = true, .holder = mine.holder, .transitions = 0, .last_error = ""};
    log_.Info("leader-election", "created the lease " + LeaseRef() + ": leading");
    return true;
  }
  if (!got.ok()) return failed("cannot read the lease " + LeaseRef(), got);
  auto parsed = ParseLease(got.body);
  if (!parsed.ok()) {
    KubeResponse bad;
    bad.error = parsed.status().message();
    return failed("cannot read the lease " + LeaseRef(), bad);
  }
  const auto& [record, version] = *parsed;
  const Clock::TimePoint now = clock_.Now();
  if (!observed_ || !(*observed_ == record)) {
    observed_ = record;
    observed_at_ = now;
  }
  {
    std::lock_guard lock(mu_);
    state_.holder = record.holder;
    state_.transitions = record.transitions;
  }
  const bool ours = record.holder == options_.identity;
  if (!record.holder.empty() && !ours) {
    Lost("held by " + record.holder);
    if (observed_at_ + options_.lease_duration > now) return false;  // not expired yet
    log_.Info("leader-election", "the lease " + LeaseRef() + " of " + record.holder +
                                     " expired (unchanged for " +
                                     std::to_string(options_.lease_duration.count()) + " ms)");
  }
  if (ours) {
    mine.acquire_time = record.acquire_time;
    mine.transitions = record.transitions;
  } else {
    mine.transitions = record.transitions + 1;
  }
  KubeResponse put = kube_.UpdateLease(ns, name, LeaseBody(ns, name, mine, version));
  if (put.status == 409) {
    Lost("another replica wrote the lease first (409 Conflict)");
    return false;
  }
  if (!put.ok()) return failed("cannot update the lease " + LeaseRef(), put);
  std::lock_guard lock(mu_);
  observed_ = mine;
  observed_at_ = clock_.Now();
  const bool was = holding_;
  holding_ = true;
  renewed_at_ = sent;
  state_ = {.leader = true, .holder = mine.holder, .transitions = mine.transitions,
            .last_error = ""};
  if (!was) {
    log_.Info("leader-election", "acquired the lease " + LeaseRef() + " (transition " +
                                     std::to_string(mine.transitions) + "): leading");
  }
  return true;
}

void LeaderElector::Run(std::stop_token stop, const std::function<void(bool)>& on_change) {
  bool leading = false;
  while (!stop.stop_requested()) {
    const Clock::TimePoint next = clock_.Now() + options_.retry_period;
    TryAcquireOrRenew();
    const bool now_leading = IsLeader();
    if (now_leading != leading) {
      leading = now_leading;
      if (on_change) on_change(leading);
    }
    // A leader must also notice, between two tries, that its renewal is overdue: it sleeps at
    // most until its fence closes.
    Clock::TimePoint wake = next;
    if (leading) {
      std::lock_guard lock(mu_);
      wake = std::min(wake, renewed_at_ + options_.renew_deadline);
    }
    if (!clock_.SleepUntil(wake, stop)) break;
    if (leading && !IsLeader()) {
      Lost("not renewed within " + std::to_string(options_.renew_deadline.count()) + " ms");
      leading = false;
      if (on_change) on_change(false);
    }
  }
  const bool was = IsLeader();
  if (leading && on_change) on_change(false);
  if (was) Release();
}

void LeaderElector::Release() {
  {
    std::lock_guard lock(mu_);
    if (!holding_) return;
    holding_ = false;
  }
  const std::string& ns = options_.lease_namespace;
  const std::string& name = options_.lease_name;
  KubeResponse got = kube_.GetLease(ns, name);
  auto parsed = got.ok() ? ParseLease(got.body) : StatusOr<std::pair<LeaseRecord, std::string>>(
                                                      Unavailable(got.Describe()));
  if (!parsed.ok() || parsed->first.holder != options_.identity) return;
  LeaseRecord free = parsed->first;
  free.holder.clear();
  free.lease_duration_seconds = 1;
  free.renew_time = FormatMicroTime(clock_.NowUnixMs());
  KubeResponse put = kube_.UpdateLease(ns, name, LeaseBody(ns, name, free, parsed->second));
  if (put.ok()) {
    log_.Info("leader-election", "released the lease " + LeaseRef());
  } else {
    log_.Warn("leader-election", "cannot release the lease " + LeaseRef() + ": " + put.Describe());
  }
}

// ------------------------------------------------------------------------- the fenced client

std::optional<KubeResponse> LeaderFencedKubeClient::Fence(const char* what) {
  if (elector_.IsLeader()) return std::nullopt;
  std::lock_guard lock(mu_);
  ++refused_;
  KubeResponse r;
  r.error = std::string("fenced: this replica does not hold the lease ") + elector_.LeaseRef() +
            " (" + what + " not sent)";
  return r;
}

uint64_t LeaderFencedKubeClient::refused() const {
  std::lock_guard lock(mu_);
  return refused_;
}

KubeResponse LeaderFencedKubeClient::PatchPodAnnotations(const std::string& ns,
                                                         const std::string& pod,
                                                         const AnnotationPatch& annotations) {
  if (auto no = Fence("pod patch")) return *no;
  return inner_.PatchPodAnnotations(ns, pod, annotations);
}

KubeResponse LeaderFencedKubeClient::PatchNodeCondition(const std::string& node,
                                                        const NodeCondition& c) {
  if (auto no = Fence("node condition")) return *no;
  return inner_.PatchNodeCondition(node, c);
}

KubeResponse LeaderFencedKubeClient::CreateEvent(const KubeEvent& event) {
  if (auto no = Fence("event")) return *no;
  return inner_.CreateEvent(event);
}

KubeResponse LeaderFencedKubeClient::GetPod(const std::string& ns, const std::string& name) {
  return inner_.GetPod(ns, name);
}

KubeResponse LeaderFencedKubeClient::ListPods(const std::string& field_selector) {
  return inner_.ListPods(field_selector);
}

KubeResponse LeaderFencedKubeClient::GetNode(const std::string& name) {
  return inner_.GetNode(name);
}

KubeResponse LeaderFencedKubeClient::PatchPodAnnotationsIfUid(const std::string& ns,
                                                              const std::string& pod,
                                                              const std::string& uid,
                                                              const AnnotationPatch& annotations) {
  if (auto no = Fence("pod patch")) return *no;
  return inner_.PatchPodAnnotationsIfUid(ns, pod, uid, annotations);
}

KubeResponse LeaderFencedKubeClient::ListNamespacedPods(const std::string& ns,
                                                        const PodListQuery& query) {
  return inner_.ListNamespacedPods(ns, query);
}

KubeResponse LeaderFencedKubeClient::StreamPodLog(const std::string& ns, const std::string& pod,
                                                  const PodLogQuery& query,
                                                  const LogChunkSink& sink) {
  return inner_.StreamPodLog(ns, pod, query, sink);
}

KubeResponse LeaderFencedKubeClient::CreateTokenReview(const std::string& token,
                                                       const std::vector<std::string>& audiences) {
  return inner_.CreateTokenReview(token, audiences);
}

KubeResponse LeaderFencedKubeClient::CreateSubjectAccessReview(
    const AccessReviewRequest& request) {
  return inner_.CreateSubjectAccessReview(request);
}

KubeResponse LeaderFencedKubeClient::ListNodes(const NodeListQuery& query) {
  return inner_.ListNodes(query);
}

KubeResponse LeaderFencedKubeClient::WatchNodes(const NodeWatchQuery& query, const LineSink& sink,
                                                std::stop_token stop) {
  return inner_.WatchNodes(query, sink, std::move(stop));
}

KubeResponse LeaderFencedKubeClient::PatchNode(const std::string& node, const NodePatch& patch) {
  if (auto no = Fence("node patch")) return *no;
  return inner_.PatchNode(node, patch);
}

KubeResponse LeaderFencedKubeClient::GetConfigMap(const std::string& ns, const std::string& name) {
  return inner_.GetConfigMap(ns, name);
}

KubeResponse LeaderFencedKubeClient::PutConfigMap(const std::string& ns, const std::string& name,
                                                  const std::map<std::string, std::string>& data,
                                                  const std::string& resource_version) {
  if (auto no = Fence("state configmap")) return *no;
  return inner_.PutConfigMap(ns, name, data, resource_version);
}

KubeResponse LeaderFencedKubeClient::PatchPodLabels(const std::string& ns, const std::string& pod,
                                                    const LabelPatch& labels) {
  if (auto no = Fence("pod label patch")) return *no;
  return inner_.PatchPodLabels(ns, pod, labels);
}

}  // namespace nccl_triage
