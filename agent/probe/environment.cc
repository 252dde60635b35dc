#include "probe/environment.h"

#include <limits>
#include <sstream>

#include "base/files.h"
#include "core/env_names.h"

namespace nccl_triage {

std::vector<std::pair<std::string, std::string>> ModeEnvironment(const ProbeEnvOptions& o) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"NCCL_DEBUG", "INFO"},
      // INIT has the channel lines ("via NET/IB"), NET the IB device and plugin lines.
      {"NCCL_DEBUG_SUBSYS", "INIT,NET"},
      {"NCCL_DEBUG_FILE", o.log_path},
      // NVLink SHARP multicast can take a shared host's GPUs out of service; never used here.
      {"NCCL_NVLS_ENABLE", "0"},
  };
  // Two ranks: measure the network with one ring rather than whatever the tuner prefers.
  if (o.nranks == 2) env.emplace_back("NCCL_ALGO", "Ring");
  if (o.hostid) env.emplace_back("NCCL_HOSTID", *o.hostid);
  if (o.socket_ifname) env.emplace_back("NCCL_SOCKET_IFNAME", *o.socket_ifname);
  if (o.mode == ProbeMode::kIntraNode) {
    if (o.p2p_level) env.emplace_back("NCCL_P2P_LEVEL", *o.p2p_level);
    if (o.shm_disable) env.emplace_back("NCCL_SHM_DISABLE", "1");
  } else if (o.mode == ProbeMode::kSocket) {
    env.emplace_back("NCCL_NET", "Socket");
    env.emplace_back("NCCL_IB_DISABLE", "1");
  } else {
    env.emplace_back("NCCL_NET", "IB");
    env.emplace_back("NCCL_IB_DISABLE", "0");
    if (o.ib_hca) env.emplace_back("NCCL_IB_HCA", *o.ib_hca);
  }
  return env;
}

std::vector<std::string> BuildChildEnvironment(const ProbeEnvOptions& options,
                                               const std::map<std::string, std::string>& parent,
                                               const std::vector<std::string>& allowlist) {
  std::map<std::string, std::string> env;
  for (const char* name : kEssentialEnv) {
    auto it = parent.find(name);
    if (it != parent.end()) env[name] = it->second;
  }
  for (const auto& name : allowlist) {
    // Only NCCL_* names, whatever the caller passed: the config loader refuses others, and this
    // keeps a command-line --env-allow from handing the agent's credentials to the child.
    if (!IsNcclVariableName(name)) continue;
    auto it = parent.find(name);
    if (it != parent.end()) env[name] = it->second;
  }
  for (auto& [k, v] : ModeEnvironment(options)) env[k] = v;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::optional<std::string> DefaultRouteInterface(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  std::getline(in, line);  // header
  std::optional<std::string> best;
  unsigned long best_metric = std::numeric_limits<unsigned long>::max();
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string iface, dest, gateway, flags, refcnt, use, metric, mask;
    if (!(fields >> iface >> dest >> gateway >> flags >> refcnt >> use >> metric >> mask)) continue;
    unsigned long flag_bits = 0, metric_value = 0;
    try {
      flag_bits = std::stoul(flags, nullptr, 16);
      metric_value = std::stoul(metric);
    } catch (const std::exception&) {
      continue;
    }
    constexpr unsigned long kRtfUp = 0x1;
    if (dest != "00000000" || mask != "00000000" || (flag_bits & kRtfUp) == 0) continue;
    if (!best || metric_value < best_metric) {
      best = iface;
      best_metric = metric_value;
    }
  }
  return best;
}

std::optional<std::string> ReadDefaultRouteInterface(const std::string& root) {
  std::string base = root.empty() || root == "/" ? "" : root;
  auto text = ReadWholeFile(base + "/proc/net/route", "route table", 1u << 20);
  if (!text.ok()) return std::nullopt;
  return DefaultRouteInterface(*text);
}

std::map<std::string, std::string> EnvironmentMap(char** env) {
  std::map<std::string, std::string> out;
  for (char** e = env; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    out.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return out;
}

}  // namespace nccl_triage
