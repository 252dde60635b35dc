// The verdict of the incident from the three bases (incident.h): which one decides, where they
// disagree, where the fault is and the exit code.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "triage/incident.h"
#include "triage/incident_logs.h"

namespace nccl_triage::triage {

// The class, cause and basis of the incident, and the disagreements of the other bases.
struct IncidentDecision {
  FaultClass fault_class = FaultClass::kUnknown;
  std::string cause;  // empty: none
  std::string basis;  // log | probes | checks | "" (none decided)
  std::vector<std::string> disagreements;
};

// A fault in the logs, then in the probes; a healthy log; a predicted fault (the checks);
// healthy probes. Where two bases disagree, the decision says so.
IncidentDecision DecideIncident(const BasisVerdict& log, const BasisVerdict& checks,
                                const BasisVerdict& probes);

// Where: the probes' fault (`probe_fault`, may be nullptr), else the first failure (a link when
// its peer is on another node and the cause involves the other end), else the peer the side
// effects name, else the first of the job's nodes whose agent reports the class the checks
// decided.
Localisation LocateFault(const LogFindings& logs, const ProbeFault* probe_fault,
                         const IncidentDecision& decision, const std::vector<AgentVerdict>& agents,
                         const std::set<std::string>& nodes);

// 0 healthy, 1 a fault, 3 nothing to conclude.
int IncidentExitCode(FaultClass c);

}  // namespace nccl_triage::triage
