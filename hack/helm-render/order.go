// order.go: the order `helm template` prints manifests in - by kind, the
// order Helm installs them (so a Namespace or ServiceAccount comes before
// what uses it), then unknown kinds, each group in template order.
package main

import (
	"regexp"
	"sort"
	"strings"
)

var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
	"PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
	"ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
	"CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
	"ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
	"DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
	"APIService",
}

type manifest struct {
	source string // chart/templates/file.yaml
	kind   string
	text   string
}

var (
	docSep  = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)
	kindKey = regexp.MustCompile(`(?m)^kind:[ \t]*["']?([A-Za-z0-9]+)`)
)

// splitManifests cuts a rendered template into its YAML documents,
// dropping empty ones.
func splitManifests(source, text string) []manifest {
	var out []manifest
	for _, doc := range docSep.Split(text, -1) {
		doc = strings.TrimSpace(doc)
		if doc == "" || isOnlyComments(doc) {
			continue
		}
		m := manifest{source: source, text: doc}
		if k := kindKey.FindStringSubmatch(doc); k != nil {
			m.kind = k[1]
		}
		out = append(out, m)
	}
	return out
}

func isOnlyComments(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

func sortManifests(ms []manifest) {
	rank := map[string]int{}
	for i, k := range installOrder {
		rank[k] = i
	}
	pos := func(kind string) int {
		if r, ok := rank[kind]; ok {
			return r
		}
		return len(installOrder)
	}
	sort.SliceStable(ms, func(i, j int) bool { return pos(ms[i].kind) < pos(ms[j].kind) })
}
