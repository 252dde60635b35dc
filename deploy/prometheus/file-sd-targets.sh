#!/bin/sh
# The targets of nccl-triage's pods as a Prometheus file_sd file, for a Prometheus built without
# Kubernetes discovery (Debian's and Ubuntu's prometheus package) or one that may not list pods.
# Each target carries the __meta_kubernetes_* labels that kubernetes_sd_configs (role pod) would
# give it, so the jobs of scrape-config.yaml work unchanged once their kubernetes_sd_configs is
# replaced by file_sd_configs (docs/install.md, "Scraping"). Needs kubectl and jq; the account
# only has to list pods in the namespace.
#   file-sd-targets.sh [KUBECTL_OPTIONS...] > targets.json
#   e.g. file-sd-targets.sh -n nccl-triage > t.tmp && mv t.tmp /etc/prometheus/nccl-triage.json
# (Prometheus rereads the file when it changes; write it whole, as above, e.g. every minute from
# a timer: a restarted coordinator pod has a new address.) KUBECTL names another kubectl.
set -eu
"${KUBECTL:-kubectl}" get pods -l app.kubernetes.io/name=nccl-triage -o json "$@" | jq '
  [ .items[]
    | select(.status.phase == "Running" and (.status.podIP // "") != "")
    | . as $pod
    | ($pod.status.podIP | if test(":") then "[\(.)]" else . end) as $ip
    | .spec.containers[] as $c
    | ($c.ports // [])[]
    | { targets: ["\($ip):\(.containerPort)"],
        labels: {
          __meta_kubernetes_namespace: $pod.metadata.namespace,
          __meta_kubernetes_pod_name: $pod.metadata.name,
          __meta_kubernetes_pod_ip: $pod.status.podIP,
          __meta_kubernetes_pod_node_name: ($pod.spec.nodeName // ""),
          __meta_kubernetes_pod_container_name: $c.name,
          __meta_kubernetes_pod_container_port_name: (.name // ""),
          __meta_kubernetes_pod_container_port_number: (.containerPort | tostring),
          __meta_kubernetes_pod_label_app_kubernetes_io_name:
            ($pod.metadata.labels["app.kubernetes.io/name"] // ""),
          __meta_kubernetes_pod_label_app_kubernetes_io_instance:
            ($pod.metadata.labels["app.kubernetes.io/instance"] // ""),
          __meta_kubernetes_pod_label_app_kubernetes_io_component:
            ($pod.metadata.labels["app.kubernetes.io/component"] // "")
        } } ]'
