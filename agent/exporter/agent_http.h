// The agent's HTTP endpoints, served by one HttpServer:
//   /metrics  Prometheus text format (AgentMetrics::Scrape)
//   /livez    200 as long as the process answers; it never looks at a verdict, so a broken HCA
//             can not put the agent into CrashLoopBackOff
//   /readyz   200 once the first cycle finished, 503 before
//   /status   the current report, verdict, whether the probes can run (and why not), probe
//             results and pair verdicts as JSON
// With an authorizer (server.auth: kubernetes), /metrics and /status answer only a bearer token
// the API server allows (exporter/http_auth.h); /livez and /readyz stay open for the kubelet.
// The state and metrics are not owned and must outlive the server.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "exporter/http_auth.h"
#include "exporter/http_server.h"
#include "exporter/metrics.h"
#include "state/agent_state.h"

namespace nccl_triage {

inline constexpr const char* kAgentStatusSchema = "nccl-triage/agent-status/v1";

// The body of /status.
nlohmann::json AgentStatusJson(const AgentStateView& view);
// Its `probe_availability`: whether the probes can run and, when not, the one-line reason, the
// reason label nccl_triage_probe_available has and the catalogue's remedy (core/catalogue.h):
// {"available": false, "reason": "no_gpu", "cause": "probe.no_gpu", "detail": "cuInit: ...",
//  "remedy": "...", "nccl_version", "nccl_library", "updated_at"}.
nlohmann::json ProbeAvailabilityJson(const ProbeAvailability& availability);

void InstallAgentEndpoints(HttpServer& server, const AgentState& state, AgentMetrics& metrics,
                           std::shared_ptr<HttpAuthorizer> authorizer = nullptr);

}  // namespace nccl_triage
