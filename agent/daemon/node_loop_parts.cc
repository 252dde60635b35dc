#include "daemon/node_loop_parts.h"

#include <memory>

#include "checks/check.h"

namespace nccl_triage {

GatherFn MakeRootGatherFn(const GatherOptions& options) {
  return [gatherer = SnapshotGatherer(options)] { return gatherer.Gather(); };
}

JudgeFn MakeBuiltinJudgeFn(const Config& config) {
  auto registry = std::make_shared<const CheckRegistry>(BuiltinCheckRegistry());
  return [registry, config](const NodeSnapshot& now, const NodeSnapshot* previous) {
    CheckContext context;
    context.previous = previous;
    return registry->Run(now, config, context);
  };
}

}  // namespace nccl_triage
