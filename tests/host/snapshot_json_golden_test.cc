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

// Every field away from its default, with values at the edges of their types.
NodeSnapshot Rich() {
  NodeSnapshot s;
  s.node = "gpu-17";
  s.root = "/";
  s.taken_at_unix_ms = -1733140000123;
  s.self_pid = 4242;
  s.kernel_release = {std::string("6.1.0-18-amd64"), "proc/sys/kernel/osrelease", ""};
  s.arch = {std::string("aarch64"), "live:uname", ""};
  s.hypervisor = {false, "proc/cpuinfo", ""};
  s.mem_total_bytes = {uint64_t{18446744073709551615ull}, "proc/meminfo", ""};
  s.boot_id = {std::string("6f1c2d3e-aaaa-bbbb-cccc-0123456789ab"), "b", ""};
  s.boot_time_unix_s = {uint64_t{1733140000}, "proc/stat", ""};
  s.pci_devices = {{"0000:0c:00.0", 0x15b3, 0xffff, 0x020700, {"pci0000:00", "0000:00:01.1"}, "",
                    {-1, "sys/bus/pci/devices/0000:0c:00.0/numa_node", ""}},
                   {"0000:0d:00.0", 0x10de, 0x2330, 0x030200, {}, "not a link",
                    {std::nullopt, "n", "missing"}}};
  s.pci_error = "sys/bus/pci/devices/0000:00:01.0/class: unreadable: EACCES";
  s.infiniband_class_present = true;
  IbPort p;
  p.num = 2;
  p.state = {std::string("4: ACTIVE"), "sys/class/infiniband/mlx5_0/ports/2/state", ""};
  p.phys_state = {std::nullopt, "sys/class/infiniband/mlx5_0/ports/2/phys_state", "empty"};
  p.rate_gbps = {0.1, "r", ""};
  p.rate_text = {std::string("2.5 Gb/sec (1X SDR) \"quoted\" \\ \x01"), "r", ""};
  p.lid = {0xffffffffu, "l", ""};
  p.sm_lid = {std::nullopt, "s", "unparseable: '0x'"};
  p.sm_sl = {15u, "sl", ""};
  p.link_layer = {std::string("InfiniBand"), "ll", ""};
  p.cap_mask = {0xa659e848u, "c", ""};
  p.pkeys = {0xffff, 0x8001, 0};
  p.pkey_indices = {0, 5, 127};
  p.pkeys_error = "pkeys/7: unparseable: 'zz'";
  p.gids = {{3, "0000:0000:0000:0000:0000:ffff:0a0a:000b", "RoCE v2", "eth2"},
            {0, "fe80:0000:0000:0000:0c42:a103:0065:8a2e", "", ""}};
  p.counters = {{"port_rcv_data", 18446744073709551615ull}, {"symbol_error", 3}};
  p.hw_counters = {{"out_of_buffer", 7}};
  p.counters_error = "counters/x: missing";
  IbDevice d;
  d.name = "mlx5_0";
  d.node_type = {std::string("1: CA"), "nt", ""};
  d.node_guid = {std::string("b83f:d203:00c1:0a00"), "ng", ""};
  d.fw_ver = {std::nullopt, "fw", "missing"};
  d.hca_type = {std::string("MT4123"), "ht", ""};
  d.board_id = {std::string("MT_0000000223"), "bi", ""};
  d.pci_bdf = "0000:0c:00.0";
  d.ports = {p, IbPort{}};
  s.ib_devices = {d, IbDevice{}};
  s.uverbs_class_present = true;
  s.uverbs = {{"uverbs0", "mlx5_0"}};
  s.dev_infiniband_present = true;
  s.dev_infiniband = {"rdma_cm", "uverbs0"};
  s.interfaces = {{"ib0",
                   {std::string("up"), "o", ""},
                   {32, "t", ""},
                   {std::nullopt, "m", "missing"},
                   {"10.0.0.1/24", "fe80::1/64"}}};
  s.modules = {{"ib_uverbs", true, "5.8-1", "sys/module/ib_uverbs"},
               {"nvidia_peermem", false, "", "sys/module/nvidia_peermem"}};
  s.memlock = {LimitPair{{false, 65536}, {true, 0}}, "proc/self/limits", ""};
  s.nofile = {std::nullopt, "proc/self/limits", "unparseable: 'x'"};
  s.cap_eff = {uint64_t{0xa80425fb}, "proc/self/status", ""};
  s.seccomp_mode = {2, "proc/self/status", ""};
  s.mounts = {{"/dev/shm", "tmpfs", "shm", "rw,size=65536k,inode64"}};
  s.mounts_error = "proc/self/mountinfo: unreadable";
  s.self_netns = {std::string("net:[4026532761]"), "proc/self/ns/net", ""};
  s.init_netns = {std::string("net:[4026531840]"), "proc/1/ns/net", ""};
  s.selinux_enforce = {std::nullopt, "sys/fs/selinux/enforce", "missing"};
  s.apparmor_profile = {std::string("cri-containerd.apparmor.d (enforce)"), "a", ""};
  s.nvidia_driver_version = {std::string("535.129.03"), "proc/driver/nvidia/version", ""};
  s.gpus = {{"0000:07:00.0", "NVIDIA A100-SXM4-80GB", "g", 0,
             "GPU-6f4d3b8e-21c7-9a0e-5b1d-0c2e7a4f91a0"}};
  s.uverbs_holders = {{31337, "python3", "/dev/infiniband/uverbs0"}};
  s.gpu_holders = {{31338, "pt_main_thread", "/dev/nvidia1", true}};
  s.proc_scan_error = "3 process(es) not readable";
  s.gpu_allocations = std::vector<GpuAllocation>{
      {"ml/train-0/worker", "nvidia.com/gpu", "GPU-6f4d3b8e-21c7-9a0e-5b1d-0c2e7a4f91a0::1"}};
  s.gpu_allocations_error = "kept with the allocations only in this test";
  s.live.gathered = true;
  s.live.verbs_error = "ibv_open_device(mlx5_1): Permission denied (errno 13)";
  s.live.verbs_devices = {"mlx5_0", "mlx5_1"};
  s.live.verbs_ports = {{"mlx5_0", 1, "ACTIVE", 4096, 8, 128, "InfiniBand"}};
  s.live.verbs_device_errors = {{"mlx5_1", "ibv_open_device(mlx5_1): Permission denied"}};
  s.live.mr_registrations = {
      {"mlx5_0", 67108864, false, "ibv_reg_mr: Cannot allocate memory (errno 12)"}};
  s.files_read = {{"proc/self/limits", 1}, {"proc/cpuinfo", 2}};
  return s;
}

TEST(SnapshotJsonGolden, RichSnapshotTextIsUnchanged) {
  ExpectGolden("snapshot_rich.json", DumpJson(ToJson(Rich()), 2) + "\n");
  ExpectGolden("snapshot_rich.min.json", DumpJson(ToJson(Rich())) + "\n");
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
  EXPECT_EQ(*rich, Rich());
  auto def = SnapshotFromJson(json::parse(testing::ReadTextFile(GoldenPath("snapshot_default.json"))));
  ASSERT_TRUE(def.ok()) << def.status().message();
  EXPECT_EQ(*def, NodeSnapshot{});
}

// The reader's whole message for each malformed document, one per line.
TEST(SnapshotJsonGolden, ReaderErrorsAreUnchanged) {
  const json good = ToJson(Rich());
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
  json j = ToJson(Rich());
  j.erase("node");
  j.erase("live");
  j["ib_devices"][0]["ports"][0].erase("gids");
  j["ib_devices"][0]["ports"][0]["state"].erase("value");
  j["ib_devices"][0]["ports"][0]["state"].erase("source");
  j["memlock"]["value"].erase("soft");
  j["gpu_allocations"] = nullptr;
  auto s = SnapshotFromJson(j);
  ASSERT_TRUE(s.ok()) << s.status().message();
  NodeSnapshot want = Rich();
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
