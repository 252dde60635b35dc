#include "core/decision.h"

#include <gtest/gtest.h>

#include "core/catalogue.h"

namespace nccl_triage {
namespace {

using O = ProbeOutcome;

Finding Fail(std::string id, FaultClass c) {
  Finding f;
  f.check = std::move(id);
  f.fault_class = c;
  f.status = CheckStatus::kFail;
  return f;
}

ProbeResult WithCause(ProbeMode mode, ProbeOutcome o, std::string cause, FaultClass c) {
  ProbeResult r;
  r.mode = mode;
  r.outcome = o;
  Classification cl;
  cl.fault_class = c;
  ClassifiedCause cause_entry;
  cause_entry.cause = std::move(cause);
  cause_entry.fault_class = c;
  cause_entry.confidence = 0.9;
  cl.causes.push_back(cause_entry);
  r.classification = cl;
  return r;
}

TEST(Decide, BothPassIsHealthyWithProbeBasis) {
  DecisionInputs in;
  in.socket = O::kPass;
  in.ib = O::kPass;
  auto v = Decide(in);
  EXPECT_EQ(v.fault_class, FaultClass::kHealthy);
  EXPECT_EQ(v.basis, Basis::kProbes);
  EXPECT_TRUE(v.causes.empty());
}

TEST(Decide, BothPassWithAFailedDiagnosticsCheckNamesItAndStaysHealthy) {
  ProbeResult ib = WithCause(ProbeMode::kIb, O::kPass, "gpu.p2p", FaultClass::kArchitecture);
  ib.classification->causes.front().diagnostics = true;
  DecisionInputs in;
  in.socket = O::kPass;
  in.ib = O::kPass;
  in.ib_result = &ib;
  auto v = Decide(in);
  EXPECT_EQ(v.fault_class, FaultClass::kHealthy);
  EXPECT_EQ(v.causes, (std::vector<std::string>{"gpu.p2p"}));
  EXPECT_NE(v.reason.find("NCCL's diagnostics report failed a check: gpu.p2p"), std::string::npos)
      << v.reason;
  // A cause that is not the report's (a WARN the run got over) is not named on a pass.
  ib.classification->causes.front().diagnostics = false;
  EXPECT_TRUE(Decide(in).causes.empty());
}

TEST(Decide, SocketPassIbFailIsIbResourceWithLogCauseFirst) {
  // memlock at 64 KiB: the finding's class is architecture, the verdict's class is ib_resource.
  ProbeResult ib = WithCause(ProbeMode::kIb, O::kFail, "limits.memlock", FaultClass::kIbResource);
  DecisionInputs in;
  in.socket = O::kPass;
  in.ib = O::kFail;
  in.ib_result = &ib;
  in.node_findings = {Fail("limits.memlock", FaultClass::kArchitecture),
                      Fail("container.ipc_lock", FaultClass::kArchitecture)};
  auto v = Decide(in);
  EXPECT_EQ(v.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(v.basis, Basis::kProbes);
  EXPECT_EQ(v.causes, (std::vector<std::string>{"limits.memlock", "container.ipc_lock"}));
}

TEST(Decide, ALogCauseThatANodeCheckRefutesIsDropped) {
  // `Failed to initialize any NET plugin` names ib.hca_present; on a node whose HCAs are all
  // present and whose selected port is down, the node's checks say which it is.
  ProbeResult ib = WithCause(ProbeMode::kIb, O::kFail, "ib.hca_present", FaultClass::kIbResource);
  Finding present;
  present.check = "ib.hca_present";
  present.fault_class = FaultClass::kIbResource;
  present.status = CheckStatus::kPass;
  DecisionInputs in;
  in.socket = O::kPass;
  in.ib = O::kFail;
  in.ib_result = &ib;
  in.node_findings = {present, Fail("ib.port_state", FaultClass::kIbResource)};
  auto v = Decide(in);
  EXPECT_EQ(v.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(v.causes, (std::vector<std::string>{"ib.port_state"}));
  // Without the node's word the log's cause stays.
  in.node_findings = {};
  EXPECT_EQ(Decide(in).causes, (std::vector<std::string>{"ib.hca_present"}));
}

TEST(Decide, SocketFailIsArchitectureWhateverIbDid) {
  for (auto ib : {O::kPass, O::kFail, O::kTimeout, O::kNotRun}) {
    ProbeResult s =
        WithCause(ProbeMode::kSocket, O::kFail, "net.socket_ifname", FaultClass::kArchitecture);
    DecisionInputs in;
    in.socket = O::kFail;
    in.ib = ib;
    in.socket_result = &s;
    in.node_findings = {Fail("ib.port_state", FaultClass::kIbResource)};
    auto v = Decide(in);
    EXPECT_EQ(v.fault_class, FaultClass::kArchitecture);
    // IB findings are not architecture causes.
    EXPECT_EQ(v.causes, (std::vector<std::string>{"net.socket_ifname"}));
  }
}

TEST(Decide, SocketTimeoutWithoutExplanationNamesTimeout) {
  DecisionInputs in;
  in.socket = O::kTimeout;
  in.ib = O::kNotRun;
  auto v = Decide(in);
  EXPECT_EQ(v.fault_class, FaultClass::kArchitecture);
  EXPECT_EQ(v.causes, (std::vector<std::string>{"nccl.timeout"}));
}

TEST(Decide, CrashedIbProbeIsAFailure) {
  DecisionInputs in;
  in.socket = O::kPass;
  in.ib = O::kCrashed;
  in.node_findings = {Fail("ib.port_state", FaultClass::kIbResource)};
  auto v = Decide(in);
  EXPECT_EQ(v.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(v.causes, (std::vector<std::string>{"ib.port_state"}));
}

TEST(Decide, NotRunFallsBackToChecksBasis) {
  DecisionInputs in;
  in.node_findings = {Fail("ib.subnet_manager", FaultClass::kIbResource)};
  auto v = Decide(in);
  EXPECT_EQ(v.basis, Basis::kChecks);
  EXPECT_EQ(v.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(v.causes, (std::vector<std::string>{"ib.subnet_manager"}));
}

TEST(Decide, UnavailableLibrariesAreNotAVerdict) {
  DecisionInputs in;
  in.socket = O::kUnavailable;
  in.ib = O::kUnavailable;
  auto v = Decide(in);
  EXPECT_EQ(v.basis, Basis::kChecks);
  EXPECT_NE(v.reason.find("unavailable"), std::string::npos);
}

TEST(Decide, IbProbeOverSocketsIsNotAPass) {
  ProbeResult ib;
  ib.mode = ProbeMode::kIb;
  ib.outcome = O::kPass;
  ib.transport = "NET/Socket";
  DecisionInputs in;
  in.socket = O::kPass;
  in.ib = O::kPass;
  in.ib_result = &ib;
  auto v = Decide(in);
  EXPECT_EQ(v.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(v.causes, (std::vector<std::string>{"probe.transport"}));
}

// Both probes passed, the IB one over NET/IB at `busbw` bytes/s where the ports should carry
// 25 GB/s. `ib` must outlive the inputs.
DecisionInputs BothPassed(ProbeResult& ib, double busbw) {
  ib.mode = ProbeMode::kIb;
  ib.outcome = O::kPass;
  ib.transport = "NET/IB";
  ib.busbw_bytes_per_second = busbw;
  DecisionInputs in;
  in.socket = O::kPass;
  in.ib = O::kPass;
  in.ib_result = &ib;
  in.expected_ib_bytes_per_second = 25e9;
  in.busbw_min_fraction = 0.5;
  return in;
}

TEST(Decide, SlowIbIsDegradedIbResource) {
  ProbeResult ib;
  DecisionInputs in = BothPassed(ib, 5e9);
  in.node_findings = {Fail("ib.port_rate", FaultClass::kIbResource)};
  auto v = Decide(in);
  EXPECT_EQ(v.fault_class, FaultClass::kIbResource);
  EXPECT_TRUE(v.degraded);
  EXPECT_EQ(v.causes, (std::vector<std::string>{"ib.bandwidth", "ib.port_rate"}));

  ib.busbw_bytes_per_second = 20e9;
  v = Decide(in);
  EXPECT_EQ(v.fault_class, FaultClass::kHealthy);
  EXPECT_FALSE(v.degraded);
}

// Which node findings explain a slow IB path is the catalogue's kExplainsSlowIb, not a list here:
// every marked check is named, a failing check without the mark is not (even an ib.* one).
TEST(Decide, SlowIbNamesTheFindingsTheCatalogueMarksAsExplainingIt) {
  ProbeResult ib;
  DecisionInputs in = BothPassed(ib, 1e9);
  std::vector<std::string> marked;
  for (const CauseInfo& e : Catalogue()) {
    if (e.kind != CauseKind::kHostCheck) continue;
    Finding f = Fail(std::string(e.id), e.fault_class);
    if (e.Has(kExplainsSlowIb)) {
      f.status = CheckStatus::kWarn;  // a warning explains it too
      marked.emplace_back(e.id);
    }
    in.node_findings.push_back(f);
  }
  ASSERT_EQ(marked, (std::vector<std::string>{"ib.port_rate", "ib.port_errors", "ib.peermem",
                                              "ib.rail_topology"}));
  auto v = Decide(in);
  std::vector<std::string> expected = {"ib.bandwidth"};
  expected.insert(expected.end(), marked.begin(), marked.end());
  EXPECT_EQ(v.causes, expected);
  EXPECT_TRUE(v.degraded);
}

TEST(IsDegraded, FollowsTheCataloguesMark) {
  EXPECT_TRUE(IsDegraded({"ib.port_rate", "ib.bandwidth"}));
  EXPECT_FALSE(IsDegraded({"ib.port_rate", "probe.transport"}));
  EXPECT_FALSE(IsDegraded({"no.such_id"}));
  EXPECT_FALSE(IsDegraded({}));
}

TEST(Decide, IbFailWithoutSocketRunDoesNotSplitTheFamily) {
  ProbeResult ib = WithCause(ProbeMode::kIb, O::kFail, "ib.hca_present", FaultClass::kIbResource);
  DecisionInputs in;
  in.socket = O::kNotRun;
  in.ib = O::kFail;
  in.ib_result = &ib;
  auto v = Decide(in);
  EXPECT_EQ(v.basis, Basis::kProbes);
  EXPECT_EQ(v.fault_class, FaultClass::kIbResource);
  EXPECT_NE(v.reason.find("not split"), std::string::npos);
}

}  // namespace
}  // namespace nccl_triage
