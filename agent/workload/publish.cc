#include "workload/publish.h"

#include <algorithm>

#include "base/log.h"
#include "checks/check_util.h"
#include "core/catalogue.h"
#include "core/report.h"

namespace nccl_triage::workload {
namespace {

constexpr const char* kVerdict = "nccl-triage.io/verdict";
constexpr const char* kCauses = "nccl-triage.io/causes";
constexpr const char* kBasis = "nccl-triage.io/basis";
constexpr const char* kUpdated = "nccl-triage.io/updated";

size_t CatalogueIndex(std::string_view id) {
  auto cat = Catalogue();
  for (size_t i = 0; i < cat.size(); ++i) {
    if (cat[i].id == id) return i;
  }
  return cat.size();
}

std::string Get(const std::map<std::string, std::string>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

}  // namespace

std::vector<PodVerdict> PodVerdicts(const std::vector<ContainerVerdict>& containers) {
  std::map<std::string, PodVerdict> by_uid;
  std::map<std::string, std::vector<Finding>> findings;
  for (const auto& c : containers) {
    PodVerdict& p = by_uid[c.pod.pod_uid];
    p.uid = c.pod.pod_uid;
    p.namespace_name = c.pod.namespace_name;
    p.pod = c.pod.pod;
    p.in_api = c.pod.pod_found;
    p.containers.push_back(c.pod.container);
    auto& f = findings[c.pod.pod_uid];
    f.insert(f.end(), c.findings.begin(), c.findings.end());
  }
  std::vector<PodVerdict> out;
  for (auto& [uid, p] : by_uid) {
    const auto& f = findings[uid];
    p.verdict = ClassFromFindings(f);
    for (const auto& finding : f) {
      if (finding.status == CheckStatus::kFail &&
          std::find(p.causes.begin(), p.causes.end(), finding.check) == p.causes.end()) {
        p.causes.push_back(finding.check);
      }
    }
    std::stable_sort(p.causes.begin(), p.causes.end(), [](const auto& a, const auto& b) {
      return CatalogueIndex(a) < CatalogueIndex(b);
    });
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<std::string> NodeFaultAnnotation(const std::optional<NodeVerdict>& v) {
  if (!v) return std::nullopt;
  std::string text;
  if (v->confirmed &&
      (v->fault_class == FaultClass::kArchitecture || v->fault_class == FaultClass::kIbResource)) {
    text = std::string(ToString(v->fault_class)) + " (node fault confirmed by probes)";
    if (!v->causes.empty()) text += ": " + Join(v->causes, ",");
  }
  if (!v->confirmed_links.empty()) {
    if (!text.empty()) text += "; ";
    text += "link fault confirmed by probes to " + Join(v->confirmed_links, ",");
  }
  if (text.empty()) return std::nullopt;
  if (text.size() > kMaxNodeVerdictAnnotationBytes) {
    text.resize(kMaxNodeVerdictAnnotationBytes - 3);  // ids and node names are ASCII
    text += "...";
  }
  return text;
}

std::optional<AnnotationPatch> AnnotationChange(const PodVerdict& pod,
                                                const std::map<std::string, std::string>& current,
                                                int64_t now_unix_ms,
                                                const std::optional<std::string>& node_fault) {
  AnnotationPatch patch;
  if (pod.verdict == FaultClass::kArchitecture || pod.verdict == FaultClass::kIbResource) {
    const std::string verdict(ToString(pod.verdict));
    const std::string causes = Join(pod.causes, ",");
    if (Get(current, kVerdict) != verdict || Get(current, kCauses) != causes ||
        Get(current, kBasis) != "checks" || current.count(kUpdated) == 0) {
      patch = AnnotationPatch{{kVerdict, verdict},
                              {kCauses, causes},
                              {kBasis, std::string("checks")},
                              {kUpdated, FormatRfc3339(now_unix_ms)}};
    }
  } else if (pod.verdict == FaultClass::kHealthy) {
    for (auto key : kWorkloadAnnotationKeys) {
      if (current.count(std::string(key)) != 0) patch[std::string(key)] = std::nullopt;
    }
  }  // unknown: nothing was judged, nothing to say about the pod itself
  const std::string node_key(kNodeVerdictAnnotationKey);
  auto now = current.find(node_key);
  if (node_fault && (now == current.end() || now->second != *node_fault)) {
    patch[node_key] = *node_fault;
  } else if (!node_fault && now != current.end()) {
    patch[node_key] = std::nullopt;
  }
  if (patch.empty()) return std::nullopt;
  return patch;
}

std::vector<WorkloadFinding> StateFindings(const std::vector<ContainerVerdict>& containers) {
  std::vector<WorkloadFinding> out;
  for (const auto& c : containers) {
    for (const auto& f : c.findings) {
      out.push_back({c.pod.namespace_name, c.pod.pod, c.pod.container, f});
    }
  }
  return out;
}

}  // namespace nccl_triage::workload
