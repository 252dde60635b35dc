// ib.port_state: NCCL uses only ports that are ACTIVE with physical state LinkUp; any other port
// is a missing or broken link (cable, optic, switch port) or one the subnet manager left in INIT.
// On the agent's first poll after it started (or after a reboot) a port may still be training, so
// a DOWN port counts there only with evidence that it should be up (EvidenceItShouldBeUp); without
// it the port warns until the next poll confirms it.
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
              "fail for any port that is not `4: ACTIVE` with `5: LinkUp` (on the agent's first "
              "poll after it started, only with evidence the port should be up: seen up earlier "
              "in this boot, a sibling port up, or `expect.rate_gbps`/`expect.hcas` set; else "
              "warn until the next poll); warn for an HCA that lists no ports (`ports/` missing "
              "or empty), which would otherwise pass silently"});
namespace {

bool Up(const IbPort& p) {
  return p.state.ok() && p.phys_state.ok() && IsActive(p) && IsLinkUp(p);
}

bool SameText(const Fact<std::string>& a, const Fact<std::string>& b) {
  return a.ok() && b.ok() && *a.value == *b.value;
}

// Why a port that is not up on the agent's first poll should be up, or "" when nothing says so:
// it was seen up earlier in this boot, a sibling port is up (another port of the same HCA, or of
// the same HCA type and link layer: it came up through the same driver, firmware and fabric), or
// the configuration (the node's pool or the top-level expect) declares the node's HCAs or rate.
std::string EvidenceItShouldBeUp(const NodeSnapshot& s, const Config& c, const PortHistory& h,
                                 const IbDevice& dev, const IbPort& port) {
  const std::string name = PortName(dev, port);
  if (const PortMemo* m = h.Find(name); m != nullptr && m->seen_up) {
    return "seen ACTIVE/LinkUp earlier in this boot";
  }
  for (const auto& d : s.ib_devices) {
    for (const auto& p : d.ports) {
      if (&p == &port || !Up(p)) continue;
      const bool same_hca = d.name == dev.name;
      const bool same_kind =
          SameText(d.hca_type, dev.hca_type) && SameText(p.link_layer, port.link_layer);
      if (same_hca || same_kind) {
        return "sibling port " + PortName(d, p) +
               (same_hca ? " of the same HCA" : " of the same HCA type and link layer") +
               " is ACTIVE/LinkUp";
      }
    }
  }
  if (c.expect.rate_gbps) {
    return "the configuration expects every port at " + FormatRate(*c.expect.rate_gbps) +
           " (expect.rate_gbps)";
  }
  if (c.expect.hcas) {
    return "the configuration expects " + std::to_string(*c.expect.hcas) + " HCA(s) (expect.hcas)";
  }
  return "";
}

}  // namespace

Finding IbPortState(const NodeSnapshot& s, const Config& c, const CheckContext& ctx) {
  if (auto skip = SkipWithoutHcas(ids::kIbPortState, s)) return *skip;
  FindingBuilder b(ids::kIbPortState);
  std::vector<std::string> bad, unknown, portless, deferred;
  // A port that is not up: counted, or (the agent's first poll, nothing saying it should be up)
  // deferred to the next poll. Either way the evidence says why.
  auto judge_bad = [&](const IbDevice& d, const IbPort& p, std::string text) {
    const std::string name = PortName(d, p);
    if (ctx.ports == nullptr) {
      b.Add(name + " counted", "yes: a one-shot check keeps no poll history", "check");
      bad.push_back(std::move(text));
      return;
    }
    if (!ctx.ports->first_poll) {
      b.Add(name + " counted", "yes: not the agent's first poll in this boot", "agent");
      bad.push_back(std::move(text));
      return;
    }
    const std::string why = EvidenceItShouldBeUp(s, c, *ctx.ports, d, p);
    if (!why.empty()) {
      b.Add(name + " counted", "yes: first poll after the agent started, but " + why, "agent");
      bad.push_back(std::move(text));
      return;
    }
    b.Add(name + " counted",
          "no: first poll after the agent started (or the node booted), and nothing says it "
          "should be up yet (not seen up in this boot, no sibling port up, no expect.rate_gbps "
          "or expect.hcas); the next poll confirms it",
          "agent");
    deferred.push_back(std::move(text));
  };
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
          judge_bad(d, p, name + " (" + FactText(p.state) + ", " + FactText(p.phys_state) + ")");
        } else {
          unknown.push_back(name);
        }
        continue;
      }
      if (!IsActive(p) || !IsLinkUp(p)) {
        judge_bad(d, p, name + " (" + *p.state.value + ", " + *p.phys_state.value + ")");
      }
    }
  }
  const std::string no_ports = portless.empty()
                                   ? ""
                                   : std::to_string(portless.size()) + " HCA(s) list no ports (" +
                                         Join(portless) + ": ports/ missing or empty)";
  const std::string not_counted =
      deferred.empty() ? ""
                       : std::to_string(deferred.size()) +
                             " port(s) not ACTIVE/LinkUp on the agent's first poll, not counted "
                             "until the next poll confirms them: " +
                             Join(deferred);
  if (total == 0) return b.Warn(no_ports);
  if (!bad.empty()) {
    return b.Fail(std::to_string(bad.size()) + " of " + std::to_string(total) +
                  " port(s) not ACTIVE/LinkUp: " + Join(bad) +
                  (no_ports.empty() ? "" : "; " + no_ports) +
                  (not_counted.empty() ? "" : "; " + not_counted));
  }
  if (unknown.size() == static_cast<size_t>(total) && portless.empty()) {
    return b.Skip("no port state could be read");
  }
  if (!unknown.empty() || !portless.empty() || !deferred.empty()) {
    std::vector<std::string> parts;
    if (!not_counted.empty()) parts.push_back(not_counted);
    if (!portless.empty()) parts.push_back(no_ports);
    if (!unknown.empty()) parts.push_back("state of " + Join(unknown) + " unreadable");
    const int good = total - static_cast<int>(unknown.size() + deferred.size());
    return b.Warn(
        Join(parts, "; ") +
        (good > 0 ? "; the other " + std::to_string(good) + " port(s) are ACTIVE/LinkUp" : ""));
  }
  return b.Pass("all " + std::to_string(total) + " port(s) ACTIVE and LinkUp");
}

}  // namespace nccl_triage::checks
