// Cross-check of the sysfs parsers against an independent reader of the same files: Prometheus
// node_exporter's infiniband collector, pointed at each fixture with --path.sysfs. Its
// node_infiniband_* values must equal what the snapshot parsed. Skipped only when the
// prometheus-node-exporter binary is absent; every wait is bounded.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "host/gatherer.h"
#include "host/parsers.h"
#include "support/fixture/fixture.h"

namespace nccl_triage {
namespace {

using Clock = std::chrono::steady_clock;

std::optional<std::string> FindExporter() {
  for (const char* p : {"/usr/bin/prometheus-node-exporter", "/usr/local/bin/node_exporter",
                        "/usr/bin/node_exporter"}) {
    if (::access(p, X_OK) == 0) return std::string(p);
  }
  return std::nullopt;
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

// One HTTP/1.0 GET on 127.0.0.1, bounded by `timeout`; nullopt when nothing answered.
std::optional<std::string> HttpGet(int port, const std::string& path,
                                   std::chrono::milliseconds timeout) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  const std::string req =
      "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return std::nullopt;
  }
  std::string resp;
  char buf[65536];
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t body = resp.find("\r\n\r\n");
  if (resp.rfind("HTTP/1.", 0) != 0 || resp.find(" 200 ") == std::string::npos ||
      body == std::string::npos) {
    return std::nullopt;
  }
  return resp.substr(body + 4);
}

// node_exporter as a child in its own process group, killed (group and all) on destruction.
class Exporter {
 public:
  Exporter(const std::string& binary, const std::string& root, int port) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
      const std::string sysfs = "--path.sysfs=" + root + "/sys";
      const std::string procfs = "--path.procfs=" + root + "/proc";
      const std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port);
      ::execl(binary.c_str(), binary.c_str(), sysfs.c_str(), procfs.c_str(),
              "--collector.disable-defaults", "--collector.infiniband", listen.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    if (pid_ > 0) ::setpgid(pid_, pid_);
  }
  ~Exporter() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  bool running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
};

// "node_infiniband_state_id{device="mlx5_0",port="1"} 4" -> key "state_id|mlx5_0|1" -> 4.
// The info metric is kept as "info|<device>" -> its label text.
struct Scrape {
  std::map<std::string, double> values;
  std::map<std::string, std::string> info;
  double collector_success = -1;
};

std::string Label(const std::string& labels, const std::string& name) {
  const std::string key = name + "=\"";
  size_t at = labels.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  return labels.substr(at, labels.find('"', at) - at);
}

Scrape ParseScrape(const std::string& text) {
  Scrape s;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] == '#') continue;
    size_t brace = line.find('{');
    size_t close = line.find('}');
    if (brace == std::string::npos || close == std::string::npos) continue;
    std::string name = line.substr(0, brace);
    std::string labels = line.substr(brace + 1, close - brace - 1);
    double value = std::strtod(line.c_str() + close + 1, nullptr);
    if (name == "node_scrape_collector_success" && Label(labels, "collector") == "infiniband") {
      s.collector_success = value;
    }
    const std::string prefix = "node_infiniband_";
    if (name.rfind(prefix, 0) != 0) continue;
    name = name.substr(prefix.size());
    if (name == "info") {
      s.info[Label(labels, "device")] = labels;
    } else {
      s.values[name + "|" + Label(labels, "device") + "|" + Label(labels, "port")] = value;
    }
  }
  return s;
}

std::optional<Scrape> ScrapeFixture(const std::string& binary, const std::string& root) {
  for (int attempt = 0; attempt < 3; ++attempt) {  // a port taken between probe and bind: retry
    const int port = FreePort();
    if (port <= 0) continue;
    Exporter exporter(binary, root, port);
    const auto deadline = Clock::now() + std::chrono::seconds(15);
    while (Clock::now() < deadline && exporter.running()) {
      if (auto body = HttpGet(port, "/metrics", std::chrono::milliseconds(5000))) {
        return ParseScrape(*body);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return std::nullopt;
}

int StateId(const Fact<std::string>& f) {
  auto s = f.value ? ParseNumberedState(*f.value) : std::nullopt;
  return s ? s->id : -1;
}

TEST(NodeExporterCrossCheck, InfinibandCollectorAgreesWithSnapshotOnEveryFixture) {
  auto binary = FindExporter();
  if (!binary) GTEST_SKIP() << "prometheus-node-exporter is not installed";
  int checked_fixtures = 0;
  for (const auto& scenario : FixtureScenarios()) {
    const std::string root = std::string(NCCL_TRIAGE_FIXTURE_DIR) + "/" + scenario;
    GatherOptions o;
    o.root = root;
    auto snap = GatherSnapshot(o);
    ASSERT_TRUE(snap.ok()) << scenario;
    if (snap->ib_devices.empty()) continue;
    SCOPED_TRACE(scenario);
    auto scrape = ScrapeFixture(*binary, root);
    ASSERT_TRUE(scrape) << "node_exporter did not answer for " << scenario;
    EXPECT_EQ(scrape->collector_success, 1.0);
    EXPECT_EQ(scrape->info.size(), snap->ib_devices.size());
    for (const auto& dev : snap->ib_devices) {
      const std::string& info = scrape->info[dev.name];
      EXPECT_EQ(Label(info, "board_id"), dev.board_id.value.value_or("?")) << dev.name;
      EXPECT_EQ(Label(info, "firmware_version"), dev.fw_ver.value.value_or("?")) << dev.name;
      EXPECT_EQ(Label(info, "hca_type"), dev.hca_type.value.value_or("?")) << dev.name;
      for (const auto& port : dev.ports) {
        const std::string key = "|" + dev.name + "|" + std::to_string(port.num);
        auto metric = [&](const std::string& name) {
          auto it = scrape->values.find(name + key);
          EXPECT_NE(it, scrape->values.end()) << name << key;
          return it == scrape->values.end() ? std::nan("") : it->second;
        };
        auto counter = [&](const std::string& name) {
          auto it = port.counters.find(name);
          EXPECT_NE(it, port.counters.end()) << name << key;
          return it == port.counters.end() ? std::nan("") : static_cast<double>(it->second);
        };
        EXPECT_EQ(metric("state_id"), StateId(port.state)) << key;
        EXPECT_EQ(metric("physical_state_id"), StateId(port.phys_state)) << key;
        ASSERT_TRUE(port.rate_gbps.ok()) << key;
        EXPECT_EQ(metric("rate_bytes_per_second"), *port.rate_gbps.value * 125e6) << key;
        // port_rcv_data / port_xmit_data count 4-byte words; node_exporter reports bytes.
        EXPECT_EQ(metric("port_data_received_bytes_total"), counter("port_rcv_data") * 4) << key;
        EXPECT_EQ(metric("port_data_transmitted_bytes_total"), counter("port_xmit_data") * 4)
            << key;
        EXPECT_EQ(metric("port_packets_received_total"), counter("port_rcv_packets")) << key;
        EXPECT_EQ(metric("port_packets_transmitted_total"), counter("port_xmit_packets")) << key;
        EXPECT_EQ(metric("link_downed_total"), counter("link_downed")) << key;
        EXPECT_EQ(metric("link_error_recovery_total"), counter("link_error_recovery")) << key;
        EXPECT_EQ(metric("port_errors_received_total"), counter("port_rcv_errors")) << key;
        EXPECT_EQ(metric("symbol_error_total"), counter("symbol_error")) << key;
        EXPECT_EQ(metric("excessive_buffer_overrun_errors_total"),
                  counter("excessive_buffer_overrun_errors"))
            << key;
      }
    }
    ++checked_fixtures;
  }
  EXPECT_GE(checked_fixtures, 15);
}

}  // namespace
}  // namespace nccl_triage
