#include "exporter/agent_http.h"

#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "base/log.h"
#include "core/catalogue.h"
#include "core/json_text.h"
#include "core/rails.h"
#include "core/report.h"

namespace nccl_triage {
namespace {

nlohmann::json VerdictJson(const NodeVerdict& v) {
  return {{"class", ToString(v.fault_class)},
          {"basis", ToString(v.basis)},
          {"causes", v.causes},
          {"reason", v.reason},
          {"decided_at", v.decided_at_unix_ms > 0 ? FormatRfc3339(v.decided_at_unix_ms) : ""}};
}

}  // namespace

nlohmann::json ProbeAvailabilityJson(const ProbeAvailability& a) {
  const CauseInfo* cause = a.cause.empty() ? nullptr : FindCause(a.cause);
  return {{"available", a.available()},
          {"reason", a.reason},
          {"cause", a.cause},
          {"detail", a.detail},
          {"remedy", cause != nullptr ? std::string(cause->remedy) : std::string()},
          {"nccl_version", a.nccl_version},
          {"nccl_library", a.nccl_library},
          {"updated_at", a.updated_at_unix_ms > 0 ? FormatRfc3339(a.updated_at_unix_ms) : ""}};
}

nlohmann::json AgentStatusJson(const AgentStateView& view) {
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& [key, rec] : view.probes) {
    nlohmann::json p = ToJson(rec->result);
    p["recorded_at"] = FormatRfc3339(rec->recorded_at_unix_ms);
    probes.push_back(std::move(p));
  }
  nlohmann::json rail_probes = nlohmann::json::array();
  for (const auto& [key, rec] : view.rail_probes) {
    nlohmann::json p = ToJson(rec->result);
    p["rail"] = rec->rail;
    p["ib_hca"] = rec->ib_hca;
    p["recorded_at"] = FormatRfc3339(rec->recorded_at_unix_ms);
    rail_probes.push_back(std::move(p));
  }
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& [peer, rec] : view.pairs) {
    const PairVerdict& v = rec->verdict;
    pairs.push_back({{"peer", peer},
                     {"class", ToString(v.fault_class)},
                     {"basis", ToString(v.basis)},
                     {"causes", v.causes},
                     {"reason", v.reason},
                     {"degraded", v.degraded},
                     {"decided_at", FormatRfc3339(rec->decided_at_unix_ms)}});
  }
  // One object per GPU container, in the order the workload pass judged them: its verdict and
  // causes (as `check --workloads` gives them) and every finding.
  nlohmann::json workloads = nlohmann::json::array();
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<Finding>> by_container;
  std::vector<std::tuple<std::string, std::string, std::string>> order;
  for (const auto& w : *view.workloads) {
    auto key = std::make_tuple(w.ns, w.pod, w.container);
    auto [it, added] = by_container.try_emplace(key);
    if (added) order.push_back(key);
    it->second.push_back(w.finding);
  }
  for (const auto& key : order) {
    // Class and causes as every report has them (causes in catalogue order).
    NodeReport r = MakeReport("", std::move(by_container[key]), 0);
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& f : r.findings) findings.push_back(ToJson(f));
    workloads.push_back({{"namespace", std::get<0>(key)},
                         {"pod", std::get<1>(key)},
                         {"container", std::get<2>(key)},
                         {"class", ToString(r.fault_class)},
                         {"causes", r.causes},
                         {"findings", std::move(findings)}});
  }
  nlohmann::json j = {
      {"schema", kAgentStatusSchema},
      {"node", view.node},
      {"version", view.version},
      {"started_at", FormatRfc3339(view.started_at_unix_ms)},
      {"ready", view.ready},
      {"cycle",
       {{"cycles", view.cycle.cycles},
        {"last_started_at",
         view.cycle.cycles ? FormatRfc3339(view.cycle.last_started_unix_ms) : ""},
        {"last_finished_at",
         view.cycle.cycles ? FormatRfc3339(view.cycle.last_finished_unix_ms) : ""},
        {"last_duration_seconds", view.cycle.last_duration_seconds},
        {"last_error", view.cycle.last_error}}},
      {"verdict", VerdictJson(view.Verdict())},
      {"probe_verdict", view.probe_verdict ? VerdictJson(*view.probe_verdict) : nullptr},
      {"coordinator", view.coordinator_status},
      {"probe_availability", ProbeAvailabilityJson(view.probe_availability)},
      {"last_probe_at", view.last_probe_unix_ms ? FormatRfc3339(view.last_probe_unix_ms) : ""},
      {"probes", probes},
      {"rail_probes", rail_probes},
      {"pairs", pairs},
      {"workloads", workloads},
      {"rails", view.summary ? RailsJson(view.summary->rails) : nlohmann::json::array()},
      {"snapshot", view.summary ? ToJson(*view.summary) : nlohmann::json(nullptr)},
      {"report", view.report ? ToJson(*view.report) : nlohmann::json(nullptr)},
  };
  return j;
}

void InstallAgentEndpoints(HttpServer& server, const AgentState& state, AgentMetrics& metrics,
                           std::shared_ptr<HttpAuthorizer> authorizer) {
  server.Get("/metrics", Authorized(authorizer, [&metrics](const HttpRequest&) {
               return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", metrics.Scrape()};
             }));
  server.GetHealth("/livez", [](const HttpRequest&) {
    return HttpReply{200, "text/plain", "ok\n"};
  });
  server.GetHealth("/readyz", [&state](const HttpRequest&) {
    if (state.Ready()) return HttpReply{200, "text/plain", "ready\n"};
    return HttpReply{503, "text/plain", "first check cycle not finished\n"};
  });
  server.Get("/status", Authorized(authorizer, [&state](const HttpRequest&) {
               return HttpReply{200, "application/json",
                                DumpJson(AgentStatusJson(state.View()), 2) + "\n"};
             }));
}

}  // namespace nccl_triage
