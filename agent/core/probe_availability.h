// Whether this node's probes can run at all, and when not, why: one reason in one word.
//
// The probe child names why it could not run with a catalogue cause (probe.no_nccl,
// probe.no_cuda, probe.no_gpu) in ProbeResult::unavailable_cause; the runner turns that into the
// result's classification, which travels to the coordinator like any other cause, so a pair
// verdict names it too. The agent keeps one ProbeAvailability (state/agent_state.h), set by its
// start-up library check and by every probe result after that, and shows it in /status and as
// nccl_triage_probe_available{reason}. Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/catalogue.h"
#include "core/classification.h"
#include "core/model.h"
#include "core/probe_result.h"

namespace nccl_triage {

// Reasons that are no cause of the catalogue: the probes load and see a GPU; nothing was tried
// yet; the check or the probe could not even start (the detail says why).
inline constexpr std::string_view kProbesAvailable = "ok";
inline constexpr std::string_view kProbesPending = "pending";
inline constexpr std::string_view kProbesError = "error";

struct ProbeAvailability {
  std::string reason = std::string(kProbesPending);  // ok | pending | error | no_nccl | ...
  std::string cause;   // the catalogue id behind `reason` ("probe.no_gpu"), "" for the others
  std::string detail;  // one line: what was found or what failed
  std::string nccl_version;
  std::string nccl_library;
  int64_t updated_at_unix_ms = 0;

  bool available() const { return reason == kProbesAvailable; }
  friend bool operator==(const ProbeAvailability&, const ProbeAvailability&) = default;
};

// The metric label of an unavailability cause: "probe.no_gpu" -> "no_gpu".
std::string_view AvailabilityReason(std::string_view cause);

// The reasons nccl_triage_probe_available takes, in documentation order.
inline constexpr std::string_view kProbeAvailabilityReasons[] = {
    kProbesAvailable, kProbesPending, "no_nccl", "no_cuda", "no_gpu", kProbesError};

// The unavailability cause a result names: unavailable_cause (the child's) or, past the runner,
// the first probe.no_* cause of its classification. Nothing for a result that is not unavailable.
std::optional<std::string> UnavailableCause(const ProbeResult& r);

// What one result says about availability: a probe that got past loading its libraries and
// finding its GPU is ok, whatever its outcome; an unavailable one gives its cause (or "error");
// one that did not run (refused, cancelled) says nothing (nullopt).
std::optional<ProbeAvailability> AvailabilityFromProbe(const ProbeResult& r, int64_t now_unix_ms);

// The finding a node whose probes cannot run carries in its report (so /status, the pod
// annotation and nccl_triage_check_status show it): the cause's id, warn (the node is not at
// fault; its probes are blind), the detail as the message. Nothing when available or pending.
std::optional<Finding> AvailabilityFinding(const ProbeAvailability& a);

// Puts `cause` first in `c` with `evidence` as its one line and the catalogue's remedy (the class
// becomes the cause's when the classification had none).
void PrependCause(Classification& c, const CauseInfo& cause, const std::string& evidence);

}  // namespace nccl_triage
