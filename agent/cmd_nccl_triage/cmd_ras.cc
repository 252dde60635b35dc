// `nccl-triage ras [--addr HOST:PORT | --pod NS/NAME | --pid PID] [--format table|json]`: ask a
// running NCCL job (2.24+) through its RAS port which ranks hold it up.
//
// The query (ras/client.h) goes to the RAS port of one process of the job, from inside that
// process's network namespace when needed (ras/netns.h, a thread of its own); the report is
// parsed and judged by the pure ras library and printed. Exit 0: every rank answered and agrees;
// 1: dead, unresponsive or lagging ranks, errors or differing status; 2: usage, or no report
// (refused, timed out, not a RAS server: one line on stderr).
//
// With --diagnostics it sends NCCL 2.31+'s DIAGNOSTICS request instead and judges the report's
// lines with the classifier's DIAG rules (ras/diagnostics.h). Exit 0: no check failed or
// differs; 1: findings; 2: usage, or no report (busy, an NCCL before 2.31, refused, ...).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "base/flags.h"
#include "classify/rules.h"
#include "cmd_nccl_triage/cli.h"
#include "cmd_nccl_triage/ras_target.h"
#include "core/json_text.h"
#include "ras/client.h"
#include "ras/diagnostics.h"
#include "ras/netns.h"
#include "ras/render.h"
#include "ras/report.h"

namespace nccl_triage {
namespace {

constexpr const char* kUsage =
    "usage: nccl-triage ras [--addr HOST:PORT | --pod NAMESPACE/NAME | --pid PID]\n"
    "                       [--format table|json] [--timeout SECONDS] [--reply auto|text|json]\n"
    "                       [--again SECONDS] [--verbose] [--raw] [--node NAME]\n"
    "       nccl-triage ras --diagnostics [--addr HOST:PORT | --pod NAMESPACE/NAME | --pid PID]\n"
    "                       [--format table|json] [--timeout SECONDS] [--raw] [--node NAME]\n"
    "  Asks a running NCCL job (NCCL 2.24+) through the RAS port of one of its processes\n"
    "  which ranks hold it up: dead ranks, ranks that do not answer, and ranks that launched\n"
    "  fewer collectives than the others (the lagging rank of a hung job).\n"
    "  --addr     the RAS port (NCCL_RAS_ADDR; default localhost:28028); with --pid or --pod,\n"
    "             the address inside that process's network namespace (default: the\n"
    "             process's own NCCL_RAS_ADDR, else localhost:28028)\n"
    "  --pid      a process of the job on this node: asked from inside its network namespace\n"
    "             (needs CAP_SYS_ADMIN when it is not this one's)\n"
    "  --pod      a pod of the job on this node (--node, default $NODE_NAME or the host name):\n"
    "             its first process holding a GPU, as --pid; hostNetwork pods are asked here\n"
    "  --timeout  the whole query, default 30 s (NCCL itself waits up to 10 s for silent peers)\n"
    "  --reply    the report NCCL sends: json (2.28.7+) or text; auto asks for json first\n"
    "  --again    when a rank lags, ask again this many seconds later (default 2, 0: never):\n"
    "             a running job's counts move on, a hung job's do not\n"
    "  --verbose  NCCL's VERBOSE STATUS: the text report names more ranks\n"
    "  --raw      print the report as NCCL sent it, not parsed\n"
    "  --diagnostics  NCCL 2.31+: ask for NCCL's own diagnostics report instead (GPU inventory,\n"
    "             CUDA driver, ECC, NVLink, NCCL_* settings compared across the ranks of each\n"
    "             communicator) and judge its lines with the classifier's rules: a failed\n"
    "             check or a setting that differs is a finding with a cause id. NCCL runs one\n"
    "             such request at a time: a second one is answered busy (ask again later)\n"
    "  Exit 0: every rank answered and agrees (--diagnostics: no finding); 1: a rank is dead,\n"
    "  silent, lagging, in error or in another state (--diagnostics: findings); 2: usage, or no\n"
    "  report (busy, NCCL before 2.31 for --diagnostics; one line on stderr).\n";

std::string DefaultNode() {
  if (const char* n = std::getenv("NODE_NAME"); n != nullptr && *n != '\0') return n;
  char host[256] = "";
  if (::gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

// --diagnostics: one DIAGNOSTICS request, its report judged and printed.
int RunDiagnostics(CliContext& ctx, const ras::QueryOptions& q, const RasTarget& target,
                   ras::Source source, const std::string& format, bool raw) {
  std::optional<StatusOr<ras::DiagnosticsReply>> reply;
  if (target.enter_netns) {
    Status entered = ras::RunInNetworkNamespace(
        target.netns_path, [&] { reply.emplace(ras::QueryRasDiagnostics(q)); });
    if (!entered.ok()) reply.emplace(entered);
  } else {
    reply.emplace(ras::QueryRasDiagnostics(q));
  }
  if (!reply->ok()) {
    ctx.err << "nccl-triage ras: " << reply->status().message() << "\n";
    return 2;
  }
  const ras::DiagnosticsReply& r = reply->value();
  if (r.busy) {
    ctx.err << "nccl-triage ras: " << r.address
            << ": busy: NCCL is running another diagnostics request (requests are not queued); "
               "ask again later\n";
    return 2;
  }
  source.address = r.address;
  source.protocol = r.server_protocol;
  source.protocol_known = r.protocol_known;
  source.elapsed_ms = r.elapsed.count();
  if (raw) {
    ctx.out << r.body;
    return 0;
  }
  const ras::DiagReport report = ras::ParseDiagnostics(r.lines);
  const ras::DiagJudgement j = ras::JudgeDiagnostics(report, *ActiveRules());
  if (format == "json") {
    ctx.out << DumpJson(ras::DiagnosticsToJson(source, report, j), 2) << "\n";
  } else {
    ctx.out << ras::RenderDiagnosticsTable(source, report, j);
  }
  return j.state == "ok" ? 0 : 1;
}

}  // namespace

int RunRasCommand(CliContext& ctx) {
  std::optional<std::string> addr, pod, node;
  std::optional<int> pid;
  std::string format = "table";
  std::string reply_format = "auto";
  int timeout_s = 30;
  int again_s = 2;
  bool verbose = false, raw = false, help = false, diagnostics = false;
  Status parsed = FlagParser()
                      .Switch({"--help", "-h"}, &help)
                      .String({"--addr"}, &addr)
                      .String({"--pod"}, &pod)
                      .String({"--node"}, &node)
                      .Int({"--pid"}, &pid, 1, 1 << 30)
                      .Choice({"--format"}, &format, {"table", "json"})
                      .Choice({"--reply"}, &reply_format, {"auto", "text", "json"})
                      .Int({"--timeout"}, &timeout_s, 1, 3600)
                      .Int({"--again"}, &again_s, 0, 600)
                      .Switch({"--verbose"}, &verbose)
                      .Switch({"--raw"}, &raw)
                      .Switch({"--diagnostics"}, &diagnostics)
                      .Parse(ctx.args);
  auto usage_error = [&](const std::string& m) {
    ctx.err << "nccl-triage ras: " << m << "\n";
    return 2;
  };
  if (!parsed.ok()) return usage_error(parsed.message());
  if (help) {
    ctx.out << kUsage;
    return 0;
  }
  if (pod && pid) return usage_error("--pod and --pid name the same thing: give one");

  // Where to ask from.
  ras::Source source;
  RasTarget target;
  if (pid || pod) {
    auto t = pid ? ResolvePidTarget(*pid)
                 : ResolvePodTarget(SiblingExe(ctx.self_exe, "nccl-triage-server"),
                                    node.value_or(DefaultNode()), *pod);
    if (!t.ok()) return usage_error(t.status().message());
    target = std::move(t).value();
    source.target =
        pid ? "--pid " + std::to_string(*pid) : "--pod " + *pod + " (" + target.what + ")";
    source.netns = target.enter_netns ? "of pid " + std::to_string(target.pid) : "host";
  }
  const std::string where = addr                       ? *addr
                            : !target.ras_addr.empty() ? target.ras_addr
                                                       : std::string("localhost:28028");
  auto hp = ras::SplitHostPort(where);
  if (!hp.ok()) return usage_error("--addr: " + hp.status().message());
  if (source.target.empty()) source.target = "--addr " + where;

  ras::QueryOptions q;
  q.host = hp->first;
  q.port = hp->second;
  q.deadline = std::chrono::seconds(timeout_s);
  if (diagnostics) return RunDiagnostics(ctx, q, target, source, format, raw);
  q.verbose = verbose;
  q.format = reply_format == "text"   ? ras::ReplyFormat::kText
             : reply_format == "json" ? ras::ReplyFormat::kJson
                                      : ras::ReplyFormat::kAuto;
  // One query and its parse; an error is the command's one line.
  auto ask = [&]() -> StatusOr<std::pair<ras::RawReply, ras::Report>> {
    std::optional<StatusOr<ras::RawReply>> reply;
    if (target.enter_netns) {
      Status entered = ras::RunInNetworkNamespace(target.netns_path,
                                                  [&] { reply.emplace(ras::QueryRas(q)); });
      if (!entered.ok()) return entered;
    } else {
      reply.emplace(ras::QueryRas(q));
    }
    if (!reply->ok()) return reply->status();
    ras::RawReply r = std::move(*reply).value();
    if (raw) return std::make_pair(std::move(r), ras::Report{});
    auto report = r.format == ras::ReplyFormat::kJson ? ras::ParseJsonReport(r.body)
                                                      : ras::ParseTextReport(r.body);
    if (!report.ok()) {
      std::string m = r.address + ": " + report.status().message();
      if (!r.protocol_known) {
        m += " (the server speaks RAS protocol " + r.server_protocol +
             ", unknown to this client)";
      }
      return InvalidArgument(m);
    }
    return std::make_pair(std::move(r), std::move(report).value());
  };

  auto first = ask();
  if (!first.ok()) return usage_error(first.status().message());
  const ras::RawReply& r = first->first;
  source.address = r.address;
  source.protocol = r.server_protocol;
  source.protocol_known = r.protocol_known;
  source.elapsed_ms = r.elapsed.count();
  if (!r.protocol_known) {
    ctx.err << "nccl-triage ras: warning: the server speaks RAS protocol " << r.server_protocol
            << ", this client knows protocol " << ras::kClientProtocol
            << "; its report is read as protocol " << ras::kClientProtocol << "\n";
  }
  if (raw) {
    ctx.out << r.body;
    return 0;
  }
  const ras::Report* report = &first->second;
  ras::Judgement j = ras::Judge(*report);
  std::optional<std::pair<ras::RawReply, ras::Report>> second;
  const bool lags = std::any_of(j.findings.begin(), j.findings.end(), [](const ras::Finding& f) {
    return f.kind == ras::FindingKind::kLagging;
  });
  if (lags && again_s > 0) {
    std::this_thread::sleep_for(std::chrono::seconds(again_s));
    auto next = ask();
    if (!next.ok()) return usage_error("asking again: " + next.status().message());
    second = std::move(next).value();
    j = ras::JudgeTwice(first->second, second->second);
    report = &second->second;
    source.asked_again_s = again_s;
  }
  if (format == "json") {
    ctx.out << DumpJson(ras::ToJson(source, *report, j), 2) << "\n";
  } else {
    ctx.out << ras::RenderTable(source, *report, j);
  }
  return j.state == "ok" ? 0 : 1;
}

}  // namespace nccl_triage
