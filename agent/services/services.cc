#include "services/services.h"

#include <unistd.h>

#include <memory>
#include <sstream>

#include "daemon/clock.h"
#include "daemon/log.h"
#include "workload/view.h"

namespace nccl_triage {

WorkloadCheckOutput CheckWorkloads(const std::string& root, const NodeSnapshot& snapshot,
                                   const Config& config, std::ostream& err) {
  Logger log(err, LogLevel::kWarn);
  SystemClock clock;
  std::unique_ptr<KubeClient> kube = workload::InClusterLookupClient(log);
  workload::WorkloadMonitorOptions options;
  options.node = snapshot.node;
  options.scanner.root = root;
  options.scanner.self_pid = root == "/" ? static_cast<int>(::getpid()) : 0;
  options.config = config;
  options.annotate = false;
  auto monitor = workload::MakeWorkloadMonitor(options, nullptr, kube.get(), clock, log);
  const workload::WorkloadPass pass = monitor->RunPass(snapshot);

  WorkloadCheckOutput out;
  out.json = workload::WorkloadsJson(pass);
  std::ostringstream table;
  workload::RenderWorkloadsTable(pass, table);
  out.table = table.str();
  out.exit_code = workload::WorkloadExitCode(pass);
  return out;
}

const Services& LinkedServices() {
  static const Services services{kServicesAbi,           NCCL_TRIAGE_VERSION, &RunAgentCommand,
                                 &RunCoordinatorCommand, &RunDemoCommand,     &CheckWorkloads};
  return services;
}

}  // namespace nccl_triage
