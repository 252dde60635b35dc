#include "triage/incident.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "base/log.h"
#include "triage/incident_decide.h"
#include "triage/incident_explain.h"
#include "triage/incident_logs.h"
#include "triage/incident_nodes.h"
#include "triage/incident_scope.h"

namespace nccl_triage::triage {

bool IsFault(FaultClass c) {
  return c == FaultClass::kArchitecture || c == FaultClass::kIbResource;
}

// One judgement, in the order a reader follows it: the logs (who failed first, whom they name),
// the node checks and the probes (each a verdict of its own, looking first at the nodes the logs
// point at), the verdict that decides and where, then the explanation, one row per log and the
// object the event is posted on. Each step takes what it reads and returns what it found.
Incident JudgeIncident(const IncidentInput& in) {
  Incident out;
  out.ns = in.ns;
  out.target = in.target;
  out.at_ms = in.now_ms;
  out.pods = static_cast<int>(in.pods.size());
  const JobScope scope = ScopeOfJob(in.pods, in.nodes);
  out.nodes = static_cast<int>(scope.nodes.size());
  for (const std::string& m : in.missing) out.not_looked_at.push_back("pod " + m + ": not found");

  const SortedLogs logs = SortLogs(in.logs, in.pods, scope);
  const LogFindings found = NameFirstFailure(logs, in.pods);
  const std::vector<std::string> focus = FocusNodes(found.first, found.peer);
  const ChecksFindings checks =
      JudgeChecks(in.checks_read, in.checks_error, in.agents, scope.nodes, focus);
  const ProbesFindings probes = JudgeProbes(in.probes, focus);
  for (const auto* notes : {&logs.not_looked_at, &checks.not_looked_at, &probes.not_looked_at}) {
    out.not_looked_at.insert(out.not_looked_at.end(), notes->begin(), notes->end());
  }

  IncidentDecision decision = DecideIncident(found.verdict, checks.verdict, probes.verdict);
  out.where = LocateFault(found, probes.fault, decision, in.agents, scope.nodes);
  Explanation why =
      ExplainDecision(ExplainLogs(logs, found, scope), decision, probes.fault, out.where);
  const KernelWindow window = JobKernelWindow(in.logs, in.pods);
  KernelLines kernel = KernelCauses(in.agents, scope.nodes, window);

  out.fault_class = decision.fault_class;
  out.cause = decision.cause;
  out.basis = decision.basis;
  out.disagreements = std::move(decision.disagreements);
  out.bases = {found.verdict, checks.verdict, probes.verdict};
  out.first = found.first;
  out.peer = found.peer;
  out.confirmed_by = found.confirmed_by;
  out.reason = std::move(why.reason);
  out.evidence = std::move(why.evidence);
  out.remedy = std::move(why.remedy);
  out.rails = RailLines(in.probes.rail_faults);
  out.kernel = std::move(kernel.in_window);
  out.kernel_outside = std::move(kernel.outside);
  out.kernel_from_ms = window.from_ms;
  out.kernel_to_ms = window.to_ms;
  out.kernel_window = window.bounds;
  out.rows = PodRows(in.logs, logs, found, scope);
  out.event_object = EventObject(found.first, in.pods, scope);
  out.exit_code = IncidentExitCode(out.fault_class);
  return out;
}

StatusOr<ProbeOutcome> ProbeOutcomeFromJson(const nlohmann::json& j) {
  using nlohmann::json;
  if (!j.is_object()) return InvalidArgument("the coordinator's answer is not a JSON object");
  ProbeOutcome out;
  out.asked = true;
  auto str = [](const json& o, const char* k) {
    auto it = o.find(k);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto strs = [](const json& o, const char* k) {
    std::vector<std::string> v;
    auto it = o.find(k);
    if (it == o.end() || !it->is_array()) return v;
    for (const json& s : *it) {
      if (s.is_string()) v.push_back(s.get<std::string>());
    }
    return v;
  };
  for (const json& n : j.value("nodes", json::array())) {
    if (!n.is_object())
      return InvalidArgument("a node of the coordinator's answer is not an object");
    out.nodes.push_back({str(n, "node"), str(n, "state"), str(n, "reason")});
    for (const json& r : n.value("rails", json::array())) {
      if (!r.is_object() || str(r, "fault").empty()) continue;
      const json& index = r.value("rail", json(-1));
      if (!index.is_number_unsigned()) continue;  // a rail without its number names nothing
      ProbeRailFault f;
      f.node = str(n, "node");
      f.rail = static_cast<int>(std::min<uint64_t>(index.get<uint64_t>(), 1 << 16));
      f.device = str(r, "device");
      f.fault = str(r, "fault");
      const json& slow = r.value("rate_degraded", json(false));
      f.rate_degraded = slow.is_boolean() && slow.get<bool>();
      f.causes = strs(r, "causes");
      f.reason = str(r, "reason");
      f.seen_by = str(r, "seen_by");
      out.rail_faults.push_back(std::move(f));
    }
  }
  for (const json& f : j.value("faults", json::array())) {
    if (!f.is_object())
      return InvalidArgument("a fault of the coordinator's answer is not an object");
    const std::vector<std::string> nodes = strs(f, "nodes");
    ProbeFault pf;
    pf.kind = str(f, "kind");
    pf.node = nodes.empty() ? std::string() : nodes[0];
    pf.peer = nodes.size() > 1 ? nodes[1] : std::string();
    pf.fault_class = FromString<FaultClass>(str(f, "class")).value_or(FaultClass::kUnknown);
    pf.causes = strs(f, "causes");
    pf.reason = str(f, "reason");
    out.faults.push_back(std::move(pf));
  }
  out.references = strs(j, "references");
  const json& pairs = j.value("pairs_probed", json(0));
  out.pairs_probed = pairs.is_number_integer() ? pairs.get<int>() : 0;
  return out;
}

namespace {

using nlohmann::json;

std::string ClassJson(FaultClass c) { return std::string(ToString(c)); }

json OrNull(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json TimeJson(const std::optional<int64_t>& ns) {
  if (!ns) return nullptr;
  return FormatRfc3339(*ns / 1'000'000, true);
}

json EvidenceJson(const EvidenceLine& e) {
  return json{{"pod", e.pod}, {"container", e.container}, {"line", e.line}, {"text", e.text}};
}

json BasesJson(const std::vector<BasisVerdict>& bases) {
  json out = json::array();
  for (const auto& b : bases) {
    out.push_back({{"basis", b.basis},
                   {"looked", b.looked},
                   {"class", ClassJson(b.fault_class)},
                   {"cause", OrNull(b.cause)},
                   {"summary", b.summary}});
  }
  return out;
}

json FirstFailureJson(const std::optional<FirstFailure>& f) {
  if (!f) return nullptr;
  return {{"pod", f->pod},           {"container", f->container},
          {"previous", f->previous}, {"node", f->node},
          {"rank", f->rank},         {"at", TimeJson(f->at_ns)},
          {"order", f->order},       {"line", EvidenceJson(f->line)}};
}

json PeerJson(const std::optional<PeerView>& p) {
  if (!p) return nullptr;
  return {{"name", p->match.name},
          {"pod", p->match.pod},
          {"node", p->match.node},
          {"matched_by", p->match.how},
          {"named_by_logs", p->named_by}};
}

json LocalisationJson(const Localisation& where) {
  if (where.kind.empty()) return nullptr;
  return {{"kind", where.kind},
          {"node", where.node},
          {"peer_node", where.peer_node},
          {"basis", where.basis}};
}

json RowsJson(const std::vector<PodRow>& rows) {
  json out = json::array();
  for (const auto& r : rows) {
    out.push_back({{"pod", r.pod},
                   {"node", r.node},
                   {"container", r.container},
                   {"previous", r.previous},
                   {"state", r.state},
                   {"log", r.log},
                   {"class", ClassJson(r.fault_class)},
                   {"cause", r.cause},
                   {"first_failure_at", TimeJson(r.at_ns)},
                   {"first_failing_line", r.first_line},
                   {"note", r.note}});
  }
  return out;
}

json MsJson(const std::optional<int64_t>& ms) {
  return ms ? json(FormatRfc3339(*ms)) : json(nullptr);
}

}  // namespace

nlohmann::json ToJson(const Incident& in) {
  json j = {{"schema", kIncidentSchema},
            {"namespace", in.ns},
            {"target", in.target},
            {"at", FormatRfc3339(in.at_ms)},
            {"pods", in.pods},
            {"nodes", in.nodes},
            {"class", ClassJson(in.fault_class)},
            {"cause", OrNull(in.cause)},
            {"basis", OrNull(in.basis)},
            {"reason", in.reason},
            {"remedy", in.remedy},
            {"disagreements", in.disagreements},
            {"not_looked_at", in.not_looked_at},
            {"confirmed_by_logs", in.confirmed_by},
            {"exit_code", in.exit_code}};
  j["bases"] = BasesJson(in.bases);
  j["first_failure"] = FirstFailureJson(in.first);
  j["peer"] = PeerJson(in.peer);
  j["localisation"] = LocalisationJson(in.where);
  json ev = json::array();
  for (const auto& e : in.evidence) ev.push_back(EvidenceJson(e));
  j["evidence"] = ev;
  j["logs"] = RowsJson(in.rows);
  j["rails"] = in.rails;
  j["kernel"] = in.kernel;
  j["kernel_outside_window"] = in.kernel_outside;
  j["kernel_window"] = {{"from", MsJson(in.kernel_from_ms)},
                        {"to", MsJson(in.kernel_to_ms)},
                        {"bounds", in.kernel_window}};
  j["event_object"] = {{"api_version", in.event_object.api_version},
                       {"kind", in.event_object.kind},
                       {"name", in.event_object.name}};
  return j;
}

}  // namespace nccl_triage::triage
