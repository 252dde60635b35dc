// A node snapshot with every field away from its default, values at the edges of their types and
// the error strings a fixture never produces: the golden JSON texts are written from it and the
// round trip is checked on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/snapshot.h"

namespace nccl_triage::testing {

inline NodeSnapshot RichSnapshot() {
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

}  // namespace nccl_triage::testing
