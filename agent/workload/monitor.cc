#include "workload/monitor.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

#include "checks/check.h"
#include "checks/check_util.h"

namespace nccl_triage::workload {
namespace {

std::string PodName(const PodVerdict& p) { return p.namespace_name + "/" + p.pod; }

// What the API server now holds, after a patch it accepted (nullopt deleted the key).
void ApplyPatch(const AnnotationPatch& patch, std::map<std::string, std::string>& annotations) {
  for (const auto& [k, v] : patch) {
    if (v) {
      annotations[k] = *v;
    } else {
      annotations.erase(k);
    }
  }
}

}  // namespace

WorkloadMonitor::WorkloadMonitor(WorkloadMonitorOptions options, AgentState* state,
                                 KubeClient* kube, PodResourcesSource* pod_resources, Clock& clock,
                                 Logger& log)
    : options_(std::move(options)),
      state_(state),
      kube_(kube),
      pod_resources_(pod_resources),
      clock_(clock),
      log_(log),
      registry_(BuiltinCheckRegistry()),
      scanner_([this] {
        ScannerOptions s = options_.scanner;
        if (!s.debug) {
          s.debug = [this](std::string_view line) { log_.Debug("workload", line); };
        }
        return s;
      }()) {
  if (options_.config.ras.enabled) {
    ras_ = std::make_unique<RasWatch>(options_.config.ras, namespace_querier_, clock_, log_);
  }
}

void WorkloadMonitor::UseRasQuerier(RasQuerier& querier) {
  if (options_.config.ras.enabled) {
    ras_ = std::make_unique<RasWatch>(options_.config.ras, querier, clock_, log_);
  }
}

WorkloadMonitor::~WorkloadMonitor() { Stop(); }

void WorkloadMonitor::AdoptPodResources(std::unique_ptr<PodResourcesSource> source) {
  owned_pod_resources_ = std::move(source);
  pod_resources_ = owned_pod_resources_.get();
}

void WorkloadMonitor::WarnOnce(std::string& streak, const std::string& line) {
  if (streak == line) return;
  streak = line;
  log_.Warn("workload", line);
}

PodDirectory WorkloadMonitor::Lookup(const std::vector<CgroupRef>& containers) {
  PodDirectory dir;
  const bool api = kube_ != nullptr && !options_.node.empty();
  const bool any_containers = !containers.empty();
  if (api && any_containers) {
    PodListState list_state;
    list_state.listed = listed_at_.has_value();
    if (listed_at_) {
      list_state.since_list =
          std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now() - *listed_at_);
    }
    list_state.missed = missed_;
    dir.list_reason = PodListReason(containers, pod_cache_, list_state, options_.pod_list);
  }
  if (!dir.list_reason.empty()) {
    log_.Debug("workload", "listing the node's pods: " + dir.list_reason);
    KubeResponse r = kube_->ListPods("spec.nodeName=" + options_.node);
    nlohmann::json body =
        r.ok() ? nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false) : nullptr;
    if (r.ok() && body.is_object()) {
      pod_cache_ = ParsePodList(body);
      listed_at_ = clock_.Now();
      missed_ = UnresolvedContainers(containers, pod_cache_);
      dir.fresh = true;
      if (!list_streak_.empty()) log_.Info("workload", "listing pods works again");
      list_streak_.clear();
    } else {
      dir.list_error = r.ok() ? std::string("list pods: the reply is not a PodList")
                              : "list pods: " + r.Describe();
      WarnOnce(list_streak_,
               dir.list_error + " (names from the last list; no annotations until it works)");
    }
  } else if (!api) {
    dir.list_error = "no Kubernetes API";
  }
  dir.pods = pod_cache_;
  dir.listed = dir.fresh || !pod_cache_.empty();

  if (api && any_containers &&
      (!node_cache_ || clock_.Now() - node_fetched_ >= options_.node_refresh)) {
    KubeResponse r = kube_->GetNode(options_.node);
    nlohmann::json body =
        r.ok() ? nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false) : nullptr;
    if (r.ok() && body.is_object()) {
      node_cache_ = ParseNodeResources(body);
      node_fetched_ = clock_.Now();
      node_streak_.clear();
    } else {
      WarnOnce(node_streak_, "get node " + options_.node + ": " +
                                 (r.ok() ? std::string("the reply is not a Node") : r.Describe()) +
                                 " (the RDMA resources the node advertises are unknown)");
    }
  }
  if (node_cache_) {
    dir.node = *node_cache_;
  } else {
    dir.node.error = api ? "the node could not be read" : "no Kubernetes API";
  }

  if (pod_resources_ != nullptr && any_containers) {
    auto listed = pod_resources_->List();
    if (listed.ok()) {
      dir.assignments = std::move(listed).value();
      kubelet_streak_.clear();
    } else {
      dir.assignments_error = listed.status().message();
      WarnOnce(kubelet_streak_, dir.assignments_error + " (judged without device assignments)");
    }
  }
  return dir;
}

void WorkloadMonitor::SetNodeFault(std::optional<std::string> node_fault) {
  std::lock_guard lock(mu_);
  node_fault_ = std::move(node_fault);
}

void WorkloadMonitor::Publish(WorkloadPass& pass) {
  // Annotations are compared with the cache, which our own patches keep current; a pass whose
  // list failed sends nothing (the names may be stale). The UID in the patch makes a patch for a
  // replaced pod fail (UidMismatch) instead of landing on the new one.
  const PodDirectory& dir = pass.directory;
  if (options_.annotate && kube_ != nullptr && dir.listed && dir.list_error.empty()) {
    const int64_t now = clock_.NowUnixMs();
    std::optional<std::string> node_fault;
    {
      std::lock_guard lock(mu_);
      node_fault = node_fault_;
    }
    for (const auto& pod : pass.pods) {
      if (!pod.in_api) continue;
      auto it = pod_cache_.find(pod.uid);
      if (it == pod_cache_.end()) continue;
      if (!OnNode(it->second, options_.node)) {
        ++pass.patches_refused;
        WarnOnce(node_rule_streak_, "not annotating pod " + PodName(pod) + ": it is on node '" +
                                        it->second.node_name + "', this agent's node is '" +
                                        options_.node + "'");
        continue;
      }
      auto change = AnnotationChange(pod, it->second.annotations, now, node_fault);
      if (!change) continue;
      KubeResponse r =
          kube_->PatchPodAnnotationsIfUid(pod.namespace_name, pod.pod, pod.uid, *change);
      if (r.ok()) {
        ++pass.patches_sent;
        ApplyPatch(*change, it->second.annotations);
        log_.Info("workload", "pod " + PodName(pod) + ": " +
                                  (pod.causes.empty() ? std::string("healthy, annotations removed")
                                                      : std::string(ToString(pod.verdict)) + " (" +
                                                            Join(pod.causes, ",") + ")"));
        continue;
      }
      ++pass.patches_failed;
      if (r.status == 404) {
        log_.Debug("workload", "pod " + PodName(pod) +
                                   " was deleted before its annotations "
                                   "could be patched");
        pod_cache_.erase(it);
      } else if (r.UidMismatch()) {
        log_.Debug("workload", "pod " + PodName(pod) +
                                   " is another pod now (UID changed): "
                                   "not patched");
        pod_cache_.erase(it);
      } else {
        WarnOnce(patch_streak_, "patch annotations of " + PodName(pod) + ": " + r.Describe());
      }
    }
  }
  if (state_ != nullptr) state_->SetWorkloadFindings(StateFindings(pass.containers));
}

void WorkloadMonitor::RunRas(WorkloadPass& pass) {
  pass.ras = ras_->RunCycle(RasTargets(pass.scan, pass.containers, options_.scanner.root));
  // The annotation follows the pods' own (Publish): only pods of a fresh list, on this node,
  // with the UID as precondition; a pod whose port did not answer keeps what it has.
  const PodDirectory& dir = pass.directory;
  if (options_.annotate && kube_ != nullptr && dir.listed && dir.list_error.empty()) {
    for (const auto& r : pass.ras.asked) {
      if (r.outcome != RasOutcome::kOk) continue;
      auto it = pod_cache_.find(r.target.uid);
      if (it == pod_cache_.end() || !OnNode(it->second, options_.node)) continue;
      std::optional<AnnotationPatch> change;
      if (r.annotate) change = RasAnnotationChange(r.annotation, it->second.annotations);
      if (r.diagnostics == "ok") {  // a new diagnostics report: its annotation too, one patch
        auto diag = RasAnnotationChange(r.diagnostics_annotation, it->second.annotations,
                                        kRasDiagnosticsAnnotationKey);
        if (diag) {
          if (!change) change.emplace();
          change->insert(diag->begin(), diag->end());
        }
      }
      if (!change) continue;
      const std::string name = r.target.ns + "/" + r.target.pod;
      KubeResponse resp =
          kube_->PatchPodAnnotationsIfUid(r.target.ns, r.target.pod, r.target.uid, *change);
      if (resp.ok()) {
        ++pass.patches_sent;
        ApplyPatch(*change, it->second.annotations);
        log_.Info("ras", "pod " + name + ": " + r.judgement.state + " (" +
                             r.judgement.summary + ")" +
                             (r.diagnostics == "ok" ? "; diagnostics: " +
                                                          r.diagnostics_judgement.state + " (" +
                                                          r.diagnostics_judgement.summary + ")"
                                                    : std::string()));
        continue;
      }
      ++pass.patches_failed;
      if (resp.status == 404 || resp.UidMismatch()) {
        log_.Debug("ras", "pod " + name + " is gone or another pod now: not patched");
        pod_cache_.erase(it);
      } else {
        WarnOnce(patch_streak_, "patch annotations of " + name + ": " + resp.Describe());
      }
    }
  }
  if (state_ != nullptr) state_->SetRasJobs(ras_->Jobs(), ras_->Totals());
}

WorkloadPass WorkloadMonitor::RunPass(const NodeSnapshot& host) {
  const auto started = std::chrono::steady_clock::now();
  WorkloadPass pass;
  pass.scan = scanner_.Scan();
  if (!pass.scan.error.empty()) {
    log_.Warn("workload", "scan: " + pass.scan.error);
  }
  std::vector<CgroupRef> refs;
  for (const auto& c : pass.scan.containers) refs.push_back(c.ref);
  pass.directory = Lookup(refs);
  for (const auto& c : pass.scan.containers) {
    PodContainer pod = ResolveContainer(c.ref, pass.directory);
    pass.containers.push_back(JudgeContainer(c, pod, pass.scan.host_netns, host, options_.config,
                                             pass.directory.node, registry_));
  }
  // People read them by pod: namespace, pod, container.
  std::sort(pass.containers.begin(), pass.containers.end(), [](const auto& a, const auto& b) {
    return std::tie(a.pod.namespace_name, a.pod.pod, a.pod.container) <
           std::tie(b.pod.namespace_name, b.pod.pod, b.pod.container);
  });
  pass.pods = PodVerdicts(pass.containers);
  Publish(pass);
  if (ras_) RunRas(pass);
  pass.duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  int failing = 0;
  for (const auto& p : pass.pods) failing += !p.causes.empty();
  log_.Debug("workload", "pass: " + std::to_string(pass.containers.size()) +
                             " GPU container(s) in " + std::to_string(pass.pods.size()) +
                             " pod(s), " + std::to_string(failing) + " failing, " +
                             std::to_string(pass.patches_sent) + " patch(es), " +
                             std::to_string(pass.scan.processes_scanned) + " processes scanned");
  std::lock_guard lock(mu_);
  ++passes_;
  return pass;
}

void WorkloadMonitor::OnState(const AgentStateView& view) {
  std::lock_guard lock(mu_);
  node_fault_ = NodeFaultAnnotation(view.probe_verdict);
  if (view.cycle.cycles <= seen_cycles_ || !view.snapshot) return;
  seen_cycles_ = view.cycle.cycles;
  pending_ = view.snapshot;
  wake_.notify_all();
}

void WorkloadMonitor::Loop(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    std::shared_ptr<const NodeSnapshot> snap;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, stop, [this] { return pending_ != nullptr; });
      if (stop.stop_requested()) return;
      snap = std::move(pending_);
      pending_.reset();
    }
    RunPass(*snap);
  }
}

void WorkloadMonitor::Start() {
  if (worker_.joinable()) return;
  worker_ = std::jthread([this](const std::stop_token& stop) { Loop(stop); });
}

void WorkloadMonitor::Stop() {
  if (!worker_.joinable()) return;
  worker_.request_stop();
  worker_.join();
}

uint64_t WorkloadMonitor::passes() const {
  std::lock_guard lock(mu_);
  return passes_;
}

}  // namespace nccl_triage::workload
