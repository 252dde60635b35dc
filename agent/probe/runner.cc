#include "probe/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/text.h"
#include "classify/classifier.h"
#include "classify/log_line.h"
#include "core/catalogue.h"
#include "core/ids.h"
#include "core/probe_availability.h"
#include "probe/child.h"
#include "probe/environment.h"

namespace nccl_triage {
namespace {

constexpr size_t kMaxLogBytes = 64ull << 20;  // a probe's log is a few KiB; bound the pathological
constexpr std::chrono::seconds kPeerGrace{5};

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? "SIG" + std::string(abbrev) : "signal " + std::to_string(sig);
}

// Printable, one line, short: what a garbage result looked like.
std::string Excerpt(std::string_view s) { return PrintableAscii(s, 80, '.'); }

std::string PickTransport(const std::vector<std::string>& transports) {
  for (const char* preferred : {"NET/IB", "NET/Socket"}) {
    if (std::find(transports.begin(), transports.end(), preferred) != transports.end()) {
      return preferred;
    }
  }
  return transports.empty() ? "" : transports.front();
}

// The intra-node probe's transport: P2P's kind if any channel used it, then SHM's, then the
// network NCCL fell back to between the GPUs of one host.
std::string PickLocalTransport(const Classification& log) {
  for (const char* prefix : {"P2P/", "SHM/"}) {
    for (const auto& t : log.local_transports) {
      if (t.starts_with(prefix)) return t;
    }
  }
  return PickTransport(log.transports);
}

bool IsFailure(ProbeOutcome o) {
  return o == ProbeOutcome::kFail || o == ProbeOutcome::kTimeout || o == ProbeOutcome::kCrashed;
}

}  // namespace

std::optional<ProbeResult> ParseChildOutput(const std::string& out) {
  size_t end = out.size();
  while (end > 0) {
    size_t start = out.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string_view line(out.data() + start, end - start);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    if (!line.empty() && line.front() == '{') {
      try {
        auto j = nlohmann::json::parse(line);
        if (j.is_object() && j.contains("outcome")) return ProbeResultFromJson(j);
      } catch (const std::exception&) {
        // not the result line; keep looking upwards
      }
    }
    if (start == 0) break;
    end = start - 1;
  }
  return std::nullopt;
}

void ApplyLogRules(ProbeResult& r, const std::optional<Classification>& log) {
  if (log) {
    r.transport =
        r.mode == ProbeMode::kIntraNode ? PickLocalTransport(*log) : PickTransport(log->transports);
    r.ib_ports = log->ib_ports;
    r.gdrdma = log->gdrdma;
  }
  const std::string want = r.mode == ProbeMode::kIb ? "NET/IB" : "NET/Socket";
  std::optional<std::pair<CauseId, std::string>> own_cause;  // id, evidence
  // The intra-node probe takes whatever NCCL chose; its judgement names the transport.
  if (r.mode != ProbeMode::kIntraNode && r.outcome == ProbeOutcome::kPass && r.transport != want) {
    r.outcome = ProbeOutcome::kFail;
    r.detail =
        r.transport.empty()
            ? "cannot confirm the transport: no channel line in the NCCL log (" +
                  (log ? std::string("log has none") : std::string("no log")) + ")"
            : std::string(ToString(r.mode)) + " probe ran via " + r.transport + ", not " + want;
    own_cause.emplace(ids::kProbeTransport, r.transport.empty() ? "no channel line in the NCCL log"
                                                                : "channels via " + r.transport +
                                                                      " (wanted " + want + ")");
  }
  if (r.outcome == ProbeOutcome::kFail && r.mismatches > 0) {
    own_cause.emplace(ids::kProbeData, r.detail);
  }
  if (auto cause = UnavailableCause(r); cause && !r.classification) {
    // The child's reason for not running, as a cause the coordinator's verdict can name.
    if (const CauseInfo* info = FindCause(*cause)) {
      Classification c;
      PrependCause(c, *info, r.detail);
      r.classification = std::move(c);
    }
  }
  if (!IsFailure(r.outcome)) {
    // A probe that worked keeps what NCCL's own diagnostics found (a GPU pair failing its
    // peer-access check, a NIC off the median): NCCL tested that path, the all-reduce did not.
    if (r.outcome == ProbeOutcome::kPass && log &&
        std::any_of(log->causes.begin(), log->causes.end(),
                    [](const ClassifiedCause& c) { return c.diagnostics; })) {
      Classification c = *log;
      std::erase_if(c.causes, [](const ClassifiedCause& x) { return !x.diagnostics; });
      r.classification = std::move(c);
    }
    return;
  }
  Classification c = log.value_or(Classification{});
  if (own_cause) {
    PrependCause(c, own_cause->first.info(), own_cause->second);
  } else if (r.cuda_result && c.causes.empty()) {
    PrependCause(c, ids::kCudaDriver.info(), r.detail);
  }
  r.classification = std::move(c);
}

std::optional<Classification> ClassifyLogFile(const std::string& path,
                                              std::string_view child_output) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  LogClassifier classifier;
  std::string line;
  size_t total = 0;
  while (total < kMaxLogBytes && std::getline(in, line)) {
    total += line.size() + 1;
    classifier.Feed(line);
  }
  // The child's output is bounded by the subprocess; only the diagnostics report is NCCL's.
  while (!child_output.empty()) {
    const size_t nl = child_output.find('\n');
    const std::string_view l = child_output.substr(0, nl);
    // A DIAG line as the log parser knows one; the JSON result line may quote such a line.
    if (!l.starts_with('{') && ParseLogLine(l).level == NcclLevel::kDiag) classifier.Feed(l);
    if (nl == std::string_view::npos) break;
    child_output.remove_prefix(nl + 1);
  }
  return classifier.Finish();
}

ProbeResult InterpretChild(const ProbeRequest& req, const SubprocessResult& proc,
                           const std::optional<Classification>& log, int timeout_seconds,
                           const std::string& log_path) {
  ProbeResult r;
  r.mode = req.mode;
  r.rank = req.rank;
  r.nranks = req.nranks;
  r.peer = req.peer;
  r.log_path = log_path;
  switch (proc.kind) {
    case ExitKind::kSpawnFailed:
      r.outcome = ProbeOutcome::kUnavailable;
      r.detail = "cannot start the probe child: " + proc.error;
      return r;  // nothing ran: no log to read
    case ExitKind::kTimedOut:
      r.outcome = ProbeOutcome::kTimeout;
      r.detail = "no result within " + std::to_string(timeout_seconds) +
                 " s; the probe's process group was killed";
      break;
    case ExitKind::kSignaled:
      r.outcome = ProbeOutcome::kCrashed;
      r.detail = "probe child killed by " + SignalName(proc.signal);
      break;
    case ExitKind::kExited: {
      auto parsed = ParseChildOutput(proc.out);
      if (!parsed) {
        r.outcome = ProbeOutcome::kFail;
        r.detail = "garbage result: no JSON result on stdout (exit code " +
                   std::to_string(proc.exit_code) + ")";
        if (proc.out_dropped > 0) {
          r.detail +=
              "; stdout exceeded its bound, " + std::to_string(proc.out_dropped) + " bytes dropped";
        }
        if (!proc.out.empty()) r.detail += "; stdout began \"" + Excerpt(proc.out) + "\"";
        break;
      }
      r = *parsed;
      r.mode = req.mode;
      r.rank = req.rank;
      r.nranks = req.nranks;
      if (r.peer.empty()) r.peer = req.peer;
      r.log_path = log_path;
      if (proc.out_dropped > 0) {
        r.detail +=
            " (stdout exceeded its bound: " + std::to_string(proc.out_dropped) + " bytes dropped)";
      }
      break;
    }
  }
  r.duration_seconds = proc.seconds;
  if (!req.check_only) ApplyLogRules(r, log);  // the check runs no collective: no transport
  return r;
}

ProbeChildProcess::ProbeChildProcess(ProbeRequest request, std::string log_path,
                                     int timeout_seconds, std::unique_ptr<Subprocess> process)
    : request_(std::move(request)),
      log_path_(std::move(log_path)),
      timeout_seconds_(timeout_seconds),
      process_(std::move(process)) {}

std::optional<std::string> ProbeChildProcess::UniqueId() const {
  const std::string& out = process_->out();
  std::string_view prefix = kUniqueIdLinePrefix;
  size_t at = 0;
  while ((at = out.find(prefix, at)) != std::string::npos) {
    if (at == 0 || out[at - 1] == '\n') {
      size_t nl = out.find('\n', at);
      if (nl == std::string::npos) return std::nullopt;  // not complete yet
      return out.substr(at + prefix.size(), nl - at - prefix.size());
    }
    at += prefix.size();
  }
  return std::nullopt;
}

Status ProbeChildProcess::SendUniqueId(const std::string& hex) {
  Status s = process_->WriteStdin(std::string(kUniqueIdLinePrefix) + hex + "\n");
  process_->CloseStdin();
  return s;
}

void ProbeChildProcess::StopForPeer(int peer_rank) {
  stopped_for_peer_ = peer_rank;
  process_->Kill();
}

ProbeResult ProbeChildProcess::Finish() {
  SubprocessResult proc = process_->Wait();
  std::optional<Classification> log;
  if (proc.kind != ExitKind::kSpawnFailed) log = ClassifyLogFile(log_path_, proc.out + proc.err);
  ProbeResult r = InterpretChild(request_, proc, log, timeout_seconds_, log_path_);
  if (stopped_for_peer_ && proc.kind == ExitKind::kSignaled) {
    // Killed by us, not crashed: its failure is the peer's.
    r.outcome = ProbeOutcome::kFail;
    r.detail = "stopped: rank " + std::to_string(*stopped_for_peer_) +
               " ended without passing and this rank did not finish within " +
               std::to_string(kPeerGrace.count()) + " s";
  }
  return r;
}

ProbeRunner::ProbeRunner(ProbeConfig config, ProbeRunnerOptions options)
    : config_(std::move(config)), options_(std::move(options)) {
  socket_ifname_ =
      config_.socket_ifname ? config_.socket_ifname : ReadDefaultRouteInterface(options_.root);
}

std::string ProbeRunner::LogPath(const ProbeRequest& req) const {
  return (std::filesystem::path(options_.work_dir) /
          ("nccl-" + std::string(ToString(req.mode)) + (req.tag.empty() ? "" : "-" + req.tag) +
           "-rank" + std::to_string(req.rank) + ".log"))
      .string();
}

std::vector<std::string> ProbeRunner::ChildArgv(const ProbeRequest& req,
                                                const std::string& log_path,
                                                int64_t spawn_ns) const {
  int timeout_ms = std::max(config_.timeout_seconds, 1) * 1000;
  // The child stops itself first (abort, report); the runner's SIGKILL is the backstop.
  int child_ms = timeout_ms - std::min(5000, timeout_ms / 10);
  std::vector<std::string> argv = {
      options_.child_exe,
      "probe",
      "--child",
      "--mode",
      std::string(ToString(req.mode)),
      "--rank",
      std::to_string(req.rank),
      "--nranks",
      std::to_string(req.nranks),
      "--device",
      std::to_string(req.device),
      "--size",
      std::to_string(config_.size_bytes),
      "--iters",
      std::to_string(std::max(config_.iterations, 1)),
      "--warmup",
      std::to_string(std::max(config_.warmup_iterations, 0)),
      "--deadline-ms",
      std::to_string(child_ms),
      "--log-file",
      log_path,
      "--lib-root",
      options_.root,
      "--spawn-ns",
      std::to_string(spawn_ns),
  };
  if (config_.nccl_diagnostics) argv.push_back("--nccl-diagnostics");
  if (!req.gpu_bus_id.empty()) {
    argv.push_back("--gpu-bus-id");
    argv.push_back(req.gpu_bus_id);
  }
  if (!req.peer.empty()) {
    argv.push_back("--peer");
    argv.push_back(req.peer);
  }
  for (const auto& p : config_.nccl_library_paths) {
    argv.push_back("--nccl-lib");
    argv.push_back(p);
  }
  for (const auto& p : config_.cuda_library_paths) {
    argv.push_back("--cuda-lib");
    argv.push_back(p);
  }
  if (!options_.default_library_search) argv.push_back("--only-configured-libs");
  if (req.check_only) argv.push_back("--check");
  return argv;
}

std::vector<std::string> ProbeRunner::ChildEnvironment(const ProbeRequest& req,
                                                       const std::string& log_path) const {
  ProbeEnvOptions env;
  env.mode = req.mode;
  env.log_path = log_path;
  env.socket_ifname = socket_ifname_;
  if (req.mode == ProbeMode::kIb) env.ib_hca = req.ib_hca ? req.ib_hca : config_.ib_hca;
  env.hostid = req.hostid;
  env.nranks = req.nranks;
  env.p2p_level = req.p2p_level;
  env.shm_disable = req.shm_disable;
  return BuildChildEnvironment(env, options_.parent_env, config_.env_allowlist);
}

StatusOr<std::string> MakePrivateWorkDir(const std::map<std::string, std::string>& env) {
  auto it = env.find("TMPDIR");
  std::string base = it != env.end() && !it->second.empty() ? it->second : "/tmp";
  std::string pattern = base + "/nccl-triage-probe-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return Unavailable("cannot create a folder in " + base + ": " + strerror(errno));
  }
  return pattern;
}

Status PrepareWorkDir(const std::string& dir) {
  if (dir.empty()) return InvalidArgument("no work directory");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return InvalidArgument("work directory " + dir + ": cannot create it: " +
                           (ec ? ec.message() : std::string(strerror(errno))));
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgument("work directory " + dir + " is not a directory");
  }
  if (st.st_uid != ::geteuid()) {
    return InvalidArgument("work directory " + dir + " belongs to uid " +
                           std::to_string(st.st_uid) + ", not to this user");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return InvalidArgument("work directory " + dir +
                           " is writable by other users (chmod go-w, or give another one)");
  }
  // Root passes access(W_OK) on a read-only file system and on /proc: create a file to know.
  const std::string test = dir + "/.nccl-triage-write-test";
  const int fd = ::open(test.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 && errno != EEXIST) {
    return InvalidArgument("work directory " + dir + " is not writable: " + strerror(errno));
  }
  if (fd >= 0) ::close(fd);
  ::unlink(test.c_str());
  return Status::Ok();
}

StatusOr<std::unique_ptr<ProbeChildProcess>> ProbeRunner::Start(const ProbeRequest& req) const {
  if (Status st = PrepareWorkDir(options_.work_dir); !st.ok()) {
    return Unavailable("probe runner: " + st.message());
  }
  std::error_code ec;
  std::string log_path = LogPath(req);
  std::filesystem::remove(log_path, ec);  // a stale log must not explain this run

  SubprocessOptions so;
  so.env = ChildEnvironment(req, log_path);
  so.timeout = std::chrono::seconds(std::max(config_.timeout_seconds, 1));
  so.max_output_bytes = options_.max_output_bytes;
  so.pipe_stdin = req.rank > 0;
  so.argv = ChildArgv(req, log_path, MonotonicNs());
  auto proc = Subprocess::Spawn(std::move(so));
  if (!proc.ok()) return proc.status();
  return std::make_unique<ProbeChildProcess>(req, log_path, config_.timeout_seconds,
                                             std::move(*proc));
}

ProbeResult ProbeRunner::CheckLibraries() const {
  ProbeRequest req;
  req.nranks = 1;
  req.tag = "check";
  req.check_only = true;
  auto kid = Start(req);
  if (kid.ok()) return (*kid)->Finish();
  SubprocessResult failed;
  failed.kind = ExitKind::kSpawnFailed;
  failed.error = kid.status().message();
  return InterpretChild(req, failed, std::nullopt, config_.timeout_seconds, "");
}

std::vector<ProbeResult> ProbeRunner::RunLocalRanks(ProbeMode mode, int nranks) const {
  ProbeRequest base;
  base.mode = mode;
  return RunLocalRanks(base, nranks);
}

std::vector<ProbeResult> ProbeRunner::RunLocalRanks(const ProbeRequest& base, int nranks) const {
  std::vector<ProbeRequest> requests;
  for (int rank = 0; rank < nranks; ++rank) {
    ProbeRequest req = base;
    req.peer = "local";
    // Different host hashes: NCCL may not use P2P or SHM and must go through the network (B1).
    req.hostid = "nccl-triage-local-rank" + std::to_string(rank);
    requests.push_back(std::move(req));
  }
  return RunRanks(std::move(requests));
}

std::vector<ProbeResult> ProbeRunner::RunRanks(std::vector<ProbeRequest> requests,
                                               std::stop_token stop) const {
  std::vector<ProbeResult> results;
  if (requests.empty()) return results;
  std::vector<std::unique_ptr<ProbeChildProcess>> kids;
  const int nranks = static_cast<int>(requests.size());
  for (int rank = 0; rank < nranks; ++rank) {
    ProbeRequest& req = requests[static_cast<size_t>(rank)];
    req.rank = rank;
    req.nranks = nranks;
    auto kid = Start(req);
    if (!kid.ok()) {
      SubprocessResult failed;
      failed.kind = ExitKind::kSpawnFailed;
      failed.error = kid.status().message();
      results.push_back(InterpretChild(req, failed, std::nullopt, config_.timeout_seconds, ""));
      continue;
    }
    kids.push_back(std::move(*kid));
  }
  if (!results.empty()) return results;  // some rank could not start: the pair cannot run

  std::vector<Subprocess*> procs;
  std::vector<pid_t> groups;
  for (auto& k : kids) {
    procs.push_back(&k->process());
    groups.push_back(k->process().pid());
  }
  // Cancel: every rank's whole group at once; the pumps below wake up on the exits.
  std::stop_callback cancel(stop, [&groups] {
    for (pid_t g : groups) {
      if (g > 0) ::kill(-g, SIGKILL);
    }
  });
  ProbeChildProcess& rank0 = *kids[0];
  Subprocess::Pump(
      procs,
      [&] {
        return stop.stop_requested() || rank0.UniqueId().has_value() || rank0.process().done();
      },
      rank0.process().deadline());
  auto id = rank0.UniqueId();
  for (size_t i = 1; i < kids.size(); ++i) {
    if (id) {
      (void)kids[i]->SendUniqueId(*id);  // a rank that already exited reports on its own
    } else {
      kids[i]->process().CloseStdin();  // rank 0 made no id: the others stop at once
    }
  }
  // A rank that ended without passing leaves the others waiting on a dead peer (NCCL's
  // bootstrap waits, its proxies spin): they get a grace period to notice and report, then stop.
  auto ended_badly = [](ProbeChildProcess& k) {
    if (!k.process().done()) return false;
    auto r = ParseChildOutput(k.process().out());
    return !r || r->outcome != ProbeOutcome::kPass;
  };
  auto all_done = [&] {
    return std::all_of(kids.begin(), kids.end(), [](auto& k) { return k->process().done(); });
  };
  auto latest = Subprocess::Clock::time_point::min();
  for (auto* p : procs) latest = std::max(latest, p->deadline());
  Subprocess::Pump(
      procs,
      [&] {
        return all_done() ||
               std::any_of(kids.begin(), kids.end(), [&](auto& k) { return ended_badly(*k); });
      },
      latest);
  if (!all_done()) {
    int first = 0;
    for (size_t i = 0; i < kids.size(); ++i) {
      if (ended_badly(*kids[i])) {
        first = static_cast<int>(i);
        break;
      }
    }
    Subprocess::Pump(procs, all_done, Subprocess::Clock::now() + kPeerGrace);
    for (auto& k : kids) {
      if (!k->process().done()) k->StopForPeer(first);
    }
  }
  Subprocess::WaitAll(procs);
  for (auto& k : kids) {
    ProbeResult r = k->Finish();
    if (stop.stop_requested()) {
      r.outcome = ProbeOutcome::kNotRun;
      r.detail = "cancelled";
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace nccl_triage
