#include "app/services.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace nccl_triage {
namespace {

// The table in use: the module's once loaded (one per process), or the one a test linked in.
const Services* services_in_use = nullptr;

StatusOr<const Services*> Open(const std::string& path) {
  // RTLD_LOCAL: the module's copies of the component libraries stay private to it.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return NotFound(why != nullptr ? why : path + ": cannot load");
  }
  auto entry = reinterpret_cast<ServicesEntryFn>(::dlsym(handle, kServicesSymbol));
  const Services* services = entry != nullptr ? entry() : nullptr;
  if (services == nullptr) {
    ::dlclose(handle);
    return InvalidArgument(path + ": no " + kServicesSymbol +
                           " symbol (not an nccl-triage module)");
  }
  if (services->abi != kServicesAbi || std::string(services->version) != NCCL_TRIAGE_VERSION) {
    std::string found = "ABI " + std::to_string(services->abi) + ", version " + services->version;
    ::dlclose(handle);
    return InvalidArgument(path + " is " + found + "; this binary needs ABI " +
                           std::to_string(kServicesAbi) + ", version " + NCCL_TRIAGE_VERSION +
                           " (install the module built with this binary)");
  }
  return services;  // never closed: the subcommand runs until exit
}

// $NCCL_TRIAGE_SERVICES exactly, else beside the binary, then in ../lib/nccl-triage/.
std::vector<std::string> ServicesCandidates(const std::string& self_exe) {
  if (const char* explicit_path = std::getenv("NCCL_TRIAGE_SERVICES");
      explicit_path != nullptr && *explicit_path != '\0') {
    return {explicit_path};
  }
  const std::filesystem::path dir = std::filesystem::path(self_exe).parent_path();
  return {(dir / kServicesFile).string(),
          (dir.parent_path() / "lib" / "nccl-triage" / kServicesFile).string()};
}

}  // namespace

StatusOr<const Services*> LoadServices(const std::string& self_exe) {
  if (services_in_use != nullptr) return services_in_use;
  std::string tried;
  for (const std::string& path : ServicesCandidates(self_exe)) {
    if (!std::filesystem::exists(path)) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    auto opened = Open(path);
    if (!opened.ok()) return opened.status();  // present but broken: say why, do not hide it
    services_in_use = *opened;
    return services_in_use;
  }
  return NotFound("the serving module " + std::string(kServicesFile) +
                  " is not installed (looked at " + tried +
                  "; NCCL_TRIAGE_SERVICES names another path)");
}

void UseLinkedServices(const Services* services) { services_in_use = services; }

}  // namespace nccl_triage
