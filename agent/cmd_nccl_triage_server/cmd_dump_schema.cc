// `nccl-triage-server dump-schema`: the facts the code declares once, as one JSON document
// (nccl-triage/schema/v1) — every configuration key (config/config_keys.cc), every metric family
// of the agent (exporter/metrics.cc) and the coordinator (coordinator/coordinator_metrics.cc), and
// every catalogue row (core/catalogue.h). `make generate` writes the documentation's tables, the
// chart's values.schema.json config part and values.yaml's config comments from it
// (tools/gen-docs); the test docs.generated fails when they differ from what is committed.
//
// It lives in the server executable because the metric tables do: the small `nccl-triage` links
// no prometheus-cpp.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "base/flags.h"
#include "cmd_nccl_triage_server/server_cli.h"
#include "config/config_loader.h"
#include "coordinator/coordinator_metrics.h"
#include "core/catalogue.h"
#include "exporter/metrics.h"

namespace nccl_triage {
namespace {

using Json = nlohmann::ordered_json;

// A bound as JSON: an integer when it is one (most are), else a number.
Json Number(double v) {
  const bool integral = std::trunc(v) == v && std::fabs(v) < 9e15;
  return integral ? Json(static_cast<int64_t>(v)) : Json(v);
}

Json ConfigKeysJson() {
  ConfigSchemaContext context;  // agent.metrics_disabled takes the agent's families
  for (const MetricSpec& m : AgentMetricSpecs()) context.agent_metric_names.push_back(m.name);
  Json keys = Json::array();
  for (const ConfigKeySchema& k : ConfigKeySchemas(context)) {
    Json key = {{"name", k.info.key},
                {"type", k.info.type},
                {"kind", k.kind},
                {"optional", k.optional},
                {"default", Json::parse(k.default_json)}};
    if (k.min) key["minimum"] = Number(*k.min);
    if (k.max) key["maximum"] = Number(*k.max);
    if (!k.pattern.empty()) key["pattern"] = k.pattern;
    key["description"] = k.info.meaning;
    // Built by the key's kind (config/config_kinds.h); values.schema.json takes it verbatim.
    key["json_schema"] = Json::parse(k.json_schema);
    keys.push_back(std::move(key));
  }
  return keys;
}

Json Labels(std::string_view list) {
  Json labels = Json::array();
  while (!list.empty()) {
    const size_t comma = list.find(',');
    labels.push_back(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return labels;
}

void AddMetrics(Json& out, std::string_view component, std::span<const MetricSpec> specs) {
  for (const MetricSpec& s : specs) {
    out.push_back({{"name", s.name},
                   {"component", component},
                   {"type", s.type},
                   {"labels", Labels(s.labels)},
                   {"help", s.help},
                   {"doc", s.doc.empty() ? s.help : s.doc}});
  }
}

Json Traits(const CauseInfo& e) {
  static constexpr std::pair<CauseTrait, std::string_view> kNames[] = {
      {kRunsInContainers, "runs_in_containers"}, {kExplainsSlowIb, "explains_slow_ib"},
      {kMarksDegraded, "marks_degraded"},        {kConsequenceOnly, "consequence_only"},
      {kFromProbeResult, "from_probe_result"},
  };
  Json traits = Json::array();
  for (const auto& [trait, name] : kNames) {
    if (e.Has(trait)) traits.push_back(name);
  }
  return traits;
}

Json CatalogueJson() {
  Json rows = Json::array();
  for (const CauseInfo& e : Catalogue()) {
    Json row = {{"id", e.id},
                {"class", ToString(e.fault_class)},
                {"kind", ToString(e.kind)},
                {"traits", Traits(e)},
                {"title", e.title},
                {"why", e.why},
                {"remedy", e.remedy}};
    if (!e.looks_at.empty()) row["looks_at"] = e.looks_at;
    if (!e.verdict.empty()) row["verdict"] = e.verdict;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

int RunDumpSchemaCommand(CliContext& ctx) {
  bool help = false;
  if (Status parsed = FlagParser().Switch({"--help", "-h"}, &help).Parse(ctx.args); !parsed.ok()) {
    ctx.err << "nccl-triage-server dump-schema: " << parsed.message() << "\n";
    return 2;
  }
  if (help) {
    ctx.out << "usage: nccl-triage-server dump-schema\n\n"
               "Prints every configuration key, metric family (agent and coordinator) and\n"
               "catalogue row as one JSON document (nccl-triage/schema/v1); `make generate`\n"
               "writes the documentation's tables from it.\n";
    return 0;
  }
  Json metrics = Json::array();
  AddMetrics(metrics, "agent", AgentMetricSpecs());
  AddMetrics(metrics, "coordinator", CoordinatorMetricSpecs());
  const Json doc = {{"schema", "nccl-triage/schema/v1"},
                    {"config", ConfigKeysJson()},
                    {"metrics", std::move(metrics)},
                    {"catalogue", CatalogueJson()}};
  ctx.out << doc.dump(2) << "\n";
  return 0;
}

}  // namespace nccl_triage
