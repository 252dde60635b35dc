// Shared vocabulary of the host checks: building findings from the catalogue, naming ports and
// their sysfs paths, recognising RDMA and GPU hardware, and formatting values for evidence.
// Everything here is a pure function of its arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/text.h"
#include "core/catalogue.h"
#include "core/model.h"
#include "core/snapshot.h"

namespace nccl_triage::checks {

// Accumulates the evidence of one check and closes it with a status and a one-line message.
// The id's class and remedy come from its catalogue entry (a CauseId cannot name a missing one).
class FindingBuilder {
 public:
  explicit FindingBuilder(CauseId id);

  FindingBuilder& Add(std::string key, std::string value, std::string source);
  // A value read from a file: its value, or the reason it could not be read. `path` is the
  // file's usual place, used when the gatherer recorded no source.
  template <typename T>
  FindingBuilder& AddFact(std::string key, const Fact<T>& fact, std::string_view path);

  Finding Pass(std::string message) { return Close(CheckStatus::kPass, std::move(message)); }
  Finding Warn(std::string message) { return Close(CheckStatus::kWarn, std::move(message)); }
  Finding Fail(std::string message) { return Close(CheckStatus::kFail, std::move(message)); }
  Finding Skip(std::string message) { return Close(CheckStatus::kSkip, std::move(message)); }
  Finding Close(CheckStatus status, std::string message);

 private:
  Finding finding_;
};

// Evidence values and messages are cut to these sizes (a 10 MB sysfs value echoed whole would make
// 8 MiB of report). Real values are far shorter: a sysfs attribute is at most a page.
inline constexpr size_t kMaxEvidenceValueBytes = 1024;
inline constexpr size_t kMaxMessageBytes = 2048;

// `text` when it fits in `max` bytes; otherwise its start, cut on a UTF-8 character boundary,
// and "... (N bytes)".
std::string CutText(std::string text, size_t max);

// Text of a value for evidence (doubles without trailing zeros, lids in hex, ...).
std::string ToText(const std::string& v);
std::string ToText(bool v);
std::string ToText(int v);
std::string ToText(int64_t v);
std::string ToText(uint32_t v);
std::string ToText(uint64_t v);
std::string ToText(double v);
std::string ToText(const LimitPair& v);

// The value of a fact, or "unreadable (<error>)".
template <typename T>
std::string FactText(const Fact<T>& fact) {
  if (fact.ok()) return ToText(*fact.value);
  return "unreadable (" + (fact.error.empty() ? std::string("unknown error") : fact.error) + ")";
}

// The fact's recorded source, or `path` when none was recorded.
template <typename T>
std::string SourceOr(const Fact<T>& fact, std::string_view path) {
  return fact.source.empty() ? std::string(path) : fact.source;
}

template <typename T>
FindingBuilder& FindingBuilder::AddFact(std::string key, const Fact<T>& fact,
                                        std::string_view path) {
  return Add(std::move(key), FactText(fact), SourceOr(fact, path));
}

// Lower-case hex digits, zero-padded to `width` ("15b3"); no "0x".
std::string HexDigits(uint64_t v, int width);

// "64 KiB", "8 MiB", "1 GiB", "1.5 GiB".
std::string FormatBytes(uint64_t bytes);
std::string FormatLimit(const Limit& limit, bool bytes);
std::string FormatRate(double gbps);  // "200 Gb/s"

// "mlx5_0/1" and "sys/class/infiniband/mlx5_0/ports/1/<leaf>" (the fact's own source wins when
// the gatherer recorded one).
std::string PortName(const IbDevice& dev, const IbPort& port);
std::string PortPath(const IbDevice& dev, const IbPort& port, std::string_view leaf);
template <typename T>
std::string SourceOf(const Fact<T>& fact, const IbDevice& dev, const IbPort& port,
                     std::string_view leaf) {
  return fact.source.empty() ? PortPath(dev, port, leaf) : fact.source;
}

// Port states as the kernel writes them ("4: ACTIVE", "5: LinkUp").
bool IsActive(const IbPort& port);
bool IsLinkUp(const IbPort& port);
bool IsInfiniBandLinkLayer(const IbPort& port);  // link_layer "InfiniBand"
bool IsEthernetLinkLayer(const IbPort& port);    // link_layer "Ethernet" (RoCE)

// RDMA hardware on the PCI bus: an InfiniBand controller (class 0x0207xx), or a Mellanox/NVIDIA
// networking function of any network class (ConnectX in Ethernet mode is RoCE-capable).
bool IsInfiniBandClassPci(const PciDevice& d);
bool IsRdmaCapablePci(const PciDevice& d);
std::vector<const PciDevice*> RdmaPciDevices(const NodeSnapshot& s);
// A registered RDMA device or an RDMA-capable PCI function: memlock, CAP_IPC_LOCK and the RDMA
// kernel modules matter only where this holds.
bool HasRdmaHardware(const NodeSnapshot& s);

// CapEff read and carrying CAP_IPC_LOCK (bit 14), which exempts memory registration from
// RLIMIT_MEMLOCK.
bool HasCapIpcLock(const NodeSnapshot& s);
// A soft memlock limit that lets NCCL register its buffers: unlimited, or at least `floor`
// (expect.memlock_min_bytes) when one is configured.
bool MemlockSufficient(const Limit& soft, const std::optional<uint64_t>& floor);

// NVIDIA GPUs known to the driver, else NVIDIA display-class PCI functions.
bool HasNvidiaGpu(const NodeSnapshot& s);
std::vector<const PciDevice*> NvidiaGpuPci(const NodeSnapshot& s);

// For checks that judge HCAs: a `skip` finding when the node has no registered RDMA device
// ("no RDMA hardware on this node", or "no RDMA device registered" when PCI shows some — then
// ib.hca_present carries the failure), std::nullopt when there are devices to judge.
std::optional<Finding> SkipWithoutHcas(CauseId id, const NodeSnapshot& s);

// Adds one evidence line with the link layer of each port ("mlx5_0/1 InfiniBand, ...").
void AddLinkLayers(FindingBuilder& b, const NodeSnapshot& s);

const KernelModule* FindModule(const NodeSnapshot& s, std::string_view name);
bool ModuleLoaded(const NodeSnapshot& s, std::string_view name);
std::string ModuleSource(const NodeSnapshot& s, std::string_view name);  // "sys/module/<name>"

// Dotted numeric versions ("535.129.03", "2.18.1", "5.8-3.0.7" -> 5,8,3,0,7). Empty when the text
// has no leading number.
std::vector<int> ParseVersion(std::string_view text);
// <0, 0, >0 like strcmp; missing trailing components count as 0.
int CompareVersions(const std::vector<int>& a, const std::vector<int>& b);

// What a GPU generation needs. Matched on the model name ("NVIDIA H100 80GB HBM3").
struct GpuGeneration {
  std::string_view name;        // "Hopper"
  std::string_view driver_min;  // minimum NVIDIA driver branch
  std::string_view nccl_min;    // minimum NCCL release
};
std::optional<GpuGeneration> GenerationOf(std::string_view model);

}  // namespace nccl_triage::checks
