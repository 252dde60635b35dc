#include "host/gatherer.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "host/parsers.h"
#include "host/root_reader.h"
#include "host/snapshot_text.h"

namespace nccl_triage {
namespace {

constexpr size_t kMaxTextFactBytes = 4096;

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

bool Printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isprint(static_cast<unsigned char>(c)) || c == '\t';
  });
}

std::string Basename(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string JoinPath(std::string_view a, std::string_view b) {
  std::string out(a);
  out += '/';
  out += b;
  return out;
}

// One gathering: the reader (which counts the files it reads) and the snapshot being filled.
class Gathering {
 public:
  Gathering(const GatherOptions& options, RootReader& reader, NodeSnapshot& snap)
      : options_(options), reader_(reader), snap_(snap) {}

  void Run() {
    Node();
    Platform();
    Pci();
    Infiniband();
    Uverbs();
    DevInfiniband();
    Interfaces();
    Modules();
    Limits();
    ProcStatus();
    Mounts();
    Namespaces();
    Security();
    Nvidia();
    DeviceHolders();
  }

  // Reads a file and returns its trimmed text, or sets `error` ("missing", "empty", ...).
  std::optional<std::string> Text(const std::string& rel, std::string& error) {
    ReadResult r = reader_.ReadFile(rel);
    if (!r.ok()) {
      error = r.error;
      return std::nullopt;
    }
    std::string_view t = TrimText(*r.text);
    if (t.empty()) {
      error = "empty";
      return std::nullopt;
    }
    return std::string(t);
  }

  // A text fact: any printable value of at most a page, which is all a sysfs or proc attribute
  // can hold; a longer one is not what the kernel wrote (a 10 MB value must not go whole into
  // the report).
  Fact<std::string> TextFact(const std::string& rel) {
    Fact<std::string> f;
    f.source = rel;
    auto t = Text(rel, f.error);
    if (!t) return f;
    if (t->size() > kMaxTextFactBytes) {
      f.error = "too long: " + std::to_string(t->size()) + " bytes";
      return f;
    }
    if (!Printable(*t)) {
      f.error = UnparseableError(*t);
      return f;
    }
    f.value = std::move(*t);
    return f;
  }

  // A fact parsed from the text of one file.
  template <typename T, typename Parse>
  Fact<T> ParsedFact(const std::string& rel, Parse parse) {
    Fact<T> f;
    f.source = rel;
    auto t = Text(rel, f.error);
    if (!t) return f;
    auto v = parse(*t);
    if (!v) {
      f.error = UnparseableError(*t);
      return f;
    }
    f.value = static_cast<T>(*v);
    return f;
  }

  // A state line ("4: ACTIVE") kept as the kernel wrote it, validated by its parser.
  Fact<std::string> StateFact(const std::string& rel) {
    return ParsedFact<std::string>(rel, [](std::string_view t) -> std::optional<std::string> {
      if (!ParseNumberedState(t)) return std::nullopt;
      return std::string(t);
    });
  }

 private:
  void Node() {
    if (!options_.node_name.empty()) {
      snap_.node = options_.node_name;
      return;
    }
    std::string error;
    if (auto t = Text("proc/sys/kernel/hostname", error); t && Printable(*t)) snap_.node = *t;
  }

  void Platform() {
    snap_.kernel_release = TextFact("proc/sys/kernel/osrelease");
    snap_.arch = TextFact("proc/sys/kernel/arch");
    snap_.hypervisor = ParsedFact<bool>("proc/cpuinfo", ParseCpuinfoHypervisor);
    snap_.mem_total_bytes = ParsedFact<uint64_t>("proc/meminfo", ParseMeminfoTotal);
  }

  void Pci() {
    const std::string dir = "sys/bus/pci/devices";
    ListResult list = reader_.List(dir);
    if (!list.exists || !list.error.empty()) {
      snap_.pci_error = dir + ": " + (list.error.empty() ? "missing" : list.error);
      return;
    }
    // Zero-padded hex sorts as text ("0000:0c:00.0" before "0000:12:00.0"), not naturally.
    std::sort(list.names.begin(), list.names.end());
    std::vector<std::string> errors;
    for (const auto& bdf : list.names) {
      const std::string base = JoinPath(dir, bdf);
      std::string error;
      auto cls_text = Text(base + "/class", error);
      auto cls = cls_text ? ParseHexU32(*cls_text) : std::nullopt;
      if (!cls) {
        errors.push_back(base + "/class: " + (cls_text ? UnparseableError(*cls_text) : error));
        continue;
      }
      uint32_t base_class = (*cls >> 16) & 0xff;
      if (base_class != 0x02 && base_class != 0x03) continue;  // network and display only
      PciDevice d;
      d.bdf = bdf;
      d.class_code = *cls;
      for (auto [name, out] : {std::pair{"vendor", &d.vendor}, std::pair{"device", &d.device}}) {
        auto t = Text(base + "/" + name, error);
        auto v = t ? ParseHexU32(*t) : std::nullopt;
        if (!v || *v > 0xffff) {
          errors.push_back(base + "/" + name + ": " + (t ? UnparseableError(*t) : error));
          continue;
        }
        *out = static_cast<uint16_t>(*v);
      }
      // Its place in the PCIe tree, for pairing HCAs with GPUs (rails).
      if (ReadResult link = reader_.ReadLink(base); link.ok()) {
        if (auto p = ParsePciPath(*link.text, bdf)) {
          d.path = std::move(*p);
        } else {
          d.path_error = UnparseableError(*link.text);
        }
      } else {
        d.path_error = link.error;
      }
      d.numa_node = ParsedFact<int>(base + "/numa_node", ParseDecimalInt);
      snap_.pci_devices.push_back(std::move(d));
    }
    for (const auto& e : errors) {
      if (!snap_.pci_error.empty()) snap_.pci_error += "; ";
      snap_.pci_error += e;
    }
  }

  void Infiniband() {
    const std::string dir = "sys/class/infiniband";
    ListResult list = reader_.List(dir);
    snap_.infiniband_class_present = list.exists;
    for (const auto& name : list.names) {
      IbDevice dev;
      dev.name = name;
      const std::string base = JoinPath(dir, name);
      dev.node_type = StateFact(base + "/node_type");
      dev.node_guid = TextFact(base + "/node_guid");
      dev.fw_ver = TextFact(base + "/fw_ver");
      dev.hca_type = TextFact(base + "/hca_type");
      dev.board_id = TextFact(base + "/board_id");
      if (ReadResult link = reader_.ReadLink(base + "/device"); link.ok()) {
        dev.pci_bdf = Basename(*link.text);
      }
      ListResult ports = reader_.List(base + "/ports");
      for (const auto& port_name : ports.names) {
        auto num = ParseDecimalInt(port_name);
        if (!num) continue;
        dev.ports.push_back(Port(base + "/ports/" + port_name, *num));
      }
      snap_.ib_devices.push_back(std::move(dev));
    }
  }

  IbPort Port(const std::string& base, int num) {
    IbPort p;
    p.num = num;
    p.state = StateFact(base + "/state");
    p.phys_state = StateFact(base + "/phys_state");
    p.rate_text = TextFact(base + "/rate");
    p.rate_gbps.source = p.rate_text.source;
    if (p.rate_text.ok()) {
      if (auto r = ParseRate(*p.rate_text.value)) {
        p.rate_gbps.value = *r;
      } else {
        p.rate_gbps.error = UnparseableError(*p.rate_text.value);
      }
    } else {
      p.rate_gbps.error = p.rate_text.error;
    }
    p.lid = ParsedFact<uint32_t>(base + "/lid", ParseHexU32);
    p.sm_lid = ParsedFact<uint32_t>(base + "/sm_lid", ParseHexU32);
    p.sm_sl =
        ParsedFact<uint32_t>(base + "/sm_sl", [](std::string_view t) -> std::optional<uint32_t> {
          auto v = ParseDecimalU64(t);
          if (!v || *v > 15) return std::nullopt;
          return static_cast<uint32_t>(*v);
        });
    p.link_layer = TextFact(base + "/link_layer");
    p.cap_mask = ParsedFact<uint32_t>(base + "/cap_mask", ParseHexU32);
    Pkeys(base, p);
    Gids(base, p);
    Counters(base + "/counters", p.counters, p.counters_error);
    Counters(base + "/hw_counters", p.hw_counters, p.counters_error);
    return p;
  }

  void Pkeys(const std::string& base, IbPort& p) {
    ListResult list = reader_.List(base + "/pkeys");
    if (!list.exists || !list.error.empty()) {
      p.pkeys_error = "pkeys: " + (list.error.empty() ? "missing" : list.error);
      return;
    }
    for (const auto& idx : list.names) {
      auto index = ParseDecimalInt(idx);
      if (!index) continue;
      std::string error;
      auto t = Text(base + "/pkeys/" + idx, error);
      auto v = t ? ParsePkey(*t) : std::nullopt;
      if (!v) {
        if (p.pkeys_error.empty())
          p.pkeys_error = "pkeys/" + idx + ": " + (t ? UnparseableError(*t) : error);
        continue;
      }
      if (*v == 0) continue;  // an empty slot of the table
      p.pkeys.push_back(*v);
      p.pkey_indices.push_back(*index);
    }
  }

  void Gids(const std::string& base, IbPort& p) {
    ListResult list = reader_.List(base + "/gids");
    for (const auto& idx : list.names) {
      auto index = ParseDecimalInt(idx);
      if (!index) continue;
      std::string error;
      auto t = Text(base + "/gids/" + idx, error);
      auto gid = t ? ParseGid(*t) : std::nullopt;
      if (!gid || IsZeroGid(*gid)) continue;
      IbGid g;
      g.index = *index;
      g.gid = *gid;
      // The kernel refuses these reads (EINVAL) for empty GIDs and for ndevs on IB links; an
      // absent attribute stays empty.
      std::string ignored;
      if (auto type = Text(base + "/gid_attrs/types/" + idx, ignored); type && Printable(*type)) {
        g.type = *type;
      }
      if (auto ndev = Text(base + "/gid_attrs/ndevs/" + idx, ignored); ndev && Printable(*ndev)) {
        g.ndev = *ndev;
      }
      p.gids.push_back(std::move(g));
    }
  }

  void Counters(const std::string& dir, std::map<std::string, uint64_t>& out,
                std::string& error_out) {
    ListResult list = reader_.List(dir);
    for (const auto& name : list.names) {
      std::string error;
      auto t = Text(dir + "/" + name, error);
      auto v = t ? ParseDecimalU64(*t) : std::nullopt;
      if (!v) {
        if (error_out.empty()) {
          error_out = Basename(dir) + "/" + name + ": " + (t ? UnparseableError(*t) : error);
        }
        continue;
      }
      out[name] = *v;
    }
  }

  void Uverbs() {
    const std::string dir = "sys/class/infiniband_verbs";
    ListResult list = reader_.List(dir);
    snap_.uverbs_class_present = list.exists;
    for (const auto& name : list.names) {
      if (name.rfind("uverbs", 0) != 0 || !AllDigits(std::string_view(name).substr(6))) continue;
      UverbsDevice u;
      u.name = name;
      std::string error;
      if (auto t = Text(JoinPath(dir, name) + "/ibdev", error); t && Printable(*t)) u.ibdev = *t;
      snap_.uverbs.push_back(std::move(u));
    }
  }

  void DevInfiniband() {
    ListResult list = reader_.List("dev/infiniband");
    snap_.dev_infiniband_present = list.exists;
    snap_.dev_infiniband = list.names;
  }

  void Interfaces() {
    const std::string dir = "sys/class/net";
    ListResult list = reader_.List(dir);
    for (const auto& name : list.names) {
      const std::string base = JoinPath(dir, name);
      if (!reader_.IsDirectory(base)) continue;  // bonding_masters is a file
      NetInterface n;
      n.name = name;
      n.operstate = TextFact(base + "/operstate");
      n.type = ParsedFact<int>(base + "/type", ParseDecimalInt);
      n.mtu = ParsedFact<int>(base + "/mtu", ParseDecimalInt);
      snap_.interfaces.push_back(std::move(n));
    }
  }

  void Modules() {
    for (const auto& name : ModulesOfInterest()) {
      KernelModule m;
      m.name = name;
      m.source = "sys/module/" + name;
      m.loaded = reader_.IsDirectory(m.source);
      if (m.loaded) {
        std::string error;
        if (auto v = Text(m.source + "/version", error); v && Printable(*v)) m.version = *v;
      }
      snap_.modules.push_back(std::move(m));
    }
  }

  void Limits() {
    const std::string rel = "proc/self/limits";
    snap_.memlock.source = snap_.nofile.source = rel;
    std::string error;
    auto t = Text(rel, error);
    if (!t) {
      snap_.memlock.error = snap_.nofile.error = error;
      return;
    }
    auto rows = ParseLimits(*t);
    for (auto [key, fact] : {std::pair{"Max locked memory", &snap_.memlock},
                             std::pair{"Max open files", &snap_.nofile}}) {
      if (auto it = rows.find(key); it != rows.end()) {
        fact->value = it->second;
      } else {
        fact->error = UnparseableError(*t);
      }
    }
  }

  void ProcStatus() {
    const std::string rel = "proc/self/status";
    snap_.cap_eff.source = snap_.seccomp_mode.source = rel;
    std::string error;
    auto t = Text(rel, error);
    if (!t) {
      snap_.cap_eff.error = snap_.seccomp_mode.error = error;
      return;
    }
    if (auto v = ParseStatusCapEff(*t)) {
      snap_.cap_eff.value = *v;
    } else {
      snap_.cap_eff.error = UnparseableError(*t);
    }
    if (auto v = ParseStatusSeccomp(*t)) {
      snap_.seccomp_mode.value = *v;
    } else {
      snap_.seccomp_mode.error = UnparseableError(*t);
    }
  }

  void Mounts() {
    const std::string rel = "proc/self/mountinfo";
    std::string error;
    auto t = Text(rel, error);
    if (!t) {
      snap_.mounts_error = rel + ": " + error;
      return;
    }
    auto entries = ParseMountinfo(*t);
    if (entries.empty()) {
      snap_.mounts_error = rel + ": " + UnparseableError(*t);
      return;
    }
    for (auto& e : entries) {
      if (e.mount_point == "/dev/shm" || e.mount_point.rfind("/dev/infiniband", 0) == 0) {
        snap_.mounts.push_back(std::move(e));
      }
    }
  }

  Fact<std::string> LinkFact(const std::string& rel) {
    Fact<std::string> f;
    f.source = rel;
    ReadResult r = reader_.ReadLink(rel);
    if (!r.ok()) {
      f.error = r.error;
      return f;
    }
    if (auto v = ParseNamespaceLink(*r.text)) {
      f.value = *v;
    } else {
      f.error = UnparseableError(*r.text);
    }
    return f;
  }

  void Namespaces() {
    snap_.self_netns = LinkFact("proc/self/ns/net");
    snap_.init_netns = LinkFact("proc/1/ns/net");
  }

  void Security() {
    snap_.selinux_enforce = ParsedFact<int>("sys/fs/selinux/enforce", [](std::string_view t) {
      auto v = ParseDecimalInt(t);
      return v && (*v == 0 || *v == 1) ? v : std::nullopt;
    });
    snap_.apparmor_profile = TextFact("proc/self/attr/current");
  }

  void Nvidia() {
    snap_.nvidia_driver_version =
        ParsedFact<std::string>("proc/driver/nvidia/version", ParseNvidiaVersion);
    const std::string dir = "proc/driver/nvidia/gpus";
    ListResult gpus = reader_.List(dir);
    std::sort(gpus.names.begin(), gpus.names.end());  // hex bus ids sort as text
    for (const auto& bdf : gpus.names) {
      GpuInfo g;
      g.bdf = bdf;
      g.source = JoinPath(dir, bdf) + "/information";
      std::string error;
      if (auto t = Text(g.source, error)) {
        if (auto info = ParseNvidiaGpuInformation(*t); info && Printable(info->model)) {
          g.model = info->model;
          g.minor = info->minor.value_or(-1);
          if (Printable(info->uuid)) g.uuid = info->uuid;
        }
      }
      snap_.gpus.push_back(std::move(g));
    }
  }

  void DeviceHolders() {
    ListResult procs = reader_.List("proc");
    if (!procs.exists) {
      snap_.proc_scan_error = "proc: missing";
      return;
    }
    int unreadable = 0;
    std::string first_error;
    for (const auto& pid_name : procs.names) {
      if (!AllDigits(pid_name) || pid_name.size() > 9) continue;
      int pid = std::stoi(pid_name);
      if (pid == snap_.self_pid) continue;
      const std::string fd_dir = "proc/" + pid_name + "/fd";
      ListResult fds = reader_.List(fd_dir);
      if (!fds.error.empty()) {
        // A process that exited between the two listings is not an error.
        if (fds.error != "missing") {
          ++unreadable;
          if (first_error.empty()) first_error = fd_dir + ": " + fds.error;
        }
        continue;
      }
      std::vector<std::string> uverbs, gpus;
      for (const auto& fd : fds.names) {
        ReadResult link = reader_.ReadLink(fd_dir + "/" + fd, /*count=*/false);
        if (!link.ok()) continue;
        const std::string& target = *link.text;
        if (IsUverbsDevicePath(target)) {
          if (std::find(uverbs.begin(), uverbs.end(), target) == uverbs.end())
            uverbs.push_back(target);
        } else if (IsNvidiaGpuDevicePath(target)) {
          if (std::find(gpus.begin(), gpus.end(), target) == gpus.end()) gpus.push_back(target);
        }
      }
      if (uverbs.empty() && gpus.empty()) continue;
      std::string comm;
      std::string error;
      if (auto t = Text("proc/" + pid_name + "/comm", error); t && Printable(*t)) comm = *t;
      for (auto* list : {&uverbs, &gpus}) {
        std::sort(list->begin(), list->end(),
                  [](const auto& a, const auto& b) { return NaturalLess(a, b); });
      }
      for (const auto& d : uverbs) snap_.uverbs_holders.push_back({pid, comm, d});
      // Every CUDA process maps the driver library: a holder that does not is not using the GPU.
      bool cuda = false;
      if (!gpus.empty()) {
        ReadResult maps = reader_.ReadFile("proc/" + pid_name + "/maps");
        cuda = maps.ok() && maps.text->find("/libcuda.so") != std::string::npos;
      }
      for (const auto& d : gpus) snap_.gpu_holders.push_back({pid, comm, d, cuda});
    }
    if (unreadable > 0) {
      snap_.proc_scan_error =
          std::to_string(unreadable) + " process(es) not readable, first " + first_error;
    }
  }

  const GatherOptions& options_;
  RootReader& reader_;
  NodeSnapshot& snap_;
};

void GatherLive(const GatherOptions& options, bool root_is_host, NodeSnapshot& snap) {
  std::unique_ptr<VerbsProvider> real_verbs;
  VerbsProvider* verbs = options.verbs;
  if (verbs == nullptr && root_is_host) {
    real_verbs = MakeRealVerbsProvider();
    verbs = real_verbs.get();
  }
  std::unique_ptr<InterfaceAddressProvider> real_addresses;
  InterfaceAddressProvider* addresses = options.addresses;
  if (addresses == nullptr && root_is_host) {
    real_addresses = MakeRealInterfaceAddressProvider();
    addresses = real_addresses.get();
  }
  snap.live.gathered = true;
  if (verbs != nullptr) {
    auto devices = verbs->ListDevices();
    if (!devices.ok()) {
      snap.live.verbs_error = devices.status().message();
    } else if (devices->empty()) {
      snap.live.verbs_error = "libibverbs: no devices";
    } else {
      std::vector<std::string> errors;
      for (const auto& dev : *devices) {
        snap.live.verbs_devices.push_back(dev);
        auto ports = verbs->QueryPorts(dev);
        if (ports.ok()) {
          for (auto& p : *ports) snap.live.verbs_ports.push_back(std::move(p));
        } else {
          errors.push_back(ports.status().message());
          snap.live.verbs_device_errors.push_back({dev, ports.status().message()});
        }
        MrRegistration mr;
        mr.device = dev;
        mr.bytes = options.mr_register_bytes;
        ::nccl_triage::Status st = verbs->RegisterMemory(dev, options.mr_register_bytes);
        mr.ok = st.ok();
        mr.error = st.message();
        snap.live.mr_registrations.push_back(std::move(mr));
      }
      for (const auto& e : errors) {
        if (!snap.live.verbs_error.empty()) snap.live.verbs_error += "; ";
        snap.live.verbs_error += e;
      }
    }
  }
  if (addresses != nullptr) {
    auto addrs = addresses->Addresses();
    if (addrs.ok()) {
      for (auto& n : snap.interfaces) {
        if (auto it = addrs->find(n.name); it != addrs->end()) n.addresses = it->second;
      }
    }
  }
  // proc/sys/kernel/arch is missing on older kernels; the running host can still say.
  if (root_is_host && !snap.arch.ok()) {
    utsname u{};
    if (uname(&u) == 0) {
      snap.arch.value = u.machine;
      snap.arch.source = "live:uname";
      snap.arch.error.clear();
    }
  }
}

}  // namespace

const std::vector<std::string>& ModulesOfInterest() {
  static const std::vector<std::string> kModules = {
      "mlx_compat", "ib_core",        "ib_uverbs",   "ib_umad", "rdma_cm",
      "rdma_ucm",   "ib_ipoib",       "mlx5_core",   "mlx5_ib", "mlx4_core",
      "mlx4_ib",    "irdma",          "bnxt_re",     "efa",     "nvidia",
      "nvidia_uvm", "nvidia_peermem", "nv_peer_mem", "apparmor"};
  return kModules;
}

StatusOr<NodeSnapshot> GatherSnapshot(const GatherOptions& options) {
  RootReader reader(options.root);
  struct stat st {};
  if (::stat(reader.root().c_str(), &st) != 0) {
    return NotFound("root '" + options.root + "': " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode))
    return InvalidArgument("root '" + options.root + "' is not a directory");

  const bool root_is_host = reader.root() == "/";
  NodeSnapshot snap;
  snap.root = reader.root();
  snap.self_pid = options.self_pid.value_or(root_is_host ? static_cast<int>(::getpid()) : 0);
  snap.taken_at_unix_ms = options.now_unix_ms
                              ? options.now_unix_ms()
                              : std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();

  Gathering(options, reader, snap).Run();
  if (!reader.found_anything()) {
    // Not a node with missing facts but no node at all (an empty folder, a mount that did not
    // happen): "unknown" with exit 0 would read as "nothing wrong here".
    return NotFound(
        "root '" + options.root +
        "': nothing could be read (no sys/, proc/ or dev/ content); is it a node's root?");
  }
  if (root_is_host || options.verbs != nullptr || options.addresses != nullptr) {
    GatherLive(options, root_is_host, snap);
  }
  snap.files_read = reader.TakeFilesRead();
  // Last, so that files were read under their real names and every output sees text.
  EscapeSnapshotText(snap);
  return snap;
}

}  // namespace nccl_triage
