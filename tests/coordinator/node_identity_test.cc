// TokenReviewIdentity against a FakeKubeClient: which node a token binds its bearer to, and every
// way a token is refused.
#include "coordinator/node_identity.h"

#include <gtest/gtest.h>

#include "support/fake_kube_client.h"

namespace nccl_triage {
namespace {

const nlohmann::json kAgentUser = {
    {"username", "system:serviceaccount:nccl-triage:nccl-triage-agent"},
    {"extra",
     {{"authentication.kubernetes.io/node-name", {"gpu-17"}},
      {"authentication.kubernetes.io/pod-name", {"agent-x7k2p"}},
      {"authentication.kubernetes.io/pod-uid", {"uid-1"}}}}};

TokenReviewIdentity Identity(FakeKubeClient& kube) {
  return TokenReviewIdentity(kube, {.service_account = "nccl-triage:nccl-triage-agent"});
}

TEST(TokenReviewIdentity, ANodeBoundTokenNamesItsNodeAndIsCached) {
  FakeKubeClient kube;
  kube.SetTokenUsers({{"agent-token", kAgentUser}});
  auto identity = Identity(kube);
  auto node = identity.NodeOf("agent-token");
  ASSERT_TRUE(node.ok()) << node.status().message();
  EXPECT_EQ(*node, "gpu-17");
  EXPECT_EQ(identity.NodeOf("agent-token").value(), "gpu-17");
  EXPECT_EQ(kube.CallCount("CreateTokenReview"), 1u);  // the second answer came from the cache
  EXPECT_EQ(kube.Calls()[0].body["audiences"], nlohmann::json::array({"nccl-triage"}));
  EXPECT_EQ(kube.CallCount("GetPod"), 0u);
}

TEST(TokenReviewIdentity, BeforeKubernetes130ThePodSaysWhereItRuns) {
  FakeKubeClient kube;
  nlohmann::json user = kAgentUser;
  user["extra"].erase("authentication.kubernetes.io/node-name");
  kube.SetTokenUsers({{"agent-token", user}});
  auto pod = [](const char* uid) {
    return nlohmann::json{
        {"kind", "PodList"},
        {"items",
         {{{"metadata", {{"name", "agent-x7k2p"}, {"namespace", "nccl-triage"}, {"uid", uid}}},
           {"spec", {{"nodeName", "gpu-17"}}}}}}};
  };
  kube.SetPods(pod("uid-1"));
  auto identity = Identity(kube);
  auto node = identity.NodeOf("agent-token");
  ASSERT_TRUE(node.ok()) << node.status().message();
  EXPECT_EQ(*node, "gpu-17");
  // A pod of the same name that is another pod now (deleted and recreated): not that node.
  FakeKubeClient other;
  other.SetTokenUsers({{"agent-token", user}});
  other.SetPods(pod("uid-2"));
  auto stale = Identity(other).NodeOf("agent-token");
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), StatusCode::kInvalidArgument);
}

TEST(TokenReviewIdentity, RefusesOtherAccountsUnknownTokensAndUnboundTokens) {
  FakeKubeClient kube;
  nlohmann::json intruder = kAgentUser;
  intruder["username"] = "system:serviceaccount:team-a:default";
  nlohmann::json unbound = {{"username", "system:serviceaccount:nccl-triage:nccl-triage-agent"}};
  kube.SetTokenUsers({{"other-account", intruder}, {"unbound", unbound}});
  auto identity = Identity(kube);
  for (const char* token : {"other-account", "unbound", "not-a-token", ""}) {
    auto node = identity.NodeOf(token);
    ASSERT_FALSE(node.ok()) << token;
    EXPECT_EQ(node.status().code(), StatusCode::kInvalidArgument) << token;
  }
  EXPECT_NE(identity.NodeOf("other-account").status().message().find("team-a"), std::string::npos);
}

TEST(TokenReviewIdentity, AnApiServerThatCannotAnswerIsUnavailableNotARefusal) {
  FakeKubeClient kube;
  kube.SetTokenUsers({{"agent-token", kAgentUser}});
  KubeResponse down;
  down.error = "connection refused";
  kube.PushResponse(down);
  auto identity = Identity(kube);
  auto node = identity.NodeOf("agent-token");
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(identity.NodeOf("agent-token").value(), "gpu-17");  // not cached as a refusal
}

}  // namespace
}  // namespace nccl_triage
