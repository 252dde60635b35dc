package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
	"time"

	"gopkg.in/yaml.v3"
)

// stormAlert is one alert the storm expects, as promtool and Alertmanager see it.
type stormAlert struct {
	Labels      map[string]string `yaml:"exp_labels" json:"labels"`
	Annotations map[string]string `yaml:"exp_annotations" json:"annotations"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// expandLike renders an alert's label or annotation template the way Prometheus does for the
// templates these rules use in the storm ($labels, if/eq, no query functions).
func expandLike(text string, labels map[string]string) (string, error) {
	t, err := template.New("a").Option("missingkey=zero").Parse("{{$labels := .Labels}}{{$value := .Value}}" + text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = t.Execute(&b, map[string]interface{}{"Labels": labels, "Value": 1.0})
	return b.String(), err
}

// loadRules reads an alert rule file: alert name -> rule.
func loadRules(file string) (map[string]rule, error) {
	rb, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var rf struct {
		Groups []struct {
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(rb, &rf); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	rules := map[string]rule{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			rules[r.Alert] = r
		}
	}
	return rules, nil
}

// expectAlert is the alert a rule raises for one series: the rule's labels and annotations
// expanded over the series' labels (without alertname, as promtool's exp_labels want it).
func expectAlert(c *checker, rules map[string]rule, name string, series map[string]string) stormAlert {
	r, ok := rules[name]
	c.check(ok, "no alert rule %s", name)
	a := stormAlert{Labels: map[string]string{}, Annotations: map[string]string{}}
	for k, v := range series {
		a.Labels[k] = v
	}
	for k, v := range r.Labels {
		s, err := expandLike(v, series)
		c.check(err == nil, "%s label %s: %v", name, k, err)
		a.Labels[k] = s
	}
	for k, v := range r.Annotations {
		s, err := expandLike(v, series)
		c.check(err == nil, "%s annotation %s: %v", name, k, err)
		a.Annotations[k] = s
	}
	return a
}

// runStorm is the alert-storm case: --nodes nodes fail the same host check
// (ib.subnet_manager) and one more node fails another (limits.memlock).
//  1. promtool test rules on a generated test: exactly one NcclTriageFabricWideCause fires, for
//     the shared cause; every per-node alert carries the labels the inhibit rules need.
//  2. Those alerts, posted to a real Alertmanager configured with the inhibit rules: only the
//     fabric-wide alert and the unrelated node's alert are left uninhibited (one page each).
func runStorm(c *checker, args []string) {
	fs := flag.NewFlagSet("storm", flag.ExitOnError)
	rulesArg := fs.String("rules", "", "alert rule file")
	inhibit := fs.String("inhibit", "", "Alertmanager inhibit rules file")
	promtool := fs.String("promtool", "promtool", "promtool binary")
	am := fs.String("alertmanager", "", "Alertmanager binary (empty: the Alertmanager part is skipped)")
	work := fs.String("work", "", "work directory")
	nodes := fs.Int("nodes", 1000, "nodes with the shared cause")
	fs.Parse(args)
	if err := os.MkdirAll(*work, 0o755); err != nil {
		c.fatal(err)
		return
	}
	rules, err := loadRules(*rulesArg)
	if err != nil {
		c.fatal(err)
		return
	}
	expect := func(name string, series map[string]string) stormAlert {
		return expectAlert(c, rules, name, series)
	}
	target := func(i int, node string) string {
		return fmt.Sprintf(`job="nccl-triage-agent",namespace="nccl-triage",instance="10.%d.%d.%d:9500",node="%s"`,
			i/65536, (i/256)%256, i%256, node)
	}
	var series strings.Builder
	add := func(s, values string) { fmt.Fprintf(&series, "      - series: '%s'\n        values: '%s'\n", s, values) }
	var perNode []stormAlert
	for i := 1; i <= *nodes; i++ {
		node := fmt.Sprintf("gpu-%04d", i)
		add(fmt.Sprintf(`nccl_triage_node_verdict{%s,class="ib_resource",basis="checks"}`, target(i, node)), "1x20")
		add(fmt.Sprintf(`nccl_triage_check_status{%s,check="ib.subnet_manager",class="ib_resource",status="fail"}`, target(i, node)), "1x20")
		perNode = append(perNode, expect("NcclTriageNodeIbResource", map[string]string{
			"job": "nccl-triage-agent", "namespace": "nccl-triage", "node": node, "class": "ib_resource",
			"basis": "checks", "cause": "ib.subnet_manager",
			"instance": fmt.Sprintf("10.%d.%d.%d:9500", i/65536, (i/256)%256, i%256)}))
	}
	other := *nodes + 1
	add(fmt.Sprintf(`nccl_triage_node_verdict{%s,class="architecture",basis="checks"}`, target(other, "gpu-other")), "1x20")
	add(fmt.Sprintf(`nccl_triage_check_status{%s,check="limits.memlock",class="architecture",status="fail"}`, target(other, "gpu-other")), "1x20")
	otherAlert := expect("NcclTriageNodeArchitecture", map[string]string{
		"job": "nccl-triage-agent", "namespace": "nccl-triage", "node": "gpu-other", "class": "architecture",
		"basis": "checks", "cause": "limits.memlock",
		"instance": fmt.Sprintf("10.%d.%d.%d:9500", other/65536, (other/256)%256, other%256)})
	// The fabric-wide alert's value is a fraction; its annotations are checked in alerts_test.yaml,
	// here only its labels (promtool compares annotations, so they are rendered with the value).
	fw := stormAlert{Labels: map[string]string{"severity": "critical", "namespace": "nccl-triage",
		"cause": "ib.subnet_manager", "class": "ib_resource"}}
	toYAML := func(v interface{}) string {
		b, _ := yaml.Marshal(v)
		return string(b)
	}
	abs, _ := filepath.Abs(*rulesArg)
	test := fmt.Sprintf(`rule_files: [%q]
evaluation_interval: 1m
tests:
  - name: %d nodes with one cause, one node with another
    interval: 1m
    input_series:
%s    alert_rule_test:
      - eval_time: 16m
        alertname: NcclTriageNodeIbResource
        exp_alerts:
%s      - eval_time: 16m
        alertname: NcclTriageNodeArchitecture
        exp_alerts:
%s`, abs, *nodes, series.String(), indent(toYAML(perNode), 10), indent(toYAML([]stormAlert{otherAlert}), 10))
	testFile := filepath.Join(*work, "storm_test.yaml")
	if err := os.WriteFile(testFile, []byte(test), 0o644); err != nil {
		c.fatal(err)
		return
	}
	out, err := exec.Command(*promtool, "test", "rules", testFile).CombinedOutput()
	c.check(err == nil, "promtool test rules %s: %v\n%s", testFile, err, tail(string(out), 3000))
	// The fabric-wide alert: promtool's unit tests compare annotations too, so it is asked from a
	// query test instead (one series, the shared cause, 1000 of 1001 nodes).
	q := fmt.Sprintf(`rule_files: [%q]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
%s    promql_expr_test:
      - expr: ALERTS{alertname="NcclTriageFabricWideCause",alertstate="firing"}
        eval_time: 16m
        exp_samples:
          - labels: 'ALERTS{alertname="NcclTriageFabricWideCause",alertstate="firing",severity="critical",namespace="nccl-triage",cause="ib.subnet_manager",class="ib_resource"}'
            value: 1
`, abs, series.String())
	qFile := filepath.Join(*work, "storm_fabric_wide_test.yaml")
	if err := os.WriteFile(qFile, []byte(q), 0o644); err != nil {
		c.fatal(err)
		return
	}
	out, err = exec.Command(*promtool, "test", "rules", qFile).CombinedOutput()
	c.check(err == nil, "one NcclTriageFabricWideCause alert expected for %d nodes: %v\n%s", *nodes, err, tail(string(out), 3000))

	if *am == "" {
		c.skipped++
		fmt.Println("SKIP the Alertmanager part: no Alertmanager binary (Debian prometheus-alertmanager)")
		return
	}
	all := append(append([]stormAlert{fw}, perNode...), otherAlert)
	for i := range all {
		all[i].Labels["alertname"] = alertName(all[i], perNode, otherAlert)
	}
	left, inhibited, err := alertmanagerInhibition(*am, *inhibit, *work, all, "cause", 2)
	if !c.check(err == nil, "alertmanager: %v", err) {
		return
	}
	sort.Strings(left)
	want := []string{"NcclTriageFabricWideCause/ib.subnet_manager", "NcclTriageNodeArchitecture/limits.memlock"}
	c.check(strings.Join(left, " ") == strings.Join(want, " "),
		"uninhibited alerts %v, want %v (one page for the shared cause, one for the other node)", left, want)
	c.check(inhibited == *nodes, "%d alerts inhibited, want the %d per-node ones", inhibited, *nodes)
	fmt.Printf("storm: %d nodes with ib.subnet_manager + 1 with limits.memlock: %d alerts, %d inhibited, %d left: %v\n",
		*nodes, len(all), inhibited, len(left), left)
}

func alertName(a stormAlert, perNode []stormAlert, other stormAlert) string {
	switch {
	case a.Labels["basis"] == "" && a.Labels["node"] == "":
		return "NcclTriageFabricWideCause"
	case a.Labels["node"] == other.Labels["node"]:
		return "NcclTriageNodeArchitecture"
	default:
		return "NcclTriageNodeIbResource"
	}
}

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(pad + l + "\n")
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// writeAlertmanagerConfig writes work/alertmanager.yml: one receiver that sends nothing, every
// alert in a group of its own, and the inhibit rules.
func writeAlertmanagerConfig(inhibitRules []byte, work string) (string, error) {
	cfg := "route:\n  receiver: none\n  group_by: ['...']\nreceivers:\n  - name: none\n" + string(inhibitRules)
	cfgFile := filepath.Join(work, "alertmanager.yml")
	return cfgFile, os.WriteFile(cfgFile, []byte(cfg), 0o644)
}

// alertmanagerInhibition starts Alertmanager on loopback with the inhibit rules, posts the
// alerts and returns "alertname/<label>" of those neither inhibited nor silenced (label: cause in
// the storm), and the number inhibited. It waits until no more than wantLeft are left or 20 s.
func alertmanagerInhibition(bin, inhibitFile, work string, alerts []stormAlert, label string, wantLeft int) ([]string, int, error) {
	ib, err := os.ReadFile(inhibitFile)
	if err != nil {
		return nil, 0, err
	}
	cfgFile, err := writeAlertmanagerConfig(ib, work)
	if err != nil {
		return nil, 0, err
	}
	// Alertmanager binds after it has loaded its configuration; the port can be taken by then.
	// A port below the ephemeral range (lowPort) makes that rare, a second try makes it harmless.
	var addr string
	var logFile *os.File
	for attempt := 1; ; attempt++ {
		addr, err = lowPort()
		if err != nil {
			return nil, 0, err
		}
		logFile, err = os.Create(filepath.Join(work, "alertmanager.log"))
		if err != nil {
			return nil, 0, err
		}
		cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.path="+filepath.Join(work, "am-data"),
			"--web.listen-address="+addr, "--cluster.listen-address=")
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			logFile.Close()
			return nil, 0, err
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		answered := waitAnswer("http://"+addr+"/api/v2/status", exited, 30*time.Second)
		if answered {
			defer func() {
				cmd.Process.Kill()
				<-exited
				logFile.Close()
			}()
			break
		}
		cmd.Process.Kill()
		<-exited
		logFile.Close()
		if attempt == 3 {
			return nil, 0, fmt.Errorf("Alertmanager did not answer on %s (log: %s)", addr, logFile.Name())
		}
	}
	base := "http://" + addr + "/api/v2"
	client := http.Client{Timeout: 10 * time.Second}
	type postable struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		StartsAt    time.Time         `json:"startsAt"`
	}
	var body []postable
	now := time.Now().UTC()
	for _, a := range alerts {
		body = append(body, postable{a.Labels, a.Annotations, now})
	}
	b, _ := json.Marshal(body)
	r, err := client.Post(base+"/alerts", "application/json", bytes.NewReader(b))
	if err != nil {
		return nil, 0, err
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		return nil, 0, fmt.Errorf("POST /alerts: HTTP %d", r.StatusCode)
	}
	// Inhibition is evaluated as alerts arrive; poll until every posted alert is listed.
	var left []string
	inhibited := 0
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		r, err := client.Get(base + "/alerts")
		if err != nil {
			continue
		}
		var got []struct {
			Labels map[string]string `json:"labels"`
			Status struct {
				InhibitedBy []string `json:"inhibitedBy"`
				SilencedBy  []string `json:"silencedBy"`
			} `json:"status"`
		}
		err = json.NewDecoder(r.Body).Decode(&got)
		r.Body.Close()
		if err != nil || len(got) < len(alerts) {
			continue
		}
		left, inhibited = nil, 0
		for _, a := range got {
			if len(a.Status.InhibitedBy) > 0 {
				inhibited++
			} else if len(a.Status.SilencedBy) == 0 {
				left = append(left, a.Labels["alertname"]+"/"+a.Labels[label])
			}
		}
		if len(left) <= wantLeft {
			break
		}
	}
	return left, inhibited, nil
}

// lowPort returns a free loopback address whose port lies below the kernel's ephemeral range: a
// port inside it can be the local end of an outgoing connection of the machine's other tests by
// the time a server binds it.
func lowPort() (string, error) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		fmt.Sscan(string(b), &low)
	}
	floor := 10000
	if low <= floor+2000 {
		floor = 1024
	}
	span := low - floor - 1000
	start := floor + (os.Getpid()*7919+int(time.Now().UnixNano()/1000))%span
	for i := 0; i < span; i++ {
		addr := fmt.Sprintf("127.0.0.1:%d", floor+(start-floor+i)%span)
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr, nil
		}
	}
	return "", fmt.Errorf("no free loopback port between %d and %d", floor, floor+span)
}

// waitAnswer polls url until it answers 200 (true), the process behind it exits or limit passes.
func waitAnswer(url string, exited <-chan struct{}, limit time.Duration) bool {
	client := http.Client{Timeout: 10 * time.Second}
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
		if r, err := client.Get(url); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return true
			}
		}
		select {
		case <-exited:
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}
