// container.ipc_lock: CAP_IPC_LOCK (CapEff bit 14) exempts memory registration from RLIMIT_MEMLOCK.
// It only matters when memlock is limited: with an unlimited memlock the capability is not
// needed, and with it a limited memlock does not stop registration.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 60 (checks/check.h).
NT_HOST_CHECK(ContainerIpcLock, 60,
    CauseInfo{"container.ipc_lock", kArch, kHost, kInContainers, "CAP_IPC_LOCK",
              "Without CAP_IPC_LOCK a process cannot lock more memory than RLIMIT_MEMLOCK, so "
              "RDMA memory registration of large buffers fails.",
              "Add securityContext.capabilities.add: [IPC_LOCK] to the container (or run it "
              "privileged).",
              "`CapEff` in `proc/self/status` (bit 14), memlock",
              "pass when memlock is sufficient or the node has no RDMA hardware (the capability "
              "is then not needed) or CAP_IPC_LOCK is present; fail when memlock is limited and "
              "the capability is missing"});

Finding ContainerIpcLock(const NodeSnapshot& s, const Config& c, const CheckContext&) {
  FindingBuilder b(ids::kContainerIpcLock);
  b.Add("CapEff", s.cap_eff.ok() ? "0x" + HexDigits(*s.cap_eff.value, 16) : FactText(s.cap_eff),
        SourceOr(s.cap_eff, "proc/self/status"));
  b.AddFact("Max locked memory", s.memlock, "proc/self/limits");
  const bool memlock_known = s.memlock.ok();
  const bool memlock_enough =
      memlock_known && MemlockSufficient(s.memlock.value->soft, c.expect.memlock_min_bytes);
  if (!s.cap_eff.ok()) {
    if (memlock_known && memlock_enough) return b.Pass("not needed: memlock is sufficient");
    return b.Skip("the effective capabilities could not be read");
  }
  if (HasCapIpcLock(s)) {
    return b.Pass("CAP_IPC_LOCK present: memory registration is not bound by memlock");
  }
  if (!memlock_known) {
    return b.Warn("CAP_IPC_LOCK missing and the memlock limit is unknown");
  }
  if (memlock_enough) return b.Pass("CAP_IPC_LOCK missing but not needed: memlock is sufficient");
  if (!HasRdmaHardware(s)) {
    return b.Pass("CAP_IPC_LOCK missing, not needed: no RDMA hardware to register memory with");
  }
  return b.Fail("CAP_IPC_LOCK missing and memlock limited to " +
                FormatLimit(s.memlock.value->soft, true) +
                ": registrations beyond it fail (add IPC_LOCK or raise memlock)");
}

}  // namespace nccl_triage::checks
