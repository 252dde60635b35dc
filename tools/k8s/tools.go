//go:build tools

// The commands scripts/k8s-tools.sh builds; this file keeps them (and their dependencies) in
// go.mod and go.sum. prometheus-operator is here for its CRDs (example/prometheus-operator-crd
// in its module), which the script copies; versionutil is its smallest package.
package tools

import (
	_ "github.com/prometheus-operator/prometheus-operator/pkg/versionutil"
	_ "helm.sh/helm/v3/cmd/helm"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
