// RasWatch: the agent's periodic query of NCCL's RAS port in each GPU pod (config `ras`, off by
// default; docs/ras.md "In the agent").
//
// Every NCCL process since 2.24 answers on NCCL_RAS_ADDR (default localhost:28028, in its
// network namespace) with the state of every rank of its job. After each workload pass the
// monitor hands RasWatch the pods of the pass that can answer (RasTargets: found in the API,
// NCCL 2.24 or later mapped, or a libnccl.so.2 whose name does not tell the version; not
// NCCL_RAS_ENABLE=0); RunCycle asks those that are due, one connection at a time:
//   - a pod is due when it was never asked or was last asked ras.interval_seconds ago or more
//     (by the injected clock), never earlier; the longest-waiting pods go first;
//   - at most ras.max_pods_per_cycle queries per cycle, and none starts once the cycle's queries
//     have taken ras.cycle_budget_ms; each gets ras.timeout_ms or the budget left, if less;
//   - a refused, timed-out or garbled query is an outcome (counted, logged once per streak per
//     pod), never an error of the pass; the pod's last answer stays until a new one arrives.
// An answer is parsed and judged (ras/report.h) against the pod's previous answer, so that a rank
// one collective behind in a running job is not called stuck: a lag seen on the first answer
// only is not published as stuck until the next answer confirms it.
//
// With ras.diagnostics on (NCCL 2.31+), a pod whose status query answered is also sent
// DIAGNOSTICS when its last diagnostics answer is ras.diagnostics_interval_seconds old or more,
// within the same query's deadline left: the report's lines are judged with the classifier's
// DIAG rules (ras/diagnostics.h), its findings are the pod's RasJobStatus.diagnostics_* and the
// annotation kRasDiagnosticsAnnotationKey. A busy answer is asked again at the next status
// query; an NCCL before 2.31 is not asked again (until the pod is gone).
//
// The socket goes through a RasQuerier: NamespaceRasQuerier enters the pod's network namespace
// with setns(2) on a thread of its own (ras/netns.h), or asks from here for a hostNetwork pod;
// tests inject their own. Not thread-safe: one thread (the monitor's pass thread) uses it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/reflect.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/status.h"
#include "core/config.h"
#include "kube/kube_api.h"
#include "ras/client.h"
#include "ras/diagnostics.h"
#include "ras/report.h"
#include "state/agent_state.h"
#include "workload/workload.h"

namespace nccl_triage::workload {

// The annotation a pod whose RAS port says its job is stuck or in error carries (value:
// "stuck: <the judgement's summary>", at most kMaxRasAnnotationBytes); removed when an answer
// says ok again; left as it is while the port does not answer.
inline constexpr std::string_view kRasAnnotationKey = "nccl-triage.io/nccl-ras";
inline constexpr size_t kMaxRasAnnotationBytes = 256;
// The annotation of a pod whose last diagnostics report had findings ("findings: <summary>",
// the same bound); removed when a report has none.
inline constexpr std::string_view kRasDiagnosticsAnnotationKey =
    "nccl-triage.io/nccl-ras-diagnostics";

// Where one pod's query goes.
struct RasTarget {
  std::string uid;
  std::string ns;
  std::string pod;
  int pid = 0;               // the process whose namespace is entered (lowest pid of the pod)
  bool enter_netns = false;  // false: the process shares the agent's namespace (hostNetwork)
  std::string netns_path;    // <root>/proc/<pid>/ns/net
  std::string host;          // from the process's NCCL_RAS_ADDR, else localhost
  std::string port;          // else 28028
};

// Pure: the pods of a pass whose RAS port may be asked, one target per pod (its first judged
// container, lowest pid), ordered by namespace and name. `root` prefixes the namespace links.
std::vector<RasTarget> RasTargets(const ScanResult& scan,
                                  const std::vector<ContainerVerdict>& containers,
                                  const std::string& root);

enum class RasOutcome { kOk, kRefused, kTimeout, kProtocolError, kError };
constexpr auto NamesOf(Type<RasOutcome>) {
  return std::array{Named(RasOutcome::kOk, "ok"), Named(RasOutcome::kRefused, "refused"),
                    Named(RasOutcome::kTimeout, "timeout"),
                    Named(RasOutcome::kProtocolError, "protocol_error"),
                    Named(RasOutcome::kError, "error")};
}
// The outcome of a failed query from its status code (ras/client.h): unavailable (refused,
// closed, reset) -> refused; deadline -> timeout; invalid argument (not a RAS server, a reply
// over the cap) -> protocol_error; anything else (the namespace could not be entered) -> error.
RasOutcome OutcomeOf(const Status& failed);

// Pure: the most unresponsive and the most dead ranks of one communicator, and the largest
// spread of one collective's launch counts within one communicator.
struct RasCounts {
  int unresponsive = 0;
  int dead = 0;
  uint64_t lag = 0;
};
RasCounts CountRanks(const ras::Report& report);

// Pure: the annotation value a judgement deserves: nullopt when ok, "<state>: <summary>" cut to
// kMaxRasAnnotationBytes otherwise.
std::optional<std::string> RasAnnotation(const ras::Judgement& judgement);
// The same for a diagnostics judgement: nullopt when it has no finding.
std::optional<std::string> RasDiagnosticsAnnotation(const ras::DiagJudgement& judgement);
// The patch that brings `current` to `wanted` for `key` (kRasAnnotationKey by default); nullopt
// when equal.
std::optional<AnnotationPatch> RasAnnotationChange(
    const std::optional<std::string>& wanted, const std::map<std::string, std::string>& current,
    std::string_view key = kRasAnnotationKey);

// The socket side of one query.
class RasQuerier {
 public:
  virtual ~RasQuerier() = default;
  // Errors as ras::QueryRas's; a namespace that cannot be entered is StatusCode::kInternal.
  virtual StatusOr<ras::RawReply> Query(const RasTarget& target,
                                        const ras::QueryOptions& options) = 0;
  // DIAGNOSTICS (ras::QueryRasDiagnostics), from the same place as Query.
  virtual StatusOr<ras::DiagnosticsReply> Diagnostics(const RasTarget& target,
                                                      const ras::QueryOptions& options) = 0;
};

// The real one: setns(2) into target.netns_path on a thread of its own when enter_netns.
class NamespaceRasQuerier final : public RasQuerier {
 public:
  StatusOr<ras::RawReply> Query(const RasTarget& target,
                                const ras::QueryOptions& options) override;
  StatusOr<ras::DiagnosticsReply> Diagnostics(const RasTarget& target,
                                              const ras::QueryOptions& options) override;
};

// One pod's query in a cycle.
struct RasPodResult {
  RasTarget target;
  RasOutcome outcome = RasOutcome::kError;
  std::string error;  // one line when not ok
  ras::Judgement judgement;  // ok only
  RasJobStatus status;       // ok only
  // ok only: the annotation the pod deserves now; nullopt with `annotate` false means "leave it".
  std::optional<std::string> annotation;
  bool annotate = false;
  // ras.diagnostics: "" when not asked in this cycle, else ok, busy, unsupported, or the failed
  // query's outcome (refused, timeout, protocol_error, error).
  std::string diagnostics;
  std::string diagnostics_error;  // one line when not ok
  ras::DiagJudgement diagnostics_judgement;  // ok only
  std::optional<std::string> diagnostics_annotation;  // ok only: what the pod deserves now
};

struct RasCycle {
  std::vector<RasPodResult> asked;  // in the order asked
  int due_left = 0;                 // due pods left for a later cycle (pod or time bound)
};

class RasWatch {
 public:
  // `querier`, `clock` and `log` are not owned and must outlive the watch.
  RasWatch(RasConfig config, RasQuerier& querier, Clock& clock, Logger& log);

  RasCycle RunCycle(const std::vector<RasTarget>& targets);

  // The last answer of each pod of the last cycle's targets, by namespace and name.
  std::vector<RasJobStatus> Jobs() const;
  // Queries since the start, by outcome name (every outcome present, 0 until it happens).
  std::map<std::string, uint64_t> Totals() const { return totals_; }
  // Diagnostics requests since the start, by outcome (ras.diagnostics; empty when off).
  std::map<std::string, uint64_t> DiagnosticsTotals() const { return diagnostics_totals_; }

 private:
  struct Memory {
    std::optional<Clock::TimePoint> asked;
    std::optional<ras::Report> report;  // the last one that parsed
    std::optional<RasJobStatus> status;
    std::string streak;  // the last failure logged
    std::optional<Clock::TimePoint> diagnosed;  // the last diagnostics answer (busy excluded)
    bool no_diagnostics = false;                // an NCCL before 2.31 said so
    std::string diagnostics_streak;
  };
  RasPodResult Ask(const RasTarget& t, std::chrono::milliseconds deadline, Memory& m);
  void Diagnose(const RasTarget& t, Clock::TimePoint until, const std::string& who, Memory& m,
                RasPodResult& r);

  const RasConfig config_;
  RasQuerier& querier_;
  Clock& clock_;
  Logger& log_;
  std::map<std::string, Memory> pods_;  // by pod UID
  std::map<std::string, uint64_t> totals_;
  std::map<std::string, uint64_t> diagnostics_totals_;
};

}  // namespace nccl_triage::workload
