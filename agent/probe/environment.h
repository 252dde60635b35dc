// The environment of a probe child, built from scratch.
//
// NCCL reads its configuration from the environment once per process (NCCL_FACTS A1, B3), so the
// environment *is* the probe's configuration: the socket probe forces NCCL_NET=Socket and
// NCCL_IB_DISABLE=1, the IB probe forces NCCL_NET=IB (without it NCCL silently falls back to
// sockets), the intra-node probe leaves the network alone (NCCL picks P2P or SHM between the GPUs
// of one host) and only sets its variant's NCCL_P2P_LEVEL / NCCL_SHM_DISABLE. Nothing else leaks in
// from the agent's own environment: only a few essentials for the dynamic loader and GPU selection,
// the NCCL_* names the operator allow-lists (ProbeConfig::env_allowlist; any other name there is
// ignored), and the mode's variables, which are applied last so the allow-list cannot undo them.
// Pure functions, except ReadDefaultRouteInterface (reads <root>/proc/net/route).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/probe_result.h"

namespace nccl_triage {

struct ProbeEnvOptions {
  ProbeMode mode = ProbeMode::kSocket;
  std::string log_path;                      // NCCL_DEBUG_FILE
  std::optional<std::string> socket_ifname;  // NCCL_SOCKET_IFNAME (bootstrap, sockets, IB OOB)
  std::optional<std::string> ib_hca;         // NCCL_IB_HCA, IB mode only
  std::optional<std::string> hostid;         // NCCL_HOSTID: distinct per rank for a local pair
  int nranks = 2;
  // Intra-node variants: NCCL_P2P_LEVEL ("LOC": never P2P) and NCCL_SHM_DISABLE=1.
  std::optional<std::string> p2p_level;
  bool shm_disable = false;
};

// Copied from the parent when set. LD_LIBRARY_PATH: the loader's search for libcuda/libnccl (GPU
// containers put the driver's libraries there); PATH: conventional, harmless; CUDA_VISIBLE_DEVICES:
// the GPU selection the agent's container was given.
inline constexpr const char* kEssentialEnv[] = {"PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES"};

// The variables the mode sets, in a fixed order.
std::vector<std::pair<std::string, std::string>> ModeEnvironment(const ProbeEnvOptions& options);

// The child's whole environment as "NAME=value" entries.
std::vector<std::string> BuildChildEnvironment(const ProbeEnvOptions& options,
                                               const std::map<std::string, std::string>& parent,
                                               const std::vector<std::string>& allowlist);

// The interface of the default route (lowest metric) in /proc/net/route text, if any.
std::optional<std::string> DefaultRouteInterface(std::string_view proc_net_route);
std::optional<std::string> ReadDefaultRouteInterface(const std::string& root);

// A process environment (e.g. `environ`) as a map.
std::map<std::string, std::string> EnvironmentMap(char** env);

}  // namespace nccl_triage
