// ib.port_state: NCCL uses only ports that are ACTIVE with physical state LinkUp; any other port
// is a missing or broken link (cable, optic, switch port) or one the subnet manager left in INIT.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 150 (checks/check.h).
NT_HOST_CHECK(IbPortState, 150,
    CauseInfo{"ib.port_state", kIb, kHost, kNone, "Port state",
              "NCCL skips ports that are not ACTIVE with physical state LinkUp; a DOWN or "
              "POLLING port means no cable, a bad cable or optic, or a disabled switch port.",
              "Check the cable and transceiver (ibstat, mlxlink), the switch port, and that the "
              "subnet manager brought the port from INIT to ACTIVE.",
              "`ports/*/state`, `ports/*/phys_state`",
              "fail for any port that is not `4: ACTIVE` with `5: LinkUp`; warn for an HCA that "
              "lists no ports (`ports/` missing or empty), which would otherwise pass silently"});

Finding IbPortState(const NodeSnapshot& s, const Config&, const CheckContext&) {
  if (auto skip = SkipWithoutHcas(ids::kIbPortState, s)) return *skip;
  FindingBuilder b(ids::kIbPortState);
  std::vector<std::string> bad, unknown, portless;
  int total = 0;
  for (const auto& d : s.ib_devices) {
    if (d.ports.empty()) {
      // An HCA always has at least one port; none listed means its ports/ directory is missing
      // or empty, and "all ports ACTIVE" over the other HCAs would hide it.
      portless.push_back(d.name);
      b.Add(d.name + " ports", "none listed", "sys/class/infiniband/" + d.name + "/ports");
    }
    for (const auto& p : d.ports) {
      ++total;
      const std::string name = PortName(d, p);
      b.Add(name + " state", FactText(p.state), SourceOf(p.state, d, p, "state"));
      b.Add(name + " phys_state", FactText(p.phys_state),
            SourceOf(p.phys_state, d, p, "phys_state"));
      if (!p.state.ok() || !p.phys_state.ok()) {
        // A port that reads DOWN is still judged even if the other file failed.
        if ((p.state.ok() && !IsActive(p)) || (p.phys_state.ok() && !IsLinkUp(p))) {
          bad.push_back(name + " (" + FactText(p.state) + ", " + FactText(p.phys_state) + ")");
        } else {
          unknown.push_back(name);
        }
        continue;
      }
      if (!IsActive(p) || !IsLinkUp(p)) {
        bad.push_back(name + " (" + *p.state.value + ", " + *p.phys_state.value + ")");
      }
    }
  }
  const std::string no_ports = portless.empty()
                                   ? ""
                                   : std::to_string(portless.size()) + " HCA(s) list no ports (" +
                                         Join(portless) + ": ports/ missing or empty)";
  if (total == 0) return b.Warn(no_ports);
  if (!bad.empty()) {
    return b.Fail(std::to_string(bad.size()) + " of " + std::to_string(total) +
                  " port(s) not ACTIVE/LinkUp: " + Join(bad) +
                  (no_ports.empty() ? "" : "; " + no_ports));
  }
  if (unknown.size() == static_cast<size_t>(total) && portless.empty()) {
    return b.Skip("no port state could be read");
  }
  if (!unknown.empty() || !portless.empty()) {
    std::vector<std::string> parts;
    if (!portless.empty()) parts.push_back(no_ports);
    if (!unknown.empty()) parts.push_back("state of " + Join(unknown) + " unreadable");
    const int good = total - static_cast<int>(unknown.size());
    return b.Warn(
        Join(parts, "; ") +
        (good > 0 ? "; the other " + std::to_string(good) + " port(s) are ACTIVE/LinkUp" : ""));
  }
  return b.Pass("all " + std::to_string(total) + " port(s) ACTIVE and LinkUp");
}

}  // namespace nccl_triage::checks
