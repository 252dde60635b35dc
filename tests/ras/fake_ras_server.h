// A fake NCCL RAS port for tests: listens on 127.0.0.1 (port 0: the kernel picks one) and answers
// every connection from a transcript, the way NCCL's RAS thread does (src/ras/client_support.cc):
//
//   "CLIENT PROTOCOL <n>"  -> "SERVER PROTOCOL <v>" (v from the transcript, or `protocol`)
//   "SET FORMAT json"      -> the answer the transcript recorded; without one, the answer of a
//                             NCCL before 2.28.7: "ERROR: Unknown command SET FORMAT json"
//   "SET FORMAT text"      -> "OK"
//   "STATUS" / "VERBOSE STATUS" -> the transcript's report, then close
//   "DIAGNOSTICS"          -> (NCCL 2.31+) the transcript's diagnostics report (or its BUSY line),
//                             then close; on a connection set to JSON, "ERROR: diagnostics only
//                             supports text output", then close; a transcript without a
//                             DIAGNOSTICS exchange is a NCCL before 2.31: "ERROR: Unknown command
//                             DIAGNOSTICS", and the connection stays open
//   anything else          -> "ERROR: Unknown command <line>"
//
// A transcript is what tests/gpu/ras_query.cc records: "> " lines sent by the client, "< " lines
// answered, and after "> STATUS" the report as received. tests/ras/transcripts/nccl-2.28.9-* were
// recorded from real NCCL 2.28.9 processes (tests/gpu/ras-hang.sh), nccl-2.32.6-<n>-diag-* from
// real NCCL 2.32.6 processes (tests/gpu/ras-diag.sh); the files named *-modelled-* are modelled on
// the print formats of NCCL's source at the version they name, not recorded (the real 2.32.6
// reports confirm the shape of nccl-2.32.6-modelled-diag-ok.txt's lines; its [OK] line for a
// consistent environment and the failed checks of -env-ecc were never seen on the one-GPU
// machine).
//
// Faults, for the client's tests: a server that never answers, one that answers garbage, one that
// closes at once, one that sends a report without end, one that speaks another protocol; for
// DIAGNOSTICS also endless report lines, a close halfway through the report, and a report
// whose connection is then held open.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace nccl_triage::ras::testing {

enum class FakeMode {
  kReplay,
  kSilent,
  kGarbage,
  kCloseAtOnce,
  kEndless,       // the report: bytes without a line end, until the client closes
  kEndlessLines,  // DIAGNOSTICS: report lines without end, until the client closes
  kCloseMidway,   // DIAGNOSTICS: the first half of the report's lines, then close
  kHoldOpen,      // DIAGNOSTICS: the whole report, then the connection stays open
};

// The parts of a transcript: the server's recorded answers and the report.
struct Transcript {
  std::string server_protocol = "2";
  std::string set_format_answer;  // "" when the client did not ask for a format
  std::string body;
  bool has_diagnostics = false;  // the client sent DIAGNOSTICS (a 2.31+ server's answer follows)
  std::string diagnostics;       // what came after "> DIAGNOSTICS"
};

inline Transcript ParseTranscript(const std::string& text) {
  Transcript t;
  std::istringstream in(text);
  std::string line;
  std::string last_sent;
  while (std::getline(in, line)) {
    if (line.rfind("> ", 0) == 0) {
      last_sent = line.substr(2);
      if (last_sent == "STATUS" || last_sent == "VERBOSE STATUS" || last_sent == "DIAGNOSTICS") {
        std::ostringstream rest;
        rest << in.rdbuf();
        if (last_sent == "DIAGNOSTICS") {
          t.diagnostics = rest.str();
          // An old server's error is not a 2.31+ server's answer: it is what the fake says then.
          t.has_diagnostics = t.diagnostics.rfind("ERROR: Unknown command", 0) != 0;
        } else {
          t.body = rest.str();
        }
        break;
      }
    } else if (line.rfind("< ", 0) == 0) {
      const std::string answer = line.substr(2);
      if (answer.rfind("SERVER PROTOCOL ", 0) == 0) t.server_protocol = answer.substr(16);
      if (last_sent.rfind("SET FORMAT", 0) == 0) t.set_format_answer = answer;
    }
  }
  return t;
}

inline std::string ReadTranscriptFile(const std::string& name) {
  std::ifstream in(std::string(NCCL_TRIAGE_SOURCE_DIR) + "/tests/ras/transcripts/" + name,
                   std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class FakeRasServer {
 public:
  explicit FakeRasServer(std::string transcript_text, FakeMode mode = FakeMode::kReplay,
                         std::string protocol = "")
      : transcript_(ParseTranscript(transcript_text)), mode_(mode) {
    if (!protocol.empty()) transcript_.server_protocol = protocol;
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 16);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  FakeRasServer(const FakeRasServer&) = delete;
  FakeRasServer& operator=(const FakeRasServer&) = delete;
  ~FakeRasServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }

  // The answer to DIAGNOSTICS from another transcript (the status report stays this one's).
  // Call before the first connection.
  void SetDiagnostics(const std::string& transcript_text) {
    const Transcript d = ParseTranscript(transcript_text);
    transcript_.diagnostics = d.diagnostics;
    transcript_.has_diagnostics = d.has_diagnostics;
  }

  int port() const { return port_; }
  std::string addr() const { return "127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_; }
  // The lines the last client sent.
  std::vector<std::string> received() const { return received_; }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++connections_;
      Handle(c);
      ::close(c);
    }
  }

  void Send(int c, const std::string& s) { ::send(c, s.data(), s.size(), MSG_NOSIGNAL); }

  // One line from the client, or false when it closed or we are stopping.
  bool ReadLine(int c, std::string& buffer, std::string& line) {
    for (;;) {
      const auto nl = buffer.find('\n');
      if (nl != std::string::npos) {
        line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return true;
      }
      pollfd p{c, POLLIN, 0};
      if (stop_) return false;
      if (::poll(&p, 1, 20) <= 0) continue;
      char chunk[4096];
      const ssize_t n = ::recv(c, chunk, sizeof chunk, 0);
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<size_t>(n));
    }
  }

  void Handle(int c) {
    received_.clear();
    if (mode_ == FakeMode::kCloseAtOnce) return;
    std::string buffer, line;
    if (mode_ == FakeMode::kSilent) {
      while (ReadLine(c, buffer, line)) received_.push_back(line);
      return;
    }
    if (mode_ == FakeMode::kGarbage) {
      if (ReadLine(c, buffer, line)) Send(c, "HTTP/1.1 400 Bad Request\r\n\r\n");
      return;
    }
    bool json = false;
    while (ReadLine(c, buffer, line)) {
      received_.push_back(line);
      const std::string upper = Upper(line);
      if (upper == "DIAGNOSTICS" && transcript_.has_diagnostics) {
        if (json) {
          Send(c, "ERROR: diagnostics only supports text output\n");
        } else {
          Diagnostics(c);
        }
        return;
      }
      if (upper.rfind("CLIENT PROTOCOL ", 0) == 0) {
        Send(c, "SERVER PROTOCOL " + transcript_.server_protocol + "\n");
      } else if (upper == "SET FORMAT JSON") {
        Send(c, (transcript_.set_format_answer.empty()
                     ? "ERROR: Unknown command " + line
                     : transcript_.set_format_answer) + "\n");
        json = !transcript_.set_format_answer.empty();
      } else if (upper == "SET FORMAT TEXT") {
        Send(c, "OK\n");
        json = false;
      } else if (upper == "STATUS" || upper == "VERBOSE STATUS") {
        if (mode_ == FakeMode::kEndless) {
          const std::string chunk(65536, 'x');
          while (!stop_ && ::send(c, chunk.data(), chunk.size(), MSG_NOSIGNAL) > 0) {
          }
          return;
        }
        Send(c, transcript_.body);
        return;
      } else {
        Send(c, "ERROR: Unknown command " + line + "\n");
      }
    }
  }

  void Diagnostics(int c) {
    const std::string& report = transcript_.diagnostics;
    if (mode_ == FakeMode::kEndlessLines) {
      std::string chunk;
      const std::string line =
          "node-a:101 NCCL DIAG [OK]   ECC: no uncorrected volatile errors across 2 ranks\n";
      while (chunk.size() < 65536) chunk += line;
      while (!stop_ && ::send(c, chunk.data(), chunk.size(), MSG_NOSIGNAL) > 0) {
      }
      return;
    }
    if (mode_ == FakeMode::kEndless) {
      const std::string chunk(65536, 'x');
      while (!stop_ && ::send(c, chunk.data(), chunk.size(), MSG_NOSIGNAL) > 0) {
      }
      return;
    }
    if (mode_ == FakeMode::kCloseMidway) {
      size_t lines = 0;
      for (char ch : report) lines += ch == '\n';
      size_t cut = 0;
      for (size_t seen = 0; cut < report.size() && seen < lines / 2; ++cut) {
        seen += report[cut] == '\n';
      }
      Send(c, report.substr(0, cut));
      return;
    }
    Send(c, report);
    if (mode_ == FakeMode::kHoldOpen) {
      std::string buffer, line;
      while (ReadLine(c, buffer, line)) {
      }
    }
  }

  static std::string Upper(std::string s) {
    for (char& ch : s) {
      if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
    }
    return s;
  }

  Transcript transcript_;
  FakeMode mode_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::vector<std::string> received_;
  std::thread thread_;
};

}  // namespace nccl_triage::ras::testing
