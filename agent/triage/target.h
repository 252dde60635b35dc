// Target: which pods a triage is about, and the small parsers of its command line.
//
// `--job NAME` finds the pods of a batch/v1 Job, a Kubeflow PyTorchJob or MPIJob, a JobSet or a
// Volcano job by the label each controller puts on its pods; the selectors are tried in order
// and the first that matches any pod wins (one list call each, no wider read).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace nccl_triage::triage {

struct Target {
  enum class Kind { kSelector, kJob, kPods, kNodes };
  Kind kind = Kind::kSelector;
  std::string selector;            // kSelector: a label selector; kJob: the job's name
  std::vector<std::string> names;  // kPods, kNodes
};

// "job train-7", "selector app=bert", "pods a, b", "nodes n1, n2".
std::string Describe(const Target& target);

// The label selectors `--job NAME` tries, in order.
std::vector<std::string> JobSelectors(const std::string& job);

// A comma list: items trimmed, empties dropped.
std::vector<std::string> SplitList(std::string_view list);

// "2h", "90m", "1h30m", "45s", "3d" -> seconds (> 0).
StatusOr<int64_t> ParseDurationSeconds(std::string_view text);

// "8MiB", "512KiB", "1GiB", "1048576" -> bytes (> 0).
StatusOr<uint64_t> ParseByteSize(std::string_view text);

// A Kubernetes object name as the API accepts it (DNS-1123 subdomain, at most 253 bytes): what
// the command line may pass on to the API.
bool IsObjectName(std::string_view name);

}  // namespace nccl_triage::triage
