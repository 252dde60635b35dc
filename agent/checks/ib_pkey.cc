// ib.pkey: NCCL_IB_PKEY selects an *index* into each port's partition table (default 0). Two
// limited members of a partition cannot talk to each other, so the key NCCL uses must be present
// with the full-membership bit (0x8000). With expect.pkey configured every InfiniBand port must
// carry that key as a full member; otherwise the key at index 0 (NCCL's default) is judged.
#include <set>

#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 180 (checks/check.h).
NT_HOST_CHECK(IbPkey, 180,
    CauseInfo{"ib.pkey", kIb, kHost, kNone, "Partition key",
              "NCCL_IB_PKEY selects a PKey index; ranks must share a partition with full "
              "membership, or QPs cannot connect (ibv_modify_qp fails or times out).",
              "Add the node's port GUIDs to the partition as full members in the SM's partition "
              "config (partitions.conf / UFM), and set NCCL_IB_PKEY to that key's index.",
              "`ports/*/pkeys/*` of InfiniBand ports",
              "fail when `expect.pkey` is absent or only a limited member; warn when it sits at "
              "different indices, or (unconfigured) index 0 is not a full member"});
namespace {

constexpr uint16_t kFullMember = 0x8000;

std::string PkeyText(uint16_t v) { return "0x" + HexDigits(v, 4); }

std::string TableText(const IbPort& p) {
  std::vector<std::string> entries;
  for (size_t i = 0; i < p.pkeys.size(); ++i) {
    const int index = i < p.pkey_indices.size() ? p.pkey_indices[i] : static_cast<int>(i);
    entries.push_back(std::to_string(index) + ": " + PkeyText(p.pkeys[i]));
  }
  return entries.empty() ? "empty" : Join(entries);
}

int IndexOf(const IbPort& p, size_t position) {
  return position < p.pkey_indices.size() ? p.pkey_indices[position] : static_cast<int>(position);
}

}  // namespace

Finding IbPkey(const NodeSnapshot& s, const Config& c, const CheckContext&) {
  if (auto skip = SkipWithoutHcas(ids::kIbPkey, s)) return *skip;
  FindingBuilder b(ids::kIbPkey);
  // A plain value and a flag rather than an optional: GCC 12 misreads the optional's state.
  const bool configured = c.expect.pkey.has_value();
  const uint16_t want = static_cast<uint16_t>(c.expect.pkey.value_or(0) & 0x7fff);
  if (configured) b.Add("expected PKey", PkeyText(want | kFullMember), "config: expect.pkey");

  int ib_ports = 0;
  std::vector<std::string> absent, limited, unknown, ok_ports;
  std::set<int> indices;
  for (const auto& d : s.ib_devices) {
    for (const auto& p : d.ports) {
      if (!IsInfiniBandLinkLayer(p)) continue;
      ++ib_ports;
      const std::string name = PortName(d, p);
      const std::string source = PortPath(d, p, "pkeys");
      if (!p.pkeys_error.empty()) {
        b.Add(name + " pkeys", "unreadable (" + p.pkeys_error + ")", source);
        unknown.push_back(name);
        continue;
      }
      b.Add(name + " pkeys", TableText(p), source);
      if (configured) {
        bool full = false, lim = false;
        for (size_t i = 0; i < p.pkeys.size(); ++i) {
          if ((p.pkeys[i] & 0x7fff) != want) continue;
          if (p.pkeys[i] & kFullMember) {
            full = true;
            indices.insert(IndexOf(p, i));
          } else {
            lim = true;
          }
        }
        if (full) {
          ok_ports.push_back(name);
        } else if (lim) {
          limited.push_back(name);
        } else {
          absent.push_back(name);
        }
      } else {
        // NCCL's default NCCL_IB_PKEY=0: the key at table index 0.
        bool judged = false;
        for (size_t i = 0; i < p.pkeys.size(); ++i) {
          if (IndexOf(p, i) != 0) continue;
          judged = true;
          if (p.pkeys[i] & kFullMember) {
            ok_ports.push_back(name);
          } else {
            limited.push_back(name + " (index 0 = " + PkeyText(p.pkeys[i]) + ")");
          }
        }
        if (!judged) absent.push_back(name);
      }
    }
  }
  if (ib_ports == 0) {
    AddLinkLayers(b, s);
    return b.Skip("no InfiniBand link-layer port (partition keys are an IB concept)");
  }
  if (unknown.size() == static_cast<size_t>(ib_ports)) {
    return b.Skip("no partition table could be read");
  }
  if (configured) {
    const std::string key = PkeyText(want | kFullMember);
    if (!absent.empty() || !limited.empty()) {
      std::vector<std::string> parts;
      if (!absent.empty()) parts.push_back("PKey " + key + " absent on " + Join(absent));
      if (!limited.empty()) {
        parts.push_back("only limited membership (" + PkeyText(want) + ") on " + Join(limited));
      }
      return b.Fail(Join(parts, "; "));
    }
    if (!unknown.empty()) {
      return b.Warn("partition table of " + Join(unknown) + " unreadable; the other ports carry " +
                    key);
    }
    if (indices.size() > 1) {
      std::vector<std::string> idx;
      for (int i : indices) idx.push_back(std::to_string(i));
      return b.Warn("PKey " + key + " is at different table indices (" + Join(idx) +
                    ") on different ports, but NCCL_IB_PKEY takes one index for all HCAs");
    }
    return b.Pass("PKey " + key + " with full membership on all " + std::to_string(ib_ports) +
                  " InfiniBand port(s) (index " + std::to_string(*indices.begin()) +
                  ": NCCL_IB_PKEY=" + std::to_string(*indices.begin()) + ")");
  }
  if (!absent.empty()) {
    return b.Warn("no PKey at table index 0 (NCCL's default NCCL_IB_PKEY) on " + Join(absent));
  }
  if (!limited.empty()) {
    return b.Warn("limited membership at index 0 (NCCL's default) on " + Join(limited) +
                  ": limited members cannot talk to each other; set expect.pkey to judge the "
                  "partition you use");
  }
  if (!unknown.empty()) {
    return b.Warn("partition table of " + Join(unknown) + " unreadable");
  }
  return b.Pass("full-membership PKey at index 0 on all " + std::to_string(ib_ports) +
                " InfiniBand port(s) (expect.pkey not configured)");
}

}  // namespace nccl_triage::checks
