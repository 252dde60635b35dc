// Helpers for the workload tests: a temporary fixture root (a host written by agent/fixture with
// GPU pods' processes on top) and the standard healthy training process.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checks/check.h"
#include "host/gatherer.h"
#include "support/fixture/fixture.h"
#include "support/fixture/workload_fixture.h"
#include "workload/judge.h"
#include "workload/scanner.h"

namespace nccl_triage::workload::testing {

// A directory that is removed with everything in it when the object goes.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "nccl-triage-wl-XXXXXX").string();
    char* p = ::mkdtemp(tmpl.data());
    if (p != nullptr) path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string PodUid(int n) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "0c9a2f4e-6b1d-4e8a-9f3c-%012d", n);
  return buf;
}

// 64 hex digits that differ from the first one on (short ids are the first 12).
inline std::string ContainerId(int n) {
  std::string id;
  uint32_t x = static_cast<uint32_t>(n + 1) * 2654435761u;
  for (int i = 0; i < 8; ++i) {
    char buf[9];
    std::snprintf(buf, sizeof(buf), "%08x", x);
    id += buf;
    x = x * 1664525u + 1013904223u;
  }
  return id;
}

// A well-configured training process of pod n on a DGX A100 fixture: host network, every uverbs
// device, unlimited memlock, IPC_LOCK, /dev/shm an emptyDir, NCCL mapped, GPU n % 8 held.
inline FixtureWorkloadProcess GoodProcess(int pid, int pod, int gpu = -1) {
  FixtureWorkloadProcess p =
      GpuContainerProcess(pid, PodUid(pod), ContainerId(pod), gpu < 0 ? pod % 8 : gpu, 0);
  p.environ = {{"PATH", "/usr/local/bin:/usr/bin"},
               {"NCCL_DEBUG", "WARN"},
               {"LOCAL_RANK", "0"},
               {"CUDA_VISIBLE_DEVICES", "0"}};
  p.nccl_library = "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.9";
  return p;
}

// A root with the GPU pods' processes (proc/<pid>/ trees and proc/1/ns/net), judged against the
// host snapshot of a committed fixture scenario (gathered once per scenario and test binary:
// writing a whole host tree per test would dominate the run time).
struct WorkloadRoot {
  TempDir dir;
  NodeSnapshot host;
  CheckRegistry registry;

  explicit WorkloadRoot(const std::vector<FixtureWorkloadProcess>& processes,
                        const std::string& scenario = "dgx-a100") {
    std::filesystem::create_directories(root() + "/proc/1/ns");
    std::filesystem::create_symlink(kFixtureHostNetns, root() + "/proc/1/ns/net");
    Status s = WriteWorkloadProcesses(processes, root());
    EXPECT_TRUE(s.ok()) << s.message();
    host = HostSnapshot(scenario);
    registry = BuiltinCheckRegistry();
  }

  static const NodeSnapshot& HostSnapshot(const std::string& scenario) {
    static std::map<std::string, NodeSnapshot> cache;  // test binary only: one gather per scenario
    auto it = cache.find(scenario);
    if (it != cache.end()) return it->second;
    GatherOptions o;
    o.root = std::string(NCCL_TRIAGE_FIXTURE_DIR) + "/" + scenario;
    auto snap = GatherSnapshot(o);
    EXPECT_TRUE(snap.ok()) << snap.status().message();
    return cache[scenario] = snap.ok() ? *snap : NodeSnapshot{};
  }

  std::string root() const { return dir.path() + "/root"; }

  ScanResult Scan(std::vector<std::string>* debug = nullptr) const {
    ScannerOptions o;
    o.root = root();
    if (debug != nullptr) o.debug = [debug](std::string_view l) { debug->emplace_back(l); };
    return WorkloadScanner(o).Scan();
  }

  ContainerVerdict Judge(const ScanResult& scan, size_t index, const PodContainer& pod = {},
                         const NodeResources& node = {}, const Config& config = {}) const {
    return JudgeContainer(scan.containers.at(index), pod, scan.host_netns, host, config, node,
                          registry);
  }
};

inline const Finding* FindingFor(const ContainerVerdict& v, std::string_view id) {
  for (const auto& f : v.findings) {
    if (f.check == id) return &f;
  }
  return nullptr;
}

inline CheckStatus StatusOf(const ContainerVerdict& v, std::string_view id) {
  const Finding* f = FindingFor(v, id);
  EXPECT_NE(f, nullptr) << id;
  return f == nullptr ? CheckStatus::kSkip : f->status;
}

// A pod as the API lists it, with one container that has started.
inline nlohmann::json PodJson(const std::string& uid, const std::string& ns,
                              const std::string& name, const std::string& container,
                              const std::string& container_id,
                              nlohmann::json limits = {{"nvidia.com/gpu", "8"}},
                              nlohmann::json annotations = nlohmann::json::object(),
                              const std::string& node = "gpu-node-1") {
  return {
      {"metadata", {{"uid", uid}, {"namespace", ns}, {"name", name}, {"annotations", annotations}}},
      {"spec",
       {{"nodeName", node},
        {"containers", {{{"name", container}, {"resources", {{"limits", limits}}}}}}}},
      {"status",
       {{"containerStatuses",
         {{{"name", container}, {"containerID", "containerd://" + container_id}}}}}}};
}

inline nlohmann::json PodListJson(std::vector<nlohmann::json> pods) {
  return {{"kind", "PodList"}, {"items", pods}};
}

inline nlohmann::json NodeJson(const std::string& name, nlohmann::json allocatable) {
  return {{"metadata", {{"name", name}}}, {"status", {{"allocatable", allocatable}}}};
}

}  // namespace nccl_triage::workload::testing
