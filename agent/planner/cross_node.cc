#include "planner/cross_node.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "base/text.h"
#include "core/catalogue.h"
#include "core/ids.h"

namespace nccl_triage {
namespace {

Finding Make(CauseId id, CheckStatus status, std::string message) {
  return MakeFinding(id, status, std::move(message));
}

void AddEvidence(Finding& f, const NodeInfo& n, std::string key, std::string value) {
  f.evidence.push_back({n.name + " " + key, std::move(value), "hello:" + n.name});
}

std::string DriverText(int v) {
  // cuDriverGetVersion: 1000 * major + 10 * minor.
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

Finding VersionSkew(const NodeInfo& a, const NodeInfo& b) {
  const bool nccl_known = !a.nccl_version.empty() && !b.nccl_version.empty();
  const bool cuda_known = a.cuda_driver_version > 0 && b.cuda_driver_version > 0;
  if (!nccl_known && !cuda_known) {
    return Make(ids::kPairVersionSkew, CheckStatus::kSkip,
                "NCCL and CUDA driver versions not known for both nodes yet");
  }
  Finding f;
  if (nccl_known && a.nccl_version != b.nccl_version) {
    // NCCL compares versions across ranks at init ("Mismatched NCCL version detected").
    f = Make(ids::kPairVersionSkew, CheckStatus::kFail,
             "NCCL " + a.nccl_version + " on " + a.name + " but " + b.nccl_version + " on " +
                 b.name + ": NCCL refuses ranks of different versions");
  } else if (cuda_known && a.cuda_driver_version != b.cuda_driver_version) {
    // The driver is per node; ranks on different drivers interoperate, but the pool is mid-rollout.
    f = Make(ids::kPairVersionSkew, CheckStatus::kWarn,
             "CUDA driver " + DriverText(a.cuda_driver_version) + " on " + a.name + " but " +
                 DriverText(b.cuda_driver_version) + " on " + b.name);
  } else {
    f = Make(ids::kPairVersionSkew, CheckStatus::kPass, "same NCCL and CUDA driver versions");
  }
  if (nccl_known) {
    AddEvidence(f, a, "nccl", a.nccl_version);
    AddEvidence(f, b, "nccl", b.nccl_version);
  }
  if (cuda_known) {
    AddEvidence(f, a, "cuda_driver", std::to_string(a.cuda_driver_version));
    AddEvidence(f, b, "cuda_driver", std::to_string(b.cuda_driver_version));
  }
  return f;
}

Finding ArchMixed(const NodeInfo& a, const NodeInfo& b) {
  if (a.arch.empty() || b.arch.empty()) {
    return Make(ids::kPairArchMixed, CheckStatus::kSkip,
                "CPU architecture not known for both nodes");
  }
  Finding f = a.arch == b.arch
                  ? Make(ids::kPairArchMixed, CheckStatus::kPass, "both nodes are " + a.arch)
                  : Make(ids::kPairArchMixed, CheckStatus::kFail,
                         a.name + " is " + a.arch + " but " + b.name + " is " + b.arch);
  AddEvidence(f, a, "arch", a.arch);
  AddEvidence(f, b, "arch", b.arch);
  return f;
}

bool IsIb(const PortInfo& p) { return p.link_layer == "InfiniBand"; }

// value -> full member on any InfiniBand port of the node.
std::map<uint16_t, bool> IbPKeys(const NodeInfo& n) {
  std::map<uint16_t, bool> keys;
  for (const auto& h : n.hcas) {
    for (const auto& p : h.ports) {
      if (!IsIb(p)) continue;
      for (const auto& k : p.pkeys) keys[k.value] = keys[k.value] || k.full_member;
    }
  }
  return keys;
}

std::string KeysText(const std::map<uint16_t, bool>& keys) {
  std::string s;
  for (const auto& [v, full] : keys) {
    static constexpr char kHex[] = "0123456789abcdef";
    const unsigned key = static_cast<unsigned>(v | (full ? 0x8000 : 0));
    if (!s.empty()) s += ",";
    s += "0x";
    for (int shift = 12; shift >= 0; shift -= 4) s += kHex[(key >> shift) & 0xF];
  }
  return s.empty() ? "none" : s;
}

Finding PKeyPartition(const NodeInfo& a, const NodeInfo& b) {
  auto ka = IbPKeys(a);
  auto kb = IbPKeys(b);
  if (ka.empty() || kb.empty()) {
    return Make(ids::kPairPkeyPartition, CheckStatus::kSkip,
                "no InfiniBand PKey table known for both nodes");
  }
  // IB partitions: two ports talk when they share a partition and at least one is a full member.
  bool shared = false;
  for (const auto& [v, full] : ka) {
    auto it = kb.find(v);
    if (it != kb.end() && (full || it->second)) shared = true;
  }
  Finding f = shared ? Make(ids::kPairPkeyPartition, CheckStatus::kPass,
                            "the nodes share a partition with a full member")
                     : Make(ids::kPairPkeyPartition, CheckStatus::kFail,
                            a.name + " (" + KeysText(ka) + ") and " + b.name + " (" + KeysText(kb) +
                                ") share no partition with a full member");
  AddEvidence(f, a, "pkeys", KeysText(ka));
  AddEvidence(f, b, "pkeys", KeysText(kb));
  return f;
}

std::set<std::string> LinkLayers(const NodeInfo& n) {
  std::set<std::string> s;
  for (const auto& h : n.hcas) {
    for (const auto& p : h.ports) {
      if (!p.link_layer.empty()) s.insert(p.link_layer);
    }
  }
  return s;
}

Finding LinkLayer(const NodeInfo& a, const NodeInfo& b) {
  auto la = LinkLayers(a);
  auto lb = LinkLayers(b);
  if (la.empty() || lb.empty()) {
    return Make(ids::kPairLinkLayer, CheckStatus::kSkip, "link layers not known for both nodes");
  }
  bool common = std::any_of(la.begin(), la.end(), [&](const auto& l) { return lb.count(l) > 0; });
  Finding f =
      common
          ? Make(ids::kPairLinkLayer, CheckStatus::kPass, "the nodes share a link layer")
          : Make(ids::kPairLinkLayer, CheckStatus::kFail,
                 a.name + " has only " + Join(la, ",") + " ports and " + b.name + " only " + Join(lb, ","));
  AddEvidence(f, a, "link_layers", Join(la, ","));
  AddEvidence(f, b, "link_layers", Join(lb, ","));
  return f;
}

}  // namespace

std::vector<Finding> CrossNodeChecks(const NodeInfo& a, const NodeInfo& b) {
  return {VersionSkew(a, b), ArchMixed(a, b), PKeyPartition(a, b), LinkLayer(a, b)};
}

std::vector<Finding> FailingCrossNodeFindings(const NodeInfo& a, const NodeInfo& b) {
  std::vector<Finding> out;
  for (auto& f : CrossNodeChecks(a, b)) {
    if (f.status == CheckStatus::kFail) out.push_back(std::move(f));
  }
  return out;
}

std::string CrossNodeSignature(const NodeInfo& n) {
  std::string s = n.nccl_version + "|" + n.arch + "|" + Join(LinkLayers(n), ",") + "|" +
                  KeysText(IbPKeys(n)) + "|" + (n.hcas.empty() ? "nohca" : "hca");
  return s;
}

bool PredictedIncompatible(const NodeInfo& a, const NodeInfo& b) {
  // The planner asks this for many candidate references: answer without building messages.
  if (!a.nccl_version.empty() && !b.nccl_version.empty() && a.nccl_version != b.nccl_version) {
    return true;
  }
  if (!a.arch.empty() && !b.arch.empty() && a.arch != b.arch) return true;
  if (a.hcas.empty() || b.hcas.empty()) return false;
  return PKeyPartition(a, b).status == CheckStatus::kFail ||
         LinkLayer(a, b).status == CheckStatus::kFail;
}

}  // namespace nccl_triage
