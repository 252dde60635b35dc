// NodeSnapshot <-> JSON: every field survives a round trip, and a badly shaped document is an
// error Status, never a crash.
#include "core/snapshot_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "host/gatherer.h"
#include "support/fixture/fixture.h"

namespace nccl_triage {
namespace {

using json = nlohmann::json;

// A snapshot with every field set to something other than its default, including the live facts
// and the error strings that a fixture never produces.
NodeSnapshot EverythingSet() {
  NodeSnapshot s;
  s.node = "gpu-17";
  s.root = "/";
  s.taken_at_unix_ms = 1733140000123;
  s.self_pid = 4242;
  s.kernel_release = {std::string("6.1.0-18-amd64"), "proc/sys/kernel/osrelease", ""};
  s.arch = {std::string("aarch64"), "live:uname", ""};
  s.hypervisor = {true, "proc/cpuinfo", ""};
  s.mem_total_bytes = {uint64_t{18446744073709551615ull}, "proc/meminfo", ""};
  s.pci_devices = {{"0000:0c:00.0", 0x15b3, 0x101b, 0x020700}};
  s.pci_error = "sys/bus/pci/devices/0000:00:01.0/class: unreadable: EACCES";
  s.infiniband_class_present = true;
  IbPort p;
  p.num = 2;
  p.state = {std::string("4: ACTIVE"), "sys/class/infiniband/mlx5_0/ports/2/state", ""};
  p.phys_state = {std::nullopt, "sys/class/infiniband/mlx5_0/ports/2/phys_state", "empty"};
  p.rate_gbps = {2.5, "r", ""};
  p.rate_text = {std::string("2.5 Gb/sec (1X SDR)"), "r", ""};
  p.lid = {0xffffffffu, "l", ""};
  p.sm_lid = {std::nullopt, "s", "unparseable: '0x'"};
  p.sm_sl = {15u, "sl", ""};
  p.link_layer = {std::string("InfiniBand"), "ll", ""};
  p.cap_mask = {0xa659e848u, "c", ""};
  p.pkeys = {0xffff, 0x8001};
  p.pkey_indices = {0, 5};
  p.pkeys_error = "pkeys/7: unparseable: 'zz'";
  p.gids = {{3, "0000:0000:0000:0000:0000:ffff:0a0a:000b", "RoCE v2", "eth2"}};
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
  d.ports = {p};
  s.ib_devices = {d};
  s.uverbs_class_present = true;
  s.uverbs = {{"uverbs0", "mlx5_0"}};
  s.dev_infiniband_present = true;
  s.dev_infiniband = {"rdma_cm", "uverbs0"};
  s.interfaces = {{"ib0",
                   {std::string("up"), "o", ""},
                   {32, "t", ""},
                   {std::nullopt, "m", "missing"},
                   {"10.0.0.1/24", "fe80::1/64"}}};
  s.modules = {{"ib_uverbs", true, "", "sys/module/ib_uverbs"},
               {"nvidia_peermem", false, "", "sys/module/nvidia_peermem"}};
  s.memlock = {LimitPair{{false, 65536}, {true, 0}}, "proc/self/limits", ""};
  s.nofile = {std::nullopt, "proc/self/limits", "unparseable: 'x'"};
  s.cap_eff = {uint64_t{0xa80425fb}, "proc/self/status", ""};
  s.seccomp_mode = {2, "proc/self/status", ""};
  s.mounts = {{"/dev/shm", "tmpfs", "shm", "rw,size=65536k,inode64"}};
  s.mounts_error = "";
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
  s.live.mr_registrations = {
      {"mlx5_0", 67108864, false, "ibv_reg_mr: Cannot allocate memory (errno 12)"}};
  s.files_read = {{"proc/self/limits", 1}, {"proc/cpuinfo", 2}};
  return s;
}

TEST(SnapshotJson, EveryFieldSurvivesRoundTripThroughText) {
  NodeSnapshot s = EverythingSet();
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
  json j = ToJson(EverythingSet());
  EXPECT_EQ(j["schema"], "nccl-triage/node-snapshot/v1");
  EXPECT_EQ(j["memlock"]["value"]["soft"]["value"], 65536);
  EXPECT_EQ(j["memlock"]["value"]["hard"]["unlimited"], true);
  EXPECT_TRUE(j["nofile"]["value"].is_null());
  EXPECT_EQ(j["nofile"]["error"], "unparseable: 'x'");
  EXPECT_EQ(j["ib_devices"][0]["ports"][0]["rate_gbps"]["value"], 2.5);
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
  json good = ToJson(EverythingSet());
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
