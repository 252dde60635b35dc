#include "core/classification.h"

#include <nlohmann/json.hpp>

namespace nccl_triage {

namespace {
nlohmann::json ToJson(const LogLine& l) { return {{"line", l.number}, {"text", l.text}}; }
}  // namespace

nlohmann::json ToJson(const Classification& c) {
  nlohmann::json causes = nlohmann::json::array();
  for (const auto& cause : c.causes) {
    nlohmann::json ev = nlohmann::json::array();
    for (const auto& l : cause.evidence) ev.push_back(ToJson(l));
    causes.push_back({{"cause", cause.cause},
                      {"class", ToString(cause.fault_class)},
                      {"fix_class", ToString(cause.fix_class)},
                      {"confidence", cause.confidence},
                      {"evidence", ev},
                      {"remedy", cause.remedy},
                      {"diagnostics", cause.diagnostics}});
  }
  nlohmann::json roots = nlohmann::json::array();
  for (const auto& r : c.roots) roots.push_back({{"rank", r.rank}, {"line", ToJson(r.line)}});
  nlohmann::json j = {{"class", ToString(c.fault_class)},
                      {"reason", c.reason},
                      {"causes", causes},
                      {"roots", roots},
                      {"transports", c.transports},
                      {"local_transports", c.local_transports},
                      {"network", c.network},
                      {"nccl_version", c.nccl_version},
                      {"init_complete", c.init_complete},
                      {"lines", c.lines}};
  nlohmann::json ib_lines = nlohmann::json::array();
  for (const auto& l : c.ib_lines) ib_lines.push_back(ToJson(l));
  j["ib_ports"] = c.ib_ports;
  j["gdrdma"] = c.gdrdma;
  j["ib_lines"] = ib_lines;
  j["result_code"] = c.result_code ? nlohmann::json(*c.result_code) : nlohmann::json(nullptr);
  return j;
}

}  // namespace nccl_triage
