// The pool of 64 nodes remediation-00 .. remediation-63 that kube_prepare.sh makes for the real-API
// tests of remediation and of the coordinator's state, and how each test starts from it clean:
// none of our taints (nccl-triage.io/fault, nccl-triage.io/unvalidated), cordons or annotations
// (the admin undoes what an earlier test left).
// Header-only; the tests that use it share the RESOURCE_LOCK remediation_nodes.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "coordinator/remediator.h"
#include "kube/kube_api.h"

namespace nccl_triage::testing {

inline constexpr int kPoolNodes = 64;
// The label kube_prepare.sh gives every node of the pool, and its value.
inline constexpr const char* kPoolLabel = "pool.example/name";
inline constexpr const char* kPoolName = "remediation";

inline std::string PoolNodeName(int i) {
  char name[32];
  std::snprintf(name, sizeof(name), "remediation-%02d", i);
  return name;
}

inline ::testing::AssertionResult ResetPool(KubeClient& admin) {
  for (int i = 0; i < kPoolNodes; ++i) {
    NodePatch p;
    p.taints = nlohmann::json::array();
    p.unschedulable = false;
    p.annotations[std::string(kRemediatedAnnotation)] = std::nullopt;
    p.annotations[std::string(kPendingEventAnnotation)] = std::nullopt;
    p.annotations[std::string(kPendingValidationEventAnnotation)] = std::nullopt;
    KubeResponse r = admin.PatchNode(PoolNodeName(i), p);
    if (!r.ok()) {
      return ::testing::AssertionFailure()
             << PoolNodeName(i) << ": " << r.Describe() << " (made by kube_prepare.sh)";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace nccl_triage::testing
