// ib.verbs_view: "visible is not usable". sysfs shows what the kernel registered; NCCL sees only
// what libibverbs lists, opens and reports ACTIVE (it skips the other ports silently). The gatherer
// asks libibverbs on the live node (root /); this check compares the two views: an HCA missing
// from ibv_get_device_list (no user-space provider, e.g. libmlx5 absent from the image), one
// ibv_open_device refuses (errno: no /dev/infiniband node, permission), or a port whose state
// verbs reports differently from sysfs.
#include <algorithm>

#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 220 (checks/check.h).
NT_HOST_CHECK(IbVerbsView, 220,
    CauseInfo{"ib.verbs_view", kIb, kHost, kNone, "HCAs usable through libibverbs",
              "NCCL sees only the HCAs libibverbs lists and opens, and only the ports it reports "
              "ACTIVE; an HCA the kernel registered that verbs cannot list or open (no user-space "
              "provider, no /dev/infiniband node, a permission) is skipped without a word.",
              "Install the rdma-core provider for the HCA (libmlx5) where NCCL runs, pass "
              "/dev/infiniband/uverbs* through, and compare ibv_devinfo with "
              "/sys/class/infiniband.",
              "libibverbs' device list, `ibv_open_device` and `ibv_query_port` per HCA against "
              "`sys/class/infiniband/*/ports/*/state` (live node only)",
              "fail when an HCA sysfs shows is missing from the verbs list, cannot be opened (the "
              "errno is the evidence) or is ACTIVE in sysfs only; warn when another port state "
              "differs; skip off the live node"});
namespace {

// "4: ACTIVE" -> "ACTIVE" (the kernel's number dropped, as libibverbs names the state).
std::string StateWord(const std::string& sysfs) {
  size_t colon = sysfs.find(": ");
  return colon == std::string::npos ? sysfs : sysfs.substr(colon + 2);
}

const VerbsPort* FindVerbsPort(const LiveFacts& live, const std::string& dev, int port) {
  for (const auto& p : live.verbs_ports) {
    if (p.device == dev && p.port == port) return &p;
  }
  return nullptr;
}

const VerbsDeviceError* FindOpenError(const LiveFacts& live, const std::string& dev) {
  for (const auto& e : live.verbs_device_errors) {
    if (e.device == dev) return &e;
  }
  return nullptr;
}

}  // namespace

Finding IbVerbsView(const NodeSnapshot& s, const Config&, const CheckContext&) {
  if (auto skip = SkipWithoutHcas(ids::kIbVerbsView, s)) return *skip;
  FindingBuilder b(ids::kIbVerbsView);
  if (!s.live.gathered) {
    b.Add("root", s.root.empty() ? "not live" : s.root, "snapshot");
    return b.Skip("libibverbs is asked only on the live node (root /)");
  }
  const LiveFacts& live = s.live;
  if (live.verbs_devices.empty()) {
    std::vector<std::string> names;
    for (const auto& d : s.ib_devices) {
      names.push_back(d.name);
      b.Add(d.name, "registered", "sys/class/infiniband/" + d.name);
    }
    const std::string why = live.verbs_error.empty() ? "no devices" : live.verbs_error;
    b.Add("libibverbs", why, "ibverbs:ibv_get_device_list");
    return b.Fail("sysfs shows " + Join(names) + " but libibverbs lists none (" + why + ")");
  }

  std::vector<std::string> missing, unopened, down_in_verbs, differs;
  int ports_compared = 0;
  for (const auto& d : s.ib_devices) {
    const bool listed = std::find(live.verbs_devices.begin(), live.verbs_devices.end(), d.name) !=
                        live.verbs_devices.end();
    if (!listed) {
      b.Add(d.name, "in sysfs, not in ibv_get_device_list", "sys/class/infiniband/" + d.name);
      missing.push_back(d.name);
      continue;
    }
    if (const VerbsDeviceError* e = FindOpenError(live, d.name)) {
      b.Add(d.name, e->error, "ibverbs:ibv_open_device");
      unopened.push_back(d.name + " (" + e->error + ")");
      continue;
    }
    for (const auto& p : d.ports) {
      const std::string name = PortName(d, p);
      const VerbsPort* vp = FindVerbsPort(live, d.name, p.num);
      if (vp == nullptr) {
        b.Add(name, "not reported by ibv_query_port", "ibverbs:ibv_query_port");
        differs.push_back(name + " (absent from verbs)");
        continue;
      }
      if (!p.state.ok()) continue;  // ib.port_state reports the unreadable file
      ++ports_compared;
      const std::string sysfs_state = StateWord(*p.state.value);
      if (sysfs_state == vp->state) continue;
      b.Add(name + " state", *p.state.value, SourceOf(p.state, d, p, "state"));
      b.Add(name + " verbs state", vp->state, "ibverbs:ibv_query_port");
      const std::string text = name + " (sysfs " + sysfs_state + ", verbs " + vp->state + ")";
      // NCCL asks verbs: a port verbs does not call ACTIVE is skipped whatever sysfs says.
      if (sysfs_state == "ACTIVE") {
        down_in_verbs.push_back(text);
      } else {
        differs.push_back(text);
      }
    }
  }
  if (!missing.empty() || !unopened.empty() || !down_in_verbs.empty()) {
    std::vector<std::string> parts;
    if (!missing.empty()) parts.push_back("missing from libibverbs: " + Join(missing));
    if (!unopened.empty()) parts.push_back("ibv_open_device failed: " + Join(unopened));
    if (!down_in_verbs.empty()) parts.push_back("ACTIVE in sysfs only: " + Join(down_in_verbs));
    if (!differs.empty()) parts.push_back("state differs: " + Join(differs));
    return b.Fail("HCAs visible in sysfs but not usable through libibverbs; " + Join(parts, "; "));
  }
  if (!differs.empty()) {
    // Not ACTIVE in sysfs either (ib.port_state says so), or the port changed between the reads.
    return b.Warn("libibverbs and sysfs disagree on " + Join(differs));
  }
  return b.Pass("libibverbs opens all " + std::to_string(s.ib_devices.size()) +
                " HCA(s) and agrees with sysfs on " + std::to_string(ports_compared) + " port(s)");
}

}  // namespace nccl_triage::checks
