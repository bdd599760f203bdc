// values.go: the values a chart is rendered with - the chart's values.yaml,
// then each -f file, then each --set, merged as Helm merges them (maps
// deep-merged, anything else replaced, null deletes a key).
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

type values = map[string]interface{}

// readValues reads a YAML file of values; a missing file is an error only
// when required is set (a chart need not have values.yaml).
func readValues(path string, required bool) (values, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if !required && os.IsNotExist(err) {
			return values{}, nil
		}
		return nil, err
	}
	v := values{}
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return v, nil
}

// mergeValues merges src into dst and returns dst.
func mergeValues(dst, src values) values {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		sm, sIsMap := sv.(map[string]interface{})
		dm, dIsMap := dst[k].(map[string]interface{})
		if sIsMap && dIsMap {
			dst[k] = mergeValues(dm, sm)
		} else {
			dst[k] = sv
		}
	}
	return dst
}

// applySet applies one --set argument: comma-separated key.path=value
// pairs (a backslash escapes a comma, dot or equals sign).
func applySet(v values, arg string) error {
	for _, pair := range splitUnescaped(arg, ',') {
		kv := splitUnescaped(pair, '=')
		if len(kv) != 2 || kv[0] == "" {
			return fmt.Errorf("--set %q: want key.path=value", pair)
		}
		path := splitUnescaped(kv[0], '.')
		for i := range path {
			path[i] = unescape(path[i])
			if path[i] == "" {
				return fmt.Errorf("--set %q: empty key in %q", pair, kv[0])
			}
		}
		m := v
		for _, k := range path[:len(path)-1] {
			next, ok := m[k].(map[string]interface{})
			if !ok {
				next = values{}
				m[k] = next
			}
			m = next
		}
		last := path[len(path)-1]
		if val := typedValue(unescape(kv[1])); val == nil {
			delete(m, last)
		} else {
			m[last] = val
		}
	}
	return nil
}

// typedValue types a --set value as Helm does: true, false, null and
// integers without a leading zero; everything else stays a string.
func typedValue(s string) interface{} {
	switch s {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if s == "0" || (len(s) > 0 && s[0] != '0' && !strings.HasPrefix(s, "-0")) {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	return s
}

// splitUnescaped splits s at every sep not preceded by a backslash; the
// escapes stay in the parts (unescape removes them).
func splitUnescaped(s string, sep byte) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == sep {
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
