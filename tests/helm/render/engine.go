package main

// The template engine helm uses, rebuilt from its parts: Go's text/template with the Sprig
// function library, plus the functions and objects helm adds (include, tpl, required, lookup,
// toYaml/fromYaml/toJson/fromJson, .Files, .Release, .Chart, .Capabilities, .Template).
// Behaviour copied from helm 3 where it is visible to a chart: missing keys render as empty,
// "<no value>" is erased, toYaml goes through JSON (sorted keys, no trailing newline), files
// named _*.tpl only define templates, lookup answers "not found" (as `helm template` does) unless
// a cluster is simulated (SimulatedCluster, the renderer's --cluster).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"gopkg.in/yaml.v3"
)

// Chart is a chart directory loaded into memory.
type Chart struct {
	Name      string
	Metadata  map[string]interface{} // Chart.yaml as exposed to templates (.Chart.Name, ...)
	Templates map[string]string      // "<chart>/templates/<file>" -> source
	Files     Files                  // every other file, by path relative to the chart
	Values    map[string]interface{} // values.yaml
	Schema    []byte                 // values.schema.json, nil when absent
}

// Files is .Files: the chart's non-template files.
type Files map[string][]byte

// Get returns a file's content, or "" when it does not exist (as helm does).
func (f Files) Get(name string) string { return string(f[name]) }

// GetBytes returns a file's content as bytes.
func (f Files) GetBytes(name string) []byte { return f[name] }

// Glob returns the files whose path matches a shell pattern ('*' does not cross '/').
func (f Files) Glob(pattern string) Files {
	out := Files{}
	for name, b := range f {
		if ok, err := path.Match(pattern, name); err == nil && ok {
			out[name] = b
		}
	}
	return out
}

// Lines returns a file split into lines.
func (f Files) Lines(name string) []string {
	s := strings.TrimSuffix(string(f[name]), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// AsConfig renders the files as ConfigMap data: base name -> content.
func (f Files) AsConfig() string {
	m := map[string]string{}
	for name, b := range f {
		m[path.Base(name)] = string(b)
	}
	return toYAML(m)
}

// AsSecrets renders the files as Secret data: base name -> base64 content.
func (f Files) AsSecrets() string {
	m := map[string]string{}
	for name, b := range f {
		m[path.Base(name)] = base64.StdEncoding.EncodeToString(b)
	}
	return toYAML(m)
}

// Release is .Release.
type Release struct {
	Name      string
	Namespace string
	Service   string
	IsInstall bool
	IsUpgrade bool
	Revision  int
}

// VersionSet is .Capabilities.APIVersions.
type VersionSet []string

// Has reports whether an API version ("policy/v1") or kind ("policy/v1/PodDisruptionBudget") is
// served.
func (v VersionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

// KubeVersion is .Capabilities.KubeVersion.
type KubeVersion struct {
	Version string
	Major   string
	Minor   string
}

// String returns the version as helm prints it.
func (k KubeVersion) String() string { return k.Version }

// GitVersion is kept for charts written against helm 2.
func (k KubeVersion) GitVersion() string { return k.Version }

// Capabilities is .Capabilities.
type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
}

// LoadChart reads a chart directory.
func LoadChart(dir string) (*Chart, error) {
	c := &Chart{Templates: map[string]string{}, Files: Files{}}
	meta, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	var raw map[string]interface{}
	if err := yaml.Unmarshal(meta, &raw); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %v", err)
	}
	c.Metadata = map[string]interface{}{}
	for k, v := range raw {
		// helm exposes Chart.yaml fields capitalised: name -> .Chart.Name, appVersion -> .Chart.AppVersion.
		c.Metadata[strings.ToUpper(k[:1])+k[1:]] = v
	}
	name, _ := raw["name"].(string)
	if name == "" {
		return nil, fmt.Errorf("Chart.yaml: no name")
	}
	c.Name = name
	if c.Values, err = readValuesFile(filepath.Join(dir, "values.yaml")); err != nil {
		return nil, err
	}
	if b, err := os.ReadFile(filepath.Join(dir, "values.schema.json")); err == nil {
		c.Schema = b
	}
	ignore := readHelmignore(dir)
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if info.IsDir() {
			if rel != "." && ignored(ignore, rel+"/") {
				return filepath.SkipDir
			}
			return nil
		}
		if ignored(ignore, rel) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(rel, "templates/"):
			c.Templates[name+"/"+rel] = string(b)
		case rel == "Chart.yaml" || rel == "values.yaml" || rel == "values.schema.json":
		default:
			c.Files[rel] = b
		}
		return nil
	})
	return c, err
}

// readHelmignore reads the chart's .helmignore (shell patterns, one a line, '#' comments).
func readHelmignore(dir string) []string {
	b, err := os.ReadFile(filepath.Join(dir, ".helmignore"))
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func ignored(patterns []string, rel string) bool {
	base := path.Base(strings.TrimSuffix(rel, "/"))
	for _, p := range patterns {
		if strings.HasSuffix(p, "/") {
			if strings.HasSuffix(rel, "/") {
				if ok, _ := path.Match(strings.TrimSuffix(p, "/"), base); ok {
					return true
				}
			}
			continue
		}
		if ok, _ := path.Match(p, base); ok {
			return true
		}
		if ok, _ := path.Match(p, strings.TrimSuffix(rel, "/")); ok {
			return true
		}
	}
	return false
}

// toYAML is helm's toYaml: through JSON, two-space indent, no trailing newline, "" on error.
func toYAML(v interface{}) string {
	j, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	var n interface{}
	if err := yaml.Unmarshal(j, &n); err != nil {
		return ""
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func fromYAML(s string) map[string]interface{} {
	m, err := parseValues([]byte(s), "fromYaml")
	if err != nil {
		return map[string]interface{}{"Error": err.Error()}
	}
	return m
}

func fromYAMLArray(s string) []interface{} {
	var raw interface{}
	if err := yaml.Unmarshal([]byte(s), &raw); err != nil {
		return []interface{}{err.Error()}
	}
	n, err := jsonNormalize(raw)
	if err != nil {
		return []interface{}{err.Error()}
	}
	l, ok := n.([]interface{})
	if !ok {
		return []interface{}{"not an array"}
	}
	return l
}

func toJSON(v interface{}) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromJSONArray(s string) []interface{} {
	var l []interface{}
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return []interface{}{err.Error()}
	}
	return l
}

// Engine renders one chart with one set of values.
type Engine struct {
	chart *Chart
	tmpl  *template.Template
}

const recursionLimit = 1000

// newEngine parses every template of the chart into one set, with helm's functions.
func newEngine(c *Chart) (*Engine, error) {
	e := &Engine{chart: c}
	t := template.New("gotpl").Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	// helm removes these two: a chart must not read the renderer's environment.
	delete(funcs, "env")
	delete(funcs, "expandenv")
	depth := map[string]int{}
	funcs["include"] = func(name string, data interface{}) (string, error) {
		depth[name]++
		defer func() { depth[name]-- }()
		if depth[name] > recursionLimit {
			return "", fmt.Errorf("include %q: recursion limit reached", name)
		}
		var buf strings.Builder
		if err := e.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		clone, err := e.tmpl.Clone()
		if err != nil {
			return "", err
		}
		t, err := clone.New("tpl").Parse(text)
		if err != nil {
			return "", fmt.Errorf("tpl: %v", err)
		}
		var buf strings.Builder
		if err := t.Execute(&buf, data); err != nil {
			return "", fmt.Errorf("tpl: %v", err)
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return nil, fmt.Errorf("%s", msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	funcs["lookup"] = Lookup
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = fromYAML
	funcs["fromYamlArray"] = fromYAMLArray
	funcs["toJson"] = toJSON
	funcs["fromJson"] = fromJSON
	funcs["fromJsonArray"] = fromJSONArray
	t.Funcs(funcs)

	names := make([]string, 0, len(c.Templates))
	for n := range c.Templates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := t.New(n).Parse(c.Templates[n]); err != nil {
			return nil, err
		}
	}
	e.tmpl = t
	return e, nil
}

// Rendered is one rendered template file.
type Rendered struct {
	Name    string // "<chart>/templates/<file>"
	Content string
}

// Render executes every template that is not a partial and returns the non-empty results in name
// order, plus NOTES.txt separately.
func Render(c *Chart, values map[string]interface{}, rel Release, caps Capabilities) ([]Rendered, string, error) {
	e, err := newEngine(c)
	if err != nil {
		return nil, "", err
	}
	names := make([]string, 0, len(c.Templates))
	for n := range c.Templates {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Rendered
	notes := ""
	for _, n := range names {
		base := path.Base(n)
		if strings.HasPrefix(base, "_") {
			continue
		}
		data := map[string]interface{}{
			"Values":       values,
			"Release":      rel,
			"Chart":        c.Metadata,
			"Capabilities": caps,
			"Files":        c.Files,
			"Template": map[string]interface{}{
				"Name":     n,
				"BasePath": c.Name + "/templates",
			},
		}
		var buf strings.Builder
		if err := e.tmpl.ExecuteTemplate(&buf, n, data); err != nil {
			return nil, "", err
		}
		s := strings.ReplaceAll(buf.String(), "<no value>", "")
		if base == "NOTES.txt" {
			notes = s
			continue
		}
		if strings.TrimSpace(s) == "" {
			continue
		}
		out = append(out, Rendered{Name: n, Content: s})
	}
	return out, notes, nil
}

// SimulatedCluster holds the objects lookup can see; nil means no cluster at all (`helm template`:
// every lookup answers an empty map, lists included), which is how a chart tells the two apart.
var SimulatedCluster []map[string]interface{}

// Lookup is helm's lookup: one object by name, or "<Kind>List" with the matching items when name
// is empty (namespace "" for every namespace or a cluster-scoped kind).
func Lookup(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
	if SimulatedCluster == nil {
		return map[string]interface{}{}, nil
	}
	var items []interface{}
	for _, o := range SimulatedCluster {
		meta, _ := o["metadata"].(map[string]interface{})
		if o["apiVersion"] != apiVersion || o["kind"] != kind {
			continue
		}
		if namespace != "" && meta["namespace"] != namespace {
			continue
		}
		if name != "" {
			if meta["name"] == name {
				return o, nil
			}
			continue
		}
		items = append(items, o)
	}
	if name != "" {
		return map[string]interface{}{}, nil
	}
	if items == nil {
		items = []interface{}{}
	}
	return map[string]interface{}{"apiVersion": apiVersion, "kind": kind + "List", "items": items}, nil
}
