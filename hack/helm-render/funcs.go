// funcs.go: the template functions - sprig's, plus those Helm adds
// (include, tpl, required, toYaml, fromYaml, toJson, fromJson, lookup).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"text/template"

	sprig "github.com/Masterminds/sprig"
	"sigs.k8s.io/yaml"
)

// funcMap returns the functions for templates parsed into root; include
// and tpl execute templates of root.
func funcMap(root *template.Template) template.FuncMap {
	f := sprig.TxtFuncMap()
	// sprig's env and expandenv would make the output depend on the
	// caller's environment; Helm removes them too.
	delete(f, "env")
	delete(f, "expandenv")
	f["toYaml"] = func(v interface{}) string {
		data, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(data), "\n")
	}
	f["fromYaml"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["toJson"] = func(v interface{}) string {
		data, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(data)
	}
	f["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if s, ok := v.(string); v == nil || (ok && s == "") {
			return v, errors.New(msg)
		}
		return v, nil
	}
	// Nothing to look up: `helm template` has no cluster either.
	f["lookup"] = func(apiVersion, kind, namespace, name string) map[string]interface{} {
		return map[string]interface{}{}
	}
	f["include"] = func(name string, data interface{}) (string, error) {
		var out bytes.Buffer
		err := root.ExecuteTemplate(&out, name, data)
		return out.String(), err
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		if t, err = t.New("tpl").Parse(text); err != nil {
			return "", err
		}
		var out bytes.Buffer
		err = t.Execute(&out, data)
		return strings.ReplaceAll(out.String(), "<no value>", ""), err
	}
	return f
}
