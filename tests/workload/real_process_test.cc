// Real processes, read through the real /proc: a "training process" started by the test in its
// own network namespace, with a 64 KiB memlock, without CAP_IPC_LOCK, NCCL_SOCKET_IFNAME=eth0
// (the new namespace has only lo), a secret in its environment, and a fake GPU device open.
//
// The kernel's files are used as they are; the only planted file is the cgroup identity (this
// machine is not a Kubernetes node), in a root whose proc/<pid>/ entries link to /proc/<pid>/.
// /dev/nvidia0 cannot be created here, so the device pattern matches a file in a temporary
// directory. Needs root (unshare(CLONE_NEWNET), dropping a capability from the bounding set).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "base/clock.h"
#include "base/log.h"
#include "exporter/agent_http.h"
#include "exporter/metrics.h"
#include "state/agent_state.h"
#include "support/fake_clock.h"
#include "support/fake_kube_client.h"
#include "support/text_file.h"
#include "workload/monitor.h"
#include "workload_test_util.h"

namespace nccl_triage::workload {
namespace {

namespace fs = std::filesystem;
using testing::ContainerId;
using testing::PodUid;

constexpr const char* kSecret = "pl4nted-R34L-s3cret-9f1e";

std::string RegexEscape(const std::string& s) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(s, special, R"(\$&)");
}

// A child that becomes the workload: own network namespace, small memlock, no IPC_LOCK, the fake
// GPU open across exec, then `sleep` with a chosen environment.
class TrainingProcess {
 public:
  TrainingProcess(const std::string& gpu_path, std::vector<std::string> env) {
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    char sleep_arg0[] = "sleep";
    char sleep_arg1[] = "60";
    char* argv[] = {sleep_arg0, sleep_arg1, nullptr};
    pid_ = fork();
    if (pid_ == 0) {
      if (unshare(CLONE_NEWNET) != 0) _exit(10);
      struct rlimit rl {
        65536, 65536
      };
      if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) _exit(11);
      if (prctl(PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0) != 0) _exit(12);
      if (open(gpu_path.c_str(), O_RDONLY) < 0) _exit(13);  // kept across exec
      execve("/bin/sleep", argv, envp.data());
      _exit(14);
    }
    // Wait until the exec is complete: the kernel switches /proc/<pid>/exe before it lays out
    // the new image's environment, so the environment, not the link, says the image is ready.
    // Up to 20 s: a loaded machine can take long to schedule the child.
    const std::string first = env.empty() ? "" : env.front();
    for (int i = 0; i < 4000; ++i) {
      std::error_code ec;
      const std::string proc = "/proc/" + std::to_string(pid_);
      auto exe = fs::read_symlink(proc + "/exe", ec);
      if (!ec && exe.filename() == "sleep") {
        std::ifstream environ(proc + "/environ", std::ios::binary);
        std::string head(first.size(), '\0');
        environ.read(head.data(), static_cast<std::streamsize>(head.size()));
        if (environ && head == first) return;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    Kill();
    exit_code_ = 15;  // the exec did not complete within 20 s
  }
  ~TrainingProcess() { Kill(); }
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  pid_t pid() const { return pid_; }
  int exit_code() const { return exit_code_; }

 private:
  pid_t pid_ = -1;
  int exit_code_ = 0;
};

// root/proc/<pid>/ as a copy of the live /proc/<pid>/ (its files, and its links as links with the
// same targets), except the planted cgroup; root/proc/1/ns/net is the test process's own (this
// sandbox's pid 1 may not be readable; the test process stands for the host). A copy, not links
// into /proc: the reader resolves every path of a --root tree inside that root, as it must (a
// link planted in a tree never leads out of it), so a link to /proc/<pid> would name
// root/proc/<pid> itself.
void CopyLink(const std::string& from, const fs::path& to) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(from, ec);
  if (!ec) fs::create_symlink(target, to, ec);
}

void LinkProcess(const std::string& root, pid_t pid, const std::string& cgroup) {
  const std::string real = "/proc/" + std::to_string(pid) + "/";
  const fs::path dir = fs::path(root) / "proc" / std::to_string(pid);
  fs::create_directories(dir / "ns");
  fs::create_directories(dir / "fd");
  fs::create_directories(dir / "net");
  for (const char* leaf : {"comm", "limits", "status", "environ", "maps", "mountinfo"}) {
    std::ofstream(dir / leaf, std::ios::binary) << nccl_triage::testing::ReadTextFile(real + leaf);
  }
  const std::string net_dev = nccl_triage::testing::ReadTextFile(real + "net/dev");
  std::ofstream(dir / "net/dev", std::ios::binary) << net_dev;
  CopyLink(real + "ns/net", dir / "ns/net");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(real + "fd", ec)) {
    CopyLink(e.path().string(), dir / "fd" / e.path().filename());
  }
  // The interfaces of its namespace as its root shows them (operstate, type).
  std::istringstream lines(net_dev);
  for (std::string line; std::getline(lines, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    const std::string sys = "sys/class/net/" + name + "/";
    fs::create_directories(dir / "root" / sys);
    for (const char* leaf : {"operstate", "type"}) {
      std::ofstream(dir / "root" / sys / leaf)
          << nccl_triage::testing::ReadTextFile(real + "root/" + sys + leaf);
    }
  }
  std::ofstream(dir / "cgroup") << cgroup;
  if (!fs::exists(fs::path(root) / "proc/1")) {
    fs::create_directories(fs::path(root) / "proc/1/ns");
    CopyLink("/proc/" + std::to_string(getpid()) + "/ns/net", fs::path(root) / "proc/1/ns/net");
  }
}

class RealProcessTest : public ::testing::Test {
 protected:
  // Root inside a container without CAP_SYS_ADMIN / CAP_SETPCAP cannot make the namespace or
  // drop the capability: that is the sandbox's limit, not a fault of the code under test.
  static void SkipWithoutPrivileges(const TrainingProcess& child) {
    if (child.pid() <= 0 && (child.exit_code() == 10 || child.exit_code() == 12)) {
      GTEST_SKIP() << (child.exit_code() == 10 ? "unshare(CLONE_NEWNET) not permitted here"
                                               : "PR_CAPBSET_DROP not permitted here");
    }
  }

  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root)";
    root_ = dir_.path() + "/root";
    fs::create_directories(dir_.path() + "/dev");
    gpu_ = dir_.path() + "/dev/nvidia7";
    std::ofstream(gpu_) << "";
    pattern_ = "^" + RegexEscape(dir_.path()) + "/dev/nvidia[0-9]+$";
  }

  testing::TempDir dir_;
  std::string root_;
  std::string gpu_;
  std::string pattern_;
};

TEST_F(RealProcessTest, ProcessInItsOwnNamespaceWithSmallMemlockIsJudgedFromItsProcFiles) {
  TrainingProcess child(gpu_, {"PATH=/usr/bin:/bin", "NCCL_SOCKET_IFNAME=eth0", "NCCL_DEBUG=INFO",
                               "LOCAL_RANK=0", std::string("PLANTED_SECRET=") + kSecret});
  SkipWithoutPrivileges(child);
  if (IsSkipped()) return;
  ASSERT_GT(child.pid(), 0) << "child setup failed with code " << child.exit_code();
  LinkProcess(root_, child.pid(), KubepodsCgroup(PodUid(1), ContainerId(1)));

  ScannerOptions o;
  o.root = root_;
  o.gpu_device_pattern = pattern_;
  ScanResult scan = WorkloadScanner(o).Scan();
  ASSERT_TRUE(scan.error.empty()) << scan.error;
  ASSERT_EQ(scan.containers.size(), 1u) << (scan.skipped.empty() ? "" : scan.skipped[0].reason);
  const ProcessFacts& p = scan.containers[0].processes.at(0);
  EXPECT_EQ(p.pid, child.pid());
  EXPECT_EQ(p.gpu_devices, std::vector<std::string>{gpu_});
  ASSERT_TRUE(p.memlock.ok()) << p.memlock.error;
  EXPECT_EQ(p.memlock.value->soft.value, 65536u);
  ASSERT_TRUE(p.cap_eff.ok());
  EXPECT_EQ(*p.cap_eff.value & (uint64_t{1} << CAP_IPC_LOCK), 0u);
  ASSERT_TRUE(p.netns.ok());
  ASSERT_TRUE(scan.host_netns.ok()) << scan.host_netns.error;
  EXPECT_NE(*p.netns.value, *scan.host_netns.value);
  ASSERT_TRUE(p.interfaces.ok()) << p.interfaces.error;
  ASSERT_EQ(p.interfaces.value->size(), 1u);
  EXPECT_EQ((*p.interfaces.value)[0].name, "lo");
  ASSERT_TRUE(p.environ.ok());
  EXPECT_EQ(p.environ.value->kept.at("NCCL_SOCKET_IFNAME"), "eth0");
  EXPECT_EQ(p.environ.value->kept.count("PLANTED_SECRET"), 0u);

  // Judged with the catalogue's checks against a DGX A100's hardware facts.
  const NodeSnapshot& host = testing::WorkloadRoot::HostSnapshot("dgx-a100");
  const CheckRegistry registry = BuiltinCheckRegistry();
  ContainerVerdict v =
      JudgeContainer(scan.containers[0], {}, scan.host_netns, host, Config{}, {}, registry);
  EXPECT_EQ(v.verdict, FaultClass::kArchitecture);
  EXPECT_EQ(testing::StatusOf(v, "limits.memlock"), CheckStatus::kFail);
  EXPECT_EQ(testing::StatusOf(v, "container.ipc_lock"), CheckStatus::kFail);
  EXPECT_EQ(testing::StatusOf(v, "net.socket_ifname"), CheckStatus::kFail);
  EXPECT_NE(testing::StatusOf(v, "container.host_network"), CheckStatus::kPass);
}

TEST_F(RealProcessTest, FullPassPatchesTheRightPodAndLeaksNoSecret) {
  TrainingProcess child(
      gpu_, {"PATH=/usr/bin:/bin", "NCCL_SOCKET_IFNAME=eth0",
             std::string("PLANTED_SECRET=") + kSecret, std::string("HF_TOKEN=hf_") + kSecret});
  SkipWithoutPrivileges(child);
  if (IsSkipped()) return;
  ASSERT_GT(child.pid(), 0) << "child setup failed with code " << child.exit_code();
  LinkProcess(root_, child.pid(), KubepodsCgroup(PodUid(1), ContainerId(1), /*systemd=*/false));

  FakeKubeClient fake;
  fake.SetPods(testing::PodListJson(
      {testing::PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1)),
       testing::PodJson(PodUid(2), "team-a", "train-1", "trainer", ContainerId(2))}));
  AgentState state("gpu-node-1", "test", 0);
  AgentMetrics metrics(state, "test");
  FakeClock clock;
  std::ostringstream logs;
  Logger log(logs, LogLevel::kDebug);
  WorkloadMonitorOptions o;
  o.node = "gpu-node-1";
  o.scanner.root = root_;
  o.scanner.gpu_device_pattern = pattern_;
  WorkloadMonitor monitor(o, &state, &fake, nullptr, clock, log);
  WorkloadPass pass = monitor.RunPass(testing::WorkloadRoot::HostSnapshot("dgx-a100"));
  ASSERT_EQ(pass.containers.size(), 1u);
  EXPECT_EQ(pass.patches_sent, 1);
  auto annotations = fake.Annotations("team-a", "train-0");
  EXPECT_EQ(annotations["nccl-triage.io/verdict"], "architecture");
  EXPECT_NE(annotations["nccl-triage.io/causes"].find("limits.memlock"), std::string::npos);
  EXPECT_TRUE(fake.Annotations("team-a", "train-1").empty());

  std::string everything = metrics.Scrape() + AgentStatusJson(state.View()).dump() + logs.str();
  for (const auto& c : fake.Calls()) everything += c.body.dump();
  for (const auto& [k, val] : annotations) everything += k + val;
  EXPECT_EQ(everything.find(kSecret), std::string::npos);
  EXPECT_EQ(everything.find("PLANTED_SECRET"), std::string::npos);
  EXPECT_NE(everything.find("train-0"), std::string::npos);

  // The process exits (and its copy under the root with it): the next pass finds no GPU holder
  // and the pod's series go.
  const pid_t pid = child.pid();
  child.Kill();
  fs::remove_all(fs::path(root_) / "proc" / std::to_string(pid));
  WorkloadPass after = monitor.RunPass(testing::WorkloadRoot::HostSnapshot("dgx-a100"));
  EXPECT_TRUE(after.containers.empty());
  EXPECT_EQ(metrics.Scrape().find("train-0"), std::string::npos);
}

}  // namespace
}  // namespace nccl_triage::workload
