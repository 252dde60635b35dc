// Kubeconfig files as kubectl reads them: merged lists, contexts, inline and file credentials,
// and the plugins refused with a line that says what to do instead.
#include "kube/kubeconfig.h"

#include <gtest/gtest.h>

namespace nccl_triage {
namespace {

const char* kConfig = R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: LS0tLS1CRUdJTg==
- name: staging-cluster
  cluster:
    server: https://[fd00::1]/k8s/clusters/c-1/
    certificate-authority: ca.pem
contexts:
- name: prod
  context: {cluster: prod-cluster, user: alice, namespace: ml}
- name: staging
  context: {cluster: staging-cluster, user: bob}
- name: eks
  context: {cluster: prod-cluster, user: eks-user}
- name: broken
  context: {cluster: nowhere, user: alice}
users:
- name: alice
  user:
    token: abc123
- name: bob
  user:
    client-certificate: certs/bob.crt
    client-key: /abs/bob.key
- name: eks-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args: [eks, get-token]
)";

TEST(Kubeconfig, TheCurrentContextGivesServerCaTokenAndNamespace) {
  auto a = ResolveKubeconfig({{"/home/u/.kube/config", kConfig}}, "");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->host, "10.0.0.1");
  EXPECT_EQ(a->port, 6443);
  EXPECT_EQ(a->ca_pem, "-----BEGIN");
  EXPECT_EQ(a->token, "abc123");
  EXPECT_EQ(a->default_namespace, "ml");
  EXPECT_EQ(a->source, "kubeconfig /home/u/.kube/config, context prod");
}

TEST(Kubeconfig, RelativePathsAreFromTheFilesFolderAndIpv6ServersWithAPathWork) {
  auto a = ResolveKubeconfig({{"/home/u/.kube/config", kConfig}}, "staging");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->host, "fd00::1");
  EXPECT_EQ(a->port, 443);
  EXPECT_EQ(a->base_path, "/k8s/clusters/c-1");
  EXPECT_EQ(a->ca_file, "/home/u/.kube/ca.pem");
  EXPECT_EQ(a->client_cert_file, "/home/u/.kube/certs/bob.crt");
  EXPECT_EQ(a->client_key_file, "/abs/bob.key");
}

TEST(Kubeconfig, AnExecPluginIsRefusedWithWhatToUseInstead) {
  auto a = ResolveKubeconfig({{"cfg", kConfig}}, "eks");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(),
            "cfg: user 'eks-user' gets its credentials from an exec plugin (aws); nccl-triage does "
            "not run credential plugins; give it a token (kubectl create token "
            "<service-account>, in a kubeconfig user's 'token') or a client certificate, or run "
            "it in the cluster with a service account");
}

TEST(Kubeconfig, MissingPiecesAreNamed) {
  EXPECT_EQ(ResolveKubeconfig({{"cfg", kConfig}}, "nope").status().message(),
            "cfg has no context 'nope'");
  EXPECT_EQ(ResolveKubeconfig({{"cfg", kConfig}}, "broken").status().message(),
            "cfg: context 'broken' names cluster 'nowhere', which is not defined");
  EXPECT_EQ(ResolveKubeconfig({{"cfg", "clusters: []\n"}}, "").status().message(),
            "cfg has no current-context (choose one with --context)");
  EXPECT_NE(ResolveKubeconfig({{"cfg", "a: [\n"}}, "").status().message().find("cfg: not YAML"),
            std::string::npos);
  EXPECT_NE(ResolveKubeconfig({{"cfg", "- a\n"}}, "").status().message().find("not a kubeconfig"),
            std::string::npos);
}

TEST(Kubeconfig, MergesAListAsKubectlDoes) {
  const char* first = "current-context: b\nusers:\n- name: u\n  user: {token: first}\n";
  const char* second =
      "current-context: ignored\nclusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
      "contexts:\n- name: b\n  context: {cluster: c, user: u}\n"
      "users:\n- name: u\n  user: {token: second}\n";
  auto a = ResolveKubeconfig({{"one", first}, {"two", second}}, "");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->token, "first");
  EXPECT_EQ(a->host, "h");
}

TEST(Kubeconfig, PlainHttpAndBasicAuthAreRefused) {
  ApiAccess a;
  EXPECT_NE(ParseServerUrl("http://10.0.0.1:8080", &a).message().find("not https://"),
            std::string::npos);
  EXPECT_FALSE(ParseServerUrl("https://h:99999", &a).ok());
  const char* basic =
      "current-context: x\nclusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
      "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
      "users:\n- name: u\n  user: {username: admin, password: pw}\n";
  EXPECT_NE(ResolveKubeconfig({{"cfg", basic}}, "").status().message().find("basic auth"),
            std::string::npos);
}

TEST(Kubeconfig, CandidatesFollowKubectlsOrder) {
  EXPECT_EQ(KubeconfigCandidates("/f", "/a:/b", "/h"), std::vector<std::string>{"/f"});
  EXPECT_EQ(KubeconfigCandidates("", "/a::/b", "/h"), (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(KubeconfigCandidates("", "", "/h"), std::vector<std::string>{"/h/.kube/config"});
  EXPECT_TRUE(KubeconfigCandidates("", "", "").empty());
}

TEST(Kubeconfig, Base64DecodesWithOrWithoutPaddingAndRefusesGarbage) {
  EXPECT_EQ(*DecodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(*DecodeBase64("aGVs\nbG8"), "hello");
  EXPECT_FALSE(DecodeBase64("a$b").ok());
}

}  // namespace
}  // namespace nccl_triage
