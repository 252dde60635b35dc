#include "coordinator/state_store.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/log.h"

namespace nccl_triage {
namespace {

using nlohmann::json;

constexpr std::string_view kLogComponent = "state";
constexpr const char* kFormat = "1";

json FaultJson(const TrackedFault& t) {
  const LocalisedFault& f = t.fault;
  std::vector<std::string> causes(
      f.causes.begin(), f.causes.begin() + std::min(f.causes.size(), kMaxStateCauses));
  return {{"kind", std::string(ToString(f.kind))},
          {"nodes", f.nodes},
          {"class", std::string(ToString(f.fault_class))},
          {"causes", causes},
          {"reason", f.reason.substr(0, kMaxStateReason)},
          {"seen", t.seen},
          {"unseen", t.unseen},
          {"confirmed", t.confirmed}};
}

bool FaultFromJson(const json& j, TrackedFault* out) {
  if (!j.is_object()) return false;
  const std::string kind = j.value("kind", "");
  LocalisedFault& f = out->fault;
  if (kind == ToString(FaultKind::kNode)) {
    f.kind = FaultKind::kNode;
  } else if (kind == ToString(FaultKind::kLink)) {
    f.kind = FaultKind::kLink;
  } else {
    return false;
  }
  const json nodes = j.value("nodes", json::array());
  if (!nodes.is_array()) return false;
  for (const json& n : nodes) {
    if (!n.is_string() || n.get<std::string>().empty()) return false;
    f.nodes.push_back(n.get<std::string>());
  }
  if (f.nodes.size() != (f.kind == FaultKind::kNode ? 1u : 2u)) return false;
  const auto fault_class = FromString<FaultClass>(j.value("class", ""));
  if (!fault_class) return false;
  f.fault_class = *fault_class;
  const json causes = j.value("causes", json::array());
  if (causes.is_array()) {
    for (const json& c : causes) {
      if (c.is_string() && f.causes.size() < kMaxStateCauses) f.causes.push_back(c);
    }
  }
  const json reason = j.value("reason", json());
  if (reason.is_string()) f.reason = reason.get<std::string>().substr(0, kMaxStateReason);
  const json seen = j.value("seen", json());
  const json unseen = j.value("unseen", json());
  const json confirmed = j.value("confirmed", json());
  if (!seen.is_number_integer() || !unseen.is_number_integer() || !confirmed.is_boolean()) {
    return false;
  }
  out->seen = seen.get<int>();
  out->unseen = unseen.get<int>();
  out->confirmed = confirmed.get<bool>();
  return true;
}

std::map<std::string, std::string> Data(const json& object) {
  std::map<std::string, std::string> out;
  const json data = object.value("data", json::object());
  if (!data.is_object()) return out;
  for (const auto& [k, v] : data.items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

std::string ResourceVersion(const json& object) {
  const json meta = object.value("metadata", json::object());
  const json rv = meta.is_object() ? meta.value("resourceVersion", json()) : json();
  return rv.is_string() ? rv.get<std::string>() : std::string();
}

}  // namespace

std::map<std::string, std::string> EncodeCoordinatorState(const CoordinatorState& state) {
  // The bound keeps what matters most: confirmed faults, then those seen most often.
  std::vector<const TrackedFault*> order;
  for (const TrackedFault& t : state.faults) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const TrackedFault* a, const TrackedFault* b) {
    if (a->confirmed != b->confirmed) return a->confirmed;
    return a->seen > b->seen;
  });
  if (order.size() > kMaxStateFaults) order.resize(kMaxStateFaults);
  json faults = json::array();
  for (const TrackedFault* t : order) faults.push_back(FaultJson(*t));

  const RemediatorMemory& m = state.remediation;
  json healthy = json::object();
  for (const auto& [node, since] : m.healthy_since_unix_ms) healthy[node] = since;
  json announced = json::object();
  for (const auto& [node, value] : m.announced) {
    if (announced.size() >= kMaxStateFaults) break;
    announced[node] = value;
  }
  json released = json::array();
  for (const std::string& node : m.operator_released) {
    if (released.size() >= kMaxStateFaults) break;
    released.push_back(node);
  }
  const json remediation = {{"healthy_since_unix_ms", healthy},
                            {"announced", announced},
                            {"operator_released", released},
                            {"breaker_open", m.breaker_open}};
  std::map<std::string, std::string> out = {
      {"format", kFormat}, {"faults", faults.dump()}, {"remediation", remediation.dump()}};
  // Only with validation.new_nodes on: an object without it reads as "nothing remembered yet".
  if (const ValidatorMemory& v = state.validation; v.initialised) {
    json boot_ids = json::object();
    for (const auto& [node, id] : v.boot_ids) {
      if (boot_ids.size() >= kMaxValidatorBootIds) break;
      boot_ids[node] = id.substr(0, kBootIdKept);
    }
    json pending = json::object();
    for (const auto& [node, p] : v.pending) {
      pending[node] = {{"reason", p.reason.substr(0, kMaxStateReason)},
                       {"since_unix_ms", p.since_unix_ms},
                       {"socket", p.socket},
                       {"ib", p.ib},
                       {"tainted", p.tainted}};
    }
    out["validation"] = json({{"boot_ids", boot_ids}, {"pending", pending}}).dump();
  }
  return out;
}

namespace {

void DecodeValidation(const std::string& text, ValidatorMemory* m) {
  const json v = json::parse(text, nullptr, false);
  if (!v.is_object()) return;
  m->initialised = true;
  if (const json b = v.value("boot_ids", json()); b.is_object()) {
    for (const auto& [node, id] : b.items()) {
      if (m->boot_ids.size() >= kMaxValidatorBootIds) break;
      if (id.is_string()) m->boot_ids[node] = id.get<std::string>().substr(0, kBootIdKept);
    }
  }
  if (const json p = v.value("pending", json()); p.is_object()) {
    for (const auto& [node, j] : p.items()) {
      if (!j.is_object() || !j.value("since_unix_ms", json()).is_number_integer()) continue;
      PendingValidation pv;
      const json reason = j.value("reason", json());
      pv.reason = reason.is_string() ? reason.get<std::string>().substr(0, kMaxStateReason)
                                     : "unknown";
      pv.since_unix_ms = j["since_unix_ms"].get<int64_t>();
      pv.socket = j.value("socket", json()).is_boolean() && j["socket"].get<bool>();
      pv.ib = j.value("ib", json()).is_boolean() && j["ib"].get<bool>();
      pv.tainted = j.value("tainted", json()).is_boolean() && j["tainted"].get<bool>();
      m->pending[node] = pv;
    }
  }
}

}  // namespace

CoordinatorState DecodeCoordinatorState(const std::map<std::string, std::string>& data) {
  CoordinatorState out;
  auto text = [&](const char* key) {
    auto it = data.find(key);
    return it == data.end() ? std::string() : it->second;
  };
  const json faults = json::parse(text("faults"), nullptr, false);
  if (faults.is_array()) {
    for (const json& j : faults) {
      if (out.faults.size() >= kMaxStateFaults) break;
      TrackedFault t;
      if (FaultFromJson(j, &t)) out.faults.push_back(std::move(t));
    }
  }
  if (data.count("validation")) DecodeValidation(text("validation"), &out.validation);
  const json r = json::parse(text("remediation"), nullptr, false);
  if (!r.is_object()) return out;
  RemediatorMemory& m = out.remediation;
  if (const json h = r.value("healthy_since_unix_ms", json()); h.is_object()) {
    for (const auto& [node, since] : h.items()) {
      if (since.is_number_integer()) m.healthy_since_unix_ms[node] = since.get<int64_t>();
    }
  }
  if (const json a = r.value("announced", json()); a.is_object()) {
    for (const auto& [node, value] : a.items()) {
      if (value.is_string()) m.announced[node] = value.get<std::string>();
    }
  }
  if (const json o = r.value("operator_released", json()); o.is_array()) {
    for (const json& node : o) {
      if (node.is_string()) m.operator_released.insert(node.get<std::string>());
    }
  }
  if (const json b = r.value("breaker_open", json()); b.is_boolean()) m.breaker_open = b;
  return out;
}

StateStore::StateStore(KubeClient& kube, std::string ns, std::string name, Logger& log)
    : kube_(kube), ns_(std::move(ns)), name_(std::move(name)), log_(log) {}

void StateStore::Failing(const std::string& why) {
  if (!failing_) {
    log_.Warn(kLogComponent, "configmap " + ns_ + "/" + name_ + ": " + why +
                                 " (retried next sweep)");
  }
  failing_ = true;
}

bool StateStore::Load(CoordinatorState* out) {
  ++calls_;
  KubeResponse r = kube_.GetConfigMap(ns_, name_);
  if (r.status == 404) {
    resource_version_.clear();
    last_.clear();
    *out = CoordinatorState{};
    loaded_ = true;
    failing_ = false;
    log_.Info(kLogComponent, "configmap " + ns_ + "/" + name_ + " not found: nothing to resume");
    return true;
  }
  const json object = r.ok() ? json::parse(r.body, nullptr, false) : json();
  if (!r.ok() || !object.is_object()) {
    Failing("read: " + (r.ok() ? std::string("not a ConfigMap") : r.Describe()));
    return false;
  }
  resource_version_ = ResourceVersion(object);
  last_ = Data(object);
  *out = DecodeCoordinatorState(last_);
  loaded_ = true;
  if (failing_) log_.Info(kLogComponent, "configmap " + ns_ + "/" + name_ + " reads again");
  failing_ = false;
  return true;
}

bool StateStore::Put(const std::map<std::string, std::string>& data) {
  ++calls_;
  KubeResponse r = kube_.PutConfigMap(ns_, name_, data, resource_version_);
  if (r.status == 409 || (r.status == 404 && !resource_version_.empty())) {
    // Written or deleted by someone else since our read: read its version and write once more.
    ++calls_;
    KubeResponse now = kube_.GetConfigMap(ns_, name_);
    const json object = now.ok() ? json::parse(now.body, nullptr, false) : json();
    if (now.status == 404) {
      resource_version_.clear();
    } else if (object.is_object()) {
      resource_version_ = ResourceVersion(object);
    } else {
      Failing("write: " + r.Describe());
      return false;
    }
    ++calls_;
    r = kube_.PutConfigMap(ns_, name_, data, resource_version_);
  }
  const json object = r.ok() ? json::parse(r.body, nullptr, false) : json();
  if (!r.ok() || !object.is_object()) {
    Failing("write: " + (r.ok() ? std::string("not a ConfigMap") : r.Describe()));
    return false;
  }
  resource_version_ = ResourceVersion(object);
  last_ = data;
  if (failing_) log_.Info(kLogComponent, "configmap " + ns_ + "/" + name_ + " writes again");
  failing_ = false;
  return true;
}

bool StateStore::Save(const CoordinatorState& state) {
  if (!loaded_) return false;  // what is kept was never read: writing now could erase it
  const std::map<std::string, std::string> data = EncodeCoordinatorState(state);
  if (data == last_) return true;
  return Put(data);
}

}  // namespace nccl_triage
