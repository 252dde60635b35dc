#include "coordinator/node_validator.h"

#include <algorithm>
#include <cmath>

#include "base/log.h"
#include "core/config.h"
#include "core/json_text.h"
#include "planner/remediation.h"

namespace nccl_triage {
namespace {

using nlohmann::json;

constexpr std::string_view kLogComponent = "validation";

std::string OurTaintValue(const json& taints) {
  if (!taints.is_array()) return "";
  for (const json& t : taints) {
    if (t.is_object() && StringMember(t, "key") == kUnvalidatedTaintKey) {
      const std::string v = StringMember(t, "value");
      return v.empty() ? "unknown" : v;
    }
  }
  return "";
}

std::string Undo(const std::string& node) {
  return "kubectl taint node " + node + " " + std::string(kUnvalidatedTaintKey) + "-";
}

}  // namespace

NodeValidator::NodeValidator(KubeClient& kube, NodeValidatorOptions options, Logger& log,
                             Clock& clock, NodeCache* nodes)
    : kube_(kube),
      options_(std::move(options)),
      log_(log),
      clock_(clock),
      nodes_(nodes),
      pending_(std::string(kPendingValidationEventAnnotation)) {}

ValidatorMemory NodeValidator::Memory() const { return memory_; }

void NodeValidator::Restore(const ValidatorMemory& memory) {
  memory_ = memory;
  relearn_ = memory_.boot_ids.size() >= kMaxValidatorBootIds;
  since_ms_.clear();
  const int64_t now_ms = MonotonicMs(clock_);
  const int64_t now_unix = clock_.NowUnixMs();
  for (const auto& [node, p] : memory_.pending) {
    // A wall clock behind the stored time counts as no time passed: a timeout is never hastened.
    since_ms_[node] = now_ms - std::max<int64_t>(now_unix - p.since_unix_ms, 0);
  }
}

NodeCacheOptions NodeValidator::Fields() const {
  NodeCacheOptions fields;
  fields.annotations = {std::string(kPendingValidationEventAnnotation)};
  for (const auto& [label, value] : options_.node_selector) fields.labels.push_back(label);
  return fields;
}

NodeValidator::NodeRead NodeValidator::ParseNode(const CachedNode& node) const {
  NodeRead n;
  n.selected = LabelsHold(options_.node_selector, node.labels);
  n.name = node.name;
  n.resource_version = node.resource_version;
  n.taints = node.taints;
  n.our_taint = !OurTaintValue(n.taints).empty();
  n.boot_id = node.boot_id.substr(0, kBootIdKept);
  if (auto it = node.annotations.find(std::string(kPendingValidationEventAnnotation));
      it != node.annotations.end()) {
    n.pending_event = it->second;
  }
  return n;
}

bool NodeValidator::ListNodes(std::vector<NodeRead>* nodes, std::string* error) {
  NodeCacheOptions fields = Fields();
  fields.list_page = options_.list_page;
  fields.max_nodes = options_.max_listed_nodes;
  const std::string why =
      ReadNodes(nodes_, kube_, fields, clock_, deadline_, stop_, [&](const CachedNode& c) {
        NodeRead n = ParseNode(c);
        if (!n.name.empty()) nodes->push_back(std::move(n));
      });
  return NoteRecurringList(why, "list nodes", "the node list reads again", list_failing_, log_,
                           kLogComponent, error);
}

bool NodeValidator::PatchTaint(const NodeRead& node, const std::string& value,
                               const PendingNodeEvent& event, ValidationStatus& status) {
  auto build = [&](const NodeRead& n) {
    NodePatch p;
    p.resource_version = n.resource_version;
    p.annotations[std::string(kPendingValidationEventAnnotation)] = event.Encode();
    json t = TaintsWithoutKey(n.taints, kUnvalidatedTaintKey);
    if (!value.empty()) {
      t.push_back({{"key", std::string(kUnvalidatedTaintKey)},
                   {"value", value},
                   {"effect", "NoSchedule"}});
    }
    p.taints = std::move(t);
    return p;
  };
  KubeResponse r = PatchNodeObserved(kube_, nodes_, node.name, build(node));
  if (r.status == 409 && CutShort().empty()) {
    // Changed since it was read (or the cache was behind): the taints as they are now, so that
    // nobody else's change is lost.
    KubeResponse fresh = kube_.GetNode(node.name);
    const json n = fresh.ok() ? json::parse(fresh.body, nullptr, false) : json();
    if (n.is_object()) ObserveNodeAnswer(nodes_, fresh);
    if (n.is_object() && CutShort().empty()) {
      r = PatchNodeObserved(kube_, nodes_, node.name,
                            build(ParseNode(CachedNodeFromJson(n, Fields()))));
    }
  }
  if (!r.ok()) {
    const std::string why = (value.empty() ? "remove taint: " : "taint: ") + r.Describe();
    status.errors[node.name] = why;
    if (failing_.emplace(node.name, why).second) {
      log_.Warn(kLogComponent, "node " + node.name + ": " + why + " (retried next sweep)");
    }
    return false;
  }
  if (failing_.erase(node.name) > 0) {
    log_.Info(kLogComponent, "node " + node.name + ": API calls work again");
  }
  Deliver(node.name, event, event.Encode(), status);
  return true;
}

void NodeValidator::Deliver(const std::string& node, const PendingNodeEvent& event,
                            const std::string& encoded, ValidationStatus& status) {
  KubeResponse cleared;
  const PendingEvents::Delivered d = pending_.Deliver(
      node, event, encoded, [this] { return CutShort().empty(); },
      [&](const PendingNodeEvent& e) {
        return PostEvent(node, e.type, e.reason, e.message, status);
      },
      [this](const std::string& n, const NodePatch& p) {
        return PatchNodeObserved(kube_, nodes_, n, p);
      },
      &cleared);
  if (d == PendingEvents::Delivered::kNotCleared) {
    status.errors[node] = "clear pending event: " + cleared.Describe();
  }
}

bool NodeValidator::PostEvent(const std::string& node, const std::string& type,
                              const std::string& reason, const std::string& message,
                              ValidationStatus& status) {
  if (!CutShort().empty()) return false;
  KubeResponse r = kube_.CreateEvent(NodeKubeEvent(node, {type, reason, message},
                                                   options_.event_namespace, options_.component,
                                                   clock_.NowUnixMs()));
  if (!r.ok()) status.errors[node] = "event " + reason + ": " + r.Describe();
  return r.ok();
}

ValidationStatus NodeValidator::Step(const std::map<std::string, NodeProbePasses>& probed,
                                     std::stop_token stop) {
  ValidationStatus status;
  if (!options_.policy.enabled) return status;
  stop_ = std::move(stop);
  deadline_ = clock_.Now() + options_.step_deadline;
  std::vector<NodeRead> nodes;
  if (!ListNodes(&nodes, &status.list_error)) return status;
  // Outside the selector: not validated, not remembered; one we are validating (our taint on
  // it, or pending) is seen through to its release.
  std::erase_if(nodes, [&](const NodeRead& n) {
    return !n.selected && !n.our_taint && !memory_.pending.count(n.name);
  });
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeRead& a, const NodeRead& b) { return a.name < b.name; });
  status.nodes_seen = static_cast<int>(nodes.size());
  const int64_t now_ms = MonotonicMs(clock_);
  const int64_t now_unix = clock_.NowUnixMs();
  std::set<std::string> listed;
  for (const NodeRead& n : nodes) listed.insert(n.name);
  // Bounded by the cluster: a node that left is forgotten (if it comes back, it is new).
  std::erase_if(memory_.boot_ids, [&](const auto& kv) { return !listed.count(kv.first); });
  std::erase_if(memory_.pending, [&](const auto& kv) { return !listed.count(kv.first); });
  std::erase_if(since_ms_, [&](const auto& kv) { return !listed.count(kv.first); });
  std::erase_if(failing_, [&](const auto& kv) { return !listed.count(kv.first); });
  pending_.Keep(listed);
  std::set<std::string> touched;  // patched by this step: their events are posted with it

  auto start_pending = [&](const std::string& name, const std::string& reason, bool tainted) {
    memory_.pending[name] = {.reason = reason, .since_unix_ms = now_unix, .tainted = tainted};
    since_ms_[name] = now_ms;
  };
  const bool first = !memory_.initialised;
  std::vector<std::pair<const NodeRead*, std::string>> candidates;  // untainted, with reason
  std::vector<const NodeRead*> to_taint;                            // pending, taint not placed
  for (const NodeRead& n : nodes) {
    auto known = memory_.boot_ids.find(n.name);
    std::string trigger;
    if (!first) {
      if (known == memory_.boot_ids.end()) {
        if (!relearn_) trigger = "new-node";
      } else if (!known->second.empty() && !n.boot_id.empty() && known->second != n.boot_id) {
        trigger = "rebooted";
      }
    }
    memory_.boot_ids[n.name] = n.boot_id;
    auto p = memory_.pending.find(n.name);
    if (p == memory_.pending.end() && n.our_taint && trigger.empty()) {
      // Our taint without our memory of it (the state was lost): validated like the others, so
      // that its timeout applies and it is never stranded.
      start_pending(n.name, OurTaintValue(n.taints), true);
      p = memory_.pending.find(n.name);
    }
    if (!trigger.empty()) {
      if (p != memory_.pending.end()) {  // rebooted again while being validated: start over
        start_pending(n.name, trigger, p->second.tainted && n.our_taint);
        if (OurTaintValue(n.taints) != trigger) to_taint.push_back(&n);
      } else {
        candidates.emplace_back(&n, trigger);
      }
      continue;
    }
    if (p == memory_.pending.end()) continue;
    PendingValidation& v = p->second;
    if (v.tainted && !n.our_taint) {
      // Removed by our own patch whose event is still pending (a kill came after it): the event
      // below says so. Otherwise by someone else.
      PendingNodeEvent e;
      const bool ours = PendingNodeEvent::Decode(n.pending_event, &e) &&
                        (e.reason == "NcclTriageValidated" ||
                         e.reason == "NcclTriageValidationTimedOut");
      if (!ours) {
        log_.Info(kLogComponent, "node " + n.name + ": the taint " +
                                     std::string(kUnvalidatedTaintKey) +
                                     " was removed by someone else: not validated, not put back");
      }
      memory_.pending.erase(p);
      since_ms_.erase(n.name);
      continue;
    }
    if (auto pr = probed.find(n.name); pr != probed.end() && v.tainted) {
      v.socket = v.socket || pr->second.socket;
      v.ib = v.ib || pr->second.ib;
    }
    const bool passed = v.tainted && v.socket && v.ib;
    const bool expired = now_ms - since_ms_[n.name] >= options_.policy.timeout_ms;
    if (!passed && !expired) {
      if (!v.tainted) to_taint.push_back(&n);
      continue;
    }
    if (!status.cut_short.empty() || !(status.cut_short = CutShort()).empty()) break;
    const std::string reason = v.reason;
    const bool was_tainted = v.tainted;
    const std::string seconds = std::to_string(options_.policy.timeout_ms / 1000);
    const PendingNodeEvent event =
        passed ? PendingNodeEvent{"Normal", "NcclTriageValidated",
                                  "The node (" + reason + ") passed nccl-triage's socket and IB "
                                  "probes: the taint " + std::string(kUnvalidatedTaintKey) +
                                      " was removed"}
               : PendingNodeEvent{
                     "Warning", "NcclTriageValidationTimedOut",
                     "Validation timed out: the node (" + reason + ") did not pass nccl-triage's "
                     "socket and IB probes within validation.timeout_seconds (" + seconds +
                         " s); the taint " + std::string(kUnvalidatedTaintKey) +
                         " was removed so that the node is not kept out of service. Check that "
                         "its nccl-triage agent runs and is probed (coordinator /status)"};
    if (was_tainted && !options_.dry_run) {
      touched.insert(n.name);
      if (!PatchTaint(n, "", event, status)) continue;  // the event was posted with the patch
    }
    memory_.pending.erase(p);
    since_ms_.erase(n.name);
    if (passed) {
      status.validated.push_back(n.name);
      log_.Info(kLogComponent, "node " + n.name + " (" + reason + ") passed its socket and IB "
                               "probes: taint removed");
    } else {
      status.timed_out.push_back(n.name);
      log_.Warn(kLogComponent, "node " + n.name + " (" + reason + "): validation timed out after " +
                                   seconds + " s" + (was_tainted ? ": taint removed" : ""));
    }
  }

  // The breaker: nodes being validated, and the new ones in name order while there is room.
  const int listed_count = static_cast<int>(nodes.size());
  int by_percent = static_cast<int>(
      std::floor(options_.policy.max_percent * listed_count / 100.0 + 1e-9));
  if (options_.policy.max_percent > 0) by_percent = std::max(by_percent, 1);
  const int limit = std::max(std::min(options_.policy.max_nodes, by_percent), 0);
  int count = static_cast<int>(memory_.pending.size());
  for (const auto& [n, reason] : candidates) {
    if (count < limit && !options_.dry_run) {
      start_pending(n->name, reason, n->our_taint && OurTaintValue(n->taints) == reason);
      if (!memory_.pending[n->name].tainted) to_taint.push_back(n);
      ++count;
      continue;
    }
    if (options_.dry_run) {
      PostEvent(n->name, "Normal", "NcclTriageWouldMarkUnvalidated",
                "Would taint " + std::string(kUnvalidatedTaintKey) + "=" + reason +
                    ":NoSchedule until the node passes nccl-triage's probes (remediation.mode is "
                    "dry-run: nothing was changed)",
                status);
      continue;
    }
    status.refused.push_back(n->name);
    status.breaker_open = true;
    log_.Warn(kLogComponent, "node " + n->name + " (" + reason + "): not tainted " +
                                 std::string(kUnvalidatedTaintKey) + ": " +
                                 std::to_string(count) + " node(s) are being validated, the "
                                 "limit is " + std::to_string(limit));
    PostEvent(n->name, "Warning", "NcclTriageValidationSkipped",
              "Not tainted " + std::string(kUnvalidatedTaintKey) + " (" + reason + "): " +
                  std::to_string(count) + " node(s) are being validated already, the limit "
                  "(validation.max_nodes, validation.max_percent) is " + std::to_string(limit) +
                  ". Many nodes starting at once is more likely a rollout or a power event",
              status);
  }
  std::sort(to_taint.begin(), to_taint.end(),
            [](const NodeRead* a, const NodeRead* b) { return a->name < b->name; });
  for (const NodeRead* n : to_taint) {
    if (options_.dry_run) break;
    if (!status.cut_short.empty() || !(status.cut_short = CutShort()).empty()) break;
    PendingValidation& v = memory_.pending[n->name];
    const PendingNodeEvent event{
        "Warning", "NcclTriageUnvalidated",
        "The node " + std::string(v.reason == "rebooted" ? "rebooted" : "joined") +
            " (new bootID): tainted " + std::string(kUnvalidatedTaintKey) + "=" + v.reason +
            ":NoSchedule until it passes nccl-triage's socket and IB probes, or for at most "
            "validation.timeout_seconds (" + std::to_string(options_.policy.timeout_ms / 1000) +
            " s). Undo by hand: " + Undo(n->name)};
    touched.insert(n->name);
    if (!PatchTaint(*n, v.reason, event, status)) continue;  // the event posted with the patch
    v.tainted = true;
    status.tainted.push_back(n->name);
    log_.Info(kLogComponent, "node " + n->name + " (" + v.reason + "): tainted " +
                                 std::string(kUnvalidatedTaintKey) + " until it passes its probes");
  }
  // Events a patch left pending (a kill, a stop or a failed post came in between), whichever
  // coordinator made the patch.
  for (const NodeRead& n : nodes) {
    if (options_.dry_run) break;
    if (n.pending_event.empty() || touched.count(n.name)) continue;
    if (!status.cut_short.empty() || !(status.cut_short = CutShort()).empty()) break;
    Deliver(n.name, PendingEvents::Read(n.pending_event, "NcclTriageValidation"), n.pending_event,
            status);
  }
  relearn_ = false;
  if (first) {
    memory_.initialised = true;
    log_.Info(kLogComponent, "remembered the bootIDs of " + std::to_string(nodes.size()) +
                                 " node(s): nodes that join or reboot from now on are validated");
  }
  for (const auto& [node, v] : memory_.pending) {
    if (v.tainted) status.unvalidated.push_back(node);
  }
  if (!status.cut_short.empty()) {
    log_.Info(kLogComponent, "step cut short (" + status.cut_short + "): the rest next sweep");
  }
  return status;
}

json ToJson(const ValidationStatus& s) {
  json out = {{"nodes_seen", s.nodes_seen},   {"unvalidated", s.unvalidated},
              {"tainted", s.tainted},         {"validated", s.validated},
              {"timed_out", s.timed_out},     {"refused", s.refused},
              {"breaker_open", s.breaker_open}, {"errors", s.errors}};
  if (!s.list_error.empty()) out["list_error"] = s.list_error;
  if (!s.cut_short.empty()) out["cut_short"] = s.cut_short;
  return out;
}

}  // namespace nccl_triage
