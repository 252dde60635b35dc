// What the job's nodes say, beside what its logs say: the agents' published verdicts (a
// prediction from each node's state), the coordinator's probes run for this incident (what
// happens now between the nodes), and the kernel-log causes and rail faults shown with the
// verdict. Each basis prefers a fault on a node the logs point at (`focus`, FocusNodes).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "triage/incident.h"

namespace nccl_triage::triage {

// The agents' verdict on the job's nodes, and what it could not see.
struct ChecksFindings {
  BasisVerdict verdict;  // basis "checks"
  std::vector<std::string> not_looked_at;
};

// `read` false: the agents' verdicts could not be read (`error` says why).
ChecksFindings JudgeChecks(bool read, const std::string& error,
                           const std::vector<AgentVerdict>& agents,
                           const std::set<std::string>& nodes,
                           const std::vector<std::string>& focus);

// The probes' verdict, the fault it comes from, and the nodes the probes could not judge.
struct ProbesFindings {
  BasisVerdict verdict;               // basis "probes"
  const ProbeFault* fault = nullptr;  // into the ProbeOutcome judged; nullptr: none
  std::vector<std::string> not_looked_at;
};

ProbesFindings JudgeProbes(const ProbeOutcome& probes, const std::vector<std::string>& focus);

// The window a kernel-log event must fall in to be blamed (incident.h, kKernelLookBackMs).
struct KernelWindow {
  std::optional<int64_t> from_ms;  // none: no log gives the failure a time
  std::optional<int64_t> to_ms;
  int64_t first_failure_ms = 0;  // when from_ms is set: the logs' first and last failure
  int64_t last_failure_ms = 0;
  std::string bounds;  // how it was bounded, one line
};

// From the read logs' first failing lines and the pods' start times.
KernelWindow JobKernelWindow(const std::vector<LogResult>& logs, const std::vector<JobPod>& pods);

// The kernel-log causes the agents report on the job's nodes, one line each: those in the
// window (or of unknown time, or all when there is no window), and those outside it.
struct KernelLines {
  std::vector<std::string> in_window;
  std::vector<std::string> outside;
};

KernelLines KernelCauses(const std::vector<AgentVerdict>& agents,
                         const std::set<std::string>& nodes, const KernelWindow& window);

// One line per rail fault (incident.h, Incident::rails).
std::vector<std::string> RailLines(const std::vector<ProbeRailFault>& rail_faults);

}  // namespace nccl_triage::triage
