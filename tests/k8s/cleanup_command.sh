#!/usr/bin/env bash
# `nccl-triage cleanup` (which runs `nccl-triage-server cleanup` beside it) against the real API server (tests/k8s/cluster.sh): nodes and pods
# carrying what nccl-triage leaves (our taint, our cordon, annotations, NcclFabricReady) next to
# what others placed. --dry-run lists and changes nothing; the run leaves nothing of ours on the
# selected nodes and their pods, and everything else as it was; a second run finds nothing.
#   cleanup_command.sh TOOLS WORK CLI_EXE   (nccl-triage, with nccl-triage-server beside it)
set -euo pipefail
tools="$1"; work="$2"; cli="$3"
export KUBECONFIG="$work/kubeconfig"
kubectl() { "$tools/bin/kubectl" "$@"; }
die() { echo "FAIL: $*"; exit 1; }
sel=nccl-triage-cleanup-test=1; ns=cleanup-cmd

node() { # NAME LABELLED UNSCHEDULABLE ANNOTATIONS TAINTS CONDITIONS
  kubectl delete node "$1" --ignore-not-found >/dev/null
  local labels='{}'; [ "$2" = yes ] && labels='{"nccl-triage-cleanup-test": "1"}'
  kubectl create -f - >/dev/null <<NODE || die "node $1"
{"apiVersion": "v1", "kind": "Node",
 "metadata": {"name": "$1", "labels": $labels, "annotations": $4},
 "spec": {"unschedulable": $3, "taints": $5}}
NODE
  kubectl patch node "$1" --subresource=status --type=merge -p "{\"status\": {\"conditions\": $6}}" >/dev/null ||
    die "conditions of $1"
}
ours_taint='{"key": "nccl-triage.io/fault", "value": "ib_resource", "effect": "NoSchedule"}'
their_taint='{"key": "nvidia.com/gpu", "effect": "NoSchedule"}'
ready='{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}'
fabric='{"type": "NcclFabricReady", "status": "False", "reason": "IbResource", "message": "ib.port_state"}'
# cu-gpu-1: remediated in cordon mode, an operator's taint and annotation beside ours.
node cu-gpu-1 yes true '{"nccl-triage.io/remediated": "taint=ib_resource,cordon", "team.example/owner": "ml"}' \
  "[$ours_taint, $their_taint]" "[$fabric, $ready]"
# cu-gpu-2: the condition only, and a cordon an operator placed (no marker): it stays.
node cu-gpu-2 yes true '{}' '[]' "[$ready, $fabric]"
# cu-other: ours, but outside the selector: untouched.
node cu-other no false '{"nccl-triage.io/remediated": "taint=ib_resource"}' "[$ours_taint]" "[$fabric]"

kubectl get ns "$ns" >/dev/null 2>&1 || kubectl create ns "$ns" >/dev/null
kubectl create serviceaccount default -n "$ns" >/dev/null 2>&1 || true
for p in train-0:cu-gpu-1 web-0:cu-gpu-1 train-9:cu-other; do
  kubectl delete pod "${p%%:*}" -n "$ns" --ignore-not-found --grace-period=0 --force >/dev/null 2>&1 || true
  kubectl run "${p%%:*}" -n "$ns" --image=registry.example/x --restart=Never \
    --overrides="{\"spec\": {\"nodeName\": \"${p#*:}\"}}" >/dev/null || die "pod $p"
done
kubectl annotate pod -n "$ns" train-0 train-9 nccl-triage.io/node-verdict=ib_resource \
  nccl-triage.io/causes=ib.port_state >/dev/null || die "annotate"
kubectl annotate pod -n "$ns" train-0 web-0 team.example/owner=ml >/dev/null || die "annotate"

state() {
  kubectl get nodes cu-gpu-1 cu-gpu-2 cu-other -o json | python3 -c '
import json, sys
for n in json.load(sys.stdin)["items"]:
    m, s = n["metadata"], n["spec"]
    print(m["name"], "unschedulable=%s" % s.get("unschedulable", False),
          # (admission adds node.kubernetes.io/not-ready to a new node: not ours, not theirs)
          "taints=" + ",".join(t["key"] for t in s.get("taints", [])
                               if not t["key"].startswith("node.kubernetes.io/")),
          "annotations=" + ",".join(sorted(m.get("annotations", {}))),
          "conditions=" + ",".join(c["type"] for c in n["status"].get("conditions", [])))'
  kubectl get pods -n "$ns" -o json | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    print(p["metadata"]["name"], "annotations=" + ",".join(sorted(p["metadata"].get("annotations", {}))))'
}
before="$(state)"

out="$("$cli" cleanup --dry-run --selector "$sel" --kubeconfig "$KUBECONFIG")" || die "cleanup --dry-run: $out"
echo "$out"
for want in 'would remove from node cu-gpu-1: taint nccl-triage.io/fault=ib_resource:NoSchedule, cordon, annotation nccl-triage.io/remediated, condition NcclFabricReady' \
            'would remove from node cu-gpu-2: condition NcclFabricReady' \
            "would remove from pod $ns/train-0: annotation nccl-triage.io/causes, annotation nccl-triage.io/node-verdict" \
            'dry run: 2 node(s) and 1 pod(s) carried'; do
  grep -q -F "$want" <<<"$out" || die "the dry run does not say: $want"
done
grep -q -E 'cu-other|train-9|web-0' <<<"$out" && die "the dry run lists objects outside the selector or not ours"
[ "$(state)" = "$before" ] || die "the dry run changed: $(diff <(echo "$before") <(state))"

out="$("$cli" cleanup --selector "$sel" --kubeconfig "$KUBECONFIG")" || die "cleanup: $out"
echo "$out"
grep -q -F '2 node(s) and 1 pod(s) carried' <<<"$out" || die "cleanup: $out"
after="$(state)"
echo "$after"
want="cu-gpu-1 unschedulable=False taints=nvidia.com/gpu annotations=team.example/owner conditions=Ready
cu-gpu-2 unschedulable=True taints= annotations= conditions=Ready
$(grep '^cu-other ' <<<"$before")
train-0 annotations=team.example/owner
$(grep -E '^(train-9|web-0) ' <<<"$before")"
[ "$(sort <<<"$after")" = "$(sort <<<"$want")" ] || die "after cleanup: $(diff <(sort <<<"$want") <(sort <<<"$after"))"

out="$("$cli" cleanup --selector "$sel" --kubeconfig "$KUBECONFIG")" || die "cleanup, again: $out"
grep -q -F '0 node(s) and 0 pod(s) carried' <<<"$out" || die "a second cleanup found: $out"

kubectl delete node cu-gpu-1 cu-gpu-2 cu-other >/dev/null
kubectl delete pods --all -n "$ns" --grace-period=0 --force >/dev/null 2>&1 || true
echo "cleanup: nothing of ours left on the selected nodes and their pods; the rest as it was"
