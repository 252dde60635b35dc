#!/usr/bin/env bash
# The chart by the real helm of scripts/k8s-tools.sh, offline and against the real API server of
# tests/k8s/cluster.sh (WORK is its directory: kubeconfig, ...).
#   helm_test.sh lint      TOOLS CHART VALUES...        helm lint --strict, default values and each file
#   helm_test.sh template  TOOLS CHART VALUES...        helm template of each file succeeds
#   helm_test.sh rejects   TOOLS CHART WORK CASES_DIR   every case is refused with its "# expect:" lines
#   helm_test.sh install   TOOLS CHART WORK OUT CHARTCHECK MODE [VALUES]
#                          helm install (default | all-on | standalone), then chartcheck on what helm
#                          says it installed; all-on and standalone uninstall again and check that
#                          nothing is left
#   helm_test.sh upgrade   TOOLS CHART WORK OUT CHARTCHECK   helm upgrade of the default release
#   helm_test.sh uninstall TOOLS WORK                   helm uninstall of the default release
#   helm_test.sh umbrella  TOOLS CHART UMBRELLA OUT     the chart as a subchart of the umbrella
#                          chart UMBRELLA (copied to OUT): dependency build, lint, template; the
#                          umbrella's global registry and the pull secrets reach the pods
set -euo pipefail
die() { echo "FAIL: $*"; exit 1; }
cmd="$1"; tools="$2"; shift 2
helm() { "$tools/bin/helm" "$@"; }
kubectl() { "$tools/bin/kubectl" "$@"; }
# Offline renders of a chart that asks for a token: the value is fixed, as for GitOps users.
offline_token=(--set token.value=offline-render-token)

# release -> "namespace fullname" of the installs below (fullname: the chart's object prefix).
where() {
  case "$1" in
    nccl-triage) echo "nccl-triage nccl-triage" ;;
    all-on) echo "nccl-triage triage" ;;              # values-all-on.yaml: fullnameOverride
    standalone) echo "standalone standalone-nccl-triage" ;;
  esac
}

# Nothing of the release is left: no object of any listable kind, in any namespace or cluster-wide,
# carries its instance label or its name prefix (Events excepted: they are the cluster's record).
leftovers() {
  local release="$1" fullname="$2" kinds found
  kinds="$(kubectl api-resources --verbs=list -o name | grep -v -E '^(events|events\.events\.k8s\.io)$' | paste -sd, -)"
  # (kubectl's deprecation warnings on stderr are not objects)
  found="$(kubectl get "$kinds" -A -l "app.kubernetes.io/instance=$release" -o name 2>/dev/null)" ||
    die "kubectl get of every kind failed"
  found+=$'\n'"$(kubectl get "$kinds" -A -o name 2>/dev/null | grep -v '^namespace/' | grep -E "/$fullname(-|$)" || true)"
  found="$(echo "$found" | grep -v -E '^\s*$|^No resources found' || true)"
  [ -z "$found" ] || die "helm uninstall $release left: $(echo $found)"
  echo "uninstall of $release left nothing behind"
}

case "$cmd" in
umbrella)
  chart="$(cd "$1" && pwd)"; umbrella="$2"; out="$3"
  rm -rf "$out/umbrella"; mkdir -p "$out"; cp -r "$umbrella" "$out/umbrella"
  sed -i "s|file://CHART_DIR|file://$chart|" "$out/umbrella/Chart.yaml"
  helm dependency build "$out/umbrella" >/dev/null || die "helm dependency build of the umbrella chart"
  [ -f "$out/umbrella/charts/nccl-triage-0.1.0.tgz" ] || die "the subchart was not packaged into charts/"
  helm lint --strict "$out/umbrella" || die "helm lint --strict of the umbrella chart"
  rendered="$(helm template platform "$out/umbrella" -n gpu)" || die "helm template of the umbrella chart"
  # Every image of the subchart's pods comes from the umbrella's global registry, and each pod
  # template names the pull secret.
  images="$(grep -E '^ +image: ' <<<"$rendered" | sed 's/.*image: *//; s/"//g' | sort -u)"
  [ -n "$images" ] || die "no image in the umbrella's render"
  while read -r image; do
    [[ "$image" == registry.example/mirror/* ]] || die "image $image is not from global.imageRegistry"
  done <<<"$images"
  pods="$(grep -c -E '^kind: (DaemonSet|Deployment)$' <<<"$rendered")"
  secrets="$(grep -c -E '^ +- name: mirror-credentials$' <<<"$rendered")"
  [ "$pods" -ge 2 ] && [ "$secrets" -eq "$pods" ] ||
    die "$pods workloads, $secrets name the pull secret mirror-credentials"
  grep -q 'path: /opt/nccl-2.28/lib' <<<"$rendered" || die "the probes' NCCL hostPath did not reach the DaemonSet"
  echo "umbrella chart: subchart rendered, $pods workloads from registry.example/mirror with the pull secret"
  ;;
lint)
  chart="$1"; shift
  helm lint --strict "$chart"
  for f in "$@"; do helm lint --strict "$chart" -f "$f" "${offline_token[@]}"; done
  ;;
template)
  chart="$1"; shift
  for f in "$@"; do
    out="$(helm template nccl-triage "$chart" -n nccl-triage -f "$f" "${offline_token[@]}")" ||
      die "helm template -f $f"
    n="$(grep -c '^kind: ' <<<"$out")"
    [ "$n" -gt 5 ] || die "helm template -f $f rendered $n objects"
    echo "helm template -f $(basename "$f"): $n objects"
  done
  ;;
rejects)
  chart="$1"; export KUBECONFIG="$2/kubeconfig"; cases="$3"; failed=0
  kubectl get ns nccl-triage >/dev/null 2>&1 || kubectl create ns nccl-triage >/dev/null
  for f in "$cases"/*.yaml; do
    # As a user meets them: `helm install` against the cluster (server-side dry run: lookup sees
    # it), or `helm template` for the cases that say "# render: offline".
    if grep -q '^# render: offline$' "$f"; then
      args=(template rejected "$chart" -n nccl-triage -f "$f")
    else
      args=(install rejected "$chart" -n nccl-triage --dry-run=server -f "$f")
    fi
    if out="$(helm "${args[@]}" 2>&1 >/dev/null)"; then
      echo "FAIL: $(basename "$f"): helm ${args[0]} accepted the values"; failed=1; continue
    fi
    n=0
    while IFS= read -r want; do
      n=$((n + 1))
      grep -qF -- "$want" <<<"$out" || { echo "FAIL: $(basename "$f"): helm said:"; echo "$out"; echo "  not: $want"; failed=1; }
    done < <(sed -n 's/^# expect: //p' "$f")
    [ "$n" -gt 0 ] || { echo "FAIL: $(basename "$f") has no '# expect:' line"; failed=1; }
    echo "$(basename "$f"): rejected ($n messages)"
  done
  exit "$failed"
  ;;
install)
  chart="$1"; export KUBECONFIG="$2/kubeconfig"; out="$3"; chartcheck="$4"; mode="$5"; values=("${@:6}")
  case "$mode" in default) release=nccl-triage ;; *) release="$mode" ;; esac
  read -r ns fullname <<<"$(where "$release")"
  mkdir -p "$out"
  # all-on puts the Grafana dashboard into the monitoring stack's namespace.
  for n in "$ns" monitoring; do kubectl get ns "$n" >/dev/null 2>&1 || kubectl create ns "$n" >/dev/null; done
  args=()
  for f in "${values[@]}"; do args+=(-f "$f"); done
  # A release left by an earlier, interrupted run goes first.
  helm uninstall "$release" -n "$ns" --ignore-not-found >/dev/null
  # --wait is no use without kubelet and controllers; every object is created or the install fails.
  helm install "$release" "$chart" -n "$ns" "${args[@]}" >"$out/$mode-install.txt" || die "helm install $release"
  helm get manifest "$release" -n "$ns" >"$out/$mode.yaml"
  helm get values "$release" -n "$ns" --all -o json >"$out/$mode-values.json"
  kubectl get -f "$out/$mode.yaml" -o name >/dev/null || die "objects of $release missing after install"
  echo "helm install $release: $(grep -c '^kind: ' "$out/$mode.yaml") objects accepted by the API server"
  rc=0
  "$chartcheck" --manifests "$out/$mode.yaml" --values "$out/$mode-values.json" --chart "$chart" \
    --mode "$mode" --release "$release" --extract-config "$out/$mode-config.yaml" || rc=$?
  if [ "$mode" != default ]; then
    helm uninstall "$release" -n "$ns" --wait >/dev/null
    leftovers "$release" "$fullname"
  fi
  exit "$rc"
  ;;
upgrade)
  chart="$1"; export KUBECONFIG="$2/kubeconfig"; out="$3"; chartcheck="$4"
  secret() { kubectl get secret nccl-triage-token -n nccl-triage -o jsonpath='{.data.token}' | base64 -d; }
  before="$(secret)"
  [ -n "$before" ] || die "no token Secret before the upgrade"
  # A values change and an image tag change, as a user upgrades.
  helm upgrade nccl-triage "$chart" -n nccl-triage --set image.tag=9.9.9 \
    --set config.agent.interval_seconds=45 >/dev/null || die "helm upgrade"
  helm get manifest nccl-triage -n nccl-triage >"$out/upgrade.yaml"
  helm get values nccl-triage -n nccl-triage --all -o json >"$out/upgrade-values.json"
  image="$(kubectl get ds nccl-triage-agent -n nccl-triage -o jsonpath='{.spec.template.spec.containers[0].image}')"
  [ "$image" = nccl-triage:9.9.9 ] || die "the agent DaemonSet runs $image after the upgrade, want nccl-triage:9.9.9"
  kubectl get cm nccl-triage-config -n nccl-triage -o jsonpath='{.data.config\.yaml}' | grep -q 'interval_seconds: 45' ||
    die "the ConfigMap on the server lacks interval_seconds: 45 after the upgrade"
  [ "$(secret)" = "$before" ] || die "the upgrade replaced the token"
  [ "$(helm history nccl-triage -n nccl-triage -o json | grep -o '"revision":[0-9]*' | tail -1)" = '"revision":2' ] ||
    die "helm history has no revision 2"
  echo "helm upgrade: image nccl-triage:9.9.9, interval 45 s on the server, token kept"
  "$chartcheck" --manifests "$out/upgrade.yaml" --values "$out/upgrade-values.json" --chart "$chart" \
    --mode upgrade --kept-token "$before"
  ;;
uninstall)
  export KUBECONFIG="$1/kubeconfig"
  helm uninstall nccl-triage -n nccl-triage --wait >/dev/null || die "helm uninstall"
  leftovers nccl-triage nccl-triage
  ;;
*) die "unknown command $cmd" ;;
esac
