#include "daemon/node_loop_parts.h"

#include <memory>

#include "checks/check.h"

namespace nccl_triage {

GatherFn MakeRootGatherFn(const GatherOptions& options) {
  return [gatherer = SnapshotGatherer(options)] { return gatherer.Gather(); };
}

JudgeFn MakeBuiltinJudgeFn(const Config& config, std::shared_ptr<PortMemory> ports) {
  auto registry = std::make_shared<const CheckRegistry>(BuiltinCheckRegistry());
  return [registry, config, ports](const NodeSnapshot& now, const NodeSnapshot* previous) {
    CheckContext context;
    context.previous = previous;
    if (ports) context.ports = &ports->BeginPoll(now, previous);
    std::vector<Finding> findings = registry->Run(now, config, context);
    if (ports) ports->EndPoll(now);
    return findings;
  };
}

}  // namespace nccl_triage
