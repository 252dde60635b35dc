// What the tests against the real kube-apiserver of the k8s_cluster fixture share: where the
// cluster's files are, and clients as a ServiceAccount of the chart (a pod's service-account
// directory that kube_prepare.sh wrote) or as the cluster admin (its kubeconfig).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "base/files.h"
#include "kube/kube_client.h"
#include "kube/kubeconfig.h"

namespace nccl_triage::real_api {

// The cluster's directory (cmake/k8s_tools.cmake); the environment may name another.
inline std::string Work() {
  const char* w = std::getenv("NCCL_TRIAGE_K8S_WORK");
  return w ? w : NCCL_TRIAGE_K8S_WORK;
}

inline std::string Read(const std::string& path) {
  auto text = ReadWholeFile(path, "test file");
  return text.ok() ? *text : "";
}

inline int ApiPort() {
  const std::string env = Read(Work() + "/env");  // API_PORT=...
  const size_t at = env.find("API_PORT=");
  return at == std::string::npos ? 0 : std::atoi(env.c_str() + at + 9);
}

// A client as the pod of `who` (agent-1, agent-2, coordinator, ...) makes it: the
// service-account directory with its token, ca.crt and namespace.
inline std::unique_ptr<InClusterKubeClient> As(const std::string& who) {
  InClusterOptions o;
  o.host = "127.0.0.1";
  o.port = ApiPort();
  o.service_account_dir = Work() + "/kube/" + who;
  auto client = InClusterKubeClient::Create(o);
  EXPECT_TRUE(client.ok()) << client.status().message();
  return client.ok() ? std::move(client).value() : nullptr;
}

// The cluster admin, through the kubeconfig the way `nccl-triage triage` reads one.
inline std::unique_ptr<InClusterKubeClient> Admin() {
  const std::string path = Work() + "/kubeconfig";
  auto access = ResolveKubeconfig({{path, Read(path)}}, "");
  EXPECT_TRUE(access.ok()) << access.status().message();
  if (!access.ok()) return nullptr;
  auto client = InClusterKubeClient::Connect(*access, KubeTimeouts{});
  EXPECT_TRUE(client.ok()) << client.status().message();
  return client.ok() ? std::move(client).value() : nullptr;
}

}  // namespace nccl_triage::real_api
