// Command render renders a helm chart the way `helm template` does, without helm: Go's
// text/template with Sprig (the engine helm is built on) and helm's own functions and objects
// reimplemented in engine.go. Debian 12 packages Sprig but not helm; the chart tests use this.
//
//	render --chart helm/nccl-triage [-f override.yaml]... [--set a.b=c]... \
//	       [--name nccl-triage] [--namespace nccl-triage] [--out FILE] [--notes FILE]
//	       [--dump-values FILE]
//	render --chart helm/nccl-triage -f values.yaml --validate-only
//
// Values: values.yaml merged with each -f file, then each --set, and validated against
// values.schema.json (violations: exit 1, one per line on stderr). Output: one YAML stream with a
// "# Source:" comment per template, as helm prints it.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	var valueFiles, sets, apiVersions multiFlag
	chartDir := flag.String("chart", "", "chart directory")
	name := flag.String("name", "nccl-triage", "release name")
	namespace := flag.String("namespace", "nccl-triage", "release namespace")
	service := flag.String("release-service", "Helm", ".Release.Service")
	upgrade := flag.Bool("is-upgrade", false, "render as an upgrade (.Release.IsUpgrade)")
	kubeVersion := flag.String("kube-version", "v1.29.0", ".Capabilities.KubeVersion")
	out := flag.String("out", "", "write the manifests here instead of stdout")
	notes := flag.String("notes", "", "write the rendered NOTES.txt here")
	validateOnly := flag.Bool("validate-only", false, "only validate the values against the schema")
	dumpValues := flag.String("dump-values", "", "write the merged values (JSON) here")
	flag.Var(&valueFiles, "f", "values file merged over values.yaml (repeatable)")
	flag.Var(&sets, "set", "key.path=value (repeatable)")
	flag.Var(&apiVersions, "api-versions", "API versions the cluster serves (repeatable)")
	cluster := flag.String("cluster", "", "YAML stream of the objects lookup sees (default: no cluster, as `helm template`)")
	flag.Parse()
	if *cluster != "" {
		objs, err := readObjects(*cluster)
		if err != nil {
			fmt.Fprintf(os.Stderr, "render: %v\n", err)
			os.Exit(2)
		}
		SimulatedCluster = objs
	}
	if *chartDir == "" {
		fmt.Fprintln(os.Stderr, "render: --chart is required")
		os.Exit(2)
	}
	if err := run(*chartDir, valueFiles, sets, apiVersions, *name, *namespace, *service, *upgrade,
		*kubeVersion, *out, *notes, *dumpValues, *validateOnly); err != nil {
		fmt.Fprintf(os.Stderr, "render: %v\n", err)
		os.Exit(1)
	}
}

func run(chartDir string, valueFiles, sets, apiVersions []string, name, namespace, service string,
	upgrade bool, kubeVersion, out, notesOut, dumpValues string, validateOnly bool) error {
	chart, err := LoadChart(chartDir)
	if err != nil {
		return err
	}
	values := chart.Values
	for _, f := range valueFiles {
		o, err := readValuesFile(f)
		if err != nil {
			return err
		}
		values = coalesce(values, o)
	}
	for _, s := range sets {
		if err := setValue(values, s); err != nil {
			return err
		}
	}
	if dumpValues != "" {
		if err := os.WriteFile(dumpValues, []byte(toJSON(values)), 0o644); err != nil {
			return err
		}
	}
	if chart.Schema != nil {
		violations, err := ValidateSchema(chart.Schema, values)
		if err != nil {
			return err
		}
		if len(violations) > 0 {
			return fmt.Errorf("values don't meet the specifications of the schema:\n- %s",
				strings.Join(violations, "\n- "))
		}
	}
	if validateOnly {
		return nil
	}
	major, minor := "1", "29"
	if parts := strings.SplitN(strings.TrimPrefix(kubeVersion, "v"), ".", 3); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	apis := VersionSet(append([]string{"v1", "apps/v1", "rbac.authorization.k8s.io/v1",
		"networking.k8s.io/v1", "policy/v1"}, apiVersions...))
	rendered, notes, err := Render(chart, values,
		Release{Name: name, Namespace: namespace, Service: service, IsInstall: !upgrade,
			IsUpgrade: upgrade, Revision: 1},
		Capabilities{KubeVersion: KubeVersion{Version: kubeVersion, Major: major, Minor: minor},
			APIVersions: apis})
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, r := range rendered {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s", r.Name, strings.TrimLeft(r.Content, "\n"))
		if !strings.HasSuffix(r.Content, "\n") {
			b.WriteString("\n")
		}
	}
	if notesOut != "" {
		if err := os.WriteFile(notesOut, []byte(notes), 0o644); err != nil {
			return err
		}
	}
	if out == "" {
		_, err = os.Stdout.WriteString(b.String())
		return err
	}
	return os.WriteFile(out, []byte(b.String()), 0o644)
}
