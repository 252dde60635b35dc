#include "coordinator/leadership.h"

#include <string>
#include <utility>

namespace nccl_triage {

Leadership::Leadership(std::shared_ptr<LeaderElector> leader,
                       std::shared_ptr<LeaderPodLabel> label)
    : leader_(std::move(leader)), label_(std::move(label)) {}

std::shared_ptr<KubeClient> Leadership::Fence(std::shared_ptr<KubeClient> kube) {
  if (!leader_ || !kube) return kube;
  unfenced_ = std::move(kube);
  return std::make_shared<LeaderFencedKubeClient>(*unfenced_, *leader_);
}

bool Leadership::Leading() const { return !leader_ || (leading_ && leader_->IsLeader()); }

void Leadership::Start(std::function<void(bool leading)> on_change) {
  if (!leader_) return;
  if (label_) {
    label_thread_ = std::jthread([this](std::stop_token st) { label_->Run(st); });
  }
  election_thread_ = std::jthread([this, on_change = std::move(on_change)](std::stop_token st) {
    leader_->Run(st, [this, &on_change](bool leading) {
      if (label_) label_->Wake();  // the label follows at once
      on_change(leading);
    });
  });
}

void Leadership::StopLabel() {
  if (!label_thread_.joinable()) return;
  label_thread_.request_stop();
  label_thread_.join();
  label_->ClearOwn();
}

void Leadership::StopElection() {
  if (!election_thread_.joinable()) return;
  election_thread_.request_stop();
  election_thread_.join();
}

std::string Leadership::LeaseRef() const { return leader_ ? leader_->LeaseRef() : ""; }

std::optional<CoordinatorView::Leadership> Leadership::View() const {
  if (!leader_) return std::nullopt;
  // The elector's and the label's own locks: the election thread takes the Impl's mu_ while
  // holding neither.
  const LeaderElector::State s = leader_->Snapshot();
  CoordinatorView::Leadership l{.leader = s.leader,
                                .holder = s.holder,
                                .lease = leader_->LeaseRef(),
                                .transitions = s.transitions,
                                .last_error = s.last_error};
  if (label_) {
    const LeaderPodLabel::State label = label_->Snapshot();
    l.pod_label = std::string(kLeaderLabelKey) + "=" + kLeaderLabelValue;
    l.pod_labelled = label.labelled;
    if (l.last_error.empty()) l.last_error = label.last_error;
  }
  return l;
}

}  // namespace nccl_triage
