#include "support/fake_kube_client.h"

#include <string_view>
#include <thread>

namespace nccl_triage {

void FakeKubeClient::PushResponse(KubeResponse r) {
  std::lock_guard lock(mu_);
  scripted_.push_back(std::move(r));
}

void FakeKubeClient::SetDefaultResponse(KubeResponse r) {
  std::lock_guard lock(mu_);
  default_ = std::move(r);
}

void FakeKubeClient::SetLatency(std::chrono::milliseconds latency) {
  std::lock_guard lock(mu_);
  latency_ = latency;
}

void FakeKubeClient::SetPods(nlohmann::json pod_list) {
  std::lock_guard lock(mu_);
  pods_ = std::move(pod_list);
}

void FakeKubeClient::SetNodes(nlohmann::json node_list) {
  std::lock_guard lock(mu_);
  nodes_ = std::move(node_list);
}

void FakeKubeClient::SetTokenUsers(std::map<std::string, nlohmann::json> users) {
  std::lock_guard lock(mu_);
  token_users_ = std::move(users);
}

std::vector<FakeKubeClient::Call> FakeKubeClient::Calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

size_t FakeKubeClient::CallCount(const std::string& method) const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& c : calls_) n += c.method == method;
  return n;
}

std::map<std::string, std::string> FakeKubeClient::Annotations(const std::string& ns,
                                                               const std::string& pod) const {
  std::lock_guard lock(mu_);
  auto it = annotations_.find(ns + "/" + pod);
  return it == annotations_.end() ? std::map<std::string, std::string>{} : it->second;
}

std::map<std::string, NodeCondition> FakeKubeClient::Conditions() const {
  std::lock_guard lock(mu_);
  return conditions_;
}

std::vector<KubeEvent> FakeKubeClient::Events() const {
  std::lock_guard lock(mu_);
  return events_;
}

KubeResponse FakeKubeClient::Answer(const std::string& method, const std::string& target,
                                    nlohmann::json body) {
  std::chrono::milliseconds latency;
  {
    std::lock_guard lock(mu_);
    latency = latency_;
  }
  if (latency.count() > 0) std::this_thread::sleep_for(latency);
  std::lock_guard lock(mu_);
  KubeResponse r = default_;
  if (!scripted_.empty()) {
    r = std::move(scripted_.front());
    scripted_.pop_front();
  }
  calls_.push_back({method, target, std::move(body), r});
  return r;
}

KubeResponse FakeKubeClient::PatchPodAnnotations(const std::string& ns, const std::string& pod,
                                                 const AnnotationPatch& annotations) {
  KubeResponse r = Answer("PatchPodAnnotations", ns + "/" + pod, AnnotationPatchBody(annotations));
  if (r.ok()) {
    std::lock_guard lock(mu_);
    auto& current = annotations_[ns + "/" + pod];
    for (const auto& [k, v] : annotations) {
      if (v) {
        current[k] = *v;
      } else {
        current.erase(k);
      }
    }
  }
  return r;
}

KubeResponse FakeKubeClient::PatchNodeCondition(const std::string& node, const NodeCondition& c) {
  KubeResponse r = Answer("PatchNodeCondition", node, NodeConditionPatchBody(c));
  if (r.ok()) {
    std::lock_guard lock(mu_);
    conditions_[node] = c;
  }
  return r;
}

KubeResponse FakeKubeClient::CreateEvent(const KubeEvent& event) {
  KubeResponse r = Answer("CreateEvent", event.reason, EventBody(event));
  if (r.ok()) {
    std::lock_guard lock(mu_);
    events_.push_back(event);
  }
  return r;
}

KubeResponse FakeKubeClient::GetPod(const std::string& ns, const std::string& name) {
  KubeResponse r = Answer("GetPod", ns + "/" + name, nullptr);
  if (r.ok()) {
    std::lock_guard lock(mu_);
    for (const auto& item : pods_.value("items", nlohmann::json::array())) {
      if (item["metadata"].value("namespace", "") == ns &&
          item["metadata"].value("name", "") == name) {
        r.body = item.dump();
        return r;
      }
    }
    r.status = 404;
    r.body = R"({"kind":"Status","reason":"NotFound","message":"pod not found"})";
  }
  return r;
}

KubeResponse FakeKubeClient::ListPods(const std::string& field_selector) {
  KubeResponse r = Answer("ListPods", field_selector, nullptr);
  if (r.ok()) {
    std::lock_guard lock(mu_);
    // Understands the one selector nccl-triage uses: spec.nodeName=<node>.
    std::string node;
    constexpr std::string_view kNodeSelector = "spec.nodeName=";
    if (field_selector.rfind(kNodeSelector, 0) == 0)
      node = field_selector.substr(kNodeSelector.size());
    nlohmann::json list = pods_;
    list["items"] = nlohmann::json::array();
    for (const auto& item : pods_.value("items", nlohmann::json::array())) {
      if (node.empty() ||
          item.value("spec", nlohmann::json::object()).value("nodeName", "") == node) {
        list["items"].push_back(item);
      }
    }
    r.body = list.dump();
  }
  return r;
}

KubeResponse FakeKubeClient::GetNode(const std::string& name) {
  KubeResponse r = Answer("GetNode", name, nullptr);
  if (r.ok()) {
    std::lock_guard lock(mu_);
    for (const auto& item : nodes_.value("items", nlohmann::json::array())) {
      if (item.value("metadata", nlohmann::json::object()).value("name", "") == name) {
        r.body = item.dump();
        return r;
      }
    }
    r.status = 404;
    r.body = R"({"kind":"Status","reason":"NotFound","message":"node not found"})";
  }
  return r;
}

KubeResponse FakeKubeClient::CreateTokenReview(const std::string& token,
                                               const std::vector<std::string>& audiences) {
  // The token is a credential: the call records the audiences only.
  KubeResponse r = Answer("CreateTokenReview", "", {{"audiences", audiences}});
  if (r.ok()) {
    std::lock_guard lock(mu_);
    nlohmann::json review = {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenReview"}};
    auto user = token_users_.find(token);
    review["status"] = user == token_users_.end()
                           ? nlohmann::json{{"authenticated", false},
                                            {"error", "invalid bearer token"}}
                           : nlohmann::json{{"authenticated", true},
                                            {"user", user->second},
                                            {"audiences", audiences}};
    r.body = review.dump();
  }
  return r;
}

void FakeKubeClient::SetNonResourceGrants(std::set<std::string> grants) {
  std::lock_guard lock(mu_);
  grants_ = std::move(grants);
}

KubeResponse FakeKubeClient::CreateSubjectAccessReview(const AccessReviewRequest& request) {
  KubeResponse r = Answer("CreateSubjectAccessReview", request.username,
                          SubjectAccessReviewBody(request));
  if (r.ok()) {
    std::lock_guard lock(mu_);
    const bool allowed =
        grants_.contains(request.username + " " + request.verb + " " + request.path);
    r.body = nlohmann::json{{"apiVersion", "authorization.k8s.io/v1"},
                            {"kind", "SubjectAccessReview"},
                            {"status", {{"allowed", allowed}}}}
                 .dump();
  }
  return r;
}

KubeResponse FakeKubeClient::PatchPodAnnotationsIfUid(const std::string& ns, const std::string& pod,
                                                      const std::string& uid,
                                                      const AnnotationPatch& annotations) {
  KubeResponse r =
      Answer("PatchPodAnnotations", ns + "/" + pod, AnnotationPatchBody(annotations, uid));
  if (!r.ok()) return r;
  std::lock_guard lock(mu_);
  std::optional<nlohmann::json> found;
  for (const auto& item : pods_.value("items", nlohmann::json::array())) {
    const auto meta = item.value("metadata", nlohmann::json::object());
    if (meta.value("namespace", "") == ns && meta.value("name", "") == pod) found = item;
  }
  if (!found) {
    r.status = 404;
    r.body = nlohmann::json{{"kind", "Status"},
                            {"reason", "NotFound"},
                            {"message", "pods \"" + pod + "\" not found"}}
                 .dump();
  } else if ((*found)["metadata"].value("uid", "") != uid) {
    // As kube-apiserver answers a patch that would change metadata.uid.
    r.status = 422;
    r.body = nlohmann::json{{"kind", "Status"},
                            {"reason", "Invalid"},
                            {"message", "Pod \"" + pod + "\" is invalid: metadata.uid: field is immutable"},
                            {"details", {{"causes", {{{"field", "metadata.uid"}}}}}}}
                 .dump();
  } else {
    auto& current = annotations_[ns + "/" + pod];
    for (const auto& [k, v] : annotations) {
      if (v) {
        current[k] = *v;
      } else {
        current.erase(k);
      }
    }
  }
  calls_.back().response = r;
  return r;
}

}  // namespace nccl_triage
