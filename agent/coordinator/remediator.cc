#include "coordinator/remediator.h"

#include <algorithm>

#include "base/log.h"
#include "core/catalogue.h"
#include "core/json_text.h"

namespace nccl_triage {
namespace {

using nlohmann::json;

constexpr std::string_view kLogComponent = "remediation";

std::string ActionName(const RemediationAction& a) {
  if (a.kind == RemediationActionKind::kRelease) return "release";
  return a.cordon ? "cordon" : "taint";
}

// The fix of the fault's first cause, from the catalogue; a generic one without a known cause.
std::string Fix(const std::vector<std::string>& causes) {
  if (!causes.empty()) {
    if (const CauseInfo* info = FindCause(causes.front())) {
      std::string remedy(info->remedy);
      while (!remedy.empty() && (remedy.back() == '.' || remedy.back() == ' ')) remedy.pop_back();
      return remedy;
    }
  }
  return "see the node's nccl-triage report (kubectl describe pod of its agent, annotations "
         "nccl-triage.io/*) for the cause";
}

std::string Undo(const std::string& node, bool cordon) {
  std::string undo = "kubectl taint node " + node + " " + std::string(kFaultTaintKey) + "- && " +
                     "kubectl annotate node " + node + " " + std::string(kRemediatedAnnotation) +
                     "-";
  if (cordon) undo += " && kubectl uncordon " + node;
  return undo;
}

}  // namespace

std::string RemediationMarker(const std::string& taint_value, bool cordoned) {
  return "taint=" + taint_value + (cordoned ? ",cordon" : "");
}

bool MarkerSaysCordoned(const std::string& marker) {
  const size_t at = marker.find(",cordon");
  return at != std::string::npos && at + 7 == marker.size();
}

NodeCacheOptions RemediationNodeFields(const std::string& pool_label) {
  NodeCacheOptions o;
  if (!pool_label.empty()) o.labels.push_back(pool_label);
  o.annotations = {std::string(kRemediatedAnnotation), std::string(kPendingEventAnnotation),
                   std::string(kPendingValidationEventAnnotation)};
  return o;
}

Remediator::Remediator(KubeClient& kube, RemediatorOptions options, Logger& log, Clock& clock,
                       NodeCache* nodes)
    : kube_(kube), options_(std::move(options)), log_(log), clock_(clock), nodes_(nodes) {}

RemediatorMemory Remediator::Memory() const {
  RemediatorMemory m;
  for (const std::string& node : placed_) {
    if (auto it = healthy_since_unix_.find(node); it != healthy_since_unix_.end()) {
      m.healthy_since_unix_ms[node] = it->second;
    }
  }
  m.announced = announced_;
  m.operator_released = operator_released_;
  m.breaker_open = breaker_open_;
  return m;
}

void Remediator::Restore(const RemediatorMemory& memory) {
  const int64_t now_ms = MonotonicMs(clock_);
  const int64_t now_unix = clock_.NowUnixMs();
  for (const auto& [node, since_unix] : memory.healthy_since_unix_ms) {
    // Stepped back (the stored time is ahead of now): no healthy time, the hold starts again.
    const int64_t elapsed = std::max<int64_t>(now_unix - since_unix, 0);
    healthy_since_[node] = now_ms - elapsed;
    healthy_since_unix_[node] = now_unix - elapsed;
  }
  for (const auto& [node, value] : memory.announced) announced_[node] = value;
  operator_released_.insert(memory.operator_released.begin(), memory.operator_released.end());
  breaker_open_ = memory.breaker_open;
}

bool Remediator::ListNodes(std::vector<NodeState>* nodes, std::string* error) {
  NodeCacheOptions fields = RemediationNodeFields(options_.pool_label);
  fields.list_page = options_.list_page;
  fields.max_nodes = options_.max_listed_nodes;
  // The first step may come before the cache's first list: it waits for it, within its time.
  const std::string why = ReadNodes(nodes_, kube_, fields, clock_, deadline_, stop_,
                                    [&](const CachedNode& n) {
                                      nodes->push_back(ParseNode(n, options_.pool_label));
                                    });
  return NoteRecurringList(why, "list nodes", "the node list reads again", list_failing_, log_,
                           kLogComponent, error);
}

Remediator::NodeState Remediator::ParseNode(const CachedNode& node, const std::string& pool_label) {
  NodeState s;
  s.plan.node = node.name;
  s.resource_version = node.resource_version;
  s.taints = node.taints;
  for (const json& t : s.taints) {
    if (t.is_object() && StringMember(t, "key") == kFaultTaintKey) s.our_taint = true;
  }
  s.plan.unschedulable = node.unschedulable;
  if (!pool_label.empty()) {
    if (auto it = node.labels.find(pool_label); it != node.labels.end()) s.plan.pool = it->second;
  }
  if (auto it = node.annotations.find(std::string(kRemediatedAnnotation));
      it != node.annotations.end()) {
    s.marked = true;
    s.plan.remediated = true;
    s.plan.cordoned_by_us = MarkerSaysCordoned(it->second);
  }
  if (auto it = node.annotations.find(std::string(kPendingEventAnnotation));
      it != node.annotations.end()) {
    s.pending_event = it->second;
  }
  return s;
}

std::pair<NodePatch, Remediator::PendingEvent> Remediator::Build(const RemediationAction& action,
                                                                 const NodeState& node) const {
  NodePatch p;
  PendingEvent e;
  p.resource_version = node.resource_version;
  json t = TaintsWithoutKey(node.taints, kFaultTaintKey);
  if (action.kind == RemediationActionKind::kApply) {
    t.push_back({{"key", std::string(kFaultTaintKey)},
                 {"value", action.taint_value},
                 {"effect", "NoSchedule"}});
    p.annotations[std::string(kRemediatedAnnotation)] =
        RemediationMarker(action.taint_value, action.cordon);
    if (action.cordon) p.unschedulable = true;
    std::vector<std::string> causes;
    if (confirmed_ != nullptr) {
      if (auto f = confirmed_->find(action.node); f != confirmed_->end()) causes = f->second.causes;
    }
    const std::string fix = Fix(causes);
    e = {"Warning", action.cordon ? "NcclTriageCordoned" : "NcclTriageTainted",
         action.reason + ". Fix: " + fix + ". Undo by hand: " + Undo(action.node, action.cordon)};
  } else {
    p.annotations[std::string(kRemediatedAnnotation)] = std::nullopt;
    // Uncordon only what we cordoned and is still cordoned.
    if (action.cordon && node.plan.unschedulable) p.unschedulable = false;
    e = {"Normal", "NcclTriageReleased", action.reason};
  }
  p.annotations[std::string(kPendingEventAnnotation)] = e.Encode();
  p.taints = std::move(t);
  return {std::move(p), std::move(e)};
}

KubeResponse Remediator::Patch(RemediationAction& action, const NodeState& node,
                               PendingEvent* event, bool* skip) {
  *skip = false;
  auto [patch, e] = Build(action, node);
  *event = e;
  KubeResponse r = PatchNodeObserved(kube_, nodes_, action.node, patch);
  if (r.status != 409 || !CutShort().empty()) return r;
  // Someone changed the node since it was read (or the cache was behind): read it again and
  // decide again from what is there now, so that their cordon is not taken for ours nor their
  // release undone.
  KubeResponse fresh = kube_.GetNode(action.node);
  if (!fresh.ok()) return r;
  const json n = json::parse(fresh.body, nullptr, false);
  if (!n.is_object()) return r;
  ObserveNodeAnswer(nodes_, fresh);
  const NodeState now =
      ParseNode(CachedNodeFromJson(n, RemediationNodeFields(options_.pool_label)),
                options_.pool_label);
  if (action.kind == RemediationActionKind::kApply) {
    if (now.marked) {  // marked meanwhile: nothing left to do (the next step reads it)
      *skip = true;
      return fresh;
    }
    const bool cordon = options_.policy.mode == RemediationMode::kCordon && !now.plan.unschedulable;
    if (action.cordon && !cordon) {
      constexpr std::string_view kCordons = " and cordons it";
      if (action.reason.ends_with(kCordons)) {
        action.reason.resize(action.reason.size() - kCordons.size());
      }
    }
    action.cordon = cordon;
  } else {
    if (!now.marked || !CutShort().empty()) {  // released by someone else meanwhile
      *skip = true;
      return fresh;
    }
    action.cordon = now.plan.cordoned_by_us && now.plan.unschedulable;
  }
  if (!CutShort().empty()) return r;
  auto [again, e2] = Build(action, now);
  *event = e2;
  return PatchNodeObserved(kube_, nodes_, action.node, again);
}

void Remediator::Failed(const std::string& node, const std::string& what, const KubeResponse& r,
                        RemediationStatus& status) {
  const std::string why = what + ": " + r.Describe();
  status.errors[node] = why;
  auto [it, first] = failing_.emplace(node, why);
  if (first) {
    log_.Warn(kLogComponent, "node " + node + ": " + why + " (retried next sweep)");
  }
}

void Remediator::Succeeded(const std::string& node) {
  if (failing_.erase(node) > 0) log_.Info(kLogComponent, "node " + node + ": API calls work again");
}

bool Remediator::PostEvent(const std::string& node, const PendingEvent& event,
                           RemediationStatus& status) {
  KubeResponse r = kube_.CreateEvent(NodeKubeEvent(node, event, options_.event_namespace,
                                                   options_.component, clock_.NowUnixMs()));
  status.outcomes.push_back({"event", r.ok() ? "ok" : "error"});
  if (!r.ok()) Failed(node, "event " + event.reason, r, status);
  return r.ok();
}

void Remediator::Deliver(const std::string& node, const PendingEvent& event,
                         const std::string& encoded, RemediationStatus& status) {
  KubeResponse cleared;
  const PendingEvents::Delivered d = pending_.Deliver(
      node, event, encoded, [this] { return CutShort().empty(); },
      [&](const PendingEvent& e) { return PostEvent(node, e, status); },
      [this](const std::string& n, const NodePatch& p) {
        return PatchNodeObserved(kube_, nodes_, n, p);
      },
      &cleared);
  if (d == PendingEvents::Delivered::kNotCleared) {
    Failed(node, "clear pending event", cleared, status);
  }
}

bool Remediator::Apply(RemediationAction action, const NodeState& node,
                       RemediationStatus& status) {
  PendingEvent event;
  bool skip = false;
  KubeResponse r = Patch(action, node, &event, &skip);
  const std::string name = ActionName(action);
  if (skip) return false;
  if (!r.ok()) {
    status.outcomes.push_back({name, r.status == 409 ? "conflict" : "error"});
    Failed(action.node, name, r, status);
    return false;
  }
  status.outcomes.push_back({name, "ok"});
  Succeeded(action.node);
  log_.Info(kLogComponent, "node " + action.node + ": " + action.reason);
  Deliver(action.node, event, event.Encode(), status);
  return true;
}

void Remediator::Forget(const NodeState& node, RemediationStatus& status) {
  const std::string& name = node.plan.node;
  std::string message = node.marked      ? "nccl-triage's taint " + std::string(kFaultTaintKey)
                        : node.our_taint ? "nccl-triage's annotation " +
                                               std::string(kRemediatedAnnotation)
                                         : "nccl-triage's taint and annotation";
  message += " was removed by someone else";
  if (node.plan.confirmed_fault) {
    message += " while the " + std::string(ToString(node.plan.fault_class)) +
               " fault is still confirmed";
  }
  message += ": nccl-triage stops counting the node and will not taint it again until the fault "
             "clears and comes back";
  if (node.plan.cordoned_by_us && node.plan.unschedulable) {
    message += ". The cordon nccl-triage placed stays: kubectl uncordon " + name + " to lift it";
  }
  log_.Info(kLogComponent, "node " + name + ": " + message);
  const PendingEvent event{"Normal", "NcclTriageReleasedByOperator", message};
  if (!node.marked) {  // the marker went with the taint: nothing to remove
    PostEvent(name, event, status);
    return;
  }
  NodePatch p;
  p.resource_version = node.resource_version;
  p.annotations[std::string(kRemediatedAnnotation)] = std::nullopt;
  p.annotations[std::string(kPendingEventAnnotation)] = event.Encode();
  KubeResponse r = PatchNodeObserved(kube_, nodes_, name, p);
  status.outcomes.push_back({"release", r.ok() ? "ok" : r.status == 409 ? "conflict" : "error"});
  if (!r.ok()) {
    Failed(name, "remove the marker", r, status);  // seen again next step
    return;
  }
  Succeeded(name);
  Deliver(name, event, event.Encode(), status);
}

void Remediator::AnnounceDryRun(const RemediationAction& action, RemediationStatus& status) {
  status.outcomes.push_back({ActionName(action), "dry_run"});
  if (action.kind != RemediationActionKind::kApply) return;
  status.would_taint.push_back(action.node);
  // One event per node and class: a sweep every 15 minutes must not repeat it all day.
  auto [it, fresh] = announced_.emplace(action.node, action.taint_value);
  if (!fresh && it->second == action.taint_value) return;
  it->second = action.taint_value;
  PostEvent(action.node,
            {"Normal", "NcclTriageWouldTaint",
             "Would taint (remediation.mode is dry-run: nothing was changed): " + action.reason},
            status);
}

RemediationStatus Remediator::Step(const std::map<std::string, ConfirmedNodeFault>& confirmed,
                                   const std::set<std::string>* watched, std::stop_token stop) {
  RemediationStatus status;
  status.mode = options_.policy.mode;
  status.at_unix_ms = clock_.NowUnixMs();
  if (options_.policy.mode == RemediationMode::kOff) return status;
  confirmed_ = &confirmed;
  stop_ = std::move(stop);
  deadline_ = clock_.Now() + options_.step_deadline;
  const int64_t now_ms = MonotonicMs(clock_);
  std::vector<NodeState> nodes;
  if (!ListNodes(&nodes, &status.list_error)) {
    confirmed_ = nullptr;
    return status;
  }
  status.nodes_seen = static_cast<int>(nodes.size());
  std::set<std::string> listed;
  for (const NodeState& n : nodes) listed.insert(n.plan.node);
  std::erase_if(healthy_since_, [&](const auto& kv) { return listed.count(kv.first) == 0; });
  std::erase_if(healthy_since_unix_,
                [&](const auto& kv) { return healthy_since_.count(kv.first) == 0; });
  pending_.Keep(listed);
  std::erase_if(failing_, [&](const auto& kv) { return listed.count(kv.first) == 0; });
  std::erase_if(operator_released_, [&](const std::string& n) {
    return listed.count(n) == 0 || confirmed.count(n) == 0;  // the fault cleared: forgotten
  });
  std::vector<const NodeState*> forget;
  for (NodeState& s : nodes) {
    const std::string& name = s.plan.node;
    if (auto f = confirmed.find(name); f != confirmed.end()) {
      s.plan.confirmed_fault = true;
      s.plan.fault_class = f->second.fault_class;
      s.plan.causes = f->second.causes;
      healthy_since_.erase(name);
      healthy_since_unix_.erase(name);
    } else if (watched != nullptr && watched->count(name) == 0) {
      healthy_since_.erase(name);  // not probed now: no healthy time accrues
      healthy_since_unix_.erase(name);
    } else {
      auto [since, fresh] = healthy_since_.emplace(name, now_ms);
      if (fresh) healthy_since_unix_[name] = status.at_unix_ms;
      s.plan.healthy_since_ms = since->second;
    }
    // Our taint is gone although our marker says it is there (or the marker we placed is gone):
    // an operator released the node. Believe the node, not the marker.
    const bool released = (s.marked && !s.our_taint) || (!s.marked && placed_.count(name) > 0);
    if (released && options_.policy.mode != RemediationMode::kDryRun) {
      forget.push_back(&s);
      if (s.plan.confirmed_fault) operator_released_.insert(name);
      s.plan.remediated = false;
    }
    s.plan.released_by_operator = operator_released_.count(name) > 0;
  }
  std::vector<RemediationNode> plan_nodes;
  std::map<std::string, const NodeState*> by_name;
  for (const NodeState& n : nodes) {
    plan_nodes.push_back(n.plan);
    by_name[n.plan.node] = &n;
  }
  const RemediationPlan plan = PlanRemediation(plan_nodes, options_.policy, now_ms);
  status.actions = plan.actions;
  status.held_back = plan.held_back;
  status.breaker_open = plan.breaker_open;
  breaker_open_ = plan.breaker_open;
  std::set<std::string> remediated;
  for (const NodeState& n : nodes) {
    if (n.plan.remediated) remediated.insert(n.plan.node);
  }
  std::set<std::string> touched;
  for (const NodeState* n : forget) {
    if (!(status.cut_short = CutShort()).empty()) break;
    touched.insert(n->plan.node);
    Forget(*n, status);
  }
  for (const RemediationAction& a : plan.actions) {
    if (!status.cut_short.empty() || !(status.cut_short = CutShort()).empty()) break;
    if (!plan.applies()) {
      AnnounceDryRun(a, status);
      continue;
    }
    touched.insert(a.node);
    if (!Apply(a, *by_name.at(a.node), status)) continue;  // unchanged
    if (a.kind == RemediationActionKind::kApply) {
      remediated.insert(a.node);
    } else {
      remediated.erase(a.node);
    }
  }
  // Events a patch left pending (a restart, a stop or a failed post came in between).
  for (const NodeState& n : nodes) {
    if (n.pending_event.empty() || touched.count(n.plan.node)) continue;
    if (!status.cut_short.empty() || !(status.cut_short = CutShort()).empty()) break;
    Deliver(n.plan.node, PendingEvents::Read(n.pending_event, "NcclTriageRemediation"),
            n.pending_event, status);
  }
  if (!status.cut_short.empty()) {
    log_.Info(kLogComponent, "step cut short (" + status.cut_short +
                                 "): what is left is done next sweep");
  }
  // A node whose fault cleared is forgotten by the dry-run announcements, so a new fault is told.
  for (auto it = announced_.begin(); it != announced_.end();) {
    it = confirmed.count(it->first) ? std::next(it) : announced_.erase(it);
  }
  status.remediated.assign(remediated.begin(), remediated.end());
  status.released_by_operator.assign(operator_released_.begin(), operator_released_.end());
  placed_ = remediated;
  confirmed_ = nullptr;
  return status;
}

json ToJson(const RemediationStatus& s) {
  json actions = json::array();
  for (const RemediationAction& a : s.actions) {
    json j = {{"action", ActionName(a)}, {"node", a.node}, {"reason", a.reason}};
    if (!a.taint_value.empty()) j["taint"] = std::string(kFaultTaintKey) + "=" + a.taint_value;
    actions.push_back(std::move(j));
  }
  json out = {{"mode", std::string(ToString(s.mode))},
              {"applied", s.mode == RemediationMode::kTaint || s.mode == RemediationMode::kCordon},
              {"nodes_seen", s.nodes_seen},
              {"remediated", s.remediated},
              {"held_back", s.held_back},
              {"would_taint", s.would_taint},
              {"released_by_operator", s.released_by_operator},
              {"breaker_open", s.breaker_open},
              {"actions", actions},
              {"errors", s.errors}};
  if (s.at_unix_ms > 0) out["at"] = FormatRfc3339(s.at_unix_ms);
  if (!s.list_error.empty()) out["list_error"] = s.list_error;
  if (!s.cut_short.empty()) out["cut_short"] = s.cut_short;
  return out;
}

}  // namespace nccl_triage
