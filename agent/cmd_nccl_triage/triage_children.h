// The small binary's side of the triage children: `nccl-triage-server triage-fetch`, whose
// framed stream is decoded and classified as it arrives (one LogReader per open log, so memory
// does not grow with the logs), and `nccl-triage-server triage-keep`, fed the incident on stdin.
// Both run under the child-process contract (probe/subprocess.h) with an allow-listed
// environment: what the kubeconfig or the service account needs, nothing else.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "triage/incident.h"
#include "triage/render.h"

namespace nccl_triage {

struct FetchRequest {
  std::string server_exe;
  std::vector<std::string> args;  // triage-fetch's arguments
  std::chrono::milliseconds timeout{600'000};
  // Called now and then while logs arrive (logs finished, logs known); may be empty.
  std::function<void(size_t done, size_t total)> progress;
};

struct FetchResult {
  std::string ns;
  std::string api;       // where the credentials came from
  std::string found_by;  // which selector found the pods
  std::vector<triage::JobPod> pods;
  std::vector<std::string> missing;
  bool checks_read = false;
  std::string checks_error = "no agent verdict was read";
  std::vector<triage::AgentVerdict> agents;
  std::vector<triage::LogResult> logs;
};

// Runs the fetch child to its end. Errors (one line): the child cannot run, it says the API
// cannot be used (its line), or its stream breaks the contract.
StatusOr<FetchResult> RunFetch(const FetchRequest& request);

// The coordinator: where it is and how to prove who we are (its token and, for TLS, its CA).
struct CoordinatorAccess {
  std::string server_exe;
  std::string target;  // HOST:PORT of its gRPC port
  std::string token_file;
  std::string ca_file;
};

// Asks the coordinator for the probes of `nodes` (triage-coordinator --probe). Never fails: a
// coordinator that cannot be asked or refuses is the outcome's `error`. `progress` is called
// when they start (0) and about once a second while they run (seconds so far); may be empty.
triage::ProbeOutcome RunProbes(const CoordinatorAccess& coordinator,
                               const std::vector<std::string>& nodes, std::chrono::seconds timeout,
                               const std::function<void(int seconds)>& progress);

// Counts the incident on the coordinator (nccl_triage_incidents_total); empty or the error.
std::string CountIncident(const CoordinatorAccess& coordinator, const triage::Incident& incident);

// Runs the keep child with the incident. Never fails: what went wrong is in the outcome.
triage::KeepOutcome RunKeep(const std::string& server_exe, const std::vector<std::string>& args,
                            const triage::Incident& incident, const FetchResult& fetched);

// The environment the children get: the API variables of this process, nothing else.
std::vector<std::string> ApiEnvironment();

}  // namespace nccl_triage
