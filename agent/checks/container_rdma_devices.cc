// container.rdma_devices: each uverbs device the host has (sysfs is the host's view) must exist
// under /dev/infiniband here, or ibv_open_device fails: the devices were not passed into this
// container.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 50 (checks/check.h).
NT_HOST_CHECK(ContainerRdmaDevices, 50,
    CauseInfo{"container.rdma_devices", kArch, kHost, kInContainers,
              "RDMA devices passed into the container",
              "The host has HCAs but /dev/infiniband/uverbs* is missing in the container, so "
              "ibv_open_device fails and NCCL has no IB transport.",
              "Request the RDMA device plugin resource (e.g. rdma/rdma_shared_device_a: 1 or "
              "nvidia.com/hostdev), or mount /dev/infiniband into a privileged container.",
              "`sys/class/infiniband_verbs/uverbs*` vs `dev/infiniband/`",
              "fail when a uverbs device of the host is missing under `/dev/infiniband`"});

Finding ContainerRdmaDevices(const NodeSnapshot& s, const Config&, const CheckContext&) {
  if (auto skip = SkipWithoutHcas(ids::kContainerRdmaDevices, s)) return *skip;
  FindingBuilder b(ids::kContainerRdmaDevices);
  if (s.uverbs.empty()) {
    b.Add("sys/class/infiniband_verbs", "no uverbs device", "sys/class/infiniband_verbs");
    return b.Skip("no uverbs device on the host to pass through (see ib.driver)");
  }
  std::vector<std::string> wanted, missing;
  for (const auto& u : s.uverbs) {
    wanted.push_back(u.name);
    bool present = false;
    for (const auto& e : s.dev_infiniband) present |= e == u.name;
    if (!present) missing.push_back(u.name);
  }
  b.Add("uverbs in sysfs", Join(wanted), "sys/class/infiniband_verbs");
  b.Add("dev/infiniband",
        s.dev_infiniband_present ? (s.dev_infiniband.empty() ? "empty" : Join(s.dev_infiniband))
                                 : "absent",
        "dev/infiniband");
  if (!s.dev_infiniband_present) {
    return b.Fail("/dev/infiniband does not exist: the host's " + std::to_string(wanted.size()) +
                  " uverbs device(s) were not passed into this container");
  }
  if (!missing.empty()) {
    return b.Fail(Join(missing) +
                  " missing under /dev/infiniband (not passed into this container)");
  }
  return b.Pass("all " + std::to_string(wanted.size()) +
                " uverbs device(s) present under "
                "/dev/infiniband");
}

}  // namespace nccl_triage::checks
