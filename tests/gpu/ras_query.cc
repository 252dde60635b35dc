// One NCCL RAS query with the project's client (agent/ras/client.cc), for capturing transcripts
// on a GPU machine that lacks the project's build dependencies:
//
//   g++ -std=c++20 -O1 -Iagent tests/gpu/ras_query.cc agent/ras/client.cc -o ras_query
//   ras_query HOST:PORT text|json|auto|diagnostics OUTPUT_FILE
//
// `diagnostics` sends NCCL 2.31+'s DIAGNOSTICS request instead of STATUS.
// Writes both directions of the exchange to OUTPUT_FILE ("> " sent, "< " received, then the
// report as received) and prints one line: the address, the protocol, the format, the size and
// the time, or the client's one-line error. Exit 0 on a report, 1 otherwise.
#include <cstdio>
#include <fstream>
#include <string>

#include "ras/client.h"

int main(int argc, char** argv) {
  using nccl_triage::ras::ReplyFormat;
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s HOST:PORT text|json|auto|diagnostics OUTPUT_FILE\n", argv[0]);
    return 2;
  }
  auto hp = nccl_triage::ras::SplitHostPort(argv[1]);
  if (!hp.ok()) {
    std::fprintf(stderr, "%s\n", hp.status().message().c_str());
    return 2;
  }
  nccl_triage::ras::QueryOptions o;
  o.host = hp->first;
  o.port = hp->second;
  const std::string f = argv[2];
  if (f == "diagnostics") {
    auto d = nccl_triage::ras::QueryRasDiagnostics(o);
    if (!d.ok()) {
      std::printf("error: %s\n", d.status().message().c_str());
      std::ofstream(argv[3]) << "# error: " << d.status().message() << "\n";
      return 1;
    }
    std::ofstream(argv[3], std::ios::binary) << d->transcript;
    std::printf("%s protocol %s: %s, %zu lines in %lld ms\n", d->address.c_str(),
                d->server_protocol.c_str(), d->busy ? "busy" : "report", d->lines.size(),
                static_cast<long long>(d->elapsed.count()));
    return 0;
  }
  o.format = f == "text"   ? ReplyFormat::kText
             : f == "json" ? ReplyFormat::kJson
                           : ReplyFormat::kAuto;
  auto r = nccl_triage::ras::QueryRas(o);
  if (!r.ok()) {
    std::printf("error: %s\n", r.status().message().c_str());
    std::ofstream(argv[3]) << "# error: " << r.status().message() << "\n";
    return 1;
  }
  std::ofstream(argv[3], std::ios::binary) << r->transcript;
  std::printf("%s protocol %s%s format %s, %zu bytes in %lld ms\n", r->address.c_str(),
              r->server_protocol.c_str(), r->protocol_known ? "" : " (unknown to this client)",
              r->format == ReplyFormat::kJson ? "json" : "text", r->body.size(),
              static_cast<long long>(r->elapsed.count()));
  return 0;
}
