// FakeApiServer: a Kubernetes API server over real HTTPS for the triage tests and the bench.
//
// It serves what `nccl-triage triage` reads and writes — namespaced pod lists (equality label
// selectors, spec.nodeName field selectors, pages of `limit` with a continue token), single pods,
// container logs (container, previous, timestamps, sinceSeconds, limitBytes, tailLines, streamed
// in chunks and generated line by line, so a 200,000-line log is never held whole), annotation
// and label merge patches (annotations with the UID precondition), and events; TokenReviews and
// SubjectAccessReviews of non-resource URLs (the HTTP servers' authorizer) from a table of
// tokens and grants, with injected failures and a delay (a stalled API server) — and checks
// what a real one would: the bearer token (or, when configured, a client certificate signed by
// its CA). Errors are injected per pod, per log and per call kind. Nodes: list, watch, get and
// merge patches with the resourceVersion precondition, for remediation; ConfigMaps, for the
// coordinator's state.
// Thread-safe; binds 127.0.0.1 on a free port.
//
// The calls themselves are tested against a real kube-apiserver (tests/k8s, the chart's RBAC
// and tokens). This fake stays for what the real one cannot be made to do in a test: container
// logs (served by a kubelet, which the test cluster does not run; here up to 200,000-line logs
// of 512 pods, streamed, with a chosen error per log), answers such as 429, 500 or 503 on a
// chosen call (FailPodReads, FailEvents), and a 403 on one namespace only (FailNamespace).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace nccl_triage::testing {

// One container instance's log: `lines` lines, line i written at start_ns + i * step_ns.
struct FakeLog {
  size_t lines = 0;
  std::function<std::string(size_t i)> line;
  int64_t start_ns = 0;
  int64_t step_ns = 1'000'000;  // 1 ms
  int status = 200;             // != 200: the API's answer instead of the log
  std::string error_message;    // the Status message for such an answer

  // A log from text (one entry per line; a final newline adds no line).
  static FakeLog FromText(const std::string& text, int64_t start_ns, int64_t step_ns = 1'000'000);
};

class FakeApiServer {
 public:
  struct Options {
    std::string cert_path;  // the server's certificate and key (PEM files)
    std::string key_path;
    std::string token;           // expected bearer token; empty: no token accepted
    std::string client_ca_path;  // set: clients must present a certificate signed by it
    int64_t now_ns = 0;          // "now" for sinceSeconds
  };

  explicit FakeApiServer(Options options);
  ~FakeApiServer();

  int port() const { return port_; }

  // A pod object as the API returns it (metadata.name, namespace, uid, labels, spec, status).
  void AddPod(nlohmann::json pod);
  void SetLog(const std::string& ns, const std::string& pod, const std::string& container,
              bool previous, FakeLog log);
  // The next list or get of pods answers this status (a v1 Status body), then 200 again.
  void FailPodReads(int status, std::string message, int times = 1);
  // Every pod list in `ns` answers this status (RBAC on another namespace).
  void FailNamespace(const std::string& ns, int status, std::string message);
  void FailEvents(int status, std::string message);
  // Logs are served whole, whatever limitBytes says (a server or proxy that ignores it).
  void IgnoreLimitBytes();

  // TokenReview: `token` is `username`'s (with `groups`); any other token is not authenticated.
  void AddTokenUser(const std::string& token, const std::string& username,
                    std::vector<std::string> groups = {});
  // SubjectAccessReview: `username` may `verb` the non-resource URL `path`; nobody else may.
  void AllowNonResource(const std::string& username, const std::string& path,
                        const std::string& verb = "get");
  // Every review (token or access) answers this status with a v1 Status body; 0: normally.
  void FailReviews(int status, std::string message);
  // Every review waits this long before it answers (a stalled API server; cut short when the
  // server stops).
  void DelayReviews(std::chrono::milliseconds delay);
  // Nodes (remediation): a list (pages of `limit`), a get and JSON merge patches, which bump
  // metadata.resourceVersion and answer 409 Conflict when the patch names another one.
  void AddNode(nlohmann::json node);
  nlohmann::json Node(const std::string& name) const;  // null when there is none
  // The next `times` node patches answer this status (a v1 Status body) and change nothing.
  void FailNodePatches(int status, std::string message, int times = 1);
  // Runs on the node before the next patch of it is applied, as another writer would between
  // our read and our patch (its resourceVersion is bumped after).
  void ChangeNodeBeforeNextPatch(const std::string& name,
                                 std::function<void(nlohmann::json& node)> change);
  // Changes a node now, as the kubelet or another writer would (a new resourceVersion).
  void ChangeNode(const std::string& name, std::function<void(nlohmann::json& node)> change);
  void DeleteNode(const std::string& name);
  // Watches of the nodes (GET /api/v1/nodes?watch=1): every add, change, patch and delete since
  // the watch's resourceVersion, one JSON event per line, then the later ones as they happen,
  // until timeoutSeconds, EndNodeWatches or the server's stop. After CompactNodeEvents, a watch
  // from an earlier resourceVersion gets an ERROR event with code 410 (as the real one does when
  // etcd has compacted it away).
  void CompactNodeEvents();
  // Ends every open watch (the stream ends cleanly; the client watches again).
  void EndNodeWatches();
  // A watch ends (cleanly) once it has sent every event there is, instead of waiting for more:
  // a test drives one watch at a time on its own thread.
  void EndWatchesWhenIdle(bool end);
  // The next watch answers this instead: an HTTP error, or these lines (each with its newline,
  // or not), then the end of the stream or, `broken`, a connection cut mid-stream.
  struct WatchScript {
    int status = 200;
    std::string message;
    std::vector<std::string> lines;
    bool broken = false;
  };
  void ScriptNextWatch(WatchScript script);

  // ConfigMaps (the coordinator's state): get, create (409 when it exists) and update guarded by
  // metadata.resourceVersion (409 when it changed).
  nlohmann::json ConfigMap(const std::string& ns, const std::string& name) const;  // null: none
  // Creates or replaces it, as another writer would (its resourceVersion changes).
  void SetConfigMapData(const std::string& ns, const std::string& name,
                        const std::map<std::string, std::string>& data);
  // The next `times` ConfigMap calls answer this status and change nothing.
  void FailConfigMaps(int status, int times = 1);
  // coordination.k8s.io/v1 Leases: get, create (409 AlreadyExists when there is one) and update
  // (PUT; 409 Conflict when metadata.resourceVersion is not the Lease's), each write bumping the
  // resourceVersion, as the real API server does.
  nlohmann::json Lease(const std::string& ns, const std::string& name) const;  // null: none
  // Writes the Lease as another replica would (the resourceVersion is bumped).
  void PutLease(const std::string& ns, const std::string& name, nlohmann::json spec);
  // Another replica writes the Lease (this spec) just before the next update of it is applied,
  // which then meets 409 Conflict.
  void PutLeaseBeforeNextUpdate(const std::string& ns, const std::string& name,
                                nlohmann::json spec);
  // The next `times` lease calls (any verb) answer this status and change nothing.
  void FailLeaseCalls(int status, std::string message, int times = 1);

  struct Call {
    std::string method;
    std::string path;
    std::string query;
    std::string body;
  };
  std::vector<Call> Calls() const;
  size_t CountCalls(const std::string& method, const std::string& path_part) const;
  std::map<std::string, std::string> Annotations(const std::string& ns,
                                                 const std::string& pod) const;
  std::map<std::string, std::string> Labels(const std::string& ns, const std::string& pod) const;
  // The next `times` pod patches (annotations or labels) answer this status and change nothing.
  void FailPodPatches(int status, std::string message, int times = 1);
  std::vector<nlohmann::json> Events() const;
  uint64_t log_bytes_served() const { return log_bytes_served_; }
  // Bytes of node list and get bodies and of watch event lines served.
  uint64_t node_bytes_served() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<uint64_t> log_bytes_served_{0};
};

// A kubeconfig text for this server: its CA inline, a bearer token or a client certificate.
std::string KubeconfigFor(int port, const std::string& ca_pem, const std::string& token,
                          const std::string& ns = "default",
                          const std::string& client_cert_pem = "",
                          const std::string& client_key_pem = "");

// Standard base64 (for certificate-authority-data in test kubeconfigs).
std::string Base64(const std::string& data);

}  // namespace nccl_triage::testing
