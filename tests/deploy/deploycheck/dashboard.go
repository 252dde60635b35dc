package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

// panelQuery is one query of the dashboard, with where it came from.
type panelQuery struct {
	where string
	expr  string
	title string // the panel's; empty for a variable
}

// dashboardQueries walks every panel (rows included) and every template variable.
func dashboardQueries(d map[string]interface{}) []panelQuery {
	var out []panelQuery
	var walk func(panels []interface{})
	walk = func(panels []interface{}) {
		for _, p := range panels {
			pm, _ := p.(map[string]interface{})
			title, _ := pm["title"].(string)
			for _, t := range asList(pm["targets"]) {
				tm, _ := t.(map[string]interface{})
				if e, _ := tm["expr"].(string); e != "" {
					out = append(out, panelQuery{fmt.Sprintf("panel %q query %v", title, tm["refId"]), e, title})
				}
			}
			walk(asList(pm["panels"]))
		}
	}
	walk(asList(d["panels"]))
	templating, _ := d["templating"].(map[string]interface{})
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)
	for _, v := range asList(templating["list"]) {
		vm, _ := v.(map[string]interface{})
		if vm["type"] != "query" {
			continue
		}
		q, _ := vm["definition"].(string)
		if qm, ok := vm["query"].(map[string]interface{}); ok {
			if s, _ := qm["query"].(string); s != "" {
				q = s
			}
		}
		// label_values(metric, label) is answered from the series of metric that carry label.
		if m := labelValues.FindStringSubmatch(q); m != nil {
			out = append(out, panelQuery{fmt.Sprintf("variable %v", vm["name"]),
				fmt.Sprintf("count by (%s) (%s)", m[2], m[1]), ""})
		}
	}
	return out
}

// readJSON reads a JSON object from a file.
func readJSON(file string) (map[string]interface{}, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var d map[string]interface{}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return d, nil
}

func asList(v interface{}) []interface{} {
	l, _ := v.([]interface{})
	return l
}

// substitute replaces Grafana's variables the way an "All" selection with allValue ".*" does.
func substitute(expr string, vars []string) string {
	r := expr
	for k, v := range map[string]string{"$__rate_interval": "1m", "${__rate_interval}": "1m",
		"$__interval": "15s", "${__interval}": "15s", "$__range": "5m", "${__range}": "5m"} {
		r = strings.ReplaceAll(r, k, v)
	}
	for _, name := range vars {
		r = strings.ReplaceAll(r, "${"+name+"}", ".*")
		r = strings.ReplaceAll(r, "[["+name+"]]", ".*")
		r = regexp.MustCompile(`\$`+name+`\b`).ReplaceAllString(r, ".*")
	}
	return r
}

// answer is Prometheus' answer to one dashboard query.
type answer struct {
	expr    string
	skipped bool
	r       promResponse
	err     error
	took    time.Duration
}

// checkPanelValue checks "TITLE-PREFIX|label=\"v\",...|VALUE": one query of the panel whose title
// starts with TITLE-PREFIX answered a series with those labels and that value.
func checkPanelValue(c *checker, spec string, queries []panelQuery, answers []answer) {
	parts := strings.Split(spec, "|")
	if !c.check(len(parts) == 3, "--expect-value %q: want TITLE-PREFIX|labels|VALUE", spec) {
		return
	}
	want := map[string]string{}
	for _, m := range regexp.MustCompile(`(\w+)="([^"]*)"`).FindAllStringSubmatch(parts[1], -1) {
		want[m[1]] = m[2]
	}
	found, seen := false, ""
	for i, q := range queries {
		if q.title == "" || !strings.HasPrefix(q.title, parts[0]) {
			continue
		}
		for _, raw := range answers[i].r.Data.Result {
			var sample struct {
				Metric map[string]string `json:"metric"`
				Value  []interface{}     `json:"value"`
			}
			if json.Unmarshal(raw, &sample) != nil || len(sample.Value) != 2 {
				continue
			}
			match := true
			for k, v := range want {
				match = match && sample.Metric[k] == v
			}
			if match {
				v, _ := sample.Value[1].(string)
				seen = v
				found = found || v == parts[2]
			}
		}
	}
	c.check(found, "panel %q: no series {%s} with value %s (seen: %q)", parts[0], parts[1], parts[2], seen)
}

type promResponse struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	} `json:"data"`
}

func promQuery(base, expr string) (promResponse, error) {
	var r promResponse
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return r, err
	}
	return r, nil
}

// runDashboard runs every query of the dashboard against a Prometheus that scraped nccl-triage
// and fails on a query that errors or returns nothing. --skip-metric names metrics that no scraped
// target can export in this run (reported as skipped, with the reason).
func runDashboard(c *checker, args []string) {
	fs := flag.NewFlagSet("dashboard", flag.ExitOnError)
	dashboard := fs.String("dashboard", "", "dashboard JSON")
	prom := fs.String("prometheus", "", "Prometheus base URL")
	skip := fs.String("skip-metric", "", "regexp of metric names whose queries are skipped")
	skipReason := fs.String("skip-reason", "", "why they are skipped")
	retry := fs.Duration("retry", 10*time.Second, "how long an empty result is retried (scrapes still arriving)")
	maxSeries := fs.Int("max-series", 0, "fail a query that returns this many series or more (0: no limit)")
	lintOnly := fs.Bool("lint", false, "only the static checks (no Prometheus)")
	parallel := fs.Int("parallel", 4, "queries in flight at once")
	var expectValues multiFlag
	fs.Var(&expectValues, "expect-value", "TITLE-PREFIX|label=\"v\",...|VALUE: a series of that panel's answer (repeatable)")
	fs.Parse(args)
	d, err := readJSON(*dashboard)
	if err != nil {
		c.fatal(err)
		return
	}
	var vars []string
	templating, _ := d["templating"].(map[string]interface{})
	for _, v := range asList(templating["list"]) {
		vm, _ := v.(map[string]interface{})
		if name, _ := vm["name"].(string); name != "" && vm["type"] != "datasource" {
			vars = append(vars, name)
			c.check(vm["includeAll"] == true && vm["allValue"] == ".*", "variable %s has no regex All (.*)", name)
		}
	}
	c.check(len(vars) >= 2, "dashboard has %d template variables, want node and class", len(vars))
	queries := dashboardQueries(d)
	c.check(len(queries) > 10, "only %d queries found", len(queries))
	lintDashboard(c, d)
	if *lintOnly {
		return
	}
	var skipRe *regexp.Regexp
	if *skip != "" {
		skipRe = regexp.MustCompile(*skip)
	}
	// The queries run on a few connections at once (Prometheus answers them in parallel; an empty
	// result waits for scrapes still arriving), and are judged in the dashboard's order.
	answers := make([]answer, len(queries))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < *parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				a := &answers[i]
				start := time.Now()
				a.r, a.err = promQuery(*prom, a.expr)
				for deadline := time.Now().Add(*retry); a.err == nil && a.r.Status == "success" &&
					len(a.r.Data.Result) == 0 && time.Now().Before(deadline); {
					time.Sleep(500 * time.Millisecond)
					a.r, a.err = promQuery(*prom, a.expr)
				}
				a.took = time.Since(start)
			}
		}()
	}
	for i, q := range queries {
		answers[i].expr = substitute(q.expr, vars)
		answers[i].skipped = skipRe != nil && skipRe.MatchString(answers[i].expr)
	}
	for i := range queries {
		if !answers[i].skipped {
			jobs <- i
		}
	}
	close(jobs)
	wg.Wait()
	largest, largestWhere := 0, ""
	var slowest time.Duration
	slowestWhere := ""
	for i, q := range queries {
		a := answers[i]
		expr, r, err := a.expr, a.r, a.err
		// A Grafana variable left over ($name, ${name}); $1 is a label_replace reference.
		c.check(!regexp.MustCompile(`\$\{?[A-Za-z_]`).MatchString(expr), "%s: unsubstituted variable in %s", q.where, expr)
		if a.skipped {
			c.skipped++
			fmt.Printf("SKIP %s: %s (%s)\n", q.where, expr, *skipReason)
			continue
		}
		if a.took > slowest {
			slowest, slowestWhere = a.took, q.where
		}
		if !c.check(err == nil, "%s: %v", q.where, err) {
			continue
		}
		if !c.check(r.Status == "success", "%s: %s\n     %s", q.where, r.Error, expr) {
			continue
		}
		c.check(len(r.Data.Result) > 0, "%s returns nothing:\n     %s", q.where, expr)
		if *maxSeries > 0 {
			c.check(len(r.Data.Result) < *maxSeries, "%s returns %d series, the limit is fewer than %d:\n     %s",
				q.where, len(r.Data.Result), *maxSeries, expr)
			if len(r.Data.Result) > largest {
				largest, largestWhere = len(r.Data.Result), q.where
			}
		}
	}
	for _, e := range expectValues {
		checkPanelValue(c, e, queries, answers)
	}
	fmt.Printf("slowest query: %.1f s (%s)\n", slowest.Seconds(), slowestWhere)
	if *maxSeries > 0 {
		fmt.Printf("largest result: %d series (%s)\n", largest, largestWhere)
	}
}

// timeUnits are Grafana units of a duration: a count plotted under one reads as seconds.
var timeUnits = map[string]bool{"s": true, "ms": true, "m": true, "h": true, "d": true, "dtdurations": true, "dtdurationms": true}

// lintDashboard holds the dashboard to what a 4,096-node fleet needs: the top row answers "how
// many, and which confirmed" (counts by verdict, confirmed faults, a faults table with links to
// the runbook, and the kubectl command of a node's report); no graph draws one line per pair, port or pod unless
// the query keeps only a top/bottom k; no count is plotted under a unit of time; panel ids are
// unique; the rail × node map is there and bounded (lintRailMap).
func lintDashboard(c *checker, d map[string]interface{}) {
	panels := allPanels(d)
	perSeries := regexp.MustCompile(`\{\{\s*(peer|port|device|pod|container)\s*\}\}`)
	countExpr := regexp.MustCompile(`^\s*(count\b|sum\s*\(\s*increase\(|increase\()`)
	var topCountsByClass, topConfirmed, faultTable bool
	for _, p := range panels {
		title, _ := p["title"].(string)
		kind, _ := p["type"].(string)
		grid, _ := p["gridPos"].(map[string]interface{})
		y, _ := grid["y"].(float64)
		fc, _ := p["fieldConfig"].(map[string]interface{})
		defaults, _ := fc["defaults"].(map[string]interface{})
		unit, _ := defaults["unit"].(string)
		for _, t := range asList(p["targets"]) {
			tm, _ := t.(map[string]interface{})
			expr, _ := tm["expr"].(string)
			legend, _ := tm["legendFormat"].(string)
			if kind == "timeseries" || kind == "graph" {
				c.check(!perSeries.MatchString(legend) || strings.Contains(expr, "topk") || strings.Contains(expr, "bottomk"),
					"panel %q draws one line per %s by default: keep a topk/bottomk or aggregate", title, perSeries.FindString(legend))
			}
			if kind == "timeseries" || kind == "stat" {
				c.check(!(countExpr.MatchString(expr) && timeUnits[unit]),
					"panel %q plots a count (%s) under the time unit %q", title, expr, unit)
			}
			if y <= 1 && kind == "stat" && strings.Contains(expr, "count by (class)") {
				topCountsByClass = true
			}
			if y <= 1 && kind == "stat" && (strings.Contains(expr, "nccl_triage_coordinator_fault") ||
				strings.Contains(expr, "nccl_triage_coordinator_localised_faults")) {
				topConfirmed = true
			}
		}
		if kind == "table" && strings.Contains(toJSONString(p["targets"]), "nccl_triage_coordinator_fault") && y <= 7 {
			links := toJSONString(fc["overrides"])
			// A browser cannot open an agent's address (host network, and a bearer token is
			// needed): the node's report is a kubectl command in the description.
			desc, _ := p["description"].(string)
			faultTable = strings.Contains(desc, "nccl-triage\\.io/report") && strings.Contains(links, "docs/alerts.md#") &&
				strings.Contains(links, "mappings")
			// "since" is the coordinator's own record of when it confirmed the fault, not an
			// estimate from a subquery (which misses faults older than its window and costs a
			// 7-day scan on every refresh).
			targets := toJSONString(p["targets"])
			c.check(strings.Contains(targets, "nccl_triage_fault_since_timestamp_seconds"),
				"panel %q: since does not read nccl_triage_fault_since_timestamp_seconds", title)
			c.check(!regexp.MustCompile(`\[[0-9]+[smhdw]:[0-9]*[smhdw]?\]`).MatchString(targets),
				"panel %q estimates with a subquery: %s", title, targets)
		}
	}
	ids := map[float64]string{}
	for _, p := range panels {
		id, _ := p["id"].(float64)
		title, _ := p["title"].(string)
		c.check(ids[id] == "", "panels %q and %q share id %v (Grafana keeps one of them)", ids[id], title, id)
		ids[id] = title
	}
	lintRailMap(c, panels)
	c.check(topCountsByClass, "the top row has no stat of nodes counted by verdict class")
	c.check(topConfirmed, "the top row has no stat of confirmed faults")
	c.check(faultTable, "no confirmed-faults table near the top with value mappings, the runbook's links and the kubectl command of a node's report")
}

// allPanels lists every panel, those inside collapsed rows too.
func allPanels(d map[string]interface{}) []map[string]interface{} {
	var panels []map[string]interface{}
	var walk func(l []interface{})
	walk = func(l []interface{}) {
		for _, p := range l {
			pm, _ := p.(map[string]interface{})
			panels = append(panels, pm)
			walk(asList(pm["panels"]))
		}
	}
	walk(asList(d["panels"]))
	return panels
}

func toJSONString(v interface{}) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// runAlertsLive checks which alerts the rules put into pending/firing state against the live
// metrics of real agents: the rules and the metrics agree on names and labels.
func runAlertsLive(c *checker, args []string) {
	fs := flag.NewFlagSet("alerts-live", flag.ExitOnError)
	prom := fs.String("prometheus", "", "Prometheus base URL")
	var expect, absent multiFlag
	fs.Var(&expect, "expect", "ALERTS selector that must match (repeatable), e.g. 'NcclTriageIbPortDown{node=\"x\"}'")
	fs.Var(&absent, "absent", "ALERTS selector that must not match (repeatable)")
	wait := fs.Duration("wait", 20*time.Second, "how long an expected alert may take to become pending")
	fs.Parse(args)
	sel := regexp.MustCompile(`^(\w+)(\{.*\})?$`)
	query := func(s string) string {
		m := sel.FindStringSubmatch(s)
		if m == nil {
			return ""
		}
		labels := strings.TrimSuffix(strings.TrimPrefix(m[2], "{"), "}")
		if labels != "" {
			labels = "," + labels
		}
		return fmt.Sprintf(`ALERTS{alertname="%s"%s}`, m[1], labels)
	}
	for _, e := range expect {
		r, err := promQuery(*prom, query(e))
		for deadline := time.Now().Add(*wait); (err != nil || len(r.Data.Result) == 0) && time.Now().Before(deadline); {
			time.Sleep(500 * time.Millisecond)
			r, err = promQuery(*prom, query(e))
		}
		c.check(err == nil && r.Status == "success" && len(r.Data.Result) > 0, "alert %s is not pending or firing (%v %s)", e, err, r.Error)
	}
	// An alert that must not be active may be pending for a moment for a scrape that timed out on
	// a loaded machine (NcclTriageAgentDown is up == 0): a rule that disagrees with the metrics
	// stays active, a missed scrape clears at the next one (every few seconds here).
	for _, a := range absent {
		start := time.Now()
		r, err := promQuery(*prom, query(a))
		for deadline := start.Add(*wait); (err != nil || len(r.Data.Result) > 0) && time.Now().Before(deadline); {
			time.Sleep(500 * time.Millisecond)
			r, err = promQuery(*prom, query(a))
		}
		c.check(err == nil && r.Status == "success" && len(r.Data.Result) == 0, "alert %s is active but must not be, for %s (%v %s)", a, *wait, err, r.Error)
		if waited := time.Since(start); err == nil && len(r.Data.Result) == 0 && waited > time.Second {
			fmt.Printf("alert %s was active for %.1f s, then cleared (a scrape missed under load)\n", a, waited.Seconds())
		}
	}
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// runWaitScrapes waits until Prometheus holds at least --samples scrapes of --targets targets.
func runWaitScrapes(c *checker, args []string) {
	fs := flag.NewFlagSet("wait-scrapes", flag.ExitOnError)
	prom := fs.String("prometheus", "", "Prometheus base URL")
	targets := fs.Int("targets", 1, "number of targets")
	samples := fs.Int("samples", 2, "scrapes per target")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait")
	fs.Parse(args)
	q := fmt.Sprintf("count_over_time(up[1m]) >= %d", *samples)
	deadline := time.Now().Add(*timeout)
	n := 0
	for time.Now().Before(deadline) {
		if r, err := promQuery(*prom, q); err == nil && r.Status == "success" {
			if n = len(r.Data.Result); n >= *targets {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.check(n >= *targets, "after %v only %d of %d targets have %d scrapes", *timeout, n, *targets, *samples)
}

// runValue prints the value of a scalar-valued query (the first sample), or 0 when it is empty.
func runValue(c *checker, args []string) {
	fs := flag.NewFlagSet("value", flag.ExitOnError)
	prom := fs.String("prometheus", "", "Prometheus base URL")
	expr := fs.String("expr", "", "PromQL expression")
	fs.Parse(args)
	r, err := promQuery(*prom, *expr)
	if !c.check(err == nil && r.Status == "success", "%s: %v %s", *expr, err, r.Error) {
		return
	}
	v := "0"
	if len(r.Data.Result) > 0 {
		var sample struct {
			Value []interface{} `json:"value"`
		}
		if json.Unmarshal(r.Data.Result[0], &sample) == nil && len(sample.Value) == 2 {
			v, _ = sample.Value[1].(string)
		}
	}
	fmt.Fprintln(os.Stderr, v)
}
