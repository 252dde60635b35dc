#include "ras/diagnostics.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "classify/log_line.h"
#include "ras/protocol.h"
#include "ras/text_util.h"

namespace nccl_triage::ras {
namespace {

using nlohmann::json;

// Printable on a terminal: control characters as '?' (the line is the peer's), no cut.
std::string Clean(std::string_view s) { return detail::Printable(s, s.size()); }

// A check NCCL itself calls failed.
bool FailedTag(std::string_view tag) {
  return tag == "WARN" || tag == "FAIL" || tag == "FAILED" || tag == "ERROR";
}

}  // namespace

DiagReport ParseDiagnostics(const std::vector<std::string>& lines) {
  DiagReport out;
  int number = 0;
  for (const std::string& raw : lines) {
    DiagLine d;
    d.number = ++number;
    d.raw = raw;
    const ParsedLine p = ParseLogLine(raw);
    std::string_view text = raw;
    if (p.level == NcclLevel::kDiag) {
      d.origin = std::string(p.rank);
      text = p.message;
    }
    text = detail::Trim(text);
    if (text.size() > 2 && text.front() == '[') {
      const auto close = text.find(']');
      if (close != std::string_view::npos && close < 12) {
        d.tag = std::string(text.substr(1, close - 1));
        text = detail::Trim(text.substr(close + 1));
      }
    }
    d.text = std::string(text);
    std::string_view rest;
    if (detail::AfterPrefix(text, kDiagnosticsDone, rest) ||
        detail::AfterPrefix(text, "NCCL diagnostics completed in ", rest)) {
      // "12.5 ms across 2 RAS peers"
      const auto words = detail::Split(rest);
      if (words.size() >= 5 && words[1] == "ms" && words[2] == "across") {
        out.complete = true;
        detail::ParseDouble(words[0], out.took_ms);
        detail::ParseInt(words[3], out.peers);
        const auto unit = rest.find(words[4]);
        out.peers_unit = std::string(detail::Trim(rest.substr(unit)));
      }
    } else if (detail::StartsWith(text, "ERROR")) {
      out.errors.push_back(Clean(text));
    }
    out.lines.push_back(std::move(d));
  }
  return out;
}

DiagJudgement JudgeDiagnostics(const DiagReport& report, const CompiledRules& rules) {
  DiagJudgement j;
  for (const DiagLine& l : report.lines) {
    if (l.tag == "OK") ++j.passed;
    const ParsedLine p = ParseLogLine(l.raw);
    const Rule* rule = nullptr;
    if (p.level == NcclLevel::kDiag) {
      const auto matches = rules.MatchLine(p);
      if (!matches.empty()) rule = &rules.rules()[matches.front().rule];
    }
    if (rule != nullptr && rule->strength == Strength::kIgnore) continue;
    if (rule == nullptr && !FailedTag(l.tag)) continue;
    DiagFinding f;
    f.line = l.number;
    f.origin = l.origin;
    f.tag = l.tag;
    f.text = Clean(l.text);
    if (rule != nullptr) {
      f.cause = std::string(rule->cause);
      f.rule = rule->name;
      f.strength = std::string(ToString(rule->strength));
    }
    // A suspect or context line (a setting that differs, an [INFO] the report adds) explains a
    // failure; it is no fault of a job that runs.
    if (rule == nullptr || (rule->strength != Strength::kSuspect &&
                            rule->strength != Strength::kContext)) {
      ++j.faults;
    }
    j.findings.push_back(std::move(f));
  }
  for (const auto& f : j.findings) {
    if (!f.cause.empty() && std::find(j.causes.begin(), j.causes.end(), f.cause) == j.causes.end()) {
      j.causes.push_back(f.cause);
    }
  }
  if (!j.findings.empty()) {
    j.state = "findings";
    std::vector<std::string> causes;
    for (const auto& f : j.findings) {
      const std::string c = f.cause.empty() ? "unnamed check" : f.cause;
      if (std::find(causes.begin(), causes.end(), c) == causes.end()) causes.push_back(c);
    }
    std::string list;
    for (const auto& c : causes) list += (list.empty() ? "" : ", ") + c;
    j.summary = std::to_string(j.findings.size()) + " finding(s): " + list + "; first: " +
                j.findings.front().text;
  } else if (!report.errors.empty()) {
    j.state = "error";
    j.summary = "NCCL reported: " + report.errors.front();
  } else {
    j.state = "ok";
    j.summary = std::to_string(j.passed) + " check(s) passed, none failed or differs";
  }
  return j;
}

std::string RenderDiagnosticsTable(const Source& s, const DiagReport& r, const DiagJudgement& j) {
  std::ostringstream os;
  os << "target:   " << s.target;
  if (s.target != "--addr " + s.address) os << ": " << s.address;
  if (!s.netns.empty()) os << " (network namespace " << s.netns << ")";
  os << "\n";
  os << "report:   RAS diagnostics, RAS protocol " << s.protocol;
  if (!s.protocol_known) os << " (unknown: this client speaks " << kClientProtocol << ")";
  os << ", " << r.lines.size() << " line(s)";
  if (r.complete) {
    std::ostringstream t;
    t.precision(1);
    t << std::fixed << r.took_ms;
    os << ", " << r.peers << " " << Clean(r.peers_unit) << ", NCCL took " << t.str() << " ms";
  }
  os << ", answered in " << s.elapsed_ms << " ms\n";
  os << "state:    " << j.state << ": " << j.summary << "\n";
  if (!j.findings.empty()) {
    os << "\nfindings (" << j.findings.size() << "):\n";
    std::vector<std::vector<std::string>> rows{
        {"LINE", "CAUSE", "STRENGTH", "TAG", "FROM", "CHECK"}};
    for (const auto& f : j.findings) {
      rows.push_back({std::to_string(f.line), f.cause.empty() ? "-" : f.cause,
                      f.strength.empty() ? "-" : f.strength, f.tag.empty() ? "-" : Clean(f.tag),
                      f.origin.empty() ? "-" : Clean(f.origin), f.text});
    }
    std::vector<size_t> width(rows.front().size(), 0);
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    for (const auto& row : rows) {
      std::string line = "  ";
      for (size_t i = 0; i < row.size(); ++i) {
        line += row[i];
        if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
      }
      os << line << "\n";
    }
  }
  os << "\nreport (" << r.lines.size() << " line(s)):\n";
  for (const auto& l : r.lines) os << "  " << Clean(l.raw) << "\n";
  return os.str();
}

json DiagnosticsToJson(const Source& s, const DiagReport& r, const DiagJudgement& j) {
  json lines = json::array();
  for (const auto& l : r.lines) {
    lines.push_back({{"line", l.number},
                     {"from", l.origin.empty() ? json(nullptr) : json(l.origin)},
                     {"tag", l.tag.empty() ? json(nullptr) : json(l.tag)},
                     {"text", l.text}});
  }
  json findings = json::array();
  for (const auto& f : j.findings) {
    findings.push_back({{"line", f.line},
                        {"from", f.origin.empty() ? json(nullptr) : json(f.origin)},
                        {"tag", f.tag.empty() ? json(nullptr) : json(f.tag)},
                        {"text", f.text},
                        {"cause", f.cause.empty() ? json(nullptr) : json(f.cause)},
                        {"rule", f.rule.empty() ? json(nullptr) : json(f.rule)},
                        {"strength", f.strength.empty() ? json(nullptr) : json(f.strength)}});
  }
  return json{
      {"schema", kRasDiagnosticsSchema},
      {"source",
       {{"target", s.target},
        {"address", s.address},
        {"network_namespace", s.netns.empty() ? json(nullptr) : json(s.netns)},
        {"protocol", s.protocol},
        {"protocol_known", s.protocol_known},
        {"elapsed_ms", s.elapsed_ms}}},
      {"state", j.state},
      {"summary", j.summary},
      {"passed", j.passed},
      {"faults", j.faults},
      {"findings", findings},
      {"report",
       {{"complete", r.complete},
        {"nccl_ms", r.took_ms >= 0 ? json(r.took_ms) : json(nullptr)},
        {"peers", r.peers >= 0 ? json(r.peers) : json(nullptr)},
        {"peers_unit", r.peers_unit.empty() ? json(nullptr) : json(r.peers_unit)},
        {"errors", r.errors},
        {"lines", lines}}},
  };
}

}  // namespace nccl_triage::ras
