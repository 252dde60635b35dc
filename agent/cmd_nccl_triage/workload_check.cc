#include "cmd_nccl_triage/workload_check.h"

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>

#include "base/clock.h"
#include "base/log.h"
#include "probe/subprocess.h"
#include "workload/lookup.h"
#include "workload/view.h"

namespace nccl_triage {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// Runs `nccl-triage-server workload-lookup` once, on first use, and serves its answers. A child
// that cannot run, fails or prints something else turns into the error of every answer.
class ServerLookup {
 public:
  ServerLookup(std::string server_exe, std::string node, bool api, std::string socket)
      : server_exe_(std::move(server_exe)),
        node_(std::move(node)),
        api_(api),
        socket_(std::move(socket)) {}

  KubeResponse Pods() {
    Fetch();
    return lookup_.pods ? *lookup_.pods : Failed();
  }
  KubeResponse Node() {
    Fetch();
    return lookup_.node ? *lookup_.node : Failed();
  }
  StatusOr<std::vector<workload::PodResourcesEntry>> PodResources() {
    Fetch();
    if (!error_.empty()) return Unavailable(error_);
    if (!lookup_.pod_resources) return Unavailable("the lookup did not read the kubelet");
    return *lookup_.pod_resources;
  }

 private:
  KubeResponse Failed() const {
    KubeResponse r;
    r.error = error_.empty() ? std::string("not read") : error_;
    return r;
  }

  void Fetch() {
    if (fetched_) return;
    fetched_ = true;
    SubprocessOptions o;
    o.argv = {server_exe_, "workload-lookup", "--node", node_};
    if (api_) o.argv.push_back("--api");
    if (!socket_.empty()) {
      o.argv.push_back("--pod-resources");
      o.argv.push_back(socket_);
    }
    // Only what the in-cluster client reads; the service account files are paths, not variables.
    for (const char* name : {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}) {
      const std::string v = Env(name);
      if (!v.empty()) o.env.push_back(std::string(name) + "=" + v);
    }
    o.timeout = std::chrono::seconds(30);
    o.max_output_bytes = 64 << 20;
    if (::access(server_exe_.c_str(), X_OK) != 0) {
      error_ = server_exe_ +
               " not found: pod names and device assignments need nccl-triage-server "
               "installed beside nccl-triage";
      return;
    }
    const SubprocessResult r = RunSubprocess(std::move(o));
    if (r.kind != ExitKind::kExited || r.exit_code != 0) {
      std::string why = r.kind == ExitKind::kExited ? "exit " + std::to_string(r.exit_code)
                                                    : std::string(ToString(r.kind));
      const auto nl = r.err.find('\n');
      if (!r.err.empty()) why += ": " + r.err.substr(0, nl);
      error_ = "nccl-triage-server workload-lookup failed (" + why + ")";
      return;
    }
    if (r.out_dropped > 0) {
      error_ = "nccl-triage-server workload-lookup: the answer exceeds 64 MiB";
      return;
    }
    auto parsed = workload::WorkloadLookupFromJson(
        nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false));
    if (!parsed.ok()) {
      error_ = parsed.status().message();
      return;
    }
    lookup_ = std::move(parsed).value();
  }

  std::string server_exe_, node_;
  bool api_;
  std::string socket_;
  bool fetched_ = false;
  std::string error_;
  workload::WorkloadLookup lookup_;
};

// The monitor's KubeClient: the two reads it makes in a read-only pass; writes are refused.
class LookupKubeClient final : public KubeClient {
 public:
  explicit LookupKubeClient(ServerLookup& lookup) : lookup_(lookup) {}
  KubeResponse ListPods(const std::string&) override { return lookup_.Pods(); }
  KubeResponse GetNode(const std::string&) override { return lookup_.Node(); }
  KubeResponse GetPod(const std::string&, const std::string&) override { return ReadOnly(); }
  KubeResponse PatchPodAnnotations(const std::string&, const std::string&,
                                   const AnnotationPatch&) override {
    return ReadOnly();
  }
  KubeResponse PatchNodeCondition(const std::string&, const NodeCondition&) override {
    return ReadOnly();
  }
  KubeResponse CreateEvent(const KubeEvent&) override { return ReadOnly(); }
  KubeResponse PatchPodAnnotationsIfUid(const std::string&, const std::string&, const std::string&,
                                        const AnnotationPatch&) override {
    return ReadOnly();
  }

 private:
  static KubeResponse ReadOnly() {
    KubeResponse r;
    r.error = "check --workloads is read-only";
    return r;
  }
  ServerLookup& lookup_;
};

class LookupPodResources final : public workload::PodResourcesSource {
 public:
  explicit LookupPodResources(ServerLookup& lookup) : lookup_(lookup) {}
  StatusOr<std::vector<workload::PodResourcesEntry>> List() override {
    return lookup_.PodResources();
  }

 private:
  ServerLookup& lookup_;
};

}  // namespace

WorkloadCheckOutput CheckWorkloads(const std::string& root, const NodeSnapshot& snapshot,
                                   const Config& config, const std::string& server_exe,
                                   std::ostream& err) {
  Logger log(err, LogLevel::kWarn);
  SystemClock clock;
  // The API only from inside a pod (as before the split: the in-cluster client needs the
  // service account); the kubelet only when the root has its socket.
  const bool api = !Env("KUBERNETES_SERVICE_HOST").empty();
  const std::string socket = workload::PodResourcesSocketUnder(root);
  ServerLookup lookup(server_exe, snapshot.node, api, socket);
  LookupKubeClient kube(lookup);
  std::unique_ptr<workload::PodResourcesSource> pod_resources;
  if (!socket.empty()) pod_resources = std::make_unique<LookupPodResources>(lookup);

  workload::WorkloadMonitorOptions options;
  options.node = snapshot.node;
  options.scanner.root = root;
  options.scanner.self_pid = root == "/" ? static_cast<int>(::getpid()) : 0;
  options.config = config;
  options.annotate = false;
  options.config.ras.enabled = false;  // a check asks no RAS port (`nccl-triage ras` does)
  auto monitor = workload::MakeWorkloadMonitor(options, nullptr, api ? &kube : nullptr,
                                               std::move(pod_resources), clock, log);
  const workload::WorkloadPass pass = monitor->RunPass(snapshot);

  WorkloadCheckOutput out;
  out.json = workload::WorkloadsJson(pass);
  std::ostringstream table;
  workload::RenderWorkloadsTable(pass, table);
  out.table = table.str();
  out.exit_code = workload::WorkloadExitCode(pass);
  return out;
}

}  // namespace nccl_triage
