#include "kube/kube_api.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "base/log.h"
#include "core/json_text.h"

namespace nccl_triage {

bool KubeResponse::Retryable() const {
  return status == 0 || status == 408 || status == 429 || status >= 500;
}

bool KubeResponse::Permanent() const { return status == 401 || status == 403 || status == 404; }

bool KubeResponse::UidMismatch() const {
  if (status != 422) return false;
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("details") || !j["details"].is_object()) return false;
  const auto& causes = j["details"].value("causes", nlohmann::json::array());
  if (!causes.is_array()) return false;
  for (const auto& c : causes) {
    if (c.is_object() && c.value("field", "") == "metadata.uid") return true;
  }
  return false;
}

std::string KubeResponse::Describe() const {
  if (status == 0) return error.empty() ? "no response" : error;
  std::string text = "HTTP " + std::to_string(status);
  // The API server answers errors with a v1 Status whose message says what was refused.
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object()) {
    if (j.contains("reason") && j["reason"].is_string()) {
      text += " " + j["reason"].get<std::string>();
    }
    if (j.contains("message") && j["message"].is_string()) {
      std::string m = j["message"].get<std::string>();
      if (m.size() > 300) m = m.substr(0, 300) + "...";
      text += ": " + m;
    }
  }
  return text;
}

nlohmann::json AnnotationPatchBody(const AnnotationPatch& annotations) {
  nlohmann::json a = nlohmann::json::object();
  for (const auto& [k, v] : annotations) a[k] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  return {{"metadata", {{"annotations", a}}}};
}

nlohmann::json AnnotationPatchBody(const AnnotationPatch& annotations, const std::string& uid) {
  nlohmann::json body = AnnotationPatchBody(annotations);
  body["metadata"]["uid"] = uid;
  return body;
}

nlohmann::json LabelPatchBody(const LabelPatch& labels) {
  nlohmann::json l = nlohmann::json::object();
  for (const auto& [k, v] : labels) l[k] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  return {{"metadata", {{"labels", l}}}};
}

nlohmann::json NodeConditionPatchBody(const NodeCondition& c) {
  nlohmann::json cond = {{"type", c.type},
                         {"status", c.status},
                         {"reason", c.reason},
                         {"message", c.message},
                         {"lastHeartbeatTime", FormatRfc3339(c.last_heartbeat_unix_ms)},
                         {"lastTransitionTime", FormatRfc3339(c.last_transition_unix_ms)}};
  return {{"status", {{"conditions", nlohmann::json::array({cond})}}}};
}

nlohmann::json EventBody(const KubeEvent& e) {
  std::string at = FormatRfc3339(e.at_unix_ms);
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), "%llx",
                static_cast<unsigned long long>(e.at_unix_ms) * 1000000ULL);
  nlohmann::json involved = {{"kind", e.involved_kind}, {"name", e.involved_name}};
  if (!e.involved_api_version.empty()) {
    involved["apiVersion"] = e.involved_api_version;
  } else if (e.involved_kind == "Node") {
    involved["apiVersion"] = "v1";
  }
  if (!e.involved_namespace.empty()) involved["namespace"] = e.involved_namespace;
  if (!e.involved_uid.empty()) involved["uid"] = e.involved_uid;
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", e.involved_name + "." + suffix}, {"namespace", e.ns}}},
          {"involvedObject", involved},
          {"reason", e.reason},
          {"message", e.message},
          {"type", e.type},
          {"source", {{"component", e.component}, {"host", e.host}}},
          {"firstTimestamp", at},
          {"lastTimestamp", at},
          {"count", 1},
          {"reportingComponent", e.component},
          {"reportingInstance", e.host}};
}

namespace {

KubeResponse NotSupported(const char* what) {
  KubeResponse r;
  r.error = std::string("this Kubernetes client does not ") + what;
  return r;
}

void AddParam(std::string& q, std::string_view name, std::string_view value) {
  q += q.empty() ? '?' : '&';
  q.append(name);
  q += '=';
  q += UrlEncode(value);
}

}  // namespace

KubeResponse KubeClient::ListNamespacedPods(const std::string&, const PodListQuery&) {
  return NotSupported("list the pods of a namespace");
}

KubeResponse KubeClient::StreamPodLog(const std::string&, const std::string&, const PodLogQuery&,
                                      const LogChunkSink&) {
  return NotSupported("read pod logs");
}

KubeResponse KubeClient::CreateTokenReview(const std::string&, const std::vector<std::string>&) {
  return NotSupported("review tokens");
}

KubeResponse KubeClient::CreateSubjectAccessReview(const AccessReviewRequest&) {
  return NotSupported("review access");
}

KubeResponse KubeClient::ListNodes(const NodeListQuery&) { return NotSupported("list nodes"); }

KubeResponse KubeClient::PatchNode(const std::string&, const NodePatch&) {
  return NotSupported("patch nodes");
}

KubeResponse KubeClient::ListAllPods(const PodListQuery&) {
  return NotSupported("list the pods of every namespace");
}

KubeResponse KubeClient::RemoveNodeCondition(const std::string&, int, const std::string&) {
  return NotSupported("patch node status");
}

KubeResponse KubeClient::WatchNodes(const NodeWatchQuery&, const LineSink&, std::stop_token) {
  return NotSupported("watch nodes");
}

std::string NodeWatchQueryString(const NodeWatchQuery& q) {
  std::string out;
  AddParam(out, "watch", "1");
  if (!q.resource_version.empty()) AddParam(out, "resourceVersion", q.resource_version);
  if (q.allow_bookmarks) AddParam(out, "allowWatchBookmarks", "true");
  if (q.timeout_seconds > 0) AddParam(out, "timeoutSeconds", std::to_string(q.timeout_seconds));
  return out;
}

nlohmann::json NodeConditionRemovalBody(int index, const std::string& type) {
  const std::string path = "/status/conditions/" + std::to_string(index);
  return nlohmann::json::array({{{"op", "test"}, {"path", path + "/type"}, {"value", type}},
                                {{"op", "remove"}, {"path", path}}});
}

KubeResponse KubeClient::GetConfigMap(const std::string&, const std::string&) {
  return NotSupported("get configmaps");
}

KubeResponse KubeClient::PutConfigMap(const std::string&, const std::string&,
                                      const std::map<std::string, std::string>&,
                                      const std::string&) {
  return NotSupported("write configmaps");
}

nlohmann::json ConfigMapBody(const std::string& ns, const std::string& name,
                             const std::map<std::string, std::string>& data,
                             const std::string& resource_version) {
  nlohmann::json meta = {{"name", name}, {"namespace", ns}};
  if (!resource_version.empty()) meta["resourceVersion"] = resource_version;
  nlohmann::json d = nlohmann::json::object();
  for (const auto& [k, v] : data) d[k] = v;
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", meta}, {"data", d}};
}

KubeResponse KubeClient::GetLease(const std::string&, const std::string&) {
  return NotSupported("read leases");
}

KubeResponse KubeClient::CreateLease(const std::string&, const nlohmann::json&) {
  return NotSupported("create leases");
}

KubeResponse KubeClient::UpdateLease(const std::string&, const std::string&,
                                     const nlohmann::json&) {
  return NotSupported("update leases");
}

KubeResponse KubeClient::PatchPodLabels(const std::string&, const std::string&,
                                        const LabelPatch&) {
  return NotSupported("patch pod labels");
}

KubeResponse KubeClient::DeleteObject(const std::string&, const std::string&,
                                      const std::string&) {
  return NotSupported("delete objects");
}

nlohmann::json NodePatchBody(const NodePatch& patch) {
  nlohmann::json body = nlohmann::json::object();
  if (!patch.resource_version.empty()) {
    body["metadata"]["resourceVersion"] = patch.resource_version;
  }
  if (!patch.annotations.empty()) {
    body["metadata"]["annotations"] =
        AnnotationPatchBody(patch.annotations)["metadata"]["annotations"];
  }
  if (patch.taints) body["spec"]["taints"] = *patch.taints;
  if (patch.unschedulable) body["spec"]["unschedulable"] = *patch.unschedulable;
  return body;
}

std::string PodListQueryString(const PodListQuery& q) {
  std::string out;
  if (!q.label_selector.empty()) AddParam(out, "labelSelector", q.label_selector);
  if (!q.field_selector.empty()) AddParam(out, "fieldSelector", q.field_selector);
  if (q.limit > 0) AddParam(out, "limit", std::to_string(q.limit));
  if (!q.continue_token.empty()) AddParam(out, "continue", q.continue_token);
  return out;
}

std::string PodLogQueryString(const PodLogQuery& q) {
  std::string out;
  if (!q.container.empty()) AddParam(out, "container", q.container);
  if (q.previous) AddParam(out, "previous", "true");
  if (q.timestamps) AddParam(out, "timestamps", "true");
  if (q.since_seconds > 0) AddParam(out, "sinceSeconds", std::to_string(q.since_seconds));
  if (q.limit_bytes > 0) AddParam(out, "limitBytes", std::to_string(q.limit_bytes));
  if (q.tail_lines >= 0) AddParam(out, "tailLines", std::to_string(q.tail_lines));
  return out;
}

std::string UrlEncode(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

nlohmann::json TokenReviewBody(const std::string& token,
                               const std::vector<std::string>& audiences) {
  return {{"apiVersion", "authentication.k8s.io/v1"},
          {"kind", "TokenReview"},
          {"spec", {{"token", token}, {"audiences", audiences}}}};
}

StatusOr<TokenIdentity> TokenIdentityFromReview(std::string_view body) {
  // Every field is checked for its type before it is read: json::value() throws on a mismatch.
  auto text = [](const nlohmann::json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || text(j, "kind") != "TokenReview" ||
      !j.contains("status") || !j["status"].is_object()) {
    return InvalidArgument("not a TokenReview response");
  }
  const nlohmann::json& status = j["status"];
  TokenIdentity id;
  auto first_extra = [](const nlohmann::json& user, const char* key) {
    auto extra = user.find("extra");
    if (extra == user.end() || !extra->is_object()) return std::string();
    auto values = extra->find(key);
    if (values == extra->end() || !values->is_array() || values->empty() ||
        !values->front().is_string()) {
      return std::string();
    }
    return values->front().get<std::string>();
  };
  auto authenticated = status.find("authenticated");
  id.authenticated =
      authenticated != status.end() && authenticated->is_boolean() && authenticated->get<bool>();
  id.error = text(status, "error");
  if (auto user = status.find("user"); user != status.end() && user->is_object()) {
    id.username = text(*user, "username");
    id.pod_name = first_extra(*user, "authentication.kubernetes.io/pod-name");
    id.pod_uid = first_extra(*user, "authentication.kubernetes.io/pod-uid");
    id.node_name = first_extra(*user, "authentication.kubernetes.io/node-name");
    id.uid = text(*user, "uid");
    if (auto groups = user->find("groups"); groups != user->end() && groups->is_array()) {
      for (const auto& g : *groups) {
        if (g.is_string()) id.groups.push_back(g.get<std::string>());
      }
    }
    if (auto extra = user->find("extra"); extra != user->end() && extra->is_object()) {
      for (const auto& [key, values] : extra->items()) {
        if (!values.is_array()) continue;
        auto& out = id.extra[key];
        for (const auto& v : values) {
          if (v.is_string()) out.push_back(v.get<std::string>());
        }
      }
    }
  }
  return id;
}

nlohmann::json SubjectAccessReviewBody(const AccessReviewRequest& r) {
  nlohmann::json spec = {{"user", r.username},
                         {"groups", r.groups},
                         {"nonResourceAttributes", {{"path", r.path}, {"verb", r.verb}}}};
  if (!r.uid.empty()) spec["uid"] = r.uid;
  if (!r.extra.empty()) spec["extra"] = r.extra;
  return {{"apiVersion", "authorization.k8s.io/v1"},
          {"kind", "SubjectAccessReview"},
          {"spec", std::move(spec)}};
}

StatusOr<AccessDecision> AccessDecisionFromReview(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("kind") ||
      j["kind"] != "SubjectAccessReview" || !j.contains("status") || !j["status"].is_object()) {
    return InvalidArgument("not a SubjectAccessReview response");
  }
  const nlohmann::json& status = j["status"];
  auto text = [&status](const char* key) {
    auto it = status.find(key);
    return it != status.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  AccessDecision d;
  auto allowed = status.find("allowed");
  d.allowed = allowed != status.end() && allowed->is_boolean() && allowed->get<bool>();
  d.reason = text("reason");
  d.evaluation_error = text("evaluationError");
  return d;
}

std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  long long secs = -1;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), secs);
  if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() || secs < 0) {
    return std::nullopt;
  }
  return std::chrono::seconds(std::min<long long>(secs, 3600));
}

std::string ListEveryPage(const std::function<KubeResponse(const PodListQuery&)>& list,
                          PodListQuery query, int page_size, int max_items,
                          const std::function<std::string()>& cut_short,
                          const std::function<void(const nlohmann::json&)>& on_item,
                          std::string* resource_version) {
  query.limit = std::max(page_size, 1);
  const int max_pages = std::max(max_items, 1) / query.limit + 1;
  for (int page = 0; page < max_pages; ++page) {
    if (cut_short) {
      if (std::string cut = cut_short(); !cut.empty()) return "cut short: " + cut;
    }
    KubeResponse r = list(query);
    if (!r.ok()) return r.Describe();
    const nlohmann::json got = nlohmann::json::parse(r.body, nullptr, false);
    if (!got.is_object() || !got.contains("items") || !got["items"].is_array()) {
      return "not a list";
    }
    for (const nlohmann::json& item : got["items"]) {
      if (item.is_object()) on_item(item);
    }
    const nlohmann::json meta = got.value("metadata", nlohmann::json::object());
    if (resource_version != nullptr) *resource_version = StringMember(meta, "resourceVersion");
    const auto next = meta.is_object() ? meta.find("continue") : meta.end();
    const std::string token = next != meta.end() && next->is_string() ? next->get<std::string>()
                                                                       : std::string();
    if (token.empty()) return {};
    if (token == query.continue_token) return "the server repeats its continue token";
    query.continue_token = token;
  }
  return "more than " + std::to_string(max_pages) + " pages (" + std::to_string(max_items) +
         " items)";
}

nlohmann::json TaintsWithoutKey(const nlohmann::json& taints, std::string_view key) {
  nlohmann::json out = nlohmann::json::array();
  if (!taints.is_array()) return out;
  for (const nlohmann::json& t : taints) {
    if (StringMember(t, "key") == key) continue;
    out.push_back(t);
  }
  return out;
}

bool NoteRecurringList(const std::string& why, std::string_view what, std::string_view recovered,
                       bool& failing, Logger& log, std::string_view component,
                       std::string* error) {
  if (!why.empty()) {
    *error = std::string(what) + ": " + why;
    if (!failing) log.Warn(component, *error + " (retried next sweep)");
    failing = true;
    return false;
  }
  if (failing) log.Info(component, recovered);
  failing = false;
  return true;
}

}  // namespace nccl_triage
