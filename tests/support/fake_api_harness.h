// FakeApiHarness: the fake API server over TLS in a folder of its own, and clients of it with its
// token, as the tests of the coordinator's Kubernetes calls (remediator, state store, leader
// election) set them up. Declare it before the clients it makes: they go first (a kept-alive
// connection would hold the server's stop). Header-only.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "exporter/tls_test_cert.h"
#include "kube/kube_client.h"
#include "support/fake_api_server.h"
#include "support/text_file.h"

namespace nccl_triage::testing {

class FakeApiHarness {
 public:
  // `name` names the folder (with the process id, so that parallel tests do not share it).
  explicit FakeApiHarness(const std::string& name)
      : dir_(std::filesystem::path(::testing::TempDir()) /
             (name + "_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
    cert_ = MakeSelfSignedCert(dir_.string());
    server_ = std::make_unique<FakeApiServer>(
        FakeApiServer::Options{cert_.cert_path, cert_.key_path, "tok", "", 0});
  }
  ~FakeApiHarness() {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  FakeApiHarness(const FakeApiHarness&) = delete;
  FakeApiHarness& operator=(const FakeApiHarness&) = delete;

  FakeApiServer& server() const { return *server_; }
  // A client with the server's token, at `port` (default: the server's own; another port makes
  // a client of an API server that is not there).
  std::unique_ptr<InClusterKubeClient> Client(int port = 0) const {
    ApiAccess a;
    a.host = "127.0.0.1";
    a.port = port != 0 ? port : server_->port();
    a.ca_pem = ReadTextFile(cert_.cert_path);
    a.token = "tok";
    auto c = InClusterKubeClient::Connect(a, KubeTimeouts{});
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

 private:
  std::filesystem::path dir_;
  TestCert cert_;
  std::unique_ptr<FakeApiServer> server_;
};

}  // namespace nccl_triage::testing
