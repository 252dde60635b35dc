// ib.contention: other processes holding /dev/infiniband/uverbs*. A running training job does
// this legitimately, so it is a warning that names them, never a failure: the operator decides
// whether they are stale.
#include <algorithm>

#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 230 (checks/check.h).
NT_HOST_CHECK(IbContention, 230,
    CauseInfo{"ib.contention", kIb, kHost, kNone, "Other processes on the HCAs",
              "Other processes holding /dev/infiniband/uverbs* compete for QPs, memory "
              "registrations and bandwidth; a stuck job can hold the HCA's resources.",
              "Identify the listed processes; stop stale jobs before probing or running a new "
              "job.",
              "`proc/*/fd` links to `/dev/infiniband/uverbs*`",
              "warn and name the processes (a running job holds them legitimately)"});

Finding IbContention(const NodeSnapshot& s, const Config&, const CheckContext&) {
  if (auto skip = SkipWithoutHcas(ids::kIbContention, s)) return *skip;
  FindingBuilder b(ids::kIbContention);
  std::vector<std::string> who;
  for (const auto& h : s.uverbs_holders) {
    const std::string proc = std::to_string(h.pid) + " (" + h.comm + ")";
    b.Add("pid " + proc, h.device, "proc/" + std::to_string(h.pid) + "/fd");
    if (std::find(who.begin(), who.end(), proc) == who.end()) who.push_back(proc);
  }
  if (!who.empty()) {
    return b.Warn(std::to_string(who.size()) +
                  " other process(es) hold uverbs devices: " + Join(who));
  }
  if (!s.proc_scan_error.empty()) {
    b.Add("process scan", "unreadable (" + s.proc_scan_error + ")", "proc/*/fd");
    return b.Skip("the processes holding the uverbs devices could not be listed");
  }
  b.Add("holders", "none", "proc/*/fd");
  return b.Pass("no other process holds a uverbs device");
}

}  // namespace nccl_triage::checks
