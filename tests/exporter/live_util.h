// Helpers for the tests that start real processes (the agent binary, Prometheus, node_exporter):
// child processes in their own process group with bounded waits, loopback HTTP, and a parser of
// the Prometheus text format.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace nccl_triage::testing {

inline std::string AgentBinary() {
  return std::string(NCCL_TRIAGE_BINARY_DIR) + "/nccl-triage-server";
}
// The small executable (`check`), which the agent's probe children are too.
inline std::string CheckBinary() { return std::string(NCCL_TRIAGE_BINARY_DIR) + "/nccl-triage"; }
inline std::string SourceDir() { return NCCL_TRIAGE_SOURCE_DIR; }
inline std::string FixtureDir() { return NCCL_TRIAGE_FIXTURE_DIR; }
inline std::string FixtureRoot(const std::string& name) { return FixtureDir() + "/" + name; }

// Finds an executable on PATH (the Debian packages' binaries); "" when absent.
inline std::string FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    std::string p = dir + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

// A free TCP port on loopback (bound and released; good enough for a test on one machine).
inline int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "nccl-triage-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

// A child in its own process group, output to a file; the whole group is killed on destruction.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& output_path) {
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      int fd = open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      int devnull = open("/dev/null", O_RDONLY);
      dup2(devnull, 0);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    if (pid_ > 0) setpgid(pid_, pid_);
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  bool Running() {
    if (reaped_) return false;
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      status_ = status;
      return false;
    }
    return true;
  }
  // Sends `sig` and waits (bounded) for the exit; the wait status, or nullopt when it is stuck.
  std::optional<int> Stop(int sig, std::chrono::milliseconds limit) {
    if (!reaped_) kill(pid_, sig);
    if (!WaitFor([&] { return !Running(); }, limit)) return std::nullopt;
    return status_;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// A TCP connection to 127.0.0.1:`port` from the loopback address `source` (127.0.0.2 and up
// stand for other peers), with receive and send timeouts of `seconds`; -1 when it failed.
inline int ConnectFrom(int port, const char* source = "127.0.0.1", int seconds = 5) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in from{}, to{};
  from.sin_family = to.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

struct HttpResult {
  int status = 0;
  std::string body;
};

inline std::optional<HttpResult> HttpGet(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(5, 0);
  auto res = client.Get(path.c_str());
  if (!res) return std::nullopt;
  return HttpResult{res->status, res->body};
}

// Starts `nccl-triage-server agent --standalone --root ROOT --listen 127.0.0.1:0` and learns the
// port from its start-up log line; waits (bounded) for /readyz.
class AgentProcess {
 public:
  AgentProcess(const std::string& root, const std::string& log_path,
               std::vector<std::string> extra = {})
      : log_path_(log_path) {
    std::vector<std::string> argv = {AgentBinary(), "agent",    "--standalone", "--root",
                                     root,          "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    child_ = std::make_unique<Child>(argv, log_path);
  }
  // The port, once the agent said where it listens and /readyz answered 200; 0 on timeout.
  int WaitReady(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    std::regex serving("serving .* on 127\\.0\\.0\\.1:([0-9]+)");
    WaitFor(
        [&] {
          std::smatch m;
          std::string log = ReadFile(log_path_);
          if (std::regex_search(log, m, serving)) port_ = std::stoi(m[1]);
          return port_ > 0 || !child_->Running();
        },
        limit);
    if (port_ == 0) return 0;
    bool ready = WaitFor(
        [&] {
          auto r = HttpGet(port_, "/readyz");
          return r && r->status == 200;
        },
        limit);
    return ready ? port_ : 0;
  }
  Child& child() { return *child_; }
  std::string log() const { return ReadFile(log_path_); }

 private:
  std::string log_path_;
  std::unique_ptr<Child> child_;
  int port_ = 0;
};

// A field of /proc/<pid>/status in KiB ("VmRSS", "VmHWM"); -1 when the process is gone.
inline long ProcStatusKiB(pid_t pid, const char* field) {
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
  }
  return -1;
}

// 1,000 header lines of a header flood: "X-Flood-NNNNNN: " and 40 bytes of value, 57 bytes a line.
inline std::string HeaderFloodChunk() {
  std::string chunk;
  char line[80];
  for (int i = 0; i < 1000; ++i) {
    std::snprintf(line, sizeof line, "X-Flood-%06d: %s\r\n", i,
                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    chunk += line;
  }
  return chunk;
}

// A server process (agent or coordinator) and the port the line of its log that `port_re`
// matches names; port 0 when it did not start, or /livez did not answer within 20 s.
struct ServerProcess {
  std::unique_ptr<Child> child;
  int port = 0;
  pid_t pid() const { return child->pid(); }
};

inline ServerProcess StartServer(const std::vector<std::string>& argv, const std::string& log,
                                 const std::regex& port_re) {
  ServerProcess s{std::make_unique<Child>(argv, log), 0};
  WaitFor(
      [&] {
        std::smatch m;
        const std::string text = ReadFile(log);
        if (std::regex_search(text, m, port_re)) s.port = std::stoi(m[1]);
        return s.port > 0 || !s.child->Running();
      },
      std::chrono::seconds(20));
  if (s.port > 0 && !WaitFor(
                        [&] {
                          auto r = HttpGet(s.port, "/livez");
                          return r && r->status == 200;
                        },
                        std::chrono::seconds(20))) {
    s.port = 0;
  }
  return s;
}

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses the sample lines of the Prometheus text format (comments skipped).
inline std::vector<Sample> ParseExposition(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  std::regex label_re("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t brace = line.find('{');
    size_t space;
    if (brace != std::string::npos && brace < line.find(' ')) {
      s.name = line.substr(0, brace);
      size_t close = line.find('}', brace);
      std::string labels = line.substr(brace + 1, close - brace - 1);
      for (std::sregex_iterator it(labels.begin(), labels.end(), label_re), end; it != end; ++it) {
        s.labels[(*it)[1]] = (*it)[2];
      }
      space = line.find(' ', close);
    } else {
      space = line.find(' ');
      s.name = line.substr(0, space);
    }
    std::string value = line.substr(space + 1);
    value = value.substr(0, value.find(' '));
    s.value = value == "+Inf" ? HUGE_VAL : value == "-Inf" ? -HUGE_VAL : std::stod(value);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace nccl_triage::testing
