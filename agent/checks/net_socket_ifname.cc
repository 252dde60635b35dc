// net.socket_ifname: when NCCL_SOCKET_IFNAME is set, NCCL uses only the interfaces it names for
// bootstrap, the socket transport and the IB out-of-band connection ("find or fail"). NCCL's
// list syntax (core/nccl_device_list.h): name prefixes, '^' for exclusions, '=' for exact names.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"
#include "core/nccl_device_list.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 120 (checks/check.h).
NT_HOST_CHECK(NetSocketIfname, 120,
    CauseInfo{"net.socket_ifname", kArch, kHost, kInContainers, "NCCL_SOCKET_IFNAME interface",
              "NCCL_SOCKET_IFNAME names the only interfaces NCCL may use for bootstrap and "
              "sockets; if none exists or is up, NCCL fails in both socket and IB mode.",
              "Set NCCL_SOCKET_IFNAME to an interface present and up on every node (prefix "
              "match: `eth`, exact: `=eth0`), or unset it.",
              "`expect.socket_ifname` with NCCL's syntax (prefixes, `^` exclude, `=` exact), "
              "`sys/class/net/*/operstate`, addresses on the live node",
              "skip unless configured; fail when no interface matches, all matches are down, or "
              "(live) none has an address"});
namespace {

bool IsUp(const NetInterface& i) {
  return i.operstate.ok() && (*i.operstate.value == "up" || *i.operstate.value == "unknown");
}

}  // namespace

Finding NetSocketIfname(const NodeSnapshot& s, const Config& c, const CheckContext&) {
  FindingBuilder b(ids::kNetSocketIfname);
  if (!c.expect.socket_ifname) {
    b.Add("expect.socket_ifname", "unset", "config");
    return b.Skip("expect.socket_ifname is not configured");
  }
  const std::string& value = *c.expect.socket_ifname;
  b.Add("NCCL_SOCKET_IFNAME", value, "config: expect.socket_ifname");
  const NcclDeviceList spec = ParseNcclDeviceList(value);
  if (spec.entries.empty()) return b.Fail("'" + value + "' names no interface");

  std::vector<const NetInterface*> matched;
  for (const auto& i : s.interfaces) {
    if (NcclDeviceListSelects(spec, i.name)) matched.push_back(&i);
  }
  if (matched.empty()) {
    std::vector<std::string> all;
    for (const auto& i : s.interfaces) all.push_back(i.name);
    b.Add("interfaces", all.empty() ? "none" : Join(all), "sys/class/net");
    return b.Fail("no interface matches NCCL_SOCKET_IFNAME='" + value + "'");
  }
  std::vector<std::string> up, with_address;
  for (const auto* i : matched) {
    std::string text = FactText(i->operstate);
    if (s.live.gathered) text += i->addresses.empty() ? ", no address" : ", " + Join(i->addresses);
    b.Add(i->name, text,
          i->operstate.source.empty() ? "sys/class/net/" + i->name + "/operstate"
                                      : i->operstate.source);
    if (IsUp(*i)) {
      up.push_back(i->name);
      if (!i->addresses.empty()) with_address.push_back(i->name);
    }
  }
  if (up.empty()) {
    bool any_unreadable = false;
    for (const auto* i : matched) any_unreadable |= !i->operstate.ok();
    if (any_unreadable) return b.Skip("the state of the matching interfaces could not be read");
    return b.Fail("every interface matching '" + value + "' is down");
  }
  if (!s.live.gathered) {
    return b.Pass(Join(up) + " up (addresses are checked on the live node only)");
  }
  if (with_address.empty()) {
    return b.Fail(Join(up) + " up but without an IP address: NCCL finds no usable interface");
  }
  return b.Pass(Join(with_address) + " up with an address");
}

}  // namespace nccl_triage::checks
