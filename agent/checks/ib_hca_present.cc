// ib.hca_present: RDMA hardware on the PCI bus must be registered as a device in
// sys/class/infiniband; with expect.hcas configured, their number must match.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 130 (checks/check.h).
NT_HOST_CHECK(IbHcaPresent, 130,
    CauseInfo{"ib.hca_present", kIb, kHost, kNone, "HCA present",
              "RDMA-capable PCI devices exist but no /sys/class/infiniband device is registered: "
              "the HCA driver is not bound or failed to load, so NCCL finds no IB device.",
              "Load the HCA driver (modprobe mlx5_ib), check dmesg for firmware or PCI errors, "
              "and reseat or replace the card if it does not enumerate.",
              "`sys/bus/pci/devices/*/{vendor,class}`, `sys/class/infiniband/*`",
              "fail when InfiniBand PCI functions exist but no RDMA device is registered, or "
              "fewer HCAs than `expect.hcas`; warn for RoCE-capable functions without an RDMA "
              "device; skip with no RDMA hardware"});
namespace {

std::string DescribePci(const PciDevice& d) {
  return HexDigits(d.vendor, 4) + ":" + HexDigits(d.device, 4) + " class 0x" +
         HexDigits(d.class_code, 6);
}

std::string DescribeHca(const IbDevice& d) {
  std::vector<std::string> parts;
  if (d.hca_type.ok()) parts.push_back(*d.hca_type.value);
  if (d.fw_ver.ok()) parts.push_back("fw " + *d.fw_ver.value);
  if (d.board_id.ok()) parts.push_back(*d.board_id.value);
  if (!d.pci_bdf.empty()) parts.push_back(d.pci_bdf);
  return parts.empty() ? "registered" : Join(parts, " ");
}

}  // namespace

Finding IbHcaPresent(const NodeSnapshot& s, const Config& c, const CheckContext&) {
  FindingBuilder b(ids::kIbHcaPresent);
  const auto rdma_pci = RdmaPciDevices(s);
  const std::optional<int> expected = c.expect.hcas;
  if (expected) b.Add("expected HCAs", std::to_string(*expected), "config: expect.hcas");

  if (s.ib_devices.empty()) {
    b.Add("sys/class/infiniband", s.infiniband_class_present ? "present, no device" : "absent",
          "sys/class/infiniband");
    for (const auto* d : rdma_pci) {
      b.Add("PCI " + d->bdf, DescribePci(*d), "sys/bus/pci/devices/" + d->bdf);
    }
    for (const char* m : {"mlx5_core", "mlx5_ib", "ib_core"}) {
      if (FindModule(s, m) != nullptr) {
        b.Add(std::string("module ") + m, ModuleLoaded(s, m) ? "loaded" : "not loaded",
              ModuleSource(s, m));
      }
    }
    bool ib_class = false;
    for (const auto* d : rdma_pci) ib_class |= IsInfiniBandClassPci(*d);
    if (ib_class) {
      return b.Fail(std::to_string(rdma_pci.size()) +
                    " RDMA PCI function(s) but no device in sys/class/infiniband: the HCA driver "
                    "is not bound or not loaded");
    }
    if (!rdma_pci.empty()) {
      if (expected && *expected > 0) {
        return b.Fail("expected " + std::to_string(*expected) +
                      " HCAs; Mellanox Ethernet functions are present but none is registered as "
                      "an RDMA device (mlx5_ib not loaded?)");
      }
      return b.Warn(std::to_string(rdma_pci.size()) +
                    " RDMA-capable Ethernet function(s) without a registered RDMA device: RoCE is "
                    "unavailable (mlx5_ib not loaded?)");
    }
    if (!s.pci_error.empty()) {
      b.Add("PCI scan", "unreadable (" + s.pci_error + ")", "sys/bus/pci/devices");
      return b.Skip("no RDMA device registered and the PCI bus could not be read");
    }
    b.Add("RDMA-capable PCI functions", "none", "sys/bus/pci/devices");
    if (expected && *expected > 0) {
      return b.Fail("expected " + std::to_string(*expected) +
                    " HCAs but the node has no RDMA hardware at all");
    }
    return b.Skip("no RDMA hardware on this node");
  }

  std::vector<std::string> names;
  for (const auto& d : s.ib_devices) {
    names.push_back(d.name);
    b.Add(d.name, DescribeHca(d), "sys/class/infiniband/" + d.name);
  }
  const int found = static_cast<int>(s.ib_devices.size());
  if (expected && found < *expected) {
    return b.Fail("expected " + std::to_string(*expected) + " HCAs, found " +
                  std::to_string(found) + " (" + Join(names) + ")");
  }

  // InfiniBand-class PCI functions that did not register, when every device's PCI address is
  // known. Unregistered functions can be VFs handed to VMs, hence only a warning.
  bool all_bdfs_known = true;
  for (const auto& d : s.ib_devices) all_bdfs_known &= !d.pci_bdf.empty();
  std::vector<std::string> unregistered;
  if (all_bdfs_known) {
    for (const auto* p : rdma_pci) {
      if (!IsInfiniBandClassPci(*p)) continue;
      bool registered = false;
      for (const auto& d : s.ib_devices) registered |= d.pci_bdf == p->bdf;
      if (!registered) {
        unregistered.push_back(p->bdf);
        b.Add("PCI " + p->bdf, DescribePci(*p) + ", not registered",
              "sys/bus/pci/devices/" + p->bdf);
      }
    }
  }
  if (expected && found > *expected) {
    return b.Warn("expected " + std::to_string(*expected) + " HCAs, found " +
                  std::to_string(found) + " (" + Join(names) + ")");
  }
  if (!unregistered.empty()) {
    return b.Warn(std::to_string(found) + " HCA(s) registered, but InfiniBand PCI function(s) " +
                  Join(unregistered) + " have no RDMA device");
  }
  return b.Pass(std::to_string(found) + " HCA(s) registered: " + Join(names));
}

}  // namespace nccl_triage::checks
