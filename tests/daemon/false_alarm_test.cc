// The agent's false-alarm controls end to end: a fixture root read by the real gatherer, judged
// by the built-in checks with the agent's port memory in a state directory, over several polls
// and agent restarts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "core/ids.h"
#include "daemon/agent.h"
#include "daemon/node_loop_parts.h"
#include "support/fake_clock.h"
#include "support/fixture/fixture.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBootA = "6f1c2a3b-1111-4000-8000-000000000001";
constexpr const char* kBootB = "6f1c2a3b-2222-4000-8000-000000000002";

class AgentFalseAlarms : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("nccl-triage-alarm-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    Write(true, kBootA);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string root() const { return (dir_ / "root").string(); }
  std::string state_dir() const { return (dir_ / "state").string(); }

  // Two HCAs, both ports up or both down (as every port is while a node boots), in boot `boot`.
  void Write(bool up, const std::string& boot) {
    fs::remove_all(root());
    FixtureSpec spec = DgxA100Spec();
    spec.hcas.resize(2);
    spec.gpus.resize(1);
    if (!up) {
      for (auto& h : spec.hcas) {
        h.ports.at(0).state = "1: DOWN";
        h.ports.at(0).phys_state = "2: Polling";
      }
    }
    ASSERT_TRUE(WriteFixture(spec, root()).ok());
    fs::create_directories(fs::path(root()) / "proc/sys/kernel/random");
    std::ofstream(fs::path(root()) / "proc/sys/kernel/random/boot_id") << boot << "\n";
    std::ofstream(fs::path(root()) / "proc/stat") << "cpu  1 2 3 4\nbtime 1700000000\n";
  }

  // One agent process: its memory starts from the state directory.
  struct Run {
    FakeClock clock{1'700'000'600'000};
    std::ostringstream log_text;
    Logger log{log_text};
    AgentState state{"node", "test", 0};
    std::unique_ptr<Agent> agent;
  };
  std::unique_ptr<Run> Start() {
    auto r = std::make_unique<Run>();
    GatherOptions g;
    g.root = root();
    FakeClock* clock = &r->clock;
    g.now_unix_ms = [clock] { return clock->NowUnixMs(); };
    Config config;
    auto memory = std::make_shared<PortMemory>(state_dir(), 600'000);
    AgentOptions o;
    o.node = "node";
    o.config = config;
    r->agent = std::make_unique<Agent>(o, MakeRootGatherFn(g), MakeBuiltinJudgeFn(config, memory),
                                       r->state, r->clock, r->log);
    return r;
  }

  static Finding PortState(const Run& r) {
    for (const Finding& f : r.state.View().report->findings) {
      if (f.check == ids::kIbPortState) return f;
    }
    return {};
  }
  static std::string Counted(const Finding& f, const std::string& port) {
    for (const auto& e : f.evidence) {
      if (e.key == port + " counted") return e.value;
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(AgentFalseAlarms, DownPortsOnTheFirstPollAfterABootWarnUntilTheNextPollConfirmsThem) {
  Write(false, kBootA);
  auto run = Start();
  run->agent->RunCycle();
  Finding f = PortState(*run);
  EXPECT_EQ(f.status, CheckStatus::kWarn) << f.message;
  EXPECT_EQ(Counted(f, "mlx5_0/1").rfind("no: first poll", 0), 0u) << Counted(f, "mlx5_0/1");
  run->clock.Advance(std::chrono::seconds(60));
  run->agent->RunCycle();
  f = PortState(*run);
  EXPECT_EQ(f.status, CheckStatus::kFail) << f.message;
  EXPECT_EQ(Counted(f, "mlx5_0/1").rfind("yes: not the agent's first poll", 0), 0u);
}

TEST_F(AgentFalseAlarms, ARestartedAgentCountsAPortItSawUpEarlierInThisBoot) {
  {
    auto run = Start();
    run->agent->RunCycle();
    EXPECT_EQ(PortState(*run).status, CheckStatus::kPass);
  }
  EXPECT_TRUE(fs::exists(fs::path(state_dir()) / "ports.state"));
  Write(false, kBootA);  // both ports went down while the agent was away
  auto run = Start();
  run->agent->RunCycle();
  Finding f = PortState(*run);
  EXPECT_EQ(f.status, CheckStatus::kFail) << f.message;
  EXPECT_NE(Counted(f, "mlx5_1/1").find("seen ACTIVE/LinkUp earlier in this boot"),
            std::string::npos)
      << Counted(f, "mlx5_1/1");
}

TEST_F(AgentFalseAlarms, AfterARebootThePortsSeenUpBeforeItAreNotEvidence) {
  {
    auto run = Start();
    run->agent->RunCycle();
  }
  Write(false, kBootB);  // rebooted: the ports are still training
  auto run = Start();
  run->agent->RunCycle();
  EXPECT_EQ(PortState(*run).status, CheckStatus::kWarn) << PortState(*run).message;
}

}  // namespace
}  // namespace nccl_triage
