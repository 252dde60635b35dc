package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// railMapPanel finds the dashboard's rail × node heat map: a table whose groupingToMatrix
// transformation puts nodes in rows and rails in columns. Nil when there is none.
func railMapPanel(panels []map[string]interface{}) map[string]interface{} {
	for _, p := range panels {
		for _, t := range asList(p["transformations"]) {
			tm, _ := t.(map[string]interface{})
			opts, _ := tm["options"].(map[string]interface{})
			if tm["id"] == "groupingToMatrix" && opts["rowField"] == "node" && opts["columnField"] == "rail" {
				return p
			}
		}
	}
	return nil
}

// lintRailMap holds the rail map to what a fleet needs: the per-rail series, a bounded number of
// nodes (a 4,096-node fleet has 32,768 rail series), and the three cell values told apart.
func lintRailMap(c *checker, panels []map[string]interface{}) {
	p := railMapPanel(panels)
	if !c.check(p != nil, "no rail × node map (a table with groupingToMatrix, rows node, columns rail)") {
		return
	}
	title, _ := p["title"].(string)
	targets := asList(p["targets"])
	if !c.check(len(targets) == 1, "panel %q has %d queries, want one", title, len(targets)) {
		return
	}
	tm, _ := targets[0].(map[string]interface{})
	expr, _ := tm["expr"].(string)
	c.check(strings.Contains(expr, "nccl_triage_rail_probe_success") && strings.Contains(expr, "nccl_triage_rail_probe_failures"),
		"panel %q does not read the rail series: %s", title, expr)
	c.check(regexp.MustCompile(`(bottomk|topk)\(\s*\d+\s*,\s*min by \(node\)`).MatchString(expr),
		"panel %q does not bound the nodes it shows (bottomk/topk by node): %s", title, expr)
	c.check(tm["instant"] == true && tm["format"] == "table", "panel %q: the query must be an instant table", title)
	mappings := toJSONString(p["fieldConfig"])
	for _, v := range []string{`"0"`, `"0.5"`, `"1"`, `"null"`} {
		c.check(strings.Contains(mappings, v), "panel %q has no value mapping for %s", title, v)
	}
}

// runRails tests what the rails add to the deployables, without a cluster:
//  1. The rail map's query (from the dashboard, with its Node variable) on a 40-node fleet in
//     promtool: 32 nodes shown, the failing rails among them with the value that colours them,
//     one node's row complete.
//  2. The inhibit rules in a real Alertmanager (and amtool check-config): a rail fault silences
//     its node's confirmed fault and nothing else.
func runRails(c *checker, args []string) {
	fs := flag.NewFlagSet("rails", flag.ExitOnError)
	dashboard := fs.String("dashboard", "", "dashboard JSON")
	rulesArg := fs.String("rules", "", "alert rule file")
	inhibit := fs.String("inhibit", "", "Alertmanager inhibit rules file")
	promtool := fs.String("promtool", "promtool", "promtool binary")
	am := fs.String("alertmanager", "", "Alertmanager binary (empty: that part is skipped)")
	amtool := fs.String("amtool", "", "amtool binary (empty: check-config is skipped)")
	work := fs.String("work", "", "work directory")
	fs.Parse(args)
	if err := os.MkdirAll(*work, 0o755); err != nil {
		c.fatal(err)
		return
	}
	railMapQuery(c, *dashboard, *promtool, *work)
	railInhibition(c, *rulesArg, *inhibit, *am, *amtool, *work)
}

func railMapQuery(c *checker, dashboardFile, promtool, work string) {
	d, err := readJSON(dashboardFile)
	if err != nil {
		c.fatal(err)
		return
	}
	p := railMapPanel(allPanels(d))
	if !c.check(p != nil, "no rail map panel") {
		return
	}
	tm, _ := asList(p["targets"])[0].(map[string]interface{})
	expr, _ := tm["expr"].(string)
	// 40 nodes of 8 rails. gpu-03's rail 5 failed with both its peers, gpu-01's rail 5 failed
	// with gpu-03 and passed with another, gpu-07's rail 2 was not probed; the rest passed.
	coord := `job="nccl-triage-coordinator",instance="10.1.0.9:9502"`
	var series strings.Builder
	for n := 0; n < 40; n++ {
		for r := 0; r < 8; r++ {
			node := fmt.Sprintf("gpu-%02d", n)
			ok, failures := 1, 0
			switch {
			case node == "gpu-03" && r == 5:
				ok, failures = 0, 2
			case node == "gpu-01" && r == 5:
				failures = 1
			case node == "gpu-07" && r == 2:
				continue
			}
			l := fmt.Sprintf(`%s,node="%s",rail="%d",device="mlx5_%d",port="1"`, coord, node, r, r)
			fmt.Fprintf(&series, "      - series: 'nccl_triage_rail_probe_success{%s}'\n        values: '%dx5'\n", l, ok)
			fmt.Fprintf(&series, "      - series: 'nccl_triage_rail_probe_failures{%s}'\n        values: '%dx5'\n", l, failures)
		}
	}
	query := func(node string) string {
		return strings.ReplaceAll(substitute(strings.ReplaceAll(expr, "$node", node), []string{"node", "class"}), "'", `\'`)
	}
	var gpu03 strings.Builder
	for r := 0; r < 8; r++ {
		v := 1
		if r == 5 {
			v = 0
		}
		fmt.Fprintf(&gpu03, "          - labels: '{%s,node=\"gpu-03\",rail=\"%d\",device=\"mlx5_%d\",port=\"1\"}'\n            value: %d\n", coord, r, r, v)
	}
	test := fmt.Sprintf(`tests:
  - name: rail map on 40 nodes
    interval: 1m
    input_series:
%s    promql_expr_test:
      - expr: 'count(count by (node) (%s))'
        eval_time: 2m
        exp_samples:
          - value: 32
      - expr: 'min by (node) (%s) < 1'
        eval_time: 2m
        exp_samples:
          - labels: '{node="gpu-01"}'
            value: 0.5
          - labels: '{node="gpu-03"}'
            value: 0
      - expr: '%s'
        eval_time: 2m
        exp_samples:
%s`, series.String(), query(".*"), query(".*"), query("gpu-03"), gpu03.String())
	file := filepath.Join(work, "rail_map_test.yaml")
	if err := os.WriteFile(file, []byte(test), 0o644); err != nil {
		c.fatal(err)
		return
	}
	out, err := exec.Command(promtool, "test", "rules", file).CombinedOutput()
	if c.check(err == nil, "the rail map's query on 40 nodes (%s): %v\n%s", file, err, tail(string(out), 3000)) {
		fmt.Println("rail map: 32 of 40 nodes, gpu-03 rail 5 'fails with every peer' (0), gpu-01 rail 5 'fails with some peers' (0.5), gpu-03's row complete")
	}
}

func railInhibition(c *checker, rulesFile, inhibitFile, am, amtool, work string) {
	rules, err := loadRules(rulesFile)
	if err != nil {
		c.fatal(err)
		return
	}
	coord := map[string]string{"job": "nccl-triage-coordinator", "namespace": "nccl-triage", "instance": "10.1.0.9:9502"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range coord {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	alert := func(name string, series map[string]string) stormAlert {
		a := expectAlert(c, rules, name, series)
		a.Labels["alertname"] = name
		return a
	}
	node := func(n, cause string) map[string]string {
		return with(map[string]string{"kind": "node", "node": n, "class": "ib_resource", "cause": cause})
	}
	// gpu-03: rail 5's memory registration fails (a rail fault and its node's confirmed fault);
	// gpu-06: every rail fails (the node's fault only: NcclTriageRailFault stays silent then);
	// gpu-09: a port down found by the pairs' IB probe, no rail probes.
	alerts := []stormAlert{
		alert("NcclTriageRailFault", with(map[string]string{"node": "gpu-03", "rail": "5", "device": "mlx5_5", "port": "1"})),
		alert("NcclTriageNodeFaultConfirmed", node("gpu-03", "ib.mr_register")),
		alert("NcclTriageNodeFaultConfirmed", node("gpu-06", "ib.mr_register")),
		alert("NcclTriageNodeFaultConfirmed", node("gpu-09", "ib.port_state")),
	}
	if amtool != "" {
		ib, err := os.ReadFile(inhibitFile)
		if !c.check(err == nil, "%v", err) {
			return
		}
		cfg, err := writeAlertmanagerConfig(ib, work)
		if !c.check(err == nil, "%v", err) {
			return
		}
		out, err := exec.Command(amtool, "check-config", cfg).CombinedOutput()
		c.check(err == nil, "amtool check-config %s: %v\n%s", cfg, err, tail(string(out), 2000))
	} else {
		c.skipped++
		fmt.Println("SKIP amtool check-config: no amtool (Debian prometheus-alertmanager)")
	}
	if am == "" {
		c.skipped++
		fmt.Println("SKIP the Alertmanager part: no Alertmanager binary (Debian prometheus-alertmanager)")
		return
	}
	left, inhibited, err := alertmanagerInhibition(am, inhibitFile, work, alerts, "node", 3)
	if !c.check(err == nil, "alertmanager: %v", err) {
		return
	}
	sort.Strings(left)
	want := []string{"NcclTriageNodeFaultConfirmed/gpu-06", "NcclTriageNodeFaultConfirmed/gpu-09", "NcclTriageRailFault/gpu-03"}
	c.check(strings.Join(left, " ") == strings.Join(want, " "),
		"uninhibited alerts %v, want %v (the rail, not its node; other nodes' faults untouched)", left, want)
	c.check(inhibited == 1, "%d alerts inhibited, want 1 (gpu-03's node fault)", inhibited)
	fmt.Printf("rail inhibition: %d alerts, %d inhibited, %d left: %v\n", len(alerts), inhibited, len(left), left)
}
