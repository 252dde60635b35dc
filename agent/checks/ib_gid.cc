// ib.gid: on RoCE ports NCCL needs a RoCE v2 GID that carries an IP address (the GID table
// follows the netdev's addresses); a configured NCCL_IB_GID_INDEX (expect.ib_gid_index) must
// point at such an entry. InfiniBand ports use GID index 0 and are not judged.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 190 (checks/check.h).
NT_HOST_CHECK(IbGid, 190,
    CauseInfo{"ib.gid", kIb, kHost, kInContainers, "RoCE GID",
              "On RoCE, NCCL needs a RoCE v2 GID with an IP address; a missing GID or an "
              "NCCL_IB_GID_INDEX that points to a v1 or empty entry breaks QP setup.",
              "Give the RDMA netdev an IP address (the GID table follows), and leave "
              "NCCL_IB_GID_INDEX unset on NCCL >= 2.21 or set it to a RoCE v2 entry (show_gids).",
              "`ports/*/gids/*`, `gid_attrs/types/*`, `gid_attrs/ndevs/*` of RoCE ports",
              "fail without any RoCE v2 GID, or when `expect.ib_gid_index` is empty or not RoCE "
              "v2; warn for link-local RoCE v2 GIDs only"});
namespace {

// The struct nccl_triage::IbGid is spelled in full: the check function below shares its name.

bool IsRoceV2(const nccl_triage::IbGid& g) { return g.type.find("v2") != std::string::npos; }

// fe80::/10 GIDs are derived from the MAC and exist without any address configured.
bool IsLinkLocal(const nccl_triage::IbGid& g) { return g.gid.rfind("fe80:", 0) == 0; }

std::string GidText(const nccl_triage::IbGid& g) {
  std::string t = g.gid + " " + (g.type.empty() ? "type unreadable" : g.type);
  if (!g.ndev.empty()) t += " " + g.ndev;
  return t;
}

}  // namespace

Finding IbGid(const NodeSnapshot& s, const Config& c, const CheckContext&) {
  if (auto skip = SkipWithoutHcas(ids::kIbGid, s)) return *skip;
  FindingBuilder b(ids::kIbGid);
  const std::optional<int> want = c.expect.ib_gid_index;
  if (want) b.Add("NCCL_IB_GID_INDEX", std::to_string(*want), "config: expect.ib_gid_index");

  int roce_ports = 0, unreadable = 0;
  std::vector<std::string> fail, warn, good;
  for (const auto& d : s.ib_devices) {
    for (const auto& p : d.ports) {
      if (!IsEthernetLinkLayer(p)) continue;
      ++roce_ports;
      const std::string name = PortName(d, p);
      const std::string source = PortPath(d, p, "gids");
      bool any_type = false, v2_routable = false, v2_link_local = false;
      for (const auto& g : p.gids) {
        any_type |= !g.type.empty();
        if (IsRoceV2(g)) (IsLinkLocal(g) ? v2_link_local : v2_routable) = true;
      }
      if (want) {
        const nccl_triage::IbGid* entry = nullptr;
        for (const auto& g : p.gids) {
          if (g.index == *want) entry = &g;
        }
        if (entry == nullptr) {
          b.Add(name + " gid " + std::to_string(*want), "absent", source);
          fail.push_back(name + ": GID index " + std::to_string(*want) + " is empty");
        } else {
          b.Add(name + " gid " + std::to_string(*want), GidText(*entry),
                PortPath(d, p, "gid_attrs/types/" + std::to_string(*want)));
          if (entry->type.empty()) {
            ++unreadable;
            warn.push_back(name + ": type of GID index " + std::to_string(*want) + " unreadable");
          } else if (!IsRoceV2(*entry)) {
            fail.push_back(name + ": GID index " + std::to_string(*want) + " is " + entry->type +
                           ", not RoCE v2");
          } else {
            good.push_back(name);
          }
        }
        continue;
      }
      std::vector<std::string> v2;
      for (const auto& g : p.gids) {
        if (IsRoceV2(g)) v2.push_back(std::to_string(g.index) + ": " + g.gid);
      }
      b.Add(name + " RoCE v2 GIDs", v2.empty() ? "none" : Join(v2), source);
      if (p.gids.empty()) {
        ++unreadable;
        warn.push_back(name + ": no GID entry could be read");
      } else if (!any_type) {
        ++unreadable;
        warn.push_back(name + ": GID types unreadable");
      } else if (v2_routable) {
        good.push_back(name);
      } else if (v2_link_local) {
        warn.push_back(name + ": only link-local RoCE v2 GIDs (the netdev has no IP address)");
      } else {
        fail.push_back(name + ": no RoCE v2 GID");
      }
    }
  }
  if (roce_ports == 0) {
    AddLinkLayers(b, s);
    return b.Skip("no RoCE (Ethernet link-layer) port; InfiniBand ports use GID index 0");
  }
  if (!fail.empty()) return b.Fail(Join(fail, "; "));
  if (unreadable == roce_ports) {
    return b.Skip("the GID tables could not be read");
  }
  if (!warn.empty()) return b.Warn(Join(warn, "; "));
  if (want) {
    return b.Pass("GID index " + std::to_string(*want) + " is RoCE v2 on all " +
                  std::to_string(roce_ports) + " RoCE port(s)");
  }
  return b.Pass("a RoCE v2 GID with an IP address on all " + std::to_string(roce_ports) +
                " RoCE port(s)");
}

}  // namespace nccl_triage::checks
