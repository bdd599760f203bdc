// helm-render prints a Helm chart's manifests the way `helm template`
// does, for machines without helm: the chart's templates executed with Go's
// text/template and the sprig functions (Helm's engine), Helm's own
// functions, and its built-in objects (.Values, .Chart, .Release,
// .Capabilities, .Template). Built by hack/chart-render.sh from Debian's
// packages only.
//
//	helm-render [--name NAME] [--namespace NS] [--kube-version V]
//	            [--include-crds] [-f values.yaml]... [--set k.p=v,...]... CHART_DIR
//
// .Files offers Get and GetBytes over the chart's files outside templates/
// (Helm's other .Files methods are refused with a message). Not supported:
// subcharts (charts/ or dependencies in Chart.yaml).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/semver"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// chartFiles is .Files: the chart's files outside templates/, by path
// relative to the chart (as Helm loads them; .helmignore'd editor files
// aside).
type chartFiles map[string][]byte

// Get returns a file's text, "" when there is none (as Helm does).
func (f chartFiles) Get(name string) string { return string(f[name]) }

// GetBytes returns a file's bytes, nil when there is none.
func (f chartFiles) GetBytes(name string) []byte { return f[name] }

func readFiles(dir string) (chartFiles, error) {
	files := chartFiles{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "templates" {
				return filepath.SkipDir
			}
			return nil
		}
		base := path.Base(rel)
		if base == ".helmignore" || strings.HasSuffix(base, "~") ||
			strings.HasSuffix(base, ".swp") || strings.HasSuffix(base, ".orig") {
			return nil
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = text
		return nil
	})
	return files, err
}

// apiVersions is .Capabilities.APIVersions: what the (absent) cluster serves.
type apiVersions []string

func (a apiVersions) Has(v string) bool {
	for _, x := range a {
		if x == v {
			return true
		}
	}
	return false
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "helm-render:", err)
		os.Exit(1)
	}
}

func run() error {
	var files, sets, apis listFlag
	name := flag.String("name", "release-name", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	kubeVersion := flag.String("kube-version", "v1.31.0", "Kubernetes version for .Capabilities and the chart's kubeVersion")
	crds := flag.Bool("include-crds", false, "print the chart's crds/ first")
	flag.Var(&files, "f", "values file (repeatable)")
	flag.Var(&sets, "set", "key.path=value[,key.path=value] (repeatable)")
	flag.Var(&apis, "api-versions", "an API version the cluster serves, for .Capabilities.APIVersions.Has (repeatable)")
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	dir := flag.Arg(0)

	chart, err := readValues(filepath.Join(dir, "Chart.yaml"), true)
	if err != nil {
		return err
	}
	chartName, _ := chart["name"].(string)
	if chartName == "" {
		return fmt.Errorf("%s: Chart.yaml has no name", dir)
	}
	if deps, ok := chart["dependencies"]; ok && deps != nil {
		return errors.New("subcharts (Chart.yaml dependencies) are not supported")
	}
	if _, err := os.Stat(filepath.Join(dir, "charts")); err == nil {
		return errors.New("subcharts (a charts/ folder) are not supported")
	}
	kv, err := semver.NewVersion(*kubeVersion)
	if err != nil {
		return fmt.Errorf("--kube-version %q: %v", *kubeVersion, err)
	}
	if want, _ := chart["kubeVersion"].(string); want != "" {
		c, err := semver.NewConstraint(want)
		if err != nil {
			return fmt.Errorf("Chart.yaml kubeVersion %q: %v", want, err)
		}
		if !c.Check(kv) {
			return fmt.Errorf("chart requires kubeVersion %s, which is incompatible with Kubernetes %s", want, kv.Original())
		}
	}

	vals, err := readValues(filepath.Join(dir, "values.yaml"), false)
	if err != nil {
		return err
	}
	for _, f := range files {
		v, err := readValues(f, true)
		if err != nil {
			return err
		}
		vals = mergeValues(vals, v)
	}
	for _, s := range sets {
		if err := applySet(vals, s); err != nil {
			return err
		}
	}

	// Chart.yaml's keys as Helm's Chart object names them: appVersion -> AppVersion.
	chartObj := map[string]interface{}{}
	for k, v := range chart {
		chartObj[strings.ToUpper(k[:1])+k[1:]] = v
	}
	chartFiles, err := readFiles(dir)
	if err != nil {
		return err
	}
	top := map[string]interface{}{
		"Values": vals,
		"Chart":  chartObj,
		"Files":  chartFiles,
		"Release": map[string]interface{}{
			"Name": *name, "Namespace": *namespace, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1,
		},
		"Capabilities": map[string]interface{}{
			"KubeVersion": map[string]interface{}{
				"Version": kv.Original(), "Major": fmt.Sprint(kv.Major()), "Minor": fmt.Sprint(kv.Minor()),
				"GitVersion": kv.Original(),
			},
			"APIVersions": apiVersions(apis),
		},
	}

	names, root, err := parseTemplates(dir, chartName)
	if err != nil {
		return err
	}
	var out []manifest
	if *crds {
		if out, err = readCRDs(dir, chartName); err != nil {
			return err
		}
	}
	var rendered []manifest
	for _, n := range names {
		base := path.Base(n)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		data := map[string]interface{}{}
		for k, v := range top {
			data[k] = v
		}
		data["Template"] = map[string]interface{}{"Name": n, "BasePath": path.Join(chartName, "templates")}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, n, data); err != nil {
			return err
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		rendered = append(rendered, splitManifests(n, text)...)
	}
	sortManifests(rendered)
	for _, m := range append(out, rendered...) {
		fmt.Printf("---\n# Source: %s\n%s\n", m.source, m.text)
	}
	return nil
}

// parseTemplates parses every file under templates/ into one template set,
// each named chart/templates/<path>, and returns the names in order.
func parseTemplates(dir, chartName string) ([]string, *template.Template, error) {
	root := template.New(chartName).Option("missingkey=zero")
	root.Funcs(funcMap(root))
	var names []string
	tdir := filepath.Join(dir, "templates")
	err := filepath.WalkDir(tdir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range []string{"Glob", "AsConfig", "AsSecrets", "Lines"} {
			if bytes.Contains(text, []byte(".Files."+m)) {
				return fmt.Errorf("%s: .Files.%s is not supported (Get and GetBytes are)", p, m)
			}
		}
		rel, _ := filepath.Rel(tdir, p)
		n := path.Join(chartName, "templates", filepath.ToSlash(rel))
		if _, err := root.New(n).Parse(string(text)); err != nil {
			return err
		}
		names = append(names, n)
		return nil
	})
	sort.Strings(names)
	return names, root, err
}

// readCRDs returns the chart's crds/*.yaml as manifests, unrendered, as
// `helm template --include-crds` prints them.
func readCRDs(dir, chartName string) ([]manifest, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "crds", "*.y*ml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []manifest
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, splitManifests(path.Join(chartName, "crds", filepath.Base(p)), string(text))...)
	}
	return out, nil
}
