#include "kube/cleanup.h"

#include <algorithm>
#include <thread>

#include "base/flags.h"
#include "core/json_text.h"

namespace nccl_triage {
namespace {

using nlohmann::json;

constexpr std::string_view kMarkerKey = "nccl-triage.io/remediated";
constexpr int kPageSize = 500;

bool Owned(std::string_view key) { return key.substr(0, kOwnedPrefix.size()) == kOwnedPrefix; }

const json& Member(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it != j.end() ? *it : kNull;
}

std::vector<std::string> OwnedAnnotations(const json& metadata) {
  std::vector<std::string> keys;
  const json& annotations = Member(metadata, "annotations");
  if (!annotations.is_object()) return keys;
  for (const auto& [key, value] : annotations.items()) {
    if (Owned(key)) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::string TaintText(const json& taint) {
  std::string out = StringMember(taint, "key");
  if (const std::string v = StringMember(taint, "value"); !v.empty()) out += "=" + v;
  return out + ":" + StringMember(taint, "effect");
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// The remediator's marker says "taint=<class>,cordon" when it cordoned the node.
bool MarkerSaysCordoned(std::string_view marker) {
  constexpr std::string_view kCordon = ",cordon";
  return marker.size() >= kCordon.size() &&
         marker.substr(marker.size() - kCordon.size()) == kCordon;
}

// At most this many nodes or pods are read per list: a cluster of 100,000 nodes and ten times as
// many pods fits; a server that never stops paging does not hold the command.
constexpr int kMaxListed = 2'000'000;

std::string TargetText(const StopTarget& t) {
  // "daemonsets" -> "daemonset ns/name"
  return t.resource.substr(0, t.resource.size() - 1) + " " + t.ns + "/" + t.name;
}

// The target's pods now; `error` gets the failed list.
std::vector<json> PodsOfTarget(KubeClient& client, const StopTarget& t, std::string* error) {
  std::vector<json> pods;
  *error = ListEveryPage(
      [&](const PodListQuery& q) { return client.ListNamespacedPods(t.ns, q); }, PodListQuery{},
      kPageSize, kMaxListed, nullptr, [&](const json& pod) {
        if (PodOfTarget(pod, t)) pods.push_back(pod);
      });
  return pods;
}

// The stop step (see the header): mark the DaemonSets' pods, delete the workloads, wait until
// their pods are gone. False when it failed or timed out (the errors say which).
bool StopWorkloads(KubeClient& client, const CleanupOptions& options, CleanupResult& result) {
  bool ok = true;
  for (const StopTarget& t : options.stop) {
    std::string error;
    const std::vector<json> pods = PodsOfTarget(client, t, &error);
    if (!error.empty()) {
      result.errors.push_back("list pods of " + TargetText(t) + ": " + error);
      ok = false;
      continue;
    }
    result.stopped.push_back(TargetText(t) + ": " + std::to_string(pods.size()) + " pod(s)");
    if (options.dry_run) continue;
    if (t.resource == "daemonsets") {
      for (const json& pod : pods) {
        const json& meta = Member(pod, "metadata");
        AnnotationPatch mark;
        mark[std::string(kUninstallingAnnotation)] = "true";
        KubeResponse r = client.PatchPodAnnotationsIfUid(
            StringMember(meta, "namespace"), StringMember(meta, "name"), StringMember(meta, "uid"),
            mark);
        if (!r.ok() && r.status != 404) {
          result.errors.push_back("mark pod " + t.ns + "/" + StringMember(meta, "name") + ": " +
                                  r.Describe());
        }
      }
    }
    KubeResponse r = client.DeleteObject(t.ns, t.resource, t.name);
    if (!r.ok() && r.status != 404) {
      result.errors.push_back("delete " + TargetText(t) + ": " + r.Describe());
      ok = false;
    }
  }
  if (options.dry_run || options.stop.empty()) return ok;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(options.stop_timeout_seconds);
  while (true) {
    size_t left = 0;
    std::string waiting;
    for (const StopTarget& t : options.stop) {
      std::string error;
      const size_t n = PodsOfTarget(client, t, &error).size();
      if (!error.empty()) {
        result.errors.push_back("list pods of " + TargetText(t) + ": " + error);
        return false;
      }
      if (n > 0) waiting += (waiting.empty() ? "" : ", ") + TargetText(t);
      left += n;
    }
    if (left == 0) return ok;
    if (std::chrono::steady_clock::now() >= deadline) {
      result.errors.push_back(std::to_string(left) + " pod(s) of " + waiting +
                              " still there after " +
                              std::to_string(options.stop_timeout_seconds) + " s");
      return false;
    }
    std::this_thread::sleep_for(options.stop_poll);
  }
}

}  // namespace

StatusOr<StopTarget> ParseStopTarget(const std::string& text, bool workloads) {
  const std::string flag = workloads ? "--stop" : "--delete";
  const char* kinds = workloads ? "daemonset or deployment" : "configmap or lease";
  const size_t a = text.find('/');
  const size_t b = a == std::string::npos ? a : text.find('/', a + 1);
  if (b == std::string::npos || a == 0 || b == a + 1 || b + 1 >= text.size() ||
      text.find('/', b + 1) != std::string::npos) {
    return InvalidArgument(flag + " '" + text + "': want NAMESPACE/KIND/NAME, KIND " + kinds);
  }
  StopTarget t;
  t.ns = text.substr(0, a);
  std::string kind = text.substr(a + 1, b - a - 1);
  t.name = text.substr(b + 1);
  if (kind.back() != 's') kind += 's';
  const bool known = workloads ? (kind == "daemonsets" || kind == "deployments")
                               : (kind == "configmaps" || kind == "leases");
  if (!known) {
    return InvalidArgument(flag + " '" + text + "': kind '" + text.substr(a + 1, b - a - 1) +
                           "' is not " + kinds);
  }
  t.resource = kind;
  return t;
}

bool PodMarkedUninstalling(const json& pod_list, const std::string& ns, const std::string& name) {
  const json& items = Member(pod_list, "items");
  if (!items.is_array()) return false;
  for (const json& pod : items) {
    const json& meta = Member(pod, "metadata");
    if (StringMember(meta, "name") != name || StringMember(meta, "namespace") != ns) continue;
    const json& annotations = Member(meta, "annotations");
    return annotations.is_object() && annotations.contains(std::string(kUninstallingAnnotation));
  }
  return false;
}

bool PodOfTarget(const json& pod, const StopTarget& target) {
  const json& meta = Member(pod, "metadata");
  if (StringMember(meta, "namespace") != target.ns) return false;
  const json& refs = Member(meta, "ownerReferences");
  if (!refs.is_array()) return false;
  for (const json& ref : refs) {
    const std::string kind = StringMember(ref, "kind");
    const std::string name = StringMember(ref, "name");
    if (target.resource == "daemonsets" && kind == "DaemonSet" && name == target.name) return true;
    if (target.resource == "deployments" && kind == "ReplicaSet" &&
        name.size() > target.name.size() + 1 && name.rfind(target.name + "-", 0) == 0) {
      return true;
    }
  }
  return false;
}

NodeCleanup PlanNodeCleanup(const json& node) {
  NodeCleanup plan;
  const json& metadata = Member(node, "metadata");
  plan.name = StringMember(metadata, "name");
  plan.resource_version = StringMember(metadata, "resourceVersion");
  const json& spec = Member(node, "spec");
  const json& taints = Member(spec, "taints");
  if (taints.is_array()) {
    for (const json& t : taints) {
      if (Owned(StringMember(t, "key"))) {
        plan.taints.push_back(TaintText(t));
      } else {
        plan.kept_taints.push_back(t);
      }
    }
  }
  const json& unschedulable = Member(spec, "unschedulable");
  const std::string marker =
      StringMember(Member(metadata, "annotations"), std::string(kMarkerKey).c_str());
  plan.uncordon = unschedulable.is_boolean() && unschedulable.get<bool>() &&
                  MarkerSaysCordoned(marker);
  plan.annotations = OwnedAnnotations(metadata);
  const json& conditions = Member(Member(node, "status"), "conditions");
  if (conditions.is_array()) {
    for (size_t i = 0; i < conditions.size(); ++i) {
      if (StringMember(conditions[i], "type") == kFabricConditionType) {
        plan.condition_index = static_cast<int>(i);
        break;
      }
    }
  }
  return plan;
}

PodCleanup PlanPodCleanup(const json& pod) {
  PodCleanup plan;
  const json& metadata = Member(pod, "metadata");
  plan.ns = StringMember(metadata, "namespace");
  plan.name = StringMember(metadata, "name");
  plan.uid = StringMember(metadata, "uid");
  plan.annotations = OwnedAnnotations(metadata);
  return plan;
}

NodePatch NodeCleanupPatch(const NodeCleanup& plan) {
  NodePatch patch;
  patch.resource_version = plan.resource_version;
  if (!plan.taints.empty()) patch.taints = plan.kept_taints;
  if (plan.uncordon) patch.unschedulable = false;
  for (const auto& key : plan.annotations) patch.annotations[key] = std::nullopt;
  return patch;
}

std::string DescribeNodeCleanup(const NodeCleanup& plan) {
  std::vector<std::string> parts;
  for (const auto& t : plan.taints) parts.push_back("taint " + t);
  if (plan.uncordon) parts.push_back("cordon");
  for (const auto& a : plan.annotations) parts.push_back("annotation " + a);
  if (plan.condition_index) parts.push_back("condition " + std::string(kFabricConditionType));
  return "node " + plan.name + ": " + Join(parts);
}

std::string DescribePodCleanup(const PodCleanup& plan) {
  std::vector<std::string> parts;
  for (const auto& a : plan.annotations) parts.push_back("annotation " + a);
  return "pod " + plan.ns + "/" + plan.name + ": " + Join(parts);
}

CleanupResult RunCleanup(KubeClient& client, const CleanupOptions& options) {
  CleanupResult result;
  // A failed stop is reported, and the cleanup still runs: what it removes now stays removed
  // unless a surviving agent writes it again.
  StopWorkloads(client, options, result);
  for (const StopTarget& t : options.remove) {
    if (options.dry_run) {
      result.deleted.push_back(TargetText(t));
      continue;
    }
    KubeResponse r = client.DeleteObject(t.ns, t.resource, t.name);
    if (r.ok()) {
      result.deleted.push_back(TargetText(t));
    } else if (r.status != 404) {  // 404: never made, or gone already
      result.errors.push_back("delete " + TargetText(t) + ": " + r.Describe());
    }
  }
  std::vector<NodeCleanup> node_plans;
  std::vector<std::string> node_names;
  PodListQuery node_query;
  node_query.label_selector = options.node_selector;
  const std::string listed = ListEveryPage(
      [&](const PodListQuery& q) { return client.ListNodes(q); }, node_query, kPageSize,
      kMaxListed, nullptr, [&](const json& node) {
        NodeCleanup plan = PlanNodeCleanup(node);
        node_names.push_back(plan.name);
        if (!plan.Empty()) node_plans.push_back(std::move(plan));
      });
  if (!listed.empty()) {
    result.errors.push_back("list nodes: " + listed);
    return result;
  }
  for (NodeCleanup& plan : node_plans) {
    ++result.nodes;
    result.lines.push_back(DescribeNodeCleanup(plan));
    if (options.dry_run) continue;
    // Spec and metadata: guarded by resourceVersion; on a conflict, read and plan again.
    for (int attempt = 0; plan.SpecOrMetadata(); ++attempt) {
      KubeResponse r = client.PatchNode(plan.name, NodeCleanupPatch(plan));
      if (r.ok()) break;
      if (r.status != 409 || attempt >= options.max_conflict_retries) {
        result.errors.push_back("node " + plan.name + ": " + r.Describe());
        break;
      }
      KubeResponse again = client.GetNode(plan.name);
      const json fresh = json::parse(again.body, nullptr, false);
      if (!again.ok() || !fresh.is_object()) {
        result.errors.push_back("node " + plan.name + ": " + again.Describe());
        break;
      }
      const std::optional<int> condition = plan.condition_index;
      plan = PlanNodeCleanup(fresh);
      plan.condition_index = condition;  // the status patch below guards its own index
    }
    if (plan.condition_index) {
      KubeResponse r = client.RemoveNodeCondition(plan.name, *plan.condition_index,
                                                  std::string(kFabricConditionType));
      // 422: the test op failed (the conditions moved): read the index again, once.
      if (r.status == 422) {
        KubeResponse again = client.GetNode(plan.name);
        const json fresh = json::parse(again.body, nullptr, false);
        if (again.ok() && fresh.is_object()) {
          const NodeCleanup now = PlanNodeCleanup(fresh);
          if (!now.condition_index) continue;
          r = client.RemoveNodeCondition(plan.name, *now.condition_index,
                                         std::string(kFabricConditionType));
        }
      }
      if (!r.ok()) result.errors.push_back("node " + plan.name + " condition: " + r.Describe());
    }
  }

  // Pods: on the selected nodes, or everywhere.
  std::vector<PodCleanup> pod_plans;
  std::vector<std::string> selectors;
  if (options.node_selector.empty()) {
    selectors.emplace_back();
  } else {
    for (const auto& name : node_names) selectors.push_back("spec.nodeName=" + name);
  }
  for (const auto& selector : selectors) {
    PodListQuery query;
    query.field_selector = selector;
    const std::string listed = ListEveryPage(
        [&](const PodListQuery& q) { return client.ListAllPods(q); }, query, kPageSize,
        kMaxListed, nullptr, [&](const json& pod) {
          PodCleanup plan = PlanPodCleanup(pod);
          if (!plan.Empty()) pod_plans.push_back(std::move(plan));
        });
    if (!listed.empty()) {
      result.errors.push_back("list pods" + (selector.empty() ? "" : " (" + selector + ")") + ": " +
                              listed);
    }
  }
  for (const PodCleanup& plan : pod_plans) {
    ++result.pods;
    result.lines.push_back(DescribePodCleanup(plan));
    if (options.dry_run) continue;
    AnnotationPatch patch;
    for (const auto& key : plan.annotations) patch[key] = std::nullopt;
    KubeResponse r = client.PatchPodAnnotationsIfUid(plan.ns, plan.name, plan.uid, patch);
    // 404: the pod went meanwhile, and its annotations with it.
    if (!r.ok() && r.status != 404) {
      result.errors.push_back("pod " + plan.ns + "/" + plan.name + ": " + r.Describe());
    }
  }
  return result;
}

Status ParseCleanupFlags(const std::vector<std::string>& args, CleanupFlags& flags) {
  std::vector<std::string> stop, remove;
  Status parsed = FlagParser()
                      .Switch({"--help", "-h"}, &flags.help)
                      .Switch({"--dry-run"}, &flags.options.dry_run)
                      .String({"--selector", "-l"}, &flags.options.node_selector)
                      .Repeated({"--stop"}, &stop)
                      .Int({"--stop-timeout"}, &flags.options.stop_timeout_seconds, 1, 3600)
                      .Repeated({"--delete"}, &remove)
                      .String({"--kubeconfig"}, &flags.kubeconfig)
                      .String({"--context"}, &flags.context)
                      .Parse(args);
  if (!parsed.ok()) return parsed;
  for (const std::string& text : stop) {
    auto target = ParseStopTarget(text);
    if (!target.ok()) return target.status();
    flags.options.stop.push_back(*target);
  }
  for (const std::string& text : remove) {
    auto target = ParseStopTarget(text, false);
    if (!target.ok()) return target.status();
    flags.options.remove.push_back(*target);
  }
  return Status();
}

const char* const kCleanupHelp =
    "Removes what nccl-triage leaves on the cluster after helm uninstall: taints\n"
    "nccl-triage.io/*, the cordon its remediation placed, the NcclFabricReady node\n"
    "condition and nccl-triage.io/* annotations of nodes and pods. A taint, cordon or\n"
    "annotation of anyone else stays. Run it once the agents and the coordinator are\n"
    "gone (or remediation is off), or they write them again. Prints one line per node\n"
    "and pod.\n\n"
    "  --dry-run         list what would be removed, change nothing\n"
    "  --selector, -l    only the nodes matching this label selector, and the pods\n"
    "                    on them (default: every node and every pod)\n"
    "  --stop NS/daemonset/NAME, --stop NS/deployment/NAME (repeatable)\n"
    "                    first stop these workloads of the release (the chart's\n"
    "                    pre-delete hook): mark a DaemonSet's pods (its agents then\n"
    "                    remove their state directory as they stop), delete the\n"
    "                    workloads and wait until their pods are gone\n"
    "  --stop-timeout S  how long to wait for those pods (default 300)\n"
    "  --delete NS/configmap/NAME, --delete NS/lease/NAME (repeatable)\n"
    "                    then delete these objects the coordinator made (its state\n"
    "                    ConfigMap, its Lease); one that does not exist is fine\n"
    "  --kubeconfig, --context   credentials as kubectl finds them (else KUBECONFIG,\n"
    "                    ~/.kube/config, the pod's service account)\n";

}  // namespace nccl_triage
