// FakeKubeClient: an in-memory KubeClient for tests and the demo. It records every call, keeps the
// pods' annotations and the node conditions it was sent, and injects errors and latency: a queue
// of scripted responses is served first, then a default response.
// Thread-safe.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <set>
#include <mutex>
#include <string>
#include <vector>

#include "kube/kube_api.h"

namespace nccl_triage {

class FakeKubeClient final : public KubeClient {
 public:
  struct Call {
    std::string method;  // "PatchPodAnnotations", "PatchNodeCondition", "CreateEvent", ...
    std::string target;  // "ns/pod", node name, event reason, field selector
    nlohmann::json body;
    KubeResponse response;
  };

  // The next calls answer these, in order (then the default, 200 {}).
  void PushResponse(KubeResponse r);
  void SetDefaultResponse(KubeResponse r);
  void SetLatency(std::chrono::milliseconds latency);  // every call sleeps this long (real time)
  // Answers GetPod/ListPods with this body (a PodList for ListPods).
  void SetPods(nlohmann::json pod_list);
  // Answers GetNode from this NodeList (404 for a node not in it).
  void SetNodes(nlohmann::json node_list);
  // Answers CreateTokenReview: a token in the map is authenticated as that user (a TokenReview
  // status.user object); any other is not. The audiences asked for are recorded with the call.
  void SetTokenUsers(std::map<std::string, nlohmann::json> users);
  // Answers CreateSubjectAccessReview: allowed when "<user> <verb> <path>" is in the set (a
  // non-resource URL, as the HTTP authorizer asks); any other question is not allowed.
  void SetNonResourceGrants(std::set<std::string> grants);

  std::vector<Call> Calls() const;
  size_t CallCount(const std::string& method) const;
  // Annotations accumulated from successful merge patches of one pod.
  std::map<std::string, std::string> Annotations(const std::string& ns,
                                                 const std::string& pod) const;
  std::map<std::string, NodeCondition> Conditions() const;  // by node, last successful patch
  std::vector<KubeEvent> Events() const;

  KubeResponse PatchPodAnnotations(const std::string& ns, const std::string& pod,
                                   const AnnotationPatch& annotations) override;
  KubeResponse PatchNodeCondition(const std::string& node, const NodeCondition& c) override;
  KubeResponse CreateEvent(const KubeEvent& event) override;
  KubeResponse GetPod(const std::string& ns, const std::string& name) override;
  KubeResponse ListPods(const std::string& field_selector) override;
  KubeResponse GetNode(const std::string& name) override;
  // Checks the pods set with SetPods like the API does: 404 when no pod has that name, 409 when
  // it has another UID (after any scripted response, which is served first as usual).
  KubeResponse PatchPodAnnotationsIfUid(const std::string& ns, const std::string& pod,
                                        const std::string& uid,
                                        const AnnotationPatch& annotations) override;
  KubeResponse CreateTokenReview(const std::string& token,
                                 const std::vector<std::string>& audiences) override;
  KubeResponse CreateSubjectAccessReview(const AccessReviewRequest& request) override;

 private:
  KubeResponse Answer(const std::string& method, const std::string& target, nlohmann::json body);

  mutable std::mutex mu_;
  std::deque<KubeResponse> scripted_;
  KubeResponse default_{200, "", "{}", std::nullopt};
  std::chrono::milliseconds latency_{0};
  nlohmann::json pods_ = {{"kind", "PodList"}, {"items", nlohmann::json::array()}};
  nlohmann::json nodes_ = {{"kind", "NodeList"}, {"items", nlohmann::json::array()}};
  std::map<std::string, nlohmann::json> token_users_;
  std::set<std::string> grants_;
  std::vector<Call> calls_;
  std::map<std::string, std::map<std::string, std::string>> annotations_;
  std::map<std::string, NodeCondition> conditions_;
  std::vector<KubeEvent> events_;
};

}  // namespace nccl_triage
