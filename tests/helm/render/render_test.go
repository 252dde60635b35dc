package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeChart(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func renderOne(t *testing.T, files map[string]string, overrides string) (string, error) {
	t.Helper()
	c, err := LoadChart(writeChart(t, files))
	if err != nil {
		t.Fatal(err)
	}
	values := c.Values
	if overrides != "" {
		o, err := parseValues([]byte(overrides), "override")
		if err != nil {
			t.Fatal(err)
		}
		values = coalesce(values, o)
	}
	out, _, err := Render(c, values, Release{Name: "rel", Namespace: "ns", Service: "Helm"}, Capabilities{})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, r := range out {
		b.WriteString(r.Content)
	}
	return b.String(), nil
}

const chartYAML = "apiVersion: v2\nname: demo\nversion: 1.0.0\nappVersion: \"2.0\"\n"

func TestCoalesceMergesMapsAndNullDeletes(t *testing.T) {
	base := map[string]interface{}{"a": map[string]interface{}{"x": 1.0, "y": 2.0}, "b": "keep"}
	over := map[string]interface{}{"a": map[string]interface{}{"x": nil, "z": 3.0}}
	got := toJSON(coalesce(base, over))
	if got != `{"a":{"y":2,"z":3},"b":"keep"}` {
		t.Fatalf("coalesce: %s", got)
	}
}

func TestToYamlSortsKeysKeepsIntegersAndDropsTrailingNewline(t *testing.T) {
	v, err := parseValues([]byte("b: 65536\na: 0.5\nc: [x, \"true\"]\n"), "v")
	if err != nil {
		t.Fatal(err)
	}
	got := toYAML(v)
	want := "a: 0.5\nb: 65536\nc:\n  - x\n  - \"true\""
	if got != want {
		t.Fatalf("toYaml:\n%s\nwant\n%s", got, want)
	}
}

func TestIncludeTplRequiredAndChartObjects(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":           chartYAML,
		"values.yaml":          "name: world\nmsg: \"{{ include \\\"demo.greet\\\" . }}\"\n",
		"templates/_h.tpl":     `{{- define "demo.greet" -}}hello {{ .Values.name }}{{- end }}`,
		"templates/a.yaml":     "x: {{ tpl .Values.msg . }}\nchart: {{ .Chart.Name }}-{{ .Chart.AppVersion }}\nrel: {{ .Release.Name }}/{{ .Release.Namespace }}\nmissing: {{ .Values.nope }}\n",
		"templates/empty.yaml": "{{- if false }}never{{ end }}\n",
	}
	out, err := renderOne(t, files, "")
	if err != nil {
		t.Fatal(err)
	}
	want := "x: hello world\nchart: demo-2.0\nrel: rel/ns\nmissing: \n"
	if out != want {
		t.Fatalf("got %q want %q", out, want)
	}
	files["templates/b.yaml"] = `{{ required "name is required" .Values.absent }}`
	if _, err := renderOne(t, files, ""); err == nil || !strings.Contains(err.Error(), "name is required") {
		t.Fatalf("required: %v", err)
	}
}

func TestFilesGlobAsConfigFromYamlAndLookup(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":       chartYAML,
		"values.yaml":      "",
		"files/a.json":     "{\"k\": 1}\n",
		"files/b.txt":      "ignored",
		"files/rules.yaml": "groups:\n  - name: g\n",
		"templates/c.yaml": "data:\n  {{- (.Files.Glob \"files/*.json\").AsConfig | nindent 2 }}\ngroup: {{ (index (.Files.Get \"files/rules.yaml\" | fromYaml).groups 0).name }}\nlookup: {{ len (lookup \"v1\" \"Secret\" \"ns\" \"x\") }}\n",
	}
	out, err := renderOne(t, files, "")
	if err != nil {
		t.Fatal(err)
	}
	want := "data:\n  a.json: |\n    {\"k\": 1}\ngroup: g\nlookup: 0\n"
	if out != want {
		t.Fatalf("got %q want %q", out, want)
	}
}

func TestLookupSeesOnlyASimulatedClusterAndListsItsKinds(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":       chartYAML,
		"values.yaml":      "",
		"templates/l.yaml": "one: {{ with (lookup \"v1\" \"Secret\" \"ns\" \"x\").data }}{{ .token }}{{ end }}\nlist: {{ (lookup \"v1\" \"ConfigMap\" \"ns\" \"\").kind }}\nmissing: {{ len (lookup \"v1\" \"Secret\" \"ns\" \"y\") }}\n",
	}
	defer func() { SimulatedCluster = nil }()
	SimulatedCluster = []map[string]interface{}{{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]interface{}{"namespace": "ns", "name": "x"},
		"data":     map[string]interface{}{"token": "dA=="}}}
	out, err := renderOne(t, files, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "one: dA==\nlist: ConfigMapList\nmissing: 0\n"; out != want {
		t.Fatalf("with a cluster: got %q want %q", out, want)
	}
	SimulatedCluster = nil
	out, err = renderOne(t, files, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "one: \nlist: \nmissing: 0\n"; out != want {
		t.Fatalf("without a cluster (helm template): got %q want %q", out, want)
	}
}

func TestEnvFunctionsAreRemovedAsInHelm(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":       chartYAML,
		"values.yaml":      "",
		"templates/e.yaml": `{{ env "HOME" }}`,
	}
	c, err := LoadChart(writeChart(t, files))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Render(c, c.Values, Release{}, Capabilities{}); err == nil {
		t.Fatal("env must not be available to charts")
	}
}

func TestSchemaValidatesTypesEnumsRequiredAndUnknownKeys(t *testing.T) {
	schema := []byte(`{"type":"object","additionalProperties":false,"required":["a"],
	  "properties":{"a":{"type":"integer","minimum":1},"b":{"type":"string","enum":["x","y"]},
	  "c":{"type":"array","items":{"type":"string","pattern":"^n"}}}}`)
	v, _ := parseValues([]byte("b: z\nc: [no, yes]\nd: 1\n"), "v")
	errs, err := ValidateSchema(schema, v)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(errs, "\n")
	for _, want := range []string{`(root): missing required property "a"`, `b: "z" is not one of`,
		`c[1]: "yes" does not match ^n`, `(root): unknown property "d"`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	ok, _ := parseValues([]byte("a: 2\nb: x\nc: [no]\n"), "v")
	if errs, _ := ValidateSchema(schema, ok); len(errs) != 0 {
		t.Errorf("valid values rejected: %v", errs)
	}
	if _, err := ValidateSchema([]byte(`{"oneOf":[]}`), ok); err == nil {
		t.Error("an unsupported keyword must be an error, not silently ignored")
	}
	wrongType, _ := parseValues([]byte("a: 1.5\n"), "v")
	if errs, _ := ValidateSchema(schema, wrongType); len(errs) == 0 || !strings.Contains(errs[0], "want integer") {
		t.Errorf("1.5 accepted as integer: %v", errs)
	}
}
