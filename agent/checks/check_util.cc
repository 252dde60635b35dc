#include "checks/check_util.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>

namespace nccl_triage::checks {

FindingBuilder::FindingBuilder(CauseId id) {
  finding_.check = std::string(id.str());
  finding_.fault_class = id.info().fault_class;
  finding_.remedy = std::string(id.info().remedy);
}

FindingBuilder& FindingBuilder::Add(std::string key, std::string value, std::string source) {
  finding_.evidence.push_back({CutText(std::move(key), kMaxEvidenceValueBytes),
                               CutText(std::move(value), kMaxEvidenceValueBytes),
                               CutText(std::move(source), kMaxEvidenceValueBytes)});
  return *this;
}

Finding FindingBuilder::Close(CheckStatus status, std::string message) {
  Finding f = finding_;
  f.status = status;
  f.message = CutText(std::move(message), kMaxMessageBytes);
  return f;
}

std::string CutText(std::string text, size_t max) {
  if (text.size() <= max) return text;
  const std::string total = " ... (" + std::to_string(text.size()) + " bytes)";
  size_t keep = max > total.size() ? max - total.size() : 0;
  // Back off continuation bytes (10xxxxxx) so a multi-byte character is never split.
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xc0) == 0x80) --keep;
  text.resize(keep);
  return text + total;
}

std::string ToText(const std::string& v) { return v; }
std::string ToText(bool v) { return v ? "true" : "false"; }
std::string ToText(int v) { return std::to_string(v); }
std::string ToText(int64_t v) { return std::to_string(v); }
std::string ToText(uint32_t v) { return std::to_string(v); }
std::string ToText(uint64_t v) { return std::to_string(v); }

std::string ToText(double v) {
  std::array<char, 32> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  if (ec != std::errc()) return "?";
  return std::string(buf.data(), end);
}

std::string ToText(const LimitPair& v) {
  auto one = [](const Limit& l) {
    return l.unlimited ? std::string("unlimited") : ToText(l.value);
  };
  return "soft " + one(v.soft) + ", hard " + one(v.hard);
}

std::string HexDigits(uint64_t v, int width) {
  std::string s;
  do {
    s.insert(s.begin(), "0123456789abcdef"[v & 0xf]);
    v >>= 4;
  } while (v != 0);
  if (static_cast<int>(s.size()) < width) s.insert(0, static_cast<size_t>(width) - s.size(), '0');
  return s;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr std::array<const char*, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024.0 && unit + 1 < kUnits.size()) {
    v /= 1024.0;
    ++unit;
  }
  std::array<char, 48> buf{};
  int precision = (unit == 0 || std::fabs(v - std::round(v)) < 0.05) ? 0 : 1;
  auto [end, ec] =
      std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed, precision);
  if (ec != std::errc()) return std::to_string(bytes) + " B";
  return std::string(buf.data(), end) + " " + kUnits[unit];
}

std::string FormatLimit(const Limit& limit, bool bytes) {
  if (limit.unlimited) return "unlimited";
  return bytes ? FormatBytes(limit.value) : std::to_string(limit.value);
}

std::string FormatRate(double gbps) { return ToText(gbps) + " Gb/s"; }

std::string PortName(const IbDevice& dev, const IbPort& port) {
  return dev.name + "/" + std::to_string(port.num);
}

std::string PortPath(const IbDevice& dev, const IbPort& port, std::string_view leaf) {
  return "sys/class/infiniband/" + dev.name + "/ports/" + std::to_string(port.num) + "/" +
         std::string(leaf);
}

namespace {
bool Contains(const Fact<std::string>& f, std::string_view needle) {
  return f.ok() && f.value->find(needle) != std::string::npos;
}
}  // namespace

bool IsActive(const IbPort& port) { return Contains(port.state, "ACTIVE"); }
bool IsLinkUp(const IbPort& port) { return Contains(port.phys_state, "LinkUp"); }
bool IsInfiniBandLinkLayer(const IbPort& port) { return Contains(port.link_layer, "InfiniBand"); }
bool IsEthernetLinkLayer(const IbPort& port) { return Contains(port.link_layer, "Ethernet"); }

namespace {
constexpr uint16_t kVendorMellanox = 0x15b3;
constexpr uint16_t kVendorNvidia = 0x10de;
}  // namespace

bool IsInfiniBandClassPci(const PciDevice& d) { return (d.class_code >> 8) == 0x0207; }

bool IsRdmaCapablePci(const PciDevice& d) {
  return IsInfiniBandClassPci(d) || (d.vendor == kVendorMellanox && (d.class_code >> 16) == 0x02);
}

std::vector<const PciDevice*> RdmaPciDevices(const NodeSnapshot& s) {
  std::vector<const PciDevice*> out;
  for (const auto& d : s.pci_devices) {
    if (IsRdmaCapablePci(d)) out.push_back(&d);
  }
  return out;
}

bool HasRdmaHardware(const NodeSnapshot& s) {
  return !s.ib_devices.empty() || !RdmaPciDevices(s).empty();
}

bool HasCapIpcLock(const NodeSnapshot& s) {
  constexpr uint64_t kCapIpcLock = uint64_t{1} << 14;
  return s.cap_eff.ok() && (*s.cap_eff.value & kCapIpcLock) != 0;
}

bool MemlockSufficient(const Limit& soft, const std::optional<uint64_t>& floor) {
  return soft.unlimited || (floor && soft.value >= *floor);
}

std::vector<const PciDevice*> NvidiaGpuPci(const NodeSnapshot& s) {
  std::vector<const PciDevice*> out;
  for (const auto& d : s.pci_devices) {
    if (d.vendor == kVendorNvidia && (d.class_code >> 16) == 0x03) out.push_back(&d);
  }
  return out;
}

bool HasNvidiaGpu(const NodeSnapshot& s) { return !s.gpus.empty() || !NvidiaGpuPci(s).empty(); }

std::optional<Finding> SkipWithoutHcas(CauseId id, const NodeSnapshot& s) {
  if (!s.ib_devices.empty()) return std::nullopt;
  FindingBuilder b(id);
  b.Add("sys/class/infiniband", s.infiniband_class_present ? "present, no device" : "absent",
        "sys/class/infiniband");
  auto rdma_pci = RdmaPciDevices(s);
  if (!rdma_pci.empty()) {
    std::vector<std::string> bdfs;
    for (const auto* d : rdma_pci) bdfs.push_back(d->bdf);
    b.Add("RDMA-capable PCI functions", Join(bdfs), "sys/bus/pci/devices");
    return b.Skip("no RDMA device registered with the kernel (see ib.hca_present)");
  }
  if (!s.pci_error.empty()) {
    b.Add("PCI scan", "unreadable (" + s.pci_error + ")", "sys/bus/pci/devices");
    return b.Skip("no RDMA device registered; the PCI bus could not be read to tell why");
  }
  b.Add("RDMA-capable PCI functions", "none", "sys/bus/pci/devices");
  return b.Skip("no RDMA hardware on this node");
}

void AddLinkLayers(FindingBuilder& b, const NodeSnapshot& s) {
  std::vector<std::string> layers;
  for (const auto& d : s.ib_devices) {
    for (const auto& p : d.ports) layers.push_back(PortName(d, p) + " " + FactText(p.link_layer));
  }
  b.Add("link layers", layers.empty() ? "no ports" : Join(layers),
        "sys/class/infiniband/*/ports/*/link_layer");
}

const KernelModule* FindModule(const NodeSnapshot& s, std::string_view name) {
  for (const auto& m : s.modules) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

bool ModuleLoaded(const NodeSnapshot& s, std::string_view name) {
  const KernelModule* m = FindModule(s, name);
  return m != nullptr && m->loaded;
}

std::string ModuleSource(const NodeSnapshot& s, std::string_view name) {
  const KernelModule* m = FindModule(s, name);
  if (m != nullptr && !m->source.empty()) return m->source;
  return "sys/module/" + std::string(name);
}

std::vector<int> ParseVersion(std::string_view text) {
  std::vector<int> out;
  size_t i = 0;
  while (i < text.size()) {
    int v = 0;
    auto [ptr, ec] = std::from_chars(text.data() + i, text.data() + text.size(), v);
    if (ec != std::errc()) break;
    out.push_back(v);
    i = static_cast<size_t>(ptr - text.data());
    if (i < text.size() && (text[i] == '.' || text[i] == '-') && i + 1 < text.size() &&
        text[i + 1] >= '0' && text[i + 1] <= '9') {
      ++i;
    } else {
      break;
    }
  }
  return out;
}

int CompareVersions(const std::vector<int>& a, const std::vector<int>& b) {
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    int x = i < a.size() ? a[i] : 0;
    int y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

namespace {

struct GenerationRule {
  std::string_view token;  // a whole word of the model name
  GpuGeneration generation;
};

// Driver branches: the first production branch that supports the generation (Hopper 525,
// Blackwell 570, Ampere 450, Ada 525, Turing 410, Volta 384). NCCL: the first release with
// kernels for the generation. An empty nccl_min means "no requirement this tool knows of".
constexpr GpuGeneration kBlackwell{"Blackwell", "570", "2.25"};
constexpr GpuGeneration kHopper{"Hopper", "525", "2.18"};
constexpr GpuGeneration kAda{"Ada Lovelace", "525", ""};
constexpr GpuGeneration kAmpere{"Ampere", "450", "2.7.8"};
constexpr GpuGeneration kTuring{"Turing", "410", ""};
constexpr GpuGeneration kVolta{"Volta", "384", ""};

constexpr std::array kGenerationRules = {
    GenerationRule{"B200", kBlackwell},  GenerationRule{"B100", kBlackwell},
    GenerationRule{"GB200", kBlackwell}, GenerationRule{"B300", kBlackwell},
    GenerationRule{"GB300", kBlackwell}, GenerationRule{"H100", kHopper},
    GenerationRule{"H200", kHopper},     GenerationRule{"H800", kHopper},
    GenerationRule{"GH200", kHopper},    GenerationRule{"H20", kHopper},
    GenerationRule{"L40", kAda},         GenerationRule{"L40S", kAda},
    GenerationRule{"L4", kAda},          GenerationRule{"A100", kAmpere},
    GenerationRule{"A800", kAmpere},     GenerationRule{"A30", kAmpere},
    GenerationRule{"A40", kAmpere},      GenerationRule{"A10", kAmpere},
    GenerationRule{"A10G", kAmpere},     GenerationRule{"T4", kTuring},
    GenerationRule{"V100", kVolta},      GenerationRule{"V100S", kVolta},
};

}  // namespace

std::optional<GpuGeneration> GenerationOf(std::string_view model) {
  // Split on anything that is not a letter or digit: "NVIDIA A100-SXM4-80GB" -> NVIDIA A100 ...
  size_t i = 0;
  while (i < model.size()) {
    while (i < model.size() && !std::isalnum(static_cast<unsigned char>(model[i]))) ++i;
    size_t start = i;
    while (i < model.size() && std::isalnum(static_cast<unsigned char>(model[i]))) ++i;
    std::string_view word = model.substr(start, i - start);
    for (const auto& rule : kGenerationRules) {
      if (word == rule.token) return rule.generation;
    }
  }
  return std::nullopt;
}

}  // namespace nccl_triage::checks
