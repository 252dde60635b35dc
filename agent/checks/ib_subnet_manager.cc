// ib.subnet_manager: on an InfiniBand link layer, a port with a physical link but LID 0 or SM
// LID 0 has not been configured by a subnet manager. RoCE ports have no subnet manager.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 170 (checks/check.h).
NT_HOST_CHECK(IbSubnetManager, 170,
    CauseInfo{"ib.subnet_manager", kIb, kHost, kNone, "Subnet manager",
              "On an InfiniBand link layer a port without a LID or SM LID has not been "
              "configured by a subnet manager and stays in INIT; nothing can be routed to it.",
              "Start or fail over the subnet manager (opensm or the switch/UFM SM) and check it "
              "sees this port (sminfo, ibstat SM lid).",
              "`ports/*/{lid,sm_lid}` of InfiniBand ports with a physical link",
              "fail when lid or sm_lid is 0; skip on RoCE"});
namespace {
std::string Lid(const Fact<uint32_t>& f) {
  return f.ok() ? "0x" + HexDigits(*f.value, 1) : FactText(f);
}
}  // namespace

Finding IbSubnetManager(const NodeSnapshot& s, const Config&, const CheckContext&) {
  if (auto skip = SkipWithoutHcas(ids::kIbSubnetManager, s)) return *skip;
  FindingBuilder b(ids::kIbSubnetManager);
  int ib_ports = 0, judged = 0;
  std::vector<std::string> unconfigured, unknown;
  std::vector<uint32_t> sm_lids;
  for (const auto& d : s.ib_devices) {
    for (const auto& p : d.ports) {
      if (!IsInfiniBandLinkLayer(p)) continue;
      ++ib_ports;
      if (!IsLinkUp(p)) continue;  // no physical link: the SM cannot reach it (ib.port_state)
      ++judged;
      const std::string name = PortName(d, p);
      b.Add(name + " lid", Lid(p.lid), SourceOf(p.lid, d, p, "lid"));
      b.Add(name + " sm_lid", Lid(p.sm_lid), SourceOf(p.sm_lid, d, p, "sm_lid"));
      if ((p.lid.ok() && *p.lid.value == 0) || (p.sm_lid.ok() && *p.sm_lid.value == 0)) {
        unconfigured.push_back(name + " (lid " + Lid(p.lid) + ", sm_lid " + Lid(p.sm_lid) + ")");
      } else if (!p.lid.ok() || !p.sm_lid.ok()) {
        unknown.push_back(name);
      } else {
        sm_lids.push_back(*p.sm_lid.value);
      }
    }
  }
  if (ib_ports == 0) {
    AddLinkLayers(b, s);
    return b.Skip("no InfiniBand link-layer port (RoCE ports need no subnet manager)");
  }
  if (judged == 0) {
    return b.Skip("no InfiniBand port has a physical link (see ib.port_state)");
  }
  if (!unconfigured.empty()) {
    return b.Fail(Join(unconfigured) + ": no subnet manager has configured the port");
  }
  if (!unknown.empty()) {
    if (sm_lids.empty()) return b.Skip("the LIDs of the linked ports could not be read");
    return b.Warn("LIDs of " + Join(unknown) + " unreadable; the other ports see a subnet manager");
  }
  return b.Pass("a subnet manager (SM LID " + Lid(Fact<uint32_t>{sm_lids.front(), "", ""}) +
                ") has configured all " + std::to_string(judged) + " linked InfiniBand port(s)");
}

}  // namespace nccl_triage::checks
