#include "kernel/kernel_events.h"

#include <array>
#include <regex>

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

struct Compiled {
  std::array<std::regex, kRules.size()> regex;
  Compiled() {
    for (size_t i = 0; i < kRules.size(); ++i) {
      regex[i] = std::regex(std::string(kRules[i].regex), std::regex::ECMAScript);
    }
  }
};

const Compiled& CompiledRules() {
  static const Compiled compiled;  // built once; read-only afterwards
  return compiled;
}

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

int ToInt(const std::string& s) {
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9' || v > 100'000'000) return v;
    v = v * 10 + (c - '0');
  }
  return v;
}

void Fill(KernelEvent* e, const std::smatch& m, const KernelRule& rule) {
  switch (rule.kind) {
    case EventKind::kPortState:
      if (rule.name == "mlx5.netdev_link") {
        e->pci = Lower(m[1].str());
        e->device = m[2].str();
        e->port = 1;
        e->state = m[3].str() == "up" ? "UP" : "DOWN";
      } else {
        e->pci = Lower(m[1].str());
        e->device = m[2].str();
        e->port = ToInt(m[3].str());
        e->state = m[4].str();
      }
      e->down = e->state == "DOWN";
      break;
    case EventKind::kModule:
      e->pci = Lower(m[1].str());
      e->error = m[2].matched;
      e->port = ToInt(m[3].str());
      e->state = m[4].str();
      while (!e->state.empty() && (e->state.back() == ' ' || e->state.back() == '.')) {
        e->state.pop_back();
      }
      e->device = e->pci;
      break;
    case EventKind::kAer: {
      e->pci = Lower(m[1].str());
      e->device = e->pci;
      e->state = m[2].str();
      const std::string lower = Lower(e->state);
      e->error = lower.find("uncorrect") != std::string::npos;  // Uncorrected / Uncorrectable
      break;
    }
    case EventKind::kXid:
      e->pci = Lower(m[1].str());
      e->device = e->pci;
      e->xid = ToInt(m[2].str());
      e->detail = m[3].str();
      break;
    case EventKind::kGpuOffBus:
      e->pci = Lower(m[1].str());
      e->device = e->pci;
      break;
  }
}

}  // namespace

std::string_view ToString(EventKind kind) {
  switch (kind) {
    case EventKind::kPortState:
      return "port_state";
    case EventKind::kModule:
      return "module";
    case EventKind::kAer:
      return "aer";
    case EventKind::kXid:
      return "xid";
    case EventKind::kGpuOffBus:
      return "gpu_off_bus";
  }
  return "unknown";
}

std::span<const KernelRule> KernelRules() { return kRules; }

std::optional<KernelEvent> EventFromRecord(const KernelRecord& record) {
  const Compiled& compiled = CompiledRules();
  for (size_t i = 0; i < kRules.size(); ++i) {
    const KernelRule& rule = kRules[i];
    if (record.message.find(rule.needle) == std::string::npos) continue;
    std::smatch m;
    if (!std::regex_search(record.message, m, compiled.regex[i])) continue;
    KernelEvent e;
    e.kind = rule.kind;
    e.rule = std::string(rule.name);
    Fill(&e, m, rule);
    e.mono_usec = record.mono_usec;
    e.wall_ms = record.wall_ms;
    e.line = record.line;
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
