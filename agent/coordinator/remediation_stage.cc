#include "coordinator/remediation_stage.h"

#include <algorithm>

namespace nccl_triage {

RemediationStageOptions RemediationStageOptionsFromConfig(const Config& config) {
  RemediationStageOptions o;
  const RemediationConfig& r = config.remediation;
  o.remediation.policy = {.mode = r.mode,
                          .max_nodes = std::max(r.max_nodes, 0),
                          .max_percent = r.max_percent,
                          .healthy_ms = int64_t{std::max(r.recover_after_seconds, 0)} * 1000};
  o.remediation.pool_label = r.pool_label;
  o.node_resync = std::chrono::seconds(std::max(r.node_resync_seconds, 1));
  const ValidationConfig& v = config.validation;
  o.validation.policy = {.enabled = v.new_nodes,
                         .timeout_ms = int64_t{std::max(v.timeout_seconds, 0)} * 1000,
                         .max_nodes = std::max(v.max_nodes, 0),
                         .max_percent = v.max_percent};
  o.validation.node_selector = v.node_selector;
  o.validation.dry_run = r.mode == RemediationMode::kDryRun;
  return o;
}

RemediationStage::RemediationStage(const RemediationStageOptions& options, KubeClient* kube,
                                   KubeClient* reads, Logger& log, Clock& clock,
                                   CoordinatorMetrics& metrics)
    : metrics_(metrics) {
  const bool remediates = options.remediation.policy.mode != RemediationMode::kOff;
  const bool validates = options.validation.policy.enabled;
  if (kube == nullptr || (!remediates && !validates)) return;
  NodeCacheOptions nodes = RemediationNodeFields(options.remediation.pool_label);
  for (const auto& [label, value] : options.validation.node_selector) {
    if (std::find(nodes.labels.begin(), nodes.labels.end(), label) == nodes.labels.end()) {
      nodes.labels.push_back(label);
    }
  }
  nodes.list_page = options.remediation.list_page;
  nodes.max_nodes = options.remediation.max_listed_nodes;
  nodes.resync = options.node_resync;
  node_cache_ =
      std::make_unique<NodeCache>(reads ? *reads : *kube, std::move(nodes), log, clock);
  if (remediates) {
    remediator_ =
        std::make_unique<Remediator>(*kube, options.remediation, log, clock, node_cache_.get());
  }
  if (validates) {
    validator_ =
        std::make_unique<NodeValidator>(*kube, options.validation, log, clock, node_cache_.get());
  }
}

RemediationStage::~RemediationStage() = default;

void RemediationStage::Start() {
  if (node_cache_) node_cache_->Start();
}

void RemediationStage::Stop() {
  if (node_cache_) node_cache_->Stop();
}

void RemediationStage::RecordProbes(const std::vector<PairOutcome>& pairs) {
  std::lock_guard lock(mu_);
  probe_passes_.clear();
  for (const PairOutcome& p : pairs) {
    const bool socket = p.judgement.socket == ProbeOutcome::kPass;
    const bool ib =
        p.judgement.ib == ProbeOutcome::kPass || p.judgement.ib == ProbeOutcome::kNotRun;
    for (const std::string& node : {p.pair.a, p.pair.b}) {
      NodeProbePasses& passes = probe_passes_[node];
      passes.socket = passes.socket || socket;
      passes.ib = passes.ib || (socket && ib);
    }
  }
}

ValidationStatus RemediationStage::Validate(const std::map<std::string, NodeProbePasses>& passes,
                                            std::stop_token stop) {
  ValidationStatus v = validator_->Step(passes, stop);
  if (v.list_error.empty()) metrics_.SetValidation(v.unvalidated.size(), v.breaker_open);
  return v;
}

void RemediationStage::Step(const std::map<std::string, ConfirmedNodeFault>& confirmed,
                            const std::set<std::string>& watched, std::stop_token stop) {
  if (!active()) return;
  std::map<std::string, NodeProbePasses> passes;
  {
    std::lock_guard lock(mu_);
    passes = probe_passes_;
  }
  if (!remediator_) {
    ValidationStatus v = Validate(passes, stop);
    std::lock_guard lock(mu_);
    last_validation_ = std::move(v);
    return;
  }
  // The API calls take time (one patch per node that changes): agents' streams go on meanwhile.
  RemediationStatus status = remediator_->Step(confirmed, &watched, stop);
  ValidationStatus validation;
  if (validator_) validation = Validate(passes, stop);
  const std::string mode(ToString(status.mode));
  for (const RemediationOutcome& o : status.outcomes) {
    metrics_.CountRemediation(o.action, mode, o.result);
  }
  if (status.list_error.empty()) {
    metrics_.SetRemediation(status.remediated.size(), status.held_back.size(),
                            status.would_taint.size(), status.breaker_open);
  }
  std::lock_guard lock(mu_);
  last_remediation_ = std::move(status);
  if (validator_) last_validation_ = std::move(validation);
}

void RemediationStage::Restore(const CoordinatorState& kept) {
  if (remediator_) remediator_->Restore(kept.remediation);
  if (validator_) validator_->Restore(kept.validation);
}

void RemediationStage::Remember(CoordinatorState& state) const {
  if (remediator_) state.remediation = remediator_->Memory();
  if (validator_) state.validation = validator_->Memory();
}

void RemediationStage::ClearMetrics() {
  if (remediator_) metrics_.SetRemediation(0, 0, 0, false);
  if (validator_) metrics_.SetValidation(0, false);
}

std::optional<RemediationStatus> RemediationStage::last_remediation() const {
  if (!remediator_) return std::nullopt;
  std::lock_guard lock(mu_);
  return last_remediation_;
}

std::optional<ValidationStatus> RemediationStage::last_validation() const {
  if (!validator_) return std::nullopt;
  std::lock_guard lock(mu_);
  return last_validation_;
}

}  // namespace nccl_triage
