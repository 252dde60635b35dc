#!/usr/bin/env bash
# Least privilege, asked of the real API server (SubjectAccessReview through `kubectl auth can-i`)
# for the ServiceAccounts of the chart as kube_prepare.sh installed it (every option on, the
# coordinator's remediation in cordon mode):
#   rbac_check.sh TOOLS WORK CHARTCHECK AGENT_SOURCES DOC
# 1. What the accounts may do (`can-i --list`, less what every authenticated user may; the agent's,
#    the coordinator's and the uninstall hook's) is exactly
#    what the KubeClient calls in the sources need (chartcheck --print-used): a Role granting more
#    than the code uses fails, and so does code that needs a grant the chart lacks.
# 2. The table of DOC (docs/install.md) between <!-- rbac-table --> and <!-- /rbac-table --> is the answer
#    of the server to each question below; it fails when they differ (and prints the table).
set -euo pipefail
tools="$1"; work="$2"; chartcheck="$3"; sources="$4"; readme="$5"
export KUBECONFIG="$work/kubeconfig"
k() { "$tools/bin/kubectl" "$@"; }
agent=system:serviceaccount:kt:kt-nccl-triage-agent
coordinator=system:serviceaccount:kt:kt-nccl-triage-coordinator

# "group/resource:verb" for each row of `can-i --list` in the release namespace.
granted() {
  k auth can-i --list --as "$1" -n kt --no-headers | awk '
    $2 ~ /^\[/ { r = $1; g = ""; if (index(r, ".") > 0) { g = substr(r, index(r, ".") + 1); r = substr(r, 1, index(r, ".") - 1) }
                 line = $0; sub(/.*\[/, "", line); sub(/\].*/, "", line); n = split(line, v, " ")
                 for (i = 1; i <= n; i++) print g "/" r ":" v[i] }'
}
everyone="$(granted system:serviceaccount:kt:default)"   # an account with no grant of its own
# The uninstall hook's account exists only while `helm uninstall` runs: its ServiceAccount and
# RBAC (not its Job) are applied from `helm get hooks` for the question, and deleted after.
cleanup=system:serviceaccount:kt:kt-nccl-triage-cleanup
"$tools/bin/helm" get hooks kt -n kt >"$work/kt-hooks.yaml"
python3 - "$work/kt-hooks.yaml" >"$work/kt-hooks-rbac.yaml" <<'PY'
import sys
docs = open(sys.argv[1]).read().split("\n---\n")
print("\n---\n".join(d for d in docs if "\nkind: Job\n" not in "\n" + d + "\n"))
PY
k apply -f "$work/kt-hooks-rbac.yaml" >/dev/null
trap 'k delete -f "$work/kt-hooks-rbac.yaml" --ignore-not-found >/dev/null 2>&1 || true' EXIT
have="$( { granted "$agent"; granted "$coordinator"; granted "$cleanup"; } | grep -v -x -F "$everyone" | sort -u)"
want="$("$chartcheck" --rbac-code "$sources" --print-used | sort -u)"
if [ "$have" != "$want" ]; then
  echo "FAIL: the chart's service accounts may do more or less than the code uses"
  diff <(echo "$want") <(echo "$have") | sed -n 's/^> /  granted, unused: /p; s/^< /  used, not granted: /p'
  exit 1
fi
echo "granted = used by the code: $(echo $have)"

# The table: one SubjectAccessReview per question and account.
ask() { k auth can-i "$@" >/dev/null 2>&1 && echo yes || echo no; }
row() {  # TEXT CAN-I-ARGS...
  local text="$1"; shift
  printf '| %s | %s | %s |\n' "$text" "$(ask "$@" --as "$agent")" "$(ask "$@" --as "$coordinator")"
}
table="$(
  echo "| request (\`kubectl auth can-i ...\`) | agent | coordinator |"
  echo "|---|---|---|"
  row "list pods --all-namespaces" list pods -A
  row "patch pods -n jobs" patch pods -n jobs
  row "get pods -n jobs" get pods -n jobs
  row "get pods -n <release namespace>" get pods -n kt
  row "list pods -n <release namespace>" list pods -n kt
  row "patch pods -n <release namespace>" patch pods -n kt
  row "get pods --subresource log -n jobs" get pods --subresource log -n jobs
  row "watch pods --all-namespaces" watch pods -A
  row "create pods -n jobs" create pods -n jobs
  row "delete pods -n jobs" delete pods -n jobs
  row "create pods --subresource exec -n jobs" create pods --subresource exec -n jobs
  row "get nodes" get nodes
  row "list nodes" list nodes
  row "watch nodes" watch nodes
  row "patch nodes" patch nodes
  row "update nodes" update nodes
  row "delete nodes" delete nodes
  row "patch nodes --subresource status" patch nodes --subresource status
  row "create events -n default" create events -n default
  row "create tokenreviews" create tokenreviews.authentication.k8s.io
  row "create subjectaccessreviews" create subjectaccessreviews.authorization.k8s.io
  row "get /metrics" get /metrics
  row "get secrets -n <release namespace>" get secrets -n kt
  row "list configmaps -n <release namespace>" list configmaps -n kt
  row "create serviceaccounts/token -n <release namespace>" create serviceaccounts --subresource token -n kt
  row "create leases -n <release namespace>" create leases.coordination.k8s.io -n kt
  row "get leases/nccl-triage-coordinator -n <release namespace>" get leases.coordination.k8s.io/nccl-triage-coordinator -n kt
  row "update leases/nccl-triage-coordinator -n <release namespace>" update leases.coordination.k8s.io/nccl-triage-coordinator -n kt
  row "update leases/kube-scheduler -n kube-system" update leases.coordination.k8s.io/kube-scheduler -n kube-system
  row "update leases/other -n <release namespace>" update leases.coordination.k8s.io/other -n kt
)"
documented="$(sed -n '/<!-- rbac-table -->/,/<!-- \/rbac-table -->/p' "$readme" | grep '^|' || true)"
if [ "$documented" != "$table" ]; then
  echo "FAIL: the README's rbac-table differs from the API server's answers; they are:"
  echo "$table"
  exit 1
fi
echo "README rbac-table matches the API server's answers ($(echo "$table" | grep -c '| \(yes\|no\) |') requests)"
