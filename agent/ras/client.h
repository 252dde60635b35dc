// The NCCL RAS client: one status query of the RAS port of an NCCL 2.24+ process.
//
// Every NCCL process since 2.24 runs a RAS thread that listens on NCCL_RAS_ADDR (default
// localhost:28028, in the process's network namespace). The protocol is lines of text:
//
//   client: CLIENT PROTOCOL 2          server: SERVER PROTOCOL 2
//   client: SET FORMAT json            server: OK   (2.28.7+; older: "ERROR: Unknown command ...")
//   client: STATUS                     server: the report, then it closes the connection
//
// NCCL 2.31+ also answers DIAGNOSTICS (what `ncclras -D` sends) on a text connection: lines
// "<host>:<pid> NCCL DIAG <line>", from "=== RAS Diagnostics ===" to "RAS diagnostics completed
// in X ms across N RAS peers", then it closes; or "BUSY: diagnostics already in progress" when
// another request runs (not queued); on a connection set to JSON, "ERROR: diagnostics only
// supports text output". Before 2.31: "ERROR: Unknown command DIAGNOSTICS", and the connection
// stays open.
//
// The server ignores the client's version and sends its own; a version other than
// kClientProtocol is reported (RawReply::protocol_known) and the reply is still read, as the
// NCCL client does. The port is an untrusted peer: the connection has a connect timeout and one
// deadline for the whole exchange, every read is bounded (max_reply_bytes), and every failure is
// one line of text in a Status (refused, timed out, not a RAS server, too long). Never throws.
//
// This file uses only libc and the standard library (and base/status.h, ras/protocol.h), so
// that it also builds alone on a machine without the project's dependencies (tests/gpu).
// Thread-safe: no state.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ras/protocol.h"

namespace nccl_triage::ras {

enum class ReplyFormat { kAuto, kText, kJson };

struct QueryOptions {
  std::string host = kDefaultHost;
  std::string port = kDefaultPort;
  std::chrono::milliseconds connect_timeout{3000};
  // The whole exchange. NCCL answers STATUS after its own collective over the job's processes,
  // which waits up to 5 s per leg plus 5 s (RAS_COLLECTIVE_*_TIMEOUT_SEC) for silent peers.
  std::chrono::milliseconds deadline{30000};
  size_t max_reply_bytes = size_t{16} << 20;
  // kAuto asks for JSON and falls back to text when the server refuses (before 2.28.7).
  ReplyFormat format = ReplyFormat::kAuto;
  bool verbose = false;  // VERBOSE STATUS: the text report lists more of the ranks
};

struct RawReply {
  std::string address;          // the address that answered, "127.0.0.1:28028"
  std::string server_protocol;  // the version as the server sent it ("2")
  bool protocol_known = false;  // server_protocol == kClientProtocol
  ReplyFormat format = ReplyFormat::kText;  // what the body is (never kAuto)
  std::string body;                         // the report, as received
  std::string transcript;                   // both directions, "> " sent and "< " received
  std::chrono::milliseconds elapsed{0};
};

// "HOST:PORT", "[v6]:PORT", "HOST" (default port) or ":PORT" (default host), as NCCL_RAS_ADDR.
StatusOr<std::pair<std::string, std::string>> SplitHostPort(std::string_view addr);

// One query. Errors (one line each): cannot resolve, refused, connect timed out, no answer by
// the deadline, closed early, not a RAS server, reply too long.
StatusOr<RawReply> QueryRas(const QueryOptions& options);

// The answer to DIAGNOSTICS.
struct DiagnosticsReply {
  std::string address;
  std::string server_protocol;
  bool protocol_known = false;
  // NCCL runs one diagnostics request at a time and answered "BUSY: ...": ask again later.
  // lines and body are empty then.
  bool busy = false;
  std::vector<std::string> lines;  // the report, one line each, without "\n", as received
  std::string body;                // the same, as received
  bool complete = false;           // the "... diagnostics completed in ..." line arrived
  std::string transcript;          // as RawReply's
  std::chrono::milliseconds elapsed{0};
};

// Kept apart from other errors: the server is a RAS port of an NCCL before 2.31, which answers
// "ERROR: Unknown command DIAGNOSTICS". StatusCode::kNotFound with this message.
inline constexpr const char* kNoDiagnostics = "this NCCL has no RAS diagnostics (2.31+)";

// One DIAGNOSTICS request (options.format and options.verbose are not used: the report is text).
// The handshake, then DIAGNOSTICS; the report is read line by line (each line at most 4 KiB, the
// whole at most max_reply_bytes) until the server closes, all within the one deadline. A server
// that stops after the completion line without closing is not waited for beyond the deadline:
// the report is returned. Errors (one line each): those of QueryRas; kNotFound with
// kNoDiagnostics for an NCCL before 2.31; kInvalidArgument for the server's own ERROR line or a
// reply that is not a diagnostics report; kUnavailable when the server closed before the
// completion line (the process died or NCCL tore its RAS thread down mid-report).
StatusOr<DiagnosticsReply> QueryRasDiagnostics(const QueryOptions& options);

}  // namespace nccl_triage::ras
