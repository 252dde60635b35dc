package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// contractMetrics are the metric families of the runtime contract shared by the agent, the
// coordinator and the deployables: name -> type, read from `nccl-triage-server dump-schema` (the
// code's own MetricSpec tables), never a copy of them.
var contractMetrics = map[string]string{}

// loadContract fills contractMetrics from a dump-schema document.
func loadContract(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc struct {
		Schema  string `json:"schema"`
		Metrics []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if doc.Schema != "nccl-triage/schema/v1" || len(doc.Metrics) == 0 {
		return fmt.Errorf("%s: not a dump-schema document with metrics", path)
	}
	for _, m := range doc.Metrics {
		contractMetrics[m.Name] = m.Type
	}
	return nil
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

// runMetricNames checks that the dashboard and the rules use only metrics of the contract (every
// one of them), and that the C++ sources name no nccl_triage_ metric outside it, so a typo on
// either side fails here even before the live test can scrape a process that exports it.
func runMetricNames(c *checker, args []string) {
	fs := flag.NewFlagSet("metric-names", flag.ExitOnError)
	files := fs.String("files", "", "comma-separated dashboard/rule files")
	sources := fs.String("sources", "", "directory of C++ sources that export metrics")
	schema := fs.String("schema", "", "the output of nccl-triage-server dump-schema")
	fs.Parse(args)
	if err := loadContract(*schema); err != nil {
		c.fatal(err)
		return
	}
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
