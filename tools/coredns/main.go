// The DNS server of the one-node cluster of the tests: CoreDNS's own main with only the plugins
// the cluster's Corefile names (kubernetes, errors, log, ready, health), so that the agents find
// the coordinator's Service by the name the chart gives them. scripts/kubelet-tools.sh builds it.
package main

import (
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"

	"github.com/coredns/coredns/coremain"
)

func main() { coremain.Run() }
