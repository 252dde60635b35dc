// `nccl-triage-server triage-coordinator`: the two calls `nccl-triage triage` makes to the
// coordinator, on its gRPC port with the agents' shared token (`authorization: Bearer`):
//
//   triage-coordinator --coordinator HOST:PORT --probe N1,N2,... [--timeout-seconds S]
//       Coordinator.Triage: the socket and IB probes between these nodes and against known-good
//       references, now; prints the answer as JSON (triage/incident.h ProbeOutcomeFromJson).
//   triage-coordinator --coordinator HOST:PORT --count CLASS [--cause ID]
//       Coordinator.RecordIncident: nccl_triage_incidents_total{class,cause} + 1.
//
// The token comes from NCCL_TRIAGE_TOKEN or --token-file; TLS with --ca-file (the coordinator's
// CA, as agent.ca_file). Exit 0 with the answer on stdout; 2 with one line on stderr when the
// coordinator cannot be asked or refuses. Not for people.
#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

#include "base/files.h"
#include "base/flags.h"
#include "cmd_nccl_triage_server/server_cli.h"
#include "core/json_text.h"
#include "core/model.h"
#include "nccl_triage/v1/agent.grpc.pb.h"
#include "triage/target.h"
#include "wire/convert.h"
#include "wire/grpc_status.h"

namespace nccl_triage {
namespace {

using nlohmann::json;

std::string Cls(v1::FaultClass c) { return std::string(ToString(FromProto(c))); }

json ToJson(const v1::TriageAnswer& a) {
  json nodes = json::array();
  for (const auto& n : a.nodes()) {
    json rails = json::array();
    for (const auto& r : n.rails()) {
      rails.push_back({{"rail", r.rail().index()},
                       {"device", r.rail().device() + "/" + std::to_string(r.rail().port())},
                       {"active", r.rail().active()},
                       {"rate_gbps", r.rail().rate_gbps()},
                       {"gpu_bus_id", r.rail().gpu_bus_id()},
                       {"fault", r.fault()},
                       {"rate_degraded", r.rate_degraded()},
                       {"causes", std::vector<std::string>(r.causes().begin(), r.causes().end())},
                       {"reason", r.reason()},
                       {"seen_by", r.seen_by()}});
    }
    nodes.push_back({{"node", n.node()},
                     {"state", n.state()},
                     {"class", Cls(n.fault_class())},
                     {"causes", std::vector<std::string>(n.causes().begin(), n.causes().end())},
                     {"reason", n.reason()},
                     {"rails", rails}});
  }
  json faults = json::array();
  for (const auto& f : a.faults()) {
    faults.push_back({{"kind", f.kind()},
                      {"nodes", std::vector<std::string>(f.nodes().begin(), f.nodes().end())},
                      {"class", Cls(f.fault_class())},
                      {"causes", std::vector<std::string>(f.causes().begin(), f.causes().end())},
                      {"reason", f.reason()}});
  }
  return {{"nodes", nodes},
          {"faults", faults},
          {"pairs_probed", a.pairs_probed()},
          {"rounds", a.rounds()},
          {"references", std::vector<std::string>(a.references().begin(), a.references().end())}};
}

}  // namespace

int RunTriageCoordinatorCommand(CliContext& ctx) {
  constexpr const char* kWho = "nccl-triage-server triage-coordinator: ";
  std::string target, token_file, ca_file;
  std::optional<std::string> nodes;
  std::optional<std::string> count;  // the class
  std::string cause;                 // a catalogue id, or none
  int timeout_seconds = 900;
  Status parsed = FlagParser()
                      .String({"--coordinator"}, &target)
                      .String({"--token-file"}, &token_file)
                      .String({"--ca-file"}, &ca_file)
                      .String({"--probe"}, &nodes)
                      .String({"--count"}, &count)
                      .String({"--cause"}, &cause)
                      .Int({"--timeout-seconds"}, &timeout_seconds, 1, 86400)
                      .Parse(ctx.args);
  if (!parsed.ok()) {
    ctx.err << kWho << parsed.message() << "\n";
    return 2;
  }
  const bool probe = nodes.has_value();
  if (target.empty() || probe == count.has_value()) {
    ctx.err << kWho << "give --coordinator and one of --probe N1,N2 or --count CLASS\n";
    return 2;
  }
  std::string token;
  if (!token_file.empty()) {
    auto read = ReadTokenFile(token_file);
    if (!read.ok()) {
      ctx.err << kWho << read.status().message() << "\n";
      return 2;
    }
    token = std::move(read).value();
  } else if (const char* env = std::getenv("NCCL_TRIAGE_TOKEN")) {
    token = TrimToken(env);
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!ca_file.empty()) {
    auto pem = ReadWholeFile(ca_file, "coordinator CA", 1 << 20);
    if (!pem.ok()) {
      ctx.err << kWho << pem.status().message() << "\n";
      return 2;
    }
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = std::move(pem).value();
    creds = grpc::SslCredentials(ssl);
  }
  auto stub = v1::Coordinator::NewStub(grpc::CreateChannel(target, creds));
  grpc::ClientContext call;
  if (!token.empty()) call.AddMetadata("authorization", "Bearer " + token);
  call.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_seconds));
  grpc::Status st;
  json out;
  if (probe) {
    v1::TriageRequest req;
    for (const auto& n : triage::SplitList(*nodes)) req.add_nodes(n);
    v1::TriageAnswer answer;
    st = stub->Triage(&call, req, &answer);
    out = ToJson(answer);
  } else {
    v1::IncidentRecord req;
    auto c = FromString<FaultClass>(*count);
    if (!c.has_value()) {
      ctx.err << kWho << "'" << *count << "' is not a class\n";
      return 2;
    }
    req.set_fault_class(ToProto(*c));
    req.set_cause(cause);
    v1::IncidentRecorded answer;
    st = stub->RecordIncident(&call, req, &answer);
    out = {{"counted", true}};
  }
  if (!st.ok()) {
    // What the code means for this command, before gRPC's own words.
    std::string hint;
    switch (st.error_code()) {
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        hint = "no answer in " + std::to_string(timeout_seconds) + " s";
        break;
      case grpc::StatusCode::UNAUTHENTICATED:
        hint = "refused the token";
        break;
      case grpc::StatusCode::UNIMPLEMENTED:
        hint = "an older coordinator that does not know this call";
        break;
      default:
        break;
    }
    const std::string text = GrpcStatusText(st);
    ctx.err << "the coordinator at " << target << ": "
            << (hint.empty() ? text : hint + " (" + text + ")") << "\n";
    return 2;
  }
  ctx.out << DumpJson(out) << "\n";
  return 0;
}

}  // namespace nccl_triage
