// KubeClient: the few Kubernetes API calls nccl-triage makes, behind an interface so that the
// publishers are tested against a fake (with injected errors and latency) and the real client is
// tested against a local HTTPS server.
//
// Calls return a KubeResponse (HTTP status, or a transport error) and never throw; deciding
// whether to retry is the caller's business (KubeResponse::Retryable). Implementations are
// thread-safe. The real client never logs or returns the bearer token.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace nccl_triage {

class Logger;  // base/log.h

struct KubeResponse {
  int status = 0;     // HTTP status; 0 when no response came (see `error`)
  std::string error;  // transport failure: "connection refused", "timeout", "TLS: ..."
  std::string body;
  std::optional<std::chrono::seconds> retry_after;  // from a Retry-After header in seconds

  bool ok() const { return status >= 200 && status < 300; }
  // Worth retrying later with the same request: no response, 408, 429 or a 5xx.
  bool Retryable() const;
  // Retrying cannot help until someone changes RBAC or the object exists: 401, 403, 404.
  bool Permanent() const;
  // A patch carrying metadata.uid (PatchPodAnnotationsIfUid) met another object of that name:
  // the API server answers 422 Invalid with the cause field "metadata.uid" (a patch cannot
  // change an object's UID), not 409 as a precondition of an update or delete would.
  bool UidMismatch() const;
  // "HTTP 403 Forbidden: pods \"x\" is forbidden: ..." (the API's message, shortened), "timeout".
  std::string Describe() const;
};

// Where the API server is and how to prove who we are, from the pod's service account or from a
// kubeconfig (kube/kubeconfig.h). PEM material is given inline (`*_pem`) or as a path
// (`*_file`); a token file is re-read before every request (bound tokens rotate).
struct ApiAccess {
  std::string host;
  int port = 443;
  std::string base_path;  // a prefix before /api, e.g. "/k8s/clusters/c-1" behind a proxy
  std::string ca_pem;
  std::string ca_file;
  bool insecure_skip_tls_verify = false;  // only when the kubeconfig says so
  std::string client_cert_pem;
  std::string client_cert_file;
  std::string client_key_pem;
  std::string client_key_file;
  std::string token;
  std::string token_file;
  std::string default_namespace;  // the context's namespace or the service account's
  std::string source;             // for messages: "kubeconfig <path>, context <name>"
};

// A node condition as node-problem-detector writes it.
struct NodeCondition {
  std::string type;    // "NcclFabricReady"
  std::string status;  // "True" | "False" | "Unknown"
  std::string reason;  // PascalCase
  std::string message;
  int64_t last_heartbeat_unix_ms = 0;
  int64_t last_transition_unix_ms = 0;
};

// A core/v1 Event about an object (the node, for verdict changes).
struct KubeEvent {
  std::string ns = "default";  // events about cluster-scoped objects (Node) live in "default"
  std::string involved_kind = "Node";
  std::string involved_name;
  std::string involved_namespace;    // empty for a Node
  std::string involved_uid;          // node-problem-detector uses the node name for a Node
  std::string involved_api_version;  // "batch/v1" for a Job; empty: "v1" for a Node, else none
  std::string type = "Normal";       // Normal | Warning
  std::string reason;
  std::string message;
  std::string component = "nccl-triage-agent";
  std::string host;  // the node
  int64_t at_unix_ms = 0;
};

using AnnotationPatch = std::map<std::string, std::optional<std::string>>;  // nullopt deletes
using LabelPatch = std::map<std::string, std::optional<std::string>>;       // nullopt deletes

// One page of a namespaced pod list (GET /api/v1/namespaces/<ns>/pods).
struct PodListQuery {
  std::string label_selector;  // "job-name=train-7"; empty: every pod
  std::string field_selector;  // "spec.nodeName=gpu-1"; empty: none
  int limit = 500;             // pods per page (the API's chunking)
  std::string continue_token;  // from the previous page's metadata.continue
};

// One page of the node list (GET /api/v1/nodes): the same selectors, page size and continue token
// as a pod list.
using NodeListQuery = PodListQuery;

// A JSON merge patch of a node (remediation, coordinator/remediator.h). A merge patch replaces a
// list whole, so `taints` is the node's full spec.taints as it should be (the taints read, plus or
// minus nccl-triage's own); metadata.resourceVersion, when set, makes the API server refuse the
// patch with 409 Conflict if the node changed since it was read, so a taint someone else added
// meanwhile is never lost.
struct NodePatch {
  std::string resource_version;           // empty: no precondition
  std::optional<nlohmann::json> taints;   // an array of taint objects; nullopt: left as it is
  std::optional<bool> unschedulable;      // spec.unschedulable; nullopt: left as it is
  AnnotationPatch annotations;            // nullopt values delete
};

// What part of a container's log to read (GET .../pods/<pod>/log). The API counts limit_bytes
// from the first line it selects, so a tail is `tail_lines` (with `limit_bytes` as a safety net
// that then cuts its end).
struct PodLogQuery {
  std::string container;
  bool previous = false;      // the last terminated instance of the container
  bool timestamps = false;    // each line prefixed by the runtime's RFC 3339 time and a space
  int64_t since_seconds = 0;  // 0: the whole log
  int64_t limit_bytes = 0;    // 0: no limit; also enforced by the client, whatever the server does
  int64_t tail_lines = -1;    // -1: from the start
};

// Receives a log as it arrives, in chunks of any size; returning false stops the read.
using LogChunkSink = std::function<bool(std::string_view chunk)>;

// A watch of the nodes (GET /api/v1/nodes?watch=1): the changes after `resource_version`, one JSON
// event per line, with BOOKMARK events asked for; the API server ends it after `timeout_seconds`.
struct NodeWatchQuery {
  std::string resource_version;
  int timeout_seconds = 300;
  bool allow_bookmarks = true;
};

// Receives a stream one line at a time (without its newline); returning false stops the read.
using LineSink = std::function<bool(std::string_view line)>;

// The longest watch event line a client reads: an object's JSON (etcd holds at most 1.5 MiB).
inline constexpr size_t kMaxWatchLineBytes = 4 << 20;

// Whom a SubjectAccessReview asks about (as a TokenReview named them) and what they want to do to
// a non-resource URL: kube-rbac-proxy's question for an HTTP request.
struct AccessReviewRequest {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
  std::string path;          // "/metrics"
  std::string verb = "get";  // "get" for GET and HEAD, "create" for POST, ...
};

class KubeClient {
 public:
  virtual ~KubeClient() = default;
  // JSON merge patch (application/merge-patch+json) of the pod's metadata.annotations.
  virtual KubeResponse PatchPodAnnotations(const std::string& ns, const std::string& pod,
                                           const AnnotationPatch& annotations) = 0;
  // Strategic merge patch of nodes/<node>/status: conditions merge by type.
  virtual KubeResponse PatchNodeCondition(const std::string& node,
                                          const NodeCondition& condition) = 0;
  virtual KubeResponse CreateEvent(const KubeEvent& event) = 0;
  virtual KubeResponse GetPod(const std::string& ns, const std::string& name) = 0;
  // Pods of every namespace matching a field selector, e.g. "spec.nodeName=gpu-node-1".
  virtual KubeResponse ListPods(const std::string& field_selector) = 0;
  // One node (the workload view reads status.allocatable for the RDMA device plugin resources).
  virtual KubeResponse GetNode(const std::string& name) = 0;
  // PatchPodAnnotations with the pod's UID in the patch: the API refuses it when the pod of that
  // name is another one now (deleted and recreated; KubeResponse::UidMismatch), so a patch
  // computed for one pod never lands on another (the workload view annotates pods it did not
  // create).
  virtual KubeResponse PatchPodAnnotationsIfUid(const std::string& ns, const std::string& pod,
                                                const std::string& uid,
                                                const AnnotationPatch& annotations) = 0;
  // One page of the pods of a namespace (`nccl-triage triage` finding a job's pods). The
  // incident-triage calls have defaults that answer "not supported": only the clients that
  // triage uses implement them, so the agent's fakes need not.
  virtual KubeResponse ListNamespacedPods(const std::string& ns, const PodListQuery& query);
  // A container's log, streamed to `sink` and never held whole: on success the response's body
  // is empty; on an HTTP error it holds the API's answer (bounded), as for the other calls.
  virtual KubeResponse StreamPodLog(const std::string& ns, const std::string& pod,
                                    const PodLogQuery& query, const LogChunkSink& sink);
  // authentication.k8s.io/v1 TokenReview: whom a bearer token belongs to, if it was issued for
  // one of `audiences` (the coordinator binds an agent's node name to its service-account token).
  // Like the triage calls, a default that answers "not supported": only the in-cluster client
  // and the fake implement it.
  virtual KubeResponse CreateTokenReview(const std::string& token,
                                         const std::vector<std::string>& audiences);
  // authorization.k8s.io/v1 SubjectAccessReview: may this user do this (the HTTP servers ask it
  // whether the bearer of a token may get /metrics or /status). A default that answers "not
  // supported", as above.
  virtual KubeResponse CreateSubjectAccessReview(const AccessReviewRequest& request);
  // One page of the cluster's nodes (the coordinator's remediation reads taints, labels and
  // annotations of every node). A default that answers "not supported", like the triage calls.
  virtual KubeResponse ListNodes(const NodeListQuery& query);
  // A JSON merge patch of nodes/<node> (spec.taints, spec.unschedulable, annotations), guarded by
  // the patch's resourceVersion (409 Conflict when the node changed). Default: "not supported".
  virtual KubeResponse PatchNode(const std::string& node, const NodePatch& patch);
  // One page of the pods of every namespace (GET /api/v1/pods with the query's selectors, limit
  // and continue token): `nccl-triage cleanup` reads a whole fleet's pods without holding one
  // huge list. Default: "not supported".
  virtual KubeResponse ListAllPods(const PodListQuery& query);
  // A JSON patch of nodes/<node>/status removing status.conditions[index], refused (422) unless
  // that condition's type is `type` (a test op): a strategic merge patch cannot delete a
  // condition, and its list may have moved since it was read (`nccl-triage-server cleanup`).
  // Default: "not supported".
  virtual KubeResponse RemoveNodeCondition(const std::string& node, int index,
                                           const std::string& type);
  // One ConfigMap (the coordinator's cluster-wide state, coordinator/state_store.h). Default:
  // "not supported".
  virtual KubeResponse GetConfigMap(const std::string& ns, const std::string& name);
  // Writes a ConfigMap's data whole: POST (create) when `resource_version` is empty, else PUT
  // guarded by it (409 Conflict when it changed since it was read). Default: "not supported".
  virtual KubeResponse PutConfigMap(const std::string& ns, const std::string& name,
                                    const std::map<std::string, std::string>& data,
                                    const std::string& resource_version);
  // coordination.k8s.io/v1 Leases (the coordinators' leader election, kube/leader_election.h): a
  // get, a create, and an update (PUT of the whole Lease) that the API server refuses with 409
  // Conflict when the body's metadata.resourceVersion is not the Lease's any more. Defaults:
  // "not supported".
  virtual KubeResponse GetLease(const std::string& ns, const std::string& name);
  virtual KubeResponse CreateLease(const std::string& ns, const nlohmann::json& lease);
  virtual KubeResponse UpdateLease(const std::string& ns, const std::string& name,
                                   const nlohmann::json& lease);
  // JSON merge patch of a pod's metadata.labels (nullopt values delete): the coordinators'
  // leader label (kube/leader_label.h), which their Service selects. Default: "not supported".
  virtual KubeResponse PatchPodLabels(const std::string& ns, const std::string& pod,
                                      const LabelPatch& labels);
  // Deletes one namespaced object of the release, `resource` "daemonsets" or "deployments"
  // (apps/v1, background propagation: their pods go through the garbage collector, each with its
  // grace period), "configmaps" (v1) or "leases" (coordination.k8s.io/v1): the uninstall hook's
  // `nccl-triage-server cleanup --stop/--delete`. Default: "not supported".
  virtual KubeResponse DeleteObject(const std::string& ns, const std::string& resource,
                                    const std::string& name);
  // A watch of the nodes (kube/node_cache.h): each event line handed to `sink` as it arrives,
  // until the server ends the stream (status 200, no error), the sink returns false, `stop` is
  // requested (both: status 200, error "stopped"), the stream breaks (status 0, the error) or a
  // line is longer than kMaxWatchLineBytes (status 0). An HTTP error (410 Gone for a
  // resourceVersion too old) comes back with its body, as for the other calls. It runs on a
  // connection of its own, so that the other calls do not wait behind it, and a stop requested
  // from another thread ends it at once. Default: "not supported".
  virtual KubeResponse WatchNodes(const NodeWatchQuery& query, const LineSink& sink,
                                  std::stop_token stop);
};

// What a TokenReview answered. A bound service-account token carries the pod it was issued for
// (user.extra authentication.kubernetes.io/pod-name and pod-uid) and, since Kubernetes 1.30, its
// node (authentication.kubernetes.io/node-name).
struct TokenIdentity {
  bool authenticated = false;
  std::string error;     // why not, as the API server said
  std::string username;  // "system:serviceaccount:<namespace>:<name>"
  std::string pod_name;
  std::string pod_uid;
  std::string node_name;  // empty before Kubernetes 1.30
  // The rest of user.*, for a SubjectAccessReview about this user.
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};
nlohmann::json TokenReviewBody(const std::string& token, const std::vector<std::string>& audiences);
// The status of a TokenReview response body; an error for a body that is not one.
StatusOr<TokenIdentity> TokenIdentityFromReview(std::string_view body);

// What a SubjectAccessReview answered: allowed, or not (with the authorizer's reason).
struct AccessDecision {
  bool allowed = false;
  std::string reason;            // status.reason, often empty on a plain "no"
  std::string evaluation_error;  // status.evaluationError: the authorizer could not decide
};
nlohmann::json SubjectAccessReviewBody(const AccessReviewRequest& request);
// The status of a SubjectAccessReview response body; an error for a body that is not one.
StatusOr<AccessDecision> AccessDecisionFromReview(std::string_view body);

// The request bodies (pure; the tests of the real client and the fake check them).
nlohmann::json AnnotationPatchBody(const AnnotationPatch& annotations);
// The same with metadata.uid set (the API's UID precondition).
nlohmann::json AnnotationPatchBody(const AnnotationPatch& annotations, const std::string& uid);
nlohmann::json LabelPatchBody(const LabelPatch& labels);
nlohmann::json NodeConditionPatchBody(const NodeCondition& condition);
nlohmann::json EventBody(const KubeEvent& event);
nlohmann::json NodePatchBody(const NodePatch& patch);
// The JSON patch of RemoveNodeCondition: test the type at the index, then remove it.
nlohmann::json NodeConditionRemovalBody(int index, const std::string& type);
nlohmann::json ConfigMapBody(const std::string& ns, const std::string& name,
                             const std::map<std::string, std::string>& data,
                             const std::string& resource_version);
// The query strings of the two reads above ("?labelSelector=...&limit=500").
std::string PodListQueryString(const PodListQuery& query);
std::string PodLogQueryString(const PodLogQuery& query);
// "?watch=1&resourceVersion=...&allowWatchBookmarks=true&timeoutSeconds=300"
std::string NodeWatchQueryString(const NodeWatchQuery& query);
// Percent-encodes a query value ("spec.nodeName=a" -> "spec.nodeName%3Da").
std::string UrlEncode(std::string_view value);
// Retry-After in seconds ("120"); nullopt for HTTP-dates and garbage (callers back off instead).
std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value);

// Every page of a list call (ListNodes, ListAllPods), each item handed to `on_item` as its page
// arrives (no page is kept). Bounded, since a list is an untrusted answer: at most
// `max_items / page_size + 1` pages, a server that repeats its continue token is refused, and
// `cut_short` (a stop request; may be empty) ends the walk before the next page. Empty on
// success, else one line: the failed call, "not a list", "cut short: ...", "the server repeats
// its continue token" or "more than N pages (M items)". `resource_version`, when given, gets the
// list's metadata.resourceVersion (where a watch of the same objects starts).
std::string ListEveryPage(const std::function<KubeResponse(const PodListQuery&)>& list,
                          PodListQuery query, int page_size, int max_items,
                          const std::function<std::string()>& cut_short,
                          const std::function<void(const nlohmann::json&)>& on_item,
                          std::string* resource_version = nullptr);

// The outcome of a list a loop reads again each round (ListEveryPage's answer, `why`): logged
// once when it starts failing ("<what>: <why> (retried next sweep)") and once, as `recovered`,
// when it reads again, tracked in `failing`. False with `*error` = "<what>: <why>" when it
// failed.
bool NoteRecurringList(const std::string& why, std::string_view what, std::string_view recovered,
                       bool& failing, Logger& log, std::string_view component,
                       std::string* error);

// A node's taint list without the taints of one key (a malformed list counts as empty: a patch
// then writes only the caller's taint, which the API server validates).
nlohmann::json TaintsWithoutKey(const nlohmann::json& taints, std::string_view key);

}  // namespace nccl_triage
