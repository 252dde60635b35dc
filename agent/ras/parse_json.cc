// The JSON report (NCCL 2.28.7+, client_support.cc:rasDumpCommsToJSON), read with nlohmann::json.
// Every field is optional to the reader: a field of the wrong type is left unknown, never thrown
// on, so a newer NCCL that adds or renames fields still yields what is there.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ras/report.h"
#include "ras/text_util.h"

namespace nccl_triage::ras {
namespace {

using nlohmann::json;

int IntOr(const json& j, const char* key, int fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int>() : fallback;
}

bool BoolOr(const json& j, const char* key, bool fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string StringOr(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// ncclResult_t as NCCL's RAS text names it (client_support.cc:ncclErrorToString).
std::string ResultText(int code) {
  switch (code) {
    case 1: return "Unhandled CUDA error";
    case 2: return "System error";
    case 3: return "Internal error";
    case 4: return "Invalid argument";
    case 5: return "Invalid usage";
    case 6: return "Remote process error";
    case 8: return "Timeout";
    default: return "error " + std::to_string(code);
  }
}

RankRef RefOf(const json& r) {
  RankRef ref;
  ref.rank = IntOr(r, "rank", -1);
  ref.host = StringOr(r, "host");
  if (ref.host == "unknown") ref.host.clear();
  ref.pid = IntOr(r, "pid", -1);
  const int cuda = IntOr(r, "cuda_dev", -1);
  const int nvml = IntOr(r, "nvml_dev", cuda);
  if (cuda >= 0) {
    ref.gpu = std::to_string(cuda);
    if (nvml != cuda) ref.gpu += " (NVML " + std::to_string(nvml) + ")";
  }
  return ref;
}

// The one known defect: 2.28.7-2.28.9 write `"nvml_dev": N` and then `"status": {` without a
// comma between them in missing_ranks. Inserts a comma where a line ends a value and the next
// line starts a key; true when it changed anything.
bool RepairMissingCommas(std::string& text) {
  std::string out;
  out.reserve(text.size() + 64);
  bool changed = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string_view line(text.data() + start, nl - start);
    out.append(line);
    // The next non-blank line.
    size_t next = nl + 1;
    while (next < text.size() && (text[next] == ' ' || text[next] == '\t')) ++next;
    const std::string_view t = detail::Trim(line);
    const bool ends_value =
        !t.empty() && (t.back() == '"' || t.back() == '}' || t.back() == ']' || t.back() == 'e' ||
                       (t.back() >= '0' && t.back() <= '9')) &&
        t.find(':') != std::string_view::npos;
    if (ends_value && next < text.size() && text[next] == '"') {
      out += ',';
      changed = true;
    }
    if (nl < text.size()) out += '\n';
    start = nl + 1;
  }
  if (changed) text.swap(out);
  return changed;
}

}  // namespace

StatusOr<Report> ParseJsonReport(std::string_view body) {
  Report r;
  r.format = "json";
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    std::string repaired(body);
    if (RepairMissingCommas(repaired)) {
      doc = json::parse(repaired, nullptr, /*allow_exceptions=*/false);
      if (!doc.is_discarded()) {
        r.notes.push_back(
            "the JSON lacked commas between members (NCCL 2.28.7-2.28.9 omit the one after a "
            "missing rank's nvml_dev); repaired");
      }
    }
  }
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgument("not an NCCL RAS JSON report: '" +
                           detail::Printable(body.substr(0, body.find('\n'))) + "'");
  }
  if (!doc.contains("communicators") && !doc.contains("nccl_version")) {
    return InvalidArgument("not an NCCL RAS JSON report: no communicators and no nccl_version");
  }
  r.nccl_version = StringOr(doc, "nccl_version");
  if (const auto ras = doc.find("ras"); ras != doc.end() && ras->is_object()) {
    if (const auto t = ras->find("collection_time_sec"); t != ras->end() && t->is_number()) {
      r.collection_s = t->get<double>();
    }
    r.timeouts = IntOr(*ras, "timeouts_count", 0);
  }
  const auto comms = doc.find("communicators");
  if (comms == doc.end() || !comms->is_array()) return r;
  for (const json& cj : *comms) {
    if (!cj.is_object()) continue;
    Communicator c;
    c.hash = detail::NormalizeHash(StringOr(cj, "hash"));
    c.size = IntOr(cj, "size", -1);
    c.responding = IntOr(cj, "ranks_count", -1);
    c.missing = IntOr(cj, "missing_ranks_count", 0);
    bool error = false;
    bool status_differs = false;
    RankState first_state = RankState::kUnknown;
    std::map<std::string, uint64_t> first_counts;
    bool counts_differ = false;
    if (const auto ranks = cj.find("ranks"); ranks != cj.end() && ranks->is_array()) {
      for (const json& rj : *ranks) {
        if (!rj.is_object()) continue;
        RankInfo ri;
        ri.ref = RefOf(rj);
        const json st = rj.value("status", json::object());
        const int init = IntOr(st, "init_state", 0);
        const int async = IntOr(st, "async_error", 0);
        if (BoolOr(st, "abort_flag", false)) {
          ri.state = RankState::kAbort;
        } else if (BoolOr(st, "finalize_called", false) || BoolOr(st, "destroy_flag", false)) {
          ri.state = RankState::kFinalize;
        } else {
          ri.state = init == 0 ? RankState::kRunning : RankState::kInit;
        }
        // 0: success, 7: in progress; anything else is an error.
        if (init != 0 && init != 7) {
          ri.error = "initialization: " + ResultText(init);
        } else if (async != 0 && async != 7) {
          ri.error = ResultText(async);
        }
        error = error || !ri.error.empty();
        if (const auto cc = rj.find("collective_counts"); cc != rj.end() && cc->is_object()) {
          for (const auto& [op, v] : cc->items()) {
            if (v.is_number_unsigned() || v.is_number_integer()) {
              ri.op_counts[op] = v.get<uint64_t>();
            }
          }
        }
        if (c.ranks.empty()) {
          first_state = ri.state;
          first_counts = ri.op_counts;
        } else {
          status_differs = status_differs || ri.state != first_state;
          counts_differ = counts_differ || ri.op_counts != first_counts;
        }
        c.ranks.push_back(std::move(ri));
      }
    }
    bool incomplete = false;
    bool nocomm = false;
    if (const auto missing = cj.find("missing_ranks"); missing != cj.end() && missing->is_array()) {
      for (const json& mj : *missing) {
        if (!mj.is_object()) continue;
        RankInfo ri;
        ri.ref = RefOf(mj);
        const json st = mj.value("status", json::object());
        if (BoolOr(st, "considered_dead", false)) {
          ri.state = RankState::kDead;
        } else if (BoolOr(st, "unresponsive", true)) {
          ri.state = RankState::kUnresponsive;
        } else {
          ri.state = RankState::kNoComm;
        }
        incomplete = incomplete || ri.state != RankState::kNoComm;
        nocomm = nocomm || ri.state == RankState::kNoComm;
        c.ranks.push_back(std::move(ri));
      }
    }
    // The problem words the text report would print for this communicator.
    if (incomplete) c.problems.emplace_back("INCOMPLETE");
    if (error) c.problems.emplace_back("ERROR");
    if (status_differs || counts_differ || nocomm) c.problems.emplace_back("MISMATCH");
    TallyRanks(c);
    r.communicators.push_back(std::move(c));
  }
  // Processes: the missing ranks' processes, by their state.
  for (const auto& c : r.communicators) {
    for (const auto& ri : c.ranks) {
      if (ri.state != RankState::kDead && ri.state != RankState::kUnresponsive) continue;
      Process p{ri.ref.pid, ri.ref.host, ri.ref.gpu};
      auto& list = ri.state == RankState::kDead ? r.dead : r.missing;
      bool seen = false;
      for (const auto& q : list) seen = seen || (q.pid == p.pid && q.host == p.host);
      if (!seen) list.push_back(p);
    }
  }
  r.dead_processes = static_cast<int>(r.dead.size());
  r.missing_processes = static_cast<int>(r.missing.size());
  return r;
}

}  // namespace nccl_triage::ras
