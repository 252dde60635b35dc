#include "config/config_loader.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "json_schema_check.h"

namespace nccl_triage {
namespace {

Config Load(std::string_view yaml) {
  auto c = LoadConfigFromString(yaml);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? *c : Config{};
}

std::string ErrorOf(std::string_view yaml) {
  auto c = LoadConfigFromString(yaml);
  EXPECT_FALSE(c.ok()) << "accepted:\n" << yaml;
  return c.ok() ? std::string() : c.status().message();
}

TEST(ConfigLoader, EmptyInputGivesTheDefaults) {
  EXPECT_EQ(Load(""), Config{});
  EXPECT_EQ(Load("# only a comment\n"), Config{});
  EXPECT_EQ(Load("expect:\nchecks:\n"), Config{});
}

TEST(ConfigLoader, LoadsEveryKindOfValue) {
  Config c = Load(R"(
expect:
  hcas: 8
  rate_gbps: 200
  pkey: 0x8001
  memlock_min_bytes: 64Gi
  nofile_min: 1048576
  shm_min_bytes: 2147483648
  socket_ifname: "^lo,docker"
  ib_gid_index: 3
  gpu_driver_min: 550.54
  port_error_rate_per_hour: 2.5
checks:
  disabled: [ib.peermem, security.lsm]
  mr_register_bytes: 16Mi
probe:
  nccl_library_paths:
    - /opt/nccl/lib/libnccl.so.2
  iterations: 20
  busbw_min_fraction: 0.75
  allow_when_gpus_busy: true
agent:
  listen: "[::]:9600"
  coordinator: coordinator.nccl-triage:9501
  node_condition: True
coordinator:
  topology_label: topology.kubernetes.io/rack
  hold_down: 3
)");
  EXPECT_EQ(c.expect.hcas, 8);
  EXPECT_EQ(c.expect.rate_gbps, 200.0);
  EXPECT_EQ(c.expect.pkey, 0x0001);  // the membership bit is not part of the key
  EXPECT_EQ(c.expect.memlock_min_bytes, 64ull << 30);
  EXPECT_EQ(c.expect.nofile_min, 1048576u);
  EXPECT_EQ(c.expect.shm_min_bytes, 2ull << 30);
  EXPECT_EQ(c.expect.socket_ifname, "^lo,docker");
  EXPECT_EQ(c.expect.ib_gid_index, 3);
  EXPECT_EQ(c.expect.gpu_driver_min, "550.54");
  EXPECT_EQ(c.expect.port_error_rate_per_hour, 2.5);
  EXPECT_EQ(c.checks.disabled, (std::vector<std::string>{"ib.peermem", "security.lsm"}));
  EXPECT_EQ(c.checks.mr_register_bytes, 16ull << 20);
  EXPECT_EQ(c.probe.nccl_library_paths, (std::vector<std::string>{"/opt/nccl/lib/libnccl.so.2"}));
  EXPECT_EQ(c.probe.iterations, 20);
  EXPECT_EQ(c.probe.busbw_min_fraction, 0.75);
  EXPECT_TRUE(c.probe.allow_when_gpus_busy);
  EXPECT_EQ(c.agent.listen, "[::]:9600");
  EXPECT_EQ(c.agent.coordinator, "coordinator.nccl-triage:9501");
  EXPECT_TRUE(c.agent.node_condition);
  EXPECT_EQ(c.coordinator.topology_label, "topology.kubernetes.io/rack");
  EXPECT_EQ(c.coordinator.hold_down, 3);
  // Untouched keys keep their defaults.
  EXPECT_EQ(c.probe.timeout_seconds, ProbeConfig{}.timeout_seconds);
}

TEST(ConfigLoader, RejectsAnUnknownKeyWithItsLineAndASuggestion) {
  EXPECT_EQ(ErrorOf("expect:\n  hcas: 8\n  rates_gbps: 200\n"),
            "config:3: unknown key 'expect.rates_gbps' (did you mean 'expect.rate_gbps'?)");
  EXPECT_EQ(ErrorOf("\n\nexporter:\n  port: 1\n"), "config:3: unknown key 'exporter'");
}

TEST(ConfigLoader, NamesTheFileInErrors) {
  auto c = LoadConfigFromString("agent:\n  intervall_seconds: 5\n", "/etc/nccl-triage/config.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().rfind("/etc/nccl-triage/config.yaml:2: unknown key", 0), 0u);
}

TEST(ConfigLoader, ProbeRailsTakesAllACountOrAListAndRejectsTheRest) {
  EXPECT_EQ(Load("probe:\n  rails: all\n").probe.rails, "all");
  EXPECT_EQ(Load("probe:\n  rails: 2\n").probe.rails, "2");
  EXPECT_EQ(Load("probe:\n  rails: mlx5_3,mlx5_5\n").probe.rails, "mlx5_3,mlx5_5");
  EXPECT_EQ(Load("").probe.rails, std::nullopt);
  EXPECT_NE(ErrorOf("probe:\n  rails: 0\n").find("config:2: probe.rails: expected all"),
            std::string::npos);
  EXPECT_NE(ErrorOf("probe:\n  rails: [1, 2]\n").find("probe.rails"), std::string::npos);
}

TEST(ConfigLoader, ServerAuthIsKubernetesOrNone) {
  EXPECT_EQ(Config{}.server.auth, "none");
  auto c = LoadConfigFromString("server:\n  auth: kubernetes\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->server.auth, "kubernetes");
  EXPECT_EQ(LoadConfigFromString(DumpConfig(*c))->server.auth, "kubernetes");
  EXPECT_EQ(ErrorOf("server:\n  auth: rbac\n"),
            "config:2: server.auth: expected kubernetes or none, got 'rbac'");
  EXPECT_EQ(ErrorOf("server:\n  auth: [kubernetes]\n"),
            "config:2: server.auth: expected kubernetes or none, got a list");
}

TEST(ConfigLoader, RemediationModeIsOneOfFourAndOffByDefault) {
  EXPECT_EQ(Load("").remediation.mode, RemediationMode::kOff);
  EXPECT_EQ(Load("remediation:\n  mode: dry-run\n").remediation.mode, RemediationMode::kDryRun);
  EXPECT_EQ(Load("remediation:\n  mode: \"taint\"\n").remediation.mode, RemediationMode::kTaint);
  EXPECT_EQ(Load("remediation:\n  mode: cordon\n").remediation.mode, RemediationMode::kCordon);
  EXPECT_EQ(Load("remediation:\n  mode: off\n").remediation.mode, RemediationMode::kOff);
  EXPECT_NE(ErrorOf("remediation:\n  mode: drain\n")
                .find("config:2: remediation.mode: expected off, dry-run, taint or cordon, got "
                      "'drain'"),
            std::string::npos)
      << ErrorOf("remediation:\n  mode: drain\n");
  EXPECT_NE(ErrorOf("remediation:\n  max_percent: 101\n").find("remediation.max_percent"),
            std::string::npos);
  EXPECT_NE(ErrorOf("remediation:\n  max_nodes: -1\n").find("remediation.max_nodes"),
            std::string::npos);
}

TEST(ConfigLoader, RejectsWrongTypesWithTheExpectedType) {
  EXPECT_EQ(ErrorOf("expect:\n  nofile_min: lots\n"),
            "config:2: expect.nofile_min: expected a non-negative integer, got 'lots'");
  EXPECT_EQ(ErrorOf("expect:\n  nofile_min: \"65536\"\n"),
            "config:2: expect.nofile_min: expected a non-negative integer, got '65536'");
  EXPECT_EQ(ErrorOf("expect:\n  nofile_min: -1\n"),
            "config:2: expect.nofile_min: expected a non-negative integer, got '-1'");
  EXPECT_EQ(ErrorOf("agent:\n  events: yes\n"),
            "config:2: agent.events: expected true or false, got 'yes'");
  EXPECT_EQ(ErrorOf("expect:\n  rate_gbps: fast\n"),
            "config:2: expect.rate_gbps: expected a number, got 'fast'");
  // No port is faster than 3,200 Gb/s: an expectation above that would fail every healthy port.
  EXPECT_EQ(ErrorOf("expect:\n  rate_gbps: 1e308\n"),
            "config:2: expect.rate_gbps: 1e308 is out of range [0, 3200]");
  EXPECT_EQ(ErrorOf("probe:\n  iterations: 2.5\n"),
            "config:2: probe.iterations: expected an integer, got '2.5'");
  EXPECT_EQ(ErrorOf("checks:\n  disabled: ib.peermem\n"),
            "config:2: checks.disabled: expected a list of strings, got 'ib.peermem'");
  EXPECT_EQ(ErrorOf("expect:\n  socket_ifname: [eth0]\n"),
            "config:2: expect.socket_ifname: expected a string, got a list");
  EXPECT_EQ(ErrorOf("expect: 3\n"), "config:1: 'expect' is a section: expected a mapping");
  EXPECT_EQ(ErrorOf("- a\n- b\n"), "config:1: expected a mapping of sections at the top level");
  EXPECT_NE(ErrorOf("agent:\n  listen: 9500\n").find("expected host:port"), std::string::npos);
  EXPECT_NE(ErrorOf("expect:\n  gpu_driver_min: r535\n").find("expected a version"),
            std::string::npos);
  EXPECT_NE(ErrorOf("expect:\n  pkey: 0x18001\n").find("expected a PKey"), std::string::npos);
  EXPECT_NE(ErrorOf("expect:\n  shm_min_bytes: 1.5Gi\n").find("expected a size in bytes"),
            std::string::npos);
  EXPECT_NE(ErrorOf("agent:\n  interval_seconds: 99999999999\n").find("agent.interval_seconds"),
            std::string::npos);
}

TEST(ConfigLoader, AcceptsAPkeyQuotedAsIbstatPrintsIt) {
  EXPECT_EQ(Load("expect:\n  pkey: \"0x8001\"\n").expect.pkey, 0x0001);
  EXPECT_EQ(Load("expect:\n  pkey: '0x7fff'\n").expect.pkey, 0x7fff);
  EXPECT_EQ(Load("pools:\n  - name: a\n    selector: {x: y}\n    expect: {pkey: \"0x8002\"}\n")
                .pools.at(0)
                .expect.pkey,
            0x0002);
  // Quoted, only the hex form: a quoted decimal or word is still a string.
  EXPECT_NE(ErrorOf("expect:\n  pkey: \"32769\"\n").find("expected a PKey"), std::string::npos);
  EXPECT_NE(ErrorOf("expect:\n  pkey: \"0x18001\"\n").find("expected a PKey"),
            std::string::npos);
}

TEST(ConfigLoader, RejectsValuesOutOfRange) {
  EXPECT_EQ(ErrorOf("probe:\n  busbw_min_fraction: 1.5\n"),
            "config:2: probe.busbw_min_fraction: 1.5 is out of range [0, 1]");
  EXPECT_NE(ErrorOf("agent:\n  interval_seconds: 0\n").find("out of range"), std::string::npos);
  EXPECT_NE(ErrorOf("expect:\n  port_error_rate_per_hour: .nan\n").find("expected a number"),
            std::string::npos);
}

TEST(ConfigLoader, RejectsUnknownCheckIdsInDisabled) {
  EXPECT_EQ(ErrorOf("checks:\n  disabled:\n    - ib.peermem\n    - ib.peer_mem\n"),
            "config:4: checks.disabled: 'ib.peer_mem' is not a check id (see nccl-triage check "
            "output)");
}

// The allow-list hands variables of the agent's own environment to the probe
// child; only NCCL settings may go, never the agent's credentials or a loader hook.
TEST(ConfigLoader, EnvAllowlistTakesOnlyNcclNames) {
  EXPECT_EQ(ErrorOf("probe:\n  env_allowlist: [NCCL_IB_TIMEOUT, AWS_SECRET_ACCESS_KEY]\n"),
            "config:2: probe.env_allowlist: 'AWS_SECRET_ACCESS_KEY' is not an NCCL_* variable "
            "name (only NCCL_ followed by upper-case letters, digits and '_' reach the probe)");
  for (const char* bad : {"LD_PRELOAD", "NCCL_", "nccl_debug", "NCCL_DEBUG=INFO", "XNCCL_X"}) {
    EXPECT_NE(ErrorOf(std::string("probe:\n  env_allowlist: [\"") + bad + "\"]\n")
                  .find("is not an NCCL_* variable name"),
              std::string::npos)
        << bad;
  }
  auto c = LoadConfigFromString("probe:\n  env_allowlist: [NCCL_IB_TIMEOUT, NCCL_P2P_LEVEL]\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->probe.env_allowlist,
            (std::vector<std::string>{"NCCL_IB_TIMEOUT", "NCCL_P2P_LEVEL"}));
}

// validation.node_selector is a nodeSelector, as the chart's agent.nodeSelector is written.
TEST(ConfigLoader, ValidationNodeSelectorTakesNodeLabels) {
  EXPECT_TRUE(Load("").validation.node_selector.empty());
  EXPECT_TRUE(Load("validation:\n  node_selector:\n").validation.node_selector.empty());
  EXPECT_TRUE(Load("validation:\n  node_selector: {}\n").validation.node_selector.empty());
  EXPECT_EQ(Load("validation:\n  node_selector:\n    nvidia.com/gpu.present: \"true\"\n"
                 "    node-role: gpu\n")
                .validation.node_selector,
            (std::map<std::string, std::string>{{"nvidia.com/gpu.present", "true"},
                                                {"node-role", "gpu"}}));
  EXPECT_EQ(ErrorOf("validation:\n  node_selector: [nvidia.com/gpu.present]\n"),
            "config:2: validation.node_selector: expected a mapping of node labels to values, "
            "got a list");
  EXPECT_EQ(ErrorOf("validation:\n  node_selector:\n    \"gpu present\": \"true\"\n"),
            "config:3: validation.node_selector: 'gpu present' is not a node label key");
  EXPECT_EQ(ErrorOf("validation:\n  node_selector:\n    a/b/c: x\n"),
            "config:3: validation.node_selector: 'a/b/c' is not a node label key");
  EXPECT_EQ(ErrorOf("validation:\n  node_selector:\n    gpu: {a: b}\n"),
            "config:3: validation.node_selector.gpu: expected a label value (at most 63 letters, "
            "digits, '-', '_' or '.', alphanumeric at both ends)");
  EXPECT_NE(ErrorOf("validation:\n  node_selector:\n    gpu: \"a b\"\n").find("label value"),
            std::string::npos);
  EXPECT_NE(ErrorOf("validation:\n  node_selector:\n    gpu: a\n    gpu: b\n").find("duplicate"),
            std::string::npos);
}

TEST(ConfigLoader, RejectsDuplicateKeysAndSeveralDocuments) {
  EXPECT_EQ(ErrorOf("expect:\n  hcas: 8\n  hcas: 4\n"), "config:3: duplicate key 'expect.hcas'");
  EXPECT_EQ(ErrorOf("expect:\n  hcas: 8\n---\nexpect:\n  hcas: 4\n"),
            "config:4: more than one YAML document");
}

TEST(ConfigLoader, ReportsSyntaxErrorsWithTheirLine) {
  std::string e = ErrorOf("expect:\n  hcas: 8\n rate_gbps: [200\n");
  EXPECT_EQ(e.rfind("config:", 0), 0u);
  EXPECT_NE(e.find("invalid YAML"), std::string::npos);
}

TEST(ConfigLoader, RejectsACommaThatStartsAValueInsteadOfHanging) {
  // yaml-cpp 0.7 loops forever on these; the loader must answer.
  for (const char* text :
       {",", ",{", " ,[", "---\n,", "--- ,", "- ,", "&a ,", "!t ,", "expect:\n  hcas: 8\n,",
        "a: 1\n...\n,", "&a,", "!t,", "\"a\",", "'a',", "{a},", "[a] ,"}) {
    EXPECT_NE(ErrorOf(text).find("',' cannot start a value"), std::string::npos) << text;
  }
  // Commas inside scalars, flow lists, quotes, comments and block scalars are fine.
  Config c = Load(
      "expect:\n"
      "  socket_ifname: ^lo,docker , virbr  # a, comment\n"
      "checks:\n"
      "  disabled: [ib.peermem, ib.contention]\n"
      "coordinator:\n"
      "  topology_label: \", quoted\"\n"
      "  token_file: |\n"
      "    , literal\n");
  EXPECT_EQ(c.expect.socket_ifname, "^lo,docker , virbr");
  EXPECT_EQ(c.checks.disabled.size(), 2u);
  EXPECT_EQ(c.coordinator.topology_label, ", quoted");
  EXPECT_EQ(c.coordinator.token_file, ", literal\n");
}

TEST(ConfigLoader, RefusesPathologicalInput) {
  EXPECT_NE(ErrorOf(std::string(100, '[') + std::string(100, ']')).find("nested deeper"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(2 << 20, '#')).find("larger than"), std::string::npos);
}

TEST(ConfigLoader, RejectsTextThatIsNotUtf8) {
  EXPECT_EQ(ErrorOf("expect:\n  socket_ifname: \"eth\xfe"
                    "0\"\n"),
            "config:2: not UTF-8 text (invalid byte or control character)");
  EXPECT_EQ(ErrorOf("agent:\n  token_file: \"/t\xc0\xaf\"\n"),
            "config:2: not UTF-8 text (invalid byte or control character)");
  EXPECT_EQ(ErrorOf(std::string("\0,!", 3)),
            "config:1: not UTF-8 text (invalid byte or control character)");
  EXPECT_EQ(Load("coordinator:\n  topology_label: \"r\xc3\xa9gion\"\n").coordinator.topology_label,
            "r\xc3\xa9gion");
}

TEST(ConfigLoader, NullUnsetsAnOptionalButNotARequiredKey) {
  Config c = Load("expect:\n  hcas: ~\n  rate_gbps: null\n");
  EXPECT_FALSE(c.expect.hcas.has_value());
  EXPECT_FALSE(c.expect.rate_gbps.has_value());
  EXPECT_EQ(ErrorOf("expect:\n  nofile_min:\n"),
            "config:2: expect.nofile_min: expected a non-negative integer, got null");
}

Config EverythingSet() {
  Config c;
  c.expect.hcas = 8;
  c.expect.rate_gbps = 399.5;
  c.expect.pkey = 0x7fff;
  c.expect.memlock_min_bytes = 12345;
  c.expect.nofile_min = 7;
  c.expect.shm_min_bytes = 3;
  c.expect.socket_ifname = "=eth0,ib";
  c.expect.ib_gid_index = 3;
  c.expect.gpu_driver_min = "535.0";
  c.expect.port_error_rate_per_hour = 0.1;
  c.checks.disabled = {"ib.peermem", "versions.nccl"};
  c.checks.mr_register_bytes = 1 << 20;
  c.probe.nccl_library_paths = {"/a b/libnccl.so.2", "null", "~", "true", "123", ""};
  c.probe.cuda_library_paths = {"x: y", "# not a comment"};
  c.probe.socket_ifname = "null";
  c.probe.ib_hca = "";
  c.probe.size_bytes = 1ull << 33;
  c.probe.warmup_iterations = 0;
  c.probe.iterations = 1;
  c.probe.timeout_seconds = 5;
  c.probe.env_allowlist = {"NCCL_IB_TIMEOUT"};
  c.probe.busbw_min_fraction = 0.3333333333333333;
  c.probe.allow_when_gpus_busy = true;
  c.agent.listen = "127.0.0.1:1";
  c.agent.interval_seconds = 1;
  c.agent.coordinator = "c:1";
  c.agent.token_file = "/t";
  c.agent.ca_file = "/ca";
  c.agent.annotate_pod = false;
  c.agent.node_condition = true;
  c.agent.events = true;
  c.agent.workloads = false;
  c.coordinator.listen = "[::1]:2";
  c.coordinator.http_listen = ":3";
  c.coordinator.sweep_interval_seconds = 60;
  c.coordinator.hold_down = 1;
  c.coordinator.topology_label = "'quoted' \"twice\"";
  c.coordinator.token_file = "/tok";
  c.coordinator.cert_file = "/c";
  c.coordinator.key_file = "/k";
  c.coordinator.heartbeat_timeout_seconds = 9;
  c.remediation.mode = RemediationMode::kDryRun;
  c.remediation.max_nodes = 5;
  c.remediation.max_percent = 12.5;
  c.remediation.recover_after_seconds = 600;
  c.remediation.pool_label = "nvidia.com/gpu.product";
  c.validation.node_selector = {{"nvidia.com/gpu.present", "true"}, {"pool", "a_b.c-d"}};
  return c;
}

TEST(ConfigDump, DefaultsLoadBackEqual) {
  const std::string dump = DumpConfig(Config{});
  auto back = LoadConfigFromString(dump);
  ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << dump;
  EXPECT_EQ(*back, Config{});
}

TEST(ConfigDump, EveryFieldSetLoadsBackEqual) {
  const Config c = EverythingSet();
  ASSERT_NE(c, Config{});
  const std::string dump = DumpConfig(c);
  auto back = LoadConfigFromString(dump);
  ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << dump;
  EXPECT_EQ(*back, c) << dump;
}

TEST(ConfigDump, WritesEveryKey) {
  const std::string dump = DumpConfig(Config{});
  for (const auto& k : ConfigKeys()) {
    const std::string leaf(k.key.substr(k.key.find('.') + 1));
    EXPECT_NE(dump.find("\n  " + leaf + ":"), std::string::npos) << k.key << "\n" << dump;
  }
}

// The JSON schema each key's kind builds (the chart's values.schema.json holds it) accepts what
// the binary itself writes: the key's default, and --dump-config of a Config with every kind set.
TEST(ConfigKeySchemas, JsonSchemaAcceptsTheDefaultAndTheDumpOfEverythingSet) {
  Config everything = EverythingSet();
  everything.probe.rails = "0,3";  // the one key of its kind, unset in EverythingSet
  const YAML::Node dump = YAML::Load(DumpConfig(everything));
  std::set<std::string> kinds;
  std::set<std::string> checked;  // kinds with a value checked: each must have one
  for (const auto& k : ConfigKeySchemas()) {
    const std::string name(k.info.key);
    const size_t dot = name.find('.');
    kinds.insert(std::string(k.kind));
    const auto schema = nlohmann::ordered_json::parse(k.json_schema);
    ASSERT_TRUE(schema.is_object() && schema.contains("type")) << name << ": " << k.json_schema;
    const std::pair<std::string_view, nlohmann::ordered_json> values[] = {
        {"default", nlohmann::ordered_json::parse(k.default_json)},
        {"EverythingSet", testing::YamlToJson(dump[name.substr(0, dot)][name.substr(dot + 1)])},
    };
    for (const auto& [what, value] : values) {
      if (value.is_null() && k.optional) continue;  // unset: the chart leaves the key out
      EXPECT_EQ(testing::SchemaViolation(schema, value), "")
          << name << " (" << k.kind << "), " << what << " " << value.dump() << ", schema "
          << k.json_schema;
      checked.insert(std::string(k.kind));
    }
  }
  EXPECT_EQ(checked, kinds) << "a kind has no value in the defaults or EverythingSet";
}

// The fragments are no wider than the loader: values it refuses, the schema refuses too.
TEST(ConfigKeySchemas, JsonSchemaRefusesWhatTheLoaderRefuses) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"expect.hcas", "\"eight\""},
      {"expect.hcas", "2000"},
      {"expect.rate_gbps", "-1"},
      {"expect.pkey", "\"8001\""},
      {"expect.nofile_min", "-5"},
      {"expect.shm_min_bytes", "\"64MB\""},
      {"expect.gpu_driver_min", "\"v550\""},
      {"checks.disabled", "[\"no.such.check\"]"},
      {"probe.iterations", "1.5"},
      {"probe.env_allowlist", "[\"LD_PRELOAD\"]"},
      {"probe.allow_when_gpus_busy", "\"yes\""},
      {"probe.nccl_library_paths", "[[\"nested\"]]"},
      {"agent.listen", "\"no-port\""},
      {"server.auth", "\"basic\""},
      {"remediation.mode", "false"},
      {"validation.node_selector", "{\"-bad\": \"x\"}"},
      {"validation.node_selector", "{\"pool\": \"a b\"}"},
  };
  std::map<std::string, nlohmann::ordered_json> schemas;
  for (const auto& k : ConfigKeySchemas()) {
    schemas[std::string(k.info.key)] = nlohmann::ordered_json::parse(k.json_schema);
  }
  for (const auto& [key, json] : cases) {
    const std::string name(key);
    ASSERT_TRUE(schemas.contains(name)) << name;
    const size_t dot = name.find('.');
    const std::string yaml = name.substr(0, dot) + ":\n  " + name.substr(dot + 1) + ": " +
                             std::string(json) + "\n";
    EXPECT_FALSE(LoadConfigFromString(yaml).ok()) << name << " loaded " << json;
    EXPECT_NE(testing::SchemaViolation(schemas[name], nlohmann::ordered_json::parse(json)), "")
        << name << " schema " << schemas[name].dump() << " accepted " << json;
  }
}

// agent.metrics_disabled takes the agent's metric families, which this library does not know:
// the caller names them.
TEST(ConfigKeySchemas, MetricNamesComeFromTheContext) {
  auto schema_of = [](const std::vector<ConfigKeySchema>& keys) {
    for (const auto& k : keys) {
      if (k.info.key == "agent.metrics_disabled") {
        return nlohmann::ordered_json::parse(k.json_schema);
      }
    }
    return nlohmann::ordered_json();
  };
  const auto with = schema_of(ConfigKeySchemas({.agent_metric_names = {"nccl_triage_up"}}));
  const auto up = nlohmann::ordered_json::array({"nccl_triage_up"});
  const auto down = nlohmann::ordered_json::array({"nccl_triage_down"});
  EXPECT_EQ(testing::SchemaViolation(with, up), "");
  EXPECT_NE(testing::SchemaViolation(with, down), "");
  EXPECT_EQ(testing::SchemaViolation(schema_of(ConfigKeySchemas()), down), "");
}

constexpr std::string_view kTwoPools = R"(expect:
  nofile_min: 100000
  rate_gbps: 100
pools:
  - name: h100
    selector:
      node.kubernetes.io/instance-type: p5.48xlarge
    expect:
      hcas: 8
      rate_gbps: 400
  - name: a100
    selector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, pool: training}
    expect:
      hcas: 4
      rate_gbps: null
)";

TEST(ConfigPools, EachPoolsExpectIsTheTopLevelOneWithItsOwnKeysOver) {
  const Config c = Load(kTwoPools);
  ASSERT_EQ(c.pools.size(), 2u);
  EXPECT_EQ(c.pools[0].name, "h100");
  EXPECT_EQ(c.pools[0].selector.at("node.kubernetes.io/instance-type"), "p5.48xlarge");
  EXPECT_EQ(c.pools[0].expect.hcas, 8);
  EXPECT_EQ(c.pools[0].expect.rate_gbps, 400);
  EXPECT_EQ(c.pools[0].expect.nofile_min, 100000u);  // inherited
  EXPECT_EQ(c.pools[1].selector.size(), 2u);
  EXPECT_EQ(c.pools[1].expect.hcas, 4);
  EXPECT_FALSE(c.pools[1].expect.rate_gbps);  // null: derived from the node again
  EXPECT_EQ(c.expect.rate_gbps, 100);         // the top level is untouched
  EXPECT_FALSE(c.expect.hcas);
}

TEST(ConfigPools, AreRejectedWithTheLineOfWhatIsWrong) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"pools:\n  - name: a\n    selectr: {x: y}\n",
       "config:3: unknown key 'pools[0].selectr' (a pool has name, selector and expect)"},
      {"pools:\n  - name: a\n    selector: {x: y}\n    expect:\n      hca: 8\n",
       "config:5: unknown key 'expect.hca' (did you mean 'expect.hcas'?)"},
      {"pools:\n  - name: a\n    selector: {x: y}\n    expect: {hcas: many}\n",
       "config:4: expect.hcas: expected an integer, got 'many'"},
      {"pools:\n  - selector: {x: y}\n", "config:2: pools[0]: name is required"},
      {"pools:\n  - name: a\n", "config:2: pools[0]: selector is required"},
      {"pools:\n  - name: a\n    selector: {}\n",
       "config:3: pools[0].selector: empty; name at least one node label (a pool for every "
       "node is the top-level expect)"},
      {"pools:\n  - name: a\n    selector: [x]\n",
       "config:3: pools[0].selector: expected a mapping of node labels to values"},
      {"pools:\n  - {name: a, selector: {x: y}}\n  - {name: a, selector: {x: z}}\n",
       "config:3: pools[1]: duplicate pool name 'a'"},
      {"pools:\n  - name: \"a b\"\n    selector: {x: y}\n",
       "config:2: pools[0].name: expected 1-63 letters, digits, '.', '_' or '-'"},
      {"pools: {name: a}\n", "config:1: pools: expected a list of {name, selector, expect}"},
      {"pools:\n  - name: a\n    selector:\n      x: y\n      x: z\n",
       "config:5: pools[0].selector: duplicate label 'x'"},
  };
  for (const auto& [yaml, error] : cases) EXPECT_EQ(ErrorOf(yaml), error) << yaml;
}

TEST(ConfigPools, DumpLoadsBackEqual) {
  const Config c = Load(kTwoPools);
  const std::string dump = DumpConfig(c);
  auto back = LoadConfigFromString(dump);
  ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << dump;
  EXPECT_EQ(*back, c) << dump;
}

TEST(SelectPool, TheFirstPoolWhoseEverySelectorLabelMatchesWins) {
  const Config c = Load(kTwoPools);
  std::map<std::string, std::string> labels = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
                                               {"pool", "training"},
                                               {"kubernetes.io/hostname", "gpu-7"}};
  const PoolConfig* p = SelectPool(c.pools, labels);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name, "a100");
  labels["node.kubernetes.io/instance-type"] = "p5.48xlarge";  // matches both: the first wins
  EXPECT_EQ(SelectPool(c.pools, labels)->name, "h100");
}

TEST(SelectPool, ANodeInNoPoolGetsNone) {
  const Config c = Load(kTwoPools);
  EXPECT_EQ(SelectPool(c.pools, {{"pool", "training"}}), nullptr);  // one label of two
  EXPECT_EQ(SelectPool(c.pools, {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
                                 {"pool", "inference"}}),
            nullptr);  // a value differs
  EXPECT_EQ(SelectPool(c.pools, {}), nullptr);
  EXPECT_EQ(SelectPool({}, {{"pool", "training"}}), nullptr);
}

TEST(ConfigFile, LoadsAFileAndReportsAMissingOne) {
  const std::string path = ::testing::TempDir() + "/nccl-triage-config-test.yaml";
  {
    std::ofstream f(path);
    f << "expect:\n  hcas: 4\n";
  }
  auto c = LoadConfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->expect.hcas, 4);
  std::remove(path.c_str());
  auto missing = LoadConfigFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace nccl_triage

namespace nccl_triage {
namespace {

TEST(ConfigLoader, KernelKeysLoadAndAreRangeChecked) {
  auto loaded = LoadConfigFromString("kernel:\n  enabled: false\n  link_flaps_per_hour: 5\n");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_FALSE(loaded->kernel.enabled);
  EXPECT_EQ(loaded->kernel.link_flaps_per_hour, 5);
  EXPECT_FALSE(LoadConfigFromString("kernel:\n  link_flaps_per_hour: 0\n").ok());
}

}  // namespace
}  // namespace nccl_triage
