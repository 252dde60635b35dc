#!/usr/bin/env bash
# A real Prometheus (the Debian package's) scrapes the chart's pods on the one-node cluster of
# node.sh, as docs/install.md ("Scraping") tells a Prometheus outside the cluster to: the jobs of
# deploy/prometheus/scrape-config.yaml unchanged but for their discovery and their token file.
# Debian builds Prometheus without Kubernetes discovery (kubernetes_sd_configs is no field of its
# configuration), so the targets come from deploy/prometheus/file-sd-targets.sh (file_sd_configs,
# the labels the Kubernetes discovery would give), run with the token of an account that may only
# list the release's pods; the scrapes send the token of the chart's scraper Secret
# (<fullname>-scraper-token, filled by the token controller), which the agent and the coordinator
# have the API server review (server.auth: kubernetes). Shown through Prometheus' own HTTP API:
#   - the agent's target is up, with the node label of the job's relabelling; an nccl-triage
#     metric (nccl_triage_probe_available) is stored with it, and the training pod's workload
#     series keep their own pod label (honor_labels); the coordinator's target is up;
#   - the agent's job without a token is down with a 401, with the token of an account not bound
#     to the metrics reader down with a 403 (the target's lastError).
# Prints the scrape durations and series counts. Without a prometheus binary it says so and
# shows nothing (exit 0). Usage (node_agent.sh calls it, with the release installed):
#   node_prometheus.sh K8S_TOOLS WORK SOURCE_DIR NAMESPACE FULLNAME NODE [TRAINING_POD]
set -euo pipefail
ktools="$1"; work="$2"; src="$3"; ns="$4"; fullname="$5"; node="$6"; training="${7:-}"
start_s=$SECONDS
prometheus="${PROMETHEUS:-$(command -v prometheus || true)}"
if [ -z "$prometheus" ]; then
  echo "NOT SHOWN HERE: a real Prometheus scraping the chart's pods (no prometheus binary: the"
  echo "  Debian package prometheus of scripts/packages-build.txt; scripts/install-deps.sh installs it)"
  exit 0
fi
. "$work/env"
pdir="$work/prometheus"
rm -rf "$pdir"; mkdir -p "$pdir"
k() { "$ktools/bin/kubectl" --kubeconfig "$work/kubeconfig" "$@"; }
fail() { echo "FAIL: $*"; echo "--- prometheus log (last lines)"; tail -15 "$pdir/prometheus.log" 2>/dev/null || true; exit 1; }
stop_prometheus() {
  if [ -f "$pdir/prometheus.pid" ]; then
    kill "$(cat "$pdir/prometheus.pid")" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$(cat "$pdir/prometheus.pid")" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$(cat "$pdir/prometheus.pid")" 2>/dev/null || true
    rm -f "$pdir/prometheus.pid"
  fi
}
finish() {  # Prometheus stopped, and the test's accounts gone (the uninstall check counts them)
  stop_prometheus
  k -n "$ns" delete serviceaccount/kt-prometheus-sd serviceaccount/kt-unbound role/kt-prometheus-sd \
    rolebinding/kt-prometheus-sd --ignore-not-found >/dev/null 2>&1 || true
}
trap finish EXIT

# The discovery's account: pods of the release's namespace, nothing else (it is not the scrape's).
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: kt-prometheus-sd, namespace: $ns}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: kt-prometheus-sd, namespace: $ns}
rules: [{apiGroups: [""], resources: [pods], verbs: [list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: kt-prometheus-sd, namespace: $ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: kt-prometheus-sd}
subjects: [{kind: ServiceAccount, name: kt-prometheus-sd, namespace: $ns}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: kt-unbound, namespace: $ns}
YAML
k -n "$ns" create token kt-prometheus-sd --duration 1h >"$pdir/sd.token"
k -n "$ns" create token kt-unbound --duration 1h >"$pdir/unbound.token"
# The chart's scraper Secret, as an SRE reads it (docs/install.md): the token controller fills it.
for _ in $(seq 1 60); do
  k -n "$ns" get secret "$fullname-scraper-token" -o jsonpath='{.data.token}' 2>/dev/null |
    base64 -d >"$pdir/scraper.token" 2>/dev/null || true
  [ -s "$pdir/scraper.token" ] && break
  sleep 1
done
[ -s "$pdir/scraper.token" ] || fail "the Secret $fullname-scraper-token holds no token"
chmod 600 "$pdir"/*.token

# The targets, as an SRE's timer makes them, with the discovery account's token.
KUBECTL="$ktools/bin/kubectl" "$src/deploy/prometheus/file-sd-targets.sh" -n "$ns" \
  --server "$API_SERVER" --certificate-authority "$work/ca.crt" --token "$(cat "$pdir/sd.token")" \
  --kubeconfig /dev/null >"$pdir/targets.tmp"
mv "$pdir/targets.tmp" "$pdir/nccl-triage.json"
echo "file-sd-targets.sh as $ns/kt-prometheus-sd: $(python3 -c '
import json, sys
print(", ".join(t["targets"][0] + " (" + t["labels"]["__meta_kubernetes_pod_label_app_kubernetes_io_component"]
      + " " + t["labels"]["__meta_kubernetes_pod_container_port_name"] + ")" for t in json.load(open(sys.argv[1]))))' \
  "$pdir/nccl-triage.json")"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
python3 - "$src/deploy/prometheus/scrape-config.yaml" "$pdir" "$ns" <<'PY'
import copy, sys, yaml
shipped, pdir, ns = sys.argv[1:]
jobs = yaml.safe_load(open(shipped))
names = [j["job_name"] for j in jobs]
if names != ["nccl-triage-agent", "nccl-triage-coordinator"]:
    sys.exit(f"FAIL: {shipped} has the jobs {names}")
for job in jobs:
    # What docs/install.md says to change for a Prometheus without Kubernetes discovery, outside
    # the cluster: the discovery, and the token file (the scraper's Secret).
    sd = job.pop("kubernetes_sd_configs")
    if [s.get("role") for s in sd] != ["pod"] or sd[0]["namespaces"]["names"] != ["nccl-triage"]:
        sys.exit(f"FAIL: {shipped}: {job['job_name']} does not discover the pods of nccl-triage")
    job["file_sd_configs"] = [{"files": [f"{pdir}/nccl-triage.json"]}]
    job["authorization"]["credentials_file"] = f"{pdir}/scraper.token"
agent = jobs[0]
none = copy.deepcopy(agent); none["job_name"] = "nccl-triage-agent-no-token"; del none["authorization"]
unbound = copy.deepcopy(agent); unbound["job_name"] = "nccl-triage-agent-unbound"
unbound["authorization"]["credentials_file"] = f"{pdir}/unbound.token"
config = {"global": {"scrape_interval": "3s", "scrape_timeout": "3s", "evaluation_interval": "3s"},
          "scrape_configs": jobs + [none, unbound]}
yaml.safe_dump(config, open(f"{pdir}/prometheus.yml", "w"), sort_keys=False)
PY
promtool="$(dirname "$prometheus")/promtool"
if [ -x "$promtool" ]; then
  "$promtool" check config "$pdir/prometheus.yml" >"$pdir/promtool.out" 2>&1 ||
    { cat "$pdir/promtool.out"; fail "promtool rejects the scrape configuration"; }
fi
"$prometheus" --config.file="$pdir/prometheus.yml" --storage.tsdb.path="$pdir/tsdb" \
  --web.listen-address="127.0.0.1:$port" >"$pdir/prometheus.log" 2>&1 &
echo $! >"$pdir/prometheus.pid"
url="http://127.0.0.1:$port"
echo "prometheus $("$prometheus" --version 2>&1 | head -1 | sed 's/^prometheus, version //') on $url:" \
  "the jobs of deploy/prometheus/scrape-config.yaml (file_sd), scrapes with the token of the" \
  "Secret $fullname-scraper-token"

# Every target scraped at least twice (the first scrape of a target can race its discovery).
t0=$SECONDS
for _ in $(seq 1 120); do
  kill -0 "$(cat "$pdir/prometheus.pid")" 2>/dev/null || fail "prometheus exited"
  curl -s --max-time 5 -o "$pdir/targets.json" "$url/api/v1/targets" 2>/dev/null || true
  python3 - "$pdir/targets.json" <<'PY' 2>/dev/null && break
import json, sys
t = json.load(open(sys.argv[1]))["data"]["activeTargets"]
jobs = {x["labels"]["job"] for x in t if x["health"] != "unknown"}
sys.exit(0 if {"nccl-triage-agent", "nccl-triage-coordinator", "nccl-triage-agent-no-token",
               "nccl-triage-agent-unbound"} <= jobs else 1)
PY
  sleep 1
done
sleep 4
curl -s --max-time 5 -o "$pdir/targets.json" "$url/api/v1/targets" || fail "no answer from $url/api/v1/targets"
echo "every target scraped, and 4 s more, $((SECONDS - t0)) s after the start:"
query() {  # EXPR -> the result vector as JSON on stdout
  curl -s --max-time 10 -G "$url/api/v1/query" --data-urlencode "query=$1"
}
for q in "up" "scrape_duration_seconds" "scrape_samples_scraped" \
         "nccl_triage_probe_available{job=\"nccl-triage-agent\",node=\"$node\"}" \
         "count by (job) ({job=~\"nccl-triage-.*\"})" \
         "count(nccl_triage_workload_check_status{job=\"nccl-triage-agent\",pod=\"$training\"})"; do
  printf '%s\t%s\n' "$q" "$(query "$q")"
done >"$pdir/queries.tsv"
python3 - "$pdir/targets.json" "$pdir/queries.tsv" "$node" "$training" <<'PY'
import json, sys
targets = json.load(open(sys.argv[1]))["data"]["activeTargets"]
node, training = sys.argv[3], sys.argv[4]
q = {}
for line in open(sys.argv[2]):
    expr, answer = line.rstrip("\n").split("\t", 1)
    q[expr] = json.loads(answer)["data"]["result"]
def by_job(expr):
    return {r["metric"].get("job"): r for r in q[expr]}
up, dur, samples = by_job("up"), by_job("scrape_duration_seconds"), by_job("scrape_samples_scraped")
series = {r["metric"].get("job"): r["value"][1] for r in q['count by (job) ({job=~"nccl-triage-.*"})']}
errors = []
for t in sorted(targets, key=lambda t: t["labels"]["job"]):
    job = t["labels"]["job"]
    print(f"  {job:28} {t['scrapeUrl']:34} health {t['health']:5} up {up.get(job, {}).get('value', ['', '?'])[1]}"
          f", node {t['labels'].get('node', '-')}, last scrape {float(t['lastScrapeDuration']) * 1000:.1f} ms"
          f", {samples.get(job, {}).get('value', ['', '?'])[1]} samples, {series.get(job, 0)} series"
          + (f", lastError: {t['lastError']}" if t["lastError"] else ""))
def target(job):
    return next((t for t in targets if t["labels"]["job"] == job), None)
agent = target("nccl-triage-agent")
if not agent or agent["health"] != "up" or up.get("nccl-triage-agent", {}).get("value", [0, "0"])[1] != "1":
    errors.append("the agent's target is not up with the scraper's token")
elif agent["labels"].get("node") != node:
    errors.append(f"the agent's target has node={agent['labels'].get('node')}, not {node}")
if up.get("nccl-triage-coordinator", {}).get("value", [0, "0"])[1] != "1":
    errors.append("the coordinator's target is not up with the scraper's token")
avail = q[f'nccl_triage_probe_available{{job="nccl-triage-agent",node="{node}"}}']
if not avail:
    errors.append(f"no nccl_triage_probe_available with node={node} in Prometheus")
else:
    m = avail[0]["metric"]
    print(f"  nccl_triage_probe_available{{node=\"{m.get('node')}\", reason=\"{m.get('reason')}\", "
          f"instance=\"{m.get('instance')}\"}} = {avail[0]['value'][1]}")
if training:
    n = q[f'count(nccl_triage_workload_check_status{{job="nccl-triage-agent",pod="{training}"}})']
    count = n[0]["value"][1] if n else "0"
    print(f"  nccl_triage_workload_check_status of pod {training} (its own pod label kept): {count} series")
    if count == "0":
        errors.append(f"no workload series of pod {training}")
for job, code in (("nccl-triage-agent-no-token", "401"), ("nccl-triage-agent-unbound", "403")):
    t = target(job)
    if not t or t["health"] != "down" or up.get(job, {}).get("value", [0, "1"])[1] != "0":
        errors.append(f"the job {job} is not down")
    elif code not in t["lastError"]:
        errors.append(f"the job {job} fails with {t['lastError']!r}, not a {code}")
if errors:
    sys.exit("FAIL: " + "; ".join(errors))
PY
echo "Prometheus: done in $((SECONDS - start_s)) s (accounts, targets, start, scrapes, queries)"
