#include "triage/render.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/log.h"
#include "classify/classifier.h"
#include "core/catalogue.h"
#include "core/json_text.h"

namespace nccl_triage::triage {
namespace {

// An incident's class is a verdict: which path failed (README "The decision table"). Where the
// fix lives is the class of its cause in the catalogue, which can differ (limits.memlock breaks
// only the IB path, and is fixed in the host or container setup): FixLine says so.
std::string Meaning(FaultClass c) {
  switch (c) {
    case FaultClass::kHealthy:
      return "NCCL did not fail";
    case FaultClass::kArchitecture:
      return "NCCL fails without InfiniBand too";
    case FaultClass::kIbResource:
      return "the InfiniBand/RDMA path fails, sockets work";
    case FaultClass::kUnknown:
      break;
  }
  return "nothing to conclude";
}

std::string FixPlace(FaultClass c) {
  switch (c) {
    case FaultClass::kArchitecture:
      return "the host, container or version setup";
    case FaultClass::kIbResource:
      return "the fabric, the HCA or the RDMA stack";
    default:
      return "";
  }
}

std::string Time(const std::optional<int64_t>& ns) {
  return ns ? FormatRfc3339(*ns / 1'000'000, true) : std::string("-");
}

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

std::string PascalCase(std::string_view snake) {
  std::string out;
  bool upper = true;
  for (char c : snake) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return out;
}

std::string Who(const PeerMatch& m) {
  return m.pod.empty() ? "node " + m.node
                       : m.pod + (m.node.empty() ? "" : " (node " + m.node + ")");
}

std::string WhereText(const Localisation& w) {
  if (w.kind == "link")
    return "link " + w.node + " - " + w.peer_node + " (from the " + w.basis + ")";
  if (w.kind == "node") return "node " + w.node + " (from the " + w.basis + ")";
  return "not localised";
}

// Cut to at most `n` bytes on a UTF-8 boundary.
std::string Fit(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  size_t end = n;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end);
}

}  // namespace

std::string RenderIncidentTable(const Incident& in, const KeepOutcome& kept, size_t max_rows) {
  std::string o;
  o += "incident: " + Printable(in.target) + " in namespace " + Printable(in.ns) + " (" +
       std::to_string(in.pods) + " pods on " + std::to_string(in.nodes) + " nodes), " +
       FormatRfc3339(in.at_ms) + "\n";
  o += "class:    " + std::string(ToString(in.fault_class)) + " — " + Meaning(in.fault_class);
  if (!in.basis.empty()) o += " (basis: " + in.basis + ")";
  o += "\n";
  if (!in.cause.empty()) {
    const CauseInfo* info = FindCause(in.cause);
    o += "cause:    " + in.cause + (info != nullptr ? "  " + std::string(info->title) : "");
    if (info != nullptr && !FixPlace(info->fault_class).empty()) {
      o += "; the fix is in " + FixPlace(info->fault_class);
    }
    o += "\n";
  }
  o += "reason:   " + Printable(in.reason) + "\n";
  if (in.first) {
    o += "first:    " + in.first->pod + "/" + in.first->container +
         (in.first->previous ? " (previous instance)" : "") +
         (in.first->node.empty() ? "" : " on node " + in.first->node) +
         (in.first->rank.empty() ? "" : ", rank " + Printable(in.first->rank)) + ", at " +
         Time(in.first->at_ns) + " (" + in.first->order + ")\n";
    o +=
        "          line " + std::to_string(in.first->line.line) + ": " + in.first->line.text + "\n";
  }
  if (in.peer) {
    o += "peer:     " + Printable(in.peer->match.name) + " = " + Who(in.peer->match) + ", by " +
         in.peer->match.how + "; named by " + std::to_string(in.peer->named_by) + " log(s)\n";
  }
  o += "where:    " + WhereText(in.where) + "\n";
  for (const auto& r : in.rails) o += "rail:     " + Printable(r) + "\n";
  for (const auto& k : in.kernel) o += "kernel:   " + Printable(k) + "\n";
  for (const auto& k : in.kernel_outside) o += "kernel:   not blamed: " + Printable(k) + "\n";
  if (!in.remedy.empty()) o += "fix:      " + Printable(in.remedy) + "\n";

  o += "\n" + Pad("basis", 8) + Pad("class", 14) + Pad("cause", 24) + "says\n";
  for (const auto& b : in.bases) {
    o += Pad(b.basis, 8) + Pad(b.looked ? std::string(ToString(b.fault_class)) : "-", 14) +
         Pad(b.cause.empty() ? "-" : b.cause, 24) + Printable(b.summary) + "\n";
  }
  for (const auto& d : in.disagreements) o += "disagree: " + Printable(d) + "\n";

  if (!in.evidence.empty()) {
    o += "\nevidence:\n";
    for (const auto& e : in.evidence) {
      o += "  " + e.pod + " line " + std::to_string(e.line) + ": " + e.text + "\n";
    }
  }

  o += "\nlogs (" + std::to_string(in.rows.size()) + "):\n";
  size_t pod_w = 4, node_w = 4;
  const size_t shown = std::min(max_rows, in.rows.size());
  for (size_t i = 0; i < shown; ++i) {
    pod_w = std::max(pod_w, in.rows[i].pod.size() + in.rows[i].container.size() + 1 +
                                (in.rows[i].previous ? 11 : 0));
    node_w = std::max(node_w, in.rows[i].node.size());
  }
  o += "  " + Pad("POD/CONTAINER", pod_w + 1) + Pad("NODE", node_w + 1) + Pad("CLASS", 13) +
       Pad("CAUSE", 22) + Pad("FIRST FAILURE AT", 25) + "LOG\n";
  for (size_t i = 0; i < shown; ++i) {
    const PodRow& r = in.rows[i];
    const bool read = r.log.rfind("not read", 0) != 0;
    o += "  " + Pad(r.pod + "/" + r.container + (r.previous ? " (previous)" : ""), pod_w + 1) +
         Pad(r.node.empty() ? "-" : r.node, node_w + 1) +
         Pad(read ? std::string(ToString(r.fault_class)) : "-", 13) +
         Pad(r.cause.empty() ? "-" : r.cause, 22) + Pad(Time(r.at_ns), 25) + r.log +
         (r.note.empty() ? "" : "; " + r.note) + (r.state.empty() ? "" : "; container " + r.state) +
         "\n";
  }
  if (shown < in.rows.size()) {
    o += "  (+" + std::to_string(in.rows.size() - shown) +
         " more, healthy or alike; "
         "--format json lists every log)\n";
  }

  if (!in.not_looked_at.empty()) {
    o += "\nnot looked at:\n";
    const size_t cap = 12;
    for (size_t i = 0; i < in.not_looked_at.size() && i < cap; ++i) {
      o += "  - " + Printable(in.not_looked_at[i]) + "\n";
    }
    if (in.not_looked_at.size() > cap) {
      o += "  (+" + std::to_string(in.not_looked_at.size() - cap) + " more in --format json)\n";
    }
  }

  o += "\nkept:     ";
  if (!kept.attempted) {
    o += "nothing (" + kept.not_attempted + ")\n";
  } else {
    o += "annotation " + std::string(kIncidentAnnotation) + " on " +
         std::to_string(kept.annotated) + " pod(s)";
    if (kept.annotate_failed > 0) {
      o += " (" + std::to_string(kept.annotate_failed) +
           " failed: " + Printable(kept.annotate_error) + ")";
    }
    o += kept.event_created ? "; event on " + in.event_object.kind + " " + in.event_object.name
                            : "; no event (" + Printable(kept.event_error) + ")";
    o += kept.counted ? "; counted by the coordinator"
                      : "; not counted (" + Printable(kept.count_error) + ")";
    o += "\n";
  }
  return o;
}

std::string IncidentAnnotation(const Incident& in) {
  nlohmann::json j = {{"schema", kIncidentSchema},
                      {"at", FormatRfc3339(in.at_ms)},
                      {"class", std::string(ToString(in.fault_class))},
                      {"cause", in.cause},
                      {"basis", in.basis},
                      {"where", in.where.kind},
                      {"node", in.where.node},
                      {"peer_node", in.where.peer_node},
                      {"first_pod", in.first ? in.first->pod : std::string()},
                      {"reason", in.reason}};
  auto dump = [&] { return DumpJson(j); };
  std::string text = dump();
  if (text.size() > kMaxAnnotationBytes) {
    const size_t over = text.size() - kMaxAnnotationBytes;
    const std::string& reason = in.reason;
    j["reason"] = Fit(reason, reason.size() > over + 3 ? reason.size() - over - 3 : 0) + "...";
    j["truncated"] = true;
    text = dump();
  }
  // Escapes can still make it longer than the fields: the bound is a promise, not a goal.
  if (text.size() > kMaxAnnotationBytes) {
    j.erase("reason");
    text = dump();
  }
  return text;
}

std::string IncidentEventReason(const Incident& in) {
  return "NcclIncident" + PascalCase(ToString(in.fault_class));
}

std::string IncidentEventMessage(const Incident& in) {
  std::string m = "nccl-triage: " + std::string(ToString(in.fault_class));
  if (!in.cause.empty()) m += " (" + in.cause + ")";
  if (!in.basis.empty()) m += ", basis " + in.basis;
  if (!in.where.kind.empty()) m += "; " + WhereText(in.where);
  m += "; " + in.reason;
  if (!in.remedy.empty()) m += "; fix: " + in.remedy;
  m = Printable(m);
  return m.size() > kMaxEventMessageBytes ? Fit(m, kMaxEventMessageBytes - 3) + "..." : m;
}

}  // namespace nccl_triage::triage
