// `nccl-triage triage`: a job died; which rank failed first, on which node, why, and what to do.
//
// The Kubernetes API is read by `nccl-triage-server triage-fetch` (HTTPS lives in the server
// executable; this one links none of it), whose stream is classified here as it arrives. The
// verdict is triage/incident.h's; this file is the command line, the progress line and the
// output. Exit 0 healthy, 1 a fault found, 2 usage or API error (one line), 3 nothing to conclude.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <ostream>

#include "app/cli.h"
#include "app/triage_children.h"
#include "triage/incident.h"
#include "triage/render.h"
#include "triage/target.h"

namespace nccl_triage {
namespace {

using triage::Target;

constexpr const char* kUsage =
    "usage: nccl-triage triage (--job NAME | --selector LABELS | --pods P1,P2 | --nodes N1,N2)\n"
    "                          [-n NAMESPACE] [--since DURATION] [--format table|json]\n"
    "                          [--no-probe] [--coordinator URL] [--no-keep]\n"
    "                          [--kubeconfig FILE] [--context NAME] [--max-log-bytes SIZE]\n"
    "                          [--head-bytes SIZE] [--tail-lines N] [--agent-namespace NS]\n"
    "                          [--timeout DURATION]\n"
    "  A job died: find its pods, read every container's log (current and previous instance),\n"
    "  name the rank that failed first, its node, the peer it blames, the class and the fix.\n"
    "  --job finds a Job, PyTorchJob, MPIJob, JobSet or Volcano job by its pods' labels.\n"
    "  Each log is read as its first --head-bytes (256KiB) and, when longer, its last\n"
    "  --tail-lines (5000), at most --max-log-bytes (8MiB) in all, since --since (all).\n"
    "  The node checks come from the agents' pods in --agent-namespace (nccl-triage).\n"
    "  The incident is kept as the annotation nccl-triage.io/incident on every pod and an\n"
    "  Event on the job (--no-keep: neither). Credentials: --kubeconfig, KUBECONFIG,\n"
    "  ~/.kube/config, else the pod's service account.\n"
    "  Exit 0 healthy, 1 a fault found, 2 usage or API error, 3 nothing to conclude.\n";

struct Args {
  Target target;
  int targets = 0;
  std::string ns;
  int64_t since_seconds = 0;
  std::string format = "table";
  bool no_probe = false;
  std::string coordinator;
  bool keep = true;
  std::string kubeconfig;
  std::string context;
  uint64_t max_log_bytes = 8 << 20;
  uint64_t head_bytes = 256 << 10;
  int64_t tail_lines = 5000;
  std::string agent_ns = "nccl-triage";
  int64_t timeout_seconds = 600;
};

// The flags; an error is the line to print.
std::string Parse(const std::vector<std::string>& argv, Args& a) {
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string f = argv[i];
    std::string v;
    bool has_value = false;
    if (const size_t eq = f.find('='); f.rfind("--", 0) == 0 && eq != std::string::npos) {
      v = f.substr(eq + 1);
      f = f.substr(0, eq);
      has_value = true;
    }
    if (f == "--no-probe" || f == "--no-keep") {
      if (has_value) return f + " takes no value";
      (f == "--no-probe" ? a.no_probe : a.keep) = f == "--no-probe";
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argv.size())
        return f.rfind("-", 0) == 0 ? f + " needs a value" : "unexpected '" + f + "'";
      v = argv[++i];
    }
    auto target = [&](Target::Kind kind) -> std::string {
      ++a.targets;
      a.target.kind = kind;
      if (kind == Target::Kind::kJob || kind == Target::Kind::kSelector) {
        if (v.empty()) return f + " is empty";
        if (kind == Target::Kind::kJob && !triage::IsObjectName(v)) {
          return "--job '" + v + "' is not a Kubernetes object name";
        }
        a.target.selector = v;
        return "";
      }
      a.target.names = triage::SplitList(v);
      if (a.target.names.empty()) return f + " names nothing";
      for (const auto& n : a.target.names) {
        if (!triage::IsObjectName(n)) return f + ": '" + n + "' is not a Kubernetes object name";
      }
      return "";
    };
    std::string err;
    if (f == "--job") {
      err = target(Target::Kind::kJob);
    } else if (f == "--selector" || f == "-l") {
      err = target(Target::Kind::kSelector);
    } else if (f == "--pods") {
      err = target(Target::Kind::kPods);
    } else if (f == "--nodes") {
      err = target(Target::Kind::kNodes);
    } else if (f == "-n" || f == "--namespace") {
      if (!triage::IsObjectName(v)) return "namespace '" + v + "' is not a Kubernetes name";
      a.ns = v;
    } else if (f == "--since" || f == "--timeout") {
      auto d = triage::ParseDurationSeconds(v);
      if (!d.ok()) return f + ": " + d.status().message();
      (f == "--since" ? a.since_seconds : a.timeout_seconds) = *d;
    } else if (f == "--format") {
      if (v != "table" && v != "json") return "--format must be table or json, not '" + v + "'";
      a.format = v;
    } else if (f == "--coordinator") {
      a.coordinator = v;
    } else if (f == "--kubeconfig") {
      a.kubeconfig = v;
    } else if (f == "--context") {
      a.context = v;
    } else if (f == "--agent-namespace") {
      if (!triage::IsObjectName(v)) return "namespace '" + v + "' is not a Kubernetes name";
      a.agent_ns = v;
    } else if (f == "--max-log-bytes" || f == "--head-bytes") {
      auto b = triage::ParseByteSize(v);
      if (!b.ok()) return f + ": " + b.status().message();
      (f == "--max-log-bytes" ? a.max_log_bytes : a.head_bytes) = *b;
    } else if (f == "--tail-lines") {
      try {
        size_t pos = 0;
        a.tail_lines = std::stoll(v, &pos);
        if (pos != v.size() || a.tail_lines < 0) throw 0;
      } catch (...) {
        return "--tail-lines must be a number of lines, not '" + v + "'";
      }
    } else {
      return "unknown flag '" + f + "' (try --help)";
    }
    if (!err.empty()) return err;
  }
  if (a.targets != 1) return "give exactly one of --job, --selector, --pods, --nodes (try --help)";
  return "";
}

std::vector<std::string> ApiArgs(const Args& a) {
  std::vector<std::string> out;
  if (!a.kubeconfig.empty()) out.insert(out.end(), {"--kubeconfig", a.kubeconfig});
  if (!a.context.empty()) out.insert(out.end(), {"--context", a.context});
  return out;
}

std::vector<std::string> FetchArgs(const Args& a) {
  std::vector<std::string> out = ApiArgs(a);
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s;
  };
  switch (a.target.kind) {
    case Target::Kind::kJob:
      out.insert(out.end(), {"--job", a.target.selector});
      break;
    case Target::Kind::kSelector:
      out.insert(out.end(), {"--selector", a.target.selector});
      break;
    case Target::Kind::kPods:
      out.insert(out.end(), {"--pods", join(a.target.names)});
      break;
    case Target::Kind::kNodes:
      out.insert(out.end(), {"--nodes", join(a.target.names)});
      break;
  }
  if (!a.ns.empty()) out.insert(out.end(), {"--namespace", a.ns});
  out.insert(out.end(),
             {"--since-seconds", std::to_string(a.since_seconds), "--head-bytes",
              std::to_string(a.head_bytes), "--tail-lines", std::to_string(a.tail_lines),
              "--max-log-bytes", std::to_string(a.max_log_bytes), "--agent-namespace", a.agent_ns});
  return out;
}

std::string Window(const Args& a) {
  std::string w =
      a.since_seconds > 0 ? "since " + std::to_string(a.since_seconds) + " s ago" : "the whole log";
  return w + ", the first " + std::to_string(a.head_bytes) + " bytes and the last " +
         std::to_string(a.tail_lines) + " lines of each, at most " +
         std::to_string(a.max_log_bytes) + " bytes";
}

}  // namespace

int RunTriageCommand(CliContext& ctx) {
  for (const auto& a : ctx.args) {
    if (a == "--help" || a == "-h") {
      ctx.out << kUsage;
      return 0;
    }
  }
  Args a;
  if (std::string e = Parse(ctx.args, a); !e.empty()) {
    ctx.err << "nccl-triage triage: " << e << "\n";
    return 2;
  }
  if (a.coordinator.empty()) {
    const char* env = std::getenv("NCCL_TRIAGE_COORDINATOR");
    if (env != nullptr) a.coordinator = env;
  }
  const std::string server = SiblingExe(ctx.self_exe, "nccl-triage-server");
  const bool tty = ::isatty(2) == 1;

  FetchRequest req;
  req.server_exe = server;
  req.args = FetchArgs(a);
  req.timeout = std::chrono::seconds(a.timeout_seconds);
  auto last = std::chrono::steady_clock::now();
  if (tty) {
    req.progress = [&](size_t done, size_t total) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(200) && done != total) return;
      last = now;
      ctx.err << "\rreading logs: " << done << " of " << total << std::flush;
    };
  }
  auto fetched = RunFetch(req);
  if (tty && req.progress) ctx.err << "\r\033[K" << std::flush;
  if (!fetched.ok()) {
    ctx.err << "nccl-triage triage: " << fetched.status().message() << "\n";
    return 2;
  }
  const std::string target = triage::Describe(a.target);
  if (fetched->pods.empty() && a.target.kind != Target::Kind::kNodes) {
    ctx.err << "nccl-triage triage: no pods match " << target << " in namespace " << fetched->ns
            << (fetched->found_by.empty() ? "" : " (looked for " + fetched->found_by + ")") << "\n";
    return 2;
  }

  triage::IncidentInput in;
  in.ns = fetched->ns;
  in.target = target;
  in.pods = fetched->pods;
  in.missing = fetched->missing;
  if (a.target.kind == Target::Kind::kNodes) in.nodes = a.target.names;
  in.logs = std::move(fetched->logs);
  in.log_window = Window(a);
  in.checks_read = fetched->checks_read;
  in.checks_error = fetched->checks_error;
  in.agents = fetched->agents;
  in.probes.asked = false;
  in.probes.not_asked = a.no_probe ? "--no-probe"
                        : a.coordinator.empty()
                            ? "no coordinator given (--coordinator URL or NCCL_TRIAGE_COORDINATOR)"
                            : "this build cannot ask the coordinator for probes";
  in.now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  const triage::Incident incident = triage::JudgeIncident(in);

  triage::KeepOutcome kept;
  if (a.keep) {
    kept = RunKeep(server, ApiArgs(a), incident, *fetched);
  } else {
    kept.not_attempted = "--no-keep";
  }
  kept.count_error = "no coordinator asked";

  if (a.format == "json") {
    nlohmann::json j = triage::ToJson(incident);
    j["api"] = fetched->api;
    j["found_by"] = fetched->found_by;
    j["log_window"] = in.log_window;
    j["kept"] = {{"attempted", kept.attempted},
                 {"annotated", kept.annotated},
                 {"annotate_failed", kept.annotate_failed},
                 {"annotate_error", kept.annotate_error},
                 {"event_created", kept.event_created},
                 {"event_error", kept.event_error},
                 {"counted", kept.counted}};
    ctx.out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    ctx.out << triage::RenderIncidentTable(incident, kept);
  }
  return incident.exit_code;
}

}  // namespace nccl_triage
