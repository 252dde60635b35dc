// Plain values for the tests of the incident's steps: pods of a job and logs as the classifier
// left them (no log text read), so that each step is tested on the values it takes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "triage/incident.h"

namespace nccl_triage::triage::incident_test {

// Pod `name` of job "train" on `node`, with job index `index` and one terminated container.
inline JobPod PodOn(const std::string& name, const std::string& node, const std::string& index,
                    const std::string& ip = "") {
  JobPod p;
  p.name = name;
  p.ns = "ml";
  p.uid = "uid-" + name;
  p.node = node;
  p.pod_ip = ip;
  if (!ip.empty()) p.pod_ips = {ip};
  p.index = index;
  p.owner = {"batch/v1", "Job", "train", "job-uid"};
  ContainerState c;
  c.name = "trainer";
  c.state = "terminated";
  c.reason = "Error";
  c.exit_code = 1;
  p.containers = {c};
  return p;
}

// A read log of `pod` whose classification is `fault_class` with `cause`, its first failing
// line `root` (line 2), written at `root_ns` when given.
inline LogResult ReadLog(const std::string& pod, FaultClass fault_class, const std::string& cause,
                         const std::string& root, std::optional<int64_t> root_ns = std::nullopt) {
  LogResult l;
  l.pod = pod;
  l.container = "trainer";
  l.read = true;
  l.summary.bytes = 2048;
  l.summary.lines = 10;
  l.summary.root_ns = root_ns;
  Classification& c = l.summary.classification;
  c.fault_class = fault_class;
  if (!root.empty()) c.roots.push_back({pod + ":77", {2, root}});
  if (!cause.empty()) {
    ClassifiedCause cc;
    cc.cause = cause;
    cc.fault_class = fault_class;
    cc.remedy = "fix " + cause;
    if (!root.empty()) cc.evidence.push_back({2, root});
    c.causes.push_back(std::move(cc));
  }
  return l;
}

inline LogResult FailingLog(const std::string& pod, std::optional<int64_t> root_ns,
                            const std::string& root = "NCCL WARN Call to ibv_reg_mr failed") {
  return ReadLog(pod, FaultClass::kIbResource, "limits.memlock", root, root_ns);
}

// A log that only lost its connection to `peer` (a side effect of a failure there).
inline LogResult LostPeerLog(const std::string& pod, const std::string& peer,
                             std::optional<int64_t> root_ns = std::nullopt) {
  return ReadLog(pod, FaultClass::kUnknown, "peer.exited",
                 "NCCL WARN socketProgress: Connection closed by remote peer " + peer + "<52187>",
                 root_ns);
}

inline LogResult HealthyLog(const std::string& pod) {
  return ReadLog(pod, FaultClass::kHealthy, "", "");
}

inline LogResult UnreadLog(const std::string& pod, const std::string& error) {
  LogResult l;
  l.pod = pod;
  l.container = "trainer";
  l.end.error = error;
  return l;
}

inline BasisVerdict Basis(const std::string& basis, FaultClass c, const std::string& cause = "",
                          bool looked = true) {
  return {basis, looked, c, cause, ""};
}

}  // namespace nccl_triage::triage::incident_test
