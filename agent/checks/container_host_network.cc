// container.host_network: our network namespace (proc/self/ns/net) against the host's
// (proc/1/ns/net, meaningful with hostPID). In a private namespace NCCL sees only the interfaces
// given to it: RoCE needs the HCA's netdevs there (a secondary network), InfiniBand verbs work
// without netdevs as long as /dev/infiniband is passed in.
#include <algorithm>

#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 40 (checks/check.h).
NT_HOST_CHECK(ContainerHostNetwork, 40,
    CauseInfo{"container.host_network", kArch, kHost, kInContainers, "Host network namespace",
              "In a private network namespace NCCL cannot see the host's IB netdevs, RoCE GIDs "
              "and IPoIB addresses; bootstrap and the IB out-of-band socket pick the wrong "
              "interface.",
              "Run the pod with hostNetwork: true (and dnsPolicy: ClusterFirstWithHostNet), or "
              "attach the RDMA interfaces with a secondary network (Multus + SR-IOV/macvlan).",
              "`proc/self/ns/net` vs `proc/1/ns/net`, interfaces in `sys/class/net`, RoCE GID "
              "netdevs",
              "fail in a private namespace that lacks the RoCE netdevs; warn in a private "
              "namespace where IB verbs or attached RoCE netdevs still work"});
namespace {

constexpr int kArphrdInfiniband = 32;

bool HasInterface(const NodeSnapshot& s, const std::string& name) {
  for (const auto& i : s.interfaces) {
    if (i.name == name) return true;
  }
  return false;
}

}  // namespace

Finding ContainerHostNetwork(const NodeSnapshot& s, const Config&, const CheckContext&) {
  FindingBuilder b(ids::kContainerHostNetwork);
  b.AddFact("this process", s.self_netns, "proc/self/ns/net");
  b.AddFact("host (pid 1)", s.init_netns, "proc/1/ns/net");
  if (!s.self_netns.ok() || !s.init_netns.ok()) {
    return b.Skip("the network namespaces could not be compared");
  }
  if (*s.self_netns.value == *s.init_netns.value) return b.Pass("host network namespace");

  // Private namespace: what of the RDMA fabric is reachable from here?
  std::vector<std::string> rdma_netdevs, roce_missing;
  bool roce = false, ib = false;
  for (const auto& i : s.interfaces) {
    if (i.type.ok() && *i.type.value == kArphrdInfiniband) rdma_netdevs.push_back(i.name);
  }
  for (const auto& d : s.ib_devices) {
    for (const auto& p : d.ports) {
      ib |= IsInfiniBandLinkLayer(p);
      if (!IsEthernetLinkLayer(p)) continue;
      roce = true;
      bool attached = false;
      for (const auto& g : p.gids) {
        if (!g.ndev.empty() && HasInterface(s, g.ndev)) {
          attached = true;
          if (std::find(rdma_netdevs.begin(), rdma_netdevs.end(), g.ndev) == rdma_netdevs.end()) {
            rdma_netdevs.push_back(g.ndev);
          }
        }
      }
      if (!attached) roce_missing.push_back(PortName(d, p));
    }
  }
  if (!rdma_netdevs.empty()) {
    b.Add("RDMA interfaces in this namespace", Join(rdma_netdevs), "sys/class/net");
  }
  if (!HasRdmaHardware(s)) {
    return b.Warn(
        "private network namespace; no RDMA hardware, so NCCL can only use the pod "
        "network over sockets");
  }
  if (roce && !roce_missing.empty()) {
    return b.Fail("private network namespace without the RoCE netdevs of " + Join(roce_missing) +
                  ": NCCL cannot use their GIDs");
  }
  if (roce) {
    return b.Warn("private network namespace with the RoCE interfaces attached (" +
                  Join(rdma_netdevs) + "); check NCCL_SOCKET_IFNAME picks a routed interface");
  }
  if (ib) {
    return b.Warn(
        "private network namespace: InfiniBand verbs work through /dev/infiniband, but "
        "bootstrap and the IB out-of-band socket use the pod network");
  }
  return b.Fail("private network namespace and the HCAs' interfaces are not in it");
}

}  // namespace nccl_triage::checks
