#include "daemon/probe_adapter.h"

#include <signal.h>

#include <algorithm>

#include "core/gpu_use.h"
#include "probe/intra_node.h"

namespace nccl_triage {

ProbeFn MakeRunnerProbeFn(std::shared_ptr<const ProbeRunner> runner) {
  return [runner = std::move(runner)](const ProbeAssignment& a,
                                     std::stop_token stop) -> ProbeResult {
    std::shared_ptr<const ProbeRunner> use = runner;
    ProbeConfig config = runner->config();
    bool custom = false;
    if (a.size_bytes > 0 && a.size_bytes != config.size_bytes) {
      config.size_bytes = a.size_bytes;
      custom = true;
    }
    if (a.timeout_seconds > 0 && a.timeout_seconds < config.timeout_seconds) {
      config.timeout_seconds = std::max(1, a.timeout_seconds);
      custom = true;
    }
    if (custom) use = std::make_shared<const ProbeRunner>(config, runner->options());

    ProbeRequest request;
    request.mode = a.mode;
    request.rank = a.rank;
    request.nranks = a.nranks;
    request.peer = a.peer;
    request.ib_hca = a.ib_hca;
    request.gpu_bus_id = a.gpu_bus_id;
    request.tag = a.tag;
    auto started = use->Start(request);
    if (!started.ok()) {
      ProbeResult r;
      r.mode = a.mode;
      r.rank = a.rank;
      r.nranks = a.nranks;
      r.peer = a.peer;
      r.outcome = ProbeOutcome::kUnavailable;
      r.detail = started.status().message();
      return r;
    }
    ProbeChildProcess& child = **started;
    Subprocess& process = child.process();
    pid_t group = process.pid();
    // Cancel: signal the child's whole group; Pump below wakes up on the exit.
    std::stop_callback cancel(stop, [group] {
      if (group > 0) ::kill(-group, SIGKILL);
    });
    Subprocess* procs[] = {&process};
    if (a.rank == 0) {
      Subprocess::Pump(
          procs, [&] { return stop.stop_requested() || child.UniqueId() || process.done(); },
          process.deadline());
      if (auto id = child.UniqueId(); id && a.publish_unique_id) a.publish_unique_id(*id);
    } else {
      std::optional<std::string> id;
      if (a.await_unique_id) id = a.await_unique_id(stop);
      if (id) {
        (void)child.SendUniqueId(*id);  // a child that already exited reports on its own
      } else {
        process.CloseStdin();  // no id will come: the child gives up at once
      }
    }
    Subprocess::Pump(procs, [&] { return process.done(); }, process.deadline());
    ProbeResult result = child.Finish();
    if (stop.stop_requested()) {
      result.outcome = ProbeOutcome::kNotRun;
      result.detail = "cancelled";
    }
    return result;
  };
}

IntraNodeFn MakeIntraNodeFn(std::shared_ptr<const ProbeRunner> runner, bool allow_when_gpus_busy) {
  return [runner = std::move(runner), allow_when_gpus_busy](const NodeSnapshot& snapshot,
                                                            std::stop_token stop) -> Finding {
    GpuUse use = JudgeGpuUse(snapshot);
    std::vector<std::string> gpus;
    for (const auto& g : use.idle) {
      if (!g.empty()) gpus.push_back(g);  // "" (no GPU listed) names nothing to run on
    }
    if (gpus.empty() && allow_when_gpus_busy) {
      for (const auto& g : snapshot.gpus) gpus.push_back(g.bdf);
    }
    std::string note =
        std::to_string(gpus.size()) + " of " + std::to_string(snapshot.gpus.size()) + " GPUs idle";
    if (!use.busy.empty()) note += "; busy: " + use.busy.front();
    if (!snapshot.gpu_allocations_error.empty()) {
      note += "; kubelet assignments unknown (" + snapshot.gpu_allocations_error + ")";
    }
    Finding f = RunIntraNode(*runner, gpus, note, stop).finding;
    f.evidence.push_back({"GPU use", note,
                          snapshot.gpu_allocations ? "proc/*/fd, proc/*/maps, kubelet pod-resources"
                                                   : "proc/*/fd, proc/*/maps"});
    return f;
  };
}

}  // namespace nccl_triage
