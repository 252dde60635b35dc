// `nccl-triage classify-log [FILE|-] [--format table|json] [--rules FILE]...`: explain an NCCL log.
//
// Reads the log as a stream (stdin for `-` or no file), classifies it with the pure classifier
// and prints the verdict, the decisive lines and the fix. The rules are the shipped rule file and
// the user's (--rules). Exit 0 whenever it classified (any class, unknown included), 2 for usage
// errors, a rule file that does not load and unreadable input.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>

#include "base/flags.h"
#include "classify/classifier.h"
#include "classify/rule_files.h"
#include "classify/rules.h"
#include "cmd_nccl_triage/cli.h"
#include "core/catalogue.h"
#include "core/json_text.h"

namespace nccl_triage {
namespace {

constexpr const char* kUsage =
    "usage: nccl-triage classify-log [FILE|-] [--format table|json] [--rules FILE]...\n"
    "  Reads an NCCL log (NCCL_DEBUG=INFO or WARN, any NCCL 2.4-2.30 format, several ranks\n"
    "  interleaved, PyTorch c10d output) and names the class (ib_resource | architecture |\n"
    "  healthy | unknown), the first failing line per rank, and the causes with their fixes.\n"
    "  Without FILE, or with '-', reads standard input. --rules adds a rule file (the format\n"
    "  of the shipped classify-rules.yaml; a rule with a known id replaces it). Exit 0 when\n"
    "  classified, 2 when the input or a rule file cannot be read.\n";

std::string ResultCodeText(int code) {
  if (const ResultCodeCause* rc = FindResultCode(code)) {
    return std::to_string(code) + " (" + std::string(rc->name) + ")";
  }
  return std::to_string(code);
}

void PrintTable(const Classification& c, std::ostream& os) {
  os << "class:      " << ToString(c.fault_class) << "\n";
  os << "reason:     " << c.reason << "\n";
  std::string transports;
  for (const auto& t : c.transports) transports += (transports.empty() ? "" : ", ") + t;
  os << "log:        " << c.lines << " lines";
  if (!c.nccl_version.empty()) os << ", NCCL " << c.nccl_version;
  if (!c.network.empty()) os << ", network " << c.network;
  if (!transports.empty()) os << ", channels via " << transports;
  if (c.result_code) os << ", result " << ResultCodeText(*c.result_code);
  os << "\n";
  if (!c.roots.empty()) {
    os << "\nfirst failing line per rank (the rank that failed first on top):\n";
    for (const auto& r : c.roots) {
      os << "  rank " << (r.rank.empty() ? "-" : r.rank) << "  line " << r.line.number << ": "
         << r.line.text << "\n";
    }
  }
  if (c.causes.empty()) return;
  os << "\ncauses (most likely first):\n";
  int n = 0;
  for (const auto& cause : c.causes) {
    const CauseInfo* info = FindCause(cause.cause);
    os << "  " << ++n << ". " << cause.cause << "  [" << ToString(cause.fault_class);
    if (cause.fix_class != cause.fault_class && cause.fix_class != FaultClass::kUnknown) {
      os << " path; the fix is " << ToString(cause.fix_class);
    }
    os << "]  confidence " << cause.confidence;
    if (info != nullptr) os << "  " << info->title;
    os << "\n";
    for (const auto& l : cause.evidence) os << "     line " << l.number << ": " << l.text << "\n";
    if (!cause.remedy.empty()) os << "     fix: " << cause.remedy << "\n";
  }
}

}  // namespace

int RunClassifyLogCommand(CliContext& ctx) {
  std::string format = "table";
  bool help = false;
  std::vector<std::string> inputs;
  std::vector<std::string> rule_files;
  Status parsed = FlagParser()
                      .Switch({"--help", "-h"}, &help)
                      .Repeated({"--rules"}, &rule_files)
                      .Choice({"--format"}, &format, {"table", "json"})
                      .Positional(&inputs, 1)
                      .Parse(ctx.args);
  if (!parsed.ok()) {
    ctx.err << "nccl-triage classify-log: " << parsed.message() << "\n";
    return 2;
  }
  if (help) {
    ctx.out << kUsage;
    return 0;
  }
  const std::string path = inputs.empty() ? std::string() : inputs[0];
  auto rules = LoadRuleFiles(rule_files);
  if (!rules.ok()) {
    ctx.err << "nccl-triage classify-log: " << rules.status().message() << "\n";
    return 2;
  }

  Classification c;
  if (path.empty() || path == "-") {
    c = ClassifyLog(std::cin, *rules);
    if (std::cin.bad()) {
      ctx.err << "nccl-triage classify-log: cannot read standard input\n";
      return 2;
    }
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      ctx.err << "nccl-triage classify-log: " << path << " is a directory, not a log file\n";
      return 2;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      ctx.err << "nccl-triage classify-log: cannot open " << path << ": "
              << std::generic_category().message(errno) << "\n";
      return 2;
    }
    c = ClassifyLog(in, *rules);
    if (in.bad()) {
      ctx.err << "nccl-triage classify-log: error while reading " << path << "\n";
      return 2;
    }
  }

  if (format == "json") {
    ctx.out << DumpJson(ToJson(c), 2) << "\n";
  } else {
    PrintTable(c, ctx.out);
  }
  return 0;
}

}  // namespace nccl_triage
