// PortMemory: the agent's port memory in its state directory, per boot.
#include "state/port_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;

NodeSnapshot OnePortUp(const std::string& boot_id) {
  NodeSnapshot s;
  if (!boot_id.empty()) s.boot_id = Fact<std::string>{boot_id, "boot_id", ""};
  s.taken_at_unix_ms = 1'000;
  IbDevice d;
  d.name = "mlx5_0";
  IbPort p;
  p.num = 1;
  p.state = Fact<std::string>{std::string("4: ACTIVE"), "t", ""};
  p.phys_state = Fact<std::string>{std::string("5: LinkUp"), "t", ""};
  d.ports.push_back(p);
  s.ib_devices.push_back(d);
  return s;
}

class PortMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("nccl-triage-ports-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(PortMemoryTest, ARestartRemembersThePortsOfThisBootButNotOfAnother) {
  {
    PortMemory m(dir_.string(), 600'000);
    m.BeginPoll(OnePortUp("boot-a"), nullptr);
    m.EndPoll(OnePortUp("boot-a"));
  }
  PortMemory same(dir_.string(), 600'000);
  const PortHistory& h = same.BeginPoll(OnePortUp("boot-a"), nullptr);
  EXPECT_TRUE(h.first_poll);
  ASSERT_NE(h.Find("mlx5_0/1"), nullptr);
  EXPECT_TRUE(h.Find("mlx5_0/1")->seen_up);

  PortMemory rebooted(dir_.string(), 600'000);
  EXPECT_TRUE(rebooted.BeginPoll(OnePortUp("boot-b"), nullptr).ports.empty());
}

TEST_F(PortMemoryTest, StartsAfreshFromADamagedFile) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "ports.state") << "boot_id boot-a\nport mlx5_0/1 maybe 0\n";
  PortMemory m(dir_.string(), 600'000);
  EXPECT_TRUE(m.BeginPoll(OnePortUp("boot-a"), nullptr).ports.empty());
}

TEST_F(PortMemoryTest, WritesNothingWithoutABootId) {
  PortMemory m(dir_.string(), 600'000);
  m.BeginPoll(OnePortUp(""), nullptr);
  m.EndPoll(OnePortUp(""));
  EXPECT_FALSE(fs::exists(dir_ / "ports.state"));
}

}  // namespace
}  // namespace nccl_triage
