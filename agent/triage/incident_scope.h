// The job as the incident sees it: the nodes it covers, its pods by name and in the job's order,
// and the nodes the logs point at. The first step of JudgeIncident (incident.h); the later steps
// take what they need of it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "triage/incident.h"

namespace nccl_triage::triage {

// The nodes of the job (those its pods ran on and those named with --nodes) and its pods by
// name. Points into the pods it was made from, which must outlive it.
struct JobScope {
  std::set<std::string> nodes;
  std::map<std::string, const JobPod*> pods;  // of two pods of one name, the later

  // nullptr: not a pod of the job.
  const JobPod* Pod(const std::string& name) const;
  bool HasNode(const std::string& node) const { return nodes.count(node) > 0; }
};

JobScope ScopeOfJob(const std::vector<JobPod>& pods, const std::vector<std::string>& extra_nodes);

// The job's order of two pods (or logs of pods, by name when the pod is not known): a numeric
// job index sorts as a number; pods without one after, by name.
bool PodOrderLess(const JobPod* a, const JobPod* b, const std::string& an, const std::string& bn);

// The nodes the logs point at, most telling first: the first failure's, then its peer's.
std::vector<std::string> FocusNodes(const std::optional<FirstFailure>& first,
                                    const std::optional<PeerView>& peer);

}  // namespace nccl_triage::triage
