#include "cmd_nccl_triage/triage_children.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "probe/subprocess.h"
#include "triage/frames.h"
#include "triage/log_reader.h"

namespace nccl_triage {
namespace {

using nlohmann::json;

// Logs open at once: the child reads a few in parallel; more means it broke the contract.
constexpr size_t kMaxOpenLogs = 64;

std::string FirstLine(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// Why a child failed, in one line.
std::string ChildFailure(const std::string& what, const SubprocessResult& r) {
  if (r.kind == ExitKind::kSpawnFailed) return "cannot run " + what + ": " + r.error;
  if (r.kind == ExitKind::kTimedOut) return what + " did not finish in time";
  if (r.kind == ExitKind::kSignaled)
    return what + " was killed by signal " + std::to_string(r.signal);
  const std::string line = FirstLine(r.err);
  return line.empty() ? what + " failed (exit " + std::to_string(r.exit_code) + ")" : line;
}

// Turns the child's records into a FetchResult, classifying logs as their bytes arrive.
class FetchConsumer {
 public:
  explicit FetchConsumer(const FetchRequest& req) : req_(req) {}

  Status OnFrame(const triage::Frame& f) {
    if (f.kind == 'L') {
      auto it = open_.find(f.stream);
      if (it == open_.end()) return InvalidArgument("log bytes for a log that is not open");
      it->second.reader->Feed(f.payload);
      return Status::Ok();
    }
    json j = json::parse(f.payload, nullptr, false);
    if (!j.is_object()) return InvalidArgument("a record that is not a JSON object");
    const std::string type = StringMember(j, "type");
    if (type == "target") {
      out_.ns = StringMember(j, "namespace");
      out_.api = StringMember(j, "api");
    } else if (type == "pod") {
      auto pod = triage::JobPodFromJson(j);
      if (!pod.ok()) return pod.status();
      for (const auto& c : pod->containers) total_ += c.restart_count > 0 ? 2 : 1;
      out_.pods.push_back(std::move(pod).value());
    } else if (type == "missing") {
      out_.missing.push_back(StringMember(j, "pod"));
    } else if (type == "pods_done") {
      out_.found_by = StringMember(j, "found_by");
    } else if (type == "agent") {
      auto a = triage::AgentVerdictFromJson(j);
      if (!a.ok()) return a.status();
      out_.agents.push_back(std::move(a).value());
    } else if (type == "agents_done") {
      out_.checks_read = true;
    } else if (type == "agents_error") {
      out_.checks_error = StringMember(j, "error");
    } else if (type == "log_begin") {
      auto b = triage::LogStreamBeginFromJson(j);
      if (!b.ok()) return b.status();
      if (open_.size() >= kMaxOpenLogs) return InvalidArgument("too many logs open at once");
      open_[b->id] = Open{*b, std::make_unique<triage::LogReader>()};
    } else if (type == "log_tail") {
      auto it = open_.find(j.value("id", uint64_t{0}));
      if (it == open_.end()) return InvalidArgument("a tail for a log that is not open");
      it->second.reader->StartTail();
    } else if (type == "log_end") {
      auto e = triage::LogStreamEndFromJson(j);
      if (!e.ok()) return e.status();
      auto it = open_.find(e->id);
      if (it == open_.end()) return InvalidArgument("the end of a log that is not open");
      triage::LogResult r;
      r.pod = it->second.begin.pod;
      r.container = it->second.begin.container;
      r.previous = it->second.begin.previous;
      r.end = *e;
      r.read = e->error.empty() || e->head_bytes + e->tail_bytes > 0;
      if (r.read) r.summary = it->second.reader->Finish();
      open_.erase(it);
      out_.logs.push_back(std::move(r));
      if (req_.progress) req_.progress(out_.logs.size(), total_);
    } else if (type == "done") {
      done_ = true;
    }
    // Other types: a newer child; what this binary does not know it does not need.
    return Status::Ok();
  }

  bool done() const { return done_; }
  FetchResult Take() { return std::move(out_); }

 private:
  struct Open {
    triage::LogStreamBegin begin;
    std::unique_ptr<triage::LogReader> reader;
  };
  const FetchRequest& req_;
  FetchResult out_;
  std::map<uint64_t, Open> open_;
  size_t total_ = 0;
  bool done_ = false;
};

}  // namespace

std::vector<std::string> ApiEnvironment() {
  std::vector<std::string> env;
  for (const char* name :
       {"KUBECONFIG", "HOME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') env.push_back(std::string(name) + "=" + v);
  }
  return env;
}

StatusOr<FetchResult> RunFetch(const FetchRequest& req) {
  if (::access(req.server_exe.c_str(), X_OK) != 0) {
    return NotFound(req.server_exe +
                    " not found: the triage reads the Kubernetes API through nccl-triage-server, "
                    "installed beside nccl-triage");
  }
  FetchConsumer consumer(req);
  triage::FrameDecoder decoder;
  Status stream_error;
  SubprocessOptions o;
  o.argv = {req.server_exe, "triage-fetch"};
  o.argv.insert(o.argv.end(), req.args.begin(), req.args.end());
  o.env = ApiEnvironment();
  o.timeout = req.timeout;
  o.max_output_bytes = 64 << 10;
  o.on_stdout = [&](std::string_view bytes) {
    stream_error = decoder.Feed(bytes, [&](const triage::Frame& f) { return consumer.OnFrame(f); });
    return stream_error.ok();
  };
  const SubprocessResult r = RunSubprocess(std::move(o));
  const std::string what = "nccl-triage-server triage-fetch";
  if (!stream_error.ok())
    return Unavailable(what + ": a malformed stream: " + stream_error.message());
  if (r.kind != ExitKind::kExited || r.exit_code != 0) return Unavailable(ChildFailure(what, r));
  if (Status s = decoder.Finish(); !s.ok()) return Unavailable(what + ": " + s.message());
  if (!consumer.done()) return Unavailable(what + ": the stream ended before its last record");
  return consumer.Take();
}

namespace {

std::vector<std::string> CoordinatorArgs(const CoordinatorAccess& c) {
  std::vector<std::string> argv = {c.server_exe, "triage-coordinator", "--coordinator", c.target};
  if (!c.token_file.empty()) argv.insert(argv.end(), {"--token-file", c.token_file});
  if (!c.ca_file.empty()) argv.insert(argv.end(), {"--ca-file", c.ca_file});
  return argv;
}

// The coordinator child's environment: the token, when it comes from the environment.
std::vector<std::string> CoordinatorEnvironment() {
  std::vector<std::string> env;
  if (const char* token = std::getenv("NCCL_TRIAGE_TOKEN"); token != nullptr && *token != '\0') {
    env.push_back(std::string("NCCL_TRIAGE_TOKEN=") + token);
  }
  return env;
}

}  // namespace

triage::ProbeOutcome RunProbes(const CoordinatorAccess& coordinator,
                               const std::vector<std::string>& nodes, std::chrono::seconds timeout,
                               const std::function<void(int seconds)>& progress) {
  triage::ProbeOutcome out;
  out.asked = true;
  std::string list;
  for (const auto& n : nodes) list += (list.empty() ? "" : ",") + n;
  SubprocessOptions o;
  o.argv = CoordinatorArgs(coordinator);
  o.argv.insert(o.argv.end(),
                {"--probe", list, "--timeout-seconds", std::to_string(timeout.count())});
  o.env = CoordinatorEnvironment();
  o.timeout = timeout + std::chrono::seconds(10);
  o.max_output_bytes = 4 << 20;
  auto child = Subprocess::Spawn(std::move(o));
  const std::string what = "nccl-triage-server triage-coordinator";
  if (!child.ok()) {
    out.error = "cannot run " + what + ": " + child.status().message();
    return out;
  }
  Subprocess* c = child->get();
  const auto start = Subprocess::Clock::now();
  int shown = 0;
  if (progress) progress(0);  // at once: the probes take seconds to minutes
  while (!c->done()) {
    Subprocess::Pump(std::span<Subprocess* const>(&c, 1), nullptr,
                     Subprocess::Clock::now() + std::chrono::seconds(1));
    const int seconds = static_cast<int>(
        std::chrono::duration_cast<std::chrono::seconds>(Subprocess::Clock::now() - start).count());
    if (progress && !c->done() && seconds > shown) progress(shown = seconds);
  }
  const SubprocessResult r = c->Wait();
  if (r.kind != ExitKind::kExited || r.exit_code != 0) {
    out.error = ChildFailure(what, r);
    return out;
  }
  auto parsed = triage::ProbeOutcomeFromJson(json::parse(r.out, nullptr, false));
  if (!parsed.ok()) {
    out.error = parsed.status().message();
    return out;
  }
  return std::move(parsed).value();
}

std::string CountIncident(const CoordinatorAccess& coordinator, const triage::Incident& incident) {
  SubprocessOptions o;
  o.argv = CoordinatorArgs(coordinator);
  o.argv.insert(o.argv.end(), {"--count", std::string(ToString(incident.fault_class)),
                               "--timeout-seconds", "15"});
  if (!incident.cause.empty()) o.argv.insert(o.argv.end(), {"--cause", incident.cause});
  o.env = CoordinatorEnvironment();
  o.timeout = std::chrono::seconds(25);
  const SubprocessResult r = RunSubprocess(std::move(o));
  if (r.kind == ExitKind::kExited && r.exit_code == 0) return "";
  return ChildFailure("nccl-triage-server triage-coordinator", r);
}

triage::KeepOutcome RunKeep(const std::string& server_exe, const std::vector<std::string>& args,
                            const triage::Incident& incident, const FetchResult& fetched) {
  triage::KeepOutcome k;
  k.attempted = true;
  json pods = json::array();
  for (const auto& p : fetched.pods) pods.push_back({{"name", p.name}, {"uid", p.uid}});
  const triage::OwnerRef& obj = incident.event_object;
  json req = {
      {"namespace", fetched.ns},
      {"pods", pods},
      {"annotation",
       {{"key", triage::kIncidentAnnotation}, {"value", triage::IncidentAnnotation(incident)}}},
      {"event",
       {{"api_version", obj.api_version},
        {"kind", obj.kind},
        {"name", obj.name},
        {"uid", obj.uid},
        {"type", incident.fault_class == FaultClass::kHealthy ? "Normal" : "Warning"},
        {"reason", triage::IncidentEventReason(incident)},
        {"message", triage::IncidentEventMessage(incident)}}}};
  SubprocessOptions o;
  o.argv = {server_exe, "triage-keep"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = ApiEnvironment();
  o.timeout = std::chrono::seconds(120);
  o.pipe_stdin = true;
  auto child = Subprocess::Spawn(std::move(o));
  const std::string what = "nccl-triage-server triage-keep";
  if (!child.ok()) {
    k.annotate_error = k.event_error = "cannot run " + what + ": " + child.status().message();
    return k;
  }
  Status w = (*child)->WriteStdin(DumpJson(req));
  (*child)->CloseStdin();
  const SubprocessResult r = (*child)->Wait();
  const json answer = json::parse(r.out, nullptr, false);
  if (r.kind != ExitKind::kExited || r.exit_code != 0 || !answer.is_object()) {
    k.annotate_error = k.event_error = !w.ok() ? what + ": " + w.message() : ChildFailure(what, r);
    k.annotate_failed = static_cast<int>(fetched.pods.size());
    return k;
  }
  k.annotated = answer.value("annotated", 0);
  k.annotate_failed = answer.value("annotate_failed", 0);
  k.annotate_error = StringMember(answer, "annotate_error");
  k.event_created = answer.value("event_created", false);
  k.event_error = StringMember(answer, "event_error");
  return k;
}

}  // namespace nccl_triage
