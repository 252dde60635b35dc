// ib.port_errors: link error counters. Absolute values accumulate since boot or the last clear,
// so they are evidence, not a verdict; with a previous snapshot of the same node the rate per hour
// is judged against expect.port_error_rate_per_hour. A counter that went down was cleared (or the
// node rebooted) and has no rate this time. In the agent, a port that flapped (core/port_history.h)
// stays failed until it has been stable for checks.flap_stable_seconds, then it is released.
#include <array>
#include <cmath>
#include <string_view>

#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 200 (checks/check.h).
NT_HOST_CHECK(IbPortErrors, 200,
    CauseInfo{"ib.port_errors", kIb, kHost, kSlowsIb, "Port error counters",
              "Rising link_downed, symbol_error, port_rcv_errors or buffer-overrun counters mean "
              "a flapping or lossy link that causes retries, timeouts and IB completion errors.",
              "Replace the cable/optic on the port with rising counters; check the switch side "
              "with ibqueryerrors; clear the counters after the fix and watch them.",
              "`ports/*/counters/{symbol_error,link_downed,port_rcv_errors,...}` now and in "
              "`--previous-snapshot`",
              "fail when a counter rises faster than `expect.port_error_rate_per_hour`, and (in "
              "the agent) while a port that flapped has not been stable for "
              "`checks.flap_stable_seconds`; warn for non-zero counts without a previous "
              "snapshot"});
namespace {

// The counters that count link faults (not congestion: port_xmit_discards and port_xmit_wait
// rise under load on a healthy fabric).
constexpr std::array<std::string_view, 10> kErrorCounters = {
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_rcv_constraint_errors",
    "port_xmit_constraint_errors",
};

std::string RateText(double per_hour) { return ToText(std::round(per_hour * 10) / 10) + "/h"; }

std::string Seconds(int64_t ms) { return std::to_string(ms / 1000) + " s"; }

// The agent's flap memory: ports held (flapped, not yet stable) and ports released, each with
// its reason in the evidence.
void JudgeFlaps(const NodeSnapshot& s, const PortHistory& h, FindingBuilder& b,
                std::vector<std::string>& held, std::vector<std::string>& released) {
  const std::string stable = Seconds(h.flap_stable_ms) + " (checks.flap_stable_seconds)";
  for (const auto& d : s.ib_devices) {
    for (const auto& p : d.ports) {
      const std::string name = PortName(d, p);
      const PortMemo* m = h.Find(name);
      if (m == nullptr || m->last_flap_unix_ms == 0) continue;
      const std::string ago = Seconds(h.now_unix_ms - m->last_flap_unix_ms) + " ago";
      if (h.Flapping(name)) {
        held.push_back(name + " (" + m->flap_reason + ", " + ago + ")");
        b.Add(name + " counted",
              "yes: flapped " + ago + " (" + m->flap_reason + "); held until stable for " + stable,
              "agent");
      } else {
        released.push_back(name);
        b.Add(name + " counted",
              "no: released, stable since it flapped " + ago + " (" + m->flap_reason +
                  "), at least " + stable,
              "agent");
      }
    }
  }
}

}  // namespace

Finding IbPortErrors(const NodeSnapshot& s, const Config& c, const CheckContext& ctx) {
  if (auto skip = SkipWithoutHcas(ids::kIbPortErrors, s)) return *skip;
  FindingBuilder b(ids::kIbPortErrors);
  const double limit = c.expect.port_error_rate_per_hour;

  // A previous snapshot counts only if it is of this node and older.
  const NodeSnapshot* prev = ctx.previous;
  double hours = 0;
  if (prev != nullptr) {
    if (prev->node != s.node) {
      b.Add("previous snapshot", "of node '" + prev->node + "', not '" + s.node + "': ignored",
            "--previous-snapshot");
      prev = nullptr;
    } else if (prev->taken_at_unix_ms >= s.taken_at_unix_ms) {
      b.Add("previous snapshot", "not older than this one: ignored", "--previous-snapshot");
      prev = nullptr;
    } else {
      hours = static_cast<double>(s.taken_at_unix_ms - prev->taken_at_unix_ms) / 3.6e6;
      b.Add("interval", ToText(std::round(hours * 3600)) + " s", "snapshot timestamps");
      b.Add("threshold", RateText(limit), "config: expect.port_error_rate_per_hour");
    }
  }

  int counters_seen = 0, nonzero = 0;
  std::vector<std::string> rising, reset, unreadable;
  for (const auto& d : s.ib_devices) {
    for (const auto& p : d.ports) {
      const std::string name = PortName(d, p);
      const IbPort* old = prev != nullptr ? FindPort(*prev, d.name, p.num) : nullptr;
      if (!p.counters_error.empty()) {
        b.Add(name + " counters", "partly unreadable (" + p.counters_error + ")",
              PortPath(d, p, "counters"));
      }
      for (std::string_view counter : kErrorCounters) {
        auto it = p.counters.find(std::string(counter));
        if (it == p.counters.end()) {
          // Not read: a counter that could not be looked at must not count as zero.
          if (!p.counters_error.empty()) unreadable.push_back(name + " " + std::string(counter));
          continue;
        }
        ++counters_seen;
        const std::string source = PortPath(d, p, "counters/" + std::string(counter));
        const uint64_t now = it->second;
        std::string text = std::to_string(now);
        bool changed = false;
        if (old != nullptr) {
          auto was = old->counters.find(it->first);
          if (was != old->counters.end() && now != was->second) {
            changed = true;
            if (now < was->second) {
              reset.push_back(name + " " + it->first);
              text += " (was " + std::to_string(was->second) + ": cleared)";
            } else {
              const double rate = static_cast<double>(now - was->second) / hours;
              text += " (+" + std::to_string(now - was->second) + ", " + RateText(rate) + ")";
              if (rate > limit) rising.push_back(name + " " + it->first + " " + RateText(rate));
            }
          }
        }
        if (now != 0) ++nonzero;
        if (now != 0 || changed) b.Add(name + " " + it->first, text, source);
      }
    }
  }
  if (counters_seen == 0) return b.Skip("no port error counter could be read");
  if (nonzero == 0)
    b.Add("error counters", "all " + std::to_string(counters_seen) + " zero",
          "sys/class/infiniband/*/ports/*/counters");
  std::vector<std::string> held, released;
  if (ctx.ports != nullptr) JudgeFlaps(s, *ctx.ports, b, held, released);
  const std::string released_text =
      released.empty() ? ""
                       : "; " + std::to_string(released.size()) +
                             " port(s) released after flapping: " + Join(released);
  if (!rising.empty()) {
    return b.Fail("error counters rising faster than " + RateText(limit) + ": " + Join(rising));
  }
  if (!held.empty()) {
    return b.Fail(std::to_string(held.size()) + " port(s) flapped and not yet stable for " +
                  Seconds(ctx.ports->flap_stable_ms) + ": " + Join(held));
  }
  if (!unreadable.empty()) {
    return b.Warn(std::to_string(unreadable.size()) + " error counter(s) unreadable (" +
                  Join(unreadable) + "): the readable ones say nothing about those");
  }
  if (prev != nullptr) {
    return b.Pass("no error counter rising faster than " + RateText(limit) +
                  (reset.empty()
                       ? std::string()
                       : " (" + std::to_string(reset.size()) + " counter(s) were cleared)") +
                  released_text);
  }
  if (nonzero > 0) {
    return b.Warn(std::to_string(nonzero) +
                  " non-zero error counter(s) since boot or the last clear; a rate needs a "
                  "previous snapshot (--previous-snapshot)");
  }
  return b.Pass("all " + std::to_string(counters_seen) + " link error counters are zero");
}

}  // namespace nccl_triage::checks
