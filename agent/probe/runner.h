// The probe runner: starts probe children (`<exe> probe --child ...`) under the subprocess
// contract and turns whatever they leave behind into a typed ProbeResult.
//
// Per child: its own process group, a wall-clock deadline (ProbeConfig::timeout_seconds) then
// SIGKILL of the group, stdout/stderr bounded (1 MiB), and an environment built from scratch
// (environment.h). The child's own deadline is set a little earlier so that, when NCCL hangs, it
// can abort the communicator and report; the runner's kill is the backstop.
//
// Typing (InterpretChild, pure): spawn failure or a missing library -> unavailable; killed at the
// deadline -> timeout; killed by a signal -> crashed; no parseable JSON result -> fail "garbage
// result"; an NCCL/CUDA error -> fail with the classifier's reading of the rank's NCCL log. The
// runner also applies the transport rule: a probe passes only if its log shows channels via the
// transport of its mode (an IB probe that ran over sockets fails with cause probe.transport), and
// a wrong sum is cause probe.data. Nothing here ever fails the agent.
//
// Thread-compatible: a ProbeRunner is immutable after construction and may start children from
// several threads; each ProbeChildProcess is driven by one thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "base/status.h"
#include "core/classification.h"
#include "core/config.h"
#include "core/probe_result.h"
#include "probe/subprocess.h"

namespace nccl_triage {

struct ProbeRunnerOptions {
  std::string child_exe;   // the nccl-triage binary (or nccl-triage-probe)
  std::string root = "/";  // host root: <root>/proc/net/route for the default interface
  std::string work_dir;    // NCCL logs go here (created; PrepareWorkDir); must be set
  std::map<std::string, std::string> parent_env;  // the only source of inherited variables
  bool default_library_search = true;             // false: only ProbeConfig's library paths
  size_t max_output_bytes = 1 << 20;
};

// A fresh private folder for the probes' logs: mkdtemp under $TMPDIR (from `env`, else /tmp), mode
// 0700, so no other user can have made it beforehand or write into it.
StatusOr<std::string> MakePrivateWorkDir(const std::map<std::string, std::string>& env);

// Makes `dir` ready for the probes' logs, or says why it cannot be (one line): it is created when
// missing; it must then be a directory (not a link), owned by this user, not writable by group or
// others (the probe child runs as root and must not write where another user can plant links),
// and a file must be creatable in it.
Status PrepareWorkDir(const std::string& dir);

// One rank of one probe.
struct ProbeRequest {
  ProbeMode mode = ProbeMode::kSocket;
  int rank = 0;
  int nranks = 2;
  int device = 0;
  std::string peer;                   // reported in the result
  std::optional<std::string> hostid;  // NCCL_HOSTID (distinct per rank for a local pair)
  // One rail: NCCL_IB_HCA for this request (instead of ProbeConfig::ib_hca), the GPU by PCI bus
  // id (instead of `device`), and a tag for the log's name ("rail3").
  std::optional<std::string> ib_hca;
  std::string gpu_bus_id;
  std::string tag;
  // Intra-node variants (ProbeEnvOptions): NCCL_P2P_LEVEL and NCCL_SHM_DISABLE=1.
  std::optional<std::string> p2p_level;
  bool shm_disable = false;
  // The library check (`probe --child --check`): load, version, cuInit, count; no collective.
  bool check_only = false;
};

// A started child. Rank 0 prints the unique id; other ranks wait for it on stdin.
class ProbeChildProcess {
 public:
  ProbeChildProcess(ProbeRequest request, std::string log_path, int timeout_seconds,
                    std::unique_ptr<Subprocess> process);

  Subprocess& process() { return *process_; }
  const ProbeRequest& request() const { return request_; }
  const std::string& log_path() const { return log_path_; }

  // The hex unique id once rank 0 has printed it.
  std::optional<std::string> UniqueId() const;
  // Hands the id to a rank > 0 and closes its stdin.
  Status SendUniqueId(const std::string& hex);

  // Kills the child because rank `peer_rank` ended without passing (its result then says so).
  void StopForPeer(int peer_rank);

  // Waits for the end (if needed), reads and classifies the log, and types the result.
  ProbeResult Finish();

 private:
  ProbeRequest request_;
  std::string log_path_;
  int timeout_seconds_;
  std::unique_ptr<Subprocess> process_;
  std::optional<int> stopped_for_peer_;
};

class ProbeRunner {
 public:
  ProbeRunner(ProbeConfig config, ProbeRunnerOptions options);

  const ProbeConfig& config() const { return config_; }
  const ProbeRunnerOptions& options() const { return options_; }

  // What a child is started with (exposed for tests and for `probe --dry-run`).
  std::vector<std::string> ChildArgv(const ProbeRequest& request, const std::string& log_path,
                                     int64_t spawn_ns) const;
  std::vector<std::string> ChildEnvironment(const ProbeRequest& request,
                                            const std::string& log_path) const;
  std::string LogPath(const ProbeRequest& request) const;

  // Starts one rank. Fails only when the work directory cannot be created; a child that cannot
  // be spawned is still returned as a result by Finish (unavailable).
  StatusOr<std::unique_ptr<ProbeChildProcess>> Start(const ProbeRequest& request) const;

  // Runs `nranks` ranks of `mode` on this host, each with its own NCCL_HOSTID so NCCL must use
  // the network, relaying rank 0's unique id to the others through this process (the path the
  // coordinator takes between nodes). A rank that ends without passing gives the others a few
  // seconds to report, then stops them. One result per rank, in rank order.
  std::vector<ProbeResult> RunLocalRanks(ProbeMode mode, int nranks = 2) const;
  // The same with every rank's request based on `base` (its rail, GPU and tag).
  std::vector<ProbeResult> RunLocalRanks(const ProbeRequest& base, int nranks) const;
  // One communicator of these ranks (request i is rank i of requests.size()), relayed and
  // stopped as above; the intra-node probe's ranks share the host hash and differ by GPU. When
  // `stop` fires (the agent shutting down) every rank's process group is killed at once and each
  // result is not run, "cancelled".
  std::vector<ProbeResult> RunRanks(std::vector<ProbeRequest> requests,
                                    std::stop_token stop = {}) const;
  // Whether probes can run here at all: one child loads NCCL and the CUDA driver, reads NCCL's
  // version and counts the GPUs, in a second or two. Pass: they can (the result carries the
  // version and the library's path); unavailable: why not (ProbeResult::unavailable_cause).
  ProbeResult CheckLibraries() const;

 private:
  ProbeConfig config_;
  ProbeRunnerOptions options_;
  std::optional<std::string> socket_ifname_;  // config, else the default route's interface
};

// The typed result of a finished child: pure (the log is already classified, or absent).
ProbeResult InterpretChild(const ProbeRequest& request, const SubprocessResult& process,
                           const std::optional<Classification>& log, int timeout_seconds,
                           const std::string& log_path);

// The last line of `out` that parses as a JSON ProbeResult, if any.
std::optional<ProbeResult> ParseChildOutput(const std::string& out);

// The rules that need the log: transport must match the mode, wrong data is probe.data, and a
// failure carries the classification (with the probe's own cause first when it has one).
void ApplyLogRules(ProbeResult& result, const std::optional<Classification>& log);

// Reads and classifies an NCCL log file (bounded; absent file -> nullopt), then the lines of
// NCCL's own diagnostics report (`host:pid NCCL DIAG ...`, NCCL_RUN_DIAGNOSTICS=1, 2.31+) in
// `child_output`, the child's stdout and stderr: NCCL 2.32's ranks print that report on their
// own output (the probe's NCCL_DEBUG_FILE logs of 2.32.6 held none of it).
std::optional<Classification> ClassifyLogFile(const std::string& path,
                                              std::string_view child_output = {});

}  // namespace nccl_triage
