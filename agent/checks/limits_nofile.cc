// limits.nofile: NCCL opens sockets and files per peer and channel; a low soft RLIMIT_NOFILE gives
// EMFILE at scale. Required: expect.nofile_min (default 65536).
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 80 (checks/check.h).
NT_HOST_CHECK(LimitsNofile, 80,
    CauseInfo{"limits.nofile", kArch, kHost, kInContainers, "Open-files limit (ulimit -n)",
              "NCCL opens sockets, shared-memory segments and verbs objects per peer and "
              "channel; a low RLIMIT_NOFILE makes socket() or open() fail with EMFILE at scale.",
              "Raise nofile to at least 65536 (limits.conf, LimitNOFILE= in the runtime's unit, "
              "or the container runtime's default ulimits).",
              "`Max open files` in `proc/self/limits` (soft limit)",
              "fail below `expect.nofile_min` (65536)"});

Finding LimitsNofile(const NodeSnapshot& s, const Config& c, const CheckContext&) {
  FindingBuilder b(ids::kLimitsNofile);
  b.AddFact("Max open files", s.nofile, "proc/self/limits");
  const uint64_t floor = c.expect.nofile_min;
  b.Add("required", "at least " + std::to_string(floor), "config: expect.nofile_min");
  if (!s.nofile.ok()) return b.Skip("the open-files limit could not be read");
  const Limit& soft = s.nofile.value->soft;
  const Limit& hard = s.nofile.value->hard;
  if (soft.unlimited || soft.value >= floor) {
    return b.Pass("nofile " + FormatLimit(soft, false) + " (at least " + std::to_string(floor) +
                  ")");
  }
  std::string hint;
  if (hard.unlimited || hard.value >= floor) {
    hint = " (the hard limit " + FormatLimit(hard, false) + " would allow raising it)";
  }
  return b.Fail("nofile is " + std::to_string(soft.value) + ", below " + std::to_string(floor) +
                hint);
}

}  // namespace nccl_triage::checks
