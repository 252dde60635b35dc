#include "kernel/kmsg_follower.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>

#include "kernel/kernel_monitor.h"

namespace nccl_triage::kernel {
namespace {

// A fake /dev/kmsg: one record per read, then EAGAIN; errors injected by position.
std::function<KmsgRead()> Reads(std::deque<KmsgRead> reads) {
  auto q = std::make_shared<std::deque<KmsgRead>>(std::move(reads));
  return [q]() -> KmsgRead {
    if (q->empty()) return {{}, EAGAIN};
    KmsgRead r = q->front();
    q->pop_front();
    return r;
  };
}

KmsgRead Rec(int seq, const std::string& msg) {
  return {"6," + std::to_string(seq) + ",1000,-;" + msg + "\n", 0};
}

TEST(DrainKmsg, ReadsUntilEagainAndAdvancesTheCursor) {
  KmsgCursor c{"b", 0};
  auto batch = DrainKmsg(Reads({Rec(0, "a"), Rec(1, "b")}), &c);
  ASSERT_EQ(batch.records.size(), 2u);
  EXPECT_EQ(c.next_seq, 2u);
  EXPECT_FALSE(batch.wrapped);
}

TEST(DrainKmsg, SkipsRecordsBelowTheSavedCursor) {
  KmsgCursor c{"b", 5};
  auto batch = DrainKmsg(Reads({Rec(3, "old"), Rec(4, "old"), Rec(5, "new")}), &c);
  ASSERT_EQ(batch.records.size(), 1u);
  EXPECT_EQ(batch.records[0].message, "new");
}

TEST(DrainKmsg, CountsRecordsLostWhenTheRingBufferWrapped) {
  KmsgCursor c{"b", 10};
  auto batch = DrainKmsg(Reads({{{}, EPIPE}, Rec(25, "after wrap"), Rec(26, "next")}), &c);
  EXPECT_TRUE(batch.wrapped);
  EXPECT_EQ(batch.lost, 15u);
  EXPECT_EQ(batch.records.size(), 2u);
  EXPECT_EQ(c.next_seq, 27u);
}

TEST(DrainKmsg, StopsOnAReadErrorWithoutLooping) {
  KmsgCursor c{"b", 0};
  auto batch = DrainKmsg(Reads({Rec(0, "a"), {{}, EIO}, Rec(1, "never")}), &c);
  EXPECT_EQ(batch.records.size(), 1u);
}

TEST(KmsgCursorText, RoundTripsAndRejectsDamage) {
  KmsgCursor c{"3f2a-11", 42};
  EXPECT_EQ(ParseCursor(FormatCursor(c)), c);
  EXPECT_FALSE(ParseCursor("boot_id x\n"));
  EXPECT_FALSE(ParseCursor("boot_id x\nnext_seq nope\n"));
  EXPECT_FALSE(ParseCursor(""));
}

class KmsgFollowerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kmsg_follower_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "root/dev");
    std::filesystem::create_directories(dir_ / "root/proc/sys/kernel/random");
    Write("root/proc/sys/kernel/random/boot_id", "boot-1\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& rel, const std::string& text) {
    std::ofstream(dir_ / rel, std::ios::trunc) << text;
  }
  std::string Root() const { return (dir_ / "root").string(); }
  std::string State() const { return (dir_ / "state").string(); }
  std::filesystem::path dir_;
};

TEST_F(KmsgFollowerTest, ARestartReadsTheBufferAgainAndKnowsWhatWasCountedBefore) {
  Write("root/dev/kmsg", "6,0,100,-;first\n6,1,200,-;second\n SUBSYSTEM=pci\n");
  {
    KmsgFollower f(Root(), State());
    auto batch = f.ReadNew();
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    ASSERT_EQ(batch->records.size(), 2u);
    EXPECT_EQ(batch->records[1].dict.size(), 1u);
  }
  Write("root/dev/kmsg", "6,0,100,-;first\n6,1,200,-;second\n6,2,300,-;third\n");
  KmsgFollower again(Root(), State());
  auto batch = again.ReadNew();
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->records.size(), 3u);
  EXPECT_EQ(again.counted_from(), 2u);  // "third" is the only record not counted before
  EXPECT_EQ(batch->records[2].message, "third");
  EXPECT_TRUE(batch->records[2].wall_ms.has_value());
  EXPECT_EQ(again.cursor().next_seq, 3u);
}

TEST_F(KmsgFollowerTest, ReadsEverythingAgainAfterAReboot) {
  Write("root/dev/kmsg", "6,0,100,-;first\n6,1,200,-;second\n");
  { ASSERT_TRUE(KmsgFollower(Root(), State()).ReadNew().ok()); }
  Write("root/proc/sys/kernel/random/boot_id", "boot-2\n");
  KmsgFollower after(Root(), State());
  auto batch = after.ReadNew();
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->records.size(), 2u);
  EXPECT_EQ(after.counted_from(), 0u);
}

TEST_F(KmsgFollowerTest, ReportsAMissingKmsgAsAnError) {
  KmsgFollower f(Root(), State());
  auto batch = f.ReadNew();
  ASSERT_FALSE(batch.ok());
  EXPECT_NE(batch.status().message().find("dev/kmsg"), std::string::npos);
}

}  // namespace
}  // namespace nccl_triage::kernel

namespace nccl_triage::kernel {
namespace {

TEST_F(KmsgFollowerTest, MonitorKeepsFindingsAcrossCyclesAndCountsEachLineOnce) {
  // Stamped a second ago in the kernel's clock (CLOCK_MONOTONIC, steady_clock on Linux).
  const auto usec = std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                                       std::chrono::steady_clock::now().time_since_epoch())
                                       .count() -
                                   1'000'000);
  Write("root/dev/kmsg",
        "3,0," + usec + ",-;NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus.\n"
        "6,1," + usec + ",-;mlx5_core 0000:17:00.0 mlx5_0: Port: 1 Link DOWN\n");
  KernelMonitorOptions options;
  options.root = Root();
  options.state_dir = State();
  KernelMonitor monitor(options);
  NodeSnapshot snapshot;
  // The records' wall times come from this machine's boot time, so the window is judged at now.
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  for (int cycle = 0; cycle < 2; ++cycle) {
    auto findings = monitor.Judge(snapshot, now);
    auto off_bus = std::find_if(findings.begin(), findings.end(),
                                [](const Finding& f) { return f.check == "kernel.gpu_off_bus"; });
    ASSERT_NE(off_bus, findings.end());
    EXPECT_EQ(off_bus->status, CheckStatus::kFail) << "cycle " << cycle;
  }
  EXPECT_EQ(monitor.Counts().xids.at(79), 1);
  EXPECT_EQ(monitor.Counts().link_downs.at("mlx5_0/1"), 1);

  // Restarted: the GPU that fell off the bus is still reported, but not counted again.
  KernelMonitor restarted(options);
  auto findings = restarted.Judge(snapshot, now);
  EXPECT_TRUE(std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
    return f.check == "kernel.gpu_off_bus" && f.status == CheckStatus::kFail;
  }));
  EXPECT_TRUE(restarted.Counts().xids.empty());
}

TEST_F(KmsgFollowerTest, MonitorSkipsEveryKernelIdWhenKmsgCannotBeRead) {
  KernelMonitorOptions options;
  options.root = Root();
  KernelMonitor monitor(options);
  auto findings = monitor.Judge(NodeSnapshot{}, 0);
  ASSERT_EQ(findings.size(), 6u);
  for (const auto& f : findings) EXPECT_EQ(f.status, CheckStatus::kSkip) << f.check;
}

}  // namespace
}  // namespace nccl_triage::kernel
