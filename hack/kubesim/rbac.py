"""--rbac: authorization of non-admin users (--user TOKEN=NAME[:GROUPS])
by the RBAC objects stored in the simulator (ClusterRole, Role,
ClusterRoleBinding, RoleBinding), as kube-apiserver's RBAC authorizer does:
a rule matches when its verbs, apiGroups, resources (resource/subresource,
"*" and "*/sub" forms) and resourceNames cover the request.  Users in
system:masters may do anything; discovery and health paths are open to
every authenticated user (system:discovery).  Aggregated ClusterRoles are
not expanded."""

from . import errors as E

OPEN_PATHS = ("/api", "/apis", "/version", "/openapi", "/healthz", "/livez", "/readyz")


def _rule_matches(rule, verb, group, resource, subresource, name):
    verbs = rule.get("verbs") or []
    if "*" not in verbs and verb not in verbs:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and group not in groups:
        return False
    res = rule.get("resources") or []
    want = resource + ("/" + subresource if subresource else "")
    ok = False
    for r in res:
        if r == "*" or r == want:
            ok = True
        elif subresource and r == "*/" + subresource:
            ok = True
    if not ok:
        return False
    names = rule.get("resourceNames") or []
    if names and name not in names:
        return False
    return True


def _subject_matches(subj, user, groups):
    kind = subj.get("kind")
    if kind == "User":
        return subj.get("name") == user
    if kind == "Group":
        return subj.get("name") in groups
    if kind == "ServiceAccount":
        return user == "system:serviceaccount:%s:%s" % (subj.get("namespace", ""), subj.get("name", ""))
    return False


class Authorizer:
    def __init__(self, api):
        self.api = api

    def _rules(self, user, groups, namespace):
        api = self.api
        out = []
        for crb in api.list_internal("rbac.authorization.k8s.io", "clusterrolebindings"):
            if any(_subject_matches(s, user, groups) for s in crb.get("subjects") or []):
                ref = crb.get("roleRef") or {}
                if ref.get("kind") == "ClusterRole":
                    cr = api.get_object_internal("rbac.authorization.k8s.io", "clusterroles", "", ref.get("name", ""))
                    if cr:
                        out.extend(cr.get("rules") or [])
        if namespace:
            for rb in api.list_internal("rbac.authorization.k8s.io", "rolebindings", namespace):
                if any(_subject_matches(s, user, groups) for s in rb.get("subjects") or []):
                    ref = rb.get("roleRef") or {}
                    if ref.get("kind") == "ClusterRole":
                        r = api.get_object_internal("rbac.authorization.k8s.io", "clusterroles", "",
                                                    ref.get("name", ""))
                    else:
                        r = api.get_object_internal("rbac.authorization.k8s.io", "roles", namespace,
                                                    ref.get("name", ""))
                    if r:
                        out.extend(r.get("rules") or [])
        return out

    def check(self, user, groups, verb, group, resource, subresource, namespace, name):
        if "system:masters" in groups:
            return True, ""
        for rule in self._rules(user, groups, namespace):
            if _rule_matches(rule, verb, group, resource, subresource, name):
                return True, "RBAC: allowed"
        return False, ""

    def authorize(self, user, groups, ri):
        ok, _ = self.check(user, groups, ri.verb, ri.group, ri.resource, ri.subresource, ri.namespace, ri.name)
        if not ok:
            raise E.forbidden_error(user, ri.verb, ri.resource, ri.group, ri.namespace, ri.name, ri.subresource)


def bootstrap_objects():
    """cluster-admin (system:masters) and system:basic-user (system:authenticated), as in every
    cluster."""
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "cluster-admin", "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
         "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                   {"nonResourceURLs": ["*"], "verbs": ["*"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "cluster-admin", "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "system:basic-user", "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
         "rules": [{"apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]},
                   {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"],
                    "verbs": ["create"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "system:basic-user", "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:basic-user"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}]},
    ]
