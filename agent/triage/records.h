// What `nccl-triage triage` learns about a job from the Kubernetes API, as plain values.
//
// The API's Pod objects are large; the triage keeps only what the incident needs (where each
// pod ran, its addresses, how each container ended) in a JobPod, built from the API's JSON here
// (pure) in the server child and sent to the small binary as this compact JSON. The same holds
// for the agents' published node verdicts (AgentVerdict, from the `nccl-triage.io/*` annotations
// of the agent pods) and for what came of each log read (LogStreamEnd).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace nccl_triage::triage {

// The pod's controller (a Job, PyTorchJob, MPIJob, JobSet's Job...): where the incident's event
// goes.
struct OwnerRef {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
};

// How one container of a pod stands, and how its previous instance ended.
struct ContainerState {
  std::string name;
  int restart_count = 0;
  std::string state;        // running | terminated | waiting | unknown
  std::string reason;       // "OOMKilled", "Error", "CrashLoopBackOff"
  int exit_code = -1;       // when terminated
  std::string last_reason;  // lastState.terminated: the instance before a restart
  int last_exit_code = -1;
};

struct JobPod {
  std::string name;
  std::string ns;
  std::string uid;
  std::string node;
  std::string hostname;  // spec.hostname (what NCCL prints as the host when set)
  std::string phase;
  std::string pod_ip;
  std::vector<std::string> pod_ips;
  std::string host_ip;
  bool host_network = false;
  std::string index;  // the job's completion or replica index, when a label gives it
  OwnerRef owner;     // empty kind: none
  std::string start_time;  // status.startTime (RFC 3339): when the kubelet took the pod
  std::vector<ContainerState> containers;
};

// The pod as the API returns it (one item of a PodList). Missing fields stay empty.
JobPod PodFromApi(const nlohmann::json& pod);

// The node verdict an agent published on its own pod (nccl-triage.io/verdict, basis, causes,
// updated): what the host checks (or the last sweep) say about a node of the job.
struct AgentVerdict {
  std::string node;
  std::string pod;
  std::string verdict;  // healthy | architecture | ib_resource | unknown
  std::string basis;    // checks | probes
  std::vector<std::string> causes;
  std::string updated;  // RFC 3339
  // The wall time (RFC 3339) of the last kernel-log event of each kernel cause, from the report
  // annotation's "kernel_last_event"; a cause missing here has no time (an older agent, or lines
  // without one).
  std::map<std::string, std::string> kernel_last_event;
};

// The agent pod's annotations as an AgentVerdict; nullopt when it has published none.
std::optional<AgentVerdict> AgentVerdictFromApi(const nlohmann::json& pod);

// One log the server child reads: a container of a pod, its current or previous instance.
struct LogStreamBegin {
  uint64_t id = 0;
  std::string pod;
  std::string container;
  bool previous = false;
};

// How the read of one log ended. `error` empty: read (head, and the tail when the head was cut);
// else why not, or why only in part.
struct LogStreamEnd {
  uint64_t id = 0;
  int status = 0;  // HTTP status of the failing request (0: none, or no response)
  std::string error;
  uint64_t head_bytes = 0;
  uint64_t tail_bytes = 0;
  bool tail = false;      // the head reached its limit, the tail was read after it
  bool tail_cut = false;  // the tail reached the byte limit too: the end of the log is missing
};

nlohmann::json ToJson(const JobPod& pod);
nlohmann::json ToJson(const AgentVerdict& agent);
nlohmann::json ToJson(const LogStreamBegin& begin);
nlohmann::json ToJson(const LogStreamEnd& end);
// Errors name the field of the wrong type.
StatusOr<JobPod> JobPodFromJson(const nlohmann::json& j);
StatusOr<AgentVerdict> AgentVerdictFromJson(const nlohmann::json& j);
StatusOr<LogStreamBegin> LogStreamBeginFromJson(const nlohmann::json& j);
StatusOr<LogStreamEnd> LogStreamEndFromJson(const nlohmann::json& j);

}  // namespace nccl_triage::triage
