// The node summary on the wire: the agent's probe availability (NodeSummary.probe) and how the
// coordinator reads it, an agent before that field included.
#include <gtest/gtest.h>

#include "wire/convert.h"

namespace nccl_triage {
namespace {

NodeInfo Applied(const v1::NodeSummary& summary) {
  NodeInfo info;
  info.name = "gpu-1";
  ApplySummary(summary, info);
  return info;
}

TEST(ProbeAvailabilityOnTheWire, AnAgentThatDoesNotSayIsUnknownAndProbed) {
  const NodeInfo info = Applied(v1::NodeSummary{});
  EXPECT_FALSE(info.probe.has_value());
  EXPECT_FALSE(ProbesCannotRun(info));
  EXPECT_EQ(ProbeAvailabilityReason(info), "unknown");
}

TEST(ProbeAvailabilityOnTheWire, TheAgentsUnavailabilityArrivesWithItsReasonAndEvidence) {
  ProbeAvailability a;
  a.reason = "no_nccl";
  a.cause = "probe.no_nccl";
  a.detail = "libnccl.so.2: not found in /opt/nccl/lib";
  v1::NodeSummary summary;
  SetProbeAvailability(a, summary);
  // Through bytes, as the stream carries it.
  v1::NodeSummary read;
  ASSERT_TRUE(read.ParseFromString(summary.SerializeAsString()));
  const NodeInfo info = Applied(read);
  ASSERT_TRUE(info.probe.has_value());
  EXPECT_FALSE(info.probe->available);
  EXPECT_EQ(info.probe->reason, "no_nccl");
  EXPECT_EQ(info.probe->evidence, "libnccl.so.2: not found in /opt/nccl/lib");
  EXPECT_TRUE(ProbesCannotRun(info));
  EXPECT_EQ(ProbesUnavailableText(info),
            "probes cannot run on this node (no_nccl: libnccl.so.2: not found in /opt/nccl/lib)");
}

TEST(ProbeAvailabilityOnTheWire, AvailableAndPendingDoNotKeepANodeFromItsProbes) {
  ProbeAvailability ok;
  ok.reason = "ok";
  ok.detail = "NCCL 2.28.9 from /usr/lib/libnccl.so.2 on NVIDIA H100 80GB HBM3";
  v1::NodeSummary summary;
  SetProbeAvailability(ok, summary);
  EXPECT_TRUE(summary.probe().available());
  NodeInfo info = Applied(summary);
  ASSERT_TRUE(info.probe.has_value());
  EXPECT_TRUE(info.probe->available);
  EXPECT_EQ(info.probe->reason, "ok");
  EXPECT_FALSE(ProbesCannotRun(info));

  SetProbeAvailability(ProbeAvailability{}, summary);  // not checked yet
  EXPECT_FALSE(summary.probe().available());
  EXPECT_EQ(summary.probe().reason(), "pending");
  info = Applied(summary);
  EXPECT_EQ(info.probe->reason, "pending");
  EXPECT_FALSE(ProbesCannotRun(info));
}

TEST(ProbeAvailabilityOnTheWire, AHostileReasonOrEvidenceIsBoundedToOneWordAndOneLine) {
  v1::NodeSummary summary;
  summary.mutable_probe()->set_available(false);
  summary.mutable_probe()->set_reason("No NCCL!\n{\"x\":1}");
  summary.mutable_probe()->set_evidence("first line\nsecond line" + std::string(4096, 'e'));
  NodeInfo info = Applied(summary);
  ASSERT_TRUE(info.probe.has_value());
  EXPECT_EQ(info.probe->reason, "unspecified");
  EXPECT_TRUE(ProbesCannotRun(info));  // it still said it cannot probe
  EXPECT_EQ(info.probe->evidence.find('\n'), std::string::npos);
  EXPECT_LE(info.probe->evidence.size(), 512u);
  EXPECT_EQ(info.probe->evidence.substr(0, 22), "first line second line");

  // "ok" with available false contradicts itself: unavailable, reason unspecified.
  summary.mutable_probe()->set_reason("ok");
  EXPECT_EQ(Applied(summary).probe->reason, "unspecified");
  // A reason a newer agent may add is kept when it is a word.
  summary.mutable_probe()->set_reason("no_ib_hca");
  EXPECT_EQ(Applied(summary).probe->reason, "no_ib_hca");
  // Available wins over any reason.
  summary.mutable_probe()->set_available(true);
  EXPECT_EQ(Applied(summary).probe->reason, "ok");
}

TEST(ProbeAvailabilityOnTheWire, ALaterSummaryWithoutTheFieldMakesItUnknownAgain) {
  v1::NodeSummary summary;
  summary.mutable_probe()->set_available(false);
  summary.mutable_probe()->set_reason("no_gpu");
  NodeInfo info = Applied(summary);
  ASSERT_TRUE(ProbesCannotRun(info));
  ApplySummary(v1::NodeSummary{}, info);  // the node's agent was replaced by an older one
  EXPECT_FALSE(info.probe.has_value());
  EXPECT_FALSE(ProbesCannotRun(info));
}

}  // namespace
}  // namespace nccl_triage
