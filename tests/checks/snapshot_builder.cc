#include "checks/snapshot_builder.h"

namespace nccl_triage::testing {
namespace {

std::string Bdf(int bus) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string b = "0000:00:00.0";
  b[5] = kHex[(bus >> 4) & 0xf];
  b[6] = kHex[bus & 0xf];
  return b;
}

IbDevice MakeHca(int i, bool roce) {
  IbDevice d;
  d.name = "mlx5_" + std::to_string(i);
  const std::string base = "sys/class/infiniband/" + d.name;
  d.node_type = Have<std::string>("1: CA", base + "/node_type");
  d.node_guid = Have<std::string>("0c42:a103:0065:8a2" + std::to_string(i), base + "/node_guid");
  d.fw_ver = Have<std::string>("20.35.1012", base + "/fw_ver");
  d.hca_type = Have<std::string>("MT4123", base + "/hca_type");
  d.board_id = Have<std::string>("MT_0000000223", base + "/board_id");
  d.pci_bdf = Bdf(0x10 + i);
  IbPort p;
  p.num = 1;
  const std::string pb = base + "/ports/1/";
  p.state = Have<std::string>("4: ACTIVE", pb + "state");
  p.phys_state = Have<std::string>("5: LinkUp", pb + "phys_state");
  p.rate_gbps = Have(200.0, pb + "rate");
  p.rate_text = Have<std::string>("200 Gb/sec (4X HDR)", pb + "rate");
  p.link_layer = Have<std::string>(roce ? "Ethernet" : "InfiniBand", pb + "link_layer");
  p.lid = Have<uint32_t>(roce ? 0 : 0x10 + static_cast<uint32_t>(i), pb + "lid");
  p.sm_lid = Have<uint32_t>(roce ? 0 : 1, pb + "sm_lid");
  p.sm_sl = Have<uint32_t>(0, pb + "sm_sl");
  p.cap_mask = Have<uint32_t>(0x2651e848, pb + "cap_mask");
  p.pkeys = {0xffff};
  p.pkey_indices = {0};
  if (roce) {
    const std::string ndev = "ens" + std::to_string(10 + i) + "np0";
    p.gids = {{0, "fe80:0000:0000:0000:0e42:a1ff:fe65:8a2e", "IB/RoCE v1", ndev},
              {1, "fe80:0000:0000:0000:0e42:a1ff:fe65:8a2e", "RoCE v2", ndev},
              {2, "0000:0000:0000:0000:0000:ffff:0a00:000" + std::to_string(i), "IB/RoCE v1", ndev},
              {3, "0000:0000:0000:0000:0000:ffff:0a00:000" + std::to_string(i), "RoCE v2", ndev}};
  } else {
    p.gids = {{0, "fe80:0000:0000:0000:0c42:a103:0065:8a2e", "IB/RoCE v1", ""}};
  }
  for (const char* c : {"symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
                        "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
                        "local_link_integrity_errors", "excessive_buffer_overrun_errors",
                        "port_xmit_discards", "port_xmit_data"}) {
    p.counters[c] = 0;
  }
  p.counters["port_xmit_data"] = 123456789;
  d.ports.push_back(p);
  return d;
}

KernelModule Module(std::string name, bool loaded, std::string version = "") {
  return KernelModule{name, loaded, std::move(version), "sys/module/" + name};
}

NodeSnapshot CommonHost() {
  NodeSnapshot s;
  s.node = "gpu-node-1";
  s.root = "tests/fixtures/test";
  s.taken_at_unix_ms = 1'700'000'000'000;
  s.kernel_release = Have<std::string>("5.15.0-91-generic", "proc/sys/kernel/osrelease");
  s.arch = Have<std::string>("x86_64", "proc/sys/kernel/arch");
  s.hypervisor = Have(false, "proc/cpuinfo");
  s.mem_total_bytes = Have<uint64_t>(64ull << 30, "proc/meminfo");
  s.memlock = Have(LimitPair{{true, 0}, {true, 0}}, "proc/self/limits");
  s.nofile = Have(LimitPair{{false, 1048576}, {false, 1048576}}, "proc/self/limits");
  s.cap_eff = Have<uint64_t>(0x000001ffffffffff, "proc/self/status");
  s.seccomp_mode = Have(0, "proc/self/status");
  s.self_netns = Have<std::string>("net:[4026531840]", "proc/self/ns/net");
  s.init_netns = Have<std::string>("net:[4026531840]", "proc/1/ns/net");
  s.selinux_enforce = Missing<int>("sys/fs/selinux/enforce");
  s.apparmor_profile = Have<std::string>("unconfined", "proc/self/attr/current");
  s.mounts = {{"/dev/shm", "tmpfs", "tmpfs", "rw,size=33554432k,inode64"}};
  NetInterface lo{"lo",
                  Have<std::string>("unknown", "sys/class/net/lo/operstate"),
                  Have(772, "sys/class/net/lo/type"),
                  Have(65536, "sys/class/net/lo/mtu"),
                  {}};
  NetInterface eth{"eth0",
                   Have<std::string>("up", "sys/class/net/eth0/operstate"),
                   Have(1, "sys/class/net/eth0/type"),
                   Have(1500, "sys/class/net/eth0/mtu"),
                   {}};
  s.interfaces = {lo, eth};
  s.proc_scan_error = "";
  return s;
}

void AddGpus(NodeSnapshot& s) {
  s.nvidia_driver_version = Have<std::string>("535.129.03", "proc/driver/nvidia/version");
  for (int i = 0; i < 8; ++i) {
    const std::string bdf = Bdf(0x40 + i);
    s.gpus.push_back(
        {bdf, "NVIDIA A100-SXM4-80GB", "proc/driver/nvidia/gpus/" + bdf + "/information"});
    s.pci_devices.push_back({bdf, 0x10de, 0x20b2, 0x030200});
  }
  s.modules.push_back(Module("nvidia", true, "535.129.03"));
  s.modules.push_back(Module("nvidia_peermem", true, "535.129.03"));
  s.modules.push_back(Module("nv_peer_mem", false));
}

void AddHcas(NodeSnapshot& s, int hcas, bool roce) {
  s.infiniband_class_present = true;
  s.uverbs_class_present = true;
  s.dev_infiniband_present = true;
  s.dev_infiniband = {"rdma_cm"};
  for (int i = 0; i < hcas; ++i) {
    s.ib_devices.push_back(MakeHca(i, roce));
    s.pci_devices.push_back(
        {s.ib_devices.back().pci_bdf, 0x15b3, 0x101b, roce ? 0x020000u : 0x020700u});
    s.uverbs.push_back({"uverbs" + std::to_string(i), "mlx5_" + std::to_string(i)});
    s.dev_infiniband.push_back("uverbs" + std::to_string(i));
    s.dev_infiniband.push_back("umad" + std::to_string(i));
    if (roce) {
      const std::string ndev = "ens" + std::to_string(10 + i) + "np0";
      s.interfaces.push_back({ndev,
                              Have<std::string>("up", "sys/class/net/" + ndev + "/operstate"),
                              Have(1, "sys/class/net/" + ndev + "/type"),
                              Have(9000, "sys/class/net/" + ndev + "/mtu"),
                              {}});
    } else {
      const std::string ndev = "ib" + std::to_string(i);
      s.interfaces.push_back({ndev,
                              Have<std::string>("up", "sys/class/net/" + ndev + "/operstate"),
                              Have(32, "sys/class/net/" + ndev + "/type"),
                              Have(4092, "sys/class/net/" + ndev + "/mtu"),
                              {}});
    }
  }
  const std::string ofed = "5.8-3.0.7";
  for (const char* m : {"mlx_compat", "ib_core", "mlx5_core", "mlx5_ib", "ib_uverbs", "rdma_ucm"}) {
    s.modules.push_back(Module(m, true, ofed));
  }
}

}  // namespace

NodeSnapshot HealthyIbNode(int hcas) {
  NodeSnapshot s = CommonHost();
  AddGpus(s);
  AddHcas(s, hcas, false);
  return s;
}

NodeSnapshot HealthyRoceNode(int hcas) {
  NodeSnapshot s = CommonHost();
  AddGpus(s);
  AddHcas(s, hcas, true);
  return s;
}

NodeSnapshot BareNode() {
  NodeSnapshot s = CommonHost();
  s.pci_devices.push_back({"0000:00:03.0", 0x8086, 0x100e, 0x020000});
  for (const char* m : {"nvidia", "nvidia_peermem", "nv_peer_mem", "mlx_compat", "ib_core",
                        "mlx5_core", "mlx5_ib", "ib_uverbs", "rdma_ucm"}) {
    s.modules.push_back(Module(m, false));
  }
  s.nvidia_driver_version = Missing<std::string>("proc/driver/nvidia/version");
  return s;
}

namespace {
template <typename T>
void Spoil(Fact<T>& f) {
  f.value.reset();
  f.error = "unreadable: EIO";
}
}  // namespace

void MakeEveryFactUnreadable(NodeSnapshot& s) {
  Spoil(s.kernel_release);
  Spoil(s.arch);
  Spoil(s.hypervisor);
  Spoil(s.mem_total_bytes);
  Spoil(s.memlock);
  Spoil(s.nofile);
  Spoil(s.cap_eff);
  Spoil(s.seccomp_mode);
  Spoil(s.self_netns);
  Spoil(s.init_netns);
  Spoil(s.selinux_enforce);
  Spoil(s.apparmor_profile);
  Spoil(s.nvidia_driver_version);
  for (auto& d : s.ib_devices) {
    Spoil(d.node_type);
    Spoil(d.node_guid);
    Spoil(d.fw_ver);
    Spoil(d.hca_type);
    Spoil(d.board_id);
    for (auto& p : d.ports) {
      Spoil(p.state);
      Spoil(p.phys_state);
      Spoil(p.rate_gbps);
      Spoil(p.rate_text);
      Spoil(p.lid);
      Spoil(p.sm_lid);
      Spoil(p.sm_sl);
      Spoil(p.link_layer);
      Spoil(p.cap_mask);
      p.pkeys.clear();
      p.pkey_indices.clear();
      p.pkeys_error = "unreadable: EIO";
      for (auto& g : p.gids) g.type.clear();
      p.counters.clear();
      p.hw_counters.clear();
    }
  }
  for (auto& i : s.interfaces) {
    Spoil(i.operstate);
    Spoil(i.type);
    Spoil(i.mtu);
  }
  for (auto& u : s.uverbs) u.ibdev.clear();
}

Finding RunOne(CheckFn fn, const NodeSnapshot& s, const Config& c, const CheckContext& ctx) {
  return fn(s, c, ctx);
}

bool HasEvidenceFrom(const Finding& f, std::string_view source_part) {
  for (const auto& e : f.evidence) {
    if (e.source.find(source_part) != std::string::npos) return true;
  }
  return false;
}

}  // namespace nccl_triage::testing
