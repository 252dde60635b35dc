package main

// A JSON Schema (draft-07) validator for the keywords the chart's values.schema.json uses. helm
// validates the merged values against the schema before rendering; so does this renderer. A
// keyword outside the supported set is an error in the schema, so the schema cannot silently
// contain a rule that is not enforced here.

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
)

var annotationKeywords = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true,
}

var assertionKeywords = map[string]bool{
	"type": true, "enum": true, "const": true, "required": true, "properties": true,
	"additionalProperties": true, "items": true, "minimum": true, "maximum": true,
	"minLength": true, "pattern": true, "minItems": true, "maxItems": true, "anyOf": true,
	"uniqueItems": true,
}

// ValidateSchema checks values against a schema document and returns every violation found
// (sorted), or an error when the schema itself is malformed or uses an unsupported keyword.
func ValidateSchema(schemaDoc []byte, values interface{}) ([]string, error) {
	var schema interface{}
	if err := json.Unmarshal(schemaDoc, &schema); err != nil {
		return nil, fmt.Errorf("values.schema.json: %v", err)
	}
	if err := checkSchema(schema, "#"); err != nil {
		return nil, err
	}
	var errs []string
	validate(schema, values, "", &errs)
	sort.Strings(errs)
	return errs, nil
}

// checkSchema rejects unknown keywords anywhere in the schema.
func checkSchema(s interface{}, where string) error {
	m, ok := s.(map[string]interface{})
	if !ok {
		if _, isBool := s.(bool); isBool {
			return nil
		}
		return fmt.Errorf("%s: a schema must be an object or a boolean", where)
	}
	for k, v := range m {
		if annotationKeywords[k] {
			continue
		}
		if !assertionKeywords[k] {
			return fmt.Errorf("%s: unsupported schema keyword %q", where, k)
		}
		switch k {
		case "properties":
			props, ok := v.(map[string]interface{})
			if !ok {
				return fmt.Errorf("%s/properties: not an object", where)
			}
			for name, p := range props {
				if err := checkSchema(p, where+"/properties/"+name); err != nil {
					return err
				}
			}
		case "additionalProperties", "items":
			if err := checkSchema(v, where+"/"+k); err != nil {
				return err
			}
		case "anyOf":
			l, ok := v.([]interface{})
			if !ok {
				return fmt.Errorf("%s/anyOf: not an array", where)
			}
			for i, p := range l {
				if err := checkSchema(p, fmt.Sprintf("%s/anyOf/%d", where, i)); err != nil {
					return err
				}
			}
		case "pattern":
			p, ok := v.(string)
			if !ok {
				return fmt.Errorf("%s/pattern: not a string", where)
			}
			if _, err := regexp.Compile(p); err != nil {
				return fmt.Errorf("%s/pattern: %v", where, err)
			}
		case "type":
			for _, t := range typeList(v) {
				if !knownType(t) {
					return fmt.Errorf("%s/type: unknown type %q", where, t)
				}
			}
		}
	}
	return nil
}

func knownType(t string) bool {
	switch t {
	case "null", "boolean", "object", "array", "number", "integer", "string":
		return true
	}
	return false
}

func typeList(v interface{}) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []interface{}:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func typeOf(v interface{}) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case map[string]interface{}:
		return "object"
	case []interface{}:
		return "array"
	case float64:
		if t == math.Trunc(t) && !math.IsInf(t, 0) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	}
	return fmt.Sprintf("%T", v)
}

func display(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

func child(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

func validate(s interface{}, v interface{}, p string, errs *[]string) {
	if b, ok := s.(bool); ok {
		if !b {
			*errs = append(*errs, fmt.Sprintf("%s: not allowed", display(p)))
		}
		return
	}
	m := s.(map[string]interface{})
	if t, ok := m["type"]; ok {
		got := typeOf(v)
		match := false
		for _, want := range typeList(t) {
			if want == got || (want == "number" && got == "integer") {
				match = true
			}
		}
		if !match {
			*errs = append(*errs, fmt.Sprintf("%s: got %s, want %s", display(p), got,
				strings.Join(typeList(t), " or ")))
			return
		}
	}
	if e, ok := m["enum"].([]interface{}); ok {
		found := false
		for _, x := range e {
			if equalJSON(x, v) {
				found = true
			}
		}
		if !found {
			*errs = append(*errs, fmt.Sprintf("%s: %v is not one of %v", display(p), toJSON(v), toJSON(e)))
		}
	}
	if c, ok := m["const"]; ok && !equalJSON(c, v) {
		*errs = append(*errs, fmt.Sprintf("%s: must be %s", display(p), toJSON(c)))
	}
	if anyOf, ok := m["anyOf"].([]interface{}); ok {
		matched := false
		for _, sub := range anyOf {
			var subErrs []string
			validate(sub, v, p, &subErrs)
			if len(subErrs) == 0 {
				matched = true
				break
			}
		}
		if !matched {
			*errs = append(*errs, fmt.Sprintf("%s: matches none of the allowed forms", display(p)))
		}
	}
	switch t := v.(type) {
	case map[string]interface{}:
		if req, ok := m["required"].([]interface{}); ok {
			for _, r := range req {
				if _, present := t[r.(string)]; !present {
					*errs = append(*errs, fmt.Sprintf("%s: missing required property %q", display(p), r))
				}
			}
		}
		props, _ := m["properties"].(map[string]interface{})
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := props[k]; ok {
				validate(ps, t[k], child(p, k), errs)
				continue
			}
			if ap, ok := m["additionalProperties"]; ok {
				if b, isBool := ap.(bool); isBool && !b {
					*errs = append(*errs, fmt.Sprintf("%s: unknown property %q", display(p), k))
					continue
				}
				validate(ap, t[k], child(p, k), errs)
			}
		}
	case []interface{}:
		if n, ok := m["minItems"].(float64); ok && float64(len(t)) < n {
			*errs = append(*errs, fmt.Sprintf("%s: fewer than %v items", display(p), n))
		}
		if n, ok := m["maxItems"].(float64); ok && float64(len(t)) > n {
			*errs = append(*errs, fmt.Sprintf("%s: more than %v items", display(p), n))
		}
		if u, ok := m["uniqueItems"].(bool); ok && u {
			seen := map[string]bool{}
			for _, e := range t {
				k := toJSON(e)
				if seen[k] {
					*errs = append(*errs, fmt.Sprintf("%s: duplicate item %s", display(p), k))
				}
				seen[k] = true
			}
		}
		if items, ok := m["items"]; ok {
			for i, e := range t {
				validate(items, e, fmt.Sprintf("%s[%d]", p, i), errs)
			}
		}
	case float64:
		if n, ok := m["minimum"].(float64); ok && t < n {
			*errs = append(*errs, fmt.Sprintf("%s: %v is below the minimum %v", display(p), t, n))
		}
		if n, ok := m["maximum"].(float64); ok && t > n {
			*errs = append(*errs, fmt.Sprintf("%s: %v is above the maximum %v", display(p), t, n))
		}
	case string:
		if n, ok := m["minLength"].(float64); ok && float64(len([]rune(t))) < n {
			*errs = append(*errs, fmt.Sprintf("%s: shorter than %v characters", display(p), n))
		}
		if pat, ok := m["pattern"].(string); ok {
			if !regexp.MustCompile(pat).MatchString(t) {
				*errs = append(*errs, fmt.Sprintf("%s: %q does not match %s", display(p), t, pat))
			}
		}
	}
}

func equalJSON(a, b interface{}) bool { return toJSON(a) == toJSON(b) }
