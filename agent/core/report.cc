#include "core/report.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/catalogue.h"

namespace nccl_triage {

FaultClass ClassFromFindings(const std::vector<Finding>& findings) {
  bool arch = false, ib = false, unknown_fail = false, any_pass = false;
  for (const auto& f : findings) {
    if (f.status == CheckStatus::kFail) {
      arch |= f.fault_class == FaultClass::kArchitecture;
      ib |= f.fault_class == FaultClass::kIbResource;
      unknown_fail |= f.fault_class == FaultClass::kUnknown;
    }
    any_pass |= f.status == CheckStatus::kPass || f.status == CheckStatus::kWarn;
  }
  if (arch) return FaultClass::kArchitecture;
  if (ib) return FaultClass::kIbResource;
  if (unknown_fail) return FaultClass::kUnknown;
  return any_pass ? FaultClass::kHealthy : FaultClass::kUnknown;
}

namespace {
size_t CatalogueIndex(std::string_view id) {
  auto cat = Catalogue();
  for (size_t i = 0; i < cat.size(); ++i) {
    if (cat[i].id == id) return i;
  }
  return cat.size();
}
}  // namespace

NodeReport MakeReport(std::string node, std::vector<Finding> findings, int64_t now_unix_ms) {
  NodeReport r;
  r.node = std::move(node);
  r.fault_class = ClassFromFindings(findings);
  for (const auto& f : findings) {
    if (f.status == CheckStatus::kFail) r.causes.push_back(f.check);
  }
  std::stable_sort(r.causes.begin(), r.causes.end(), [](const auto& a, const auto& b) {
    return CatalogueIndex(a) < CatalogueIndex(b);
  });
  r.findings = std::move(findings);
  r.generated_at_unix_ms = now_unix_ms;
  return r;
}

int ExitCodeFor(const NodeReport& report) {
  for (const auto& f : report.findings) {
    if (f.status == CheckStatus::kFail) return 1;
  }
  return 0;
}

nlohmann::json ToJson(const Finding& f) {
  nlohmann::json ev = nlohmann::json::array();
  for (const auto& e : f.evidence) {
    ev.push_back({{"key", e.key}, {"value", e.value}, {"source", e.source}});
  }
  return {{"check", f.check},     {"class", ToString(f.fault_class)}, {"status", ToString(f.status)},
          {"message", f.message}, {"evidence", ev},                   {"remedy", f.remedy}};
}

nlohmann::json ToJson(const NodeReport& r) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : r.findings) findings.push_back(ToJson(f));
  return {{"schema", kNodeReportSchema},
          {"node", r.node},
          {"class", ToString(r.fault_class)},
          {"basis", ToString(r.basis)},
          {"causes", r.causes},
          {"generated_at_unix_ms", r.generated_at_unix_ms},
          {"findings", findings}};
}

Finding FindingFromJson(const nlohmann::json& j) {
  Finding f;
  f.check = j.at("check").get<std::string>();
  f.fault_class =
      FromString<FaultClass>(j.at("class").get<std::string>()).value_or(FaultClass::kUnknown);
  f.status =
      FromString<CheckStatus>(j.at("status").get<std::string>()).value_or(CheckStatus::kSkip);
  f.message = j.value("message", "");
  f.remedy = j.value("remedy", "");
  for (const auto& e : j.value("evidence", nlohmann::json::array())) {
    f.evidence.push_back(
        {e.value("key", ""), e.value("value", ""), e.value("source", "")});
  }
  return f;
}

NodeReport ReportFromJson(const nlohmann::json& j) {
  NodeReport r;
  r.node = j.value("node", "");
  r.fault_class =
      FromString<FaultClass>(j.value("class", "unknown")).value_or(FaultClass::kUnknown);
  r.basis = FromString<Basis>(j.value("basis", "checks")).value_or(Basis::kChecks);
  r.causes = j.value("causes", std::vector<std::string>{});
  r.generated_at_unix_ms = j.value("generated_at_unix_ms", int64_t{0});
  for (const auto& f : j.value("findings", nlohmann::json::array())) {
    r.findings.push_back(FindingFromJson(f));
  }
  return r;
}

}  // namespace nccl_triage
