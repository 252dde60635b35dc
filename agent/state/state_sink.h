// StateSink: what publishes the agent's state (the Kubernetes publisher, tests) implements; the
// agent loop calls it after every change. Lives beside AgentState so that publishers depend on
// the state, not on the loop that writes it.
#pragma once

#include "state/agent_state.h"

namespace nccl_triage {

// Receives the state after every change the agent makes. Must not block (queue and return).
class StateSink {
 public:
  virtual ~StateSink() = default;
  virtual void OnState(const AgentStateView& view) = 0;
};

}  // namespace nccl_triage
