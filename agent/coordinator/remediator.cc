#include "coordinator/remediator.h"

#include <algorithm>

#include "base/log.h"
#include "core/catalogue.h"

namespace nccl_triage {
namespace {

using nlohmann::json;

constexpr std::string_view kLogComponent = "remediation";

std::string Text(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The node's taints without nccl-triage's own (a malformed list counts as empty: a patch then
// writes only ours, which the API validates).
json TaintsWithoutOurs(const json& taints) {
  json out = json::array();
  if (!taints.is_array()) return out;
  for (const json& t : taints) {
    if (t.is_object() && Text(t, "key") == kFaultTaintKey) continue;
    out.push_back(t);
  }
  return out;
}

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

Remediator::Remediator(KubeClient& kube, RemediatorOptions options, Logger& log)
    : kube_(kube), options_(std::move(options)), log_(log) {}

bool Remediator::ListNodes(const std::map<std::string, ConfirmedNodeFault>& confirmed,
                           int64_t now_ms, const std::set<std::string>* watched,
                           std::vector<NodeState>* nodes, std::string* error) {
  NodeListQuery query;
  query.limit = options_.list_page;
  // A bound on pages: a server that keeps answering a continue token must not hold the sweep.
  for (int page = 0; page < 10'000; ++page) {
    KubeResponse r = kube_.ListNodes(query);
    const json list = r.ok() ? json::parse(r.body, nullptr, false) : json();
    if (!r.ok() || !list.is_object() || !list.contains("items") || !list["items"].is_array()) {
      *error = "list nodes: " + (r.ok() ? std::string("not a NodeList") : r.Describe());
      if (!list_failing_) log_.Warn(kLogComponent, *error + " (retried next sweep)");
      list_failing_ = true;
      return false;
    }
    for (const json& item : list["items"]) {
      if (item.is_object()) nodes->push_back(ReadNode(item, confirmed, now_ms, watched));
    }
    query.continue_token = Text(list.value("metadata", json::object()), "continue");
    if (query.continue_token.empty()) {
      if (list_failing_) log_.Info(kLogComponent, "the node list reads again");
      list_failing_ = false;
      return true;
    }
  }
  *error = "list nodes: too many pages";
  return false;
}

Remediator::NodeState Remediator::ReadNode(
    const json& node, const std::map<std::string, ConfirmedNodeFault>& confirmed, int64_t now_ms,
    const std::set<std::string>* watched) {
  NodeState s;
  const json meta = node.value("metadata", json::object());
  const json spec = node.value("spec", json::object());
  s.plan.node = Text(meta, "name");
  s.resource_version = Text(meta, "resourceVersion");
  if (auto t = spec.find("taints"); t != spec.end() && t->is_array()) s.taints = *t;
  if (auto u = spec.find("unschedulable"); u != spec.end() && u->is_boolean()) {
    s.plan.unschedulable = u->get<bool>();
  }
  if (!options_.pool_label.empty()) {
    s.plan.pool = Text(meta.value("labels", json::object()), options_.pool_label.c_str());
  }
  const json annotations = meta.value("annotations", json::object());
  if (annotations.is_object() && annotations.contains(std::string(kRemediatedAnnotation))) {
    const std::string marker = Text(annotations, std::string(kRemediatedAnnotation).c_str());
    s.plan.remediated = true;
    s.plan.cordoned_by_us = MarkerSaysCordoned(marker);
  }
  if (auto f = confirmed.find(s.plan.node); f != confirmed.end()) {
    s.plan.confirmed_fault = true;
    s.plan.fault_class = f->second.fault_class;
    s.plan.causes = f->second.causes;
    healthy_since_.erase(s.plan.node);
  } else if (watched != nullptr && watched->count(s.plan.node) == 0) {
    healthy_since_.erase(s.plan.node);  // not probed now: no healthy time accrues
  } else {
    s.plan.healthy_since_ms = healthy_since_.emplace(s.plan.node, now_ms).first->second;
  }
  return s;
}

KubeResponse Remediator::Patch(const RemediationAction& action, const NodeState& node) {
  auto build = [&](const std::string& rv, const json& taints, bool unschedulable) {
    NodePatch p;
    p.resource_version = rv;
    json t = TaintsWithoutOurs(taints);
    if (action.kind == RemediationActionKind::kApply) {
      t.push_back({{"key", std::string(kFaultTaintKey)},
                   {"value", action.taint_value},
                   {"effect", "NoSchedule"}});
      p.annotations[std::string(kRemediatedAnnotation)] =
          RemediationMarker(action.taint_value, action.cordon);
      if (action.cordon) p.unschedulable = true;
    } else {
      p.annotations[std::string(kRemediatedAnnotation)] = std::nullopt;
      // Uncordon only what we cordoned and is still cordoned.
      if (action.cordon && unschedulable) p.unschedulable = false;
    }
    p.taints = std::move(t);
    return p;
  };
  KubeResponse r = kube_.PatchNode(action.node, build(node.resource_version, node.taints,
                                                      node.plan.unschedulable));
  if (r.status != 409) return r;
  // Someone changed the node since the list: read it again and patch over what is there now.
  KubeResponse fresh = kube_.GetNode(action.node);
  if (!fresh.ok()) return r;
  const json n = json::parse(fresh.body, nullptr, false);
  if (!n.is_object()) return r;
  const json spec = n.value("spec", json::object());
  const json taints = spec.value("taints", json::array());
  const bool unschedulable = spec.value("unschedulable", false);
  const std::string rv = Text(n.value("metadata", json::object()), "resourceVersion");
  return kube_.PatchNode(action.node, build(rv, taints, unschedulable));
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

void Remediator::PostEvent(const std::string& node, const std::string& type,
                           const std::string& reason, const std::string& message, int64_t now_ms,
                           RemediationStatus& status) {
  KubeEvent e;
  e.ns = options_.event_namespace;
  e.involved_name = node;
  e.involved_uid = node;
  e.type = type;
  e.reason = reason;
  e.message = message;
  e.component = options_.component;
  e.host = node;
  e.at_unix_ms = now_ms;
  KubeResponse r = kube_.CreateEvent(e);
  status.outcomes.push_back({"event", r.ok() ? "ok" : "error"});
  if (!r.ok()) Failed(node, "event " + reason, r, status);
}

bool Remediator::Apply(const RemediationAction& action, const NodeState& node,
                       const std::map<std::string, ConfirmedNodeFault>& confirmed, int64_t now_ms,
                       RemediationStatus& status) {
  const std::string name = ActionName(action);
  KubeResponse r = Patch(action, node);
  if (!r.ok()) {
    status.outcomes.push_back({name, r.status == 409 ? "conflict" : "error"});
    Failed(action.node, name, r, status);
    return false;
  }
  status.outcomes.push_back({name, "ok"});
  Succeeded(action.node);
  if (action.kind == RemediationActionKind::kApply) {
    auto f = confirmed.find(action.node);
    const std::string fix =
        Fix(f == confirmed.end() ? std::vector<std::string>{} : f->second.causes);
    log_.Info(kLogComponent, "node " + action.node + ": " + action.reason);
    PostEvent(action.node, "Warning", action.cordon ? "NcclTriageCordoned" : "NcclTriageTainted",
              action.reason + ". Fix: " + fix +
                  ". Undo by hand: " + Undo(action.node, action.cordon),
              now_ms, status);
  } else {
    log_.Info(kLogComponent, "node " + action.node + ": " + action.reason);
    PostEvent(action.node, "Normal", "NcclTriageReleased", action.reason, now_ms, status);
  }
  return true;
}

void Remediator::AnnounceDryRun(const RemediationAction& action, int64_t now_ms,
                                RemediationStatus& status) {
  status.outcomes.push_back({ActionName(action), "dry_run"});
  if (action.kind != RemediationActionKind::kApply) return;
  status.would_taint.push_back(action.node);
  // One event per node and class: a sweep every 15 minutes must not repeat it all day.
  auto [it, fresh] = announced_.emplace(action.node, action.taint_value);
  if (!fresh && it->second == action.taint_value) return;
  it->second = action.taint_value;
  PostEvent(action.node, "Normal", "NcclTriageWouldTaint",
            "Would taint (remediation.mode is dry-run: nothing was changed): " + action.reason,
            now_ms, status);
}

RemediationStatus Remediator::Step(const std::map<std::string, ConfirmedNodeFault>& confirmed,
                                   int64_t now_ms, const std::set<std::string>* watched) {
  RemediationStatus status;
  status.mode = options_.policy.mode;
  status.at_unix_ms = now_ms;
  if (options_.policy.mode == RemediationMode::kOff) return status;
  std::vector<NodeState> nodes;
  if (!ListNodes(confirmed, now_ms, watched, &nodes, &status.list_error)) return status;
  status.nodes_seen = static_cast<int>(nodes.size());
  std::set<std::string> listed;
  for (const NodeState& n : nodes) listed.insert(n.plan.node);
  std::erase_if(healthy_since_, [&](const auto& kv) { return listed.count(kv.first) == 0; });
  std::erase_if(failing_, [&](const auto& kv) { return listed.count(kv.first) == 0; });
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
  std::set<std::string> remediated;
  for (const NodeState& n : nodes) {
    if (n.plan.remediated) remediated.insert(n.plan.node);
  }
  for (const RemediationAction& a : plan.actions) {
    if (!plan.applies()) {
      AnnounceDryRun(a, now_ms, status);
      continue;
    }
    if (!Apply(a, *by_name.at(a.node), confirmed, now_ms, status)) continue;  // unchanged
    if (a.kind == RemediationActionKind::kApply) {
      remediated.insert(a.node);
    } else {
      remediated.erase(a.node);
    }
  }
  // A node whose fault cleared is forgotten by the dry-run announcements, so a new fault is told.
  for (auto it = announced_.begin(); it != announced_.end();) {
    it = confirmed.count(it->first) ? std::next(it) : announced_.erase(it);
  }
  status.remediated.assign(remediated.begin(), remediated.end());
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
              {"breaker_open", s.breaker_open},
              {"actions", actions},
              {"errors", s.errors}};
  if (s.at_unix_ms > 0) out["at"] = FormatRfc3339(s.at_unix_ms);
  if (!s.list_error.empty()) out["list_error"] = s.list_error;
  return out;
}

}  // namespace nccl_triage
