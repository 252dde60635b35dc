// RemediationStage: what the coordinator does after a sweep. It owns the remediation of confirmed
// node faults (Remediator), the validation of new nodes (NodeValidator), the watch of the nodes
// both read (NodeCache), the last sweep's probe passes and each one's last outcome. Its own mu_
// guards the passes and the outcomes; the API calls run under no lock, from the sweep thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "base/clock.h"
#include "coordinator/coordinator_metrics.h"
#include "coordinator/node_validator.h"
#include "coordinator/remediator.h"
#include "coordinator/state_store.h"
#include "core/config.h"
#include "kube/kube_api.h"
#include "kube/node_cache.h"
#include "planner/sweep.h"

namespace nccl_triage {

class Logger;

struct RemediationStageOptions {
  RemediatorOptions remediation;  // its mode off: no remediation
  NodeValidatorOptions validation;  // its policy off: no validation
  std::chrono::seconds node_resync{3600};  // the watch's whole list, this often
};

// The stage's options from the configuration's remediation and validation sections (the
// remediator's and the validator's policies count milliseconds; the file, seconds).
RemediationStageOptions RemediationStageOptionsFromConfig(const Config& config);

class RemediationStage {
 public:
  // `kube` takes the writes (null: neither part runs); `reads` is the watch's client (around
  // the leader's fence, so that a standby's cache is warm when it leads), `kube` when null. The
  // clients, `log`, `clock` and `metrics` must outlive the stage.
  RemediationStage(const RemediationStageOptions& options, KubeClient* kube, KubeClient* reads,
                   Logger& log, Clock& clock, CoordinatorMetrics& metrics);
  ~RemediationStage();

  bool remediates() const { return remediator_ != nullptr; }
  bool validates() const { return validator_ != nullptr; }
  bool active() const { return remediates() || validates(); }

  // The watch of the nodes; Stop once nothing reads them any more (after the sweep thread).
  void Start();
  void Stop();

  // What a sweep's probes showed of each node, for the validator (IB counts as passed where no
  // IB probe ran: a cluster probed over sockets only).
  void RecordProbes(const std::vector<PairOutcome>& pairs);

  // One step after a sweep: remediation with the faults confirmed now (`watched`: the nodes with
  // a connected agent, the only ones that can prove healthy), then validation with the probe
  // passes recorded; the metrics follow. No API call starts once `stop` is requested. From the
  // sweep thread, with none of the coordinator's locks held.
  void Step(const std::map<std::string, ConfirmedNodeFault>& confirmed,
            const std::set<std::string>& watched, std::stop_token stop);

  // What a restart keeps (state_store.h): taken back, or added to `state`. From the sweep thread.
  void Restore(const CoordinatorState& kept);
  void Remember(CoordinatorState& state) const;

  // A replica that stops leading exports none of the cluster's remediation or validation series.
  void ClearMetrics();

  // The last step's outcomes; nullopt when that part is off.
  std::optional<RemediationStatus> last_remediation() const;
  std::optional<ValidationStatus> last_validation() const;

 private:
  ValidationStatus Validate(const std::map<std::string, NodeProbePasses>& passes,
                            std::stop_token stop);

  CoordinatorMetrics& metrics_;
  std::unique_ptr<NodeCache> node_cache_;     // null when both parts are off
  std::unique_ptr<Remediator> remediator_;    // null: remediation off
  std::unique_ptr<NodeValidator> validator_;  // null: validation.new_nodes off

  mutable std::mutex mu_;
  std::map<std::string, NodeProbePasses> probe_passes_;  // the last sweep's
  RemediationStatus last_remediation_;
  ValidationStatus last_validation_;
};

}  // namespace nccl_triage
