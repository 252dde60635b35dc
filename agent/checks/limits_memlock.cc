// limits.memlock: RDMA memory registration pins pages and is bounded by RLIMIT_MEMLOCK unless the
// process has CAP_IPC_LOCK. The soft limit is the one in force (NCCL does not raise it).
// Required: unlimited, or expect.memlock_min_bytes when configured.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 70 (checks/check.h).
NT_HOST_CHECK(LimitsMemlock, 70,
    CauseInfo{"limits.memlock", kArch, kHost, kInContainers, "Locked-memory limit (ulimit -l)",
              "RDMA memory registration pins pages; a small RLIMIT_MEMLOCK (64 KiB or 8 MiB "
              "defaults) makes ibv_reg_mr fail with ENOMEM, so only the IB path breaks.",
              "Set memlock to unlimited: `* - memlock unlimited` in /etc/security/limits.conf, "
              "LimitMEMLOCK=infinity for containerd/docker/kubelet systemd units, or docker "
              "--ulimit memlock=-1:-1.",
              "`Max locked memory` in `proc/self/limits` (soft limit)",
              "fail below unlimited or `expect.memlock_min_bytes` (the message notes when this "
              "process has CAP_IPC_LOCK: the limit is still what every other process inherits); "
              "only warn on a node without RDMA hardware"});

Finding LimitsMemlock(const NodeSnapshot& s, const Config& c, const CheckContext&) {
  FindingBuilder b(ids::kLimitsMemlock);
  b.AddFact("Max locked memory", s.memlock, "proc/self/limits");
  const auto& floor = c.expect.memlock_min_bytes;
  b.Add("required", floor ? "at least " + FormatBytes(*floor) : "unlimited",
        floor ? "config: expect.memlock_min_bytes" : "default: expect.memlock_min_bytes unset");
  if (!s.memlock.ok()) return b.Skip("the locked-memory limit could not be read");

  const Limit& soft = s.memlock.value->soft;
  const Limit& hard = s.memlock.value->hard;
  const std::string have = FormatLimit(soft, true);
  if (soft.unlimited) return b.Pass("memlock unlimited");
  if (MemlockSufficient(soft, floor)) {
    return b.Pass("memlock " + have + " (at least " + FormatBytes(*floor) + ")");
  }
  const std::string need = floor ? "at least " + FormatBytes(*floor) : std::string("unlimited");
  std::string hint;
  if (hard.unlimited || (floor && hard.value >= *floor)) {
    hint = " (the hard limit " + FormatLimit(hard, true) + " would allow raising it)";
  }
  // CAP_IPC_LOCK exempts this process's own registrations, but the limit is what every process
  // started here inherits, while the capability is per process: the limit itself is the fault,
  // and the message says when this process would get away with it (container.ipc_lock judges
  // the capability).
  if (HasCapIpcLock(s)) {
    b.Add("CapEff", "0x" + HexDigits(*s.cap_eff.value, 16),
          SourceOr(s.cap_eff, "proc/self/status"));
    hint +=
        "; this process has CAP_IPC_LOCK and could register beyond it, processes without the "
        "capability fail in ibv_reg_mr";
  }
  // Locked memory only limits RDMA registration: on a node without RDMA hardware a small limit
  // breaks nothing NCCL does, and saying so is more useful than a failure.
  if (!HasRdmaHardware(s)) {
    return b.Warn("memlock is " + have +
                  ", too small for NCCL over IB, but this node has no "
                  "RDMA hardware");
  }
  return b.Fail("memlock is " + have + ", NCCL over IB needs " + need + hint);
}

}  // namespace nccl_triage::checks
