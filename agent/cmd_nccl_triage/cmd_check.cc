// `nccl-triage check`: gather this node's snapshot (or read a saved one), run every host check,
// and print the node report.
//
// Exit codes (DESIGN "Contracts"): 0 when every check passes, warns or skips; 1 when any fails;
// 2 for a usage, configuration or unreadable-input error, with exactly one line on stderr.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "base/files.h"
#include "base/flags.h"
#include "base/log.h"
#include "checks/check.h"
#include "cmd_nccl_triage/cli.h"
#include "cmd_nccl_triage/report_table.h"
#include "cmd_nccl_triage/workload_check.h"
#include "config/config_loader.h"
#include "core/json_text.h"
#include "core/rails.h"
#include "core/report.h"
#include "core/snapshot_json.h"
#include "host/gatherer.h"
#include "kernel/kernel_judge.h"

namespace nccl_triage {
namespace {

constexpr const char* kUsage =
    "usage: nccl-triage check [--root DIR] [--config FILE] [--format table|json]\n"
    "                         [--dump-snapshot FILE|-] [--from-snapshot FILE|-]\n"
    "                         [--previous-snapshot FILE] [--dump-config] [--node NAME]\n"
    "                         [--workloads] [--kernel-log FILE|-]\n"
    "  Reads this node (or the tree under --root, or a snapshot saved with --dump-snapshot)\n"
    "  and judges it with every host check. The class is a prediction from the checks alone:\n"
    "  architecture (host, container or versions) before ib_resource (fabric, HCA, RDMA stack).\n"
    "  --previous-snapshot turns port error counters into rates. --dump-snapshot - writes the\n"
    "  snapshot to stdout instead of the report. --dump-config prints the effective\n"
    "  configuration. --workloads also judges every GPU container on the node through\n"
    "  /proc/<pid> (limits, network namespace, /dev/infiniband, /dev/shm, NCCL environment).\n"
    "  --kernel-log also judges a saved kernel log (dmesg, dmesg -T, journalctl -k, a /dev/kmsg\n"
    "  dump): link flaps, cable events, PCIe AER on HCAs and GPUs, NVIDIA Xids.\n"
    "  Exit 0: no check failed; 1: a check failed; 2: usage, configuration or unreadable input.\n";

struct Args {
  std::string root = "/";
  bool root_given = false;
  std::optional<std::string> config_path;
  std::string format = "table";
  std::optional<std::string> dump_snapshot;
  std::optional<std::string> from_snapshot;
  std::optional<std::string> previous_snapshot;
  bool dump_config = false;
  bool workloads = false;
  bool help = false;
  std::optional<std::string> node;
  std::optional<std::string> kernel_log;
};

StatusOr<Args> ParseArgs(const std::vector<std::string>& argv) {
  Args a;
  std::optional<std::string> root;
  Status s = FlagParser()
                 .Switch({"--help", "-h"}, &a.help)
                 .Switch({"--dump-config"}, &a.dump_config)
                 .Switch({"--workloads"}, &a.workloads)
                 .String({"--root"}, &root)
                 .String({"--config"}, &a.config_path)
                 .Choice({"--format"}, &a.format, {"table", "json"})
                 .String({"--dump-snapshot"}, &a.dump_snapshot)
                 .String({"--from-snapshot"}, &a.from_snapshot)
                 .String({"--previous-snapshot"}, &a.previous_snapshot)
                 .String({"--node"}, &a.node)
                 .String({"--kernel-log"}, &a.kernel_log)
                 .Parse(argv);
  if (!s.ok()) return s;
  if (root) {
    a.root = *root;
    a.root_given = true;
  }
  if (a.root_given && a.from_snapshot) {
    return InvalidArgument("--root and --from-snapshot exclude each other");
  }
  if (a.kernel_log == "-" && (a.from_snapshot == "-" || a.previous_snapshot == "-")) {
    return InvalidArgument("only one input can come from standard input");
  }
  if (a.workloads && a.from_snapshot) {
    return InvalidArgument("--workloads reads processes: it needs a root, not --from-snapshot");
  }
  return a;
}

StatusOr<NodeSnapshot> ReadSnapshot(const std::string& path) {
  auto read = path == "-" ? ReadWholeStream(std::cin, "snapshot on standard input")
                          : ReadWholeFile(path, "snapshot");
  if (!read.ok()) return read.status();
  const std::string& text = *read;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("snapshot '" + path + "' is not valid JSON");
  auto snap = SnapshotFromJson(j);
  if (!snap.ok()) {
    return InvalidArgument("snapshot '" + path + "': " + snap.status().message());
  }
  return snap;
}

Status WriteSnapshot(const NodeSnapshot& s, const std::string& path, std::ostream& out) {
  const std::string text = DumpJson(ToJson(s), 2) + "\n";
  if (path == "-") {
    out << text;
    return Status::Ok();
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Unavailable("cannot write snapshot '" + path + "'");
  f << text;
  f.close();
  if (!f) return Unavailable("cannot write snapshot '" + path + "'");
  return Status::Ok();
}

bool UseColor(const std::ostream& out) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  return &out == &std::cout && ::isatty(STDOUT_FILENO) == 1;
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One line on stderr, exit 2.
int UsageError(CliContext& ctx, const std::string& message) {
  ctx.err << "nccl-triage check: " << message << "\n";
  return 2;
}

}  // namespace

int RunCheckCommand(CliContext& ctx) {
  auto parsed = ParseArgs(ctx.args);
  if (!parsed.ok()) return UsageError(ctx, parsed.status().message());
  const Args& args = *parsed;
  if (args.help) {
    ctx.out << kUsage;
    return 0;
  }

  Config config;
  if (args.config_path) {
    auto loaded = LoadConfigFile(*args.config_path);
    if (!loaded.ok()) return UsageError(ctx, loaded.status().message());
    config = std::move(*loaded);
  }
  if (args.dump_config) {
    ctx.out << DumpConfig(config);
    return 0;
  }

  NodeSnapshot snapshot;
  if (args.from_snapshot) {
    auto read = ReadSnapshot(*args.from_snapshot);
    if (!read.ok()) return UsageError(ctx, read.status().message());
    snapshot = std::move(*read);
    if (args.node) snapshot.node = *args.node;
  } else {
    GatherOptions options;
    options.root = args.root;
    options.node_name = args.node.value_or("");
    options.mr_register_bytes = config.checks.mr_register_bytes;
    auto gathered = GatherSnapshot(options);
    if (!gathered.ok()) return UsageError(ctx, gathered.status().message());
    snapshot = std::move(*gathered);
  }

  std::optional<NodeSnapshot> previous;
  if (args.previous_snapshot) {
    auto read = ReadSnapshot(*args.previous_snapshot);
    if (!read.ok()) return UsageError(ctx, read.status().message());
    previous = std::move(*read);
    if (previous->taken_at_unix_ms >= snapshot.taken_at_unix_ms) {
      return UsageError(ctx, "--previous-snapshot " + *args.previous_snapshot + " (taken at " +
                                 FormatRfc3339(previous->taken_at_unix_ms) +
                                 ") is not older than the current snapshot (" +
                                 FormatRfc3339(snapshot.taken_at_unix_ms) +
                                 "): were the two files swapped?");
    }
  }

  if (args.dump_snapshot) {
    if (Status s = WriteSnapshot(snapshot, *args.dump_snapshot, ctx.out); !s.ok()) {
      return UsageError(ctx, s.message());
    }
    if (*args.dump_snapshot == "-") return 0;  // stdout carries the snapshot, not the report
  }

  const CheckRegistry registry = BuiltinCheckRegistry();
  CheckContext context;
  if (previous) context.previous = &*previous;
  std::vector<Finding> findings = registry.Run(snapshot, config, context);
  if (args.kernel_log) {
    auto text = *args.kernel_log == "-" ? ReadWholeStream(std::cin, "kernel log on standard input")
                                        : ReadWholeFile(*args.kernel_log, "kernel log");
    if (!text.ok()) return UsageError(ctx, text.status().message());
    kernel::KernelJudgeOptions options;
    options.link_flaps_per_hour = config.kernel.link_flaps_per_hour;
    options.boot = kernel::BootFromSnapshot(snapshot);  // lines of earlier boots do not count
    options.source = *args.kernel_log == "-" ? "kernel log on standard input" : *args.kernel_log;
    const auto events = kernel::EventsFromRecords(kernel::ParseDmesgText(*text));
    for (Finding& f :
         kernel::JudgeKernelEvents(events, kernel::DevicesFromSnapshot(snapshot), options)) {
      findings.push_back(std::move(f));
    }
  }
  NodeReport report = MakeReport(snapshot.node, std::move(findings), NowUnixMs());

  std::optional<WorkloadCheckOutput> workloads;
  if (args.workloads) {
    workloads = CheckWorkloads(args.root, snapshot, config,
                               SiblingExe(ctx.self_exe, "nccl-triage-server"), ctx.err);
  }

  if (args.format == "json") {
    nlohmann::json j = ToJson(report);
    j["rails"] = RailsJson(RailTable(snapshot));
    if (workloads) j["workloads"] = std::move(workloads->json);
    ctx.out << DumpJson(j, 2) << "\n";
  } else {
    TableOptions options;
    options.color = UseColor(ctx.out);
    RenderReportTable(report, ctx.out, options);
    RenderRailTable(RailTable(snapshot), ctx.out);
    if (workloads) ctx.out << workloads->table;
  }
  return std::max(ExitCodeFor(report), workloads ? workloads->exit_code : 0);
}

}  // namespace nccl_triage
