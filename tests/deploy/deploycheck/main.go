// Command deploycheck tests the deployables that are not C++: alert rules and their unit tests,
// the Dockerfile, the runtime package list, the Grafana dashboard and the plain manifests.
//
//	deploycheck rules --rules A.yaml,B.yaml --tests alerts_test.yaml --readme README.md
//	deploycheck dockerfile --dockerfile Dockerfile --scripts scripts
//	deploycheck runtime-libs --binary build/nccl-triage,build/nccl-triage-services.so --runtime-list scripts/packages-runtime.txt
//	deploycheck dashboard --dashboard D.json --prometheus http://127.0.0.1:9090 [--skip-metric RE]
//	deploycheck alerts-live --prometheus URL --expect 'Alert{label="v"}'... --absent 'Alert{...}'...
//	deploycheck wait-scrapes --prometheus URL --targets N --samples 4 --timeout 30s
//	deploycheck value --prometheus URL --expr 'sum(x)'   (prints the value on stderr)
//	deploycheck metric-names --files D.json,R.yaml --sources agent
//	deploycheck drift --rendered R.yaml --deploy deploy --chart helm/nccl-triage
//	deploycheck storm --rules R.yaml --inhibit I.yaml --promtool P [--alertmanager A] --work DIR
//	deploycheck links --dashboard D.json --docs-root REPO
//	deploycheck rails --dashboard D.json --rules R.yaml --inhibit I.yaml --promtool P [--alertmanager A] [--amtool T] --work DIR
//
// Each subcommand prints one line per failed assertion and ends with "N passed, M failed".
package main

import (
	"fmt"
	"os"
)

type checker struct {
	passed, failed, skipped int
}

func (c *checker) check(ok bool, format string, args ...interface{}) bool {
	if ok {
		c.passed++
		return true
	}
	c.failed++
	fmt.Printf("FAIL %s\n", fmt.Sprintf(format, args...))
	return false
}

func (c *checker) fatal(err error) {
	fmt.Printf("FAIL %v\n", err)
	c.failed++
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: deploycheck rules|dockerfile|runtime-libs|dashboard|alerts-live|drift [flags]")
		os.Exit(2)
	}
	c := &checker{}
	args := os.Args[2:]
	switch os.Args[1] {
	case "rules":
		runRules(c, args)
	case "dockerfile":
		runDockerfile(c, args)
	case "runtime-libs":
		runRuntimeLibs(c, args)
	case "dashboard":
		runDashboard(c, args)
	case "alerts-live":
		runAlertsLive(c, args)
	case "wait-scrapes":
		runWaitScrapes(c, args)
	case "value":
		runValue(c, args)
	case "metric-names":
		runMetricNames(c, args)
	case "drift":
		runDrift(c, args)
	case "storm":
		runStorm(c, args)
	case "rails":
		runRails(c, args)
	case "links":
		runLinks(c, args)
	default:
		fmt.Fprintf(os.Stderr, "deploycheck: unknown subcommand %q\n", os.Args[1])
		os.Exit(2)
	}
	if c.skipped > 0 {
		fmt.Printf("%d passed, %d failed, %d skipped\n", c.passed, c.failed, c.skipped)
	} else {
		fmt.Printf("%d passed, %d failed\n", c.passed, c.failed)
	}
	if c.failed > 0 {
		os.Exit(1)
	}
}
