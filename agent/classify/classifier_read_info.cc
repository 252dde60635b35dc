// The INFO (and TRACE) lines of LineReader: how far NCCL set up, which network, channels and
// plugins it used, which settings and versions it printed.
#include <re2/re2.h>

#include <algorithm>
#include <string>
#include <utility>

#include "classify/classifier_match.h"
#include "classify/classifier_read.h"
#include "classify/knowledge.h"
#include "classify/line_text.h"

namespace nccl_triage::classify {

void LineReader::OnInfo(const ParsedLine& p, std::string_view line) {
  ++facts_.counts.nccl;
  std::string_view msg = p.message;
  int code = BacktraceCode(msg);
  if (code >= 0) {
    OnCode(p.rank, code, msg, line);
    return;
  }
  OnInitOrTeardown(p.rank, msg);
  // NCCL before 2.12's uncounted retry (later releases count their retries; a rule reads them).
  if (StartsWith(msg, "Call to connect returned Connection refused, retrying")) {
    NetworkFacts& net = facts_.net;
    if (net.refused_retries++ == 0) net.refused_retry_line = Here(line);
  }
  OnSetupInfo(p, line);
  if (StartsWith(msg, "NCCL_")) OnEnv(msg);
  OnPluginLine(p.rank, msg, line);
  // A rank's init line: `comm 0x.. rank 0 nranks 2 cudaDev 0 ...`, `ncclCommInitRank comm ...`,
  // 2.32's `[Rank 0] ...`.
  const bool rank_line =
      StartsWith(msg, "comm ") || StartsWith(msg, "ncclCommInit") || StartsWith(msg, "[Rank ");
  if (rank_line && !facts_.devices.device_opened_line &&
      msg.find(" cudaDev ") != std::string_view::npos) {
    facts_.devices.device_opened_line = Here(line);
  }
  // Until channels or Init COMPLETE show that NCCL's own check passed.
  if (rank_line && !facts_.run.channels && !facts_.run.init_complete &&
      !facts_.devices.shared_gpu) {
    OnRankGpu(p.rank, msg, line);
  }
  for (const auto& m : MatchRules(rules_, p, facts_.versions.numbers, facts_.env)) {
    const Rule& r = rules_.rules()[m.rule];
    causes_.AddCause(r, TierFor(r.strength, false, false), r.confidence, facts_.counts.lines, line,
                     p.timestamp);
  }
}

// Two ranks of one communicator on the GPU of one host: NCCL refuses it (`Duplicate GPU
// detected`), in lines that may not be in the log; the ranks' own init lines show it.
void LineReader::OnRankGpu(std::string_view rank_key, std::string_view msg,
                           std::string_view line) {
  DeviceFacts& devices = facts_.devices;
  if (msg.size() > 512 || msg.find(" commId ") == std::string_view::npos) return;
  static const RE2 kOpened(
      R"(\brank (\d{1,7}) nranks \d+ cudaDev \d+ (?:nvmlDev \d+ )?busId ([0-9a-fA-F]{1,16}) )"
      R"(commId (0x[0-9a-fA-F]{1,16})\b)");
  int rank = 0;
  std::string bus, comm;
  if (!RE2::PartialMatch(msg, kOpened, &rank, &bus, &comm)) return;
  const std::string host(rank_key.substr(0, rank_key.find(':')));
  if (host.empty()) return;
  std::string key = comm + "/" + host + "/" + bus;
  auto it = devices.gpus.find(key);
  if (it == devices.gpus.end()) {
    if (devices.gpus.size() < DeviceFacts::kMaxGpus) {
      devices.gpus.emplace(std::move(key), DeviceFacts::Opened{rank, Here(line)});
    }
    return;
  }
  if (it->second.rank != rank) devices.shared_gpu = std::make_pair(it->second.line, Here(line));
}

void LineReader::OnInitOrTeardown(std::string_view rank, std::string_view msg) {
  RunProgress& run = facts_.run;
  if (EndsWith(msg, "Init COMPLETE")) {
    run.init_complete = true;
    run.last_init_line = facts_.counts.lines;
    RankState* rs = facts_.ranks.Rank(rank);
    if (rs != nullptr && !rs->init_complete) {
      rs->init_complete = true;
      ++run.ranks_initialised;
    }
  }
  // A clean teardown: the rank's communicator was destroyed after its collectives finished.
  // `Abort COMPLETE` is the opposite and does not count.
  if (EndsWith(msg, "Destroy COMPLETE")) {
    RankState* rs = facts_.ranks.Rank(rank);
    if (rs != nullptr && !rs->torn_down) {
      rs->torn_down = true;
      if (rs->init_complete) ++run.ranks_torn_down;
    }
    run.teardown = true;
    run.last_success_line = facts_.counts.lines;
  }
}

// Set-up lines: the IB devices and channels, the driver, the NET plugins tried, the network,
// NCCL's version.
void LineReader::OnSetupInfo(const ParsedLine& p, std::string_view line) {
  const std::string_view msg = p.message;
  NetworkFacts& net = facts_.net;
  if (StartsWith(msg, "NET/IB") && msg.find("GPU Direct RDMA Enabled") != std::string_view::npos) {
    net.gdr_enabled = true;
  }
  if (StartsWith(msg, "NET/IB")) OnMtu(msg, line);
  // `Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0` (2.5+); `Ring 00 : ...` (2.4).
  if (StartsWith(msg, "Channel ") || StartsWith(msg, "Ring ")) OnTransport(p.rank, msg);
  if (StartsWith(msg, "cudaDriverVersion ")) OnDriverVersion(msg.substr(18), line);
  std::vector<std::string>& failed = facts_.plugins.net_plugins_failed;
  if (StartsWith(msg, "Failed to initialize NET plugin ") && failed.size() < 8) {
    failed.emplace_back(Cap(msg.substr(32), 32));
  }
  if (StartsWith(msg, "Using network ") && net.network.empty()) {
    net.network = Sanitize(Cap(msg.substr(14), kMaxFieldBytes));
  }
  if (StartsWith(msg, "NCCL version ")) OnVersion(ParseVersion(msg), line);
  if (StartsWith(msg, "Using network") || StartsWith(msg, "Using internal Network") ||
      StartsWith(msg, "NET/Socket : Using") || StartsWith(msg, "Bootstrap : Using") ||
      msg.find(" nranks ") != std::string_view::npos) {
    facts_.run.setup_seen = true;
  }
  if (StartsWith(msg, "NET/IB") && msg.find(": Using [") != std::string_view::npos) {
    net.ib_devices_used = true;
    OnIbUsing(msg);
  }
}

// The first version names the log's; a second one (another node's rank 0) is a skew.
void LineReader::OnVersion(std::string v, std::string_view line) {
  if (v.empty()) return;
  VersionFacts& versions = facts_.versions;
  if (versions.nccl_cuda_major < 0) {
    versions.nccl_cuda_major = NcclCudaMajor(line);
    if (versions.nccl_cuda_major >= 0) versions.nccl_cuda_line = Here(line);
  }
  if (versions.version.empty()) {
    versions.version = v;
    versions.numbers = ParseNcclVersion(versions.version);
  }
  if (versions.seen.size() < 2 &&
      std::none_of(versions.seen.begin(), versions.seen.end(),
                   [&](const auto& x) { return x.first == v; })) {
    versions.seen.emplace_back(std::move(v), Here(line));
  }
}

void LineReader::OnDriverVersion(std::string_view digits, std::string_view line) {
  long v = 0;
  size_t n = 0;
  while (n < digits.size() && n < 6 && digits[n] >= '0' && digits[n] <= '9') {
    v = v * 10 + (digits[n] - '0');
    ++n;
  }
  VersionFacts& versions = facts_.versions;
  if (n == 0 || versions.driver_cuda_major >= 0) return;
  versions.driver_cuda_major = DriverCudaMajor(v);
  versions.driver_cuda_line = Here(line);
}

// `NET/IB: ... qpn 1234 mtu 5 ...`: the active MTU of a connection's port (an enum: 5 = 4096).
void LineReader::OnMtu(std::string_view msg, std::string_view line) {
  std::vector<std::pair<int, LogLine>>& mtus = facts_.net.mtus_seen;
  const size_t at = msg.find(" mtu ");
  if (at == std::string_view::npos || mtus.size() >= 2) return;
  int mtu = 0;
  size_t i = at + 5;
  while (i < msg.size() && i < at + 10 && msg[i] >= '0' && msg[i] <= '9') {
    mtu = mtu * 10 + (msg[i] - '0');
    ++i;
  }
  if (i == at + 5) return;
  if (std::none_of(mtus.begin(), mtus.end(), [&](const auto& x) { return x.first == mtu; })) {
    mtus.emplace_back(mtu, Here(line));
  }
}

void LineReader::OnTransport(std::string_view rank, std::string_view msg) {
  size_t via = msg.find(" via ");
  if (via == std::string_view::npos) return;
  NetworkFacts& net = facts_.net;
  facts_.run.channels = true;
  std::string_view t = msg.substr(via + 5);
  t = t.substr(0, t.find(' '));
  size_t slash = t.find('/');
  std::string name;
  if (slash != std::string_view::npos && t.substr(0, slash) == "NET") {
    std::string_view rest = t.substr(slash + 1);
    name = "NET/" + std::string(rest.substr(0, rest.find('/')));
  } else {
    name = std::string(t.substr(0, slash));
  }
  name = Sanitize(Cap(name, 32));
  if (name == "NET/IB") OnIbChannel(t, msg);
  if (name == "NET/IB" || name == "NET/Socket") OnNetChannel(rank, name, t);
  if (name == "P2P" || name == "SHM") {
    // The rest of the line names the kind in full ("P2P/direct pointer/read" has a space).
    std::string_view full = msg.substr(via + 5);
    while (!full.empty() && (full.back() == ' ' || full.back() == '\r')) full.remove_suffix(1);
    std::string kind = Sanitize(Cap(full, 48));
    if (net.local_transports.size() < kMaxTransports &&
        std::find(net.local_transports.begin(), net.local_transports.end(), kind) ==
            net.local_transports.end()) {
      net.local_transports.push_back(std::move(kind));
    }
  }
  if (net.transports.size() < kMaxTransports &&
      std::find(net.transports.begin(), net.transports.end(), name) == net.transports.end()) {
    net.transports.push_back(std::move(name));
  }
}

// Which network each rank's channels took, and whether its IB channels used GPUDirect RDMA.
void LineReader::OnNetChannel(std::string_view rank, std::string_view name,
                              std::string_view via) {
  RankState* rs = facts_.ranks.Rank(rank);
  if (rs == nullptr) return;
  NetworkFacts& net = facts_.net;
  const LogLine here = Here(current_line_);
  if (name == "NET/Socket") {
    rs->net_socket = true;
    if (!net.socket_channel_line) net.socket_channel_line = here;
    return;
  }
  rs->net_ib = true;
  if (!net.ib_channel_line) net.ib_channel_line = here;
  if (via.find("/GDRDMA") != std::string_view::npos) {
    rs->ib_gdr = true;
    if (!net.gdr_line) net.gdr_line = here;
  } else {
    rs->ib_plain = true;
    if (!net.plain_ib_line) net.plain_ib_line = here;
  }
}

void LineReader::KeepIbLine(std::string_view line) {
  if (facts_.net.ib_lines.size() < kMaxIbLines) facts_.net.ib_lines.push_back(Here(line));
}

// `NET/IB/0/GDRDMA`, `NET/IB/3(1)/GDRDMA` (PXN through a peer's NIC), `NET/IB/0`.
void LineReader::OnIbChannel(std::string_view via, std::string_view msg) {
  NetworkFacts& net = facts_.net;
  // A bare "NET/IB" (a cut or mangled line) has no port after it.
  std::string_view rest = via.size() > 7 ? via.substr(7) : std::string_view{};  // after "NET/IB/"
  int index = 0;
  size_t digits = 0;
  while (digits < rest.size() && digits < 4 && rest[digits] >= '0' && rest[digits] <= '9') {
    index = index * 10 + (rest[digits] - '0');
    ++digits;
  }
  if (digits > 0 && net.ib_used.size() < kMaxIbPorts &&
      std::find(net.ib_used.begin(), net.ib_used.end(), index) == net.ib_used.end()) {
    net.ib_used.push_back(index);
    KeepIbLine(msg);
  }
  if (rest.find("/GDRDMA") != std::string_view::npos) net.gdrdma = true;
}

// `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:10.0.0.1<0>`
void LineReader::OnIbUsing(std::string_view msg) {
  std::vector<std::string>& devices = facts_.net.ib_devices;
  if (!devices.empty()) return;
  KeepIbLine(msg);
  size_t pos = msg.find(": Using ");
  std::string_view list = msg.substr(pos + 8);
  list = list.substr(0, list.find(';'));
  while (!list.empty() && devices.size() < kMaxIbPorts) {
    size_t open = list.find('[');
    if (open == std::string_view::npos) break;
    size_t close = list.find(']', open);
    if (close == std::string_view::npos) break;
    std::string_view idx = list.substr(open + 1, close - open - 1);
    std::string_view dev = list.substr(close + 1);
    dev = dev.substr(0, dev.find(' '));
    list = list.substr(close + 1);
    int index = 0;
    if (idx.empty() || idx.size() > 4 ||
        !std::all_of(idx.begin(), idx.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;  // `[RO]` (relaxed ordering) and other flags
    }
    for (char c : idx) index = index * 10 + (c - '0');
    if (index >= static_cast<int>(kMaxIbPorts)) continue;
    if (devices.size() <= static_cast<size_t>(index)) devices.resize(index + 1);
    devices[index] = Sanitize(Cap(dev.substr(0, dev.find('/')), 64));
  }
}

void LineReader::OnEnv(std::string_view msg) {
  size_t sp = msg.find(' ');
  if (sp == std::string_view::npos) return;
  std::string_view name = msg.substr(0, sp);
  std::string_view rest = msg.substr(sp);
  std::string_view value;
  if (StartsWith(rest, " set by environment to ")) {
    value = rest.substr(23);
  } else if (StartsWith(rest, " set to ")) {
    value = rest.substr(8);
  } else {
    return;
  }
  while (!value.empty() && (value.back() == '.' || value.back() == ' ')) value.remove_suffix(1);
  EnvFacts& env = facts_.env;
  if (name == "NCCL_NET") env.net = std::string(Cap(value, kMaxFieldBytes));
  if (env.names.size() < 64 && !env.Has(name)) {
    env.names.emplace_back(name);
    env.values.emplace_back(Cap(value, kMaxFieldBytes));
    env.lines.push_back(Here(current_line_));
    if (!value.empty() && CheckEnvValue(name, env.values.back())) {
      env.rejected_quoted.push_back("\"" + env.values.back() + "\"");
    }
  }
  for (const auto& r : rules_.rules()) {
    if (!r.boost_env.empty() && r.boost_env == name && !env.Boosted(name)) {
      env.boosted.emplace_back(name);
    }
  }
}

// NET plugin lines (INFO, or text when pasted without the prefix): whether a rank loaded an
// external plugin or runs without one, and whether a plugin failed to load.
void LineReader::OnPluginLine(std::string_view rank, std::string_view msg, std::string_view line) {
  // Every INFO line comes here: the regex's two anchors are tested first, without RE2.
  const bool plugin_word = StartsWith(msg, "P2P plugin") || StartsWith(msg, "NET/Plugin");
  if (!facts_.net.rdma_plugin_line && plugin_word && IsRdmaPluginLine(msg)) {
    facts_.net.rdma_plugin_line = Here(line);
  }
  const bool plugin = StartsWith(msg, "NET/Plugin") || StartsWith(msg, "Plugin Path :");
  if (!plugin) return;
  const bool external =
      StartsWith(msg, "Plugin Path :") || msg.find("Loaded net plugin") != std::string_view::npos;
  const bool internal = msg.find("Using internal network plugin") != std::string_view::npos ||
                        msg.find("Could not find: libnccl-net") != std::string_view::npos ||
                        msg.find("No plugin found") != std::string_view::npos;
  const bool failed = internal || msg.find("returned ") != std::string_view::npos ||
                      // `Failed to find ncclNetPlugin_v6 symbol.` is one step of NCCL's search
                      // for the plugin's newest interface (v5 may load next); only the form
                      // without a version says that none was found.
                      msg.find("Failed to find ncclNetPlugin symbol") != std::string_view::npos ||
                      msg.find("cannot open shared object") != std::string_view::npos ||
                      msg.find("undefined symbol") != std::string_view::npos;
  PluginFacts& plugins = facts_.plugins;
  const LogLine here = Here(line);
  // `Plugin load returned 0` is a success; any other code, or the texts above, is a failure.
  const bool load_ok =
      msg.find("returned 0 ") != std::string_view::npos || EndsWith(msg, "returned 0");
  if (failed && !load_ok && !plugins.plugin_not_loaded_line) plugins.plugin_not_loaded_line = here;
  if (!external && !internal) return;
  RankState* rs = facts_.ranks.Rank(rank);
  if (rs == nullptr) return;
  if (external) {
    rs->plugin_external = true;
    if (!plugins.plugin_external_line) plugins.plugin_external_line = here;
  } else {
    rs->plugin_internal = true;
    if (!plugins.plugin_internal_line) plugins.plugin_internal_line = here;
  }
}

}  // namespace nccl_triage::classify
