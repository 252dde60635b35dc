#include "core/probe_availability.h"

#include <gtest/gtest.h>

#include "core/decision.h"
#include "core/ids.h"

namespace nccl_triage {
namespace {

ProbeResult Unavailable(std::string cause, std::string detail) {
  ProbeResult r;
  r.outcome = ProbeOutcome::kUnavailable;
  r.unavailable_cause = std::move(cause);
  r.detail = std::move(detail);
  return r;
}

TEST(ProbeAvailability, AnUnavailableProbeGivesItsCauseAsTheReason) {
  auto a = AvailabilityFromProbe(
      Unavailable("probe.no_gpu", "cuInit: CUDA_ERROR_NO_DEVICE (100)"), 1000);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->reason, "no_gpu");
  EXPECT_EQ(a->cause, "probe.no_gpu");
  EXPECT_FALSE(a->available());
  EXPECT_EQ(a->detail, "cuInit: CUDA_ERROR_NO_DEVICE (100)");
  EXPECT_EQ(a->updated_at_unix_ms, 1000);
}

TEST(ProbeAvailability, AProbeThatRanIsAvailableWhateverItsOutcome) {
  for (ProbeOutcome o : {ProbeOutcome::kPass, ProbeOutcome::kFail, ProbeOutcome::kTimeout}) {
    ProbeResult r;
    r.outcome = o;
    r.nccl_version = "2.28.9";
    r.nccl_library = "/opt/nccl/libnccl.so.2";
    auto a = AvailabilityFromProbe(r, 1);
    ASSERT_TRUE(a);
    EXPECT_TRUE(a->available()) << ToString(o);
    EXPECT_EQ(a->detail, "NCCL 2.28.9 from /opt/nccl/libnccl.so.2");
  }
}

TEST(ProbeAvailability, AProbeThatWasNotRunSaysNothing) {
  ProbeResult r;
  r.outcome = ProbeOutcome::kNotRun;
  EXPECT_FALSE(AvailabilityFromProbe(r, 1));
}

TEST(ProbeAvailability, AnUnavailableProbeWithoutACauseIsAnError) {
  auto a = AvailabilityFromProbe(Unavailable("", "cannot start the probe child: ENOENT"), 1);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->reason, "error");
  EXPECT_TRUE(a->cause.empty());
}

TEST(ProbeAvailability, TheCauseSurvivesAsAClassificationPastTheWire) {
  // The coordinator receives causes, not unavailable_cause.
  ProbeResult r = Unavailable("", "libnccl.so.2 not found");
  Classification c;
  PrependCause(c, ids::kProbeNoNccl.info(), r.detail);
  r.classification = c;
  EXPECT_EQ(UnavailableCause(r), "probe.no_nccl");
}

TEST(ProbeAvailability, EveryReasonOfACauseIsAMetricReason) {
  for (CauseId id : {ids::kProbeNoNccl, ids::kProbeNoCuda, ids::kProbeNoGpu}) {
    const auto reason = AvailabilityReason(id.str());
    EXPECT_NE(std::find(std::begin(kProbeAvailabilityReasons), std::end(kProbeAvailabilityReasons),
                        reason),
              std::end(kProbeAvailabilityReasons))
        << reason;
  }
}

TEST(ProbeAvailability, TheFindingOfABlindNodeWarnsWithTheCauseAndItsRemedy) {
  auto a = AvailabilityFromProbe(Unavailable("probe.no_cuda", "libcuda.so.1 not found"), 1);
  auto f = AvailabilityFinding(*a);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->check, "probe.no_cuda");
  EXPECT_EQ(f->status, CheckStatus::kWarn);
  EXPECT_EQ(f->message, "probes cannot run: libcuda.so.1 not found");
  EXPECT_FALSE(f->remedy.empty());
  ProbeAvailability ok;
  ok.reason = std::string(kProbesAvailable);
  EXPECT_FALSE(AvailabilityFinding(ok));
  EXPECT_FALSE(AvailabilityFinding(ProbeAvailability{}));  // pending
}

TEST(Decide, AProbeThatSeesNoGpuNamesItAndTheVerdictIsNotHealthy) {
  ProbeResult socket = Unavailable("probe.no_gpu", "cuInit: CUDA_ERROR_NO_DEVICE (100)");
  ProbeResult ib = socket;
  DecisionInputs in;
  in.socket = ProbeOutcome::kUnavailable;
  in.ib = ProbeOutcome::kUnavailable;
  in.socket_result = &socket;
  in.ib_result = &ib;
  in.node_findings = {Finding{"limits.memlock", FaultClass::kArchitecture, CheckStatus::kPass,
                              "unlimited", {}, ""}};
  PairVerdict v = Decide(in);
  EXPECT_EQ(v.basis, Basis::kChecks);
  EXPECT_EQ(v.fault_class, FaultClass::kUnknown);
  EXPECT_EQ(v.causes, (std::vector<std::string>{"probe.no_gpu"}));
  EXPECT_NE(v.reason.find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << v.reason;
}

TEST(Decide, ABlindProbeComesBeforeTheFailingChecksWhoseClassStands) {
  ProbeResult socket = Unavailable("probe.no_nccl", "libnccl.so.2 not found");
  DecisionInputs in;
  in.socket = ProbeOutcome::kUnavailable;
  in.ib = ProbeOutcome::kNotRun;
  in.socket_result = &socket;
  in.node_findings = {Finding{"ib.port_state", FaultClass::kIbResource, CheckStatus::kFail,
                              "DOWN", {}, ""}};
  PairVerdict v = Decide(in);
  EXPECT_EQ(v.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(v.causes, (std::vector<std::string>{"probe.no_nccl", "ib.port_state"}));
}

}  // namespace
}  // namespace nccl_triage
