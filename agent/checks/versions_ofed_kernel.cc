// versions.ofed_kernel: whether the kernel RDMA stack is MLNX_OFED/DOCA-OFED or the inbox one, and
// whether it is one consistent stack. OFED modules carry a version like "5.8-3.0.7" or
// "24.07-0.6.1" in sys/module/<name>/version and pull in mlx_compat; inbox modules have no such
// version. A mixture (an OFED mlx5_core over an inbox ib_core, or modules from two OFED releases)
// breaks verbs in ways that look like hardware faults.
#include <array>
#include <set>

#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 30 (checks/check.h).
NT_HOST_CHECK(VersionsOfedKernel, 30,
    CauseInfo{"versions.ofed_kernel", kArch, kHost, kNone, "OFED vs kernel RDMA stack",
              "Mellanox OFED user space and kernel modules must come from one release; an inbox "
              "kernel driver under an OFED user space (or the reverse) breaks verbs calls.",
              "Reinstall MLNX_OFED/DOCA-OFED for the running kernel (or remove it and use the "
              "inbox rdma-core consistently); reboot so the matching modules load.",
              "`sys/module/{mlx_compat,ib_core,mlx5_core,mlx5_ib,ib_uverbs,rdma_ucm}/version`, "
              "`proc/sys/kernel/osrelease`",
              "pass for one OFED release or the inbox stack (evidence says which); fail for "
              "modules of two OFED releases, or OFED and inbox modules mixed"});
namespace {

// "A.B-C.D.E" with every part numeric (and anything after it).
bool IsOfedVersion(std::string_view v) {
  const size_t dash = v.find('-');
  if (dash == std::string_view::npos) return false;
  const auto head = ParseVersion(v.substr(0, dash));
  const auto tail = ParseVersion(v.substr(dash + 1));
  return head.size() == 2 && tail.size() >= 3 && v.substr(0, dash).find('.') != std::string::npos;
}

constexpr std::array<std::string_view, 6> kStackModules = {"mlx_compat", "ib_core",   "mlx5_core",
                                                           "mlx5_ib",    "ib_uverbs", "rdma_ucm"};

}  // namespace

Finding VersionsOfedKernel(const NodeSnapshot& s, const Config&, const CheckContext&) {
  FindingBuilder b(ids::kVersionsOfedKernel);
  b.AddFact("kernel", s.kernel_release, "proc/sys/kernel/osrelease");
  std::set<std::string> ofed_versions;
  std::vector<std::string> ofed_modules;
  bool any_loaded = false;
  for (std::string_view name : kStackModules) {
    const KernelModule* m = FindModule(s, name);
    if (m == nullptr || !m->loaded) continue;
    any_loaded = true;
    const std::string src = ModuleSource(s, name) + (m->version.empty() ? "" : "/version");
    if (IsOfedVersion(m->version)) {
      ofed_versions.insert(m->version);
      ofed_modules.push_back(std::string(name));
      b.Add(std::string(name), "OFED " + m->version, src);
    } else {
      b.Add(
          std::string(name),
          m->version.empty() ? "loaded, no OFED version" : "version " + m->version + " (not OFED)",
          src);
    }
  }
  if (!any_loaded) {
    if (!HasRdmaHardware(s)) {
      return b.Skip("no RDMA hardware and no RDMA kernel module loaded");
    }
    return b.Skip("no RDMA kernel module loaded (see ib.driver)");
  }
  // mlx_compat is judged only when the snapshot looked for it: "not in the list" is not "not
  // loaded".
  const bool compat_known = FindModule(s, "mlx_compat") != nullptr;
  const bool compat = ModuleLoaded(s, "mlx_compat");
  const KernelModule* core = FindModule(s, "mlx5_core");
  const bool core_loaded = core != nullptr && core->loaded;
  const bool core_ofed = core_loaded && IsOfedVersion(core->version);

  if (ofed_versions.size() > 1) {
    std::vector<std::string> v(ofed_versions.begin(), ofed_versions.end());
    return b.Fail("kernel modules from different OFED releases loaded: " + Join(v));
  }
  if (core_ofed && compat_known && !compat && ModuleLoaded(s, "ib_core")) {
    return b.Fail("mlx5_core is OFED " + core->version +
                  " but ib_core is the inbox one (mlx_compat not loaded)");
  }
  if (core_loaded && !core_ofed && (compat || !ofed_modules.empty())) {
    return b.Fail("the RDMA core is OFED (" +
                  (ofed_modules.empty() ? std::string("mlx_compat loaded") : Join(ofed_modules)) +
                  ") but mlx5_core is the inbox driver");
  }
  if (!ofed_versions.empty() || compat) {
    return b.Pass(ofed_versions.empty()
                      ? std::string("MLNX_OFED kernel stack (mlx_compat loaded)")
                      : "MLNX_OFED " + *ofed_versions.begin() + " kernel stack, consistent");
  }
  return b.Pass("inbox kernel RDMA stack" +
                (s.kernel_release.ok() ? " of kernel " + *s.kernel_release.value : std::string()));
}

}  // namespace nccl_triage::checks
