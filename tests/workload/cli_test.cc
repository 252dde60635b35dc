// `nccl-triage check --workloads` in-process on a fixture root: a DGX A100 with a healthy pod, a
// pod with a 64 KiB memlock and a pod whose NCCL_SOCKET_IFNAME names no interface.
#include "cmd_nccl_triage/cli.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "workload_test_util.h"

namespace nccl_triage::workload {
namespace {

using testing::GoodProcess;

class CheckWorkloadsCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    auto memlock = GoodProcess(4200, 2);
    memlock.memlock = {{false, 65536}, {false, 65536}};
    memlock.cap_eff = 0x00000000a80425fbull;
    auto ifname = GoodProcess(4300, 3);
    ifname.environ.push_back({"NCCL_SOCKET_IFNAME", "=eth0"});
    ifname.environ.push_back({"DATABASE_PASSWORD", "pa55-w0rd-planted"});
    Status s = WriteFixture(DgxA100Spec(), root());
    ASSERT_TRUE(s.ok()) << s.message();
    s = WriteWorkloadProcesses({GoodProcess(4100, 1), memlock, ifname}, root());
    ASSERT_TRUE(s.ok()) << s.message();
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string root() { return dir_->path() + "/root"; }

  int Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"nccl-triage", "check"});
    out_.str("");
    err_.str("");
    return RunCli(args, out_, err_);
  }

  static testing::TempDir* dir_;
  std::ostringstream out_, err_;
};

testing::TempDir* CheckWorkloadsCli::dir_ = nullptr;

TEST_F(CheckWorkloadsCli, JsonListsEveryGpuContainerWithItsVerdict) {
  int rc = Run({"--root", root(), "--workloads", "--format", "json"});
  EXPECT_EQ(rc, 1) << err_.str();  // workloads fail (the node itself is healthy)
  auto j = nlohmann::json::parse(out_.str());
  ASSERT_TRUE(j.contains("workloads"));
  const auto& containers = j["workloads"]["containers"];
  ASSERT_EQ(containers.size(), 3u);
  std::map<std::string, nlohmann::json> by_uid;
  for (const auto& c : containers) by_uid[c["pod_uid"]] = c;
  EXPECT_EQ(by_uid[testing::PodUid(1)]["verdict"], "healthy");
  EXPECT_EQ(by_uid[testing::PodUid(2)]["verdict"], "architecture");
  EXPECT_NE(by_uid[testing::PodUid(2)]["causes"].dump().find("limits.memlock"), std::string::npos);
  EXPECT_NE(by_uid[testing::PodUid(3)]["causes"].dump().find("net.socket_ifname"),
            std::string::npos);
  EXPECT_EQ(by_uid[testing::PodUid(3)]["environ"]["NCCL_SOCKET_IFNAME"], "=eth0");
  EXPECT_EQ(out_.str().find("pa55-w0rd"), std::string::npos);
  EXPECT_EQ(out_.str().find("DATABASE_PASSWORD"), std::string::npos);
}

TEST_F(CheckWorkloadsCli, TableHasAWorkloadsSectionWithFixes) {
  int rc = Run({"--root", root(), "--workloads"});
  EXPECT_EQ(rc, 1);
  const std::string text = out_.str();
  EXPECT_NE(text.find("Workloads: 3 GPU container(s) in 3 pod(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("fail limits.memlock"), std::string::npos) << text;
  EXPECT_NE(text.find("fix: Set memlock to unlimited"), std::string::npos) << text;
  EXPECT_EQ(text.find("pa55-w0rd"), std::string::npos);
}

TEST_F(CheckWorkloadsCli, WithoutTheFlagNothingChanges) {
  int rc = Run({"--root", root(), "--format", "json"});
  EXPECT_EQ(rc, 0) << out_.str();
  EXPECT_FALSE(nlohmann::json::parse(out_.str()).contains("workloads"));
}

TEST_F(CheckWorkloadsCli, WorkloadsNeedARootNotASnapshot) {
  int rc = Run({"--from-snapshot", "-", "--workloads"});
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err_.str().find("--workloads"), std::string::npos);
}

}  // namespace
}  // namespace nccl_triage::workload
