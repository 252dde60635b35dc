// The harness of the triage's end-to-end tests: a scratch folder with a self-signed certificate,
// the fake Kubernetes API over HTTPS (support/fake_api_server.h) with a kubeconfig pointing at
// it, pods of a job named train-7 in namespace ml, and `nccl-triage triage` run as a child.
#pragma once

#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "exporter/tls_test_cert.h"
#include "probe/subprocess.h"
#include "support/docs.h"
#include "support/fake_api_server.h"
#include "support/text_file.h"

namespace nccl_triage::triage_test {

namespace fs = std::filesystem;
using nccl_triage::testing::ReadTextFile;
using nlohmann::json;
using testing::FakeApiServer;
using testing::FakeLog;

inline const std::string kBinary = std::string(NCCL_TRIAGE_BINARY_DIR) + "/nccl-triage";
inline const std::string kLogs = std::string(NCCL_TRIAGE_SOURCE_DIR) + "/tests/fixtures/nccl-logs/";
inline constexpr const char* kToken = "triage-test-token";
inline constexpr int64_t kT0 = int64_t{1739265240} * 1'000'000'000;  // 2025-02-11T09:14:00Z


// The lines of a fixture log that one host wrote (`host:` prefix, or an NCCL timestamp first).
inline std::string LinesOf(const std::string& file, const std::string& host) {
  std::istringstream in(ReadTextFile(kLogs + file));
  std::string out, line;
  while (std::getline(in, line)) {
    if (line.find(host + ":") != std::string::npos) out += line + "\n";
  }
  return out;
}

inline json PodJson(const std::string& name, const std::string& node, const std::string& ip,
                    int index, const std::string& hostname = "", int restarts = 0) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", "ml"},
                {"uid", "uid-" + name},
                {"labels",
                 {{"batch.kubernetes.io/job-name", "train-7"},
                  {"job-name", "train-7"},
                  {"batch.kubernetes.io/job-completion-index", std::to_string(index)}}},
                {"ownerReferences",
                 {{{"apiVersion", "batch/v1"},
                   {"kind", "Job"},
                   {"name", "train-7"},
                   {"uid", "job-uid-7"},
                   {"controller", true}}}}}},
              {"spec", {{"nodeName", node}, {"containers", {{{"name", "trainer"}}}}}},
              {"status",
               {{"phase", "Failed"},
                {"podIP", ip},
                {"hostIP", "192.168.1." + std::to_string(index)},
                {"containerStatuses",
                 {{{"name", "trainer"},
                   {"restartCount", restarts},
                   {"state", {{"terminated", {{"reason", "Error"}, {"exitCode", 1}}}}}}}}}}};
  if (!hostname.empty()) pod["spec"]["hostname"] = hostname;
  return pod;
}

inline std::string Name(int i) { return "train-7-worker-" + std::to_string(i); }
inline std::string Node(int i) { return (i < 10 ? "gpu-0" : "gpu-") + std::to_string(i); }

// The documentation's example block `<!-- example:NAME -->` (its text between the fences), or "".
inline std::string ReadmeExample(const std::string& name) {
  const std::string readme = nccl_triage::testing::ReadUserDocs();
  const std::string open = "<!-- example:" + name + " -->\n```text\n",
                    close = "```\n<!-- /example:" + name + " -->";
  const size_t a = readme.find(open), b = readme.find(close);
  if (a == std::string::npos || b == std::string::npos || b < a) return "";
  return readme.substr(a + open.size(), b - a - open.size());
}

// The report's first line carries the time of the run: the one part that differs between runs.
inline std::string WithoutRunTime(std::string text) {
  const std::string key = " nodes), ";
  const size_t at = text.find(key);
  if (at != std::string::npos) text.replace(at + key.size(), 20, "<time of the run>   ");
  return text;
}

class TriageEnv : public ::testing::Test {
 protected:
  TriageEnv() {
    dir_ = fs::path(::testing::TempDir()) /
           ("triage_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    cert_ = testing::MakeSelfSignedCert(dir_.string());
  }
  ~TriageEnv() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  FakeApiServer& Server(const std::string& client_ca = "") {
    FakeApiServer::Options o;
    o.cert_path = cert_.cert_path;
    o.key_path = cert_.key_path;
    o.token = kToken;
    o.client_ca_path = client_ca;
    o.now_ns = kT0 + int64_t{3600} * 1'000'000'000;
    server_ = std::make_unique<FakeApiServer>(o);
    WriteKubeconfig(
        testing::KubeconfigFor(server_->port(), ReadTextFile(cert_.cert_path), kToken, "ml"));
    return *server_;
  }

  void WriteKubeconfig(const std::string& text) { std::ofstream(dir_ / "kubeconfig") << text; }

  SubprocessResult Triage(std::vector<std::string> args, std::vector<std::string> env = {},
                          const std::string& binary = kBinary) {
    SubprocessOptions o;
    o.argv = {binary, "triage"};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.env = std::move(env);
    o.env.push_back("KUBECONFIG=" + (dir_ / "kubeconfig").string());
    o.env.push_back("HOME=" + dir_.string());
    o.timeout = std::chrono::seconds(120);
    o.max_output_bytes = 16 << 20;
    return RunSubprocess(std::move(o));
  }

  // `nccl-triage triage` with a terminal on its standard streams (a pseudo-terminal): everything
  // it wrote, stdout and stderr together, as a person would see it.
  struct TerminalRun {
    int exit_code = -1;
    std::string text;
  };
  TerminalRun TriageOnTerminal(std::vector<std::string> args, std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {kBinary, "triage"};
    argv.insert(argv.end(), args.begin(), args.end());
    env.push_back("KUBECONFIG=" + (dir_ / "kubeconfig").string());
    env.push_back("HOME=" + dir_.string());
    env.push_back("TERM=dumb");
    std::vector<char*> cargv, cenv;
    for (auto& a : argv) cargv.push_back(a.data());
    for (auto& e : env) cenv.push_back(e.data());
    cargv.push_back(nullptr);
    cenv.push_back(nullptr);
    TerminalRun run;
    int master = -1;
    const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
    if (pid < 0) return run;
    if (pid == 0) {
      ::execve(cargv[0], cargv.data(), cenv.data());
      ::_exit(127);
    }
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(master, buf, sizeof(buf));
      if (n > 0) {
        run.text.append(buf, static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        break;  // EIO once the child's side is closed
      }
    }
    ::close(master);
    int status = 0;
    ::waitpid(pid, &status, 0);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return run;
  }

  static int Lines(const std::string& s) {
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
  }

  fs::path dir_;
  testing::TestCert cert_;
  std::unique_ptr<FakeApiServer> server_;
};

}  // namespace nccl_triage::triage_test
