#include "kube/kube_client.h"

#include <httplib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "base/files.h"
#include "base/log.h"
#include "core/json_text.h"

namespace nccl_triage {

struct InClusterKubeClient::Impl {
  ApiAccess access;
  KubeTimeouts timeouts;
  std::mutex mu;
  std::vector<int> memory_files;  // inline PEM material, as /proc/self/fd/N paths for OpenSSL
  std::string ca_path, cert_path, key_path;  // as OpenSSL opens them
  std::unique_ptr<httplib::SSLClient> client;
  // Watches: a connection of their own (a watch lasts minutes), made at the first one.
  std::mutex watch_mu;
  std::unique_ptr<httplib::SSLClient> watch_client;

  // A client of the API server with these read and connect settings.
  std::unique_ptr<httplib::SSLClient> MakeClient(std::chrono::milliseconds read_timeout) const;

  ~Impl() {
    client.reset();
    watch_client.reset();
    for (int fd : memory_files) ::close(fd);
  }
};

namespace {

constexpr size_t kMaxErrorBody = 64 << 10;

std::string DescribeError(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "connection failed";
    case httplib::Error::ConnectionTimeout:
      return "connect timeout";
    case httplib::Error::Read:
      return "timeout or connection reset while reading the response";
    case httplib::Error::Write:
      return "connection reset while sending the request";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLLoadingCerts:
      return "TLS: cannot load the CA certificate";
    case httplib::Error::SSLServerVerification:
      return "TLS: the API server's certificate does not verify against the configured CA";
    default:
      return "request failed: " + httplib::to_string(e);
  }
}

std::string PodPath(const std::string& ns, const std::string& pod) {
  return "/api/v1/namespaces/" + UrlEncode(ns) + "/pods/" + UrlEncode(pod);
}

// PEM held in memory becomes a file OpenSSL can open by path (a memfd, never on disk), so inline
// kubeconfig data and files take the same code path in cpp-httplib.
StatusOr<std::string> MemoryFile(const std::string& name, const std::string& data,
                                 std::vector<int>& fds) {
  int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) return Unavailable("memfd_create: " + std::string(std::strerror(errno)));
  fds.push_back(fd);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Unavailable("cannot hold " + name + " in memory");
    done += static_cast<size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

// The path of a PEM given inline or as a file; empty when neither is given.
StatusOr<std::string> PemPath(const std::string& what, const std::string& pem,
                              const std::string& file, std::vector<int>& fds) {
  if (!pem.empty()) return MemoryFile(what, pem, fds);
  if (file.empty()) return std::string();
  auto read = ReadWholeFile(file, what);
  if (!read.ok()) return read.status();
  return file;
}

}  // namespace

StatusOr<ApiAccess> InClusterAccess(const InClusterOptions& options) {
  if (options.host.empty()) {
    return InvalidArgument("no Kubernetes API host (KUBERNETES_SERVICE_HOST is not set)");
  }
  ApiAccess a;
  a.host = options.host;
  a.port = options.port;
  a.ca_file = options.service_account_dir + "/ca.crt";
  a.token_file = options.service_account_dir + "/token";
  for (const auto& [path, what] : {std::pair{a.ca_file, "service account CA"},
                                   std::pair{a.token_file, "service account token"}}) {
    auto read = ReadWholeFile(path, what);
    if (!read.ok()) return read.status();
  }
  auto ns = ReadWholeFile(options.service_account_dir + "/namespace", "service account namespace");
  if (ns.ok()) a.default_namespace = TrimToken(std::move(ns).value());
  a.source = "the pod's service account (" + options.service_account_dir + ")";
  return a;
}

StatusOr<std::unique_ptr<InClusterKubeClient>> InClusterKubeClient::Create(
    InClusterOptions options) {
  auto access = InClusterAccess(options);
  if (!access.ok()) return access.status();
  KubeTimeouts t;
  t.connect = options.connect_timeout;
  t.read = options.read_timeout;
  t.write = options.write_timeout;
  t.user_agent = options.user_agent;
  return Connect(*access, t);
}

StatusOr<std::unique_ptr<InClusterKubeClient>> InClusterKubeClient::Connect(
    const ApiAccess& access, const KubeTimeouts& timeouts) {
  if (access.host.empty()) return InvalidArgument("no Kubernetes API host");
  auto impl = std::make_unique<Impl>();
  impl->access = access;
  impl->timeouts = timeouts;
  auto ca = PemPath("CA certificate", access.ca_pem, access.ca_file, impl->memory_files);
  if (!ca.ok()) return ca.status();
  auto cert = PemPath("client certificate", access.client_cert_pem, access.client_cert_file,
                      impl->memory_files);
  if (!cert.ok()) return cert.status();
  auto key =
      PemPath("client key", access.client_key_pem, access.client_key_file, impl->memory_files);
  if (!key.ok()) return key.status();
  if (cert->empty() != key->empty()) {
    return InvalidArgument("a client certificate needs its key, and a key its certificate");
  }
  if (!access.token_file.empty()) {
    auto read = ReadWholeFile(access.token_file, "token");
    if (!read.ok()) return read.status();
  }
  impl->ca_path = *ca;
  impl->cert_path = *cert;
  impl->key_path = *key;
  impl->client = impl->MakeClient(timeouts.read);
  if (!impl->client->is_valid()) {
    return InvalidArgument("the client certificate and key do not load (not PEM, or not a pair)");
  }
  return std::unique_ptr<InClusterKubeClient>(new InClusterKubeClient(std::move(impl)));
}

std::unique_ptr<httplib::SSLClient> InClusterKubeClient::Impl::MakeClient(
    std::chrono::milliseconds read_timeout) const {
  auto made = cert_path.empty()
                  ? std::make_unique<httplib::SSLClient>(access.host, access.port)
                  : std::make_unique<httplib::SSLClient>(access.host, access.port, cert_path,
                                                         key_path);
  auto& c = *made;
  if (!c.is_valid()) return made;
  if (!ca_path.empty()) c.set_ca_cert_path(ca_path.c_str());
  c.enable_server_certificate_verification(!access.insecure_skip_tls_verify);
  auto split = [](std::chrono::milliseconds ms, auto setter) {
    setter(static_cast<time_t>(ms.count() / 1000), static_cast<time_t>((ms.count() % 1000) * 1000));
  };
  split(timeouts.connect, [&](time_t s, time_t us) { c.set_connection_timeout(s, us); });
  split(read_timeout, [&](time_t s, time_t us) { c.set_read_timeout(s, us); });
  split(timeouts.write, [&](time_t s, time_t us) { c.set_write_timeout(s, us); });
  c.set_keep_alive(true);
  // A PATCH or POST goes out as two writes (headers, then body): with Nagle's algorithm the body
  // waits for the ACK of the headers, which the server delays (40 ms on Linux) — per request, on
  // a kept-alive connection (README, the bench_triage row).
  c.set_tcp_nodelay(true);
  return made;
}

InClusterKubeClient::InClusterKubeClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
InClusterKubeClient::~InClusterKubeClient() = default;

namespace {

// The request headers, with the bearer token when there is one (re-read from its file).
bool Headers(const ApiAccess& access, const std::string& user_agent, httplib::Headers* headers,
             std::string* error) {
  *headers = {{"Accept", "application/json"}, {"User-Agent", user_agent}};
  std::string token = access.token;
  if (!access.token_file.empty()) {
    auto read = ReadWholeFile(access.token_file, "token");
    if (!read.ok()) {
      *error = read.status().message();
      return false;
    }
    token = std::move(read).value();
  }
  token = TrimToken(std::move(token));
  if (!token.empty()) headers->emplace("Authorization", "Bearer " + token);
  return true;
}

}  // namespace

KubeResponse InClusterKubeClient::Send(const std::string& method, const std::string& path,
                                       const std::string& content_type, const std::string& body) {
  KubeResponse out;
  httplib::Headers headers;
  if (!Headers(impl_->access, impl_->timeouts.user_agent, &headers, &out.error)) return out;
  const std::string full = impl_->access.base_path + path;
  std::lock_guard lock(impl_->mu);
  httplib::Result res = method == "GET" ? impl_->client->Get(full, headers)
                        : method == "PATCH"
                            ? impl_->client->Patch(full, headers, body, content_type)
                        : method == "PUT" ? impl_->client->Put(full, headers, body, content_type)
                        : method == "DELETE"
                            ? impl_->client->Delete(full, headers, body, content_type)
                            : impl_->client->Post(full, headers, body, content_type);
  if (!res) {
    out.error = DescribeError(res.error());
    return out;
  }
  out.status = res->status;
  out.body = res->body;
  if (res->has_header("Retry-After"))
    out.retry_after = ParseRetryAfter(res->get_header_value("Retry-After"));
  return out;
}

KubeResponse InClusterKubeClient::StreamPodLog(const std::string& ns, const std::string& pod,
                                               const PodLogQuery& query, const LogChunkSink& sink) {
  KubeResponse out;
  httplib::Headers headers;
  if (!Headers(impl_->access, impl_->timeouts.user_agent, &headers, &out.error)) return out;
  const std::string path =
      impl_->access.base_path + PodPath(ns, pod) + "/log" + PodLogQueryString(query);
  bool stopped = false;
  uint64_t delivered = 0;
  std::lock_guard lock(impl_->mu);
  httplib::Result res = impl_->client->Get(
      path, headers,
      [&](const httplib::Response& r) {
        out.status = r.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (out.ok()) {
          // limitBytes is bounded here too: a server (or a proxy) that ignores it must not make
          // us read a log without end.
          bool full = false;
          if (query.limit_bytes > 0) {
            const auto left = static_cast<uint64_t>(query.limit_bytes) - delivered;
            if (n >= left) {
              n = static_cast<size_t>(left);
              full = true;
            }
          }
          delivered += n;
          stopped = (n > 0 && !sink(std::string_view(data, n))) || full;
          return !stopped;
        }
        out.body.append(data,
                        std::min(n, kMaxErrorBody - std::min(kMaxErrorBody, out.body.size())));
        return true;
      });
  if (!res && !(stopped && res.error() == httplib::Error::Canceled)) {
    out.error = DescribeError(res.error());
    if (out.status != 0 && out.ok()) out.error = "log stream broken: " + out.error;
    out.status = 0;
  }
  return out;
}

KubeResponse InClusterKubeClient::WatchNodes(const NodeWatchQuery& query, const LineSink& sink,
                                             std::stop_token stop) {
  KubeResponse out;
  httplib::Headers headers;
  if (!Headers(impl_->access, impl_->timeouts.user_agent, &headers, &out.error)) return out;
  const std::string path = impl_->access.base_path + "/api/v1/nodes" + NodeWatchQueryString(query);
  std::lock_guard lock(impl_->watch_mu);
  if (!impl_->watch_client) {
    // Quiet for at most timeoutSeconds (the API server's bookmarks come about once a minute, and
    // it ends the watch then): a read waits that long and a little more before it gives up.
    impl_->watch_client = impl_->MakeClient(
        std::chrono::seconds(std::max(query.timeout_seconds, 1) + 30) + impl_->timeouts.read);
  }
  httplib::SSLClient& client = *impl_->watch_client;
  // A stop from another thread shuts the socket down, again and again until the read has
  // returned: one shutdown could come just before the request opens its socket and be lost.
  const std::thread::id watcher = std::this_thread::get_id();
  std::atomic<bool> done{false};
  std::stop_callback on_stop(stop, [&] {
    if (std::this_thread::get_id() == watcher) return;  // stopped already: not started below
    while (!done.load()) {
      client.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  if (stop.stop_requested()) {
    done = true;
    out.status = 200;
    out.error = "stopped";
    return out;
  }
  std::string line;
  bool too_long = false;
  bool refused = false;  // the sink said stop
  httplib::Result res = client.Get(
      path, headers,
      [&](const httplib::Response& r) {
        out.status = r.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (!out.ok()) {
          out.body.append(data,
                          std::min(n, kMaxErrorBody - std::min(kMaxErrorBody, out.body.size())));
          return true;
        }
        std::string_view chunk(data, n);
        while (!chunk.empty()) {
          const size_t nl = chunk.find('\n');
          const std::string_view part = chunk.substr(0, nl);
          if (line.size() + part.size() > kMaxWatchLineBytes) {
            too_long = true;
            return false;
          }
          line.append(part);
          if (nl == std::string_view::npos) break;
          chunk.remove_prefix(nl + 1);
          if (!line.empty() && line.back() == '\r') line.pop_back();
          if (!line.empty() && !sink(line)) {
            refused = true;
            return false;
          }
          line.clear();
          if (stop.stop_requested()) return false;
        }
        return !stop.stop_requested();
      });
  done = true;
  if (too_long) {
    out.status = 0;
    out.error = "a watch event longer than " + std::to_string(kMaxWatchLineBytes) + " bytes";
    client.stop();  // the rest of that line is not read: the connection is not reusable
    return out;
  }
  if (refused) {
    client.stop();
    out.error = "stopped";  // the sink's own reason is the caller's
    return out;
  }
  if (stop.stop_requested()) {
    out.status = 200;
    out.error = "stopped";
    client.stop();
    return out;
  }
  if (!res) {
    out.error = DescribeError(res.error());
    if (out.ok()) out.error = "watch stream broken: " + out.error;
    out.status = 0;
    return out;
  }
  // The server ended the stream: a last line without its newline is still an event.
  if (out.ok() && !line.empty() && !sink(line)) client.stop();
  return out;
}

KubeResponse InClusterKubeClient::ListNamespacedPods(const std::string& ns,
                                                     const PodListQuery& query) {
  return Send("GET", "/api/v1/namespaces/" + UrlEncode(ns) + "/pods" + PodListQueryString(query),
              "", "");
}

KubeResponse InClusterKubeClient::PatchPodAnnotations(const std::string& ns, const std::string& pod,
                                                      const AnnotationPatch& annotations) {
  return Send("PATCH", PodPath(ns, pod), "application/merge-patch+json",
              DumpJson(AnnotationPatchBody(annotations)));
}

KubeResponse InClusterKubeClient::PatchPodLabels(const std::string& ns, const std::string& pod,
                                                 const LabelPatch& labels) {
  return Send("PATCH", PodPath(ns, pod), "application/merge-patch+json",
              DumpJson(LabelPatchBody(labels)));
}

KubeResponse InClusterKubeClient::PatchNodeCondition(const std::string& node,
                                                     const NodeCondition& c) {
  return Send("PATCH", "/api/v1/nodes/" + UrlEncode(node) + "/status",
              "application/strategic-merge-patch+json", DumpJson(NodeConditionPatchBody(c)));
}

KubeResponse InClusterKubeClient::CreateEvent(const KubeEvent& event) {
  return Send("POST", "/api/v1/namespaces/" + UrlEncode(event.ns) + "/events", "application/json",
              DumpJson(EventBody(event)));
}

KubeResponse InClusterKubeClient::GetPod(const std::string& ns, const std::string& name) {
  return Send("GET", PodPath(ns, name), "", "");
}

KubeResponse InClusterKubeClient::ListPods(const std::string& field_selector) {
  std::string path = "/api/v1/pods";
  if (!field_selector.empty()) path += "?fieldSelector=" + UrlEncode(field_selector);
  return Send("GET", path, "", "");
}

KubeResponse InClusterKubeClient::PatchPodAnnotationsIfUid(const std::string& ns,
                                                           const std::string& pod,
                                                           const std::string& uid,
                                                           const AnnotationPatch& annotations) {
  return Send("PATCH", PodPath(ns, pod), "application/merge-patch+json",
              DumpJson(AnnotationPatchBody(annotations, uid)));
}

KubeResponse InClusterKubeClient::GetNode(const std::string& name) {
  return Send("GET", "/api/v1/nodes/" + UrlEncode(name), "", "");
}

KubeResponse InClusterKubeClient::CreateTokenReview(const std::string& token,
                                                    const std::vector<std::string>& audiences) {
  return Send("POST", "/apis/authentication.k8s.io/v1/tokenreviews", "application/json",
              DumpJson(TokenReviewBody(token, audiences)));
}

KubeResponse InClusterKubeClient::CreateSubjectAccessReview(const AccessReviewRequest& request) {
  return Send("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json",
              DumpJson(SubjectAccessReviewBody(request)));
}

KubeResponse InClusterKubeClient::ListNodes(const NodeListQuery& query) {
  return Send("GET", "/api/v1/nodes" + PodListQueryString(query), "", "");
}

KubeResponse InClusterKubeClient::PatchNode(const std::string& node, const NodePatch& patch) {
  return Send("PATCH", "/api/v1/nodes/" + UrlEncode(node), "application/merge-patch+json",
              DumpJson(NodePatchBody(patch)));
}

KubeResponse InClusterKubeClient::ListAllPods(const PodListQuery& query) {
  return Send("GET", "/api/v1/pods" + PodListQueryString(query), "", "");
}

KubeResponse InClusterKubeClient::RemoveNodeCondition(const std::string& node, int index,
                                                      const std::string& type) {
  return Send("PATCH", "/api/v1/nodes/" + UrlEncode(node) + "/status",
              "application/json-patch+json", DumpJson(NodeConditionRemovalBody(index, type)));
}

KubeResponse InClusterKubeClient::GetConfigMap(const std::string& ns, const std::string& name) {
  return Send("GET", "/api/v1/namespaces/" + UrlEncode(ns) + "/configmaps/" + UrlEncode(name), "",
              "");
}

KubeResponse InClusterKubeClient::PutConfigMap(const std::string& ns, const std::string& name,
                                               const std::map<std::string, std::string>& data,
                                               const std::string& resource_version) {
  const std::string body = DumpJson(ConfigMapBody(ns, name, data, resource_version));
  const std::string dir = "/api/v1/namespaces/" + UrlEncode(ns) + "/configmaps";
  if (resource_version.empty()) return Send("POST", dir, "application/json", body);
  return Send("PUT", dir + "/" + UrlEncode(name), "application/json", body);
}

namespace {

std::string LeasePath(const std::string& ns) {
  return "/apis/coordination.k8s.io/v1/namespaces/" + UrlEncode(ns) + "/leases";
}

}  // namespace

KubeResponse InClusterKubeClient::GetLease(const std::string& ns, const std::string& name) {
  return Send("GET", LeasePath(ns) + "/" + UrlEncode(name), "", "");
}

KubeResponse InClusterKubeClient::CreateLease(const std::string& ns, const nlohmann::json& lease) {
  return Send("POST", LeasePath(ns), "application/json", DumpJson(lease));
}

KubeResponse InClusterKubeClient::UpdateLease(const std::string& ns, const std::string& name,
                                              const nlohmann::json& lease) {
  return Send("PUT", LeasePath(ns) + "/" + UrlEncode(name), "application/json", DumpJson(lease));
}

KubeResponse InClusterKubeClient::DeleteObject(const std::string& ns, const std::string& resource,
                                               const std::string& name) {
  std::string group;
  if (resource == "daemonsets" || resource == "deployments") {
    group = "/apis/apps/v1";
  } else if (resource == "configmaps") {
    group = "/api/v1";
  } else if (resource == "leases") {
    group = "/apis/coordination.k8s.io/v1";
  } else {
    KubeResponse r;
    r.error = "cannot delete " + resource;
    return r;
  }
  const nlohmann::json options = {
      {"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Background"}};
  return Send("DELETE",
              group + "/namespaces/" + UrlEncode(ns) + "/" + resource + "/" + UrlEncode(name),
              "application/json", DumpJson(options));
}

}  // namespace nccl_triage
