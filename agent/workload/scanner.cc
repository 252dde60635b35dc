#include "workload/scanner.h"

#include <re2/re2.h>

#include <algorithm>
#include <map>
#include <memory>

#include "base/text.h"
#include "host/parsers.h"
#include "host/root_reader.h"

namespace nccl_triage::workload {
namespace {

bool AllDigits(std::string_view s) {
  if (s.empty() || s.size() > 9) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The literal text every match must start with ("^/dev/nvidia[0-9]+$" -> "/dev/nvidia"), so that
// the regex runs only on plausible targets: most fd links are sockets, pipes and anon inodes.
std::string LiteralPrefix(std::string_view pattern) {
  if (!pattern.starts_with('^')) return "";
  std::string out;
  for (size_t i = 1; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (std::string_view("\\.[]()*+?{}|^$").find(c) != std::string_view::npos) {
      // A quantifier applies to the previous character, which is then not certain either.
      if ((c == '*' || c == '?' || c == '{') && !out.empty()) out.pop_back();
      break;
    }
    out.push_back(c);
  }
  return out;
}


std::string TrimNewline(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == '\0')) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

class Pass {
 public:
  Pass(const ScannerOptions& options, RootReader& reader)
      : options_(options), reader_(reader), prefix_(LiteralPrefix(options.gpu_device_pattern)) {
    // RE2: a link target comes from the host (any process names its own fds), so matching must
    // be linear in it and never recurse.
    RE2::Options re2_options;
    re2_options.set_log_errors(false);
    pattern_ = std::make_unique<RE2>(options.gpu_device_pattern, re2_options);
    pattern_ok_ = pattern_->ok();
  }

  ScanResult Run() {
    ScanResult result;
    if (!pattern_ok_) {
      result.error = "invalid GPU device pattern";
      return result;
    }
    ListResult procs = reader_.List("proc");
    if (!procs.exists) {
      result.error = "proc: " + procs.error;
      return result;
    }
    host_netns_ = FactFrom<std::string>("proc/1/ns/net", reader_.ReadLink("proc/1/ns/net"),
                                        ParseNamespaceLink);
    result.host_netns = host_netns_;
    // The agent's own pod is never a workload: its probe children hold GPUs during a probe.
    if (options_.self_pid > 0) {
      ReadResult own = reader_.ReadFile("proc/" + std::to_string(options_.self_pid) + "/cgroup");
      if (own.ok()) {
        if (auto ref = ParseCgroupFile(*own.text)) own_pod_uid_ = ref->pod_uid;
      }
    }
    // First the fd links of every process (one pass over proc/, relative opens), then the files
    // of the few that hold a GPU.
    std::vector<std::string> fd_dirs;
    std::vector<int> pids;
    for (const auto& name : procs.names) {
      if (!AllDigits(name)) continue;
      int pid = std::stoi(name);
      if (pid == options_.self_pid) continue;
      pids.push_back(pid);
      fd_dirs.push_back(name + "/fd");
    }
    result.processes_scanned = static_cast<int>(pids.size());
    std::map<size_t, std::vector<std::string>> gpus_of;
    reader_.ForEachLink("proc", fd_dirs, [&](size_t i, std::string_view target) {
      if (!Matches(target)) return;
      auto& gpus = gpus_of[i];
      if (std::find(gpus.begin(), gpus.end(), target) == gpus.end()) gpus.emplace_back(target);
    });
    std::map<std::string, ContainerFacts> by_id;
    for (auto& [i, gpus] : gpus_of) {
      const int pid = pids[i];
      std::sort(gpus.begin(), gpus.end(),
                [](const auto& a, const auto& b) { return NaturalLess(a, b); });
      ProcessOutcome outcome = ReadProcess(pid, std::to_string(pid), std::move(gpus));
      if (!outcome.skip_reason.empty()) {
        Skip(result, pid, outcome.skip_reason);
        continue;
      }
      auto& container = by_id[outcome.ref.container_id];
      if (container.ref.container_id.empty()) container.ref = outcome.ref;
      container.processes.push_back(std::move(outcome.facts));
    }
    for (auto& [id, c] : by_id) {
      std::sort(c.processes.begin(), c.processes.end(),
                [](const auto& a, const auto& b) { return a.pid < b.pid; });
      result.containers.push_back(std::move(c));
    }
    result.files_read = reader_.TakeFilesRead();
    return result;
  }

 private:
  struct ProcessOutcome {
    CgroupRef ref;
    ProcessFacts facts;
    std::string skip_reason;
  };

  void Skip(ScanResult& result, int pid, std::string reason) {
    Debug("workload: skipped pid " + std::to_string(pid) + ": " + reason);
    result.skipped.push_back({pid, std::move(reason)});
  }

  void Debug(const std::string& line) const {
    if (options_.debug) options_.debug(line);
  }

  bool Matches(std::string_view target) const {
    if (!target.starts_with(prefix_)) return false;
    return RE2::FullMatch(re2::StringPiece(target.data(), target.size()), *pattern_);
  }

  template <typename T>
  Fact<T> FactFrom(const std::string& source, const ReadResult& r,
                   const std::function<std::optional<T>(std::string_view)>& parse) {
    Fact<T> f;
    f.source = source;
    if (!r.ok()) {
      f.error = r.error;
    } else if (auto v = parse(*r.text)) {
      f.value = std::move(*v);
    } else {
      f.error = UnparseableError(*r.text);
    }
    return f;
  }

  // Interface names from net/dev; in a private namespace, state and type from the container's
  // sysfs (bounded: a pod has a handful of interfaces, the host may have hundreds of veths).
  Fact<std::vector<NetInterface>> Interfaces(const std::string& dir, const ReadResult& net_dev,
                                             const Fact<std::string>& netns) {
    Fact<std::vector<NetInterface>> f;
    f.source = dir + "net/dev";
    if (!net_dev.ok()) {
      f.error = net_dev.error;
      return f;
    }
    auto names = ParseNetDevNames(*net_dev.text);
    if (!names) {
      f.error = UnparseableError(*net_dev.text);
      return f;
    }
    const bool private_ns = netns.ok() && host_netns_.ok() && *netns.value != *host_netns_.value;
    constexpr size_t kMaxInterfaceReads = 16;
    std::vector<NetInterface> out;
    for (size_t i = 0; i < names->size(); ++i) {
      NetInterface ni;
      ni.name = (*names)[i];
      const std::string sys = dir + "root/sys/class/net/" + ni.name + "/";
      if (private_ns && i < kMaxInterfaceReads) {
        ReadResult state = reader_.ReadFile(sys + "operstate");
        ni.operstate = FactFrom<std::string>(sys + "operstate", state,
                                             [](std::string_view t) -> std::optional<std::string> {
                                               std::string v = TrimNewline(t);
                                               if (v.empty() || v.size() > 32) return std::nullopt;
                                               return v;
                                             });
        ni.type = FactFrom<int>(sys + "type", reader_.ReadFile(sys + "type"), ParseDecimalInt);
      } else {
        ni.operstate.source = sys + "operstate";
        ni.operstate.error = private_ns ? "not read (too many interfaces)"
                                        : "host network namespace (see the node's interfaces)";
      }
      out.push_back(std::move(ni));
    }
    f.value = std::move(out);
    return f;
  }

  ProcessOutcome ReadProcess(int pid, const std::string& pid_name, std::vector<std::string> gpus) {
    ProcessOutcome out;
    const std::string dir = "proc/" + pid_name + "/";
    ReadResult cgroup = reader_.ReadFile(dir + "cgroup");
    if (!cgroup.ok()) {
      // Every live process has a cgroup file: missing (or the whole directory gone, or ESRCH on
      // a half-torn-down one) means it exited after the fd scan. Otherwise it is unreadable.
      const bool gone = cgroup.error == "missing" || !reader_.Exists(dir.substr(0, dir.size() - 1));
      out.skip_reason =
          gone ? std::string("exited during the scan") : dir + "cgroup " + cgroup.error;
      return out;
    }
    auto ref = ParseCgroupFile(*cgroup.text);
    if (!ref) {
      out.skip_reason = "cgroup path of unknown shape (not a Kubernetes container): '" +
                        PrintableAscii(TrimNewline(*cgroup.text), 160) + "'";
      return out;
    }
    if (!own_pod_uid_.empty() && ref->pod_uid == own_pod_uid_) {
      out.skip_reason = "the agent's own pod";
      return out;
    }
    out.ref = std::move(*ref);
    ProcessFacts& p = out.facts;
    p.pid = pid;
    p.gpu_devices = std::move(gpus);
    bool failed = false;  // any read failed: the process may have exited meanwhile
    auto read = [&](const char* leaf) {
      ReadResult r = reader_.ReadFile(dir + leaf);
      failed = failed || !r.ok();
      return r;
    };

    if (ReadResult r = read("comm"); r.ok()) p.comm = PrintableAscii(TrimNewline(*r.text), 64);

    ReadResult limits = read("limits");
    auto parsed_limits =
        limits.ok() ? ParseLimits(*limits.text) : std::map<std::string, LimitPair>{};
    auto limit_fact = [&](const char* row) {
      Fact<LimitPair> f;
      f.source = dir + "limits";
      if (!limits.ok()) {
        f.error = limits.error;
      } else if (auto it = parsed_limits.find(row); it != parsed_limits.end()) {
        f.value = it->second;
      } else {
        f.error = "unparseable: no '" + std::string(row) + "' row";
      }
      return f;
    };
    p.memlock = limit_fact("Max locked memory");
    p.nofile = limit_fact("Max open files");

    ReadResult status = read("status");
    p.cap_eff = FactFrom<uint64_t>(dir + "status", status, ParseStatusCapEff);
    p.seccomp_mode = FactFrom<int>(dir + "status", status, ParseStatusSeccomp);

    {
      ReadResult link = reader_.ReadLink(dir + "ns/net");
      failed = failed || !link.ok();
      p.netns = FactFrom<std::string>(dir + "ns/net", link, ParseNamespaceLink);
    }

    {
      ListResult ib = reader_.List(dir + "root/dev/infiniband");
      p.dev_infiniband_present = ib.exists && ib.error.empty();
      p.dev_infiniband = std::move(ib.names);
      if (ib.exists && !ib.error.empty()) p.dev_infiniband_error = ib.error;
    }

    p.mounts = FactFrom<std::vector<MountEntry>>(
        dir + "mountinfo", read("mountinfo"),
        [](std::string_view text) -> std::optional<std::vector<MountEntry>> {
          auto all = ParseMountinfo(text);
          if (all.empty()) return std::nullopt;
          std::vector<MountEntry> kept;
          for (auto& m : all) {
            if (m.mount_point == "/dev/shm" || m.mount_point == "/dev/infiniband" ||
                m.mount_point == "/dev") {
              kept.push_back(std::move(m));
            }
          }
          return kept;
        });

    p.interfaces = Interfaces(dir, read("net/dev"), p.netns);

    {
      // The raw environment lives only in this block; the filter copies out allow-listed names.
      ReadResult env = read("environ");
      p.environ.source = dir + "environ";
      if (env.ok()) {
        p.environ.value = FilterEnviron(*env.text);
        const FilteredEnviron& fe = *p.environ.value;
        if (fe.malformed > 0 || fe.bad_values > 0) {
          Debug("workload: pid " + std::to_string(pid) +
                " environ: " + std::to_string(fe.malformed) + " malformed entries and " +
                std::to_string(fe.bad_values) + " allow-listed values that are not text skipped");
        }
      } else {
        p.environ.error = env.error;
      }
    }

    p.nccl = FactFrom<std::optional<NcclLibrary>>(
        dir + "maps", read("maps"),
        [](std::string_view text) -> std::optional<std::optional<NcclLibrary>> {
          // Engaged outer value: the file was read; the inner one says whether NCCL is mapped.
          return std::optional<std::optional<NcclLibrary>>(std::in_place, ParseNcclFromMaps(text));
        });

    if (failed && !reader_.Exists(dir.substr(0, dir.size() - 1))) {
      out.skip_reason = "exited during the scan";
      return out;
    }
    for (const auto* err : {&p.memlock.error, &p.cap_eff.error, &p.netns.error, &p.mounts.error,
                            &p.interfaces.error, &p.environ.error, &p.nccl.error}) {
      if (!err->empty()) {
        Debug("workload: pid " + std::to_string(pid) + ": " + PrintableAscii(*err, 120));
      }
    }
    return out;
  }

  const ScannerOptions& options_;
  RootReader& reader_;
  Fact<std::string> host_netns_;
  std::string own_pod_uid_;
  std::string prefix_;
  std::unique_ptr<RE2> pattern_;
  bool pattern_ok_ = false;
};

}  // namespace

WorkloadScanner::WorkloadScanner(ScannerOptions options) : options_(std::move(options)) {}

ScanResult WorkloadScanner::Scan() const {
  RootReader reader(options_.root);
  return Pass(options_, reader).Run();
}

}  // namespace nccl_triage::workload
