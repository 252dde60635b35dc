#include "workload/nccl_env.h"

#include <algorithm>

#include "base/text.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::workload {
namespace {

std::optional<std::string> Get(const std::map<std::string, std::string>& env, const char* key) {
  auto it = env.find(key);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

std::string UverbsIbdev(const NodeSnapshot& host, std::string_view uverbs) {
  for (const auto& u : host.uverbs) {
    if (u.name == uverbs) return u.ibdev;
  }
  return "";
}

}  // namespace

NcclSettings NcclSettingsFrom(const std::map<std::string, std::string>& env) {
  NcclSettings s;
  s.ib_disable = Get(env, "NCCL_IB_DISABLE");
  s.net = Get(env, "NCCL_NET");
  s.socket_ifname = Get(env, "NCCL_SOCKET_IFNAME");
  s.ib_hca = Get(env, "NCCL_IB_HCA");
  s.ib_gid_index = Get(env, "NCCL_IB_GID_INDEX");
  return s;
}

std::vector<const IbDevice*> OpenableDevices(const NodeSnapshot& host,
                                             const std::vector<std::string>& container_dev_ib) {
  std::vector<std::string> ibdevs;
  for (const auto& entry : container_dev_ib) {
    if (entry.starts_with("uverbs")) {
      std::string ibdev = UverbsIbdev(host, entry);
      if (!ibdev.empty()) ibdevs.push_back(ibdev);
    }
  }
  std::vector<const IbDevice*> out;
  for (const auto& dev : host.ib_devices) {
    if (ibdevs.empty() || std::find(ibdevs.begin(), ibdevs.end(), dev.name) != ibdevs.end()) {
      out.push_back(&dev);
    }
  }
  return out;
}

Finding EnvIbDisable(const NcclSettings& settings, const NodeSnapshot& host,
                     std::string_view env_source) {
  checks::FindingBuilder b(ids::kEnvIbDisable);
  std::string source(env_source);
  b.Add("NCCL_IB_DISABLE", settings.ib_disable.value_or("(unset)"), source);
  if (settings.net) b.Add("NCCL_NET", *settings.net, source);
  std::vector<std::string> hcas;
  for (const auto& d : host.ib_devices) hcas.push_back(d.name);
  b.Add("host RDMA devices", hcas.empty() ? "none" : Join(hcas), "sys/class/infiniband");

  bool disabled = false;
  if (settings.ib_disable) {
    auto v = ParseNcclInt(*settings.ib_disable);
    disabled = v.has_value() && *v != 0;
  }
  bool net_socket = settings.net && EqualsIgnoringAsciiCase(*settings.net, "Socket");
  if (hcas.empty()) {
    return b.Pass("no RDMA devices on this node: sockets are the only network path");
  }
  if (disabled) {
    return b.Warn("NCCL_IB_DISABLE=" + *settings.ib_disable +
                  " keeps NCCL on TCP sockets although "
                  "the node has " +
                  std::to_string(hcas.size()) + " RDMA device(s)");
  }
  if (net_socket) {
    return b.Warn("NCCL_NET=" + *settings.net + " forces TCP sockets although the node has " +
                  std::to_string(hcas.size()) + " RDMA device(s)");
  }
  return b.Pass("NCCL may use the node's RDMA devices");
}

Finding EnvIbHca(const NcclSettings& settings, const NodeSnapshot& host,
                 const std::vector<std::string>& container_dev_ib, std::string_view env_source) {
  checks::FindingBuilder b(ids::kEnvIbHca);
  std::string source(env_source);
  b.Add("NCCL_IB_HCA", settings.ib_hca.value_or("(unset)"), source);
  if (host.ib_devices.empty()) {
    return b.Skip("no RDMA devices on this node");
  }
  auto openable = OpenableDevices(host, container_dev_ib);
  std::vector<std::string> names;
  for (const auto* d : openable) names.push_back(d->name);
  b.Add("devices the container can open", Join(names),
        "proc/<pid>/root/dev/infiniband, sys/class/infiniband_verbs");
  if (!settings.ib_hca) return b.Pass("NCCL_IB_HCA unset: NCCL uses every device it can open");
  const NcclDeviceList filter = ParseNcclDeviceList(*settings.ib_hca);
  if (filter.entries.empty()) return b.Pass("NCCL_IB_HCA is empty: treated as unset");

  std::vector<std::string> selected;
  for (const auto* d : openable) {
    for (const auto& p : d->ports) {
      if (NcclDeviceListSelects(filter, d->name, p.num)) {
        selected.push_back(d->name + ":" + std::to_string(p.num));
      }
    }
  }
  b.Add("ports selected", selected.empty() ? "none" : Join(selected), "NCCL_IB_HCA");
  if (selected.empty()) {
    return b.Fail("NCCL_IB_HCA=" + *settings.ib_hca + " selects none of the devices the " +
                  "container can open (" + Join(names) + "): NCCL finds no IB device");
  }
  if (!filter.exclude) {
    std::vector<std::string> absent;
    for (const auto& e : filter.entries) {
      NcclDeviceList one{false, filter.exact, {e}};
      bool any = false;
      for (const auto* d : openable) {
        for (const auto& p : d->ports) any = any || NcclDeviceListSelects(one, d->name, p.num);
      }
      if (!any) absent.push_back(e.port ? e.name + ":" + std::to_string(*e.port) : e.name);
    }
    if (!absent.empty()) {
      return b.Warn("NCCL_IB_HCA names device(s) the container cannot open: " +
                    Join(absent) + " (NCCL uses the others)");
    }
  }
  return b.Pass("NCCL_IB_HCA selects " + std::to_string(selected.size()) + " port(s)");
}

}  // namespace nccl_triage::workload
