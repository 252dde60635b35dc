#include "kube/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <map>
#include <optional>
#include <tuple>

namespace nccl_triage {
namespace {

// One named entry (cluster, context or user) and the file it came from.
struct Entry {
  YAML::Node node;
  const KubeconfigFile* file = nullptr;
};

std::string Dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// A path of the kubeconfig is relative to the folder of the file that holds it.
std::string Resolve(const std::string& path, const KubeconfigFile& file) {
  if (path.empty() || path.front() == '/') return path;
  return Dir(file.path) + "/" + path;
}

std::string Str(const YAML::Node& map, const char* key) {
  const YAML::Node v = map[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

// The first file's entry for each name in list `key` ("clusters", "contexts", "users").
Status Collect(const YAML::Node& root, const char* key, const char* inner,
               const KubeconfigFile& file, std::map<std::string, Entry>& out) {
  const YAML::Node list = root[key];
  if (!list || list.IsNull()) return Status::Ok();
  if (!list.IsSequence()) return InvalidArgument(file.path + ": '" + key + "' is not a list");
  for (const YAML::Node& item : list) {
    if (!item.IsMap())
      return InvalidArgument(file.path + ": an entry of '" + key + "' is not a map");
    const std::string name = Str(item, "name");
    const YAML::Node body = item[inner];
    if (name.empty() || !body || !body.IsMap()) {
      return InvalidArgument(file.path + ": an entry of '" + key + "' lacks 'name' or '" + inner +
                             "'");
    }
    out.emplace(name, Entry{body, &file});
  }
  return Status::Ok();
}

Status Pem(const Entry& e, const char* data_key, const char* file_key, std::string* pem,
           std::string* path) {
  const std::string data = Str(e.node, data_key);
  if (!data.empty()) {
    auto decoded = DecodeBase64(data);
    if (!decoded.ok()) {
      return InvalidArgument(e.file->path + ": " + data_key + " is not base64");
    }
    *pem = std::move(decoded).value();
    return Status::Ok();
  }
  *path = Resolve(Str(e.node, file_key), *e.file);
  return Status::Ok();
}

constexpr const char* kUseInstead =
    "nccl-triage does not run credential plugins; give it a token (kubectl create token "
    "<service-account>, in a kubeconfig user's 'token') or a client certificate, or run it in "
    "the cluster with a service account";

}  // namespace

StatusOr<std::string> DecodeBase64(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+') {
      v = 62;
    } else if (c == '/') {
      v = 63;
    } else if (c == '=') {
      padding = true;
      continue;
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    } else {
      return InvalidArgument("not base64");
    }
    if (padding) return InvalidArgument("not base64: data after '='");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (bits >= 6) return InvalidArgument("not base64: truncated");
  return out;
}

Status ParseServerUrl(std::string_view url, ApiAccess* access) {
  constexpr std::string_view kHttps = "https://";
  if (url.substr(0, kHttps.size()) != kHttps) {
    return InvalidArgument("server " + std::string(url) +
                           " is not https:// (a token would travel in the clear)");
  }
  std::string_view rest = url.substr(kHttps.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string base =
      slash == std::string_view::npos ? std::string() : std::string(rest.substr(slash));
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {  // [fd00::1]:6443
    const size_t close = authority.find(']');
    if (close == std::string_view::npos)
      return InvalidArgument("server " + std::string(url) + ": bad IPv6 address");
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':')
        return InvalidArgument("server " + std::string(url) + ": bad port");
      port = authority.substr(close + 2);
    }
  } else if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return InvalidArgument("server " + std::string(url) + " has no host");
  int p = 443;
  if (!port.empty()) {
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || ptr != port.data() + port.size() || p <= 0 || p > 65535) {
      return InvalidArgument("server " + std::string(url) + ": bad port");
    }
  }
  access->host = std::string(host);
  access->port = p;
  access->base_path = std::move(base);
  return Status::Ok();
}

std::vector<std::string> KubeconfigCandidates(const std::string& flag, const std::string& env,
                                              const std::string& home) {
  if (!flag.empty()) return {flag};
  std::vector<std::string> out;
  if (!env.empty()) {
    size_t start = 0;
    while (start <= env.size()) {
      const size_t colon = env.find(':', start);
      std::string part =
          env.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!part.empty()) out.push_back(std::move(part));
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    return out;
  }
  if (!home.empty()) out.push_back(home + "/.kube/config");
  return out;
}

StatusOr<ApiAccess> ResolveKubeconfig(const std::vector<KubeconfigFile>& files,
                                      std::string_view context_flag) {
  if (files.empty()) return InvalidArgument("no kubeconfig file");
  std::map<std::string, Entry> clusters, contexts, users;
  std::string current;
  std::vector<YAML::Node> roots;  // keeps the nodes the entries point into alive
  for (const KubeconfigFile& f : files) {
    YAML::Node root;
    try {
      root = YAML::Load(f.text);
    } catch (const YAML::Exception& e) {
      return InvalidArgument(f.path + ": not YAML (line " + std::to_string(e.mark.line + 1) + ": " +
                             e.msg + ")");
    }
    if (root.IsNull()) continue;
    if (!root.IsMap()) return InvalidArgument(f.path + ": not a kubeconfig (not a map)");
    roots.push_back(root);
    for (auto [key, inner, out] :
         {std::tuple{"clusters", "cluster", &clusters},
          std::tuple{"contexts", "context", &contexts}, std::tuple{"users", "user", &users}}) {
      Status s = Collect(root, key, inner, f, *out);
      if (!s.ok()) return s;
    }
    if (current.empty()) current = Str(root, "current-context");
  }
  const std::string name = context_flag.empty() ? current : std::string(context_flag);
  const std::string where = files.size() == 1 ? files.front().path : "the KUBECONFIG files";
  if (name.empty()) {
    return InvalidArgument(where + " has no current-context (choose one with --context)");
  }
  auto ctx = contexts.find(name);
  if (ctx == contexts.end()) return InvalidArgument(where + " has no context '" + name + "'");
  const std::string cluster_name = Str(ctx->second.node, "cluster");
  const std::string user_name = Str(ctx->second.node, "user");
  auto cluster = clusters.find(cluster_name);
  if (cluster == clusters.end()) {
    return InvalidArgument(where + ": context '" + name + "' names cluster '" + cluster_name +
                           "', which is not defined");
  }

  ApiAccess a;
  const Entry& c = cluster->second;
  const std::string server = Str(c.node, "server");
  if (server.empty()) {
    return InvalidArgument(c.file->path + ": cluster '" + cluster_name + "' has no server");
  }
  Status s = ParseServerUrl(server, &a);
  if (!s.ok())
    return InvalidArgument(c.file->path + ": cluster '" + cluster_name + "': " + s.message());
  if (c.node["proxy-url"]) {
    return InvalidArgument(c.file->path + ": cluster '" + cluster_name +
                           "' goes through proxy-url, which nccl-triage does not support");
  }
  s = Pem(c, "certificate-authority-data", "certificate-authority", &a.ca_pem, &a.ca_file);
  if (!s.ok()) return s;
  a.insecure_skip_tls_verify = Str(c.node, "insecure-skip-tls-verify") == "true";

  if (!user_name.empty()) {
    auto user = users.find(user_name);
    if (user == users.end()) {
      return InvalidArgument(where + ": context '" + name + "' names user '" + user_name +
                             "', which is not defined");
    }
    const Entry& u = user->second;
    const std::string who = u.file->path + ": user '" + user_name + "'";
    if (u.node["exec"]) {
      std::string command = u.node["exec"].IsMap() ? Str(u.node["exec"], "command") : "";
      return InvalidArgument(who + " gets its credentials from an exec plugin" +
                             (command.empty() ? std::string() : " (" + command + ")") + "; " +
                             kUseInstead);
    }
    if (u.node["auth-provider"]) {
      return InvalidArgument(who + " gets its credentials from an auth-provider plugin; " +
                             kUseInstead);
    }
    if (u.node["username"] || u.node["password"]) {
      return InvalidArgument(who + " uses basic auth, which Kubernetes removed; " + kUseInstead);
    }
    s = Pem(u, "client-certificate-data", "client-certificate", &a.client_cert_pem,
            &a.client_cert_file);
    if (!s.ok()) return s;
    s = Pem(u, "client-key-data", "client-key", &a.client_key_pem, &a.client_key_file);
    if (!s.ok()) return s;
    a.token = Str(u.node, "token");
    a.token_file = Resolve(Str(u.node, "tokenFile"), *u.file);
    const bool cert = !a.client_cert_pem.empty() || !a.client_cert_file.empty();
    const bool key = !a.client_key_pem.empty() || !a.client_key_file.empty();
    if (cert != key) {
      return InvalidArgument(who +
                             " has a client certificate without its key, or a key without "
                             "its certificate");
    }
  }
  a.default_namespace = Str(ctx->second.node, "namespace");
  a.source = "kubeconfig " + where + ", context " + name;
  return a;
}

}  // namespace nccl_triage
