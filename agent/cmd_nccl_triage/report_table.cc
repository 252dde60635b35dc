#include "cmd_nccl_triage/report_table.h"

#include <algorithm>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/catalogue.h"
#include "core/rails.h"

namespace nccl_triage {
namespace {

constexpr std::string_view kRed = "\033[1;31m";
constexpr std::string_view kYellow = "\033[33m";
constexpr std::string_view kGreen = "\033[32m";
constexpr std::string_view kDim = "\033[2m";
constexpr std::string_view kBold = "\033[1m";
constexpr std::string_view kReset = "\033[0m";

class Painter {
 public:
  explicit Painter(bool on) : on_(on) {}
  std::string operator()(std::string_view code, std::string_view text) const {
    if (!on_) return std::string(text);
    return std::string(code) + std::string(text) + std::string(kReset);
  }

 private:
  bool on_;
};

std::string_view StatusLabel(CheckStatus s) {
  switch (s) {
    case CheckStatus::kFail:
      return "FAIL";
    case CheckStatus::kWarn:
      return "WARN";
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kSkip:
      return "skip";
  }
  return "?";
}

std::string_view StatusColor(CheckStatus s) {
  switch (s) {
    case CheckStatus::kFail:
      return kRed;
    case CheckStatus::kWarn:
      return kYellow;
    case CheckStatus::kPass:
      return kGreen;
    case CheckStatus::kSkip:
      return kDim;
  }
  return kReset;
}

// Words of `text` on lines no longer than `width`, each prefixed with `indent` (the first line
// with `first`, which must have the same display width).
void Wrap(std::ostream& os, std::string_view first, std::string_view indent, std::string_view text,
          int width) {
  const size_t limit = width > static_cast<int>(indent.size()) + 20
                           ? static_cast<size_t>(width) - indent.size()
                           : 60;
  std::string line;
  bool first_line = true;
  auto flush = [&] {
    os << (first_line ? first : indent) << line << "\n";
    first_line = false;
    line.clear();
  };
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = text.find(' ', i);
    if (j == std::string_view::npos) j = text.size();
    std::string_view word = text.substr(i, j - i);
    if (!line.empty() && line.size() + 1 + word.size() > limit) flush();
    if (!line.empty()) line += ' ';
    line += word;
    i = j;
  }
  if (!line.empty() || first_line) flush();
}

// The evidence worth showing for a finding: entries whose subject (the key's first word, e.g.
// "mlx5_3/1") the message names; all entries when none matches.
std::vector<const Evidence*> RelevantEvidence(const Finding& f) {
  std::vector<const Evidence*> named, all;
  for (const auto& e : f.evidence) {
    all.push_back(&e);
    const std::string subject = e.key.substr(0, e.key.find(' '));
    if (!subject.empty() && f.message.find(subject) != std::string::npos) named.push_back(&e);
  }
  return named.empty() ? all : named;
}

std::string Title(const Finding& f) {
  const CauseInfo* info = FindCause(f.check);
  return info ? std::string(info->title) : std::string();
}

void Detailed(std::ostream& os, const Finding& f, const Painter& paint, const TableOptions& opt) {
  os << paint(StatusColor(f.status), StatusLabel(f.status)) << "  " << paint(kBold, f.check) << "  "
     << Title(f) << "\n";
  Wrap(os, "      ", "      ", f.message, opt.width);
  const auto evidence = RelevantEvidence(f);
  const size_t shown = std::min(evidence.size(), opt.max_evidence);
  for (size_t i = 0; i < shown; ++i) {
    const Evidence& e = *evidence[i];
    os << "      " << paint(kDim, "· ") << e.key << ": " << e.value << "  "
       << paint(kDim, "(" + e.source + ")") << "\n";
  }
  if (evidence.size() > shown) {
    os << "      "
       << paint(kDim, "· " + std::to_string(evidence.size() - shown) +
                          " more (--format json shows all evidence)")
       << "\n";
  }
  if (!f.remedy.empty()) Wrap(os, "      fix: ", "           ", f.remedy, opt.width);
  os << "\n";
}

std::string VerdictLine(const NodeReport& r, const Painter& paint) {
  std::string_view color = kYellow;
  std::string meaning;
  switch (r.fault_class) {
    case FaultClass::kHealthy:
      color = kGreen;
      meaning = "no check failed";
      break;
    case FaultClass::kArchitecture:
      color = kRed;
      meaning = "the fix is in the host, container or version setup";
      break;
    case FaultClass::kIbResource:
      color = kRed;
      meaning = "the fix is in the fabric, the HCA or the RDMA stack";
      break;
    case FaultClass::kUnknown:
      meaning = "nothing could be judged";
      break;
  }
  const std::string node = r.node.empty() ? "(unnamed)" : r.node;
  std::string line = "node " + node + ": " + paint(color, std::string(ToString(r.fault_class)));
  line += " — " + meaning;
  line += r.basis == Basis::kChecks
              ? "\nbasis: node checks only, a prediction until probes confirm it"
              : "\nbasis: confirmed by NCCL probes";
  return line;
}

}  // namespace

void RenderReportTable(const NodeReport& r, std::ostream& os, const TableOptions& opt) {
  const Painter paint(opt.color);
  os << VerdictLine(r, paint) << "\n";
  if (!r.causes.empty()) {
    std::string causes;
    for (const auto& c : r.causes) causes += (causes.empty() ? "" : ", ") + c;
    os << "causes: " << causes << "\n";
  }
  os << "\n";

  int counts[4] = {0, 0, 0, 0};
  for (const auto& f : r.findings) ++counts[static_cast<int>(f.status)];
  for (CheckStatus s : {CheckStatus::kFail, CheckStatus::kWarn}) {
    for (const auto& f : r.findings) {
      if (f.status == s) Detailed(os, f, paint, opt);
    }
  }
  size_t id_width = 0;
  for (const auto& f : r.findings) id_width = std::max(id_width, f.check.size());
  for (CheckStatus s : {CheckStatus::kPass, CheckStatus::kSkip}) {
    for (const auto& f : r.findings) {
      if (f.status != s) continue;
      os << paint(StatusColor(s), StatusLabel(s)) << "  " << f.check
         << std::string(id_width - f.check.size() + 2, ' ') << f.message << "\n";
    }
  }
  os << "\n"
     << counts[static_cast<int>(CheckStatus::kFail)] << " fail, "
     << counts[static_cast<int>(CheckStatus::kWarn)] << " warn, "
     << counts[static_cast<int>(CheckStatus::kPass)] << " pass, "
     << counts[static_cast<int>(CheckStatus::kSkip)] << " skip\n";
}

void RenderRailTable(const std::vector<Rail>& rails, std::ostream& os) {
  if (rails.empty()) return;
  const std::vector<std::string> head = {"rail",     "hca/port", "pci",  "gpu",
                                         "affinity", "numa",     "rate", "state"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : rails) {
    std::string rate = "?";
    if (r.rate_gbps) {
      rate = std::to_string(static_cast<long long>(*r.rate_gbps));
      if (*r.rate_gbps - static_cast<double>(static_cast<long long>(*r.rate_gbps)) > 0.01) {
        rate += ".5";
      }
      rate += " Gb/s";
    }
    rows.push_back({std::to_string(r.index), RailPortName(r), r.hca_bdf.empty() ? "?" : r.hca_bdf,
                    r.gpu >= 0 ? std::to_string(r.gpu) + " " + r.gpu_bdf : "-",
                    std::string(ToString(r.affinity)),
                    r.numa_node >= 0 ? std::to_string(r.numa_node) : "?", rate, r.state});
  }
  std::vector<size_t> width(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    width[c] = head[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      out += cells[c];
      if (c + 1 < cells.size()) out += std::string(width[c] - cells[c].size() + 2, ' ');
    }
    os << out << "\n";
  };
  os << "\nrails\n";
  line(head);
  for (const auto& row : rows) line(row);
}

}  // namespace nccl_triage
