// The real KubeClient, with the tokens of the ServiceAccounts the chart creates, against a real
// kube-apiserver (tests/k8s/cluster.sh) on which helm installed the chart (kube_prepare.sh):
// every call the agent and the coordinator make, allowed by the chart's RBAC and, for pod
// patches, by its ValidatingAdmissionPolicy; what RBAC and the policy refuse, refused. Writes
// are checked by reading back with the cluster admin's kubeconfig.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "base/files.h"
#include "coordinator/node_identity.h"
#include "exporter/http_auth.h"
#include "kube/kube_client.h"
#include "kube/kubeconfig.h"
#include "real_api.h"

namespace nccl_triage {
namespace {

using nlohmann::json;

using real_api::Admin;
using real_api::ApiPort;
using real_api::As;
using real_api::Read;
using real_api::Work;

json Body(const KubeResponse& r) { return json::parse(r.body, nullptr, false); }

std::string Annotation(KubeClient& admin, const std::string& ns, const std::string& pod,
                       const std::string& key) {
  json p = Body(admin.GetPod(ns, pod));
  if (p.is_discarded() || !p["metadata"]["annotations"].contains(key)) return "<none>";
  return p["metadata"]["annotations"][key].get<std::string>();
}

class RealApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(ApiPort(), 0) << "no cluster in " << Work() << " (ctest fixture k8s_cluster)";
    agent_ = As("agent-1");
    coordinator_ = As("coordinator");
    admin_ = Admin();
    ASSERT_TRUE(agent_ && coordinator_ && admin_);
  }
  std::unique_ptr<InClusterKubeClient> agent_, coordinator_, admin_;
};

TEST_F(RealApi, AgentListsThePodsOfItsNodeOnly) {
  KubeResponse r = agent_->ListPods("spec.nodeName=gpu-node-1");
  ASSERT_TRUE(r.ok()) << r.Describe();
  std::set<std::string> names;
  const json list = Body(r);
  for (auto& item : list["items"]) names.insert(item["metadata"]["name"].get<std::string>());
  EXPECT_TRUE(names.count("train-0")) << r.body.substr(0, 300);
  EXPECT_TRUE(names.count("agent-gpu-node-1"));
  EXPECT_FALSE(names.count("train-1"));
}

TEST_F(RealApi, AgentReadsItsNode) {
  KubeResponse r = agent_->GetNode("gpu-node-1");
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(Body(r)["metadata"]["labels"]["node.kubernetes.io/instance-type"], "p5.48xlarge");
}

TEST_F(RealApi, AgentAnnotatesAndUnannotatesAPodOfItsNode) {
  KubeResponse r = agent_->PatchPodAnnotations("jobs", "train-0", {{"nccl-triage.io/verdict", "ok"}});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(Annotation(*admin_, "jobs", "train-0", "nccl-triage.io/verdict"), "ok");
  r = agent_->PatchPodAnnotations("jobs", "train-0", {{"nccl-triage.io/verdict", std::nullopt}});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(Annotation(*admin_, "jobs", "train-0", "nccl-triage.io/verdict"), "<none>");
}

TEST_F(RealApi, AdmissionPolicyRefusesAPodOnAnotherNode) {
  KubeResponse r = agent_->PatchPodAnnotations("jobs", "train-1", {{"nccl-triage.io/verdict", "ok"}});
  EXPECT_EQ(r.status, 403) << r.Describe();
  EXPECT_TRUE(r.Permanent());
  EXPECT_NE(r.Describe().find("ValidatingAdmissionPolicy"), std::string::npos) << r.Describe();
  EXPECT_EQ(Annotation(*admin_, "jobs", "train-1", "nccl-triage.io/verdict"), "<none>");
  // The agent of that node may.
  auto agent2 = As("agent-2");
  ASSERT_TRUE(agent2);
  r = agent2->PatchPodAnnotations("jobs", "train-1", {{"nccl-triage.io/verdict", "ok"}});
  EXPECT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(Annotation(*admin_, "jobs", "train-1", "nccl-triage.io/verdict"), "ok");
  EXPECT_TRUE(agent2->PatchPodAnnotations("jobs", "train-1", {{"nccl-triage.io/verdict", std::nullopt}}).ok());
}

TEST_F(RealApi, AdmissionPolicyRefusesAnAnnotationOutsideThePrefix) {
  KubeResponse r = agent_->PatchPodAnnotations("jobs", "train-0", {{"example.com/owner", "x"}});
  EXPECT_EQ(r.status, 403) << r.Describe();
  EXPECT_EQ(Annotation(*admin_, "jobs", "train-0", "example.com/owner"), "<none>");
}

TEST_F(RealApi, PatchWithTheUidOfAnotherPodIsRefusedAsUidMismatch) {
  const std::string uid = Body(admin_->GetPod("jobs", "train-0"))["metadata"]["uid"];
  KubeResponse r = agent_->PatchPodAnnotationsIfUid("jobs", "train-0", uid, {{"nccl-triage.io/seen", "1"}});
  EXPECT_TRUE(r.ok()) << r.Describe();
  r = agent_->PatchPodAnnotationsIfUid("jobs", "train-0", "00000000-0000-0000-0000-000000000000",
                                       {{"nccl-triage.io/seen", "2"}});
  EXPECT_TRUE(r.UidMismatch()) << r.Describe();
  EXPECT_EQ(Annotation(*admin_, "jobs", "train-0", "nccl-triage.io/seen"), "1");
}

TEST_F(RealApi, AgentSetsItsNodeConditionMergedByType) {
  NodeCondition c{"NcclFabricReady", "False", "IbPortDown", "mlx5_0 port 1 down", 1'700'000'000'000,
                  1'700'000'000'000};
  KubeResponse r = agent_->PatchNodeCondition("gpu-node-1", c);
  ASSERT_TRUE(r.ok()) << r.Describe();
  c.status = "True";
  c.reason = "FabricHealthy";
  r = agent_->PatchNodeCondition("gpu-node-1", c);
  ASSERT_TRUE(r.ok()) << r.Describe();
  int found = 0;
  const json node = Body(admin_->GetNode("gpu-node-1"));
  for (auto& cond : node["status"]["conditions"]) {
    if (cond["type"] != "NcclFabricReady") continue;
    ++found;
    EXPECT_EQ(cond["status"], "True");
    EXPECT_EQ(cond["reason"], "FabricHealthy");
  }
  EXPECT_EQ(found, 1);
}

TEST_F(RealApi, AgentPostsAnEventAboutItsNode) {
  const KubeEvent e{.involved_name = "gpu-node-1",
                    .involved_uid = "gpu-node-1",
                    .type = "Warning",
                    .reason = "NcclFabricDegraded",
                    .message = "mlx5_0 port 1 down",
                    .host = "gpu-node-1",
                    // the Event's name comes from its time: a new one on every run
                    .at_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count()};
  KubeResponse r = agent_->CreateEvent(e);
  ASSERT_EQ(r.status, 201) << r.Describe();
  EXPECT_EQ(Body(r)["involvedObject"]["name"], "gpu-node-1");
}

TEST_F(RealApi, CoordinatorLearnsTheNodeOfEachAgentsIdentityToken) {
  TokenReviewIdentity identity(*coordinator_, {"kt:kt-nccl-triage-agent"});
  auto n1 = identity.NodeOf(Read(Work() + "/kube/agent-1/identity-token"));
  ASSERT_TRUE(n1.ok()) << n1.status().message();
  EXPECT_EQ(*n1, "gpu-node-1");
  auto n2 = identity.NodeOf(Read(Work() + "/kube/agent-2/identity-token"));
  ASSERT_TRUE(n2.ok()) << n2.status().message();
  EXPECT_EQ(*n2, "gpu-node-2");
}

TEST_F(RealApi, CoordinatorRefusesATokenForAnotherAudience) {
  TokenReviewIdentity identity(*coordinator_, {"kt:kt-nccl-triage-agent"});
  auto n = identity.NodeOf(Read(Work() + "/kube/agent-1/token"));  // the API's audience
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument) << n.status().message();
}

TEST_F(RealApi, CoordinatorRefusesATokenOfAnotherServiceAccount) {
  TokenReviewIdentity identity(*coordinator_, {"kt:kt-nccl-triage-agent"});
  auto n = identity.NodeOf(Read(Work() + "/kube/coordinator/identity-token"));
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("kt-nccl-triage-coordinator"), std::string::npos)
      << n.status().message();
}

TEST_F(RealApi, CoordinatorRefusesATokenWhosePodIsGone) {
  TokenReviewIdentity identity(*coordinator_, {"kt:kt-nccl-triage-agent"});
  auto n = identity.NodeOf(Read(Work() + "/kube/agent-gone/identity-token"));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument) << n.status().message();
}

TEST_F(RealApi, RbacRefusesWhatEachServiceAccountDoesNotNeed) {
  KubeResponse r = coordinator_->ListPods("spec.nodeName=gpu-node-1");
  EXPECT_EQ(r.status, 403) << r.Describe();
  r = coordinator_->GetPod("jobs", "train-0");  // pods get only in its own namespace
  EXPECT_EQ(r.status, 403) << r.Describe();
  r = coordinator_->GetPod("kt", "agent-gpu-node-1");
  EXPECT_TRUE(r.ok()) << r.Describe();
  r = agent_->GetPod("jobs", "train-0");  // list, not get
  EXPECT_EQ(r.status, 403) << r.Describe();
}

TEST_F(RealApi, ATokenForAnotherAudienceIsUnauthorized) {
  // The coordinator's identity token is for the audience nccl-triage, not the API server's.
  ApiAccess a;
  a.host = "127.0.0.1";
  a.port = ApiPort();
  a.ca_file = Work() + "/ca.crt";
  a.token_file = Work() + "/kube/coordinator/identity-token";
  auto wrong = InClusterKubeClient::Connect(a, KubeTimeouts{});
  ASSERT_TRUE(wrong.ok()) << wrong.status().message();
  KubeResponse r = (*wrong)->GetNode("gpu-node-1");
  EXPECT_EQ(r.status, 401) << r.Describe();
  EXPECT_TRUE(r.Permanent());
}

// server.auth: kubernetes with the agent's own service account (the chart's RBAC: tokenreviews
// and subjectaccessreviews create) deciding who may read /metrics and /status: the real API
// server's answers, through the authorizer the HTTP server runs.
TEST_F(RealApi, AgentsAuthorizerAsksTheApiServerWhoMayReadMetrics) {
  HttpAuthorizer auth(*agent_);
  auto get = [](const std::string& path, const std::string& token_of) {
    HttpRequest r;
    r.method = "GET";
    r.path = path;
    if (!token_of.empty()) {
      r.headers.emplace_back("authorization",
                             "Bearer " + Read(Work() + "/kube/" + token_of + "/token"));
    }
    return r;
  };
  auto none = auth.Check(get("/metrics", ""));
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  auto gone = auth.Check(get("/metrics", "agent-gone"));  // its pod was deleted
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 401) << gone->body;
  auto stranger = auth.Check(get("/status", "stranger"));
  ASSERT_TRUE(stranger);
  EXPECT_EQ(stranger->status, 403) << stranger->body;
  EXPECT_NE(stranger->body.find("system:serviceaccount:kt:stranger"), std::string::npos)
      << stranger->body;
  // The agent's own token holds no metrics-reader binding either.
  auto self = auth.Check(get("/metrics", "agent-1"));
  ASSERT_TRUE(self);
  EXPECT_EQ(self->status, 403) << self->body;
  EXPECT_FALSE(auth.Check(get("/metrics", "scraper")));  // bound by rbac.metricsReaders
  EXPECT_FALSE(auth.Check(get("/status", "scraper")));
  // /sweep is no path of the metrics reader.
  auto post = get("/sweep", "scraper");
  post.method = "POST";
  auto sweep = auth.Check(post);
  ASSERT_TRUE(sweep);
  EXPECT_EQ(sweep->status, 403) << sweep->body;
}

TEST_F(RealApi, TheCoordinatorMayReviewForItsHttpEndpointsToo) {
  HttpAuthorizer auth(*coordinator_);
  HttpRequest r;
  r.method = "GET";
  r.path = "/metrics";
  r.headers.emplace_back("authorization", "Bearer " + Read(Work() + "/kube/scraper/token"));
  auto reply = auth.Check(r);
  EXPECT_FALSE(reply) << (reply ? reply->body : "");
}

}  // namespace
}  // namespace nccl_triage
