#include "kernel/kernel_judge.h"

#include <algorithm>
#include <array>
#include <set>

#include "base/log.h"
#include "core/ids.h"
#include "kernel/xid_table.h"

namespace nccl_triage::kernel {
namespace {

constexpr std::array kKernelIds = {ids::kKernelLinkFlap, ids::kKernelCableModule,
                                   ids::kKernelHcaAer,   ids::kKernelGpuAer,
                                   ids::kKernelXid,      ids::kKernelGpuOffBus};
constexpr size_t kMaxEvidenceLines = 5;
constexpr int64_t kHourUsec = 3'600'000'000;

Finding Make(CauseId id, CheckStatus status, std::string message) {
  return MakeFinding(id, status, std::move(message));
}

void AddLines(Finding* f, const std::vector<const KernelEvent*>& events,
              const std::string& source) {
  const size_t n = events.size();
  for (size_t i = 0; i < n; ++i) {
    // The first lines and the last: how it started and where it stands.
    if (n > kMaxEvidenceLines && i >= kMaxEvidenceLines - 1 && i + 1 < n) continue;
    f->evidence.push_back({"kernel log", events[i]->line, source});
  }
  if (n > kMaxEvidenceLines) {
    f->evidence.push_back({"kernel log lines", std::to_string(n), source});
  }
  // The wall time of the latest event that has one (lines without a time carry none).
  std::optional<int64_t> last;
  for (const KernelEvent* e : events) {
    if (e->wall_ms && (!last || *e->wall_ms > *last)) last = e->wall_ms;
  }
  if (last) f->evidence.push_back({std::string(kLastEventAtKey), FormatRfc3339(*last), source});
}

// Bus ids compare on their common prefix: an Xid names "0000:44:00", a device "0000:44:00.0".
bool SameBus(const std::string& event_pci, const std::string& device_bdf) {
  if (event_pci.empty()) return false;
  const size_t n = std::min(event_pci.size(), device_bdf.size());
  return event_pci.compare(0, n, device_bdf, 0, n) == 0 && n >= 10;
}

bool AnyOf(const std::vector<std::string>& bdfs, const std::string& pci) {
  return std::any_of(bdfs.begin(), bdfs.end(), [&](const auto& b) { return SameBus(pci, b); });
}

// A time for ordering events within one source: the kernel's own stamp, else the wall time.
std::optional<int64_t> Usec(const KernelEvent& e) {
  if (e.mono_usec) return e.mono_usec;
  if (e.wall_ms) return *e.wall_ms * 1000;
  return std::nullopt;
}

// The most downs inside any one hour (all of them when the lines carry no time).
int MaxDownsInAnHour(const std::vector<const KernelEvent*>& downs) {
  std::vector<int64_t> t;
  for (const KernelEvent* e : downs) {
    auto u = Usec(*e);
    if (!u) return static_cast<int>(downs.size());
    t.push_back(*u);
  }
  std::sort(t.begin(), t.end());
  int best = 0;
  size_t lo = 0;
  for (size_t hi = 0; hi < t.size(); ++hi) {
    while (t[hi] - t[lo] >= kHourUsec) ++lo;
    best = std::max(best, static_cast<int>(hi - lo + 1));
  }
  return best;
}

std::string Role(const KernelDevices& d, const std::string& pci) {
  if (AnyOf(d.gpus, pci)) return "gpu";
  if (AnyOf(d.hcas, pci)) return "hca";
  return d.known ? "" : "hca";
}

// Whether a port's downs are released: the port is up now and its last down is at least
// flap_stable_ms old. `counted` says why it was or was not (empty when release is off).
struct FlapRelease {
  bool released = false;
  std::string why;
  std::string counted;
};

FlapRelease Release(const std::string& port, const std::vector<const KernelEvent*>& downs,
                    const KernelDevices& devices, const KernelJudgeOptions& o) {
  FlapRelease r;
  if (o.flap_stable_ms <= 0) return r;
  const std::string stable = std::to_string(o.flap_stable_ms / 1000) + " s";
  std::optional<int64_t> last;
  for (const KernelEvent* e : downs) {
    if (!e->wall_ms) {
      r.counted = "yes: a down without a time, so no stable time can be measured";
      return r;
    }
    if (!last || *e->wall_ms > *last) last = e->wall_ms;
  }
  if (!o.boot.now_wall_ms || !last) {
    r.counted = "yes: no time now to measure a stable time against";
    return r;
  }
  const int64_t age_s = (*o.boot.now_wall_ms - *last) / 1000;
  if (devices.ports_up.count(port) == 0) {
    r.counted = "yes: the port is not up now";
  } else if (*o.boot.now_wall_ms - *last < o.flap_stable_ms) {
    r.counted = "yes: last down " + std::to_string(age_s) + " s ago, not yet stable for " + stable;
  } else {
    r.released = true;
    r.why = "up, and no down for " + std::to_string(age_s) + " s (at least " + stable + ")";
    r.counted = "no: released, " + r.why;
  }
  return r;
}

template <typename Key>
using Groups = std::map<Key, std::vector<const KernelEvent*>>;

// Groups of one id, at most kMaxFindingsPerId keys; the events of keys past it are counted.
template <typename Key>
struct Bounded {
  Groups<Key> groups;
  size_t left_out_events = 0;
  std::set<Key> left_out_keys;  // at most the window's events; only counted
  void Add(const Key& key, const KernelEvent* e) {
    auto it = groups.find(key);
    if (it == groups.end()) {
      if (groups.size() >= kMaxFindingsPerId) {
        ++left_out_events;
        left_out_keys.insert(key);
        return;
      }
      it = groups.emplace(key, std::vector<const KernelEvent*>{}).first;
    }
    it->second.push_back(e);
  }
  // Says on the last finding of the id what was not listed.
  void Note(std::vector<Finding>* out, const char* what, const std::string& source) const {
    if (left_out_events == 0 || out->empty()) return;
    out->back().evidence.push_back(
        {"not listed", std::to_string(left_out_events) + " event(s) of " +
                           std::to_string(left_out_keys.size()) + " more " + what + " (at most " +
                           std::to_string(kMaxFindingsPerId) + " listed)",
         source});
  }
};

}  // namespace

KernelDevices DevicesFromSnapshot(const NodeSnapshot& s) {
  KernelDevices d;
  d.known = true;
  for (const PciDevice& p : s.pci_devices) {
    const bool ib_class = (p.class_code >> 8) == 0x0207;
    const bool mellanox_net = p.vendor == 0x15b3 && (p.class_code >> 16) == 0x02;
    const bool nvidia_display = p.vendor == 0x10de && (p.class_code >> 16) == 0x03;
    if (ib_class || mellanox_net) d.hcas.push_back(p.bdf);
    if (nvidia_display) d.gpus.push_back(p.bdf);
  }
  for (const IbDevice& ib : s.ib_devices) {
    if (!ib.pci_bdf.empty()) d.hcas.push_back(ib.pci_bdf);
  }
  for (const GpuInfo& g : s.gpus) d.gpus.push_back(g.bdf);
  for (const IbDevice& ib : s.ib_devices) {
    for (const IbPort& p : ib.ports) {
      const bool up = p.state.ok() && p.phys_state.ok() &&
                      p.state.value->find("ACTIVE") != std::string::npos &&
                      p.phys_state.value->find("LinkUp") != std::string::npos;
      if (up) d.ports_up.insert(ib.name + "/" + std::to_string(p.num));
    }
  }
  for (const NetInterface& n : s.interfaces) {
    if (n.operstate.ok() && *n.operstate.value == "up") d.ports_up.insert(n.name + "/1");
  }
  return d;
}

KernelBoot BootFromSnapshot(const NodeSnapshot& s) {
  KernelBoot b;
  if (s.boot_id.ok()) b.boot_id = *s.boot_id.value;
  if (s.boot_time_unix_s.ok()) {
    b.boot_wall_ms = static_cast<int64_t>(*s.boot_time_unix_s.value) * 1000;
  }
  if (s.taken_at_unix_ms > 0) b.now_wall_ms = s.taken_at_unix_ms;
  return b;
}

namespace {

// Boot ids compare without dashes and case: journalctl writes 32 hex digits, the kernel a UUID.
std::string BootKey(std::string_view id) {
  std::string out;
  for (char c : id) {
    if (c == '-') continue;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

// How far a line's time may sit before the boot's start (btime and the follower's boot time
// are computed from different clocks) or past its uptime, and still be of this boot.
constexpr int64_t kBootSlackMs = 5'000;

}  // namespace

std::optional<std::string> NotThisBoot(const KernelEvent& e, const KernelBoot& boot) {
  if (!e.earlier_boot.empty()) return "an earlier boot: " + e.earlier_boot;
  if (!e.boot_id.empty() && !boot.boot_id.empty()) {
    if (BootKey(e.boot_id) != BootKey(boot.boot_id)) {
      return "journal boot " + e.boot_id + ", not this boot (" + boot.boot_id + ")";
    }
    return std::nullopt;  // the source names this boot
  }
  if (e.wall_ms && boot.boot_wall_ms && *e.wall_ms + kBootSlackMs < *boot.boot_wall_ms) {
    return "logged at " + FormatRfc3339(*e.wall_ms) + ", before this boot began (" +
           FormatRfc3339(*boot.boot_wall_ms) + ", btime of proc/stat)";
  }
  if (!e.wall_ms && e.mono_usec && boot.boot_wall_ms && boot.now_wall_ms) {
    const int64_t uptime_ms = *boot.now_wall_ms - *boot.boot_wall_ms;
    if (*e.mono_usec / 1000 > uptime_ms + kBootSlackMs) {
      return "logged " + std::to_string(*e.mono_usec / 1'000'000) +
             " s after its boot, but this boot is " + std::to_string(uptime_ms / 1000) +
             " s old";
    }
  }
  return std::nullopt;
}

bool InWindow(const KernelEvent& e, const KernelJudgeOptions& o) {
  if (!e.wall_ms) return true;
  if (o.since_wall_ms && *e.wall_ms < *o.since_wall_ms) return false;
  if (o.until_wall_ms && *e.wall_ms > *o.until_wall_ms) return false;
  return true;
}

std::vector<Finding> JudgeKernelEvents(const std::vector<KernelEvent>& events,
                                       const KernelDevices& devices,
                                       const KernelJudgeOptions& options) {
  Bounded<std::string> ports_b, modules_b, hca_aer_b, gpu_aer_b, off_bus_b;
  Bounded<std::pair<std::string, int>> xids_b;
  size_t earlier = 0;
  std::string earlier_why;  // the first one's reason
  for (const KernelEvent& e : events) {
    if (!InWindow(e, options)) continue;
    if (auto why = NotThisBoot(e, options.boot)) {
      if (earlier++ == 0) earlier_why = *why;
      continue;
    }
    switch (e.kind) {
      case EventKind::kPortState:
        if (e.down) ports_b.Add(e.PortKey(), &e);
        break;
      case EventKind::kModule:
        if (e.error || e.state.find("unplugged") != std::string::npos) {
          modules_b.Add(e.pci + " module " + std::to_string(e.port), &e);
        }
        break;
      case EventKind::kAer: {
        const std::string role = Role(devices, e.pci);
        if (role == "gpu") gpu_aer_b.Add(e.pci, &e);
        if (role == "hca") hca_aer_b.Add(e.pci, &e);
        break;
      }
      case EventKind::kXid:
        xids_b.Add({e.pci, e.xid}, &e);
        if (e.xid == 79) off_bus_b.Add(e.pci, &e);
        break;
      case EventKind::kGpuOffBus:
        off_bus_b.Add(e.pci, &e);
        break;
    }
  }
  const auto& ports = ports_b.groups;
  const auto& modules = modules_b.groups;
  const auto& xids = xids_b.groups;
  const auto& off_bus = off_bus_b.groups;

  std::vector<Finding> out;
  auto pass = [&](CauseId id, std::string message) {
    out.push_back(Make(id, CheckStatus::kPass, std::move(message)));
  };

  if (ports.empty()) pass(ids::kKernelLinkFlap, "no HCA port went down in the kernel log");
  for (const auto& [port, downs] : ports) {
    const int in_hour = MaxDownsInAnHour(downs);
    const bool flapping = in_hour >= options.link_flaps_per_hour;
    const FlapRelease release = Release(port, downs, devices, options);
    const CheckStatus status = release.released ? CheckStatus::kPass
                               : flapping       ? CheckStatus::kFail
                                                : CheckStatus::kWarn;
    Finding f = Make(ids::kKernelLinkFlap, status,
                     port + " went down " + std::to_string(downs.size()) + " time(s)" +
                         (flapping ? ", " + std::to_string(in_hour) + " within one hour (limit " +
                                         std::to_string(options.link_flaps_per_hour) + ")"
                                   : "") +
                         (release.released ? "; released: " + release.why : ""));
    f.evidence.push_back({port + " downs in one hour", std::to_string(in_hour), options.source});
    if (!release.counted.empty()) {
      f.evidence.push_back({port + " counted", release.counted, "checks.flap_stable_seconds"});
    }
    AddLines(&f, downs, options.source);
    out.push_back(std::move(f));
  }
  ports_b.Note(&out, "ports", options.source);

  if (modules.empty()) pass(ids::kKernelCableModule, "no cable or module error in the kernel log");
  for (const auto& [module, events_of] : modules) {
    const bool error = std::any_of(events_of.begin(), events_of.end(),
                                   [](const KernelEvent* e) { return e->error; });
    Finding f = Make(ids::kKernelCableModule, error ? CheckStatus::kFail : CheckStatus::kWarn,
                     module + ": " + events_of.back()->state);
    AddLines(&f, events_of, options.source);
    out.push_back(std::move(f));
  }
  modules_b.Note(&out, "modules", options.source);

  auto judge_aer = [&](CauseId id, const Bounded<std::string>& bounded, const char* what) {
    const Groups<std::string>& groups = bounded.groups;
    if (groups.empty()) {
      pass(id, std::string("no PCIe AER error on ") + what + " in the kernel log");
    }
    for (const auto& [pci, events_of] : groups) {
      const auto uncorrected = std::count_if(events_of.begin(), events_of.end(),
                                             [](const KernelEvent* e) { return e->error; });
      const auto corrected = static_cast<int64_t>(events_of.size()) - uncorrected;
      Finding f = Make(id, uncorrected > 0 ? CheckStatus::kFail : CheckStatus::kWarn,
                       pci + ": " + std::to_string(uncorrected) + " uncorrected, " +
                           std::to_string(corrected) + " corrected PCIe error(s)");
      AddLines(&f, events_of, options.source);
      out.push_back(std::move(f));
    }
    bounded.Note(&out, "devices", options.source);
  };
  judge_aer(ids::kKernelHcaAer, hca_aer_b, "an HCA");
  judge_aer(ids::kKernelGpuAer, gpu_aer_b, "a GPU");

  if (xids.empty()) pass(ids::kKernelXid, "no NVIDIA Xid in the kernel log");
  for (const auto& [key, events_of] : xids) {
    if (key.second == kInvalidXid) {
      // Not a code: said as written (the line is the evidence), never read as another code.
      Finding f = Make(ids::kKernelXid, CheckStatus::kWarn,
                       "GPU " + key.first + ": Xid line with a code that is not one (\"" +
                           events_of.back()->state + "\", codes are 0.." +
                           std::to_string(kMaxXidCode) + ") x" +
                           std::to_string(events_of.size()));
      f.evidence.push_back({"xid code", events_of.back()->state + " (not a code)", options.source});
      AddLines(&f, events_of, options.source);
      out.push_back(std::move(f));
      continue;
    }
    const XidInfo* info = FindXid(key.second);
    const XidAction action = info != nullptr ? info->action : XidAction::kNone;
    const std::string meaning = info != nullptr ? std::string(info->meaning) : "not in the table";
    Finding f = Make(ids::kKernelXid, IsNodeFault(action) ? CheckStatus::kFail : CheckStatus::kWarn,
                     "GPU " + key.first + ": Xid " + std::to_string(key.second) + " (" + meaning +
                         ") x" + std::to_string(events_of.size()));
    f.evidence.push_back({"xid " + std::to_string(key.second) + " action",
                          std::string(ToString(action)), "kernel/xid_table"});
    AddLines(&f, events_of, options.source);
    if (action == XidAction::kApplication) {
      f.remedy = "An application Xid: the program on this GPU faulted; fix or restart it. The node "
                 "is not at fault unless it repeats with different programs.";
    }
    out.push_back(std::move(f));
  }
  xids_b.Note(&out, "(GPU, code) pairs", options.source);

  if (off_bus.empty()) pass(ids::kKernelGpuOffBus, "no GPU fell off the bus");
  for (const auto& [pci, events_of] : off_bus) {
    Finding f = Make(ids::kKernelGpuOffBus, CheckStatus::kFail,
                     "GPU " + pci + " has fallen off the bus");
    AddLines(&f, events_of, options.source);
    out.push_back(std::move(f));
  }
  off_bus_b.Note(&out, "GPUs", options.source);
  if (earlier > 0) {
    for (Finding& f : out) {
      f.evidence.push_back({"kernel log events not counted",
                            std::to_string(earlier) + " of an earlier boot (first: " +
                                earlier_why + ")",
                            options.source});
    }
  }
  return out;
}

std::vector<Finding> KernelLogSkipped(const std::string& reason) {
  std::vector<Finding> out;
  for (CauseId id : kKernelIds) {
    Finding f = Make(id, CheckStatus::kSkip, "kernel log not read: " + reason);
    f.evidence.push_back({"kernel log", reason, "dev/kmsg"});
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

// ++counts[key], unless that would add a key past the limit: then ++dropped["key_limit"].
template <typename Map, typename Key>
void CountBounded(Map& counts, const Key& key, KernelCounts& all) {
  auto it = counts.find(key);
  if (it == counts.end()) {
    if (counts.size() >= KernelCounts::kMaxCountedKeys) {
      ++all.dropped[std::string(kDroppedKeyLimit)];
      return;
    }
    it = counts.emplace(key, 0).first;
  }
  ++it->second;
}

}  // namespace

void KernelCounts::Add(const KernelEvent& e) {
  switch (e.kind) {
    case EventKind::kPortState:
      if (e.down) CountBounded(link_downs, e.PortKey(), *this);
      break;
    case EventKind::kXid:
      if (e.xid == kInvalidXid) {
        ++dropped[std::string(kDroppedInvalidXid)];
      } else {
        CountBounded(xids, e.xid, *this);
      }
      break;
    case EventKind::kAer:
    case EventKind::kModule:
    case EventKind::kGpuOffBus:
      break;
  }
}

}  // namespace nccl_triage::kernel
