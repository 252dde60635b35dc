#include "kube/node_cache.h"

#include <algorithm>
#include <charconv>

#include "base/log.h"
#include "core/json_text.h"

namespace nccl_triage {
namespace {

using nlohmann::json;

constexpr std::string_view kLogComponent = "node-watch";

const json& Member(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it != j.end() ? *it : kNull;
}

// resourceVersions are opaque to clients, but the API server's (etcd's revision) are integers
// that grow: `a` is known to be older than `b` only when both are.
bool Older(const std::string& a, const std::string& b) {
  uint64_t x = 0, y = 0;
  auto [pa, ea] = std::from_chars(a.data(), a.data() + a.size(), x);
  auto [pb, eb] = std::from_chars(b.data(), b.data() + b.size(), y);
  if (ea != std::errc() || eb != std::errc() || pa != a.data() + a.size() ||
      pb != b.data() + b.size() || a.empty() || b.empty()) {
    return false;
  }
  return x < y;
}

std::string Excerpt(std::string_view line) {
  std::string out(line.substr(0, 80));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return line.size() > 80 ? out + "..." : out;
}

}  // namespace

CachedNode CachedNodeFromJson(const json& node, const NodeCacheOptions& keep) {
  CachedNode n;
  const json& meta = Member(node, "metadata");
  const json& spec = Member(node, "spec");
  n.name = StringMember(meta, "name");
  n.resource_version = StringMember(meta, "resourceVersion");
  if (const json& t = Member(spec, "taints"); t.is_array()) n.taints = t;
  if (const json& u = Member(spec, "unschedulable"); u.is_boolean()) {
    n.unschedulable = u.get<bool>();
  }
  const json& labels = Member(meta, "labels");
  for (const std::string& key : keep.labels) {
    if (const json& v = Member(labels, key.c_str()); v.is_string()) n.labels[key] = v;
  }
  const json& annotations = Member(meta, "annotations");
  for (const std::string& key : keep.annotations) {
    if (const json& v = Member(annotations, key.c_str()); v.is_string()) n.annotations[key] = v;
  }
  n.boot_id = StringMember(Member(Member(node, "status"), "nodeInfo"), "bootID");
  return n;
}

NodeCache::NodeCache(KubeClient& kube, NodeCacheOptions options, Logger& log, Clock& clock)
    : kube_(kube), options_(std::move(options)), log_(log), clock_(clock) {
  options_.list_page = std::max(options_.list_page, 1);
  options_.max_nodes = std::max(options_.max_nodes, 1);
  options_.watch_timeout_seconds = std::max(options_.watch_timeout_seconds, 1);
  options_.failures_before_relist = std::max(options_.failures_before_relist, 1);
}

NodeCache::~NodeCache() { Stop(); }

void NodeCache::Start() {
  std::lock_guard lock(thread_mu_);
  if (thread_.joinable()) return;
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

void NodeCache::Stop() {
  std::lock_guard lock(thread_mu_);
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

void NodeCache::Loop(std::stop_token stop) {
  Clock::Duration backoff = options_.backoff_initial;
  while (!stop.stop_requested()) {
    if (RunOnce(stop)) {
      backoff = options_.backoff_initial;
      continue;
    }
    if (!clock_.SleepFor(backoff, stop)) break;
    backoff = std::min<Clock::Duration>(backoff * 2, options_.backoff_max);
  }
}

void NodeCache::Trouble(const std::string& why, bool warn) {
  if (why == logged_) return;
  logged_ = why;
  if (warn) {
    log_.Warn(kLogComponent, why);
  } else {
    log_.Info(kLogComponent, why);
  }
}

void NodeCache::Recovered() {
  if (logged_.empty()) return;
  logged_.clear();
  log_.Info(kLogComponent, "the node list and watch read again");
}

bool NodeCache::RunOnce(std::stop_token stop) {
  if (stop.stop_requested()) return false;
  if (need_list_ || clock_.Now() >= next_resync_) {
    if (!List(stop)) return false;
  }
  return Watch(stop);
}

bool NodeCache::List(std::stop_token stop) {
  std::map<std::string, CachedNode> fresh;
  std::string version;
  bool over = false;
  std::string why = ListEveryPage(
      [this](const NodeListQuery& q) { return kube_.ListNodes(q); }, NodeListQuery{},
      options_.list_page, options_.max_nodes,
      [&stop]() -> std::string { return stop.stop_requested() ? "stop requested" : ""; },
      [&](const json& item) {
        if (fresh.size() >= static_cast<size_t>(options_.max_nodes)) {
          over = true;
          return;
        }
        CachedNode n = CachedNodeFromJson(item, options_);
        if (!n.name.empty()) fresh[n.name] = std::move(n);
      },
      &version);
  if (why.empty() && over) why = "more than " + std::to_string(options_.max_nodes) + " nodes";
  if (why.empty() && version.empty()) why = "the list has no metadata.resourceVersion";
  if (!why.empty()) {
    if (stop.stop_requested()) return false;
    std::lock_guard lock(mu_);
    synced_ = false;
    list_error_ = why;
    Trouble("list nodes: " + why + " (listed again after a back-off)", true);
    cv_.notify_all();
    return false;
  }
  {
    std::lock_guard lock(mu_);
    nodes_ = std::move(fresh);
    synced_ = true;
    list_error_.clear();
    ++stats_.lists;
    resource_version_ = version;
    cv_.notify_all();
  }
  need_list_ = false;
  failures_ = 0;
  next_resync_ = clock_.Now() + options_.resync;
  Recovered();
  return true;
}

bool NodeCache::OnEvent(std::string_view line, std::string* problem, bool* gone) {
  const json ev = json::parse(line, nullptr, false);
  const json& object = Member(ev, "object");
  const std::string type = StringMember(ev, "type");
  if (!ev.is_object() || !object.is_object() || type.empty()) {
    *problem = "a line that is not a watch event (\"" + Excerpt(line) + "\")";
    return false;
  }
  if (type == "ERROR") {
    // The API server's v1 Status: 410 Gone when the resourceVersion was compacted away.
    const json& code = Member(object, "code");
    *gone = code.is_number_integer() && code.get<int>() == 410;
    *problem = "an ERROR event (" + (code.is_number() ? "code " + code.dump() + ", " : "") +
               StringMember(object, "reason") + ": " +
               StringMember(object, "message").substr(0, 200) + ")";
    return false;
  }
  const std::string version = StringMember(Member(object, "metadata"), "resourceVersion");
  if (type == "BOOKMARK") {
    std::lock_guard lock(mu_);
    if (!version.empty()) resource_version_ = version;
    ++stats_.events;
    return true;
  }
  if (type != "ADDED" && type != "MODIFIED" && type != "DELETED") {
    *problem = "an event of unknown type \"" + Excerpt(type) + "\"";
    return false;
  }
  CachedNode n = CachedNodeFromJson(object, options_);
  if (n.name.empty()) {
    *problem = "a " + type + " event without a node name";
    return false;
  }
  std::lock_guard lock(mu_);
  auto it = nodes_.find(n.name);
  if (type == "DELETED") {
    if (it != nodes_.end()) nodes_.erase(it);
  } else if (it == nodes_.end()) {
    if (nodes_.size() >= static_cast<size_t>(options_.max_nodes)) {
      *problem = "more than " + std::to_string(options_.max_nodes) + " nodes";
      return false;
    }
    nodes_.emplace(n.name, std::move(n));
  } else if (!Older(n.resource_version, it->second.resource_version)) {
    it->second = std::move(n);  // (an older one: our own write was observed first)
  }
  ++stats_.events;
  if (!version.empty()) resource_version_ = version;
  return true;
}

bool NodeCache::Watch(std::stop_token stop) {
  NodeWatchQuery query;
  query.resource_version = resource_version_;
  // Ends when the next resync is due, so that the list comes on time.
  const auto to_resync =
      std::chrono::duration_cast<std::chrono::seconds>(next_resync_ - clock_.Now()).count();
  query.timeout_seconds =
      static_cast<int>(std::clamp<int64_t>(to_resync, 1, options_.watch_timeout_seconds));
  const std::string from = resource_version_;
  const Clock::TimePoint started = clock_.Now();
  std::string problem;
  bool gone = false;
  uint64_t events = 0;
  {
    std::lock_guard lock(mu_);
    ++stats_.watches;
  }
  const KubeResponse r = kube_.WatchNodes(
      query,
      [&](std::string_view line) {
        if (!OnEvent(line, &problem, &gone)) return false;
        ++events;
        return true;
      },
      stop);
  if (stop.stop_requested()) return false;
  if (r.status == 410) {
    gone = true;
    problem = "HTTP 410 Gone";
  }
  if (!problem.empty()) {
    need_list_ = true;
    if (gone) {
      Trouble("watch from resourceVersion " + from + ": " + problem +
                  ": too old, listing the nodes again",
              false);
    } else {
      Trouble("watch: " + problem + ": listing the nodes again", true);
    }
    // A 410 is the API server's normal answer to an old resourceVersion: list at once.
    return gone;
  }
  if (!r.ok() || !r.error.empty()) {
    ++failures_;
    if (failures_ >= options_.failures_before_relist) need_list_ = true;
    Trouble("watch nodes: " + r.Describe() + " (watched again from resourceVersion " +
                resource_version_ + " after a back-off)",
            true);
    return false;
  }
  if (events == 0 && clock_.Now() - started < std::chrono::seconds(1)) {
    // Ended at once without a word: not worth an immediate new request (a proxy that closes
    // every long request would make a loop of them), nor a list (it would not help).
    Trouble("watch nodes: the API server ended the watch at once (watched again after a "
            "back-off)",
            true);
    return false;
  }
  failures_ = 0;
  Recovered();
  return true;
}

bool NodeCache::Nodes(std::vector<CachedNode>* out, std::string* error,
                      std::chrono::milliseconds wait, std::stop_token stop) {
  std::unique_lock lock(mu_);
  if (!synced_ && list_error_.empty() && wait.count() > 0) {
    cv_.wait_for(lock, stop, wait, [this] { return synced_ || !list_error_.empty(); });
  }
  if (!synced_) {
    *error = list_error_.empty() ? "the node watch has not listed the nodes yet" : list_error_;
    return false;
  }
  out->clear();
  out->reserve(nodes_.size());
  for (const auto& [name, node] : nodes_) out->push_back(node);
  return true;
}

void NodeCache::Observe(const json& node) {
  CachedNode n = CachedNodeFromJson(node, options_);
  if (n.name.empty() || n.resource_version.empty()) return;
  std::lock_guard lock(mu_);
  auto it = nodes_.find(n.name);
  if (it == nodes_.end()) {
    if (synced_ && nodes_.size() < static_cast<size_t>(options_.max_nodes)) {
      nodes_.emplace(n.name, std::move(n));
    }
    return;
  }
  if (!Older(n.resource_version, it->second.resource_version)) it->second = std::move(n);
}

NodeCache::Stats NodeCache::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.nodes = nodes_.size();
  s.resource_version = resource_version_;
  return s;
}

std::string ReadNodes(NodeCache* cache, KubeClient& kube, const NodeCacheOptions& fields,
                      Clock& clock, Clock::TimePoint deadline, std::stop_token stop,
                      const std::function<void(const CachedNode&)>& each) {
  std::string why;
  if (cache != nullptr) {
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.Now());
    std::vector<CachedNode> cached;
    if (cache->Nodes(&cached, &why, std::max(wait, std::chrono::milliseconds(0)), stop)) {
      for (const CachedNode& n : cached) each(n);
    }
    return why;
  }
  return ListEveryPage([&kube](const NodeListQuery& q) { return kube.ListNodes(q); },
                       NodeListQuery{}, fields.list_page, fields.max_nodes,
                       [&] { return CutShortReason(stop, deadline, clock); },
                       [&](const nlohmann::json& item) { each(CachedNodeFromJson(item, fields)); });
}

void ObserveNodeAnswer(NodeCache* cache, const KubeResponse& r) {
  if (cache == nullptr || !r.ok()) return;
  const nlohmann::json n = nlohmann::json::parse(r.body, nullptr, false);
  if (n.is_object()) cache->Observe(n);
}

KubeResponse PatchNodeObserved(KubeClient& kube, NodeCache* cache, const std::string& node,
                               const NodePatch& patch) {
  KubeResponse r = kube.PatchNode(node, patch);
  ObserveNodeAnswer(cache, r);
  return r;
}

}  // namespace nccl_triage
