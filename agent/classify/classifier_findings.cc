#include "classify/classifier_findings.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "classify/knowledge.h"

namespace nccl_triage::classify {
namespace {

// Two versions in one job (another node's rank 0), two MTUs on its connections.
void AddSkews(const VersionFacts& versions, const NetworkFacts& net, CauseTable& table) {
  if (versions.seen.size() >= 2) {
    CauseAcc& acc = table.causes[std::string(kVersionSkew.cause)];
    if (acc.tier > kTierSecondary) {
      acc.tier = kTierSecondary;
      acc.rule = nullptr;
      acc.code_verdict = kVersionSkew.verdict;
      acc.confidence = 0.8;
      acc.order_line = versions.seen[1].second.number;
    }
    // Two versions seen outrank any one-line reading of the same symptom (a known bug).
    acc.confidence = std::max(acc.confidence, 0.8);
    for (const auto& [v, line] : versions.seen) AddEvidence(acc, line.number, line.text);
  }
  if (net.mtus_seen.size() >= 2) {
    CauseAcc& acc = table.causes[std::string(kMtuSkew.cause)];
    acc.tier = kTierSuspect;
    acc.code_verdict = kMtuSkew.verdict;
    acc.confidence = 0.5;
    acc.order_line = net.mtus_seen[1].second.number;
    for (const auto& [m, line] : net.mtus_seen) AddEvidence(acc, line.number, line.text);
  }
}

// Settings: each value against what NCCL accepts, then the pairs that contradict. A value NCCL
// would not take is a suspect; quoted back in a WARN, it is the root.
void AddSettingFindings(const EnvFacts& env, size_t line_no, CauseTable& table) {
  for (size_t i = 0; i < env.names.size(); ++i) {
    if (!CheckEnvValue(env.names[i], env.values[i])) continue;
    const bool quoted =
        !env.rejected_lines.empty() &&
        env.rejected_lines.front().text.find("\"" + env.values[i] + "\"") != std::string::npos;
    if (quoted) {
      table.AddDerived(kBadSetting, kTierRoot, 0.9, line_no,
                       {env.lines[i], env.rejected_lines.front()});
    } else {
      table.AddDerived(kBadSetting, kTierSecondary, 0.8, line_no, {env.lines[i]});
    }
  }
  struct View : EnvView {
    const EnvFacts& env;
    explicit View(const EnvFacts& e) : env(e) {}
    std::optional<std::string_view> Get(std::string_view name) const override {
      for (size_t i = 0; i < env.names.size(); ++i) {
        if (env.names[i] == name) return env.values[i];
      }
      return std::nullopt;
    }
  } view(env);
  if (CheckEnvCombination(view)) {
    std::vector<LogLine> lines;
    for (size_t i = 0; i < env.names.size(); ++i) {
      if (env.names[i] == "NCCL_NET" || env.names[i] == "NCCL_IB_DISABLE") {
        lines.push_back(env.lines[i]);
      }
    }
    table.AddDerived(kBadSetting, kTierRoot, 0.9, line_no, std::move(lines));
  }
}

// No NET plugin could be used. With INFO on, NCCL says which plugins it tried; none tried means
// NCCL_NET names a network no plugin provides (NCCL does not print NCCL_NET). Only IB tried
// while NCCL_IB_DISABLE=1: NCCL_NET forced the network that the other setting turned off.
void AddNoNetPluginFinding(const PluginFacts& plugins, const EnvFacts& env, size_t line_no,
                           CauseTable& table) {
  if (!plugins.no_net_plugin_line || plugins.info_lines_before_no_net < 3) return;
  std::optional<LogLine> disabled;
  for (size_t i = 0; i < env.names.size(); ++i) {
    if (env.names[i] == "NCCL_IB_DISABLE" && !env.values[i].empty() && env.values[i][0] != '0') {
      disabled = env.lines[i];
    }
  }
  const std::vector<std::string>& failed = plugins.net_plugins_failed;
  const bool only_ib = !failed.empty() && std::all_of(failed.begin(), failed.end(),
                                                      [](const std::string& n) {
                                                        return n.rfind("IB", 0) == 0;
                                                      });
  if (failed.empty()) {
    table.AddDerived(kBadSetting, kTierRoot, 0.9, line_no, {*plugins.no_net_plugin_line});
  } else if (only_ib && disabled) {
    table.AddDerived(kBadSetting, kTierRoot, 0.9, line_no,
                     {*disabled, *plugins.no_net_plugin_line});
  }
}

// Ranks on different networks (the ranks on sockets found no usable HCA, or were told not to
// use one, while their peers run IB; the job cannot connect them), or with and without GPUDirect
// RDMA (that rank's node lacks the peer-memory module, or its PCIe path forbids GDR).
void AddNetworkSkews(const RankFacts& ranks, const NetworkFacts& net, size_t line_no,
                     CauseTable& table) {
  bool some_ib = false, some_socket_only = false, some_gdr = false, some_plain_only = false;
  for (const auto& [key, rs] : ranks.ranks) {
    some_ib = some_ib || rs.net_ib;
    some_socket_only = some_socket_only || (rs.net_socket && !rs.net_ib);
    some_gdr = some_gdr || rs.ib_gdr;
    some_plain_only = some_plain_only || (rs.ib_plain && !rs.ib_gdr);
  }
  if (some_ib && some_socket_only && net.ib_channel_line && net.socket_channel_line) {
    table.AddDerived(kNetworkSkew, kTierSecondary, 0.75, line_no,
                     {*net.socket_channel_line, *net.ib_channel_line});
  }
  if (some_gdr && some_plain_only && net.gdr_line && net.plain_ib_line) {
    table.AddDerived(kGdrSkew, kTierSuspect, 0.55, line_no, {*net.plain_ib_line, *net.gdr_line},
                     /*keep_until_completed=*/true);
  }
}

// Ranks that loaded an external net plugin beside ranks that run without one: the nodes run
// different software images (plugin, LD_LIBRARY_PATH), so their network stacks differ.
void AddPluginSkew(const RankFacts& ranks, const PluginFacts& plugins, size_t line_no,
                   CauseTable& table) {
  bool some_external_only = false, some_internal_only = false;
  for (const auto& [key, rs] : ranks.ranks) {
    some_external_only = some_external_only || (rs.plugin_external && !rs.plugin_internal);
    some_internal_only = some_internal_only || (rs.plugin_internal && !rs.plugin_external);
  }
  if (some_external_only && some_internal_only && plugins.plugin_external_line &&
      plugins.plugin_internal_line) {
    table.AddDerived(kVersionSkew, kTierSuspect, 0.6, line_no,
                     {*plugins.plugin_internal_line, *plugins.plugin_external_line},
                     /*keep_until_completed=*/true);
  }
}

// An NCCL built for a newer CUDA major than the driver offers; an NCCL older than the GPU
// generation the log names.
void AddSoftwareFindings(const VersionFacts& versions, size_t line_no, CauseTable& table) {
  if (versions.nccl_cuda_major > 0 && versions.driver_cuda_major > 0 &&
      versions.nccl_cuda_major > versions.driver_cuda_major) {
    table.AddDerived(kCudaMajorSkew, kTierSecondary, 0.8, line_no,
                     {versions.nccl_cuda_line, versions.driver_cuda_line});
  }
  if (versions.gpu_arch != nullptr && !versions.numbers.empty() &&
      versions.numbers < ParseNcclVersion(versions.gpu_arch->min_nccl)) {
    std::vector<LogLine> lines = {versions.gpu_line};
    if (!versions.seen.empty()) lines.push_back(versions.seen.front().second);
    table.AddDerived(kNcclTooOld, kTierRoot, 0.8, line_no, std::move(lines));
  }
}

// No WARN, a system error raised inside NET/IB, after the job steered the RoCE GID choice: the
// GID those settings select (or fail to find) is the likely fault.
void AddGidFinding(const NetworkFacts& net, const EnvFacts& env, size_t line_no,
                   CauseTable& table) {
  if (!net.ib_trace_line) return;
  std::vector<LogLine> lines;
  for (size_t i = 0; i < env.names.size(); ++i) {
    const std::string& name = env.names[i];
    if (name == "NCCL_IB_GID_INDEX" || name == "NCCL_IB_ADDR_RANGE" ||
        name == "NCCL_IB_ADDR_FAMILY" || name == "NCCL_IB_ROCE_VERSION_NUM") {
      if (lines.size() + 1 < kMaxEvidence) lines.push_back(env.lines[i]);
    }
  }
  if (lines.empty()) return;
  lines.push_back(*net.ib_trace_line);
  table.AddDerived(kGidSelection, kTierSuspect, 0.5, line_no, std::move(lines),
                   /*keep_until_completed=*/true);
}

}  // namespace

void AddMultiLineFindings(const LogFacts& facts, bool completed, CauseTable& table) {
  AddSkews(facts.versions, facts.net, table);
  const size_t line_no = facts.counts.lines;
  // Results of tests that each ran alone are no proof that the job ran across the nodes.
  if (facts.tests.relisted) {
    const auto& [first, again] = *facts.tests.relisted;
    table.AddDerived(kSeparateTestJobs, kTierRoot, 0.75, line_no, {first, again});
  }
  if (completed) return;
  AddSettingFindings(facts.env, line_no, table);
  AddNoNetPluginFinding(facts.plugins, facts.env, line_no, table);
  AddNetworkSkews(facts.ranks, facts.net, line_no, table);
  AddSoftwareFindings(facts.versions, line_no, table);
  // A network only a plugin provides was asked for and a plugin did not load: the plugin (its
  // library, its dependencies, its ABI) is the fault, not the network's name.
  const PluginFacts& plugins = facts.plugins;
  if (plugins.net_not_found_line && plugins.plugin_not_loaded_line) {
    table.AddDerived(kPluginNotLoaded, kTierRoot, 0.9, line_no,
                     {*plugins.net_not_found_line, *plugins.plugin_not_loaded_line});
  }
  AddPluginSkew(facts.ranks, facts.plugins, line_no, table);
  // No CUDA device in one process while another opened its GPU: not the driver (it works for
  // the other process) but the device this process was given.
  const DeviceFacts& devices = facts.devices;
  if (devices.no_device_line && devices.device_opened_line) {
    table.AddDerived(kDeviceNotGiven, kTierRoot, 0.95, line_no,
                     {*devices.no_device_line, *devices.device_opened_line});
  }
  // NCCL checks for a GPU held twice right after its ranks exchange their information: channels
  // or Init COMPLETE show the check passed (processes told apart by NCCL_HOSTID, which NCCL need
  // not print). Before that, a suspect below any failure the log names.
  if (devices.shared_gpu && !facts.run.channels && !facts.run.init_complete &&
      !facts.env.Has("NCCL_HOSTID")) {
    table.AddDerived(kSharedGpu, kTierSuspect, 0.6, line_no,
                     {devices.shared_gpu->first, devices.shared_gpu->second},
                     /*keep_until_completed=*/true);
  }
  AddGidFinding(facts.net, facts.env, line_no, table);
  // Refused connects retried again and again: a suspect, dropped when the run set up after them.
  constexpr size_t kManyRefusedRetries = 10;
  if (facts.net.refused_retries >= kManyRefusedRetries && facts.net.refused_retry_line) {
    table.AddDerived(kRefusedRetries, kTierSuspect, 0.5, line_no, {*facts.net.refused_retry_line});
  }
}

}  // namespace nccl_triage::classify
