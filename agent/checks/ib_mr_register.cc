// ib.mr_register: a real ibv_reg_mr of an NCCL-sized buffer on each HCA, done by the gatherer on
// the live node only (root "/"). A fixture root or a saved snapshot cannot tell.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 210 (checks/check.h).
NT_HOST_CHECK(IbMrRegister, 210,
    CauseInfo{"ib.mr_register", kIb, kHost, kNone, "RDMA memory registration",
              "If ibv_reg_mr of an NCCL-sized buffer fails, every IB connection fails: locked "
              "memory limits, exhausted HCA translation tables or a wedged driver.",
              "Check memlock (limits.memlock), free HCA resources (other processes), and reload "
              "the HCA driver if registration fails with plenty of memory.",
              "a real `ibv_reg_mr` of `checks.mr_register_bytes` per HCA (live node only)",
              "fail when a registration fails; skip off the live node"});

Finding IbMrRegister(const NodeSnapshot& s, const Config& c, const CheckContext&) {
  if (auto skip = SkipWithoutHcas(ids::kIbMrRegister, s)) return *skip;
  FindingBuilder b(ids::kIbMrRegister);
  if (!s.live.gathered) {
    b.Add("root", s.root.empty() ? "not live" : s.root, "snapshot");
    return b.Skip("memory registration is tested only on the live node (root /)");
  }
  if (s.live.mr_registrations.empty()) {
    b.Add("libibverbs",
          s.live.verbs_error.empty() ? "no registration attempted" : s.live.verbs_error, "ibverbs");
    return b.Skip("no memory registration could be attempted");
  }
  std::vector<std::string> failed;
  for (const auto& r : s.live.mr_registrations) {
    b.Add(r.device, FormatBytes(r.bytes) + ": " + (r.ok ? "ok" : r.error), "ibverbs:ibv_reg_mr");
    if (!r.ok) failed.push_back(r.device + " (" + r.error + ")");
  }
  if (!failed.empty()) {
    return b.Fail("ibv_reg_mr of " + FormatBytes(c.checks.mr_register_bytes) + " failed on " +
                  Join(failed));
  }
  return b.Pass("registered " + FormatBytes(s.live.mr_registrations.front().bytes) + " on " +
                std::to_string(s.live.mr_registrations.size()) + " HCA(s)");
}

}  // namespace nccl_triage::checks
