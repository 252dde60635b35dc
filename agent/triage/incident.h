// The incident: what `nccl-triage triage` concludes about a job that died, from three kinds of
// evidence kept apart — the pods' logs (what happened), the agents' node checks (a prediction
// from each node's state) and the coordinator's probes run for this incident (what happens now
// between the job's nodes). JudgeIncident is a pure function of what was read; the command
// (cmd_nccl_triage/cmd_triage.cc) does the reading.
//
// The first failing rank is the earliest first failure of any pod's log: by the container
// runtime's timestamps when the logs have them (one clock for every pod), by the order NCCL
// printed them inside one log, by pod order otherwise (and says so). Logs that show only a side
// effect (a peer exited, a proxy wrapper) do not make a first failure, but the peers they name
// point at the pod that did, even when that pod's own log is empty or gone.
//
// Exit codes: 0 healthy, 1 a fault found (from any basis, each shown), 3 nothing to conclude.
// (2, usage or API errors, is the command's.)
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "triage/log_reader.h"
#include "triage/peers.h"
#include "triage/records.h"

namespace nccl_triage::triage {

inline constexpr const char* kIncidentSchema = "nccl-triage/incident/v1";

// The window a kernel-log event must fall in to be blamed for the job's failure: from the job's
// first pod start, but at most kKernelLookBackMs before the first failure, to kKernelGraceMs
// after the last failure (a GPU that falls off the bus is logged by the kernel a little after
// the collective that hung on it failed). Failure times are the logs' first failing lines.
inline constexpr int64_t kKernelLookBackMs = 2 * 3600 * 1000;
inline constexpr int64_t kKernelGraceMs = 10 * 60 * 1000;

// One log the triage asked for, and what came of it.
struct LogResult {
  std::string pod;
  std::string container;
  bool previous = false;
  bool read = false;  // false: not read at all (end.error says why)
  LogStreamEnd end;
  LogSummary summary;  // when read
};

// What the coordinator's probes for this incident found. Filled by the command from the
// coordinator's answer; `asked` false with `not_asked` saying why when they did not run.
struct ProbeNodeState {
  std::string node;
  std::string state;  // good | fault | busy | absent | inconclusive
  std::string reason;
};

struct ProbeFault {
  std::string kind;  // node | link
  std::string node;
  std::string peer;  // link: the other node
  FaultClass fault_class = FaultClass::kUnknown;
  std::vector<std::string> causes;
  std::string reason;
};

// A rail of one of the job's nodes that a rail fault names (the coordinator's answer carries the
// rail table of each node; rails without a fault are not kept here).
struct ProbeRailFault {
  std::string node;
  int rail = 0;
  std::string device;  // "mlx5_3/1"
  std::string fault;   // node_rail | node | link_rail
  bool rate_degraded = false;
  std::vector<std::string> causes;
  std::string reason;
  std::string seen_by;  // triage (these probes) | sweep (the coordinator's last sweep)
};

struct ProbeOutcome {
  bool asked = false;
  std::string not_asked;  // "--no-probe", "no coordinator given (--coordinator URL)"
  std::string error;      // asked, and the coordinator did not answer (or refused)
  std::vector<ProbeNodeState> nodes;
  std::vector<ProbeFault> faults;
  std::vector<std::string> references;  // known-good nodes outside the job, probed too
  int pairs_probed = 0;
  std::vector<ProbeRailFault> rail_faults;  // on the job's nodes, in node then rail order
};

// The coordinator's answer as `nccl-triage-server triage-coordinator --probe` prints it.
StatusOr<ProbeOutcome> ProbeOutcomeFromJson(const nlohmann::json& j);

struct IncidentInput {
  std::string ns;
  std::string target;  // "job train-7", "selector app=x", "pods a,b", "nodes n1,n2"
  std::vector<JobPod> pods;
  std::vector<std::string> missing;  // pods named on the command line that the API does not have
  std::vector<std::string> nodes;    // --nodes: nodes to look at even without pods on them
  std::vector<LogResult> logs;
  std::string log_window;  // "since 2h, the first 1 MiB and the last 20000 lines of each"
  bool checks_read = false;
  std::string checks_error;  // why the agents' verdicts were not read
  std::vector<AgentVerdict> agents;
  ProbeOutcome probes;
  int64_t now_ms = 0;
};

// A line of a pod's log that supports the verdict.
struct EvidenceLine {
  std::string pod;
  std::string container;
  uint64_t line = 0;
  std::string text;  // printable (the classifier's sanitised copy)
};

// One basis and its own verdict, shown side by side.
struct BasisVerdict {
  std::string basis;  // log | checks | probes
  bool looked = false;
  FaultClass fault_class = FaultClass::kUnknown;
  std::string cause;    // empty: none
  std::string summary;  // one line: what it saw, or why it did not look
};

struct FirstFailure {
  std::string pod;
  std::string container;
  bool previous = false;
  std::string node;
  std::string rank;  // NCCL's host:pid
  EvidenceLine line;
  std::optional<int64_t> at_ns;
  std::string order;  // how it was chosen: by timestamps, the only one, or pod order
};

struct PeerView {
  PeerMatch match;
  int named_by = 0;  // logs that name it (the first failure's, and the side effects')
};

struct Localisation {
  std::string kind;  // node | link | "" (not localised)
  std::string node;
  std::string peer_node;
  std::string basis;  // log | probes | checks
};

struct PodRow {
  std::string pod;
  std::string node;
  std::string container;
  bool previous = false;
  std::string state;  // "terminated Error (exit 1)", "running", "restarted 2x, last OOMKilled"
  std::string log;    // "1.2 MiB, 12034 lines" or "not read: HTTP 403 ..."
  FaultClass fault_class = FaultClass::kUnknown;
  std::string cause;
  std::optional<int64_t> at_ns;
  std::string first_line;  // printable, cut to 200 bytes
  std::string note;        // "tail cut", "side effect of a failure elsewhere", ...
};

struct Incident {
  std::string ns;
  std::string target;
  int64_t at_ms = 0;
  int pods = 0;
  int nodes = 0;
  FaultClass fault_class = FaultClass::kUnknown;
  std::string cause;  // empty: none
  std::string basis;  // the basis the class comes from: log | probes | checks | ""
  std::string reason;
  std::vector<BasisVerdict> bases;
  std::vector<std::string> disagreements;
  std::optional<FirstFailure> first;
  std::optional<PeerView> peer;
  int confirmed_by = 0;  // side-effect logs that name the first failing pod as the peer they lost
  Localisation where;
  std::vector<EvidenceLine> evidence;
  std::string remedy;
  std::vector<std::string> not_looked_at;
  // The rail faults on the job's nodes, one line each ("node-2 rail 3 (mlx5_3/1): rate-degraded
  // (ib.bandwidth), seen by the last sweep: ..."), from the coordinator's answer.
  std::vector<std::string> rails;
  // The kernel-log causes the agents report on the job's nodes ("node-2: kernel.gpu_off_bus (GPU
  // fallen off the bus), reported by its agent at <time>"): an Xid is never a network fault, but
  // a job that died beside one died of it. The agents judge the kernel lines of the last 24 h,
  // so only a cause whose last event falls in the job's window (kernel_window) is listed here;
  // one whose last event came earlier (or later) goes to kernel_outside, shown but not blamed.
  // A cause without an event time (an older agent) is kept here, saying so.
  std::vector<std::string> kernel;
  std::vector<std::string> kernel_outside;
  // The window, Unix ms; none when no log gives the failure a time (then nothing is set aside).
  std::optional<int64_t> kernel_from_ms;
  std::optional<int64_t> kernel_to_ms;
  std::string kernel_window;  // how it was bounded, one line
  std::vector<PodRow> rows;  // the failing first, then by time, then by name
  OwnerRef event_object;     // where the incident's Event goes (the job, else a pod)
  int exit_code = 3;
};

// The classes that make the incident a fault (exit code 1): architecture and ib_resource.
bool IsFault(FaultClass c);

// The steps behind it, each a function of the values it names: incident_scope.h (the job's
// pods and nodes), incident_logs.h (the logs' verdict), incident_nodes.h (the agents' checks and
// kernel logs, the coordinator's probes), incident_decide.h (the verdict and where), and
// incident_explain.h (why, the rows, the event's object).
Incident JudgeIncident(const IncidentInput& input);

// The JSON document, schema nccl-triage/incident/v1.
nlohmann::json ToJson(const Incident& incident);

}  // namespace nccl_triage::triage
