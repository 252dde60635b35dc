// The job's scope: its nodes, its pods by name and order, the nodes the logs point at.
#include "triage/incident_scope.h"

#include <gtest/gtest.h>

#include "incident_values.h"

namespace nccl_triage::triage {
namespace {

using incident_test::PodOn;

TEST(ScopeOfJob, CoversThePodsNodesAndTheNodesNamedBeside) {
  const std::vector<JobPod> pods = {PodOn("w0", "gpu-00", "0"), PodOn("w1", "", "1"),
                                    PodOn("w2", "gpu-00", "2")};
  const JobScope scope = ScopeOfJob(pods, {"gpu-07"});
  EXPECT_EQ(scope.nodes, (std::set<std::string>{"gpu-00", "gpu-07"}));
  EXPECT_EQ(scope.Pod("w1"), &pods[1]);
  EXPECT_EQ(scope.Pod("w9"), nullptr);
  EXPECT_TRUE(scope.HasNode("gpu-07"));
  EXPECT_FALSE(scope.HasNode(""));
}

TEST(PodOrderLess, NumericIndexesSortAsNumbersAndPodsWithoutOneAfterByName) {
  const JobPod two = PodOn("b", "n", "2"), ten = PodOn("a", "n", "10"), none = PodOn("c", "n", "");
  const JobPod odd = PodOn("d", "n", "1x");
  EXPECT_TRUE(PodOrderLess(&two, &ten, "b", "a"));
  EXPECT_TRUE(PodOrderLess(&ten, &none, "a", "c"));
  EXPECT_TRUE(PodOrderLess(&none, &odd, "c", "d"));    // both without: by name
  EXPECT_TRUE(PodOrderLess(&ten, nullptr, "a", "0"));  // a log of no known pod goes last
  EXPECT_TRUE(PodOrderLess(nullptr, nullptr, "x", "y"));
}

TEST(FocusNodes, TheFirstFailuresNodeThenItsPeersOnce) {
  FirstFailure first;
  first.node = "gpu-01";
  PeerView peer{{"10.0.0.2", "w2", "gpu-02", "pod IP"}, 2};
  EXPECT_EQ(FocusNodes(first, peer), (std::vector<std::string>{"gpu-01", "gpu-02"}));
  peer.match.node = "gpu-01";
  EXPECT_EQ(FocusNodes(first, peer), (std::vector<std::string>{"gpu-01"}));
  EXPECT_EQ(FocusNodes(std::nullopt, peer), (std::vector<std::string>{"gpu-01"}));
  EXPECT_TRUE(FocusNodes(std::nullopt, std::nullopt).empty());
}

}  // namespace
}  // namespace nccl_triage::triage
