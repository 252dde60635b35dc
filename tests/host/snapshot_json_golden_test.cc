// The snapshot's JSON text is a file format (`check --dump-snapshot` writes it, bug reports carry
// it): these tests pin it byte for byte to committed goldens, and pin the reader's exact error
// messages on malformed documents. A change to either is a change of format and must be made on
// purpose: regenerate with NCCL_TRIAGE_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/json_text.h"
#include "core/snapshot_json.h"
#include "host/gatherer.h"
#include "rich_snapshot.h"
#include "support/text_file.h"

namespace nccl_triage {
namespace {

using json = nlohmann::json;

std::string GoldenPath(const std::string& name) {
  return std::string(NCCL_TRIAGE_SOURCE_DIR) + "/tests/host/golden/" + name;
}

// Compares `text` with the golden `name`, or rewrites the golden when asked to.
void ExpectGolden(const std::string& name, const std::string& text) {
  if (const char* update = std::getenv("NCCL_TRIAGE_UPDATE_GOLDEN"); update && *update == '1') {
    std::ofstream(GoldenPath(name), std::ios::binary) << text;
    return;
  }
  const std::string want = testing::ReadTextFile(GoldenPath(name));
  ASSERT_FALSE(want.empty()) << "no golden " << GoldenPath(name);
  EXPECT_EQ(text, want) << "the JSON of " << name << " changed";
}

TEST(SnapshotJsonGolden, RichSnapshotTextIsUnchanged) {
  ExpectGolden("snapshot_rich.json", DumpJson(ToJson(testing::RichSnapshot()), 2) + "\n");
  ExpectGolden("snapshot_rich.min.json", DumpJson(ToJson(testing::RichSnapshot())) + "\n");
}

TEST(SnapshotJsonGolden, DefaultSnapshotTextIsUnchanged) {
  ExpectGolden("snapshot_default.json", DumpJson(ToJson(NodeSnapshot{}), 2) + "\n");
}

TEST(SnapshotJsonGolden, FixtureSnapshotTextIsUnchanged) {
  GatherOptions o;
  o.root = std::string(NCCL_TRIAGE_FIXTURE_DIR) + "/dgx-h100";
  auto s = GatherSnapshot(o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  s->root = "fixture:dgx-h100";  // the build's path is not part of the format
  s->taken_at_unix_ms = 0;
  ExpectGolden("snapshot_dgx_h100.json", DumpJson(ToJson(*s), 2) + "\n");
}

TEST(SnapshotJsonGolden, ReadingTheGoldensGivesBackTheSnapshot) {
  auto rich = SnapshotFromJson(json::parse(testing::ReadTextFile(GoldenPath("snapshot_rich.json"))));
  ASSERT_TRUE(rich.ok()) << rich.status().message();
  EXPECT_EQ(*rich, testing::RichSnapshot());
  auto def = SnapshotFromJson(json::parse(testing::ReadTextFile(GoldenPath("snapshot_default.json"))));
  ASSERT_TRUE(def.ok()) << def.status().message();
  EXPECT_EQ(*def, NodeSnapshot{});
}

// The reader's whole message for each malformed document, one per line.
TEST(SnapshotJsonGolden, ReaderErrorsAreUnchanged) {
  const json good = ToJson(testing::RichSnapshot());
  auto with = [&](const std::string& pointer, json value) {
    json j = good;
    j[json::json_pointer(pointer)] = std::move(value);
    return j;
  };
  const json docs[] = {
      json::array(),
      json::object(),
      with("/schema", 1),
      with("/schema", "nccl-triage/node-snapshot/v9"),
      with("/node", 17),
      with("/taken_at_unix_ms", "now"),
      with("/taken_at_unix_ms", 9223372036854775807.0 * 4),
      with("/self_pid", -4294967296ll),
      with("/self_pid", 1.5),
      with("/hypervisor", true),
      with("/hypervisor/value", "yes"),
      with("/hypervisor/source", nullptr),
      with("/mem_total_bytes/value", -1),
      with("/memlock/value", "unlimited"),
      with("/memlock/value/soft", json::array()),
      with("/memlock/value/hard/unlimited", 0),
      with("/pci_devices/0/vendor", 65536),
      with("/pci_devices/0/class", "0x0207"),
      with("/pci_devices/0/path/1", 3),
      with("/pci_devices/0/numa_node/value", 2147483648ll),
      with("/ib_devices", "mlx5_0"),
      with("/ib_devices/0", nullptr),
      with("/ib_devices/0/ports/0/pkeys/0", 70000),
      with("/ib_devices/0/ports/0/pkey_indices", json::object()),
      with("/ib_devices/0/ports/0/gids/1/index", false),
      with("/ib_devices/0/ports/0/rate_gbps/value", "fast"),
      with("/ib_devices/0/ports/0/lid/value", "0x1a"),
      with("/ib_devices/0/ports/0/counters/symbol_error", -5),
      with("/ib_devices/0/ports/0/hw_counters", json::array()),
      with("/uverbs/0/ibdev", json::object()),
      with("/interfaces/0/addresses/0", 10),
      with("/modules/1/loaded", "no"),
      with("/mounts/0", "tmpfs"),
      with("/gpus/0/minor", "0"),
      with("/uverbs_holders/0/pid", -1.0),
      with("/gpu_holders/0/cuda_context", 1),
      with("/gpu_allocations", json::object()),
      with("/gpu_allocations/0/device_id", 3),
      with("/live", json::array()),
      with("/live/verbs_ports/0/port", "1"),
      with("/live/verbs_device_errors/0/error", 13),
      with("/live/mr_registrations/0", 3),
      with("/live/mr_registrations/0/bytes", -1),
      with("/files_read", json::array({1, 2})),
      with("/files_read/proc~1cpuinfo", "two"),
  };
  std::string text;
  for (const auto& doc : docs) {
    auto s = SnapshotFromJson(doc);
    ASSERT_FALSE(s.ok()) << doc.dump().substr(0, 120);
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    text += s.status().message() + "\n";
  }
  ExpectGolden("snapshot_reader_errors.txt", text);
}

// Missing keys are not errors: each keeps its default, in every nested struct.
TEST(SnapshotJsonGolden, MissingKeysKeepTheirDefaults) {
  json j = ToJson(testing::RichSnapshot());
  j.erase("node");
  j.erase("live");
  j["ib_devices"][0]["ports"][0].erase("gids");
  j["ib_devices"][0]["ports"][0]["state"].erase("value");
  j["ib_devices"][0]["ports"][0]["state"].erase("source");
  j["memlock"]["value"].erase("soft");
  j["gpu_allocations"] = nullptr;
  auto s = SnapshotFromJson(j);
  ASSERT_TRUE(s.ok()) << s.status().message();
  NodeSnapshot want = testing::RichSnapshot();
  want.node.clear();
  want.live = {};
  want.ib_devices[0].ports[0].gids.clear();
  want.ib_devices[0].ports[0].state = {std::nullopt, "", ""};
  want.memlock.value->soft = {};
  want.gpu_allocations.reset();
  EXPECT_EQ(*s, want);
}

}  // namespace
}  // namespace nccl_triage
