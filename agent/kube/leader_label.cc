#include "kube/leader_label.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "base/log.h"

namespace nccl_triage {

namespace {

constexpr const char* kComponent = "leader-label";
// A release has a handful of coordinator pods; a list longer than this is not one.
constexpr int kListPage = 100;
constexpr int kMaxListed = 1000;

}  // namespace

Status ValidateLeaderLabel(const LeaderLabelOptions& o) {
  if (o.pod_namespace.empty()) return InvalidArgument("the leader label needs the pod's namespace");
  if (o.pod_name.empty()) return InvalidArgument("the leader label needs the pod's name");
  if (o.pod_selector.empty()) {
    return InvalidArgument("the leader label needs the selector of the coordinator pods");
  }
  return Status::Ok();
}

LeaderPodLabel::LeaderPodLabel(KubeClient& kube, LeaderLabelOptions options,
                               std::function<bool()> fence, Logger& log, Clock& clock)
    : kube_(kube), options_(std::move(options)), fence_(std::move(fence)), log_(log),
      clock_(clock) {}

LeaderPodLabel::State LeaderPodLabel::Snapshot() const {
  std::lock_guard lock(mu_);
  return state_;
}

void LeaderPodLabel::Failed(const std::string& what, const KubeResponse& r) {
  std::lock_guard lock(mu_);
  const std::string error = what + ": " + r.Describe();
  if (error != state_.last_error) log_.Warn(kComponent, error);
  state_.last_error = error;
}

void LeaderPodLabel::Succeeded() {
  std::lock_guard lock(mu_);
  if (!state_.last_error.empty()) log_.Info(kComponent, "the API server answers again");
  state_.last_error.clear();
}

void LeaderPodLabel::SetOwn(Own own) {
  own_ = own;
  std::lock_guard lock(mu_);
  state_.labelled = own == Own::kLabelled;
}

bool LeaderPodLabel::LabelOwn() {
  if (!fence_()) return false;
  KubeResponse r = kube_.PatchPodLabels(options_.pod_namespace, options_.pod_name,
                                        {{kLeaderLabelKey, kLeaderLabelValue}});
  if (!r.ok()) {
    Failed("cannot label this pod " + options_.pod_namespace + "/" + options_.pod_name, r);
    return false;
  }
  SetOwn(Own::kLabelled);
  others_clear_ = false;  // a former leader's label goes next
  Succeeded();
  log_.Info(kComponent, "labelled this pod " + options_.pod_name + " " + kLeaderLabelKey + "=" +
                            kLeaderLabelValue + ": the Service sends the agents here");
  return true;
}

bool LeaderPodLabel::ClearOwn() {
  KubeResponse r =
      kube_.PatchPodLabels(options_.pod_namespace, options_.pod_name, {{kLeaderLabelKey, {}}});
  if (!r.ok() && r.status != 404) {
    Failed("cannot remove the leader label from this pod " + options_.pod_namespace + "/" +
               options_.pod_name,
           r);
    return false;
  }
  const bool was = own_ == Own::kLabelled;
  SetOwn(Own::kClear);
  Succeeded();
  if (was) log_.Info(kComponent, "removed the leader label from this pod " + options_.pod_name);
  return true;
}

bool LeaderPodLabel::ClearOthers() {
  PodListQuery query;
  query.label_selector = options_.pod_selector + "," + kLeaderLabelKey + "=" + kLeaderLabelValue;
  std::vector<std::string> labelled;
  bool own_listed = false;
  const std::string error = ListEveryPage(
      [&](const PodListQuery& q) { return kube_.ListNamespacedPods(options_.pod_namespace, q); },
      query, kListPage, kMaxListed, nullptr, [&](const nlohmann::json& pod) {
        const std::string name = pod.value("metadata", nlohmann::json::object()).value("name", "");
        if (name == options_.pod_name) {
          own_listed = true;
        } else if (!name.empty()) {
          labelled.push_back(name);
        }
      });
  if (!error.empty()) {
    KubeResponse r;
    r.error = error;
    Failed("cannot list the labelled coordinator pods of " + options_.pod_namespace, r);
    return false;
  }
  // Someone took the label off this pod (or a write of ours was lost): put it back first, so
  // that the Service is never left without the leader.
  if (!own_listed) {
    SetOwn(Own::kUnknown);
    if (!LabelOwn()) return false;
  }
  bool all = true;
  for (const std::string& name : labelled) {
    if (!fence_()) return false;
    KubeResponse r =
        kube_.PatchPodLabels(options_.pod_namespace, name, {{kLeaderLabelKey, {}}});
    if (!r.ok() && r.status != 404) {
      Failed("cannot remove the leader label from the former leader's pod " +
                 options_.pod_namespace + "/" + name,
             r);
      all = false;
      continue;
    }
    log_.Info(kComponent, "removed the leader label from " + name + " (not the leader)");
  }
  if (all) Succeeded();
  return all;
}

void LeaderPodLabel::Sync() {
  if (!fence_()) {
    if (own_ != Own::kClear) ClearOwn();
    return;
  }
  if (own_ != Own::kLabelled && !LabelOwn()) return;
  if (others_clear_ && clock_.Now() < next_resync_) return;
  others_clear_ = ClearOthers();
  if (others_clear_) next_resync_ = clock_.Now() + options_.resync;
}

void LeaderPodLabel::Wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  wake_cv_.notify_all();
}

void LeaderPodLabel::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    Sync();
    std::unique_lock lock(mu_);
    wake_cv_.wait_for(lock, stop, options_.retry, [this] { return woken_; });
    woken_ = false;
  }
}

}  // namespace nccl_triage
