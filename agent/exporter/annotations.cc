#include "exporter/annotations.h"

#include <nlohmann/json.hpp>

#include "base/text.h"
#include "core/json_text.h"

namespace nccl_triage {
namespace {

bool Problem(const Finding& f) {
  return f.status == CheckStatus::kFail || f.status == CheckStatus::kWarn;
}

nlohmann::json FindingJson(const Finding& f, bool evidence, size_t message_max) {
  std::string message = f.message;
  if (message.size() > message_max) message = message.substr(0, message_max) + "...";
  nlohmann::json j = {{"check", f.check},
                      {"class", ToString(f.fault_class)},
                      {"status", ToString(f.status)},
                      {"message", message}};
  if (evidence) {
    nlohmann::json ev = nlohmann::json::array();
    for (const auto& e : f.evidence) ev.push_back({{"key", e.key}, {"value", e.value}});
    j["evidence"] = std::move(ev);
  }
  return j;
}

}  // namespace

std::string PascalCase(std::string_view snake) {
  std::string out;
  bool upper = true;
  for (char c : snake) {
    if (c == '_' || c == '.' || c == '-') {
      upper = true;
      continue;
    }
    out += upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return out;
}

std::string CompactReportJson(const AgentStateView& view, size_t max_bytes) {
  NodeVerdict v = view.Verdict();
  nlohmann::json base = {{"node", view.node},
                         {"class", ToString(v.fault_class)},
                         {"basis", ToString(v.basis)},
                         {"causes", v.causes},
                         {"reason", v.reason}};
  if (view.report) base["checks_class"] = ToString(view.report->fault_class);
  const std::vector<Finding> none;
  const std::vector<Finding>& findings = view.report ? view.report->findings : none;
  // The last kernel-log event of each failing or warning kernel check, kept at every level: the
  // triage needs it to tell an event during a job from one hours before.
  nlohmann::json kernel_last = nlohmann::json::object();
  for (const auto& f : findings) {
    if (!Problem(f)) continue;
    for (const auto& e : f.evidence) {
      if (e.key != kLastEventAtKey) continue;
      auto it = kernel_last.find(f.check);
      // RFC 3339 in UTC, one format: the later time sorts last.
      if (it == kernel_last.end() || it->get<std::string>() < e.value) {
        kernel_last[f.check] = e.value;
      }
    }
  }
  if (!kernel_last.empty()) base["kernel_last_event"] = std::move(kernel_last);

  // Level 0: everything; 1: passing and skipped checks as ids; 2: no evidence; 3: short messages;
  // 4: problems as ids only; 5: the verdict alone.
  for (int level = 0; level <= 5; ++level) {
    nlohmann::json j = base;
    nlohmann::json list = nlohmann::json::array();
    std::vector<std::string> passed, skipped, problems;
    for (const auto& f : findings) {
      bool problem = Problem(f);
      if (level >= 1 && !problem) {
        (f.status == CheckStatus::kSkip ? skipped : passed).push_back(f.check);
        continue;
      }
      if (level >= 4) {
        problems.push_back(f.check + ":" + std::string(ToString(f.status)));
        continue;
      }
      list.push_back(FindingJson(f, level <= 1, level >= 3 ? 120 : std::string::npos));
    }
    if (level <= 4) {
      if (!list.empty() || level < 4) j["findings"] = std::move(list);
      if (level == 4) j["problems"] = problems;
      if (level >= 1) {
        j["passed"] = passed;
        j["skipped"] = skipped;
      }
    }
    if (level >= 2) j["truncated"] = true;
    std::string text = DumpJson(j);
    if (text.size() <= max_bytes || level == 5) return text;
  }
  return DumpJson(base);  // not reached
}

DesiredAnnotations AnnotationsFor(const AgentStateView& view, size_t report_max_bytes) {
  NodeVerdict v = view.Verdict();
  DesiredAnnotations out;
  out.values[std::string(kAnnotationVerdict)] = std::string(ToString(v.fault_class));
  out.values[std::string(kAnnotationCauses)] = Join(v.causes, ",");
  out.values[std::string(kAnnotationBasis)] = std::string(ToString(v.basis));
  out.values[std::string(kAnnotationReport)] = CompactReportJson(view, report_max_bytes);
  out.fingerprint = std::string(ToString(v.fault_class)) + "|" + std::string(ToString(v.basis)) +
                    "|" + Join(v.causes, ",") + "|";
  if (view.report) {
    for (const auto& f : view.report->findings) {
      out.fingerprint += f.check + "=" + std::string(ToString(f.status)) + ";";
    }
  }
  return out;
}

NodeCondition ConditionFor(const AgentStateView& view) {
  NodeVerdict v = view.Verdict();
  NodeCondition c;
  c.type = std::string(kConditionType);
  switch (v.fault_class) {
    case FaultClass::kHealthy: c.status = "True"; break;
    case FaultClass::kArchitecture:
    case FaultClass::kIbResource: c.status = "False"; break;
    case FaultClass::kUnknown: c.status = "Unknown"; break;
  }
  c.reason = PascalCase(ToString(v.fault_class));
  if (!v.causes.empty()) {
    c.message = Join(v.causes, ",");
  } else if (v.fault_class == FaultClass::kHealthy) {
    c.message = "no failing checks";
  } else {
    c.message = v.reason;
  }
  return c;
}

}  // namespace nccl_triage
