// NodeSnapshot <-> JSON: every field survives a round trip, and a badly shaped document is an
// error Status, never a crash.
#include "core/snapshot_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "host/gatherer.h"
#include "rich_snapshot.h"
#include "support/fixture/fixture.h"

namespace nccl_triage {
namespace {

using json = nlohmann::json;

TEST(SnapshotJson, EveryFieldSurvivesRoundTripThroughText) {
  NodeSnapshot s = testing::RichSnapshot();
  json j = json::parse(ToJson(s).dump());
  auto back = SnapshotFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, s);
  EXPECT_EQ(ToJson(*back), ToJson(s));
}

TEST(SnapshotJson, EveryFixtureSnapshotSurvivesRoundTrip) {
  for (const auto& scenario : FixtureScenarios()) {
    GatherOptions o;
    o.root = std::string(NCCL_TRIAGE_FIXTURE_DIR) + "/" + scenario;
    auto s = GatherSnapshot(o);
    ASSERT_TRUE(s.ok()) << scenario;
    auto back = SnapshotFromJson(json::parse(ToJson(*s).dump()));
    ASSERT_TRUE(back.ok()) << scenario << ": " << back.status().message();
    EXPECT_EQ(*back, *s) << scenario;
  }
}

TEST(SnapshotJson, FactWritesValueSourceAndError) {
  json j = ToJson(testing::RichSnapshot());
  EXPECT_EQ(j["schema"], "nccl-triage/node-snapshot/v1");
  EXPECT_EQ(j["memlock"]["value"]["soft"]["value"], 65536);
  EXPECT_EQ(j["memlock"]["value"]["hard"]["unlimited"], true);
  EXPECT_TRUE(j["nofile"]["value"].is_null());
  EXPECT_EQ(j["nofile"]["error"], "unparseable: 'x'");
  EXPECT_EQ(j["ib_devices"][0]["ports"][0]["rate_gbps"]["value"], 0.1);
}

TEST(SnapshotJson, AbsentKeysKeepDefaults) {
  auto s = SnapshotFromJson(json{{"schema", "nccl-triage/node-snapshot/v1"}, {"node", "n1"}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->node, "n1");
  EXPECT_TRUE(s->ib_devices.empty());
  EXPECT_FALSE(s->memlock.ok());
}

TEST(SnapshotJson, BadShapesAreErrorsNamingTheKey) {
  struct Case {
    json doc;
    std::string expect;  // a fragment of the message
  };
  json good = ToJson(testing::RichSnapshot());
  auto with = [&](const std::string& pointer, json value) {
    json j = good;
    j[json::json_pointer(pointer)] = std::move(value);
    return j;
  };
  const Case cases[] = {
      {json::array(), "snapshot: expected an object"},
      {json("text"), "snapshot: expected an object"},
      {json(nullptr), "snapshot: expected an object"},
      {with("/schema", "nccl-triage/node-snapshot/v9"), "schema"},
      // "{}" passed as a snapshot in which nothing could be read.
      {json::object(), "snapshot: no 'schema' field"},
      {json{{"node", "n1"}}, "snapshot: no 'schema' field"},
      {with("/ib_devices", "mlx5_0"), "snapshot.ib_devices: expected an array"},
      {with("/ib_devices/0/ports/0/pkeys/0", 70000),
       "snapshot.ib_devices[0].ports[0].pkeys[0]: number out of range"},
      {with("/ib_devices/0/ports/0/lid/value", "0x1a"), "lid.value: expected an integer"},
      {with("/memlock/value", "unlimited"), "snapshot.memlock.value: expected an object"},
      {with("/memlock/value/soft/value", -1), "number out of range"},
      {with("/self_pid", 1e30), "snapshot.self_pid: expected an integer"},
      {with("/self_pid", 4294967296ll), "snapshot.self_pid: number out of range"},
      {with("/hypervisor/value", "yes"), "expected true or false"},
      {with("/files_read", json::array({1, 2})), "snapshot.files_read: expected an object"},
      {with("/live/mr_registrations/0", 3),
       "snapshot.live.mr_registrations[0]: expected an object"},
      {with("/ib_devices/0/ports/0/counters/symbol_error", -5),
       "counters.symbol_error: number out of range"},
      {with("/node", 17), "snapshot.node: expected a string"},
  };
  for (const auto& c : cases) {
    auto s = SnapshotFromJson(c.doc);
    ASSERT_FALSE(s.ok()) << c.doc.dump().substr(0, 80);
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(c.expect), std::string::npos)
        << s.status().message() << " does not contain " << c.expect;
  }
}

}  // namespace
}  // namespace nccl_triage
