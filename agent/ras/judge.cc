#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "ras/report.h"

namespace nccl_triage::ras {
namespace {

bool Answered(RankState s) {
  return s != RankState::kUnresponsive && s != RankState::kDead && s != RankState::kNoComm;
}

std::string Who(const Finding& f) {
  std::string s;
  if (f.ranks > 1) {
    s = std::to_string(f.ranks) + " ranks";
  } else if (f.rank.rank >= 0) {
    s = "rank " + std::to_string(f.rank.rank);
  } else {
    s = "process " + std::to_string(f.rank.pid);
  }
  if (!f.comm.empty()) s += " of communicator " + f.comm;
  std::string where;
  if (f.rank.rank >= 0 && f.rank.pid >= 0) where = "pid " + std::to_string(f.rank.pid);
  if (!f.rank.host.empty()) where += (where.empty() ? "on " : " on ") + f.rank.host;
  if (!f.rank.gpu.empty()) where += (where.empty() ? "GPU " : ", GPU ") + f.rank.gpu;
  if (!where.empty()) s += " (" + where + ")";
  return s;
}

// Lagging ranks of one communicator: per operation, those that launched the fewest while others
// launched more. JSON gives every rank's count; text gives groups and names only outliers.
void Lagging(const Communicator& c, std::vector<Finding>& out) {
  std::set<std::string> ops;
  for (const auto& ri : c.ranks) {
    if (!Answered(ri.state)) continue;
    for (const auto& [op, n] : ri.op_counts) ops.insert(op);
  }
  for (const auto& g : c.count_groups) ops.insert(g.op);
  for (const std::string& op : ops) {
    // count -> ranks (named) and how many ranks have it.
    std::map<uint64_t, std::pair<std::vector<const RankInfo*>, int>> by_count;
    if (c.count_groups.empty()) {
      for (const auto& ri : c.ranks) {
        if (!Answered(ri.state)) continue;
        const auto it = ri.op_counts.find(op);
        if (it == ri.op_counts.end()) continue;
        auto& e = by_count[it->second];
        e.first.push_back(&ri);
        ++e.second;
      }
    } else {
      for (const auto& g : c.count_groups) {
        if (g.op != op) continue;
        auto& e = by_count[g.count];
        e.second += g.ranks;
        for (int rank : g.listed) {
          for (const auto& ri : c.ranks) {
            if (ri.ref.rank == rank) e.first.push_back(&ri);
          }
        }
      }
    }
    if (by_count.size() < 2) continue;
    const uint64_t most = by_count.rbegin()->first;
    const auto& [low, entry] = *by_count.begin();
    const std::string detail = op + ": launched " + std::to_string(low) + ", others up to " +
                               std::to_string(most);
    for (const RankInfo* ri : entry.first) {
      out.push_back(Finding{FindingKind::kLagging, c.hash, ri->ref, 1, detail});
    }
    const int unnamed = entry.second - static_cast<int>(entry.first.size());
    if (unnamed > 0) {
      out.push_back(Finding{FindingKind::kLagging, c.hash, RankRef{}, unnamed,
                            detail + " (the report does not name them; try --verbose)"});
    }
  }
}

// The lowest count of `op` in communicator `hash`, over the ranks that answered and the text's
// groups; nullopt when the report has none.
std::optional<uint64_t> LowestCount(const Report& r, const std::string& hash,
                                    const std::string& op) {
  std::optional<uint64_t> low;
  for (const auto& c : r.communicators) {
    if (c.hash != hash) continue;
    for (const auto& ri : c.ranks) {
      const auto it = ri.op_counts.find(op);
      if (Answered(ri.state) && it != ri.op_counts.end() && (!low || it->second < *low)) {
        low = it->second;
      }
    }
    for (const auto& g : c.count_groups) {
      if (g.op == op && (!low || g.count < *low)) low = g.count;
    }
  }
  return low;
}

std::string OpOf(const Finding& f) { return f.detail.substr(0, f.detail.find(':')); }

// State and summary from the findings (in their order: dead, silent, lagging, errors, status).
void Finish(const Report& r, Judgement& j) {
  bool stuck = false;
  bool error = false;
  for (const auto& f : j.findings) {
    const bool s = f.kind == FindingKind::kDead || f.kind == FindingKind::kUnresponsive ||
                   f.kind == FindingKind::kLagging;
    stuck = stuck || s;
    error = error || !s;
  }
  j.state = stuck ? "stuck" : error ? "error" : "ok";
  j.summary.clear();
  if (j.findings.empty()) {
    j.summary = "every rank answered";
    if (!r.communicators.empty() || !r.groups.empty()) {
      j.summary += "; status and collective counts agree";
    } else {
      j.summary = "no communicator reported";
    }
    return;
  }
  int shown = 0;
  for (const auto& f : j.findings) {
    if (shown == 3) {
      j.summary += "; and " + std::to_string(j.findings.size() - 3) + " more";
      break;
    }
    std::string what;
    switch (f.kind) {
      case FindingKind::kDead: what = "is dead"; break;
      case FindingKind::kUnresponsive: what = "does not answer"; break;
      case FindingKind::kLagging: what = "lags (" + f.detail + ")"; break;
      case FindingKind::kError: what = "reports " + f.detail; break;
      case FindingKind::kStatus: what = "differs (" + f.detail + ")"; break;
    }
    if (f.ranks > 1 && f.kind != FindingKind::kLagging) what = f.detail;
    j.summary += (shown == 0 ? "" : "; ") + Who(f) + " " + what;
    ++shown;
  }
}

}  // namespace

void TallyRanks(Communicator& c) {
  c.dead = 0;
  int named_missing = 0;
  for (const auto& ri : c.ranks) {
    c.dead += ri.state == RankState::kDead ? 1 : 0;
    named_missing += Answered(ri.state) ? 0 : 1;
  }
  int unresponsive = 0;
  for (const auto& ri : c.ranks) unresponsive += ri.state == RankState::kUnresponsive ? 1 : 0;
  // Missing ranks the text counts but does not name: their processes did not answer.
  c.unresponsive = unresponsive + std::max(0, c.missing - named_missing);
}

Judgement Judge(const Report& r) {
  Judgement j;
  std::vector<Finding> dead, silent, lagging, errors, status;
  std::set<std::pair<int, std::string>> named;  // processes named by a rank finding
  for (const auto& c : r.communicators) {
    // The state most answering ranks have: a rank in another one is a status finding.
    std::map<RankState, int> states = c.status_counts;
    if (states.empty()) {
      for (const auto& ri : c.ranks) {
        if (Answered(ri.state) && ri.state != RankState::kUnknown) ++states[ri.state];
      }
    }
    RankState usual = RankState::kRunning;
    int best = 0;
    for (const auto& [s, n] : states) {
      if (n > best) std::tie(usual, best) = std::tie(s, n);
    }
    for (const auto& ri : c.ranks) {
      if (ri.state == RankState::kDead) {
        dead.push_back({FindingKind::kDead, c.hash, ri.ref, 1,
                        "its process is considered dead by the RAS network"});
        named.insert({ri.ref.pid, ri.ref.host});
      } else if (ri.state == RankState::kUnresponsive) {
        silent.push_back({FindingKind::kUnresponsive, c.hash, ri.ref, 1,
                          "its process did not answer"});
        named.insert({ri.ref.pid, ri.ref.host});
      } else if (ri.state == RankState::kNoComm) {
        status.push_back({FindingKind::kStatus, c.hash, ri.ref, 1,
                          "its process answered without this communicator (destroyed it?)"});
      } else if (ri.state != RankState::kUnknown && ri.state != usual) {
        status.push_back({FindingKind::kStatus, c.hash, ri.ref, 1,
                          "status " + std::string(ToString(ri.state)) + ", the others " +
                              std::string(ToString(usual))});
      }
      if (!ri.error.empty()) errors.push_back({FindingKind::kError, c.hash, ri.ref, 1, ri.error});
    }
    // Ranks counted missing but not named (the text names at most 10).
    int named_missing = 0;
    for (const auto& ri : c.ranks) named_missing += Answered(ri.state) ? 0 : 1;
    if (c.missing > named_missing && r.format == "text") {
      silent.push_back({FindingKind::kUnresponsive, c.hash, RankRef{}, c.missing - named_missing,
                        "missing from the report, not named (try --verbose)"});
    }
    Lagging(c, lagging);
  }
  // Processes without a rank finding (the text names processes and ranks separately).
  for (const auto& p : r.dead) {
    if (named.count({p.pid, p.host}) == 0) {
      dead.push_back({FindingKind::kDead, "", RankRef{-1, p.host, p.pid, p.gpus}, 1,
                      "considered dead by the RAS network"});
    }
  }
  for (const auto& p : r.missing) {
    if (named.count({p.pid, p.host}) == 0) {
      silent.push_back({FindingKind::kUnresponsive, "", RankRef{-1, p.host, p.pid, p.gpus}, 1,
                        "did not answer"});
    }
  }
  if (r.dead_processes > static_cast<int>(r.dead.size())) {
    dead.push_back({FindingKind::kDead, "", RankRef{},
                    r.dead_processes - static_cast<int>(r.dead.size()),
                    "processes considered dead, not named (try --verbose)"});
  }
  for (auto* v : {&dead, &silent, &lagging, &errors, &status}) {
    j.findings.insert(j.findings.end(), v->begin(), v->end());
  }
  Finish(r, j);
  return j;
}

Judgement JudgeTwice(const Report& first, const Report& second) {
  Judgement j = Judge(second);
  std::vector<Finding> kept;
  int advanced = 0;
  for (const auto& f : j.findings) {
    if (f.kind == FindingKind::kLagging) {
      const auto before = LowestCount(first, f.comm, OpOf(f));
      const auto now = LowestCount(second, f.comm, OpOf(f));
      if (before && now && *now > *before) {
        ++advanced;
        continue;
      }
    }
    kept.push_back(f);
  }
  j.findings = std::move(kept);
  Finish(second, j);
  if (advanced > 0) {
    j.summary += "; counts that differed advanced between the two queries (a running job)";
  } else if (j.state == "stuck") {
    for (const auto& f : j.findings) {
      if (f.kind == FindingKind::kLagging) {
        j.summary += "; the counts did not move between the two queries";
        break;
      }
    }
  }
  return j;
}

}  // namespace nccl_triage::ras
