// security.lsm: SELinux, AppArmor and seccomp. An enforcing policy does not prove a denial (that
// is in the audit log, which a node check cannot read), so confinement is a warning with the
// evidence; only seccomp strict mode, which permits nothing NCCL does, is a failure.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 90 (checks/check.h).
NT_HOST_CHECK(SecurityLsm, 90,
    CauseInfo{"security.lsm", kArch, kHost, kNone, "Security policy (SELinux/AppArmor/seccomp)",
              "An enforcing SELinux or AppArmor profile, or a restrictive seccomp filter, can "
              "deny the opens, mmaps and ioctls that verbs and CUDA IPC need.",
              "Run the workload with a profile that allows RDMA (container_t with "
              "container_use_devices, AppArmor unconfined or an rdma profile, seccomp "
              "Unconfined or a profile permitting the needed syscalls); check the audit log.",
              "`sys/fs/selinux/enforce`, `proc/self/attr/current`, `Seccomp` in "
              "`proc/self/status`",
              "warn for an enforcing AppArmor profile, SELinux enforcing in a confined domain, or "
              "a seccomp filter (a denial is only provable from the audit log); fail for seccomp "
              "strict mode"});
namespace {

// SELinux domains that are not confined in practice (privileged containers run as spc_t).
bool UnconfinedSelinuxType(std::string_view type) {
  return type == "spc_t" || type == "unconfined_t" || type == "kernel_t" ||
         type == "unconfined_service_t";
}

// The type of an SELinux context "user:role:type:level"; nullopt for anything else (an AppArmor
// label has a space before its mode and no colons).
std::optional<std::string> SelinuxType(const std::string& label) {
  if (label.find(' ') != std::string::npos) return std::nullopt;
  const size_t a = label.find(':');
  if (a == std::string::npos) return std::nullopt;
  const size_t b = label.find(':', a + 1);
  if (b == std::string::npos) return std::nullopt;
  const size_t c = label.find(':', b + 1);
  return label.substr(b + 1, c == std::string::npos ? std::string::npos : c - b - 1);
}

std::string Trim(std::string v) {
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ' || v.back() == '\0')) v.pop_back();
  return v;
}

}  // namespace

Finding SecurityLsm(const NodeSnapshot& s, const Config&, const CheckContext&) {
  FindingBuilder b(ids::kSecurityLsm);
  std::vector<std::string> confined;
  bool looked = false;

  // SELinux: sys/fs/selinux/enforce is absent when SELinux is disabled.
  bool selinux_enforcing = false;
  if (s.selinux_enforce.ok()) {
    looked = true;
    selinux_enforcing = *s.selinux_enforce.value == 1;
    b.Add("SELinux", selinux_enforcing ? "enforcing" : "permissive",
          SourceOr(s.selinux_enforce, "sys/fs/selinux/enforce"));
  } else if (s.selinux_enforce.error == "missing") {
    // Absence says SELinux is off, but alone it is too little to call the node unconfined.
    b.Add("SELinux", "not enabled", SourceOr(s.selinux_enforce, "sys/fs/selinux/enforce"));
  } else {
    b.AddFact("SELinux", s.selinux_enforce, "sys/fs/selinux/enforce");
  }

  // proc/self/attr/current holds the AppArmor profile ("name (enforce)") or the SELinux context
  // ("system_u:system_r:container_t:s0:c1,c2"), whichever LSM is the major one.
  if (s.apparmor_profile.ok()) {
    looked = true;
    const std::string label = Trim(*s.apparmor_profile.value);
    b.Add("LSM label", label, SourceOr(s.apparmor_profile, "proc/self/attr/current"));
    const std::optional<std::string> type = SelinuxType(label);
    if (label.size() > 10 && label.compare(label.size() - 10, 10, " (enforce)") == 0) {
      confined.push_back("AppArmor profile " + label);
    } else if (type && selinux_enforcing && !UnconfinedSelinuxType(*type)) {
      confined.push_back("SELinux enforcing in domain " + *type);
    }
  } else {
    b.AddFact("LSM label", s.apparmor_profile, "proc/self/attr/current");
  }
  if (selinux_enforcing && !s.apparmor_profile.ok()) {
    confined.push_back("SELinux enforcing (domain unknown)");
  }

  if (s.seccomp_mode.ok()) {
    looked = true;
    const int mode = *s.seccomp_mode.value;
    b.Add("Seccomp",
          mode == 0   ? "0 (disabled)"
          : mode == 1 ? "1 (strict)"
                      : "2 (filter)",
          SourceOr(s.seccomp_mode, "proc/self/status"));
    if (mode == 1) {
      return b.Fail("seccomp strict mode: only read, write, exit and sigreturn are allowed");
    }
    if (mode == 2) confined.push_back("seccomp filter");
  } else {
    b.AddFact("Seccomp", s.seccomp_mode, "proc/self/status");
  }

  if (!looked) return b.Skip("no security policy state could be read");
  if (!confined.empty()) {
    return b.Warn(Join(confined) +
                  ": may deny what verbs and CUDA IPC need; if NCCL fails, "
                  "look for denials in the audit log");
  }
  return b.Pass("no enforcing SELinux domain, AppArmor profile or seccomp filter");
}

}  // namespace nccl_triage::checks
