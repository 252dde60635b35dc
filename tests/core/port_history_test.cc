// PortHistory: the flaps and the ports seen up that the agent remembers between polls.
#include "core/port_history.h"

#include <gtest/gtest.h>

namespace nccl_triage {
namespace {

Fact<std::string> Text(std::string v) { return Fact<std::string>{std::move(v), "test", ""}; }

// Two HCAs with one port each, both ACTIVE/LinkUp, link_downed 0.
NodeSnapshot TwoPorts(int64_t at_ms) {
  NodeSnapshot s;
  s.taken_at_unix_ms = at_ms;
  for (int i = 0; i < 2; ++i) {
    IbDevice d;
    d.name = "mlx5_" + std::to_string(i);
    IbPort p;
    p.num = 1;
    p.state = Text("4: ACTIVE");
    p.phys_state = Text("5: LinkUp");
    p.counters["link_downed"] = 0;
    d.ports.push_back(p);
    s.ib_devices.push_back(d);
  }
  return s;
}

IbPort& Port(NodeSnapshot& s, int i) { return s.ib_devices.at(static_cast<size_t>(i)).ports[0]; }

TEST(PortHistory, RecordsAPortThatLeftActiveAsAFlap) {
  NodeSnapshot before = TwoPorts(1000);
  NodeSnapshot now = TwoPorts(61'000);
  Port(now, 1).state = Text("1: DOWN");
  Port(now, 1).phys_state = Text("2: Polling");
  PortHistory h;
  RecordPortFlaps(h, now, &before);
  ASSERT_NE(h.Find("mlx5_1/1"), nullptr);
  EXPECT_EQ(h.Find("mlx5_1/1")->last_flap_unix_ms, 61'000);
  EXPECT_NE(h.Find("mlx5_1/1")->flap_reason.find("left ACTIVE"), std::string::npos);
  EXPECT_EQ(h.Find("mlx5_0/1"), nullptr);
}

// Bring-up after a boot (DOWN, then ACTIVE) must not read as a flap.
TEST(PortHistory, DoesNotCountAPortComingUpAsAFlap) {
  NodeSnapshot before = TwoPorts(1000);
  Port(before, 0).state = Text("1: DOWN");
  Port(before, 0).phys_state = Text("2: Polling");
  NodeSnapshot now = TwoPorts(61'000);
  PortHistory h;
  RecordPortFlaps(h, now, &before);
  EXPECT_TRUE(h.ports.empty());
}

TEST(PortHistory, RecordsARisingLinkDownedCounterAsAFlap) {
  NodeSnapshot before = TwoPorts(1000);
  NodeSnapshot now = TwoPorts(61'000);
  Port(now, 0).counters["link_downed"] = 2;
  PortHistory h;
  h.now_unix_ms = 61'000;
  RecordPortFlaps(h, now, &before);
  ASSERT_NE(h.Find("mlx5_0/1"), nullptr);
  EXPECT_EQ(h.Find("mlx5_0/1")->flap_reason, "link_downed +2");
  EXPECT_TRUE(h.Flapping("mlx5_0/1"));
  h.now_unix_ms = 61'000 + h.flap_stable_ms;  // stable for the whole time: released
  EXPECT_FALSE(h.Flapping("mlx5_0/1"));
}

TEST(PortHistory, RemembersPortsSeenUpAndEndsTheFirstPoll) {
  NodeSnapshot now = TwoPorts(1000);
  Port(now, 1).state = Text("1: DOWN");
  PortHistory h;
  RecordPortsSeen(h, now);
  EXPECT_FALSE(h.first_poll);
  ASSERT_NE(h.Find("mlx5_0/1"), nullptr);
  EXPECT_TRUE(h.Find("mlx5_0/1")->seen_up);
  EXPECT_EQ(h.Find("mlx5_1/1"), nullptr);
}

TEST(PortHistory, RoundTripsThroughItsTextAndRejectsDamagedText) {
  PortHistory h;
  h.boot_id = "6f1c2a3b-0000-4000-8000-000000000001";
  h.ports["mlx5_0/1"] = PortMemo{true, 0, ""};
  h.ports["mlx5_1/1"] = PortMemo{false, 1234, "left ACTIVE (4: ACTIVE -> 1: DOWN)"};
  auto back = ParsePortHistory(FormatPortHistory(h));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->boot_id, h.boot_id);
  EXPECT_EQ(back->ports, h.ports);
  EXPECT_FALSE(ParsePortHistory("port mlx5_0/1 1 0\n").has_value());  // no boot id
  EXPECT_FALSE(ParsePortHistory("boot_id x\nport mlx5_0/1 yes 0\n").has_value());
  EXPECT_FALSE(ParsePortHistory("").has_value());
}

}  // namespace
}  // namespace nccl_triage
