#include "kernel/kernel_events.h"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <memory>
#include <optional>

#include "base/utf8.h"
#include "kernel/xid_table.h"

namespace nccl_triage::kernel {
namespace {

// Facts about the message formats (mlx5_core, the PCIe AER driver and NVIDIA's kernel module)
// come from kernel logs published in public bug reports; tests/kernel/fixtures names them.
constexpr std::array kRules = {
    // `mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE` (IB link layer, ib_core events)
    KernelRule{"mlx5.port_state", EventKind::kPortState, "Port: ",
               R"((?:mlx5_core (\S+) )?(mlx5_\d+|mlx5_bond_\d+): Port: (\d+) Link (\w+))"},
    // `mlx5_core 0000:17:00.0 ens1np0: Link down` (Ethernet/RoCE link layer)
    KernelRule{"mlx5.netdev_link", EventKind::kPortState, "Link ",
               R"(mlx5_core (\S+) (\S+): Link (up|down)\b)"},
    // `mlx5_core 0004:01:00.0: Port module event: module 0, Cable plugged`
    // `mlx5_core 0000:17:00.0: Port module event[error]: module 0, Cable error, ...`
    KernelRule{"mlx5.module", EventKind::kModule, "Port module event",
               R"(mlx5_core (\S+): Port module event(\[error\])?: module (\d+), (.*)$)"},
    // `alx 0000:07:00.0: AER: PCIe Bus Error: severity=Corrected, type=Data Link Layer, ...`
    KernelRule{"pcie.aer", EventKind::kAer, "PCIe Bus Error",
               R"((?:^|\s)([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): (?:AER: )?)"
               R"(PCIe Bus Error: severity=([A-Za-z]+(?: \([A-Za-z-]+\))?))"},
    // `NVRM: Xid (PCI:0000:44:00): 79, pid=..., GPU has fallen off the bus.`
    KernelRule{"nvidia.xid", EventKind::kXid, "Xid",
               R"(NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+),\s*(.*)$)"},
    // `NVRM: GPU at 0000:01:00.0 has fallen off the bus.` and the multi-line
    // `NVRM: The NVIDIA GPU 0000:b3:00.0 ... fallen off the bus and is not responding`
    KernelRule{"nvidia.off_bus", EventKind::kGpuOffBus, "fallen off the bus",
               R"(GPU (?:at )?(?:PCI:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]))"},
};

// The longest capture kept from a line (a device name, a state); the whole line is the evidence.
constexpr size_t kMaxField = 256;

// RE2 matches in time linear in the line and without recursion, whatever the line holds.
struct Compiled {
  std::array<std::unique_ptr<RE2>, kRules.size()> regex;
  Compiled() {
    RE2::Options options;
    options.set_log_errors(false);
    for (size_t i = 0; i < kRules.size(); ++i) {
      regex[i] = std::make_unique<RE2>(re2::StringPiece(kRules[i].regex.data(),
                                                        kRules[i].regex.size()),
                                       options);
    }
  }
};

const Compiled& CompiledRules() {
  static const Compiled compiled;  // built once; read-only afterwards
  return compiled;
}

constexpr size_t kMaxGroups = 5;  // the most capturing groups of a rule, plus the whole match

// The capturing groups of one match; an unmatched optional group is empty and not matched().
struct Match {
  std::array<re2::StringPiece, kMaxGroups> group;
  bool matched(size_t i) const { return group[i].data() != nullptr; }
  std::string str(size_t i) const {
    // Cut on a character boundary: the record is valid UTF-8, and so must its captures be.
    return std::string(Utf8Prefix(view(i), kMaxField));
  }
  std::string_view view(size_t i) const {
    return group[i].data() ? std::string_view(group[i].data(), group[i].size()) : "";
  }
};

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// A decimal number in [0, max], or nullopt (too long, too large or not digits): never truncated.
std::optional<int> ParseBounded(std::string_view s, int max) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0 || v > max) {
    return std::nullopt;
  }
  return v;
}

constexpr int kMaxPort = 65535;  // a port or module number; anything above is not one

// Fills `e` from the match; false when a number in it is not one (the line is then no event).
bool Fill(KernelEvent* e, const Match& m, const KernelRule& rule) {
  switch (rule.kind) {
    case EventKind::kPortState:
      if (rule.name == "mlx5.netdev_link") {
        e->pci = Lower(m.str(1));
        e->device = m.str(2);
        e->port = 1;
        e->state = m.view(3) == "up" ? "UP" : "DOWN";
      } else {
        const auto port = ParseBounded(m.view(3), kMaxPort);
        if (!port) return false;
        e->pci = Lower(m.str(1));
        e->device = m.str(2);
        e->port = *port;
        e->state = m.str(4);
      }
      e->down = e->state == "DOWN";
      return true;
    case EventKind::kModule: {
      const auto module = ParseBounded(m.view(3), kMaxPort);
      if (!module) return false;
      e->pci = Lower(m.str(1));
      e->error = m.matched(2);
      e->port = *module;
      e->state = m.str(4);
      while (!e->state.empty() && (e->state.back() == ' ' || e->state.back() == '.')) {
        e->state.pop_back();
      }
      e->device = e->pci;
      return true;
    }
    case EventKind::kAer: {
      e->pci = Lower(m.str(1));
      e->device = e->pci;
      e->state = m.str(2);
      const std::string lower = Lower(e->state);
      e->error = lower.find("uncorrect") != std::string::npos;  // Uncorrected / Uncorrectable
      return true;
    }
    case EventKind::kXid: {
      e->pci = Lower(m.str(1));
      e->device = e->pci;
      // A code that is not one is kept as written (bounded), never cut into another code.
      const auto code = ParseBounded(m.view(2), kMaxXidCode);
      e->xid = code ? *code : kInvalidXid;
      if (!code) e->state = m.str(2).substr(0, kMaxXidText);
      e->detail = m.str(3);
      return true;
    }
    case EventKind::kGpuOffBus:
      e->pci = Lower(m.str(1));
      e->device = e->pci;
      return true;
  }
  return false;
}

}  // namespace

std::span<const KernelRule> KernelRules() { return kRules; }

std::optional<KernelEvent> EventFromRecord(const KernelRecord& record) {
  const Compiled& compiled = CompiledRules();
  const re2::StringPiece text(record.message.data(), record.message.size());
  for (size_t i = 0; i < kRules.size(); ++i) {
    const KernelRule& rule = kRules[i];
    if (record.message.find(rule.needle) == std::string::npos) continue;
    const RE2& re = *compiled.regex[i];
    Match m;
    const int groups = std::min(re.NumberOfCapturingGroups() + 1, static_cast<int>(kMaxGroups));
    if (!re.Match(text, 0, text.size(), RE2::UNANCHORED, m.group.data(), groups)) continue;
    KernelEvent e;
    e.kind = rule.kind;
    e.rule = std::string(rule.name);
    if (!Fill(&e, m, rule)) continue;
    e.mono_usec = record.mono_usec;
    e.wall_ms = record.wall_ms;
    e.line = record.line;
    e.boot_id = record.boot_id;
    e.earlier_boot = record.earlier_boot;
    return e;
  }
  return std::nullopt;
}

std::vector<KernelEvent> EventsFromRecords(std::span<const KernelRecord> records) {
  std::vector<KernelEvent> events;
  for (const KernelRecord& r : records) {
    if (auto e = EventFromRecord(r)) events.push_back(std::move(*e));
  }
  return events;
}

}  // namespace nccl_triage::kernel
