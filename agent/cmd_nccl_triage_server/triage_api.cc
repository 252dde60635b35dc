#include "cmd_nccl_triage_server/triage_api.h"

#include <cstdlib>
#include <filesystem>

#include "base/files.h"
#include "kube/kubeconfig.h"

namespace nccl_triage {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

constexpr size_t kMaxKubeconfigBytes = 4 << 20;

}  // namespace

StatusOr<ApiAccess> TriageApiAccess(const std::string& kubeconfig_flag,
                                    const std::string& context) {
  const std::vector<std::string> candidates =
      KubeconfigCandidates(kubeconfig_flag, Env("KUBECONFIG"), Env("HOME"));
  std::vector<KubeconfigFile> files;
  for (const std::string& path : candidates) {
    std::error_code ec;
    if (kubeconfig_flag.empty() && !std::filesystem::exists(path, ec)) {
      continue;  // kubectl skips KUBECONFIG entries that do not exist
    }
    auto text = ReadWholeFile(path, "kubeconfig", kMaxKubeconfigBytes);
    if (!text.ok()) return text.status();
    files.push_back({path, std::move(text).value()});
  }
  if (!files.empty()) return ResolveKubeconfig(files, context);
  const std::string host = Env("KUBERNETES_SERVICE_HOST");
  if (host.empty()) {
    return NotFound(
        "no Kubernetes API: no kubeconfig (--kubeconfig, KUBECONFIG or ~/.kube/config) and not "
        "in a pod (KUBERNETES_SERVICE_HOST is not set)");
  }
  if (!context.empty()) return InvalidArgument("--context needs a kubeconfig");
  InClusterOptions o;
  o.host = host;
  const std::string port = Env("KUBERNETES_SERVICE_PORT");
  if (!port.empty()) o.port = std::atoi(port.c_str());
  return InClusterAccess(o);
}

StatusOr<std::unique_ptr<InClusterKubeClient>> TriageClient(const ApiAccess& access) {
  KubeTimeouts t;
  t.read = std::chrono::seconds(30);
  t.user_agent = "nccl-triage-triage";
  return InClusterKubeClient::Connect(access, t);
}

}  // namespace nccl_triage
