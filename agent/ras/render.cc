#include "ras/render.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/text.h"
#include "ras/protocol.h"

namespace nccl_triage::ras {
namespace {

using nlohmann::json;

// Left-aligned columns, two spaces apart.
std::string Columns(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line = indent;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string IntText(int v) { return v < 0 ? "-" : std::to_string(v); }
std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

std::string Plural(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

json RefJson(const RankRef& r) {
  json j = json::object();
  j["rank"] = r.rank >= 0 ? json(r.rank) : json(nullptr);
  j["host"] = r.host.empty() ? json(nullptr) : json(r.host);
  j["pid"] = r.pid >= 0 ? json(r.pid) : json(nullptr);
  j["gpu"] = r.gpu.empty() ? json(nullptr) : json(r.gpu);
  return j;
}

json ProcessJson(const Process& p) {
  return json{{"pid", p.pid}, {"host", p.host}, {"gpus", p.gpus}};
}

}  // namespace

std::string RenderTable(const Source& s, const Report& r, const Judgement& j) {
  std::ostringstream os;
  os << "target:   " << s.target;
  if (s.target != "--addr " + s.address) os << ": " << s.address;
  if (!s.netns.empty()) os << " (network namespace " << s.netns << ")";
  os << "\n";
  os << "nccl:     " << OrDash(r.nccl_version) << ", RAS protocol " << s.protocol;
  if (!s.protocol_known) {
    os << " (unknown: this client speaks " << kClientProtocol << "; read as best it can)";
  }
  os << ", " << r.format << " report";
  if (r.collection_s >= 0) {
    std::ostringstream t;
    t.precision(3);
    t << std::fixed << r.collection_s;
    os << ", gathered by NCCL in " << t.str() << " s";
  }
  os << ", answered in " << s.elapsed_ms << " ms";
  if (s.asked_again_s > 0) os << "; asked again " << s.asked_again_s << " s later";
  os << "\n";
  if (r.nodes >= 0) {
    os << "job:      " << Plural(r.nodes, "node", "nodes") << ", "
       << Plural(r.processes, "process", "processes") << ", " << Plural(r.gpus, "GPU", "GPUs")
       << "\n";
  }
  os << "state:    " << j.state << ": " << j.summary << "\n";
  if (r.timeouts > 0) {
    os << "warning:  NCCL met " << Plural(r.timeouts, "timeout", "timeouts")
       << " while gathering: the report may be partial\n";
  }

  if (!j.findings.empty()) {
    os << "\nfindings (" << j.findings.size() << "):\n";
    std::vector<std::vector<std::string>> rows{
        {"KIND", "COMMUNICATOR", "RANK", "PID", "HOST", "GPU", "DETAIL"}};
    for (const auto& f : j.findings) {
      rows.push_back({std::string(ToString(f.kind)), OrDash(f.comm),
                      f.ranks > 1 ? std::to_string(f.ranks) + " ranks" : IntText(f.rank.rank),
                      IntText(f.rank.pid), OrDash(f.rank.host), OrDash(f.rank.gpu), f.detail});
    }
    os << Columns(rows, "  ");
  }

  if (!r.groups.empty()) {
    os << "\ncommunicator groups (" << r.groups.size() << "):\n";
    std::vector<std::vector<std::string>> rows{{"GROUP", "COMMS", "NODES", "RANKS/NODE",
                                                "RANKS/COMM", "RANKS", "STATUS", "ERRORS"}};
    for (const auto& g : r.groups) {
      rows.push_back({std::to_string(g.group), std::to_string(g.comms), std::to_string(g.nodes),
                      g.ranks_per_node, std::to_string(g.ranks_per_comm),
                      std::to_string(g.ranks_in_group), g.status, g.errors});
    }
    os << Columns(rows, "  ");
  }

  if (!r.communicators.empty()) {
    os << "\ncommunicators" << (r.format == "text" ? " the report details" : "") << " ("
       << r.communicators.size() << "):\n";
    std::vector<std::vector<std::string>> rows{
        {"COMMUNICATOR", "RANKS", "ANSWERED", "MISSING", "DEAD", "SILENT", "PROBLEMS"}};
    for (const auto& c : r.communicators) {
      rows.push_back({c.hash, IntText(c.size), IntText(c.responding), std::to_string(c.missing),
                      std::to_string(c.dead), std::to_string(c.unresponsive),
                      c.problems.empty() ? "-" : Join(c.problems, ",")});
    }
    os << Columns(rows, "  ");
    for (const auto& c : r.communicators) {
      if (c.ranks.empty()) continue;
      std::set<std::string> ops;
      for (const auto& ri : c.ranks) {
        for (const auto& [op, n] : ri.op_counts) {
          // An operation nobody launched says nothing; keep the columns that do.
          bool any = false;
          for (const auto& other : c.ranks) {
            const auto it = other.op_counts.find(op);
            any = any || (it != other.op_counts.end() && it->second > 0);
          }
          if (any) ops.insert(op);
        }
      }
      os << "\nranks of " << c.hash << (r.format == "text" ? " (those the report names)" : "")
         << ":\n";
      std::vector<std::string> head{"RANK", "STATE", "PID", "HOST", "GPU"};
      for (const auto& op : ops) head.push_back(op);
      head.push_back("ERROR");
      std::vector<std::vector<std::string>> rr{head};
      std::vector<const RankInfo*> sorted;
      for (const auto& ri : c.ranks) sorted.push_back(&ri);
      std::sort(sorted.begin(), sorted.end(),
                [](const RankInfo* a, const RankInfo* b) { return a->ref.rank < b->ref.rank; });
      for (const RankInfo* ri : sorted) {
        std::vector<std::string> row{IntText(ri->ref.rank), std::string(ToString(ri->state)),
                                     IntText(ri->ref.pid), OrDash(ri->ref.host),
                                     OrDash(ri->ref.gpu)};
        for (const auto& op : ops) {
          const auto it = ri->op_counts.find(op);
          row.push_back(it == ri->op_counts.end() ? "-" : std::to_string(it->second));
        }
        row.push_back(OrDash(ri->error));
        rr.push_back(std::move(row));
      }
      os << Columns(rr, "  ");
    }
  }
  if (!r.notes.empty()) {
    os << "\nnotes:\n";
    for (const auto& n : r.notes) os << "  " << n << "\n";
  }
  // Everything above may quote the peer: no control character reaches the terminal.
  std::string out = os.str();
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7f) c = '?';
  }
  return out;
}

json ToJson(const Source& s, const Report& r, const Judgement& j) {
  json out;
  out["schema"] = kRasSchema;
  out["target"] = s.target;
  out["address"] = s.address;
  out["network_namespace"] = s.netns.empty() ? json(nullptr) : json(s.netns);
  out["protocol"] = {{"server", s.protocol},
                     {"client", std::to_string(kClientProtocol)},
                     {"known", s.protocol_known}};
  out["format"] = r.format;
  out["nccl_version"] = r.nccl_version.empty() ? json(nullptr) : json(r.nccl_version);
  out["elapsed_ms"] = s.elapsed_ms;
  out["asked_again_s"] = s.asked_again_s > 0 ? json(s.asked_again_s) : json(nullptr);
  out["collection_s"] = r.collection_s >= 0 ? json(r.collection_s) : json(nullptr);
  out["timeouts"] = r.timeouts;
  out["state"] = j.state;
  out["summary"] = j.summary;
  json findings = json::array();
  for (const auto& f : j.findings) {
    json fj = RefJson(f.rank);
    fj["kind"] = std::string(ToString(f.kind));
    fj["communicator"] = f.comm.empty() ? json(nullptr) : json(f.comm);
    fj["ranks"] = f.ranks;
    fj["detail"] = f.detail;
    findings.push_back(std::move(fj));
  }
  out["findings"] = std::move(findings);
  out["job"] = {{"nodes", r.nodes >= 0 ? json(r.nodes) : json(nullptr)},
                {"processes", r.processes >= 0 ? json(r.processes) : json(nullptr)},
                {"gpus", r.gpus >= 0 ? json(r.gpus) : json(nullptr)}};
  json missing = json::array();
  for (const auto& p : r.missing) missing.push_back(ProcessJson(p));
  json dead = json::array();
  for (const auto& p : r.dead) dead.push_back(ProcessJson(p));
  out["processes"] = {{"missing_count", r.missing_processes},
                      {"missing", std::move(missing)},
                      {"dead_count", r.dead_processes},
                      {"dead", std::move(dead)}};
  json groups = json::array();
  for (const auto& g : r.groups) {
    groups.push_back({{"group", g.group}, {"comms", g.comms}, {"nodes", g.nodes},
                      {"ranks_per_node", g.ranks_per_node}, {"ranks_per_comm", g.ranks_per_comm},
                      {"ranks_in_group", g.ranks_in_group}, {"status", g.status},
                      {"errors", g.errors}});
  }
  out["groups"] = std::move(groups);
  json comms = json::array();
  for (const auto& c : r.communicators) {
    json cj;
    cj["hash"] = c.hash;
    cj["size"] = c.size >= 0 ? json(c.size) : json(nullptr);
    cj["responding"] = c.responding >= 0 ? json(c.responding) : json(nullptr);
    cj["missing"] = c.missing;
    cj["dead"] = c.dead;
    cj["unresponsive"] = c.unresponsive;
    cj["problems"] = c.problems;
    json ranks = json::array();
    for (const auto& ri : c.ranks) {
      json rj = RefJson(ri.ref);
      rj["state"] = std::string(ToString(ri.state));
      rj["op_counts"] = ri.op_counts;
      rj["error"] = ri.error.empty() ? json(nullptr) : json(ri.error);
      ranks.push_back(std::move(rj));
    }
    cj["ranks"] = std::move(ranks);
    comms.push_back(std::move(cj));
  }
  out["communicators"] = std::move(comms);
  out["notes"] = r.notes;
  return out;
}

}  // namespace nccl_triage::ras
