#include "planner/sweep.h"

#include <algorithm>
#include <random>

#include "base/vectors.h"

namespace nccl_triage {

namespace {

struct NodeAcc {
  int passes = 0;
  int inconclusive = 0;
  std::vector<const PairOutcome*> fails;
  std::set<std::string> partners;
};

// Causes common to every verdict (in the order of the first), or their union when none is common.
std::vector<std::string> CommonCauses(const std::vector<const PairVerdict*>& verdicts) {
  std::vector<std::string> out;
  if (verdicts.empty()) return out;
  for (const auto& c : verdicts.front()->causes) {
    bool everywhere = std::all_of(verdicts.begin(), verdicts.end(), [&](const PairVerdict* v) {
      return std::find(v->causes.begin(), v->causes.end(), c) != v->causes.end();
    });
    if (everywhere) out.push_back(c);
  }
  if (!out.empty()) return out;
  for (const auto* v : verdicts) AppendAbsent(out, v->causes);
  return out;
}

FaultClass CommonClass(const std::vector<const PairVerdict*>& verdicts) {
  // Architecture first: it hides whatever the IB path would show (DESIGN, report class).
  bool ib = false;
  for (const auto* v : verdicts) {
    if (v->fault_class == FaultClass::kArchitecture) return FaultClass::kArchitecture;
    if (v->fault_class == FaultClass::kIbResource) ib = true;
  }
  return ib ? FaultClass::kIbResource : FaultClass::kUnknown;
}

}  // namespace

struct Sweep::Analysis {
  std::map<std::string, NodeAcc> acc;
  std::set<std::string> good;
  std::set<std::string> node_faults;
  std::set<std::string> ambiguous;

  bool Good(const std::string& n) const { return good.count(n) > 0; }
  bool Fault(const std::string& n) const { return node_faults.count(n) > 0; }
};

Sweep::Sweep(SweepSetup setup)
    : setup_(std::move(setup)),
      present_(setup_.nodes.begin(), setup_.nodes.end()),
      rng_state_(setup_.seed) {}

Sweep::Analysis Sweep::Analyse() const {
  Analysis a;
  for (const auto& t : tests_) {
    for (const std::string* n : {&t.pair.a, &t.pair.b}) {
      NodeAcc& acc = a.acc[*n];
      acc.partners.insert(t.pair.Other(*n));
      switch (t.judgement.status) {
        case PairStatus::kPass:
          ++acc.passes;
          break;
        case PairStatus::kFail:
          acc.fails.push_back(&t);
          break;
        case PairStatus::kInconclusive:
          ++acc.inconclusive;
          break;
      }
    }
  }
  for (const auto& [n, acc] : a.acc) {
    if (acc.passes > 0) a.good.insert(n);
  }
  for (const auto& [n, acc] : a.acc) {
    if (acc.passes > 0) continue;
    std::set<std::string> good_partners;
    for (const auto* t : acc.fails) {
      const std::string& p = t->pair.Other(n);
      if (a.Good(p)) good_partners.insert(p);
    }
    if (good_partners.size() >= 2) {
      a.node_faults.insert(n);
    } else if (!acc.fails.empty() || acc.inconclusive > 0) {
      a.ambiguous.insert(n);
    }
  }
  return a;
}

std::vector<NodePair> Sweep::NextRound() {
  planned_.clear();
  if (round_ >= setup_.max_rounds) return {};
  std::vector<NodePair> pairs;
  if (round_ == 0) {
    std::set<std::string> used;
    for (const auto& p : setup_.round1) {
      if (!present_.count(p.a) || !present_.count(p.b) || p.a == p.b) continue;
      if (used.count(p.a) || used.count(p.b)) continue;  // keep the round disjoint
      used.insert(p.a);
      used.insert(p.b);
      pairs.push_back(p);
    }
    if (pairs.empty()) return pairs;  // nothing to probe: the sweep has no round
    round_ = 1;
    planned_.insert(pairs.begin(), pairs.end());
    return pairs;
  }

  Analysis an = Analyse();
  std::set<std::string> busy;
  std::set<NodePair> done;
  for (const auto& t : tests_) done.insert(t.pair);
  auto is_free = [&](const std::string& n) { return present_.count(n) && !busy.count(n); };

  if (round_ == 1) {
    for (const auto& p : setup_.retest) {
      if (done.count(p) || !is_free(p.a) || !is_free(p.b)) continue;
      if (an.ambiguous.count(p.a) || an.ambiguous.count(p.b)) continue;
      busy.insert(p.a);
      busy.insert(p.b);
      pairs.push_back(p);
    }
  }

  // References: nodes that passed, in a seeded random order, scanned from a rotating start so the
  // load of being a reference spreads.
  std::vector<std::string> refs(an.good.begin(), an.good.end());
  std::mt19937_64 rng(rng_state_ + static_cast<uint64_t>(round_));
  std::shuffle(refs.begin(), refs.end(), rng);
  // Fallback references: present nodes not probed at all in this sweep (e.g. the odd one out).
  std::vector<std::string> spare;
  for (const auto& n : present_) {
    if (!an.acc.count(n)) spare.push_back(n);
  }
  // Who needs a partner: the ambiguous, and present nodes not probed at all yet (the odd one out
  // of round 1, a node whose round-1 partner had left).
  std::vector<std::string> need(an.ambiguous.begin(), an.ambiguous.end());
  need.insert(need.end(), spare.begin(), spare.end());
  // And the members of a failed (pair, rail) that nothing explains yet whose rail has passed with
  // no peer: a second peer good on that rail tells their HCA from the other's.
  std::set<std::string> rail_need;
  const std::vector<RailPairOutcome> rail_outcomes = RailOutcomes();
  std::set<std::pair<std::string, int>> rail_good;
  for (const auto& o : rail_outcomes) {
    if (!o.passed) continue;
    rail_good.insert({o.pair.a, o.rail});
    rail_good.insert({o.pair.b, o.rail});
  }
  const RailLocalisation rail_loc = LocaliseRails(rail_outcomes);
  for (const auto& o : rail_loc.inconclusive) {
    for (const std::string* n : {&o.pair.a, &o.pair.b}) {
      if (!rail_good.count({*n, o.rail}) && !an.ambiguous.count(*n) && !an.Fault(*n) &&
          an.acc.count(*n)) {
        rail_need.insert(*n);
      }
    }
  }
  // Nodes that passed the pair's probes but may be bad on a rail (awaiting a second peer) or are
  // (a node rail fault): a reference only when no other is free, or the peer that needs one on
  // that rail fails with it and learns nothing.
  std::set<std::string> rail_suspect = rail_need;
  for (const auto& f : rail_loc.faults) {
    if (f.kind != RailFaultKind::kLinkRail) rail_suspect.insert(f.nodes.begin(), f.nodes.end());
  }
  need.insert(need.end(), rail_need.begin(), rail_need.end());
  size_t cursor = 0;
  for (size_t i = 0; i < need.size(); ++i) {
    const std::string& x = need[i];
    if (!is_free(x)) continue;
    auto free_for_x = [&](const std::string& r) {
      return r != x && is_free(r) && !done.count(NodePair(x, r));
    };
    auto usable = [&](const std::string& r) {
      return free_for_x(r) && (!setup_.incompatible || !setup_.incompatible(x, r));
    };
    std::string pick;
    for (const bool rail_suspects : {false, true}) {
      for (size_t k = 0; k < refs.size() && pick.empty(); ++k) {
        const std::string& r = refs[(cursor + k) % refs.size()];
        if (usable(r) && (rail_suspects || !rail_suspect.count(r))) {
          pick = r;
          cursor = (cursor + k + 1) % refs.size();
        }
      }
    }
    // A node predicted incompatible with every reference (its NCCL version differs from all the
    // others) is still re-paired: failing with two good partners is exactly what localises it.
    for (size_t k = 0; k < refs.size() && pick.empty(); ++k) {
      const std::string& r = refs[(cursor + k) % refs.size()];
      if (free_for_x(r)) {
        pick = r;
        cursor = (cursor + k + 1) % refs.size();
      }
    }
    for (size_t k = 0; k < spare.size() && pick.empty(); ++k) {
      if (usable(spare[k])) pick = spare[k];
    }
    // Last resort: another node that needs a partner and has not met this one yet. Both are
    // suspects, but a pass makes both good, and a failure blames nobody (a node fault needs good
    // partners).
    for (size_t k = i + 1; k < need.size() && pick.empty(); ++k) {
      if (usable(need[k])) pick = need[k];
    }
    if (pick.empty()) continue;
    busy.insert(x);
    busy.insert(pick);
    pairs.emplace_back(x, pick);
  }
  if (pairs.empty()) return {};
  ++round_;
  planned_.insert(pairs.begin(), pairs.end());
  return pairs;
}

void Sweep::Record(const NodePair& pair, const PairJudgement& judgement,
                   std::vector<RailPairOutcome> rails) {
  if (!planned_.erase(pair)) return;
  PairOutcome o;
  o.pair = pair;
  o.round = round_;
  o.judgement = judgement;
  for (auto& r : rails) {
    if (r.pair == pair) o.rails.push_back(std::move(r));
  }
  tests_.push_back(std::move(o));
}

std::vector<RailPairOutcome> Sweep::RailOutcomes() const {
  std::vector<RailPairOutcome> out;
  for (const auto& t : tests_) out.insert(out.end(), t.rails.begin(), t.rails.end());
  return out;
}

void Sweep::RemoveNode(const std::string& node) { present_.erase(node); }

SweepResult Sweep::Result() const {
  Analysis an = Analyse();
  SweepResult r;
  r.rails = LocaliseRails(RailOutcomes());
  // A rail fault of a node makes it a node fault (unless the pair-level probes already did).
  std::map<std::string, std::vector<const RailFault*>> rail_node_faults;
  for (const auto& f : r.rails.faults) {
    if (f.kind == RailFaultKind::kLinkRail) continue;
    const std::string& n = f.nodes.front();
    if (!an.Fault(n)) rail_node_faults[n].push_back(&f);
  }
  for (const auto& [n, faults] : rail_node_faults) an.node_faults.insert(n);
  r.number = setup_.number;
  r.rounds = round_;
  for (const auto& n : setup_.nodes) r.nodes[n];
  for (const auto& [n, acc] : an.acc) {
    NodeOutcome& o = r.nodes[n];
    if (auto rf = rail_node_faults.find(n); rf != rail_node_faults.end()) {
      // A whole-node rail fault comes first (LocaliseRails' order) and says it all.
      const RailFault& first = *rf->second.front();
      o.state = NodeState::kNodeFault;
      o.fault_class = first.fault_class;
      for (const RailFault* f : rf->second) {
        AppendAbsent(o.causes, f->causes);
        if (first.kind == RailFaultKind::kNode && f != &first) continue;
        o.reason += (o.reason.empty() ? "" : "; ") + f->reason;
      }
      r.tested_nodes.insert(n);
    } else if (an.Good(n)) {
      o.state = NodeState::kGood;
      o.fault_class = FaultClass::kHealthy;
      o.reason = "passed with " + std::to_string(acc.passes) + " partner(s)";
      r.tested_nodes.insert(n);
    } else if (an.Fault(n)) {
      std::vector<const PairVerdict*> verdicts;
      std::vector<std::string> partners;
      for (const auto* t : acc.fails) {
        const std::string& p = t->pair.Other(n);
        if (!an.Good(p)) continue;
        verdicts.push_back(&t->judgement.verdict);
        partners.push_back(p);
      }
      o.state = NodeState::kNodeFault;
      o.fault_class = CommonClass(verdicts);
      o.causes = CommonCauses(verdicts);
      std::sort(partners.begin(), partners.end());
      partners.erase(std::unique(partners.begin(), partners.end()), partners.end());
      o.reason = "fails with " + std::to_string(partners.size()) + " known-good partners (" +
                 partners[0] + ", " + partners[1] + (partners.size() > 2 ? ", ..." : "") +
                 ") and passes with none";
      r.tested_nodes.insert(n);
    } else if (an.ambiguous.count(n)) {
      o.state = NodeState::kInconclusive;
      o.fault_class = FaultClass::kUnknown;
      o.reason = acc.fails.empty() ? "every probe of this node was inconclusive"
                                   : "failed, but not with two known-good partners";
    }
  }
  for (const auto& t : tests_) {
    PairOutcome o = t;
    switch (t.judgement.status) {
      case PairStatus::kPass:
        o.localisation = PairLocalisation::kNone;
        r.tested_pairs.insert(t.pair);
        break;
      case PairStatus::kFail:
        if (an.Fault(t.pair.a) || an.Fault(t.pair.b)) {
          o.localisation = PairLocalisation::kNode;
          r.tested_pairs.insert(t.pair);
        } else if (an.Good(t.pair.a) && an.Good(t.pair.b)) {
          o.localisation = PairLocalisation::kLink;
          r.tested_pairs.insert(t.pair);
        } else {
          o.localisation = PairLocalisation::kInconclusive;
        }
        break;
      case PairStatus::kInconclusive:
        o.localisation = PairLocalisation::kInconclusive;
        break;
    }
    r.pairs.push_back(std::move(o));
  }
  for (const auto& n : an.node_faults) {
    const NodeOutcome& o = r.nodes[n];
    r.faults.push_back({FaultKind::kNode, {n}, o.fault_class, o.causes, o.reason});
  }
  std::vector<LocalisedFault> links;
  for (const auto& p : r.pairs) {
    if (p.localisation != PairLocalisation::kLink) continue;
    const PairVerdict& v = p.judgement.verdict;
    links.push_back({FaultKind::kLink,
                     {p.pair.a, p.pair.b},
                     v.fault_class,
                     v.causes,
                     "fails only together: " + p.pair.a + " and " + p.pair.b +
                         " both pass with other partners (" + v.reason + ")"});
  }
  // A link-rail fault between two nodes that no pair-level fault explains: the pair on that rail.
  for (const auto& f : r.rails.faults) {
    if (f.kind != RailFaultKind::kLinkRail) continue;
    if (an.Fault(f.nodes[0]) || an.Fault(f.nodes[1])) continue;
    links.push_back({FaultKind::kLink, f.nodes, f.fault_class, f.causes, f.reason});
    const NodePair pair(f.nodes[0], f.nodes[1]);
    r.tested_pairs.insert(pair);
    for (auto& p : r.pairs) {
      if (p.pair == pair && p.localisation != PairLocalisation::kLink) {
        p.localisation = PairLocalisation::kLink;
      }
    }
  }
  std::sort(links.begin(), links.end(),
            [](const auto& x, const auto& y) { return x.nodes < y.nodes; });
  links.erase(std::unique(links.begin(), links.end(),
                          [](const auto& x, const auto& y) { return x.nodes == y.nodes; }),
              links.end());
  r.faults.insert(r.faults.end(), links.begin(), links.end());
  return r;
}

}  // namespace nccl_triage
