package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// contractMetrics are the metric families of the runtime contract shared by the agent, the
// coordinator and the deployables (README "Metrics, annotations and endpoints").
var contractMetrics = map[string]string{
	"nccl_triage_node_verdict": "gauge", "nccl_triage_check_status": "gauge",
	"nccl_triage_ib_port_state": "gauge", "nccl_triage_ib_port_physical_state": "gauge",
	"nccl_triage_ib_port_rate_bytes_per_second": "gauge", "nccl_triage_ib_port_errors_total": "counter",
	"nccl_triage_ib_expected_bytes_per_second": "gauge", "nccl_triage_memlock_limit_bytes": "gauge",
	"nccl_triage_shm_size_bytes": "gauge", "nccl_triage_probe_success": "gauge",
	"nccl_triage_probe_busbw_bytes_per_second": "gauge", "nccl_triage_probe_duration_seconds": "histogram",
	"nccl_triage_pair_verdict": "gauge", "nccl_triage_last_check_timestamp_seconds": "gauge",
	"nccl_triage_last_probe_timestamp_seconds": "gauge", "nccl_triage_build_info": "gauge",
	"nccl_triage_nccl_info": "gauge", "nccl_triage_workload_check_status": "gauge",
	"nccl_triage_probe_available":              "gauge",
	"nccl_triage_coordinator_agents_connected": "gauge", "nccl_triage_coordinator_sweeps_total": "counter",
	"nccl_triage_coordinator_sweep_duration_seconds": "histogram", "nccl_triage_coordinator_probes_total": "counter",
	"nccl_triage_coordinator_localised_faults": "gauge", "nccl_triage_coordinator_fault": "gauge",
	"nccl_triage_coordinator_pairs_tested": "gauge", "nccl_triage_coordinator_pairs_total": "gauge",
	"nccl_triage_coordinator_node_unprobed_sweeps":         "gauge",
	"nccl_triage_coordinator_last_sweep_timestamp_seconds": "gauge",
	"nccl_triage_remediation_actions_total":                "counter",
	"nccl_triage_remediation_nodes":                        "gauge",
	"nccl_triage_remediation_breaker_open":                 "gauge",
	"nccl_triage_incidents_total":                          "counter",
	"nccl_triage_rail_probe_success":                       "gauge",
	"nccl_triage_rail_probe_failures":                      "gauge",
	"nccl_triage_rail_last_probe_success":                  "gauge",
	"nccl_triage_rail_last_probe_busbw_bytes_per_second":   "gauge",
	"nccl_triage_kernel_link_down_total":                   "counter",
	"nccl_triage_kernel_xid_total":                         "counter",
}

// family maps a sample name to its family (histogram series carry _bucket/_sum/_count).
func family(name string) (string, bool) {
	if _, ok := contractMetrics[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base := strings.TrimSuffix(name, suffix)
		if base != name && contractMetrics[base] == "histogram" {
			return base, true
		}
	}
	return "", false
}

// runMetricNames checks that the dashboard and the rules use only metrics of the contract, and
// that the C++ sources export no nccl_triage_ metric outside it, so a typo on either side fails
// here even before the live test can scrape a process that exports it.
func runMetricNames(c *checker, args []string) {
	fs := flag.NewFlagSet("metric-names", flag.ExitOnError)
	files := fs.String("files", "", "comma-separated dashboard/rule files")
	sources := fs.String("sources", "", "directory of C++ sources that export metrics")
	fs.Parse(args)
	name := regexp.MustCompile(`nccl_triage_[a-z0-9_]+`)
	used := map[string]bool{}
	for _, f := range strings.Split(*files, ",") {
		b, err := os.ReadFile(f)
		if err != nil {
			c.fatal(err)
			return
		}
		for _, m := range name.FindAllString(string(b), -1) {
			_, ok := family(m)
			c.check(ok, "%s uses %s, which is not a metric of the contract", filepath.Base(f), m)
			used[m] = true
		}
	}
	c.check(len(used) > 10, "only %d metric names found", len(used))
	quoted := regexp.MustCompile(`"(nccl_triage_[a-z0-9_]+)"`)
	filepath.Walk(*sources, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !(strings.HasSuffix(p, ".cc") || strings.HasSuffix(p, ".h")) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, m := range quoted.FindAllStringSubmatch(string(b), -1) {
			_, ok := family(m[1])
			c.check(ok, "%s exports %s, which is not in the contract the dashboard and rules use", p, m[1])
		}
		return nil
	})
	var unused []string
	for m := range contractMetrics {
		found := false
		for u := range used {
			if f, _ := family(u); f == m {
				found = true
			}
		}
		if !found {
			unused = append(unused, m)
		}
	}
	sort.Strings(unused)
	c.check(len(unused) == 0, "the dashboard and rules leave these contract metrics unused: %v", unused)
}
