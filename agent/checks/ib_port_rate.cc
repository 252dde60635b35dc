// ib.port_rate: a port that negotiated a lower width or speed carries a fraction of the bandwidth.
// Judged against expect.rate_gbps when configured, otherwise against the fastest ACTIVE port of
// the same HCA type and link layer on this node (one degraded rail among eight stands out).
// Ports that are not ACTIVE are ib.port_state's business and are left out here.
#include <map>
#include <utility>

#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 160 (checks/check.h).
NT_HOST_CHECK(IbPortRate, 160,
    CauseInfo{"ib.port_rate", kIb, kHost, kSlowsIb, "Port rate",
              "A port that negotiated a lower width or speed (e.g. 4X to 1X, NDR to HDR) carries "
              "a fraction of the bandwidth and slows every ring through it.",
              "Reseat or replace the cable/optic, check the switch port's speed configuration "
              "and mlxlink for lane errors; compare with the other ports of the node.",
              "`ports/*/rate` of ACTIVE ports, `hca_type`, `link_layer`",
              "fail below `expect.rate_gbps`, or below the fastest port of the same HCA type and "
              "link layer"});

Finding IbPortRate(const NodeSnapshot& s, const Config& c, const CheckContext&) {
  if (auto skip = SkipWithoutHcas(ids::kIbPortRate, s)) return *skip;
  FindingBuilder b(ids::kIbPortRate);
  struct Judged {
    std::string name;
    std::string group;
    double gbps;
    std::string text;
  };
  std::vector<Judged> ports;
  std::vector<std::string> unknown;
  std::map<std::string, double> best;  // group -> highest rate
  for (const auto& d : s.ib_devices) {
    const std::string type = d.hca_type.ok() ? *d.hca_type.value : "unknown HCA type";
    for (const auto& p : d.ports) {
      if (!IsActive(p)) continue;
      const std::string name = PortName(d, p);
      b.Add(name + " rate", p.rate_text.ok() ? *p.rate_text.value : FactText(p.rate_gbps),
            SourceOf(p.rate_gbps, d, p, "rate"));
      if (!p.rate_gbps.ok()) {
        unknown.push_back(name);
        continue;
      }
      const std::string layer = p.link_layer.ok() ? *p.link_layer.value : "unknown link layer";
      const std::string group = type + " " + layer;
      ports.push_back({name, group, *p.rate_gbps.value,
                       p.rate_text.ok() ? *p.rate_text.value : FormatRate(*p.rate_gbps.value)});
      auto [it, inserted] = best.emplace(group, *p.rate_gbps.value);
      if (!inserted && *p.rate_gbps.value > it->second) it->second = *p.rate_gbps.value;
    }
  }
  if (ports.empty() && unknown.empty())
    return b.Skip("no ACTIVE port to judge (see ib.port_state)");
  if (ports.empty()) return b.Skip("the rate of the ACTIVE ports could not be read");

  std::vector<std::string> slow;
  if (c.expect.rate_gbps) {
    b.Add("expected rate", FormatRate(*c.expect.rate_gbps), "config: expect.rate_gbps");
    for (const auto& p : ports) {
      if (p.gbps + 1e-9 < *c.expect.rate_gbps) slow.push_back(p.name + " at " + p.text);
    }
    if (!slow.empty()) {
      return b.Fail(Join(slow) + ": below the expected " + FormatRate(*c.expect.rate_gbps));
    }
  } else {
    for (const auto& [group, rate] : best) {
      b.Add("fastest " + group + " port", FormatRate(rate), "derived from the ports above");
    }
    for (const auto& p : ports) {
      const double top = best[p.group];
      if (p.gbps + 1e-9 < top) slow.push_back(p.name + " at " + p.text + " vs " + FormatRate(top));
    }
    if (!slow.empty()) {
      return b.Fail(Join(slow) + ": slower than the other ports of the same HCA type");
    }
  }
  if (!unknown.empty()) {
    return b.Warn("rate of " + Join(unknown) + " unreadable; the other ports are at full rate");
  }
  if (best.size() == 1) {
    return b.Pass(std::to_string(ports.size()) + " ACTIVE port(s) at " +
                  FormatRate(best.begin()->second));
  }
  return b.Pass(std::to_string(ports.size()) + " ACTIVE port(s), each at its group's full rate");
}

}  // namespace nccl_triage::checks
