// `nccl-triage triage`: a job died; which rank failed first, on which node, why, and what to do.
//
// The Kubernetes API is read by `nccl-triage-server triage-fetch` (HTTPS lives in the server
// executable; this one links none of it), whose stream is classified here as it arrives. The
// verdict is triage/incident.h's; this file is the command line, the progress line and the
// output. Exit 0 healthy, 1 a fault found, 2 usage or API error (one line), 3 nothing to conclude.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>

#include "base/flags.h"
#include "classify/classifier.h"
#include "cmd_nccl_triage/cli.h"
#include "cmd_nccl_triage/triage_children.h"
#include "core/json_text.h"
#include "triage/incident.h"
#include "triage/render.h"
#include "triage/target.h"

namespace nccl_triage {
namespace {

using triage::Target;

constexpr const char* kUsage =
    "usage: nccl-triage triage (--job NAME | --selector LABELS | --pods P1,P2 | --nodes N1,N2)\n"
    "                          [-n NAMESPACE] [--since DURATION] [--format table|json]\n"
    "                          [--no-probe] [--coordinator HOST:PORT] [--token-file FILE]\n"
    "                          [--coordinator-ca FILE] [--keep]\n"
    "                          [--kubeconfig FILE] [--context NAME] [--max-log-bytes SIZE]\n"
    "                          [--head-bytes SIZE] [--tail-lines N] [--agent-namespace NS]\n"
    "                          [--timeout DURATION]\n"
    "  A job died: find its pods, read every container's log (current and previous instance),\n"
    "  name the rank that failed first, its node, the peer it blames, the class and the fix.\n"
    "  --job finds a Job, PyTorchJob, MPIJob, JobSet or Volcano job by its pods' labels.\n"
    "  Each log is read as its first --head-bytes (256KiB) and, when longer, its last\n"
    "  --tail-lines (5000), at most --max-log-bytes (8MiB) in all, since --since (all).\n"
    "  The node checks come from the agents' pods in --agent-namespace (nccl-triage).\n"
    "  The probes: the coordinator (--coordinator or NCCL_TRIAGE_COORDINATOR, its gRPC port;\n"
    "  the agents' token from --token-file or NCCL_TRIAGE_TOKEN) runs the socket and IB probes\n"
    "  between the job's nodes and against known-good nodes, now (--no-probe: none).\n"
    "  Read-only unless --keep: then the incident is kept as the annotation\n"
    "  nccl-triage.io/incident on every pod, an Event on the job, and a count at the\n"
    "  coordinator (--no-keep, the default, says so). Credentials: --kubeconfig, KUBECONFIG,\n"
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
  std::string token_file;
  std::string coordinator_ca;
  bool keep = false;     // --keep: annotate, post an Event, count at the coordinator
  bool no_keep = false;  // --no-keep: read-only, the default, said explicitly
  std::string kubeconfig;
  std::string context;
  uint64_t max_log_bytes = 8 << 20;
  uint64_t head_bytes = 256 << 10;
  int64_t tail_lines = 5000;
  std::string agent_ns = "nccl-triage";
  int64_t timeout_seconds = 600;
};

// The flags (base/flags.h), then what they must say together; an error is the line to print.
std::string Parse(const std::vector<std::string>& argv, Args& a, bool* help) {
  auto target = [&a](Target::Kind kind) {
    return [&a, kind](const std::string& v) -> Status {
      ++a.targets;
      a.target.kind = kind;
      if (kind == Target::Kind::kSelector) {
        if (v.empty()) return InvalidArgument("expects a label selector");
        a.target.selector = v;
        return Status::Ok();
      }
      if (kind == Target::Kind::kJob) {
        if (!triage::IsObjectName(v)) {
          return InvalidArgument("'" + v + "' is not a Kubernetes object name");
        }
        a.target.selector = v;
        return Status::Ok();
      }
      a.target.names = triage::SplitList(v);
      if (a.target.names.empty()) return InvalidArgument(std::string("names nothing"));
      for (const auto& n : a.target.names) {
        if (!triage::IsObjectName(n)) {
          return InvalidArgument("'" + n + "' is not a Kubernetes object name");
        }
      }
      return Status::Ok();
    };
  };
  auto name = [](std::string* out) {
    return [out](const std::string& v) -> Status {
      if (!triage::IsObjectName(v)) return InvalidArgument("'" + v + "' is not a Kubernetes name");
      *out = v;
      return Status::Ok();
    };
  };
  auto duration = [](int64_t* out) {
    return [out](const std::string& v) -> Status {
      auto d = triage::ParseDurationSeconds(v);
      if (!d.ok()) return d.status();
      *out = *d;
      return Status::Ok();
    };
  };
  auto size = [](uint64_t* out) {
    return [out](const std::string& v) -> Status {
      auto b = triage::ParseByteSize(v);
      if (!b.ok()) return b.status();
      *out = *b;
      return Status::Ok();
    };
  };
  int tail_lines = static_cast<int>(a.tail_lines);
  Status parsed = FlagParser()
                      .Switch({"--help", "-h"}, help)
                      .Custom({"--job"}, target(Target::Kind::kJob))
                      .Custom({"--selector", "-l"}, target(Target::Kind::kSelector))
                      .Custom({"--pods"}, target(Target::Kind::kPods))
                      .Custom({"--nodes"}, target(Target::Kind::kNodes))
                      .Custom({"--namespace", "-n"}, name(&a.ns))
                      .Custom({"--since"}, duration(&a.since_seconds))
                      .Custom({"--timeout"}, duration(&a.timeout_seconds))
                      .Choice({"--format"}, &a.format, {"table", "json"})
                      .Switch({"--no-probe"}, &a.no_probe)
                      .String({"--coordinator"}, &a.coordinator)
                      .String({"--token-file"}, &a.token_file)
                      .String({"--coordinator-ca"}, &a.coordinator_ca)
                      .Switch({"--keep"}, &a.keep)
                      .Switch({"--no-keep"}, &a.no_keep)
                      .String({"--kubeconfig"}, &a.kubeconfig)
                      .String({"--context"}, &a.context)
                      .Custom({"--agent-namespace"}, name(&a.agent_ns))
                      .Custom({"--max-log-bytes"}, size(&a.max_log_bytes))
                      .Custom({"--head-bytes"}, size(&a.head_bytes))
                      .Int({"--tail-lines"}, &tail_lines, 0, 10'000'000)
                      .Parse(argv);
  if (!parsed.ok()) return parsed.message();
  if (a.keep && a.no_keep) return "--keep and --no-keep contradict each other";
  a.tail_lines = tail_lines;
  if (*help) return "";
  if (a.targets != 1) return "give exactly one of --job, --selector, --pods, --nodes (try --help)";
  return "";
}

// The coordinator is named as gRPC names a target, HOST:PORT ([v6]:PORT): a URL would reach
// gRPC's resolver as a host name and fail as an unreachable coordinator, after the whole triage.
std::string CoordinatorTargetError(const std::string& target) {
  if (target.find("://") != std::string::npos) {
    return "expects HOST:PORT, the coordinator's gRPC port (not a URL: '" + target + "')";
  }
  const size_t colon = target.rfind(':');
  const std::string port = colon == std::string::npos ? "" : target.substr(colon + 1);
  const bool digits =
      !port.empty() && port.size() <= 5 &&
      std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (colon == 0 || !digits || std::stoi(port) == 0 || std::stoi(port) > 65535) {
    return "expects HOST:PORT, the coordinator's gRPC port (not '" + target + "')";
  }
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
  Args a;
  bool help = false;
  if (std::string e = Parse(ctx.args, a, &help); !e.empty()) {
    ctx.err << "nccl-triage triage: " << e << "\n";
    return 2;
  }
  if (help) {
    ctx.out << kUsage;
    return 0;
  }
  std::string coordinator_from = "--coordinator";
  if (a.coordinator.empty()) {
    const char* env = std::getenv("NCCL_TRIAGE_COORDINATOR");
    if (env != nullptr) a.coordinator = env;
    coordinator_from = "NCCL_TRIAGE_COORDINATOR";
  }
  if (!a.coordinator.empty()) {
    if (std::string e = CoordinatorTargetError(a.coordinator); !e.empty()) {
      ctx.err << "nccl-triage triage: " << coordinator_from << ": " << Printable(e) << "\n";
      return 2;
    }
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
  const CoordinatorAccess coordinator{server, a.coordinator, a.token_file, a.coordinator_ca};
  std::vector<std::string> nodes = in.nodes;
  for (const auto& p : in.pods) {
    if (!p.node.empty() && std::find(nodes.begin(), nodes.end(), p.node) == nodes.end()) {
      nodes.push_back(p.node);
    }
  }
  if (a.no_probe) {
    in.probes.not_asked = "--no-probe";
  } else if (a.coordinator.empty()) {
    in.probes.not_asked =
        "no coordinator given (--coordinator HOST:PORT or NCCL_TRIAGE_COORDINATOR)";
  } else if (nodes.empty()) {
    in.probes.not_asked = "no node to probe: no pod of the job was scheduled";
  } else {
    std::function<void(int)> progress;
    if (tty) {
      progress = [&](int seconds) {
        ctx.err << "\rprobing " << nodes.size() << " node(s) through the coordinator at "
                << a.coordinator << ": " << seconds << " s" << std::flush;
      };
    }
    in.probes = RunProbes(coordinator, nodes, std::chrono::seconds(a.timeout_seconds), progress);
    if (tty) ctx.err << "\r\033[K" << std::flush;
  }
  in.now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  const triage::Incident incident = triage::JudgeIncident(in);

  triage::KeepOutcome kept;
  // Read-only unless asked: a person looking at an incident changes nothing on the cluster.
  const std::string read_only = a.no_keep ? "--no-keep" : "read-only; --keep writes it";
  if (a.keep) {
    kept = RunKeep(server, ApiArgs(a), incident, *fetched);
  } else {
    kept.not_attempted = read_only;
  }
  if (!a.keep) {
    kept.count_error = read_only;
  } else if (a.coordinator.empty()) {
    kept.count_error = "no coordinator given";
  } else if (in.probes.asked && !in.probes.error.empty()) {
    // Asking again would wait out the same silence (or hear the same refusal).
    kept.count_error = "the coordinator did not answer the probes";
  } else {
    kept.count_error = CountIncident(coordinator, incident);
    kept.counted = kept.count_error.empty();
  }

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
                 {"counted", kept.counted},
                 {"count_error", kept.count_error}};
    ctx.out << DumpJson(j, 2) << "\n";
  } else {
    ctx.out << triage::RenderIncidentTable(incident, kept);
  }
  return incident.exit_code;
}

}  // namespace nccl_triage
