// How an incident is shown and kept: the table a person reads, the bounded annotation put on
// each of the job's pods, and the one-line message of the Event on the job. Pure: text out.
#pragma once

#include <cstddef>
#include <string>

#include "triage/incident.h"

namespace nccl_triage::triage {

inline constexpr const char* kIncidentAnnotation = "nccl-triage.io/incident";
inline constexpr size_t kMaxAnnotationBytes = 2048;
inline constexpr size_t kMaxEventMessageBytes = 1024;

// What became of keeping the incident, for the report's last lines.
struct KeepOutcome {
  bool attempted = false;
  std::string not_attempted;  // why not: "read-only; --keep writes it", "--no-keep"
  int annotated = 0;
  int annotate_failed = 0;
  std::string annotate_error;  // the first failure, one line
  bool event_created = false;
  std::string event_error;
  bool counted = false;  // the coordinator counted it (nccl_triage_incidents_total)
  std::string count_error;
};

// The report for a terminal: verdict, first failure, peer, where, fix, the bases side by side,
// evidence, the logs (at most `max_rows`, failing first), what was not looked at, what was kept.
std::string RenderIncidentTable(const Incident& incident, const KeepOutcome& kept,
                                size_t max_rows = 20);

// Compact JSON for the `nccl-triage.io/incident` annotation, at most kMaxAnnotationBytes: the
// class, cause, basis, localisation and first failure always; the reason is cut to fit.
std::string IncidentAnnotation(const Incident& incident);

// The Event's reason ("NcclIncidentIbResource") and one-line message (bounded).
std::string IncidentEventReason(const Incident& incident);
std::string IncidentEventMessage(const Incident& incident);

}  // namespace nccl_triage::triage
