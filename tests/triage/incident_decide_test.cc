// The verdict from the three bases, where the fault is, and the exit code, each on its own.
#include "triage/incident_decide.h"

#include <gtest/gtest.h>

#include "incident_values.h"

namespace nccl_triage::triage {
namespace {

using incident_test::Basis;

const BasisVerdict kNoChecks = Basis("checks", FaultClass::kUnknown, "", false);
const BasisVerdict kNoProbes = Basis("probes", FaultClass::kUnknown, "", false);

TEST(DecideIncident, ALogFaultDecidesAndProbesThatPassNowDisagree) {
  const IncidentDecision d = DecideIncident(Basis("log", FaultClass::kIbResource, "limits.memlock"),
                                            kNoChecks, Basis("probes", FaultClass::kHealthy));
  EXPECT_EQ(d.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(d.cause, "limits.memlock");
  EXPECT_EQ(d.basis, "log");
  ASSERT_EQ(d.disagreements.size(), 1U);
  EXPECT_EQ(d.disagreements[0],
            "the log shows ib_resource (limits.memlock) but the probes pass now between the job's "
            "nodes: a transient fault, or one fixed since");
}

TEST(DecideIncident, AProbeFaultOutranksAHealthyLogAndChecksOfAnotherClassDisagree) {
  const IncidentDecision d = DecideIncident(Basis("log", FaultClass::kHealthy),
                                            Basis("checks", FaultClass::kArchitecture, "pcie.acs"),
                                            Basis("probes", FaultClass::kIbResource, "ib.fabric"));
  EXPECT_EQ(d.basis, "probes");
  EXPECT_EQ(d.cause, "ib.fabric");
  EXPECT_EQ(d.disagreements,
            std::vector<std::string>{"the probes says ib_resource, the node checks say "
                                     "architecture (node checks see the host, not the job's "
                                     "containers)"});
}

TEST(DecideIncident, ChecksPredictOnlyWhenNeitherLogNorProbesFindAFault) {
  const BasisVerdict checks = Basis("checks", FaultClass::kIbResource, "ib.port_state");
  const IncidentDecision quiet =
      DecideIncident(Basis("log", FaultClass::kUnknown), checks, kNoProbes);
  EXPECT_EQ(quiet.basis, "checks");
  EXPECT_EQ(quiet.fault_class, FaultClass::kIbResource);
  EXPECT_TRUE(quiet.disagreements.empty());
  const IncidentDecision healthy =
      DecideIncident(Basis("log", FaultClass::kHealthy), checks, kNoProbes);
  EXPECT_EQ(healthy.basis, "log");
  EXPECT_EQ(healthy.disagreements,
            std::vector<std::string>{"the log shows no fault but the node checks predict "
                                     "ib_resource (ib.port_state)"});
  const IncidentDecision none =
      DecideIncident(Basis("log", FaultClass::kUnknown), kNoChecks, kNoProbes);
  EXPECT_EQ(none.basis, "");
  EXPECT_EQ(none.fault_class, FaultClass::kUnknown);
}

LogFindings FirstOn(const std::string& node, const std::string& cause,
                    const std::string& peer_node) {
  LogFindings f;
  f.verdict = Basis("log", FaultClass::kIbResource, cause);
  f.first = FirstFailure{};
  f.first->pod = "w1";
  f.first->node = node;
  if (!peer_node.empty()) f.peer = PeerView{{"10.0.0.2", "w2", peer_node, "pod IP"}, 1};
  return f;
}

TEST(LocateFault, TheFirstFailureIsALinkWhenItsCauseInvolvesAPeerOnAnotherNode) {
  const IncidentDecision d{FaultClass::kIbResource, "ib.fabric", "log", {}};
  const Localisation link =
      LocateFault(FirstOn("gpu-01", "ib.fabric", "gpu-02"), nullptr, d, {}, {});
  EXPECT_EQ(link.kind, "link");
  EXPECT_EQ(link.node, "gpu-01");
  EXPECT_EQ(link.peer_node, "gpu-02");
  EXPECT_EQ(link.basis, "log");
  // The same cause with the peer on the same node, or a cause of one end only: the node.
  EXPECT_EQ(LocateFault(FirstOn("gpu-01", "ib.fabric", "gpu-01"), nullptr, d, {}, {}).kind, "node");
  EXPECT_EQ(LocateFault(FirstOn("gpu-01", "limits.memlock", "gpu-02"), nullptr, d, {}, {}).kind,
            "node");
}

TEST(LocateFault, AProbeFaultComesFirstAndTheChecksNameTheirNodeLast) {
  const ProbeFault probe{"link", "gpu-03", "gpu-04", FaultClass::kIbResource, {}, ""};
  const IncidentDecision by_probes{FaultClass::kIbResource, "", "probes", {}};
  const Localisation p =
      LocateFault(FirstOn("gpu-01", "ib.fabric", "gpu-02"), &probe, by_probes, {}, {});
  EXPECT_EQ(p.node, "gpu-03");
  EXPECT_EQ(p.basis, "probes");
  const IncidentDecision by_checks{FaultClass::kIbResource, "ib.port_state", "checks", {}};
  const std::vector<AgentVerdict> agents = {{"gpu-99", "a", "ib_resource", "checks", {}, ""},
                                            {"gpu-01", "b", "ib_resource", "checks", {}, ""}};
  const Localisation c = LocateFault(LogFindings{}, nullptr, by_checks, agents, {"gpu-01"});
  EXPECT_EQ(c.kind, "node");
  EXPECT_EQ(c.node, "gpu-01");  // gpu-99 is not the job's
  EXPECT_EQ(c.basis, "checks");
  EXPECT_TRUE(
      LocateFault(LogFindings{}, nullptr, IncidentDecision{}, agents, {"gpu-01"}).kind.empty());
}

TEST(IncidentExitCode, FaultIsOneHealthyIsZeroUnknownIsThree) {
  EXPECT_EQ(IncidentExitCode(FaultClass::kArchitecture), 1);
  EXPECT_EQ(IncidentExitCode(FaultClass::kIbResource), 1);
  EXPECT_EQ(IncidentExitCode(FaultClass::kHealthy), 0);
  EXPECT_EQ(IncidentExitCode(FaultClass::kUnknown), 3);
}

}  // namespace
}  // namespace nccl_triage::triage
