// `nccl-triage-server triage-keep [--kubeconfig FILE] [--context NAME]`: keeps an incident where
// Kubernetes users look. Reads one JSON document on stdin from `nccl-triage triage`:
//
//   {"namespace": NS, "pods": [{"name", "uid"}], "annotation": {"key", "value"},
//    "event": {"api_version", "kind", "name", "uid", "reason", "type", "message"}}
//
// patches the annotation onto every pod (with its UID as a precondition: a pod recreated under
// the same name is not annotated) and creates the Event on the job object, then prints
// {"annotated", "annotate_failed", "annotate_error", "event_created", "event_error"}. A call
// that fails is reported, never retried here: the incident is already printed. Not for people.
#include <atomic>
#include <iostream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/files.h"
#include "base/flags.h"
#include "cmd_nccl_triage_server/server_cli.h"
#include "cmd_nccl_triage_server/triage_api.h"
#include "core/json_text.h"

namespace nccl_triage {
namespace {

using nlohmann::json;

constexpr size_t kMaxInput = 1 << 20;
constexpr int kPatchers = 4;

}  // namespace

int RunTriageKeepCommand(CliContext& ctx) {
  std::string kubeconfig, context;
  Status parsed = FlagParser()
                      .String({"--kubeconfig"}, &kubeconfig)
                      .String({"--context"}, &context)
                      .Parse(ctx.args);
  if (!parsed.ok()) {
    ctx.err << "nccl-triage-server triage-keep: " << parsed.message() << "\n";
    return 2;
  }
  auto input = ReadWholeStream(std::cin, "keep request", kMaxInput);
  if (!input.ok()) {
    ctx.err << "nccl-triage-server triage-keep: " << input.status().message() << "\n";
    return 2;
  }
  const json req = json::parse(*input, nullptr, false);
  if (!req.is_object() || !req["pods"].is_array() || !req["annotation"].is_object() ||
      !req["event"].is_object()) {
    ctx.err << "nccl-triage-server triage-keep: the request is not a keep document\n";
    return 2;
  }
  auto access = TriageApiAccess(kubeconfig, context);
  if (!access.ok()) {
    ctx.err << access.status().message() << "\n";
    return 2;
  }
  const std::string ns = StringMember(req, "namespace");
  const std::string key = StringMember(req["annotation"], "key");
  const std::string value = StringMember(req["annotation"], "value");

  std::atomic<size_t> next{0};
  std::atomic<int> annotated{0}, failed{0};
  std::mutex mu;
  std::string first_error;
  auto fail = [&](const std::string& e) {
    ++failed;
    std::lock_guard lock(mu);
    if (first_error.empty()) first_error = e;
  };
  const json& pods = req["pods"];
  std::vector<std::thread> patchers;
  for (int i = 0; i < kPatchers && static_cast<size_t>(i) < pods.size(); ++i) {
    patchers.emplace_back([&] {
      auto client = TriageClient(*access);
      for (size_t j = next++; j < pods.size(); j = next++) {
        if (!client.ok()) {
          fail(client.status().message());
          continue;
        }
        const std::string name = StringMember(pods[j], "name");
        KubeResponse r =
            (*client)->PatchPodAnnotationsIfUid(ns, name, StringMember(pods[j], "uid"),
                                                {{key, value}});
        if (r.ok()) {
          ++annotated;
        } else {
          fail(name + ": " + r.Describe());
        }
      }
    });
  }
  for (auto& t : patchers) t.join();

  json result = {{"annotated", annotated.load()},
                 {"annotate_failed", failed.load()},
                 {"annotate_error", first_error},
                 {"event_created", false},
                 {"event_error", ""}};
  const json& ev = req["event"];
  auto client = TriageClient(*access);
  if (!client.ok()) {
    result["event_error"] = client.status().message();
  } else {
    KubeEvent e;
    e.ns = ns;
    e.involved_api_version = StringMember(ev, "api_version");
    e.involved_kind = StringMember(ev, "kind");
    e.involved_name = StringMember(ev, "name");
    e.involved_namespace = ns;
    e.involved_uid = StringMember(ev, "uid");
    e.type = StringMember(ev, "type");
    e.reason = StringMember(ev, "reason");
    e.message = StringMember(ev, "message");
    e.component = "nccl-triage";
    e.at_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
    KubeResponse r = (*client)->CreateEvent(e);
    result["event_created"] = r.ok();
    if (!r.ok()) result["event_error"] = r.Describe();
  }
  ctx.out << DumpJson(result) << "\n";
  return 0;
}

}  // namespace nccl_triage
