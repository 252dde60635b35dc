#include "coordinator/status_view.h"

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "exporter/http_auth.h"
#include "exporter/http_server.h"
#include "planner/cross_node.h"

namespace nccl_triage {
namespace {

// Unprobed pairs of incompatible groups: the nodes grouped by what the cross-node checks read,
// each pair of groups judged once.
std::vector<std::pair<NodePair, PairVerdict>> PredictedPairs(
    const std::map<std::string, NodeInfo>& known, const std::map<NodePair, PairRecord>& probed) {
  std::vector<std::pair<NodePair, PairVerdict>> out;
  std::map<std::string, std::vector<const NodeInfo*>> groups;
  for (const auto& [node, info] : known) groups[CrossNodeSignature(info)].push_back(&info);
  for (auto ga = groups.begin(); ga != groups.end(); ++ga) {
    for (auto gb = ga; gb != groups.end(); ++gb) {
      if (out.size() >= kMaxPredictedPairs) return out;
      const NodeInfo& a0 = *ga->second.front();
      const NodeInfo& b0 = ga == gb ? *ga->second.back() : *gb->second.front();
      if (&a0 == &b0 || !PredictedIncompatible(a0, b0)) continue;
      for (const NodeInfo* a : ga->second) {
        for (const NodeInfo* b : gb->second) {
          if (a == b || out.size() >= kMaxPredictedPairs) continue;
          if (ga == gb && a->name > b->name) continue;
          NodePair key(a->name, b->name);
          if (probed.count(key)) continue;
          out.emplace_back(key, PredictPair(*a, *b));
        }
      }
    }
  }
  return out;
}

// What the node's agent said of its probes: available true or false with the reason word and
// its evidence, or available null and reason "unknown" from an agent that does not say.
nlohmann::json ProbeJson(const NodeInfo& info) {
  if (!info.probe) {
    return {{"available", nullptr}, {"reason", kProbeAvailabilityUnknown}, {"evidence", ""}};
  }
  return {{"available", info.probe->available},
          {"reason", info.probe->reason},
          {"evidence", info.probe->evidence}};
}

}  // namespace

CoordinatorView BuildCoordinatorView(const CoordinatorViewSource& source, bool with_pairs) {
  CoordinatorView view;
  for (const auto& [node, info] : source.known) {
    CoordinatorView::Agent a;
    a.info = info;
    a.connected = source.connected && source.connected(node);
    auto peer = source.peers.find(node);
    if (peer != source.peers.end()) a.peer = peer->second;
    view.agents.push_back(std::move(a));
  }
  view.nodes = source.verdicts.nodes();
  // Nodes never localised yet: what their own checks say.
  for (const auto& [node, info] : source.known) {
    if (!view.nodes.count(node)) view.nodes[node] = ChecksVerdict(info, "not probed yet");
  }
  for (const auto& [k, rec] : source.verdicts.pairs()) {
    if (rec.judgement.status != PairStatus::kInconclusive) ++view.pairs_concluded;
    if (with_pairs) view.pairs.push_back(rec);
  }
  view.faults = source.verdicts.hold_down().All();
  view.predicted = PredictedPairs(source.known, source.verdicts.pairs());
  view.sweeps_done = source.sweeps_done;
  view.last_sweep_rounds = source.last_sweep_rounds;
  view.pairs_tested = source.schedule.pairs_tested();
  view.pairs_total = source.schedule.pairs_total();
  view.coverage_cycles = source.schedule.cycles_completed();
  view.hold_down = source.verdicts.hold_down().hold_down();
  if (source.remediation) view.remediation = *source.remediation;
  if (source.validation) view.validation = *source.validation;
  return view;
}

nlohmann::json ToJson(const CoordinatorView& view) {
  nlohmann::json j;
  j["sweeps_done"] = view.sweeps_done;
  j["last_sweep_rounds"] = view.last_sweep_rounds;
  j["pairs_concluded"] = view.pairs_concluded;
  j["hold_down"] = view.hold_down;
  j["coverage"] = {{"pairs_tested", view.pairs_tested},
                   {"pairs_total", view.pairs_total},
                   {"cycles_completed", view.coverage_cycles}};
  j["agents"] = nlohmann::json::array();
  for (const auto& a : view.agents) {
    j["agents"].push_back({{"node", a.info.name},
                           {"connected", a.connected},
                           {"peer", a.peer},
                           {"topology", a.info.topology},
                           {"arch", a.info.arch},
                           {"nccl_version", a.info.nccl_version},
                           {"gpus_busy", a.info.gpus_busy},
                           {"probe", ProbeJson(a.info)}});
  }
  std::map<std::string, const NodeInfo*> infos;
  for (const auto& a : view.agents) infos[a.info.name] = &a.info;
  static const NodeInfo kNothingKnown;
  j["nodes"] = nlohmann::json::array();
  for (const auto& [node, v] : view.nodes) {
    auto it = infos.find(node);
    const NodeInfo& info = it != infos.end() ? *it->second : kNothingKnown;
    j["nodes"].push_back({{"node", node},
                          {"class", ToString(v.fault_class)},
                          {"basis", ToString(v.basis)},
                          {"causes", v.causes},
                          {"state", ToString(v.state)},
                          {"reason", v.reason},
                          {"probe", ProbeJson(info)}});
  }
  j["faults"] = nlohmann::json::array();
  for (const auto& t : view.faults) {
    j["faults"].push_back({{"kind", ToString(t.fault.kind)},
                           {"nodes", t.fault.nodes},
                           {"class", ToString(t.fault.fault_class)},
                           {"causes", t.fault.causes},
                           {"confirmed", t.confirmed},
                           {"seen_sweeps", t.seen},
                           {"reason", t.fault.reason}});
  }
  if (view.remediation) j["remediation"] = ToJson(*view.remediation);
  if (view.validation) j["validation"] = ToJson(*view.validation);
  if (view.leadership) {
    const CoordinatorView::Leadership& l = *view.leadership;
    const nlohmann::json holder = l.holder.empty() ? nlohmann::json() : nlohmann::json(l.holder);
    nlohmann::json le = {{"role", l.leader ? "leader" : "standby"},
                         {"leader", holder},
                         {"lease", l.lease},
                         {"lease_transitions", l.transitions},
                         {"last_error", l.last_error}};
    if (!l.pod_label.empty()) {
      le["pod_label"] = l.pod_label;
      le["pod_labelled"] = l.pod_labelled;
    }
    j["leader_election"] = std::move(le);
  }
  j["predicted"] = nlohmann::json::array();
  for (const auto& [pair, v] : view.predicted) {
    j["predicted"].push_back({{"a", pair.a},
                              {"b", pair.b},
                              {"class", ToString(v.fault_class)},
                              {"basis", ToString(v.basis)},
                              {"causes", v.causes},
                              {"reason", v.reason}});
  }
  j["pairs"] = nlohmann::json::array();
  for (const auto& p : view.pairs) {
    // Healthy pairs are counted, not listed: /status stays small on a large cluster.
    if (p.judgement.status == PairStatus::kPass) continue;
    j["pairs"].push_back({{"a", p.pair.a},
                          {"b", p.pair.b},
                          {"socket", ToString(p.judgement.socket)},
                          {"ib", ToString(p.judgement.ib)},
                          {"class", ToString(p.judgement.verdict.fault_class)},
                          {"causes", p.judgement.verdict.causes},
                          {"localisation", ToString(p.localisation)},
                          {"sweep", p.sweep},
                          {"reason", p.judgement.verdict.reason}});
  }
  return j;
}

void AddCoordinatorEndpoints(HttpServer& http, CoordinatorEndpoints e) {
  // Health probes on the server's own thread: never behind a slow /status.
  http.GetHealth("/livez", [](const HttpRequest&) { return HttpReply{200, "text/plain", "ok\n"}; });
  http.GetHealth("/readyz", [ready = e.ready, reason = e.not_ready_reason](const HttpRequest&) {
    if (ready()) return HttpReply{200, "text/plain", "ready\n"};
    const std::string why = reason ? reason() : std::string();
    return HttpReply{503, "text/plain", why.empty() ? "not ready\n" : "not ready: " + why + "\n"};
  });
  http.Get("/metrics", Authorized(e.authorizer, [metrics = e.metrics](const HttpRequest&) {
             return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", metrics()};
           }));
  http.Get("/status", Authorized(e.authorizer, [view = e.view](const HttpRequest&) {
             return HttpReply{200, "application/json", DumpJson(ToJson(view()), 2) + "\n"};
           }));
  // A sweep probes every idle GPU node: only a holder of the coordinator's token may ask for one
  // (it must not answer anyone who can reach the port).
  http.Post(
      "/sweep", [request = e.request_sweep, matches = e.sweep_token_matches](const HttpRequest& r) {
        if (!matches) {
          return HttpReply{403, "text/plain; charset=utf-8",
                           "POST /sweep is disabled: the coordinator has no token\n"};
        }
        constexpr std::string_view kBearer = "Bearer ";
        const std::string_view auth = r.Header("authorization");
        if (auth.substr(0, kBearer.size()) != kBearer || !matches(auth.substr(kBearer.size()))) {
          return HttpReply{401,
                           "text/plain; charset=utf-8",
                           auth.empty()
                               ? "POST /sweep needs Authorization: Bearer <coordinator token>\n"
                               : "invalid token\n",
                           {{"WWW-Authenticate", "Bearer realm=\"nccl-triage\""}}};
        }
        const uint64_t n = request();
        return HttpReply{202, "application/json",
                         nlohmann::json{{"sweep", n}, {"status", "requested"}}.dump() + "\n"};
      });
}

}  // namespace nccl_triage
