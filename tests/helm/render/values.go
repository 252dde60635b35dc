package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Values are handled the way helm handles them: YAML is read through JSON, so every number is a
// float64 and every map is map[string]interface{}. Rendering the same numbers back with toYaml
// then gives what helm gives (65536, not 65536.0).

// jsonNormalize converts a decoded YAML tree into the JSON data model.
func jsonNormalize(v interface{}) (interface{}, error) {
	b, err := json.Marshal(yamlToJSONCompatible(v))
	if err != nil {
		return nil, err
	}
	var out interface{}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// yamlToJSONCompatible turns map[interface{}]interface{} (which encoding/json rejects) into
// map[string]interface{}; yaml.v3 already produces string keys for string-keyed maps, but a key
// such as `1:` decodes as int.
func yamlToJSONCompatible(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, e := range t {
			m[k] = yamlToJSONCompatible(e)
		}
		return m
	case map[interface{}]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = yamlToJSONCompatible(e)
		}
		return m
	case []interface{}:
		l := make([]interface{}, len(t))
		for i, e := range t {
			l[i] = yamlToJSONCompatible(e)
		}
		return l
	default:
		return v
	}
}

// readValuesFile reads a YAML values file into a JSON-model map (empty file: empty map).
func readValuesFile(path string) (map[string]interface{}, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseValues(b, path)
}

func parseValues(b []byte, name string) (map[string]interface{}, error) {
	var raw interface{}
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if raw == nil {
		return map[string]interface{}{}, nil
	}
	return toObject(raw, name, "top level")
}

// toObject is one decoded YAML document as a JSON-model map.
func toObject(raw interface{}, name, what string) (map[string]interface{}, error) {
	n, err := jsonNormalize(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	m, ok := n.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("%s: %s is not a map", name, what)
	}
	return m, nil
}

// coalesce merges override into base the way helm merges user values into the chart's defaults:
// maps merge recursively, any other value replaces, and an explicit null deletes the key.
func coalesce(base, override map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range override {
		if v == nil {
			delete(out, k)
			continue
		}
		bm, bok := out[k].(map[string]interface{})
		om, ook := v.(map[string]interface{})
		if bok && ook {
			out[k] = coalesce(bm, om)
		} else {
			out[k] = v
		}
	}
	return out
}

// setValue applies one --set style assignment (dotted path = YAML scalar).
func setValue(values map[string]interface{}, assignment string) error {
	eq := strings.Index(assignment, "=")
	if eq <= 0 {
		return fmt.Errorf("--set %q: want key.path=value", assignment)
	}
	var parsed interface{}
	if err := yaml.Unmarshal([]byte(assignment[eq+1:]), &parsed); err != nil {
		return fmt.Errorf("--set %q: %v", assignment, err)
	}
	norm, err := jsonNormalize(parsed)
	if err != nil {
		return err
	}
	keys := strings.Split(assignment[:eq], ".")
	m := values
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]interface{})
		if !ok {
			next = map[string]interface{}{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = norm
	return nil
}

// readObjects reads a YAML stream of Kubernetes objects (the renderer's --cluster); an empty
// stream is a cluster with nothing in it, which lookup can still see.
func readObjects(path string) ([]map[string]interface{}, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := []map[string]interface{}{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var raw interface{}
		if err := dec.Decode(&raw); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if raw == nil {
			continue
		}
		m, err := toObject(raw, path, "a document")
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
}
