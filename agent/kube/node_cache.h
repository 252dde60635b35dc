// NodeCache: the cluster's nodes as the coordinator's remediation and validation read them, kept
// by a Kubernetes watch instead of a list per sweep (docs/remediation.md, "Reading the nodes").
//
// Like client-go's informer, with less: one paged LIST (ListEveryPage) gives the nodes and the
// resourceVersion of that snapshot; then GET /api/v1/nodes?watch=1 from that resourceVersion
// streams the changes (ADDED, MODIFIED, DELETED, BOOKMARK) one JSON line each, until the API
// server ends it after timeoutSeconds, and the next watch goes on from the last resourceVersion
// seen. It lists again (the whole set replaced, so a node deleted while nobody watched goes):
//   - when the resourceVersion is too old (410 Gone, as an HTTP answer or an ERROR event);
//   - on any other ERROR event, a line that is not a watch event, or more nodes than max_nodes;
//   - after `failures_before_relist` watches in a row that failed (no answer, a broken stream,
//     an HTTP error), each after a back-off that doubles from backoff_initial to backoff_max;
//   - every `resync` (a full resync: what a watch could have missed is not kept for ever).
// Each cause is one log line, once while it lasts, and one more when the watch reads again.
//
// Memory is bounded: a node is held as the few fields its readers parse (CachedNode), at most
// max_nodes of them, and an event line longer than kMaxWatchLineBytes is refused by the client.
// Writes do not go through the cache: the remediator and the validator patch nodes as before,
// guarded by the resourceVersion they read here, and a 409 Conflict (the cache was behind) is
// answered by a fresh GET. What a write or a GET returns is handed back (Observe), so that the
// next read sees our own change even before its watch event arrives.
//
// Thread-safe. Start() runs the list-and-watch loop on a thread of its own; Stop() (and the
// destructor) cut an open watch at once and return when that thread has ended. RunOnce is the
// loop's body, for tests that drive it on their own thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "kube/kube_api.h"

namespace nccl_triage {

class Logger;

// What is kept of a node: what the remediator and the validator parse.
struct CachedNode {
  std::string name;
  std::string resource_version;
  nlohmann::json taints = nlohmann::json::array();  // spec.taints as read (written back whole)
  bool unschedulable = false;                       // spec.unschedulable
  std::map<std::string, std::string> labels;        // only NodeCacheOptions::labels
  std::map<std::string, std::string> annotations;   // only NodeCacheOptions::annotations
  std::string boot_id;                              // status.nodeInfo.bootID
  friend bool operator==(const CachedNode&, const CachedNode&) = default;
};

struct NodeCacheOptions {
  std::vector<std::string> labels;       // label keys kept (the pool label)
  std::vector<std::string> annotations;  // annotation keys kept (nccl-triage's own)
  int list_page = 500;                   // nodes per page of a list
  int max_nodes = 50'000;                // more: the cache refuses to serve (and lists again)
  std::chrono::seconds resync{3600};     // a full list this often
  int watch_timeout_seconds = 300;       // timeoutSeconds of one watch
  std::chrono::milliseconds backoff_initial{1000};
  std::chrono::milliseconds backoff_max{60'000};
  int failures_before_relist = 3;
};

// The fields of a node object (an item of a list, a watch event's object, a GET's answer).
CachedNode CachedNodeFromJson(const nlohmann::json& node, const NodeCacheOptions& keep);

class NodeCache {
 public:
  // `kube`, `log` and `clock` must outlive the cache.
  NodeCache(KubeClient& kube, NodeCacheOptions options, Logger& log, Clock& clock);
  ~NodeCache();
  NodeCache(const NodeCache&) = delete;
  NodeCache& operator=(const NodeCache&) = delete;

  // Starts the list-and-watch thread (once; later calls do nothing).
  void Start();
  // Ends it: an open watch is cut, a back-off cut short. Returns when the thread has ended.
  void Stop();

  // One round on the caller's thread: a list when one is due, then one watch from the last
  // resourceVersion until it ends. False when something failed (the loop backs off then).
  bool RunOnce(std::stop_token stop);

  // Every node as last seen, in name order. Before the first list, waits up to `wait` for it
  // (or for it to fail). False with `error` ("HTTP 403 Forbidden: ...") when there is nothing
  // that may be served: no list yet, or the last list failed.
  bool Nodes(std::vector<CachedNode>* out, std::string* error,
             std::chrono::milliseconds wait = std::chrono::milliseconds(0),
             std::stop_token stop = {});

  // A node as a patch or a get answered it: held when it is not older than what is held (by
  // resourceVersion), so that our own write is seen before its watch event.
  void Observe(const nlohmann::json& node);

  const NodeCacheOptions& options() const { return options_; }

  struct Stats {
    uint64_t lists = 0;    // full lists done (each of one or more pages)
    uint64_t watches = 0;  // watch requests made
    uint64_t events = 0;   // ADDED, MODIFIED, DELETED and BOOKMARK events applied
    size_t nodes = 0;
    std::string resource_version;
  };
  Stats stats() const;

 private:
  bool List(std::stop_token stop);
  bool Watch(std::stop_token stop);
  // One event line; false (and `problem`, `gone`) when the watch must end.
  bool OnEvent(std::string_view line, std::string* problem, bool* gone);
  // A trouble, logged once while the same one lasts; Recovered() logs its end.
  void Trouble(const std::string& why, bool warn);
  void Recovered();
  void Loop(std::stop_token stop);

  KubeClient& kube_;
  NodeCacheOptions options_;
  Logger& log_;
  Clock& clock_;

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::map<std::string, CachedNode> nodes_;
  bool synced_ = false;     // a list succeeded and no later one failed
  std::string list_error_;  // why the last list failed; empty after a success
  Stats stats_;

  // Where the next watch starts: written by the loop under mu_ (stats() reads it).
  std::string resource_version_;
  // The loop's own (one thread: RunOnce's caller).
  bool need_list_ = true;
  Clock::TimePoint next_resync_{};
  int failures_ = 0;
  std::string logged_;  // the trouble logged last; empty: none now

  std::mutex thread_mu_;
  std::jthread thread_;
};

// The nodes, each with the fields of `fields`, for a step that ends at `deadline` on `clock` or
// on `stop`: from `cache` when there is one (waiting until the deadline for its first list), else
// from one paged LIST through `kube` (`fields.list_page` and `fields.max_nodes` a page and in all,
// ended early once CutShortReason says so). Returns why they could not be read, "" when they
// were. The remediator and the validator read the nodes this way.
std::string ReadNodes(NodeCache* cache, KubeClient& kube, const NodeCacheOptions& fields,
                      Clock& clock, Clock::TimePoint deadline, std::stop_token stop,
                      const std::function<void(const CachedNode&)>& each);

// A node as the API answered a patch or a get of it, handed to `cache` when there is one (so that
// a step's next read sees its own write); a failed call or a body that is not an object is not.
void ObserveNodeAnswer(NodeCache* cache, const KubeResponse& r);
// Patches `node` through `kube` and hands the answer to `cache` (ObserveNodeAnswer).
KubeResponse PatchNodeObserved(KubeClient& kube, NodeCache* cache, const std::string& node,
                               const NodePatch& patch);

}  // namespace nccl_triage
