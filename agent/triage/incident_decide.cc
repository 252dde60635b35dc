#include "triage/incident_decide.h"

#include "core/ids.h"

namespace nccl_triage::triage {
namespace {

std::string ClassText(FaultClass c) { return std::string(ToString(c)); }

// Causes that involve the other end of a connection: with a named peer on another node, the
// log localises them to a link rather than to the failing rank's node.
bool IsLinkCause(const std::string& cause) {
  return ids::kIbFabric == cause || ids::kNetConnect == cause || ids::kPairPkeyPartition == cause ||
         ids::kPairLinkLayer == cause;
}

const BasisVerdict* DecidingBasis(const BasisVerdict& log, const BasisVerdict& checks,
                                  const BasisVerdict& probes) {
  if (IsFault(log.fault_class)) return &log;
  if (IsFault(probes.fault_class)) return &probes;
  if (log.fault_class == FaultClass::kHealthy) return &log;
  if (IsFault(checks.fault_class)) return &checks;
  if (probes.fault_class == FaultClass::kHealthy) return &probes;
  return nullptr;
}

}  // namespace

int IncidentExitCode(FaultClass c) { return IsFault(c) ? 1 : c == FaultClass::kHealthy ? 0 : 3; }

IncidentDecision DecideIncident(const BasisVerdict& log, const BasisVerdict& checks,
                                const BasisVerdict& probes) {
  IncidentDecision out;
  if (const BasisVerdict* decided = DecidingBasis(log, checks, probes)) {
    out.fault_class = decided->fault_class;
    out.cause = decided->cause;
    out.basis = decided->basis;
  }
  if (IsFault(log.fault_class) && probes.looked && probes.fault_class != log.fault_class) {
    out.disagreements.push_back(
        probes.fault_class == FaultClass::kHealthy
            ? "the log shows " + ClassText(log.fault_class) + " (" + log.cause +
                  ") but the probes pass now between the job's nodes: a transient fault, or "
                  "one fixed since"
            : "the log says " + ClassText(log.fault_class) + ", the probes say " +
                  ClassText(probes.fault_class));
  }
  if (checks.looked && out.basis != "checks" && IsFault(out.fault_class) &&
      checks.fault_class != out.fault_class && checks.fault_class != FaultClass::kUnknown) {
    out.disagreements.push_back("the " + out.basis + " says " + ClassText(out.fault_class) +
                                ", the node checks say " + ClassText(checks.fault_class) +
                                " (node checks see the host, not the job's containers)");
  }
  if (out.fault_class == FaultClass::kHealthy && IsFault(checks.fault_class)) {
    out.disagreements.push_back("the " + out.basis +
                                " shows no fault but the node checks predict " +
                                ClassText(checks.fault_class) + " (" + checks.cause + ")");
  }
  return out;
}

Localisation LocateFault(const LogFindings& logs, const ProbeFault* probe_fault,
                         const IncidentDecision& decision, const std::vector<AgentVerdict>& agents,
                         const std::set<std::string>& nodes) {
  if (probe_fault != nullptr && IsFault(probe_fault->fault_class)) {
    return {probe_fault->kind, probe_fault->node, probe_fault->peer, "probes"};
  }
  const auto& first = logs.first;
  const auto& peer = logs.peer;
  if (first) {
    const bool link = peer && !peer->match.node.empty() && peer->match.node != first->node &&
                      IsLinkCause(logs.verdict.cause);
    return link ? Localisation{"link", first->node, peer->match.node, "log"}
                : Localisation{"node", first->node, "", "log"};
  }
  if (peer && !peer->match.node.empty()) return {"node", peer->match.node, "", "log"};
  if (decision.basis == "checks") {
    for (const AgentVerdict& a : agents) {
      if (FromString<FaultClass>(a.verdict) == decision.fault_class && nodes.count(a.node)) {
        return {"node", a.node, "", "checks"};
      }
    }
  }
  return {};
}

}  // namespace nccl_triage::triage
