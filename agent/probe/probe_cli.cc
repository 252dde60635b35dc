#include "probe/probe_cli.h"

#include <stdlib.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <ostream>

#include "base/byte_size.h"
#include "base/flags.h"
#include "core/json_text.h"
#include "core/rail_selection.h"
#include "probe/child.h"
#include "probe/intra_node.h"
#include "probe/pair_local.h"
#include "probe/runner.h"

namespace nccl_triage {
namespace {

constexpr const char* kUsage =
    "usage: nccl-triage probe --pair-local [flags]\n"
    "       nccl-triage probe --intra-node [--gpus LIST] [flags]\n"
    "       nccl-triage probe --child --mode socket|ib|intra --rank R --nranks N [child flags]\n"
    "\n"
    "--pair-local runs real NCCL all-reduce probes, forced onto sockets and onto InfiniBand, as\n"
    "two ranks on this host (different NCCL_HOSTID, so NCCL must use the network), and applies\n"
    "the decision table: socket pass + IB fail = ib_resource, socket fail = architecture.\n"
    "--intra-node runs one all-reduce among this node's GPUs (one rank per GPU, NCCL's own choice\n"
    "of P2P/SHM), and when it fails again with NCCL_P2P_LEVEL=LOC, NCCL_SHM_DISABLE=1 and both,\n"
    "to name the broken path (finding probe.intra_node).\n"
    "\n"
    "flags:\n"
    "  --mode socket|ib|both      which probes (default both, socket first; --pair-local only)\n"
    "  --gpus LIST                --intra-node: bus ids or indexes, comma-separated (default all\n"
    "                             GPUs under <root>/proc/driver/nvidia/gpus)\n"
    "  --format table|json        output (default table)\n"
    "  --size BYTES               all-reduce size, e.g. 1M, 64M, 1G (default 64M)\n"
    "  --iters N, --warmup W      timed and warm-up iterations (default 10, 2)\n"
    "  --timeout S                per-rank wall-clock limit in seconds (default 120)\n"
    "  --socket-ifname IF         NCCL_SOCKET_IFNAME (default: the default route's interface)\n"
    "  --ib-hca HCA               NCCL_IB_HCA for the IB probe (one rail, e.g. =mlx5_0)\n"
    "  --nccl-lib PATH            libnccl.so.2 (file or directory), tried first; repeatable\n"
    "  --cuda-lib PATH            libcuda.so.1 (file or directory), tried first; repeatable\n"
    "  --only-configured-libs     do not search the loader path or well-known locations\n"
    "  --env-allow NAME           pass this variable of the environment to the ranks; repeatable\n"
    "  --root DIR                 host root for node checks and /proc/net/route (default /)\n"
    "  --work-dir DIR             where the NCCL logs go (default: a new folder under $TMPDIR)\n"
    "  --config FILE              configuration file (probe section; flags override it)\n"
    "  --rails all|N|LIST         the IB probe once per rail (every rail, the first N, or\n"
    "                             rails and HCAs: 0,3 or mlx5_3,mlx5_5:1), on its nearest GPU\n"
    "\n"
    "exit: 0 healthy, 1 fault verdict (or an intra-node warning), 2 usage, 3 nothing to conclude\n";

struct PairArgs {
  bool intra_node = false;
  bool mode_given = false;
  std::optional<std::string> gpus;  // --gpus
  std::vector<ProbeMode> modes = {ProbeMode::kSocket, ProbeMode::kIb};
  bool json = false;
  std::string root = "/";
  std::string work_dir;
  std::string config_path;
  bool default_library_search = true;
};

// The flags given on the command line, applied over the configuration afterwards.
struct Overrides {
  std::optional<uint64_t> size;
  std::optional<int> iters, warmup, timeout;
  std::optional<std::string> ifname, hca, rails;
  std::vector<std::string> nccl_libs, cuda_libs, env_allow;
};

Status ParsePairArgs(const std::vector<std::string>& args, PairArgs& p, Overrides& o) {
  bool pair_local = false;
  bool only_configured = false;
  std::string format = "table";
  Status s =
      FlagParser()
          .Switch({"--pair-local"}, &pair_local)
          .Switch({"--intra-node"}, &p.intra_node)
          .String({"--gpus"}, &p.gpus)
          .Custom({"--mode"},
                  [&p](const std::string& v) -> Status {
                    p.mode_given = true;
                    if (v == "both") {
                      p.modes = {ProbeMode::kSocket, ProbeMode::kIb};
                    } else if (auto m = FromString<ProbeMode>(v)) {
                      p.modes = {*m};
                    } else {
                      return InvalidArgument("expects one of socket, ib, both (not '" + v + "')");
                    }
                    return Status::Ok();
                  })
          .Choice({"--format"}, &format, {"table", "json"})
          .Custom({"--size"},
                  [&o](const std::string& v) -> Status {
                    o.size = ParseByteSize(v);
                    if (!o.size || *o.size == 0) {
                      return InvalidArgument("expects a size such as 64M (not '" + v + "')");
                    }
                    return Status::Ok();
                  })
          .Int({"--iters"}, &o.iters, 1, 1'000'000)
          .Int({"--warmup"}, &o.warmup, 0, 1'000'000)
          .Int({"--timeout"}, &o.timeout, 1, 86'400)
          .String({"--socket-ifname"}, &o.ifname)
          .String({"--ib-hca"}, &o.hca)
          .Custom({"--rails"},
                  [&o](const std::string& v) -> Status {
                    if (auto sel = ParseRailSelection(v); !sel.ok()) return sel.status();
                    o.rails = v;
                    return Status::Ok();
                  })
          .String({"--root"}, &p.root)
          .String({"--work-dir"}, &p.work_dir)
          .String({"--config"}, &p.config_path)
          .Repeated({"--nccl-lib"}, &o.nccl_libs)
          .Repeated({"--cuda-lib"}, &o.cuda_libs)
          .Repeated({"--env-allow"}, &o.env_allow)
          .Switch({"--only-configured-libs"}, &only_configured)
          .Parse(args);
  if (!s.ok()) return s;
  if (pair_local == p.intra_node) {
    return InvalidArgument("give one of --pair-local and --intra-node");
  }
  if (p.intra_node && p.mode_given) return InvalidArgument("--mode is for --pair-local only");
  if (!p.intra_node && p.gpus) return InvalidArgument("--gpus is for --intra-node only");
  if (p.intra_node && o.rails) return InvalidArgument("--rails is for --pair-local only");
  p.json = format == "json";
  if (only_configured) p.default_library_search = false;
  return Status::Ok();
}

void Apply(const Overrides& o, ProbeConfig& c) {
  if (o.size) c.size_bytes = *o.size;
  if (o.iters) c.iterations = *o.iters;
  if (o.warmup) c.warmup_iterations = *o.warmup;
  if (o.timeout) c.timeout_seconds = *o.timeout;
  if (o.ifname) c.socket_ifname = o.ifname;
  if (o.hca) c.ib_hca = o.hca;
  if (o.rails) c.rails = o.rails;
  // Paths given on the command line come before the configured ones.
  c.nccl_library_paths.insert(c.nccl_library_paths.begin(), o.nccl_libs.begin(), o.nccl_libs.end());
  c.cuda_library_paths.insert(c.cuda_library_paths.begin(), o.cuda_libs.begin(), o.cuda_libs.end());
  c.env_allowlist.insert(c.env_allowlist.end(), o.env_allow.begin(), o.env_allow.end());
}

// The rails `text` selects (the first N for a count: one command is one sweep), with their GPUs'
// holders from the node.
StatusOr<std::vector<RailTarget>> ChooseRails(const std::string& text, const std::string& root,
                                              const ProbeCliHooks& hooks) {
  auto selection = ParseRailSelection(text);
  if (!selection.ok()) return selection.status();
  std::vector<RailTarget> node;
  if (hooks.node_rails) {
    auto got = hooks.node_rails(root);
    if (!got.ok()) return got.status();
    node = std::move(*got);
  }
  std::vector<Rail> table;
  for (const auto& t : node) table.push_back(t.rail);
  auto rails = RailsToProbe(table, *selection, 0);
  if (!rails.ok()) return rails.status();
  std::vector<RailTarget> out;
  for (auto& rail : *rails) {
    RailTarget t;
    for (const auto& n : node) {
      if (rail.index >= 0 && n.rail.index == rail.index) t.gpu_busy_by = n.gpu_busy_by;
    }
    t.rail = std::move(rail);
    out.push_back(std::move(t));
  }
  return out;
}

// --gpus over the node's GPUs (bus ids, sorted): each item a bus id of the node or an index into
// that list. Returns the chosen bus ids and a note on the choice.
StatusOr<std::pair<std::vector<std::string>, std::string>> SelectGpus(
    const std::optional<std::string>& list, const std::vector<std::string>& node_gpus,
    const std::string& root) {
  const std::string where = (root == "/" ? std::string() : root) + "/proc/driver/nvidia/gpus";
  if (!list) return std::make_pair(node_gpus, "all GPUs listed in " + where);
  std::vector<std::string> chosen;
  size_t start = 0;
  while (start <= list->size()) {
    size_t comma = list->find(',', start);
    std::string item = list->substr(start, comma == std::string::npos ? comma : comma - start);
    start = comma == std::string::npos ? list->size() + 1 : comma + 1;
    if (item.empty()) return InvalidArgument("--gpus has an empty item");
    auto by_bus = std::find(node_gpus.begin(), node_gpus.end(), item);
    size_t index = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), index);
    if (by_bus != node_gpus.end()) {
      item = *by_bus;
    } else if (ec == std::errc() && end == item.data() + item.size() && index < node_gpus.size()) {
      item = node_gpus[index];
    } else {
      return InvalidArgument("--gpus: '" + item + "' is neither a bus id nor an index of the " +
                             std::to_string(node_gpus.size()) + " GPUs in " + where);
    }
    if (std::find(chosen.begin(), chosen.end(), item) != chosen.end()) {
      return InvalidArgument("--gpus names " + item + " twice");
    }
    chosen.push_back(item);
  }
  return std::make_pair(chosen, "--gpus " + *list);
}

int RunIntraNodeCommand(const PairArgs& p, const ProbeRunner& runner, std::ostream& out,
                        std::ostream& err) {
  auto gpus = SelectGpus(p.gpus, ListNodeGpus(p.root), p.root);
  if (!gpus.ok()) {
    err << "nccl-triage probe: " << gpus.status().message() << "\n";
    return 2;
  }
  IntraNodeReport report = RunIntraNode(runner, gpus->first, gpus->second);
  if (p.json) {
    out << DumpJson(ToJson(report), 2) << "\n";
  } else {
    PrintIntraTable(report, out);
  }
  return ExitCodeFor(report.finding);
}

int RunProbeCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                    const ProbeCliHooks& hooks) {
  PairArgs p;
  Overrides o;
  if (Status st = ParsePairArgs(args, p, o); !st.ok()) {
    err << "nccl-triage probe: " << st.message() << "\n";
    return 2;
  }
  ProbeConfig config;
  if (!p.config_path.empty()) {
    if (!hooks.load_config) {
      err << "nccl-triage probe: --config is not supported by this build\n";
      return 2;
    }
    auto loaded = hooks.load_config(p.config_path);
    if (!loaded.ok()) {
      err << "nccl-triage probe: " << loaded.status().message() << "\n";
      return 2;
    }
    config = *loaded;
  }
  Apply(o, config);

  ProbeRunnerOptions ro;
  ro.child_exe = hooks.self_exe;
  ro.root = p.root;
  ro.parent_env = hooks.environment;
  ro.default_library_search = p.default_library_search;
  if (p.work_dir.empty()) {
    auto dir = MakePrivateWorkDir(hooks.environment);
    if (!dir.ok()) {
      err << "nccl-triage probe: " << dir.status().message() << "\n";
      return 2;
    }
    ro.work_dir = *dir;
  } else {
    ro.work_dir = p.work_dir;
  }
  // A work directory the probes cannot write to is a usage error, not a probe that fails (which
  // the decision table would blame on the fabric).
  if (Status st = PrepareWorkDir(ro.work_dir); !st.ok()) {
    err << "nccl-triage probe: --work-dir: " << st.message() << "\n";
    return 2;
  }
  if (p.intra_node) return RunIntraNodeCommand(p, ProbeRunner(config, ro), out, err);

  std::vector<Finding> findings;
  std::string note;
  if (hooks.node_findings) {
    auto f = hooks.node_findings(p.root, p.config_path);
    if (f.ok()) {
      findings = std::move(*f);
    } else {
      note = "not run: " + f.status().message();
    }
  } else {
    note = "not run (this build has no host checks)";
  }

  std::vector<RailTarget> rails;
  if (config.rails) {
    auto chosen = ChooseRails(*config.rails, p.root, hooks);
    if (!chosen.ok()) {
      err << "nccl-triage probe: --rails " << *config.rails << ": " << chosen.status().message()
          << "\n";
      return 2;
    }
    rails = std::move(*chosen);
  }

  ProbeRunner runner(config, ro);
  // Each mode may run up to two probe timeouts: say what is running, on a terminal only.
  TerminalProgress progress(err, hooks.stderr_is_terminal);
  std::map<std::string, double> port_rates;
  if (hooks.node_port_rates) port_rates = hooks.node_port_rates(p.root);
  PairLocalReport report = RunPairLocal(runner, p.modes, std::move(findings), note, &progress,
                                        rails, std::move(port_rates));
  if (p.json) {
    out << DumpJson(ToJson(report), 2) << "\n";
  } else {
    PrintPairTable(report, out);
  }
  return ExitCodeFor(report.verdict);
}

}  // namespace

int RunProbeCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                const ProbeCliHooks& hooks) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      out << kUsage;
      return 0;
    }
  }
  if (!args.empty() && args[0] == "--child") {
    return RunProbeChildCommand({args.begin() + 1, args.end()}, out, err);
  }
  if (std::find(args.begin(), args.end(), "--pair-local") != args.end() ||
      std::find(args.begin(), args.end(), "--intra-node") != args.end()) {
    return RunProbeCommand(args, out, err, hooks);
  }
  err << kUsage;
  return 2;
}

}  // namespace nccl_triage
