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

// $NCCL_TRIAGE_SERVICES when set (exactly that file).
std::string ExplicitPath() {
  const char* path = std::getenv("NCCL_TRIAGE_SERVICES");
  return path != nullptr ? path : "";
}

}  // namespace

StatusOr<const Services*> LoadServices(const std::string& self_exe) {
  if (services_in_use != nullptr) return services_in_use;
  const std::string explicit_path = ExplicitPath();
  const std::filesystem::path dir = std::filesystem::path(self_exe).parent_path();
  const std::vector<std::string> candidates =
      !explicit_path.empty()
          ? std::vector<std::string>{explicit_path}
          : std::vector<std::string>{
                (dir / kServicesFile).string(),
                (dir.parent_path() / "lib" / "nccl-triage" / kServicesFile).string()};
  std::string tried;
  for (const std::string& path : candidates) {
    if (!std::filesystem::exists(path)) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    auto opened = Open(path);
    if (!opened.ok()) return opened.status();  // present but broken: say why, do not hide it
    services_in_use = *opened;
    return services_in_use;
  }
  if (!explicit_path.empty()) {
    return NotFound(
        "NCCL_TRIAGE_SERVICES names " + explicit_path +
        ", which does not exist (unset it to use the module installed with the binary)");
  }
  return NotFound("the serving module " + std::string(kServicesFile) +
                  " is not installed (looked at " + tried +
                  "; NCCL_TRIAGE_SERVICES names another path)");
}

void UseLinkedServices(const Services* services) { services_in_use = services; }

}  // namespace nccl_triage
