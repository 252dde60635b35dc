#include "support/fake_api_server.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <ctime>
#include <set>

namespace nccl_triage::testing {
namespace {

using nlohmann::json;

std::string Reason(int status) {
  switch (status) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 409:
      return "Conflict";
    case 503:
      return "ServiceUnavailable";
    default:
      return "InternalError";
  }
}

void Fail(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(json{{"kind", "Status"},
                       {"apiVersion", "v1"},
                       {"status", "Failure"},
                       {"message", message},
                       {"reason", Reason(status)},
                       {"code", status}}
                      .dump(),
                  "application/json");
}

// RFC 3339 with nanoseconds, trailing zeros trimmed (Go's RFC3339Nano, what the kubelet writes),
// appended to `out`. The date and time of the last second are kept: a log stream formats
// thousands of lines per second, and this server runs beside what a bench measures.
struct TimeFormatter {
  int64_t secs = INT64_MIN;
  std::string prefix;

  void Append(int64_t ns, std::string& out) {
    const int64_t s = ns / 1'000'000'000;
    if (s != secs) {
      secs = s;
      std::time_t t = static_cast<std::time_t>(s);
      std::tm tm{};
      gmtime_r(&t, &tm);
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
      prefix = buf;
    }
    out += prefix;
    int64_t frac = ns % 1'000'000'000;
    if (frac > 0) {
      char digits[10];
      for (int i = 8; i >= 0; --i) {
        digits[i] = static_cast<char>('0' + frac % 10);
        frac /= 10;
      }
      int n = 9;
      while (n > 0 && digits[n - 1] == '0') --n;
      out += '.';
      out.append(digits, static_cast<size_t>(n));
    }
    out += 'Z';
  }
};

std::string LabelValue(const json& pod, const std::string& key, bool* present) {
  const json& labels = pod["metadata"].value("labels", json::object());
  auto it = labels.find(key);
  *present = it != labels.end() && it->is_string();
  return *present ? it->get<std::string>() : std::string();
}

// Equality-based label selectors: "a=b,c==d,e!=f,g".
bool MatchesLabels(const json& pod, const std::string& selector) {
  size_t start = 0;
  while (start < selector.size()) {
    size_t comma = selector.find(',', start);
    if (comma == std::string::npos) comma = selector.size();
    const std::string term = selector.substr(start, comma - start);
    start = comma + 1;
    bool present = false;
    if (const size_t ne = term.find("!="); ne != std::string::npos) {
      if (LabelValue(pod, term.substr(0, ne), &present) == term.substr(ne + 2) && present) {
        return false;
      }
    } else if (const size_t eq = term.find('='); eq != std::string::npos) {
      const size_t vpos = term.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
      const std::string v = LabelValue(pod, term.substr(0, eq), &present);
      if (!present || v != term.substr(vpos)) return false;
    } else {
      LabelValue(pod, term, &present);
      if (!present) return false;
    }
  }
  return true;
}

bool MatchesFields(const json& pod, const std::string& selector) {
  if (selector.empty()) return true;
  for (const auto& [key, where] : {std::pair{std::string("spec.nodeName="), "spec"},
                                   std::pair{std::string("metadata.name="), "metadata"}}) {
    if (selector.rfind(key, 0) != 0) continue;
    const std::string field = key.substr(key.find('.') + 1, key.size() - key.find('.') - 2);
    return pod[where].value(field, "") == selector.substr(key.size());
  }
  return false;
}

}  // namespace

FakeLog FakeLog::FromText(const std::string& text, int64_t start_ns, int64_t step_ns) {
  auto lines = std::make_shared<std::vector<std::string>>();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    lines->push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  FakeLog log;
  log.lines = lines->size();
  log.line = [lines](size_t i) { return (*lines)[i]; };
  log.start_ns = start_ns;
  log.step_ns = step_ns;
  return log;
}

struct FakeApiServer::Impl {
  explicit Impl(const Options& o)
      : options(o),
        server(o.cert_path.c_str(), o.key_path.c_str(),
               o.client_ca_path.empty() ? nullptr : o.client_ca_path.c_str()) {}

  Options options;
  httplib::SSLServer server;
  mutable std::mutex mu;
  std::vector<json> pods;
  std::map<std::string, FakeLog> logs;  // ns/pod/container/{current,previous}
  int pod_patch_failures = 0;
  int pod_patch_status = 0;
  std::string pod_patch_message;
  int pod_read_failures = 0;
  int pod_read_status = 0;
  std::string pod_read_message;
  std::map<std::string, std::pair<int, std::string>> namespace_failures;
  int event_status = 0;
  std::string event_message;
  std::vector<Call> calls;
  std::vector<json> events;
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> token_users;
  std::set<std::string> grants;  // "user\npath\nverb"
  int review_status = 0;
  std::string review_message;
  std::chrono::milliseconds review_delay{0};
  std::condition_variable stop_cv;
  bool stopping = false;

  // The scripted delay and failure of a review; true when it answered. Also completes the call's
  // record with its body (the pre-routing handler runs before the body is read).
  bool ReviewFault(const httplib::Request& req, httplib::Response& res) {
    std::unique_lock lock(mu);
    for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
      if (it->path == req.path && it->body.empty()) {
        it->body = req.body;
        break;
      }
    }
    if (review_delay.count() > 0) {
      stop_cv.wait_for(lock, review_delay, [this] { return stopping; });
    }
    if (review_status == 0) return false;
    Fail(res, review_status, review_message);
    return true;
  }

  void TokenReview(const httplib::Request& req, httplib::Response& res) {
    if (ReviewFault(req, res)) return;
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || body.value("kind", "") != "TokenReview" || !body.contains("spec") ||
        !body["spec"].is_object()) {
      Fail(res, 400, "not a TokenReview");
      return;
    }
    const std::string token = body["spec"].value("token", "");
    std::lock_guard lock(mu);
    json status = {{"authenticated", false}, {"error", "invalid bearer token"}};
    if (auto it = token_users.find(token); it != token_users.end()) {
      status = {{"authenticated", true},
                {"user",
                 {{"username", it->second.first},
                  {"uid", "uid-" + it->second.first},
                  {"groups", it->second.second}}}};
    }
    body["status"] = status;
    res.status = 201;
    res.set_content(body.dump(), "application/json");
  }

  void AccessReview(const httplib::Request& req, httplib::Response& res) {
    if (ReviewFault(req, res)) return;
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || body.value("kind", "") != "SubjectAccessReview" ||
        !body.contains("spec") || !body["spec"].is_object() ||
        !body["spec"].contains("nonResourceAttributes")) {
      Fail(res, 400, "not a SubjectAccessReview of a non-resource URL");
      return;
    }
    const json& spec = body["spec"];
    const json& attrs = spec["nonResourceAttributes"];
    const std::string key = spec.value("user", "") + "\n" + attrs.value("path", "") + "\n" +
                            attrs.value("verb", "");
    std::lock_guard lock(mu);
    const bool allowed = grants.contains(key);
    body["status"] = allowed ? json{{"allowed", true}, {"reason", "granted by the fake"}}
                             : json{{"allowed", false}};
    res.status = 201;
    res.set_content(body.dump(), "application/json");
}

  std::vector<json> nodes;
  int node_patch_failures = 0;
  int node_patch_status = 0;
  std::string node_patch_message;
  std::map<std::string, std::function<void(json&)>> node_changes;
  uint64_t resource_version = 100;

  json* FindNode(const std::string& name) {
    for (json& n : nodes) {
      if (n["metadata"].value("name", "") == name) return &n;
    }
    return nullptr;
  }

  // The watch: every node change as an event, by resourceVersion; those at or before
  // `compacted` are gone (a watch from there meets 410). Scripted answers go first.
  struct WatchEvent {
    uint64_t version;
    std::string line;
  };
  std::vector<WatchEvent> node_events;
  std::atomic<uint64_t> node_bytes{0};  // bodies of node lists and gets, and watch event lines
  uint64_t compacted = 0;
  std::deque<WatchScript> watch_scripts;
  uint64_t watch_generation = 0;  // EndNodeWatches: the open watches end when it moves
  bool watch_ends_when_idle = false;

  void RecordNodeEvent(const std::string& type, const json& node) {
    node_events.push_back(
        {resource_version, json{{"type", type}, {"object", node}}.dump() + "\n"});
    stop_cv.notify_all();
  }

  void WatchNodes(const httplib::Request& req, httplib::Response& res) {
    std::unique_lock lock(mu);
    if (!watch_scripts.empty()) {
      WatchScript script = std::move(watch_scripts.front());
      watch_scripts.pop_front();
      lock.unlock();
      if (script.status != 200) {
        Fail(res, script.status, script.message);
        return;
      }
      auto lines = std::make_shared<std::vector<std::string>>(std::move(script.lines));
      const bool broken = script.broken;
      res.set_chunked_content_provider(
          "application/json", [lines, broken](size_t, httplib::DataSink& sink) {
            for (const std::string& l : *lines) {
              if (!sink.write(l.data(), l.size())) return false;
            }
            if (broken) return false;  // cut without the last chunk: a broken stream
            sink.done();
            return true;
          });
      return;
    }
    uint64_t from = 0;
    const std::string version = req.get_param_value("resourceVersion");
    if (!version.empty()) from = std::stoull(version);
    const int timeout = req.has_param("timeoutSeconds")
                            ? std::stoi(req.get_param_value("timeoutSeconds"))
                            : 1800;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
    const uint64_t generation = watch_generation;
    const bool gone = from < compacted;
    res.set_chunked_content_provider(
        "application/json",
        [this, from, deadline, generation, gone, next = size_t{0}](
            size_t, httplib::DataSink& sink) mutable {
          if (gone) {
            const std::string line =
                json{{"type", "ERROR"},
                     {"object",
                      {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                       {"reason", "Expired"}, {"code", 410},
                       {"message", "too old resource version: " + std::to_string(from)}}}}
                    .dump() +
                "\n";
            sink.write(line.data(), line.size());
            sink.done();
            return true;
          }
          std::unique_lock lock(mu);
          while (true) {
            while (next < node_events.size() && node_events[next].version <= from) ++next;
            if (next < node_events.size()) {
              const std::string line = node_events[next++].line;
              lock.unlock();
              node_bytes += line.size();
              return sink.write(line.data(), line.size());
            }
            if (stopping || watch_generation != generation || watch_ends_when_idle ||
                std::chrono::steady_clock::now() >= deadline) {
              lock.unlock();
              sink.done();
              return true;
            }
            stop_cv.wait_until(lock, deadline);
          }
        });
  }

  void ListNodes(const httplib::Request& req, httplib::Response& res) {
    if (req.has_param("watch")) {
      WatchNodes(req, res);
      return;
    }
    std::lock_guard lock(mu);
    const std::string labels = req.get_param_value("labelSelector");
    const size_t limit = req.has_param("limit") ? std::stoul(req.get_param_value("limit")) : 0;
    const size_t from = req.has_param("continue") ? std::stoul(req.get_param_value("continue")) : 0;
    std::vector<const json*> match;
    for (const json& n : nodes) {
      if (MatchesLabels(n, labels)) match.push_back(&n);
    }
    json items = json::array();
    size_t i = from;
    for (; i < match.size() && (limit == 0 || items.size() < limit); ++i)
      items.push_back(*match[i]);
    json meta = {{"resourceVersion", std::to_string(resource_version)}};
    if (i < match.size()) meta["continue"] = std::to_string(i);
    const std::string body =
        json{{"kind", "NodeList"}, {"apiVersion", "v1"}, {"metadata", meta}, {"items", items}}
            .dump();
    node_bytes += body.size();
    res.set_content(body, "application/json");
  }

  void GetNode(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    const json* n = FindNode(req.matches[1]);
    if (n == nullptr) {
      Fail(res, 404, "nodes \"" + std::string(req.matches[1]) + "\" not found");
      return;
    }
    const std::string body = n->dump();
    node_bytes += body.size();
    res.set_content(body, "application/json");
  }

  void PatchNode(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    const std::string name = req.matches[1];
    json* n = FindNode(name);
    if (n == nullptr) {
      Fail(res, 404, "nodes \"" + name + "\" not found");
      return;
    }
    if (node_patch_failures > 0) {
      --node_patch_failures;
      Fail(res, node_patch_status, node_patch_message);
      return;
    }
    if (req.get_header_value("Content-Type") != "application/merge-patch+json") {
      Fail(res, 415, "unsupported patch type");
      return;
    }
    if (auto change = node_changes.find(name); change != node_changes.end()) {
      change->second(*n);
      (*n)["metadata"]["resourceVersion"] = std::to_string(++resource_version);
      RecordNodeEvent("MODIFIED", *n);
      node_changes.erase(change);
    }
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object()) {
      Fail(res, 400, "not a JSON merge patch");
      return;
    }
    const json meta = body.value("metadata", json::object());
    if (meta.contains("resourceVersion") &&
        meta["resourceVersion"] != (*n)["metadata"].value("resourceVersion", "")) {
      Fail(res, 409,
           "Operation cannot be fulfilled on nodes \"" + name +
               "\": the object has been modified; please apply your changes to the latest "
               "version and try again");
      return;
    }
    if (body.contains("metadata") && body["metadata"].is_object()) {
      body["metadata"].erase("resourceVersion");
    }
    n->merge_patch(body);
    (*n)["metadata"]["resourceVersion"] = std::to_string(++resource_version);
    RecordNodeEvent("MODIFIED", *n);
    res.set_content(n->dump(), "application/json");
  }

  std::map<std::string, json> configmaps;  // "ns/name" -> object
  int configmap_failures = 0;
  int configmap_status = 0;

  bool FailConfigMap(httplib::Response& res) {
    if (configmap_failures == 0) return false;
    --configmap_failures;
    Fail(res, configmap_status, "injected");
    return true;
  }

  void GetConfigMap(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    if (FailConfigMap(res)) return;
    auto it = configmaps.find(std::string(req.matches[1]) + "/" + std::string(req.matches[2]));
    if (it == configmaps.end()) {
      Fail(res, 404, "configmaps \"" + std::string(req.matches[2]) + "\" not found");
      return;
    }
    res.set_content(it->second.dump(), "application/json");
  }

  std::map<std::string, json> leases;  // "ns/name" -> Lease
  std::map<std::string, json> lease_before_update;  // "ns/name" -> spec another replica writes
  int lease_failures = 0;
  int lease_status = 0;
  std::string lease_message;

  bool LeaseFault(httplib::Response& res) {
    if (lease_failures <= 0) return false;
    --lease_failures;
    Fail(res, lease_status, lease_message);
    return true;
  }

  void GetLease(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    if (LeaseFault(res)) return;
    const std::string name = req.matches[2];
    auto it = leases.find(std::string(req.matches[1]) + "/" + name);
    if (it == leases.end()) {
      Fail(res, 404, "leases.coordination.k8s.io \"" + name + "\" not found");
      return;
    }
    res.set_content(it->second.dump(), "application/json");
  }

  // POST (create) and PUT (update, guarded by metadata.resourceVersion).
  void WriteConfigMap(const httplib::Request& req, httplib::Response& res, bool create) {
    std::lock_guard lock(mu);
    if (FailConfigMap(res)) return;
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body.contains("metadata") || !body["metadata"].is_object()) {
      Fail(res, 400, "not a ConfigMap");
      return;
    }
    const std::string name = body["metadata"].value("name", "");
    const std::string key = std::string(req.matches[1]) + "/" + name;
    auto it = configmaps.find(key);
    if (create && it != configmaps.end()) {
      Fail(res, 409, "configmaps \"" + name + "\" already exists");
      return;
    }
    if (!create) {
      if (it == configmaps.end()) {
        Fail(res, 404, "configmaps \"" + name + "\" not found");
        return;
      }
      if (body["metadata"].value("resourceVersion", "") !=
          it->second["metadata"].value("resourceVersion", "")) {
        Fail(res, 409, "Operation cannot be fulfilled on configmaps \"" + name +
                           "\": the object has been modified");
        return;
      }
    }
    body["metadata"]["resourceVersion"] = std::to_string(++resource_version);
    configmaps[key] = body;
    res.status = create ? 201 : 200;
    res.set_content(body.dump(), "application/json");
  }

  void WriteLease(const httplib::Request& req, httplib::Response& res, bool create) {
    std::lock_guard lock(mu);
    if (LeaseFault(res)) return;
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || body.value("kind", "") != "Lease" || !body.contains("metadata")) {
      Fail(res, 400, "not a Lease");
      return;
    }
    const std::string name = create ? body["metadata"].value("name", "")
                                    : std::string(req.matches[2]);
    const std::string key = std::string(req.matches[1]) + "/" + name;
    auto it = leases.find(key);
    if (create && it != leases.end()) {
      Fail(res, 409, "leases.coordination.k8s.io \"" + name + "\" already exists");
      return;
    }
    if (!create && it == leases.end()) {
      Fail(res, 404, "leases.coordination.k8s.io \"" + name + "\" not found");
      return;
    }
    if (!create && lease_before_update.contains(key)) {
      it->second["spec"] = lease_before_update[key];
      it->second["metadata"]["resourceVersion"] = std::to_string(++resource_version);
      lease_before_update.erase(key);
    }
    if (!create && body["metadata"].value("resourceVersion", "") !=
                       it->second["metadata"].value("resourceVersion", "")) {
      Fail(res, 409,
           "Operation cannot be fulfilled on leases.coordination.k8s.io \"" + name +
               "\": the object has been modified; please apply your changes to the latest "
               "version and try again");
      return;
    }
    body["metadata"]["resourceVersion"] = std::to_string(++resource_version);
    leases[key] = body;
    res.status = create ? 201 : 200;
    res.set_content(body.dump(), "application/json");
  }

  static std::string LogKey(const std::string& ns, const std::string& pod, const std::string& c,
                            bool previous) {
    return ns + "/" + pod + "/" + c + (previous ? "/previous" : "/current");
  }

  json* FindPod(const std::string& ns, const std::string& name) {
    for (json& p : pods) {
      if (p["metadata"].value("namespace", "") == ns && p["metadata"].value("name", "") == name) {
        return &p;
      }
    }
    return nullptr;
  }

  // A scripted failure of a pod read, consumed; false when none is due.
  bool PodReadFailure(httplib::Response& res) {
    if (pod_read_failures <= 0) return false;
    --pod_read_failures;
    Fail(res, pod_read_status, pod_read_message);
    return true;
  }

  void List(const httplib::Request& req, httplib::Response& res) {
    const std::string ns = req.matches[1];
    std::lock_guard lock(mu);
    if (PodReadFailure(res)) return;
    if (auto f = namespace_failures.find(ns); f != namespace_failures.end()) {
      Fail(res, f->second.first, f->second.second);
      return;
    }
    const std::string labels = req.get_param_value("labelSelector");
    const std::string fields = req.get_param_value("fieldSelector");
    const size_t limit = req.has_param("limit") ? std::stoul(req.get_param_value("limit")) : 0;
    const size_t from = req.has_param("continue") ? std::stoul(req.get_param_value("continue")) : 0;
    std::vector<const json*> match;
    for (const json& p : pods) {
      if (p["metadata"].value("namespace", "") == ns && MatchesLabels(p, labels) &&
          MatchesFields(p, fields)) {
        match.push_back(&p);
      }
    }
    json items = json::array();
    size_t i = from;
    for (; i < match.size() && (limit == 0 || items.size() < limit); ++i)
      items.push_back(*match[i]);
    json meta = {{"resourceVersion", "1"}};
    if (i < match.size()) meta["continue"] = std::to_string(i);
    res.set_content(
        json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", meta}, {"items", items}}
            .dump(),
        "application/json");
  }

  void Get(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    if (PodReadFailure(res)) return;
    const json* p = FindPod(req.matches[1], req.matches[2]);
    if (p == nullptr) {
      Fail(res, 404, "pods \"" + std::string(req.matches[2]) + "\" not found");
      return;
    }
    res.set_content(p->dump(), "application/json");
  }

  void Patch(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    json* p = FindPod(req.matches[1], req.matches[2]);
    if (p == nullptr) {
      Fail(res, 404, "pods \"" + std::string(req.matches[2]) + "\" not found");
      return;
    }
    if (req.get_header_value("Content-Type") != "application/merge-patch+json") {
      Fail(res, 415, "unsupported patch type");
      return;
    }
    const json body = json::parse(req.body, nullptr, false);
    const json& meta = body.is_object() ? body.value("metadata", json::object()) : json::object();
    if (meta.contains("uid") && meta["uid"] != (*p)["metadata"].value("uid", "")) {
      // As kube-apiserver answers: a patch cannot change metadata.uid.
      const std::string name = req.matches[2];
      const std::string invalid = "Invalid value: " + meta["uid"].dump() + ": field is immutable";
      res.status = 422;
      res.set_content(json{{"kind", "Status"},
                           {"apiVersion", "v1"},
                           {"status", "Failure"},
                           {"message", "Pod \"" + name + "\" is invalid: metadata.uid: " + invalid},
                           {"reason", "Invalid"},
                           {"details",
                            {{"name", name},
                             {"kind", "Pod"},
                             {"causes", {{{"reason", "FieldValueInvalid"},
                                          {"message", invalid},
                                          {"field", "metadata.uid"}}}}}},
                           {"code", 422}}
                          .dump(),
                      "application/json");
      return;
    }
    if (pod_patch_failures > 0) {
      --pod_patch_failures;
      Fail(res, pod_patch_status, pod_patch_message);
      return;
    }
    for (const char* field : {"annotations", "labels"}) {
      const json changes = meta.value(field, json::object());
      for (const auto& [k, v] : changes.items()) {
        if (v.is_null()) {
          if ((*p)["metadata"].contains(field)) (*p)["metadata"][field].erase(k);
        } else {
          (*p)["metadata"][field][k] = v;
        }
      }
    }
    res.set_content(p->dump(), "application/json");
  }

  void Log(const httplib::Request& req, httplib::Response& res) {
    const std::string ns = req.matches[1], pod = req.matches[2];
    FakeLog log;
    {
      std::lock_guard lock(mu);
      const json* p = FindPod(ns, pod);
      if (p == nullptr) {
        Fail(res, 404, "pods \"" + pod + "\" not found");
        return;
      }
      std::string container = req.get_param_value("container");
      const json& containers = (*p)["spec"]["containers"];
      if (container.empty() && containers.size() == 1) container = containers[0].value("name", "");
      const bool previous = req.get_param_value("previous") == "true";
      auto it = logs.find(LogKey(ns, pod, container, previous));
      if (it == logs.end()) {
        Fail(res, 400,
             previous ? "previous terminated container \"" + container + "\" in pod \"" + pod +
                            "\" not found"
                      : "container \"" + container + "\" in pod \"" + pod + "\" is not valid");
        return;
      }
      log = it->second;
    }
    if (log.status != 200) {
      Fail(res, log.status, log.error_message);
      return;
    }
    struct Stream {
      FakeLog log;
      size_t next = 0;
      uint64_t sent = 0;
      uint64_t limit = 0;
      bool timestamps = false;
      TimeFormatter time;
    };
    auto s = std::make_shared<Stream>();
    s->log = std::move(log);
    s->timestamps = req.get_param_value("timestamps") == "true";
    if (req.has_param("limitBytes") && !ignore_limit_bytes) {
      s->limit = std::stoull(req.get_param_value("limitBytes"));
    }
    if (req.has_param("tailLines")) {
      const size_t tail = std::stoul(req.get_param_value("tailLines"));
      s->next = s->log.lines > tail ? s->log.lines - tail : 0;
    }
    if (req.has_param("sinceSeconds")) {
      const int64_t since = std::stoll(req.get_param_value("sinceSeconds"));
      const int64_t threshold = options.now_ns - since * 1'000'000'000;
      if (threshold > s->log.start_ns && s->log.step_ns > 0) {
        const auto first = static_cast<size_t>((threshold - s->log.start_ns + s->log.step_ns - 1) /
                                               s->log.step_ns);
        s->next = std::max(s->next, std::min(first, s->log.lines));
      }
    }
    std::atomic<uint64_t>* served = served_counter;
    res.set_chunked_content_provider("text/plain", [s, served](size_t, httplib::DataSink& sink) {
      std::string chunk;
      while (chunk.size() < (64 << 10) && s->next < s->log.lines) {
        const size_t i = s->next++;
        if (s->timestamps) {
          s->time.Append(s->log.start_ns + static_cast<int64_t>(i) * s->log.step_ns, chunk);
          chunk += ' ';
        }
        chunk += s->log.line(i);
        chunk += '\n';
      }
      if (s->limit > 0 && s->sent + chunk.size() > s->limit) chunk.resize(s->limit - s->sent);
      s->sent += chunk.size();
      *served += chunk.size();
      if (!chunk.empty() && !sink.write(chunk.data(), chunk.size())) return false;
      if (s->next >= s->log.lines || (s->limit > 0 && s->sent >= s->limit)) sink.done();
      return true;
    });
  }

  void Event(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    if (event_status != 0) {
      Fail(res, event_status, event_message);
      return;
    }
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object()) {
      Fail(res, 400, "not an Event");
      return;
    }
    events.push_back(body);
    res.status = 201;
    res.set_content(body.dump(), "application/json");
  }

  std::atomic<uint64_t>* served_counter = nullptr;
  std::atomic<bool> ignore_limit_bytes{false};
};

FakeApiServer::FakeApiServer(Options options) : impl_(std::make_unique<Impl>(options)) {
  impl_->served_counter = &log_bytes_served_;
  Impl* impl = impl_.get();
  auto& srv = impl->server;
  srv.set_pre_routing_handler([impl](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(impl->mu);
      std::string query;
      for (const auto& [k, v] : req.params) query += (query.empty() ? "" : "&") + k + "=" + v;
      impl->calls.push_back({req.method, req.path, query, req.body});
    }
    if (!impl->options.client_ca_path.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    if (impl->options.token.empty() || auth != "Bearer " + impl->options.token) {
      Fail(res, 401, "Unauthorized");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  srv.Get(R"(/api/v1/namespaces/([^/]+)/pods)",
          [impl](const httplib::Request& q, httplib::Response& r) { impl->List(q, r); });
  srv.Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/log)",
          [impl](const httplib::Request& q, httplib::Response& r) { impl->Log(q, r); });
  srv.Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
          [impl](const httplib::Request& q, httplib::Response& r) { impl->Get(q, r); });
  srv.Patch(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
            [impl](const httplib::Request& q, httplib::Response& r) { impl->Patch(q, r); });
  srv.Get(R"(/api/v1/nodes)",
          [impl](const httplib::Request& q, httplib::Response& r) { impl->ListNodes(q, r); });
  srv.Get(R"(/api/v1/nodes/([^/]+))",
          [impl](const httplib::Request& q, httplib::Response& r) { impl->GetNode(q, r); });
  srv.Patch(R"(/api/v1/nodes/([^/]+))",
            [impl](const httplib::Request& q, httplib::Response& r) { impl->PatchNode(q, r); });
  srv.Get(R"(/api/v1/namespaces/([^/]+)/configmaps/([^/]+))",
          [impl](const httplib::Request& q, httplib::Response& r) { impl->GetConfigMap(q, r); });
  srv.Post(R"(/api/v1/namespaces/([^/]+)/configmaps)",
           [impl](const httplib::Request& q, httplib::Response& r) {
             impl->WriteConfigMap(q, r, true);
           });
  srv.Put(R"(/api/v1/namespaces/([^/]+)/configmaps/([^/]+))",
          [impl](const httplib::Request& q, httplib::Response& r) {
            impl->WriteConfigMap(q, r, false);
          });
  srv.Get(R"(/apis/coordination.k8s.io/v1/namespaces/([^/]+)/leases/([^/]+))",
          [impl](const httplib::Request& q, httplib::Response& r) { impl->GetLease(q, r); });
  srv.Post(R"(/apis/coordination.k8s.io/v1/namespaces/([^/]+)/leases)",
           [impl](const httplib::Request& q, httplib::Response& r) {
             impl->WriteLease(q, r, true);
           });
  srv.Put(R"(/apis/coordination.k8s.io/v1/namespaces/([^/]+)/leases/([^/]+))",
          [impl](const httplib::Request& q, httplib::Response& r) {
            impl->WriteLease(q, r, false);
          });
  srv.Post(R"(/api/v1/namespaces/([^/]+)/events)",
           [impl](const httplib::Request& q, httplib::Response& r) { impl->Event(q, r); });
  srv.Post("/apis/authentication.k8s.io/v1/tokenreviews",
           [impl](const httplib::Request& q, httplib::Response& r) { impl->TokenReview(q, r); });
  srv.Post("/apis/authorization.k8s.io/v1/subjectaccessreviews",
           [impl](const httplib::Request& q, httplib::Response& r) { impl->AccessReview(q, r); });
  // As the real API server: Go's net package sets TCP_NODELAY on every TCP connection.
  srv.set_tcp_nodelay(true);
  port_ = srv.bind_to_any_port("127.0.0.1");
  thread_ = std::thread([impl] { impl->server.listen_after_bind(); });
  while (!srv.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

FakeApiServer::~FakeApiServer() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->stop_cv.notify_all();
  impl_->server.stop();
  thread_.join();
}

void FakeApiServer::AddPod(json pod) {
  std::lock_guard lock(impl_->mu);
  impl_->pods.push_back(std::move(pod));
}

void FakeApiServer::SetLog(const std::string& ns, const std::string& pod,
                           const std::string& container, bool previous, FakeLog log) {
  std::lock_guard lock(impl_->mu);
  impl_->logs[Impl::LogKey(ns, pod, container, previous)] = std::move(log);
}

void FakeApiServer::FailPodReads(int status, std::string message, int times) {
  std::lock_guard lock(impl_->mu);
  impl_->pod_read_status = status;
  impl_->pod_read_message = std::move(message);
  impl_->pod_read_failures = times;
}

void FakeApiServer::FailNamespace(const std::string& ns, int status, std::string message) {
  std::lock_guard lock(impl_->mu);
  impl_->namespace_failures[ns] = {status, std::move(message)};
}

void FakeApiServer::IgnoreLimitBytes() { impl_->ignore_limit_bytes = true; }

void FakeApiServer::FailEvents(int status, std::string message) {
  std::lock_guard lock(impl_->mu);
  impl_->event_status = status;
  impl_->event_message = std::move(message);
}

void FakeApiServer::AddTokenUser(const std::string& token, const std::string& username,
                                 std::vector<std::string> groups) {
  std::lock_guard lock(impl_->mu);
  impl_->token_users[token] = {username, std::move(groups)};
}

void FakeApiServer::AllowNonResource(const std::string& username, const std::string& path,
                                     const std::string& verb) {
  std::lock_guard lock(impl_->mu);
  impl_->grants.insert(username + "\n" + path + "\n" + verb);
}

void FakeApiServer::FailReviews(int status, std::string message) {
  std::lock_guard lock(impl_->mu);
  impl_->review_status = status;
  impl_->review_message = std::move(message);
}

void FakeApiServer::DelayReviews(std::chrono::milliseconds delay) {
  std::lock_guard lock(impl_->mu);
  impl_->review_delay = delay;
}

void FakeApiServer::AddNode(json node) {
  std::lock_guard lock(impl_->mu);
  node["metadata"]["resourceVersion"] = std::to_string(++impl_->resource_version);
  impl_->RecordNodeEvent("ADDED", node);
  impl_->nodes.push_back(std::move(node));
}

void FakeApiServer::DeleteNode(const std::string& name) {
  std::lock_guard lock(impl_->mu);
  auto& nodes = impl_->nodes;
  for (auto it = nodes.begin(); it != nodes.end(); ++it) {
    if ((*it)["metadata"].value("name", "") != name) continue;
    json gone = std::move(*it);
    nodes.erase(it);
    gone["metadata"]["resourceVersion"] = std::to_string(++impl_->resource_version);
    impl_->RecordNodeEvent("DELETED", gone);
    return;
  }
}

void FakeApiServer::CompactNodeEvents() {
  std::lock_guard lock(impl_->mu);
  impl_->compacted = impl_->resource_version;
  impl_->node_events.clear();
}

void FakeApiServer::ScriptNextWatch(WatchScript script) {
  std::lock_guard lock(impl_->mu);
  impl_->watch_scripts.push_back(std::move(script));
}

uint64_t FakeApiServer::node_bytes_served() const { return impl_->node_bytes; }

void FakeApiServer::EndWatchesWhenIdle(bool end) {
  std::lock_guard lock(impl_->mu);
  impl_->watch_ends_when_idle = end;
  impl_->stop_cv.notify_all();
}

void FakeApiServer::EndNodeWatches() {
  std::lock_guard lock(impl_->mu);
  ++impl_->watch_generation;
  impl_->stop_cv.notify_all();
}

json FakeApiServer::Node(const std::string& name) const {
  std::lock_guard lock(impl_->mu);
  const json* n = impl_->FindNode(name);
  return n ? *n : json();
}

void FakeApiServer::FailNodePatches(int status, std::string message, int times) {
  std::lock_guard lock(impl_->mu);
  impl_->node_patch_status = status;
  impl_->node_patch_message = std::move(message);
  impl_->node_patch_failures = times;
}

void FakeApiServer::ChangeNodeBeforeNextPatch(const std::string& name,
                                              std::function<void(json& node)> change) {
  std::lock_guard lock(impl_->mu);
  impl_->node_changes[name] = std::move(change);
}

void FakeApiServer::ChangeNode(const std::string& name, std::function<void(json& node)> change) {
  std::lock_guard lock(impl_->mu);
  if (json* n = impl_->FindNode(name)) {
    change(*n);
    (*n)["metadata"]["resourceVersion"] = std::to_string(++impl_->resource_version);
    impl_->RecordNodeEvent("MODIFIED", *n);
  }
}

json FakeApiServer::ConfigMap(const std::string& ns, const std::string& name) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->configmaps.find(ns + "/" + name);
  return it == impl_->configmaps.end() ? json() : it->second;
}

void FakeApiServer::SetConfigMapData(const std::string& ns, const std::string& name,
                                     const std::map<std::string, std::string>& data) {
  std::lock_guard lock(impl_->mu);
  json& o = impl_->configmaps[ns + "/" + name];
  o["metadata"]["name"] = name;
  o["metadata"]["namespace"] = ns;
  o["metadata"]["resourceVersion"] = std::to_string(++impl_->resource_version);
  o["data"] = data;
}

void FakeApiServer::FailConfigMaps(int status, int times) {
  std::lock_guard lock(impl_->mu);
  impl_->configmap_status = status;
  impl_->configmap_failures = times;
}

std::vector<FakeApiServer::Call> FakeApiServer::Calls() const {
  std::lock_guard lock(impl_->mu);
  return impl_->calls;
}

size_t FakeApiServer::CountCalls(const std::string& method, const std::string& path_part) const {
  std::lock_guard lock(impl_->mu);
  return static_cast<size_t>(
      std::count_if(impl_->calls.begin(), impl_->calls.end(), [&](const Call& c) {
        return c.method == method && c.path.find(path_part) != std::string::npos;
      }));
}

std::map<std::string, std::string> FakeApiServer::Annotations(const std::string& ns,
                                                              const std::string& pod) const {
  std::lock_guard lock(impl_->mu);
  std::map<std::string, std::string> out;
  const json* p = impl_->FindPod(ns, pod);
  if (p == nullptr) return out;
  const json annotations = (*p)["metadata"].value("annotations", json::object());
  for (const auto& [k, v] : annotations.items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

std::map<std::string, std::string> FakeApiServer::Labels(const std::string& ns,
                                                         const std::string& pod) const {
  std::lock_guard lock(impl_->mu);
  std::map<std::string, std::string> out;
  const json* p = impl_->FindPod(ns, pod);
  if (p == nullptr) return out;
  const json labels = (*p)["metadata"].value("labels", json::object());
  for (const auto& [k, v] : labels.items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

void FakeApiServer::FailPodPatches(int status, std::string message, int times) {
  std::lock_guard lock(impl_->mu);
  impl_->pod_patch_status = status;
  impl_->pod_patch_message = std::move(message);
  impl_->pod_patch_failures = times;
}

std::vector<json> FakeApiServer::Events() const {
  std::lock_guard lock(impl_->mu);
  return impl_->events;
}

std::string Base64(const std::string& data) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(data[i]) << 16) |
                       (static_cast<uint8_t>(data[i + 1]) << 8) | static_cast<uint8_t>(data[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i + 1 == data.size()) {
    const uint32_t v = static_cast<uint8_t>(data[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == data.size()) {
    const uint32_t v =
        (static_cast<uint8_t>(data[i]) << 16) | (static_cast<uint8_t>(data[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string KubeconfigFor(int port, const std::string& ca_pem, const std::string& token,
                          const std::string& ns, const std::string& client_cert_pem,
                          const std::string& client_key_pem) {
  std::string user = token.empty() ? "" : "    token: " + token + "\n";
  if (!client_cert_pem.empty()) {
    user += "    client-certificate-data: " + Base64(client_cert_pem) + "\n";
    user += "    client-key-data: " + Base64(client_key_pem) + "\n";
  }
  if (user.empty()) user = "    {}\n";
  return "apiVersion: v1\nkind: Config\ncurrent-context: test\nclusters:\n- name: fake\n"
         "  cluster:\n    server: https://127.0.0.1:" +
         std::to_string(port) + "\n    certificate-authority-data: " + Base64(ca_pem) +
         "\ncontexts:\n- name: test\n  context:\n    cluster: fake\n    user: tester\n"
         "    namespace: " +
         ns + "\nusers:\n- name: tester\n  user:\n" + user;
}

json FakeApiServer::Lease(const std::string& ns, const std::string& name) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->leases.find(ns + "/" + name);
  return it == impl_->leases.end() ? json() : it->second;
}

void FakeApiServer::PutLease(const std::string& ns, const std::string& name, json spec) {
  std::lock_guard lock(impl_->mu);
  impl_->leases[ns + "/" + name] = {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata",
       {{"name", name},
        {"namespace", ns},
        {"resourceVersion", std::to_string(++impl_->resource_version)}}},
      {"spec", std::move(spec)}};
}

void FakeApiServer::PutLeaseBeforeNextUpdate(const std::string& ns, const std::string& name,
                                             json spec) {
  std::lock_guard lock(impl_->mu);
  impl_->lease_before_update[ns + "/" + name] = std::move(spec);
}

void FakeApiServer::FailLeaseCalls(int status, std::string message, int times) {
  std::lock_guard lock(impl_->mu);
  impl_->lease_status = status;
  impl_->lease_message = std::move(message);
  impl_->lease_failures = times;
}

}  // namespace nccl_triage::testing
