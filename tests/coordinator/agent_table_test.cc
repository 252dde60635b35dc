// The coordinator's table of agents on its own: sessions and their nodes, admission and the
// eviction of the node gone longest, liveness on a hand-moved clock, and sweep membership.
#include "coordinator/agent_table.h"

#include <gtest/gtest.h>

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;
using Clock = AgentTable::Clock;

struct FakeSession : AgentSession {};

NodeInfo Info(const std::string& name, bool gpus_busy = false) {
  NodeInfo info;
  info.name = name;
  info.topology = "rack-" + name;
  info.gpus_busy = gpus_busy;
  return info;
}

NodeInfo CannotProbe(const std::string& name) {
  NodeInfo info = Info(name);
  info.probe = NodeProbeAvailability{.available = false, .reason = "no_nccl", .evidence = "x"};
  return info;
}

const Clock::time_point kT0{};

TEST(AgentTable, ASessionIsItsNodesOnlyAfterTheConnect) {
  AgentTable table({});
  FakeSession s;
  EXPECT_EQ(table.NodeOf(&s), nullptr);
  ASSERT_TRUE(table.Admit("a").admitted);
  EXPECT_EQ(table.Connect("a", &s, Info("a"), "10.0.0.1:5", kT0), std::nullopt);
  ASSERT_NE(table.NodeOf(&s), nullptr);
  EXPECT_EQ(*table.NodeOf(&s), "a");
  EXPECT_TRUE(table.Connected("a"));
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.Find("a")->session, &s);
  EXPECT_EQ(table.Known("a").topology, "rack-a");
  EXPECT_EQ(table.peers().at("a"), "10.0.0.1:5");
}

TEST(AgentTable, AConnectReturnsWhatTheNodeSaidOfItsProbesBefore) {
  AgentTable table({});
  FakeSession first, second;
  table.Connect("a", &first, CannotProbe("a"), "p", kT0);
  ASSERT_TRUE(table.Disconnect("a", kT0 + 1s));
  const std::optional<NodeProbeAvailability> before =
      table.Connect("a", &second, Info("a"), "p", kT0 + 2s);
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->reason, "no_nccl");
  EXPECT_FALSE(table.Known("a").probe.has_value());
}

TEST(AgentTable, OnlyTheCurrentSessionIsHeardAndEndsTheNode) {
  AgentTable table({});
  FakeSession old_session, new_session;
  table.Connect("a", &old_session, Info("a"), "p", kT0);
  // Replaced: the transport disconnects the node, then connects the new session.
  ASSERT_TRUE(table.Disconnect("a", kT0 + 1s));
  table.Connect("a", &new_session, Info("a"), "p", kT0 + 1s);
  EXPECT_FALSE(table.Heard("a", &old_session, kT0 + 2s));
  EXPECT_TRUE(table.Heard("a", &new_session, kT0 + 2s));
  EXPECT_EQ(table.Find("a")->last_seen, kT0 + 2s);
  EXPECT_EQ(table.EndSession(&old_session), std::nullopt);
  EXPECT_EQ(table.EndSession(&new_session), "a");
  // Ended once: a second end (the stream's OnDone after its read failed) finds nothing.
  EXPECT_EQ(table.EndSession(&new_session), std::nullopt);
}

TEST(AgentTable, ADisconnectKeepsTheNodeKnownAndCountsItGone) {
  AgentTable table({});
  FakeSession s;
  table.Connect("a", &s, Info("a"), "p", kT0);
  EXPECT_TRUE(table.Disconnect("a", kT0 + 5s));
  EXPECT_FALSE(table.Disconnect("a", kT0 + 6s));
  EXPECT_FALSE(table.Connected("a"));
  EXPECT_EQ(table.NodeOf(&s), nullptr);
  EXPECT_EQ(table.Known("a").name, "a");
  EXPECT_EQ(table.left_at().at("a"), kT0 + 5s);
  // A hello of it again takes its place back: it is no longer gone.
  EXPECT_TRUE(table.Admit("a").admitted);
  EXPECT_FALSE(table.left_at().contains("a"));
}

TEST(AgentTable, ANodeWhoseSessionWasReplacedIsNotGoneAndNotForgotten) {
  AgentTable table({.max_nodes = 1, .node_expiry = 60s});
  FakeSession old_session, new_session;
  table.Connect("a", &old_session, Info("a"), "p", kT0);
  // A restarted agent: admitted, its old session disconnected, the new one connected.
  ASSERT_TRUE(table.Admit("a").admitted);
  ASSERT_TRUE(table.Disconnect("a", kT0 + 1s));
  table.Connect("a", &new_session, Info("a"), "p", kT0 + 1s);
  EXPECT_FALSE(table.left_at().contains("a"));
  EXPECT_TRUE(table.Housekeeping(kT0 + 2h).forgotten.empty());
  EXPECT_TRUE(table.known().contains("a"));
  // Nor is it evicted for a new node while connected.
  EXPECT_FALSE(table.Admit("b").admitted);
}

TEST(AgentTable, ASummaryUpdatesTheConnectedNodeAndWhatIsKnown) {
  AgentTable table({});
  FakeSession s;
  table.Connect("a", &s, Info("a"), "p", kT0);
  table.Update("a", Info("a", /*gpus_busy=*/true));
  EXPECT_TRUE(table.Find("a")->info.gpus_busy);
  EXPECT_TRUE(table.Known("a").gpus_busy);
  table.Update("nobody", Info("nobody"));
  EXPECT_FALSE(table.known().contains("nobody"));
}

TEST(AgentTable, AFullTableEvictsTheNodeGoneLongestAndRefusesWhenAllAreConnected) {
  AgentTable table({.max_nodes = 2});
  FakeSession a, b, c;
  table.Connect("a", &a, Info("a"), "p", kT0);
  table.Connect("b", &b, Info("b"), "p", kT0);
  EXPECT_TRUE(table.Admit("a").admitted);  // known: its place is kept
  EXPECT_FALSE(table.Admit("c").admitted);
  table.Disconnect("b", kT0 + 1s);
  table.Disconnect("a", kT0 + 2s);
  const AgentTable::Admission admission = table.Admit("c");
  EXPECT_TRUE(admission.admitted);
  EXPECT_EQ(admission.evicted, "b");
  EXPECT_FALSE(table.known().contains("b"));
  EXPECT_FALSE(table.peers().contains("b"));
  EXPECT_FALSE(table.left_at().contains("b"));
  table.Connect("c", &c, Info("c"), "p", kT0 + 3s);
  EXPECT_EQ(table.known().size(), 2u);
}

TEST(AgentTable, HousekeepingForgetsExpiredNodesAndNamesSilentOnes) {
  AgentTable table({.node_expiry = 60s, .heartbeat_timeout = 10s});
  FakeSession gone, quiet, talking;
  table.Connect("gone", &gone, Info("gone"), "p", kT0);
  table.Disconnect("gone", kT0);
  table.Connect("quiet", &quiet, Info("quiet"), "p", kT0);
  table.Connect("talking", &talking, Info("talking"), "p", kT0);
  table.Heard("talking", &talking, kT0 + 55s);

  AgentTable::Overdue early = table.Housekeeping(kT0 + 10s);
  EXPECT_TRUE(early.forgotten.empty());
  EXPECT_TRUE(early.silent.empty());  // exactly the timeout is not past it

  AgentTable::Overdue late = table.Housekeeping(kT0 + 60s);
  EXPECT_EQ(late.forgotten, std::vector<std::string>{"gone"});
  EXPECT_FALSE(table.known().contains("gone"));
  ASSERT_EQ(late.silent.size(), 1u);
  EXPECT_EQ(late.silent[0].first, "quiet");
  EXPECT_EQ(late.silent[0].second, &quiet);
  // Named, not dropped: the caller disconnects it.
  EXPECT_TRUE(table.Connected("quiet"));
}

TEST(AgentTable, ASweepLeavesOutBlindNodesAndCountsBusyOnesInARow) {
  AgentTable table({});
  FakeSession a, b, c;
  table.Connect("a", &a, Info("a"), "p", kT0);
  table.Connect("busy", &b, Info("busy", /*gpus_busy=*/true), "p", kT0);
  table.Connect("blind", &c, CannotProbe("blind"), "p", kT0);

  AgentTable::SweepMembers first = table.StartSweep();
  EXPECT_EQ(first.available, std::vector<std::string>{"a"});
  EXPECT_EQ(first.blind, std::vector<std::string>{"blind"});
  ASSERT_EQ(first.members.size(), 2u);
  EXPECT_EQ(first.members[0], (std::pair<std::string, std::string>{"a", "rack-a"}));
  EXPECT_EQ(first.members[1], (std::pair<std::string, std::string>{"busy", "rack-busy"}));
  EXPECT_EQ(table.unprobed_sweeps(),
            (std::map<std::string, uint64_t>{{"a", 0}, {"blind", 0}, {"busy", 1}}));

  table.StartSweep();
  EXPECT_EQ(table.unprobed_sweeps().at("busy"), 2u);
  table.Update("busy", Info("busy"));
  table.StartSweep();
  EXPECT_EQ(table.unprobed_sweeps().at("busy"), 0u);
  // A node that left is no longer counted.
  table.Disconnect("busy", kT0 + 1s);
  table.StartSweep();
  EXPECT_FALSE(table.unprobed_sweeps().contains("busy"));
}

TEST(AgentTable, DroppingTheConnectionsKeepsTheKnownNodes) {
  AgentTable table({});
  FakeSession s;
  table.Connect("a", &s, Info("a"), "p", kT0);
  table.DropConnections();
  EXPECT_EQ(table.size(), 0u);
  EXPECT_TRUE(table.known().contains("a"));
}

}  // namespace
}  // namespace nccl_triage
