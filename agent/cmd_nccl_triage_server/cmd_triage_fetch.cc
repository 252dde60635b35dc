// `nccl-triage-server triage-fetch`: the reads `nccl-triage triage` cannot make itself (HTTPS to
// the API server), streamed to it as frames (triage/frames.h): the job's pods, the agents'
// published node verdicts, then every container's log, current and previous instance, as a
// bounded head and tail. Several logs are read at once (one connection per reader); nothing is
// held beyond one chunk. Not for people: hidden from the usage.
//
//   triage-fetch (--selector S | --job NAME | --pods A,B | --nodes N1,N2) [--namespace NS]
//                [--kubeconfig FILE] [--context NAME] [--since-seconds N] [--head-bytes N]
//                [--tail-lines N] [--max-log-bytes N] [--agent-namespace NS] [--readers N]
//
// Exit 0 when the stream is complete (pods found or not: the parent judges); 2 with one line on
// stderr when the API cannot be used at all (credentials, an unreachable server, a refused list).
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <thread>

#include "base/flags.h"
#include "cmd_nccl_triage_server/server_cli.h"
#include "cmd_nccl_triage_server/triage_api.h"
#include "triage/frames.h"
#include "triage/records.h"
#include "triage/target.h"

namespace nccl_triage {
namespace {

using nlohmann::json;
using triage::Target;

constexpr size_t kMaxPods = 5000;
constexpr const char* kAgentSelector = "app.kubernetes.io/component=agent";

struct FetchArgs {
  Target target;
  std::string ns;
  std::string kubeconfig;
  std::string context;
  int64_t since_seconds = 0;
  int64_t head_bytes = 256 << 10;
  int64_t tail_lines = 5000;
  int64_t max_log_bytes = 8 << 20;
  std::string agent_ns = "nccl-triage";
  int readers = 4;
};

// Writes frames to stdout from several threads; a frame is written whole under the lock. A
// failed write (the parent went away) ends the process: nobody is left to read.
class FrameOut {
 public:
  void Write(const std::string& header, std::string_view payload = {}) {
    std::lock_guard lock(mu_);
    WriteAll(header);
    WriteAll(payload);
  }
  void Json(std::string_view type, json record) {
    Write(triage::JsonFrame(type, std::move(record)));
  }

 private:
  static void WriteAll(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::write(1, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ::_exit(3);
      data.remove_prefix(static_cast<size_t>(n));
    }
  }
  std::mutex mu_;
};

// Parses the arguments (base/flags.h); an error is the line to print.
std::string Parse(const std::vector<std::string>& args, FetchArgs& a) {
  int targets = 0;
  auto target = [&](Target::Kind kind) {
    return [&a, &targets, kind](const std::string& v) -> Status {
      ++targets;
      a.target.kind = kind;
      if (kind == Target::Kind::kSelector || kind == Target::Kind::kJob) {
        a.target.selector = v;
      } else {
        a.target.names = triage::SplitList(v);
      }
      return Status::Ok();
    };
  };
  auto count = [](int64_t* out) {
    return [out](const std::string& v) -> Status {
      try {
        size_t pos = 0;
        *out = std::stoll(v, &pos);
        if (pos == v.size() && *out >= 0) return Status::Ok();
      } catch (...) {
      }
      return InvalidArgument("expects a count, not '" + v + "'");
    };
  };
  Status parsed = FlagParser()
                      .Custom({"--selector"}, target(Target::Kind::kSelector))
                      .Custom({"--job"}, target(Target::Kind::kJob))
                      .Custom({"--pods"}, target(Target::Kind::kPods))
                      .Custom({"--nodes"}, target(Target::Kind::kNodes))
                      .String({"--namespace"}, &a.ns)
                      .String({"--kubeconfig"}, &a.kubeconfig)
                      .String({"--context"}, &a.context)
                      .String({"--agent-namespace"}, &a.agent_ns)
                      .Custom({"--since-seconds"}, count(&a.since_seconds))
                      .Custom({"--head-bytes"}, count(&a.head_bytes))
                      .Custom({"--tail-lines"}, count(&a.tail_lines))
                      .Custom({"--max-log-bytes"}, count(&a.max_log_bytes))
                      .Int({"--readers"}, &a.readers, 1, 32)
                      .Parse(args);
  if (!parsed.ok()) return parsed.message();
  if (targets != 1) return "give one of --selector, --job, --pods, --nodes";
  return "";
}

// Every page of a pod list; an API error is returned as the failing response.
StatusOr<std::vector<json>> ListAll(KubeClient& kube, const std::string& ns, PodListQuery q,
                                    size_t max_pods) {
  std::vector<json> out;
  while (true) {
    KubeResponse r = kube.ListNamespacedPods(ns, q);
    if (!r.ok()) return Unavailable(r.Describe());
    json page = json::parse(r.body, nullptr, false);
    if (!page.is_object() || !page.contains("items") || !page["items"].is_array()) {
      return Unavailable("the API answered the pod list with something else than a PodList");
    }
    for (json& item : page["items"]) {
      if (out.size() >= max_pods) {
        return Unavailable("more than " + std::to_string(max_pods) +
                           " pods match: narrow the selector");
      }
      out.push_back(std::move(item));
    }
    std::string next;
    if (page["metadata"].is_object() && page["metadata"]["continue"].is_string()) {
      next = page["metadata"]["continue"].get<std::string>();
    }
    if (next.empty()) return out;
    q.continue_token = next;
  }
}

// The job's pods, as API objects; `how` says which selector found them.
StatusOr<std::vector<json>> FindPods(KubeClient& kube, const FetchArgs& a, const std::string& ns,
                                     FrameOut& out, std::string* how) {
  std::vector<json> pods;
  switch (a.target.kind) {
    case Target::Kind::kSelector: {
      PodListQuery q;
      q.label_selector = a.target.selector;
      *how = "labelSelector " + a.target.selector;
      return ListAll(kube, ns, q, kMaxPods);
    }
    case Target::Kind::kJob: {
      for (const std::string& selector : triage::JobSelectors(a.target.selector)) {
        PodListQuery q;
        q.label_selector = selector;
        auto found = ListAll(kube, ns, q, kMaxPods);
        if (!found.ok()) return found;
        *how = "labelSelector " + selector;
        if (!found->empty()) return found;
      }
      *how = "the labels of a Job, PyTorchJob, MPIJob, JobSet or Volcano job named " +
             a.target.selector;
      return pods;
    }
    case Target::Kind::kPods: {
      // A list by name rather than a get: the triage needs list on pods and nothing more.
      *how = "fieldSelector metadata.name";
      for (const std::string& name : a.target.names) {
        PodListQuery q;
        q.field_selector = "metadata.name=" + name;
        auto found = ListAll(kube, ns, q, 1);
        if (!found.ok()) return found;
        if (found->empty()) {
          out.Json("missing", {{"pod", name}, {"reason", "no pod of that name in " + ns}});
          continue;
        }
        pods.push_back(std::move(found->front()));
      }
      return pods;
    }
    case Target::Kind::kNodes: {
      *how = "fieldSelector spec.nodeName";
      for (const std::string& node : a.target.names) {
        PodListQuery q;
        q.field_selector = "spec.nodeName=" + node;
        auto found = ListAll(kube, ns, q, kMaxPods - pods.size());
        if (!found.ok()) return found;
        for (json& p : *found) pods.push_back(std::move(p));
      }
      return pods;
    }
  }
  return pods;
}

struct LogJob {
  uint64_t id;
  std::string pod;
  std::string container;
  bool previous;
};

// Reads one log as a head and, when the head reached its limit, a tail; streams both.
void ReadLog(KubeClient& kube, const FetchArgs& a, const std::string& ns, const LogJob& job,
             FrameOut& out) {
  triage::LogStreamBegin begin{job.id, job.pod, job.container, job.previous};
  out.Json("log_begin", triage::ToJson(begin));
  triage::LogStreamEnd end;
  end.id = job.id;
  uint64_t* counter = &end.head_bytes;
  auto sink = [&](std::string_view chunk) {
    *counter += chunk.size();
    while (!chunk.empty()) {
      const size_t n = std::min(chunk.size(), triage::kMaxLogFrame);
      out.Write(triage::LogFrameHeader(job.id, n), chunk.substr(0, n));
      chunk.remove_prefix(n);
    }
    return true;
  };
  PodLogQuery q;
  q.container = job.container;
  q.previous = job.previous;
  q.timestamps = true;
  q.since_seconds = a.since_seconds;
  const int64_t head = std::min(a.head_bytes, a.max_log_bytes);
  q.limit_bytes = head;
  KubeResponse r = kube.StreamPodLog(ns, job.pod, q, sink);
  // The API may stop a little short of limitBytes: a head within 64 KiB of it may be cut.
  const bool cut = r.ok() && static_cast<int64_t>(end.head_bytes) + (64 << 10) >= head &&
                   a.max_log_bytes > head && a.tail_lines > 0;
  if (r.ok() && cut) {
    out.Json("log_tail", {{"id", job.id}});
    end.tail = true;
    counter = &end.tail_bytes;
    q.tail_lines = a.tail_lines;
    q.limit_bytes = a.max_log_bytes - head;
    r = kube.StreamPodLog(ns, job.pod, q, sink);
    end.tail_cut = r.ok() && static_cast<int64_t>(end.tail_bytes) >= q.limit_bytes;
  }
  if (!r.ok()) {
    end.status = r.status;
    end.error = r.Describe();
  }
  out.Json("log_end", triage::ToJson(end));
}

}  // namespace

int RunTriageFetchCommand(CliContext& ctx) {
  FetchArgs a;
  if (std::string e = Parse(ctx.args, a); !e.empty()) {
    ctx.err << "nccl-triage-server triage-fetch: " << e << "\n";
    return 2;
  }
  auto access = TriageApiAccess(a.kubeconfig, a.context);
  if (!access.ok()) {
    ctx.err << access.status().message() << "\n";
    return 2;
  }
  auto client = TriageClient(*access);
  if (!client.ok()) {
    ctx.err << access->source << ": " << client.status().message() << "\n";
    return 2;
  }
  KubeClient& kube = **client;
  const std::string ns = !a.ns.empty()                        ? a.ns
                         : !access->default_namespace.empty() ? access->default_namespace
                                                              : "default";
  FrameOut out;
  out.Write(std::string(triage::kFetchMagic));
  out.Json("target", {{"namespace", ns}, {"api", access->source}});

  std::string how;
  auto pods = FindPods(kube, a, ns, out, &how);
  if (!pods.ok()) {
    ctx.err << "cannot list the pods in namespace " << ns << " (" << access->source
            << "): " << pods.status().message() << "\n";
    return 2;
  }
  std::vector<LogJob> jobs;
  std::set<std::string> nodes;
  if (a.target.kind == Target::Kind::kNodes)
    nodes.insert(a.target.names.begin(), a.target.names.end());
  for (const json& item : *pods) {
    triage::JobPod p = triage::PodFromApi(item);
    out.Json("pod", triage::ToJson(p));
    if (!p.node.empty()) nodes.insert(p.node);
    for (const auto& c : p.containers) {
      jobs.push_back({jobs.size() + 1, p.name, c.name, false});
      if (c.restart_count > 0) jobs.push_back({jobs.size() + 1, p.name, c.name, true});
    }
  }
  out.Json("pods_done", {{"count", pods->size()}, {"found_by", how}});

  // The agents' verdicts on the job's nodes: a missing namespace or RBAC is not fatal.
  if (!nodes.empty()) {
    PodListQuery q;
    q.label_selector = kAgentSelector;
    auto agents = ListAll(kube, a.agent_ns, q, kMaxPods);
    if (!agents.ok()) {
      out.Json("agents_error", {{"error", "agent pods in namespace " + a.agent_ns + ": " +
                                              agents.status().message()}});
    } else {
      for (const json& item : *agents) {
        auto v = triage::AgentVerdictFromApi(item);
        if (v && nodes.count(v->node)) out.Json("agent", triage::ToJson(*v));
      }
      out.Json("agents_done", {{"namespace", a.agent_ns}});
    }
  }

  // The logs, `readers` at a time, each reader with its own connection.
  std::atomic<size_t> next{0};
  std::vector<std::thread> readers;
  const int n = static_cast<int>(std::min<size_t>(static_cast<size_t>(a.readers), jobs.size()));
  for (int i = 0; i < n; ++i) {
    readers.emplace_back([&] {
      auto own = TriageClient(*access);
      for (size_t j = next++; j < jobs.size(); j = next++) {
        if (!own.ok()) {
          triage::LogStreamEnd end;
          end.id = jobs[j].id;
          end.error = own.status().message();
          out.Json("log_begin", triage::ToJson(triage::LogStreamBegin{
                                    jobs[j].id, jobs[j].pod, jobs[j].container, jobs[j].previous}));
          out.Json("log_end", triage::ToJson(end));
          continue;
        }
        ReadLog(**own, a, ns, jobs[j], out);
      }
    });
  }
  for (auto& t : readers) t.join();
  out.Json("done", json::object());
  return 0;
}

}  // namespace nccl_triage
