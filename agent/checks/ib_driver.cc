// ib.driver: every registered HCA needs a user-space verbs device (ib_uverbs loaded), or
// ibv_get_device_list() is empty and NCCL has no IB transport.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 140 (checks/check.h).
NT_HOST_CHECK(IbDriver, 140,
    CauseInfo{"ib.driver", kIb, kHost, kNone, "RDMA kernel modules",
              "ib_uverbs (and the HCA's IB driver such as mlx5_ib) must be loaded for user-space "
              "verbs; without them ibv_get_device_list is empty.",
              "modprobe ib_uverbs mlx5_ib (or install/repair OFED), and make them load at boot.",
              "`sys/class/infiniband_verbs/uverbs*/ibdev`, "
              "`sys/module/{ib_uverbs,mlx5_ib,ib_core}`",
              "fail when an HCA has no uverbs device (ib_uverbs not loaded)"});

Finding IbDriver(const NodeSnapshot& s, const Config&, const CheckContext&) {
  if (auto skip = SkipWithoutHcas(ids::kIbDriver, s)) return *skip;
  FindingBuilder b(ids::kIbDriver);
  for (const char* m : {"ib_uverbs", "mlx5_ib", "ib_core"}) {
    if (FindModule(s, m) != nullptr) {
      b.Add(std::string("module ") + m, ModuleLoaded(s, m) ? "loaded" : "not loaded",
            ModuleSource(s, m));
    }
  }
  if (!s.uverbs_class_present || s.uverbs.empty()) {
    b.Add("sys/class/infiniband_verbs",
          s.uverbs_class_present ? "present, no uverbs device" : "absent",
          "sys/class/infiniband_verbs");
    return b.Fail(std::to_string(s.ib_devices.size()) +
                  " HCA(s) registered but no uverbs device: ib_uverbs is not loaded");
  }

  bool ibdev_known = true;
  for (const auto& u : s.uverbs) {
    ibdev_known &= !u.ibdev.empty();
    b.Add(u.name, u.ibdev.empty() ? "ibdev unreadable" : u.ibdev,
          "sys/class/infiniband_verbs/" + u.name + "/ibdev");
  }
  std::vector<std::string> missing;
  if (ibdev_known) {
    for (const auto& d : s.ib_devices) {
      bool found = false;
      for (const auto& u : s.uverbs) found |= u.ibdev == d.name;
      if (!found) missing.push_back(d.name);
    }
  } else if (s.uverbs.size() < s.ib_devices.size()) {
    return b.Fail(std::to_string(s.ib_devices.size()) + " HCAs but only " +
                  std::to_string(s.uverbs.size()) + " uverbs devices");
  }
  if (!missing.empty()) {
    return b.Fail("no uverbs device for " + Join(missing) +
                  ": user-space verbs cannot open it (ib_uverbs or the HCA's IB driver)");
  }
  if (!ibdev_known) {
    return b.Warn(std::to_string(s.uverbs.size()) +
                  " uverbs devices, but which HCA each belongs to could not be read");
  }
  return b.Pass("ib_uverbs loaded: a uverbs device for each of the " +
                std::to_string(s.ib_devices.size()) + " HCA(s)");
}

}  // namespace nccl_triage::checks
