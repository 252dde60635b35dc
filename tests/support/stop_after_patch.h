// StopAfterFirstPatch: a KubeClient in front of another that asks the remediator to stop right
// after its first node patch, as a SIGTERM (or, for a remediator never stepped again, a SIGKILL)
// arriving while that patch is in flight would. The remediator's calls go through; the workload
// calls a remediator never makes answer 200 {}. Header-only, for the fake and the real API tests.
#pragma once

#include <stop_token>
#include <string>

#include "kube/kube_api.h"

namespace nccl_triage::testing {

class StopAfterFirstPatch final : public KubeClient {
 public:
  explicit StopAfterFirstPatch(KubeClient& inner) : inner_(inner) {}
  KubeResponse ListNodes(const NodeListQuery& q) override { return inner_.ListNodes(q); }
  KubeResponse GetNode(const std::string& n) override { return inner_.GetNode(n); }
  KubeResponse PatchNode(const std::string& n, const NodePatch& p) override {
    KubeResponse r = inner_.PatchNode(n, p);
    ++patches;
    stop.request_stop();
    return r;
  }
  KubeResponse CreateEvent(const KubeEvent& e) override {
    ++events;
    return inner_.CreateEvent(e);
  }
  KubeResponse PatchPodAnnotations(const std::string&, const std::string&,
                                   const AnnotationPatch&) override {
    return {};
  }
  KubeResponse PatchNodeCondition(const std::string&, const NodeCondition&) override {
    return {};
  }
  KubeResponse GetPod(const std::string&, const std::string&) override { return {}; }
  KubeResponse ListPods(const std::string&) override { return {}; }
  KubeResponse PatchPodAnnotationsIfUid(const std::string&, const std::string&,
                                        const std::string&, const AnnotationPatch&) override {
    return {};
  }

  std::stop_source stop;
  int patches = 0;  // node patches sent (the one in flight when the stop came included)
  int events = 0;   // events sent

 private:
  KubeClient& inner_;
};

}  // namespace nccl_triage::testing
