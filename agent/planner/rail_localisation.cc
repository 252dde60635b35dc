#include "planner/rail_localisation.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <tuple>

#include "base/text.h"
#include "base/vectors.h"

namespace nccl_triage {
namespace {

struct RailRecord {
  std::set<std::string> passed_with;
  std::set<std::string> failed_with;
  const RailPairOutcome* first_failure = nullptr;
  std::string device;
};

using NodeRail = std::pair<std::string, int>;

// "0.08" (GB/s with two decimals, as the decision table's reasons print bandwidth).
std::string GigaBytes(double bytes_per_second) {
  char buf[32];
  auto r =
      std::to_chars(buf, buf + sizeof(buf), bytes_per_second / 1e9, std::chars_format::fixed, 2);
  return r.ec == std::errc() ? std::string(buf, r.ptr) : "?";
}

std::string RailText(int rail, const std::string& device) {
  return "rail " + std::to_string(rail) + (device.empty() ? "" : " (" + device + ")");
}

}  // namespace

RailLocalisation LocaliseRails(const std::vector<RailPairOutcome>& outcomes) {
  std::map<NodeRail, RailRecord> records;
  for (const auto& o : outcomes) {
    for (const std::string* node : {&o.pair.a, &o.pair.b}) {
      RailRecord& r = records[{*node, o.rail}];
      if (r.device.empty()) r.device = o.device;
      const std::string& peer = o.pair.Other(*node);
      if (o.passed) {
        r.passed_with.insert(peer);
      } else {
        r.failed_with.insert(peer);
        if (r.first_failure == nullptr) r.first_failure = &o;
      }
    }
  }
  auto good = [&](const std::string& node, int rail) {
    auto it = records.find({node, rail});
    return it != records.end() && !it->second.passed_with.empty();
  };

  RailLocalisation out;
  std::set<NodeRail> node_rail_faults;
  std::map<std::string, std::vector<RailFault>> by_node;
  for (const auto& [key, r] : records) {
    const auto& [node, rail] = key;
    if (!r.passed_with.empty()) continue;
    std::set<std::string> good_peers;
    for (const auto& peer : r.failed_with) {
      if (good(peer, rail)) good_peers.insert(peer);
    }
    if (good_peers.size() < 2) continue;
    RailFault f;
    f.kind = RailFaultKind::kNodeRail;
    f.nodes = {node};
    f.rail = rail;
    f.device = r.device;
    f.fault_class = r.first_failure->fault_class;
    bool slow = true;  // every failure a pass below the rail's port rate
    double best = 0;
    double expected = 0;
    for (const auto& o : outcomes) {
      if (o.rail != rail || o.passed || !o.pair.Has(node)) continue;
      // Only the failures that localise the fault: with a peer that is itself bad on the rail
      // (a node fault of its own), the causes are as much the peer's as this node's.
      if (!good_peers.count(o.pair.Other(node))) continue;
      AppendAbsent(f.causes, o.causes);
      slow = slow && o.degraded;
      best = std::max(best, o.busbw_bytes_per_second);
      expected = std::max(expected, o.expected_bytes_per_second);
    }
    f.degraded = slow;
    if (slow) {
      f.reason = RailText(rail, r.device) + " is rate-degraded: NCCL passes on it but carries " +
                 "at most " + GigaBytes(best) + " GB/s busbw with " + Join(good_peers) +
                 ", below probe.busbw_min_fraction of " + GigaBytes(expected) +
                 " GB/s, the rail's port rate; each of them carries " + RailText(rail, "") +
                 " at its rate with " + "another node";
    } else {
      f.reason = RailText(rail, r.device) + " passes with no peer and fails with " +
                 Join(good_peers) + ", each of which passes on " + RailText(rail, "") +
                 " with another node";
    }
    node_rail_faults.insert(key);
    by_node[node].push_back(std::move(f));
  }

  // A node whose every probed rail (two or more) is a node-rail fault: the node, not an HCA.
  std::vector<RailFault> nodes, rails;
  for (auto& [node, faults] : by_node) {
    std::set<int> probed;
    for (const auto& [key, r] : records) {
      if (key.first == node) probed.insert(key.second);
    }
    if (probed.size() >= 2 && faults.size() == probed.size()) {
      RailFault f;
      f.kind = RailFaultKind::kNode;
      f.nodes = {node};
      f.fault_class = faults.front().fault_class;
      f.degraded = true;
      for (const auto& rf : faults) {
        AppendAbsent(f.causes, rf.causes);
        f.degraded = f.degraded && rf.degraded;
      }
      f.reason = "every rail probed (" + std::to_string(probed.size()) + ") " +
                 (f.degraded ? "is rate-degraded" : "fails") +
                 " with peers that pass on the same rail: the node, not one HCA";
      nodes.push_back(std::move(f));
    } else {
      for (auto& rf : faults) rails.push_back(std::move(rf));
    }
  }

  std::vector<RailFault> links;
  std::set<std::tuple<std::string, std::string, int>> seen;
  for (const auto& o : outcomes) {
    if (o.passed) continue;
    const bool explained = node_rail_faults.count({o.pair.a, o.rail}) != 0 ||
                           node_rail_faults.count({o.pair.b, o.rail}) != 0;
    if (explained) continue;
    if (good(o.pair.a, o.rail) && good(o.pair.b, o.rail)) {
      if (!seen.insert({o.pair.a, o.pair.b, o.rail}).second) continue;
      RailFault f;
      f.kind = RailFaultKind::kLinkRail;
      f.nodes = {o.pair.a, o.pair.b};
      f.rail = o.rail;
      f.device = o.device;
      f.fault_class = o.fault_class;
      f.causes = o.causes;
      f.degraded = o.degraded;
      f.reason = RailText(o.rail, o.device) +
                 (o.degraded ? " is rate-degraded (" + GigaBytes(o.busbw_bytes_per_second) +
                                   " GB/s busbw, port rate " +
                                   GigaBytes(o.expected_bytes_per_second) + " GB/s) only"
                             : " fails only") +
                 " between " + o.pair.a + " and " + o.pair.b + "; both pass on it with other nodes";
      links.push_back(std::move(f));
    } else {
      out.inconclusive.push_back(o);
    }
  }
  auto order = [](const RailFault& x, const RailFault& y) {
    return std::tie(x.nodes, x.rail) < std::tie(y.nodes, y.rail);
  };
  for (auto* list : {&nodes, &rails, &links}) {
    std::sort(list->begin(), list->end(), order);
    for (auto& f : *list) out.faults.push_back(std::move(f));
  }
  return out;
}

std::vector<RailPairOutcome> JudgeRails(const NodeInfo& a, const NodeInfo& b,
                                        const PairProbes& probes, const JudgeOptions& options) {
  std::vector<RailPairOutcome> out;
  for (const RailProbes& rail : probes.rails) {
    PairProbes one;
    one.pair = probes.pair;
    one.socket = probes.socket;
    one.ib = rail.ib;
    const PairJudgement j =
        JudgePairExpecting(a, b, one, options, ExpectedRailBandwidth(a, b, rail.rail, rail.device));
    if (j.status == PairStatus::kInconclusive) continue;
    RailPairOutcome o;
    o.pair = probes.pair;
    o.rail = rail.rail;
    o.device = rail.device;
    o.passed = j.status == PairStatus::kPass;
    o.busbw_bytes_per_second = j.ib_busbw_bytes_per_second;
    o.expected_bytes_per_second = j.expected_ib_bytes_per_second;
    if (!o.passed) {
      o.fault_class = j.verdict.fault_class;
      o.causes = j.verdict.causes;
      o.degraded = j.verdict.degraded;
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace nccl_triage
