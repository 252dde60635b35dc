// ib.port_state: NCCL uses only ports that are ACTIVE with physical state LinkUp; any other port
// is a missing or broken link (cable, optic, switch port) or one the subnet manager left in INIT.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

Finding IbPortState(const NodeSnapshot& s, const Config&, const CheckContext&) {
  if (auto skip = SkipWithoutHcas(ids::kIbPortState, s)) return *skip;
  FindingBuilder b(ids::kIbPortState);
  std::vector<std::string> bad, unknown;
  int total = 0;
  for (const auto& d : s.ib_devices) {
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
  if (total == 0) return b.Skip("the HCAs list no ports");
  if (!bad.empty()) {
    return b.Fail(std::to_string(bad.size()) + " of " + std::to_string(total) +
                  " port(s) not ACTIVE/LinkUp: " + Join(bad));
  }
  if (unknown.size() == static_cast<size_t>(total)) {
    return b.Skip("no port state could be read");
  }
  if (!unknown.empty()) {
    return b.Warn("state of " + Join(unknown) + " unreadable; the other ports are ACTIVE/LinkUp");
  }
  return b.Pass("all " + std::to_string(total) + " port(s) ACTIVE and LinkUp");
}

}  // namespace nccl_triage::checks
