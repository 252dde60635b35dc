#include "core/snapshot_json.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

namespace nccl_triage {
namespace {

using json = nlohmann::json;

// ---- writing ----

json LimitJson(const Limit& l) { return {{"unlimited", l.unlimited}, {"value", l.value}}; }
json LimitPairJson(const LimitPair& p) {
  return {{"soft", LimitJson(p.soft)}, {"hard", LimitJson(p.hard)}};
}

template <typename T>
json ValueJson(const T& v) {
  if constexpr (std::is_same_v<T, LimitPair>) {
    return LimitPairJson(v);
  } else {
    return json(v);
  }
}

template <typename T>
json FactJson(const Fact<T>& f) {
  return {{"value", f.value ? ValueJson(*f.value) : json(nullptr)},
          {"source", f.source},
          {"error", f.error}};
}

json PortJson(const IbPort& p) {
  json gids = json::array();
  for (const auto& g : p.gids) {
    gids.push_back({{"index", g.index}, {"gid", g.gid}, {"type", g.type}, {"ndev", g.ndev}});
  }
  return {{"num", p.num},
          {"state", FactJson(p.state)},
          {"phys_state", FactJson(p.phys_state)},
          {"rate_gbps", FactJson(p.rate_gbps)},
          {"rate_text", FactJson(p.rate_text)},
          {"lid", FactJson(p.lid)},
          {"sm_lid", FactJson(p.sm_lid)},
          {"sm_sl", FactJson(p.sm_sl)},
          {"link_layer", FactJson(p.link_layer)},
          {"cap_mask", FactJson(p.cap_mask)},
          {"pkeys", p.pkeys},
          {"pkey_indices", p.pkey_indices},
          {"pkeys_error", p.pkeys_error},
          {"gids", gids},
          {"counters", p.counters},
          {"hw_counters", p.hw_counters},
          {"counters_error", p.counters_error}};
}

json DeviceJson(const IbDevice& d) {
  json ports = json::array();
  for (const auto& p : d.ports) ports.push_back(PortJson(p));
  return {{"name", d.name},
          {"node_type", FactJson(d.node_type)},
          {"node_guid", FactJson(d.node_guid)},
          {"fw_ver", FactJson(d.fw_ver)},
          {"hca_type", FactJson(d.hca_type)},
          {"board_id", FactJson(d.board_id)},
          {"pci_bdf", d.pci_bdf},
          {"ports", ports}};
}

json HoldersJson(const std::vector<DeviceHolder>& hs) {
  json out = json::array();
  for (const auto& h : hs) {
    out.push_back(
        {{"pid", h.pid}, {"comm", h.comm}, {"device", h.device}, {"cuda_context", h.cuda_context}});
  }
  return out;
}

// ---- reading ----

// Thrown inside this file only; SnapshotFromJson turns it into a Status.
struct BadShape {
  std::string message;
};

[[noreturn]] void Fail(const std::string& path, const std::string& why) {
  throw BadShape{path + ": " + why};
}

void Read(const json& v, const std::string& path, std::string& out) {
  if (!v.is_string()) Fail(path, "expected a string");
  out = v.get<std::string>();
}

void Read(const json& v, const std::string& path, bool& out) {
  if (!v.is_boolean()) Fail(path, "expected true or false");
  out = v.get<bool>();
}

void Read(const json& v, const std::string& path, double& out) {
  if (!v.is_number()) Fail(path, "expected a number");
  out = v.get<double>();
}

template <typename T>
requires std::is_integral_v<T>
void Read(const json& v, const std::string& path, T& out) {
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) Fail(path, "number out of range");
    out = static_cast<T>(u);
  } else if (v.is_number_integer()) {
    auto i = v.get<int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (i < 0) Fail(path, "number out of range");
      if (static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
        Fail(path, "number out of range");
      }
    } else {
      if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          i > static_cast<int64_t>(std::numeric_limits<T>::max())) {
        Fail(path, "number out of range");
      }
    }
    out = static_cast<T>(i);
  } else {
    Fail(path, "expected an integer");
  }
}

// Declared before the templates below so that their dependent calls find every overload.
void Read(const json& v, const std::string& path, Limit& out);
void Read(const json& v, const std::string& path, LimitPair& out);
void Read(const json& v, const std::string& path, IbGid& g);
void Read(const json& v, const std::string& path, IbPort& p);
void Read(const json& v, const std::string& path, IbDevice& d);
void Read(const json& v, const std::string& path, PciDevice& d);
void Read(const json& v, const std::string& path, UverbsDevice& u);
void Read(const json& v, const std::string& path, NetInterface& n);
void Read(const json& v, const std::string& path, KernelModule& m);
void Read(const json& v, const std::string& path, MountEntry& m);
void Read(const json& v, const std::string& path, GpuInfo& g);
void Read(const json& v, const std::string& path, GpuAllocation& a);
void Read(const json& v, const std::string& path, DeviceHolder& h);
void Read(const json& v, const std::string& path, MrRegistration& m);
void Read(const json& v, const std::string& path, VerbsPort& p);
void Read(const json& v, const std::string& path, VerbsDeviceError& e);
void Read(const json& v, const std::string& path, LiveFacts& l);
template <typename T>
void Read(const json& v, const std::string& path, Fact<T>& out);

template <typename T>
void Read(const json& v, const std::string& path, std::vector<T>& out) {
  if (!v.is_array()) Fail(path, "expected an array");
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    T item{};
    Read(v[i], path + "[" + std::to_string(i) + "]", item);
    out.push_back(std::move(item));
  }
}

template <typename T>
void Read(const json& v, const std::string& path, std::map<std::string, T>& out) {
  if (!v.is_object()) Fail(path, "expected an object");
  out.clear();
  for (const auto& [k, item] : v.items()) Read(item, path + "." + k, out[k]);
}

// Reads `key` of object `obj` when present (absent keys keep their default).
template <typename T>
void Field(const json& obj, const std::string& path, const char* key, T& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return;
  Read(*it, path + "." + key, out);
}

const json& Object(const json& v, const std::string& path) {
  if (!v.is_object()) Fail(path, "expected an object");
  return v;
}

void Read(const json& v, const std::string& path, Limit& out) {
  Object(v, path);
  Field(v, path, "unlimited", out.unlimited);
  Field(v, path, "value", out.value);
}

void Read(const json& v, const std::string& path, LimitPair& out) {
  Object(v, path);
  Field(v, path, "soft", out.soft);
  Field(v, path, "hard", out.hard);
}

template <typename T>
void Read(const json& v, const std::string& path, Fact<T>& out) {
  Object(v, path);
  if (auto it = v.find("value"); it != v.end() && !it->is_null()) {
    T value{};
    Read(*it, path + ".value", value);
    out.value = std::move(value);
  }
  Field(v, path, "source", out.source);
  Field(v, path, "error", out.error);
}

void Read(const json& v, const std::string& path, IbGid& g) {
  Object(v, path);
  Field(v, path, "index", g.index);
  Field(v, path, "gid", g.gid);
  Field(v, path, "type", g.type);
  Field(v, path, "ndev", g.ndev);
}

void Read(const json& v, const std::string& path, IbPort& p) {
  Object(v, path);
  Field(v, path, "num", p.num);
  Field(v, path, "state", p.state);
  Field(v, path, "phys_state", p.phys_state);
  Field(v, path, "rate_gbps", p.rate_gbps);
  Field(v, path, "rate_text", p.rate_text);
  Field(v, path, "lid", p.lid);
  Field(v, path, "sm_lid", p.sm_lid);
  Field(v, path, "sm_sl", p.sm_sl);
  Field(v, path, "link_layer", p.link_layer);
  Field(v, path, "cap_mask", p.cap_mask);
  Field(v, path, "pkeys", p.pkeys);
  Field(v, path, "pkey_indices", p.pkey_indices);
  Field(v, path, "pkeys_error", p.pkeys_error);
  Field(v, path, "gids", p.gids);
  Field(v, path, "counters", p.counters);
  Field(v, path, "hw_counters", p.hw_counters);
  Field(v, path, "counters_error", p.counters_error);
}

void Read(const json& v, const std::string& path, IbDevice& d) {
  Object(v, path);
  Field(v, path, "name", d.name);
  Field(v, path, "node_type", d.node_type);
  Field(v, path, "node_guid", d.node_guid);
  Field(v, path, "fw_ver", d.fw_ver);
  Field(v, path, "hca_type", d.hca_type);
  Field(v, path, "board_id", d.board_id);
  Field(v, path, "pci_bdf", d.pci_bdf);
  Field(v, path, "ports", d.ports);
}

void Read(const json& v, const std::string& path, PciDevice& d) {
  Object(v, path);
  Field(v, path, "bdf", d.bdf);
  Field(v, path, "vendor", d.vendor);
  Field(v, path, "device", d.device);
  Field(v, path, "class", d.class_code);
  Field(v, path, "path", d.path);
  Field(v, path, "path_error", d.path_error);
  Field(v, path, "numa_node", d.numa_node);
}

void Read(const json& v, const std::string& path, UverbsDevice& u) {
  Object(v, path);
  Field(v, path, "name", u.name);
  Field(v, path, "ibdev", u.ibdev);
}

void Read(const json& v, const std::string& path, NetInterface& n) {
  Object(v, path);
  Field(v, path, "name", n.name);
  Field(v, path, "operstate", n.operstate);
  Field(v, path, "type", n.type);
  Field(v, path, "mtu", n.mtu);
  Field(v, path, "addresses", n.addresses);
}

void Read(const json& v, const std::string& path, KernelModule& m) {
  Object(v, path);
  Field(v, path, "name", m.name);
  Field(v, path, "loaded", m.loaded);
  Field(v, path, "version", m.version);
  Field(v, path, "source", m.source);
}

void Read(const json& v, const std::string& path, MountEntry& m) {
  Object(v, path);
  Field(v, path, "mount_point", m.mount_point);
  Field(v, path, "fs_type", m.fs_type);
  Field(v, path, "source", m.source);
  Field(v, path, "super_options", m.super_options);
}

void Read(const json& v, const std::string& path, GpuInfo& g) {
  Object(v, path);
  Field(v, path, "bdf", g.bdf);
  Field(v, path, "model", g.model);
  Field(v, path, "minor", g.minor);
  Field(v, path, "uuid", g.uuid);
  Field(v, path, "source", g.source);
}

void Read(const json& v, const std::string& path, GpuAllocation& a) {
  Object(v, path);
  Field(v, path, "owner", a.owner);
  Field(v, path, "resource", a.resource);
  Field(v, path, "device_id", a.device_id);
}

void Read(const json& v, const std::string& path, DeviceHolder& h) {
  Object(v, path);
  Field(v, path, "pid", h.pid);
  Field(v, path, "comm", h.comm);
  Field(v, path, "device", h.device);
  Field(v, path, "cuda_context", h.cuda_context);
}

void Read(const json& v, const std::string& path, MrRegistration& m) {
  Object(v, path);
  Field(v, path, "device", m.device);
  Field(v, path, "bytes", m.bytes);
  Field(v, path, "ok", m.ok);
  Field(v, path, "error", m.error);
}

void Read(const json& v, const std::string& path, VerbsPort& p) {
  Object(v, path);
  Field(v, path, "device", p.device);
  Field(v, path, "port", p.port);
  Field(v, path, "state", p.state);
  Field(v, path, "active_mtu", p.active_mtu);
  Field(v, path, "gid_table_len", p.gid_table_len);
  Field(v, path, "pkey_table_len", p.pkey_table_len);
  Field(v, path, "link_layer", p.link_layer);
}

void Read(const json& v, const std::string& path, VerbsDeviceError& e) {
  Object(v, path);
  Field(v, path, "device", e.device);
  Field(v, path, "error", e.error);
}

void Read(const json& v, const std::string& path, LiveFacts& l) {
  Object(v, path);
  Field(v, path, "gathered", l.gathered);
  Field(v, path, "verbs_error", l.verbs_error);
  Field(v, path, "verbs_devices", l.verbs_devices);
  Field(v, path, "verbs_ports", l.verbs_ports);
  Field(v, path, "verbs_device_errors", l.verbs_device_errors);
  Field(v, path, "mr_registrations", l.mr_registrations);
}

}  // namespace

json ToJson(const NodeSnapshot& s) {
  json pci = json::array();
  for (const auto& d : s.pci_devices) {
    pci.push_back({{"bdf", d.bdf},
                   {"vendor", d.vendor},
                   {"device", d.device},
                   {"class", d.class_code},
                   {"path", d.path},
                   {"path_error", d.path_error},
                   {"numa_node", FactJson(d.numa_node)}});
  }
  json ib = json::array();
  for (const auto& d : s.ib_devices) ib.push_back(DeviceJson(d));
  json uverbs = json::array();
  for (const auto& u : s.uverbs) uverbs.push_back({{"name", u.name}, {"ibdev", u.ibdev}});
  json ifs = json::array();
  for (const auto& n : s.interfaces) {
    ifs.push_back({{"name", n.name},
                   {"operstate", FactJson(n.operstate)},
                   {"type", FactJson(n.type)},
                   {"mtu", FactJson(n.mtu)},
                   {"addresses", n.addresses}});
  }
  json modules = json::array();
  for (const auto& m : s.modules) {
    modules.push_back(
        {{"name", m.name}, {"loaded", m.loaded}, {"version", m.version}, {"source", m.source}});
  }
  json mounts = json::array();
  for (const auto& m : s.mounts) {
    mounts.push_back({{"mount_point", m.mount_point},
                      {"fs_type", m.fs_type},
                      {"source", m.source},
                      {"super_options", m.super_options}});
  }
  json gpus = json::array();
  for (const auto& g : s.gpus)
    gpus.push_back({{"bdf", g.bdf},
                    {"model", g.model},
                    {"minor", g.minor},
                    {"uuid", g.uuid},
                    {"source", g.source}});
  json allocations = nullptr;
  if (s.gpu_allocations) {
    allocations = json::array();
    for (const auto& a : *s.gpu_allocations) {
      allocations.push_back(
          {{"owner", a.owner}, {"resource", a.resource}, {"device_id", a.device_id}});
    }
  }
  json verbs_ports = json::array();
  for (const auto& p : s.live.verbs_ports) {
    verbs_ports.push_back({{"device", p.device},
                           {"port", p.port},
                           {"state", p.state},
                           {"active_mtu", p.active_mtu},
                           {"gid_table_len", p.gid_table_len},
                           {"pkey_table_len", p.pkey_table_len},
                           {"link_layer", p.link_layer}});
  }
  json mrs = json::array();
  for (const auto& m : s.live.mr_registrations) {
    mrs.push_back({{"device", m.device}, {"bytes", m.bytes}, {"ok", m.ok}, {"error", m.error}});
  }
  json device_errors = json::array();
  for (const auto& e : s.live.verbs_device_errors) {
    device_errors.push_back({{"device", e.device}, {"error", e.error}});
  }
  json live = {{"gathered", s.live.gathered},           {"verbs_error", s.live.verbs_error},
               {"verbs_devices", s.live.verbs_devices}, {"verbs_ports", verbs_ports},
               {"verbs_device_errors", device_errors},  {"mr_registrations", mrs}};
  return {{"schema", s.schema},
          {"node", s.node},
          {"root", s.root},
          {"taken_at_unix_ms", s.taken_at_unix_ms},
          {"self_pid", s.self_pid},
          {"kernel_release", FactJson(s.kernel_release)},
          {"arch", FactJson(s.arch)},
          {"hypervisor", FactJson(s.hypervisor)},
          {"mem_total_bytes", FactJson(s.mem_total_bytes)},
          {"boot_id", FactJson(s.boot_id)},
          {"boot_time_unix_s", FactJson(s.boot_time_unix_s)},
          {"pci_devices", pci},
          {"pci_error", s.pci_error},
          {"infiniband_class_present", s.infiniband_class_present},
          {"ib_devices", ib},
          {"uverbs_class_present", s.uverbs_class_present},
          {"uverbs", uverbs},
          {"dev_infiniband_present", s.dev_infiniband_present},
          {"dev_infiniband", s.dev_infiniband},
          {"interfaces", ifs},
          {"modules", modules},
          {"memlock", FactJson(s.memlock)},
          {"nofile", FactJson(s.nofile)},
          {"cap_eff", FactJson(s.cap_eff)},
          {"seccomp_mode", FactJson(s.seccomp_mode)},
          {"mounts", mounts},
          {"mounts_error", s.mounts_error},
          {"self_netns", FactJson(s.self_netns)},
          {"init_netns", FactJson(s.init_netns)},
          {"selinux_enforce", FactJson(s.selinux_enforce)},
          {"apparmor_profile", FactJson(s.apparmor_profile)},
          {"nvidia_driver_version", FactJson(s.nvidia_driver_version)},
          {"gpus", gpus},
          {"uverbs_holders", HoldersJson(s.uverbs_holders)},
          {"gpu_holders", HoldersJson(s.gpu_holders)},
          {"proc_scan_error", s.proc_scan_error},
          {"gpu_allocations", allocations},
          {"gpu_allocations_error", s.gpu_allocations_error},
          {"live", live},
          {"files_read", s.files_read}};
}

StatusOr<NodeSnapshot> SnapshotFromJson(const json& j) {
  NodeSnapshot s;
  const std::string p = "snapshot";
  try {
    Object(j, p);
    // Required: every other field may be absent (it then reads as missing), so without this "{}"
    // or any JSON object would pass as a snapshot in which nothing could be read.
    if (!j.contains("schema")) {
      return InvalidArgument("snapshot: no 'schema' field; expected " +
                             std::string(kNodeSnapshotSchema) + " (a --dump-snapshot file)");
    }
    Field(j, p, "schema", s.schema);
    if (s.schema != kNodeSnapshotSchema) {
      return InvalidArgument("snapshot: schema '" + s.schema + "' is not " + kNodeSnapshotSchema);
    }
    Field(j, p, "node", s.node);
    Field(j, p, "root", s.root);
    Field(j, p, "taken_at_unix_ms", s.taken_at_unix_ms);
    Field(j, p, "self_pid", s.self_pid);
    Field(j, p, "kernel_release", s.kernel_release);
    Field(j, p, "arch", s.arch);
    Field(j, p, "hypervisor", s.hypervisor);
    Field(j, p, "mem_total_bytes", s.mem_total_bytes);
    Field(j, p, "boot_id", s.boot_id);
    Field(j, p, "boot_time_unix_s", s.boot_time_unix_s);
    Field(j, p, "pci_devices", s.pci_devices);
    Field(j, p, "pci_error", s.pci_error);
    Field(j, p, "infiniband_class_present", s.infiniband_class_present);
    Field(j, p, "ib_devices", s.ib_devices);
    Field(j, p, "uverbs_class_present", s.uverbs_class_present);
    Field(j, p, "uverbs", s.uverbs);
    Field(j, p, "dev_infiniband_present", s.dev_infiniband_present);
    Field(j, p, "dev_infiniband", s.dev_infiniband);
    Field(j, p, "interfaces", s.interfaces);
    Field(j, p, "modules", s.modules);
    Field(j, p, "memlock", s.memlock);
    Field(j, p, "nofile", s.nofile);
    Field(j, p, "cap_eff", s.cap_eff);
    Field(j, p, "seccomp_mode", s.seccomp_mode);
    Field(j, p, "mounts", s.mounts);
    Field(j, p, "mounts_error", s.mounts_error);
    Field(j, p, "self_netns", s.self_netns);
    Field(j, p, "init_netns", s.init_netns);
    Field(j, p, "selinux_enforce", s.selinux_enforce);
    Field(j, p, "apparmor_profile", s.apparmor_profile);
    Field(j, p, "nvidia_driver_version", s.nvidia_driver_version);
    Field(j, p, "gpus", s.gpus);
    Field(j, p, "uverbs_holders", s.uverbs_holders);
    Field(j, p, "gpu_holders", s.gpu_holders);
    Field(j, p, "proc_scan_error", s.proc_scan_error);
    if (auto it = j.find("gpu_allocations"); it != j.end() && !it->is_null()) {
      Read(*it, p + ".gpu_allocations", s.gpu_allocations.emplace());
    }
    Field(j, p, "gpu_allocations_error", s.gpu_allocations_error);
    Field(j, p, "live", s.live);
    Field(j, p, "files_read", s.files_read);
  } catch (const BadShape& e) {
    return InvalidArgument(e.message);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("snapshot: ") + e.what());
  }
  return s;
}

}  // namespace nccl_triage
