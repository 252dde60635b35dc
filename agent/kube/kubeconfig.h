// Kubeconfig: where `nccl-triage triage` finds the API server and its credentials when it runs
// outside the cluster, read the way kubectl reads them.
//
// The files are parsed from text (yaml-cpp) and merged as kubectl merges a KUBECONFIG list: the
// first file that sets current-context wins, and a cluster, context or user is taken from the
// first file that names it. The chosen context becomes an ApiAccess (kube/kube_api.h): the
// server, its CA (inline data or a file, relative paths from the file's folder), and a bearer
// token, a token file or a client certificate and key.
//
// Credential plugins (`exec`, `auth-provider`) are refused with a line that says what to use
// instead: running a program named in a file is more than a diagnostic tool should do on its
// own, and a token from `kubectl create token` works everywhere. Basic auth and plain-HTTP
// servers are refused too. Errors name the file and the entry.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kube/kube_api.h"

namespace nccl_triage {

struct KubeconfigFile {
  std::string path;  // for messages and relative paths
  std::string text;
};

// The merged files' context `context` (empty: current-context) as an ApiAccess.
StatusOr<ApiAccess> ResolveKubeconfig(const std::vector<KubeconfigFile>& files,
                                      std::string_view context);

// Which kubeconfig files to read, as kubectl chooses them: `flag` (--kubeconfig) alone when
// given; else every entry of `env` ($KUBECONFIG, colon-separated); else `home`/.kube/config.
// The caller skips the ones that do not exist (kubectl does too, except for the flag's).
std::vector<std::string> KubeconfigCandidates(const std::string& flag, const std::string& env,
                                              const std::string& home);

// "https://10.0.0.1:6443/k8s/clusters/c-1" -> host, port (443 by default) and base path.
// Errors for another scheme (http:// included: the token would travel in the clear).
Status ParseServerUrl(std::string_view url, ApiAccess* access);

// Standard base64 (with or without padding, whitespace ignored); nullopt-like error on garbage.
StatusOr<std::string> DecodeBase64(std::string_view text);

}  // namespace nccl_triage
