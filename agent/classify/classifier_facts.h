// What a log's lines showed, besides the causes they named: how far the run got, its network,
// NET plugins, NCCL_* settings, versions, CUDA devices and ranks. The line handlers
// (classifier_read.h) fill these groups; the findings, the ranking and the explanation read them.
//
// Plain values, each bounded (at most a few lines per fact, kMaxRanks ranks). Thread-compatible.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "classify/classifier_causes.h"
#include "classify/knowledge.h"
#include "classify/rules.h"
#include "core/classification.h"

namespace nccl_triage::classify {

inline constexpr size_t kMaxRanks = 65536;   // rank keys tracked (first WARN per rank)
inline constexpr size_t kMaxTextRoots = 64;  // free-text root candidates (logs without WARN lines)
inline constexpr size_t kMaxTransports = 8;
inline constexpr size_t kMaxIbPorts = 64;  // NCCL's MAX_IB_DEVS is 32
inline constexpr size_t kMaxIbLines = 4;

// How many lines of each kind the log had.
struct LineCounts {
  size_t lines = 0;  // every line fed; the current line's number while reading
  size_t nccl = 0;   // NCCL's own lines (WARN, INFO, TRACE, DIAG)
  size_t warn = 0;
  size_t nonempty_text = 0;  // lines without an NCCL prefix and with a message
  size_t binary = 0;         // lines with a NUL byte
  size_t unmatched_warns = 0;
  size_t diag = 0;  // lines of NCCL's diagnostics report
};

// How far the run got: set-up, init, channels, the program's steps, teardown; and where the last
// proof of progress and the last WARN were.
struct RunProgress {
  bool init_complete = false;
  size_t ranks_initialised = 0;  // ranks that printed Init COMPLETE
  size_t ranks_torn_down = 0;    // of those, ranks that also printed Destroy COMPLETE
  size_t last_init_line = 0;
  bool channels = false;
  bool tests_passed = false;   // nccl-tests printed its summary (`# Out of bounds values : 0 OK`)
  bool teardown = false;       // some rank printed `Destroy COMPLETE`
  bool setup_seen = false;     // NCCL chose interfaces or a network, or counted its ranks
  bool progress_seen = false;  // the program's own steps after NCCL set up (IsProgressLine)
  size_t last_success_line = 0;
  size_t last_warn_line = 0;
};

// nccl-tests' device list (`#  Rank  0 Group  0 Pid   3591 on   testgpu1 device  0 [0x03] ...`):
// the process and line that first listed each rank (bounded), and the first rank listed again by
// another process before any result row came between the two listings.
struct TestsBanner {
  static constexpr size_t kMaxRanks = 4096;
  struct Listing {
    long pid = 0;
    LogLine line;
  };
  std::unordered_map<int, Listing> ranks;
  std::optional<std::pair<LogLine, LogLine>> relisted;  // the first listing and the other
  // Only the process of rank 0 prints the banner (`# nThread 1 nGpus 8 minBytes ...`) and the
  // summary (`# Avg bus bandwidth : ...`), once each. Two of either printed together (no result
  // row, and nothing of another run, between them) come from two processes that each are rank 0.
  std::optional<LogLine> last_header;
  std::optional<LogLine> last_summary;
  size_t last_row = 0;  // the line of the last result row
};

// The network NCCL chose and the channels it built on it.
struct NetworkFacts {
  std::string network;  // `Using network X`
  std::vector<std::string> transports;
  std::vector<std::string> local_transports;  // "P2P/CUMEM/read", "SHM/direct/direct"
  bool ib_devices_used = false;  // `NET/IB : Using [0]mlx5_1:1/RoCE ...`: some HCA opened
  std::vector<std::string> ib_devices;  // index -> "mlx5_0:1" from the first `Using [` line
  std::vector<int> ib_used;             // indices named by `via NET/IB/<i>` channel lines
  std::vector<LogLine> ib_lines;
  bool gdrdma = false;       // a NET/IB channel line ended in /GDRDMA
  bool gdr_enabled = false;  // `GPU Direct RDMA Enabled for HCA`
  // Channel lines that tell ranks apart (first of each kind): GDRDMA or not, IB or sockets.
  std::optional<LogLine> gdr_line, plain_ib_line, socket_channel_line, ib_channel_line;
  // `mtu N` of NET/IB connection lines per distinct N (the first line of each, at most two).
  std::vector<std::pair<int, LogLine>> mtus_seen;
  // The first `-> 2` inside NET/IB of a rank that printed no WARN before it.
  std::optional<LogLine> ib_trace_line;
  // `Call to connect returned Connection refused, retrying` (NCCL before 2.12 prints no count):
  // how many, and the first.
  size_t refused_retries = 0;
  std::optional<LogLine> refused_retry_line;
  // An RDMA network plugin loaded (HPC-X's `P2P plugin IBext`, `Loaded net plugin NCCL RDMA
  // Plugin`, a SHARP coll plugin): the image was built to use InfiniBand, so IB was wanted.
  std::optional<LogLine> rdma_plugin_line;
};

// NET plugin selection (2.27+) and loading.
struct PluginFacts {
  // The plugins NCCL tried and failed (`Failed to initialize NET plugin IB`), and the WARN that
  // none could be used. NCCL tries only the plugins whose name NCCL_NET matches (plugin/net.cc),
  // so a WARN with no plugin tried means NCCL_NET named none.
  std::vector<std::string> net_plugins_failed;
  std::optional<LogLine> no_net_plugin_line;
  size_t info_lines_before_no_net = 0;
  // `Error: network gIB not found.` (a network no built-in plugin provides), and the first line
  // that says a net plugin did not load; the first plugin line of each kind.
  std::optional<LogLine> net_not_found_line;
  std::optional<LogLine> plugin_not_loaded_line;
  std::optional<LogLine> plugin_external_line, plugin_internal_line;
};

// The NCCL_* settings the log showed (`NCCL_X set by environment to V`), in order.
struct EnvFacts {
  std::string net;                   // NCCL_NET's value when the log shows it
  std::vector<std::string> boosted;  // variables named by rules' boost_env, when set
  std::vector<std::string> names;    // variables seen set (bounded)
  std::vector<std::string> values;   // their values, in the same order
  std::vector<LogLine> lines;        // their lines, for causes that need them (after_env)
  // A value NCCL would not accept (CheckEnvValue), quoted as `"<value>"` to find NCCL's WARN that
  // rejects it; that WARN makes the setting the root, not the file that printed it.
  std::vector<std::string> rejected_quoted;
  std::vector<LogLine> rejected_lines;  // the WARN quoting a rejected value (at most one)

  bool Has(std::string_view name) const;
  bool Boosted(std::string_view name) const;
};

// Which NCCL, built for which CUDA, on which driver and GPU generation.
struct VersionFacts {
  std::string version;  // the first `NCCL version X`
  NcclVersion numbers;
  // `NCCL version X` per distinct X (the first line of each, at most two).
  std::vector<std::pair<std::string, LogLine>> seen;
  int nccl_cuda_major = -1;    // `NCCL version 2.21.5+cuda12.4`
  int driver_cuda_major = -1;  // `cudaDriverVersion 12020`
  LogLine nccl_cuda_line, driver_cuda_line;
  const GpuArchitecture* gpu_arch = nullptr;  // the first GPU generation a line names
  LogLine gpu_line;
};

// CUDA found no device (`no CUDA-capable device is detected`, CUDA 100), and the first NCCL
// init line that names a process's CUDA device (`... cudaDev 0 nvmlDev 0 busId 60 ...`).
struct DeviceFacts {
  std::optional<LogLine> no_device_line;
  std::optional<LogLine> device_opened_line;
  // The GPU each rank of a communicator opened, by communicator, host and bus id (NCCL 2.1x+
  // `ncclCommInitRank comm 0x.. rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 100000 commId 0x..`;
  // bounded), and the first GPU found opened by two ranks of one communicator.
  static constexpr size_t kMaxGpus = 4096;
  struct Opened {
    int rank = 0;
    LogLine line;
  };
  std::unordered_map<std::string, Opened> gpus;
  std::optional<std::pair<LogLine, LogLine>> shared_gpu;
};

// What one rank (a `host:pid` key) showed.
struct RankState {
  bool has_warn = false;
  bool init_complete = false;  // `... - Init COMPLETE`
  bool torn_down = false;      // `... - Destroy COMPLETE`: the rank finished its communicator
  // Its channels: through an IB port with GPUDirect RDMA, through one without, through sockets.
  bool ib_gdr = false;
  bool ib_plain = false;
  bool net_socket = false;
  bool net_ib = false;
  bool has_code = false;  // a failing `-> N` seen on this rank (before or after its WARN)
  // Its NET plugin: an external one loaded (`Plugin Path :`, `Loaded net plugin`), or none
  // (`Using internal network plugin`, `Could not find: libnccl-net.so`).
  bool plugin_external = false;
  bool plugin_internal = false;
  int code_after_warn = -1;
  // Its first WARN: where NCCL printed it (`misc/shmutils.cc`, without the line), whether only a
  // generic rule or the catalogue's path named it (a wrapper's error: `Cuda failure 'invalid
  // argument'`), and where it was; and how many WARNs the rank printed.
  std::string first_warn_file;
  bool first_warn_generic = false;
  size_t first_warn_line = 0;
  std::string first_warn_ts;
  int warns = 0;
};

// The first back-trace line of a rank without a WARN whose file a file rule names.
struct TraceRoot {
  size_t rule = 0;
  int code = -1;
  LogLine line;
  std::string rank;
};

// A rank's first failing line: its first WARN, or (logs without WARN lines) quoted text.
struct RootCandidate {
  std::string rank;
  LogLine line;
  std::string ts;
  int tier = kTierContext;
  bool matched = false;
};

// Heterogeneous lookup: rank keys arrive as string_views into the line.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// The ranks, where each failed first, and the result codes (`-> N`) the log showed.
struct RankFacts {
  std::unordered_map<std::string, RankState, StringHash, std::equal_to<>> ranks;
  std::vector<RootCandidate> roots;       // the first WARN of each rank
  std::vector<RootCandidate> text_roots;  // quoted errors, for logs without WARN lines
  std::optional<TraceRoot> trace_root;
  int text_code = -1;    // the first code a text line's rule named
  int orphan_code = -1;  // first `-> N` on a rank without a WARN
  LogLine orphan_line;

  // The rank's state, created on first use; nullptr beyond kMaxRanks ranks.
  RankState* Rank(std::string_view key);
  const RankState* Find(std::string_view key) const;
};

// Everything the lines showed, by group.
struct LogFacts {
  LineCounts counts;
  RunProgress run;
  NetworkFacts net;
  PluginFacts plugins;
  EnvFacts env;
  VersionFacts versions;
  DeviceFacts devices;
  RankFacts ranks;
  TestsBanner tests;
};

}  // namespace nccl_triage::classify
