// The agent's one read of its Node's labels at start-up (kube/node_labels.h): one GET on success,
// retries only while a retry can help, and an error that names the node and the answer.
#include "kube/node_labels.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "support/fake_kube_client.h"

namespace nccl_triage {
namespace {

nlohmann::json Nodes() {
  return {{"kind", "NodeList"},
          {"items",
           {{{"kind", "Node"},
             {"metadata",
              {{"name", "gpu-1"},
               {"labels",
                {{"topology.kubernetes.io/rack", "r7"},
                 {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}}}}}}}};
}

TEST(NodeLabelsFromJson, ReadsTheLabelsOfANodeObject) {
  auto labels = NodeLabelsFromJson(
      R"({"kind":"Node","metadata":{"name":"n1","labels":{"topology.kubernetes.io/rack":"r7",)"
      R"("x":1}}})");
  EXPECT_EQ(labels.size(), 1u);
  EXPECT_EQ(labels["topology.kubernetes.io/rack"], "r7");
  EXPECT_TRUE(NodeLabelsFromJson("not json").empty());
  EXPECT_TRUE(NodeLabelsFromJson(R"({"metadata":[]})").empty());
}

TEST(ReadNodeLabels, OneGetGivesEveryLabel) {
  FakeKubeClient kube;
  kube.SetNodes(Nodes());
  std::vector<std::chrono::seconds> slept;
  auto read = ReadNodeLabels(kube, "gpu-1", [&](std::chrono::seconds s) { slept.push_back(s); });
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_EQ(read.labels.at("topology.kubernetes.io/rack"), "r7");
  EXPECT_EQ(read.labels.at("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(kube.CallCount("GetNode"), 1u);
  EXPECT_TRUE(slept.empty());
}

TEST(ReadNodeLabels, RetriesWhileTheApiServerIsUnavailable) {
  FakeKubeClient kube;
  kube.SetNodes(Nodes());
  kube.PushResponse({503, "", "{}", std::nullopt});
  std::vector<std::chrono::seconds> slept;
  auto read = ReadNodeLabels(kube, "gpu-1", [&](std::chrono::seconds s) { slept.push_back(s); });
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_EQ(read.labels.at("topology.kubernetes.io/rack"), "r7");
  EXPECT_EQ(kube.CallCount("GetNode"), 2u);
  EXPECT_EQ(slept, std::vector<std::chrono::seconds>{std::chrono::seconds(2)});
}

TEST(ReadNodeLabels, GivesUpAfterThreeTriesAndSaysWhy) {
  FakeKubeClient kube;
  for (int i = 0; i < 3; ++i) kube.PushResponse({503, "", "{}", std::nullopt});
  std::vector<std::chrono::seconds> slept;
  auto read = ReadNodeLabels(kube, "gpu-1", [&](std::chrono::seconds s) { slept.push_back(s); });
  EXPECT_FALSE(read.ok());
  EXPECT_NE(read.error.find("GET node gpu-1: "), std::string::npos) << read.error;
  EXPECT_TRUE(read.labels.empty());
  EXPECT_EQ(kube.CallCount("GetNode"), 3u);
  EXPECT_EQ(slept, (std::vector<std::chrono::seconds>{std::chrono::seconds(2),
                                                      std::chrono::seconds(4)}));
}

TEST(ReadNodeLabels, DoesNotRetryWhatRetryingCannotFix) {
  FakeKubeClient kube;  // no such node: 404
  std::vector<std::chrono::seconds> slept;
  auto read = ReadNodeLabels(kube, "gpu-9", [&](std::chrono::seconds s) { slept.push_back(s); });
  EXPECT_FALSE(read.ok());
  EXPECT_NE(read.error.find("GET node gpu-9: "), std::string::npos) << read.error;
  EXPECT_EQ(kube.CallCount("GetNode"), 1u);
  EXPECT_TRUE(slept.empty());
}

}  // namespace
}  // namespace nccl_triage
