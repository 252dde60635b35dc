package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type alertTests struct {
	Tests []struct {
		Name           string `yaml:"name"`
		AlertRuleTests []struct {
			Alertname string        `yaml:"alertname"`
			ExpAlerts []interface{} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// githubAnchor is the id GitHub gives a Markdown heading: lower case, punctuation other than
// '-' and '_' removed, spaces to '-'.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func readmeAnchors(readme string) (map[string]bool, error) {
	b, err := os.ReadFile(readme)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	heading := regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	inFence := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "```") {
			inFence = !inFence
		}
		if m := heading.FindStringSubmatch(l); m != nil && !inFence {
			anchors[githubAnchor(m[1])] = true
		}
	}
	return anchors, nil
}

// runRules checks the alert rules as a product: every alert documented (summary, a description
// naming the fix, a runbook link to an existing README section), labelled with a severity, and
// covered by promtool unit tests in both directions (a case where it fires and one where it must
// not).
func runRules(c *checker, args []string) {
	fs := flag.NewFlagSet("rules", flag.ExitOnError)
	rulesArg := fs.String("rules", "", "comma-separated rule files")
	testsArg := fs.String("tests", "", "promtool test file")
	readme := fs.String("readme", "", "README with the runbook sections")
	inhibit := fs.String("inhibit", "", "Alertmanager inhibit rules whose alert matchers must name existing alerts")
	fs.Parse(args)
	anchors, err := readmeAnchors(*readme)
	if err != nil {
		c.fatal(err)
		return
	}
	alerts := map[string]bool{}
	alertLabels := map[string]map[string]string{}
	for _, f := range strings.Split(*rulesArg, ",") {
		b, err := os.ReadFile(f)
		if err != nil {
			c.fatal(err)
			return
		}
		var rf ruleFile
		if err := yaml.Unmarshal(b, &rf); err != nil {
			c.fatal(fmt.Errorf("%s: %v", f, err))
			return
		}
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				c.check(!alerts[r.Alert], "%s: alert %s defined twice", f, r.Alert)
				alerts[r.Alert] = true
				c.check(strings.HasPrefix(r.Alert, "NcclTriage"), "%s: alert %s lacks the NcclTriage prefix", f, r.Alert)
				// Severity by basis: a node verdict predicted from host checks warns, one
				// confirmed by probes pages.
				sev := r.Labels["severity"]
				byBasis := `{{ if eq $labels.basis "probes" }}critical{{ else }}warning{{ end }}`
				c.check(sev == "critical" || sev == "warning" || sev == byBasis, "%s: severity %q", r.Alert, sev)
				if strings.Contains(r.Expr, "nccl_triage_node_verdict") && strings.Contains(r.Expr, "basis") {
					c.check(sev == byBasis, "%s: a per-node verdict alert must take its severity from the basis, has %q", r.Alert, sev)
				}
				alertLabels[r.Alert] = r.Labels
				for _, a := range []string{"summary", "description", "runbook_url"} {
					c.check(strings.TrimSpace(r.Annotations[a]) != "", "%s: no %s", r.Alert, a)
				}
				c.check(len(r.Annotations["description"]) >= 120, "%s: description too short to name the fix", r.Alert)
				url := r.Annotations["runbook_url"]
				anchor := url[strings.LastIndex(url, "#")+1:]
				c.check(strings.Contains(url, "docs/alerts.md#") && anchor == strings.ToLower(r.Alert),
					"%s: runbook_url %q does not point at docs/alerts.md#%s", r.Alert, url, strings.ToLower(r.Alert))
				c.check(anchors[anchor], "%s: README has no section with anchor #%s", r.Alert, anchor)
				c.check(strings.Contains(r.Expr, "nccl_triage_") || strings.Contains(r.Expr, "nccl-triage"),
					"%s: expression does not use nccl-triage metrics", r.Alert)
			}
		}
	}
	c.check(len(alerts) > 0, "no alerts found")
	if *inhibit != "" {
		checkInhibitFile(c, *inhibit, alerts, alertLabels)
		// The README's example is the file itself, so what people paste is what is tested.
		ib, err1 := os.ReadFile(*inhibit)
		rd, err2 := os.ReadFile(*readme)
		c.check(err1 == nil && err2 == nil && strings.Contains(string(rd), "```yaml\n"+string(ib)+"```"),
			"README does not show %s verbatim in a yaml block", *inhibit)
	}

	b, err := os.ReadFile(*testsArg)
	if err != nil {
		c.fatal(err)
		return
	}
	var at alertTests
	if err := yaml.Unmarshal(b, &at); err != nil {
		c.fatal(err)
		return
	}
	firing, silent := map[string]int{}, map[string]int{}
	for _, t := range at.Tests {
		for _, a := range t.AlertRuleTests {
			c.check(alerts[a.Alertname], "test %q names unknown alert %s", t.Name, a.Alertname)
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname]++
			} else {
				silent[a.Alertname]++
			}
		}
	}
	names := make([]string, 0, len(alerts))
	for a := range alerts {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, a := range names {
		c.check(firing[a] > 0, "%s: no unit test where it fires", a)
		c.check(silent[a] > 0, "%s: no unit test where it must stay silent", a)
	}
}

// checkInhibitFile checks the Alertmanager inhibit rules against the alerts: every alertname
// matcher selects at least one alert (a renamed alert would otherwise page again), and every
// alert with a static cause label is a target of the fabric-wide rule.
func checkInhibitFile(c *checker, file string, alerts map[string]bool, labels map[string]map[string]string) {
	b, err := os.ReadFile(file)
	if err != nil {
		c.fatal(err)
		return
	}
	var doc struct {
		InhibitRules []struct {
			Source []string `yaml:"source_matchers"`
			Target []string `yaml:"target_matchers"`
			Equal  []string `yaml:"equal"`
		} `yaml:"inhibit_rules"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		c.fatal(fmt.Errorf("%s: %v", file, err))
		return
	}
	c.check(len(doc.InhibitRules) > 0, "%s: no inhibit_rules", file)
	matcher := regexp.MustCompile(`^alertname(=~|=)"(.*)"$`)
	selected := func(m string) []string {
		p := matcher.FindStringSubmatch(m)
		if p == nil {
			return nil
		}
		re := regexp.MustCompile("^(?:" + regexp.QuoteMeta(p[2]) + ")$")
		if p[1] == "=~" {
			re = regexp.MustCompile("^(?:" + p[2] + ")$")
		}
		var out []string
		for a := range alerts {
			if re.MatchString(a) {
				out = append(out, a)
			}
		}
		return out
	}
	fabricTargets := map[string]bool{}
	for i, r := range doc.InhibitRules {
		c.check(len(r.Equal) > 0, "inhibit rule %d has no equal labels: it would inhibit across nodes", i)
		for _, m := range append(append([]string{}, r.Source...), r.Target...) {
			c.check(len(selected(m)) > 0, "inhibit rule %d: matcher %s selects no alert", i, m)
		}
		if len(r.Source) == 1 && len(selected(r.Source[0])) == 1 && selected(r.Source[0])[0] == "NcclTriageFabricWideCause" {
			for _, m := range r.Target {
				for _, a := range selected(m) {
					fabricTargets[a] = true
				}
			}
		}
	}
	for a, l := range labels {
		if l["cause"] != "" {
			c.check(fabricTargets[a], "%s has cause %s but NcclTriageFabricWideCause does not inhibit it", a, l["cause"])
		}
	}
}
