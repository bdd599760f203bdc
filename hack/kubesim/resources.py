"""The resource types the simulator serves: built-in kinds and the ones
CustomResourceDefinitions add at run time."""

import base64
import hashlib
import threading

STD_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
META_FIELDS = ("metadata.name", "metadata.namespace")


def _hash(s):
    return base64.b64encode(hashlib.sha256(s.encode()).digest()[:8]).decode()


class ResourceType:
    """One served group/version/resource."""

    def __init__(self, group, version, plural, kind, namespaced, singular=None, short_names=(),
                 categories=(), verbs=None, subresources=(), has_generation=False, status_sub=None,
                 field_labels=(), table=None, storage_id=None, return_deleted_object=False,
                 allow_create_on_update=False, allow_unconditional_update=True, list_kind=None,
                 crd=None, crd_version=None):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.namespaced = namespaced
        self.singular = singular if singular is not None else kind.lower()
        self.short_names = list(short_names)
        self.categories = list(categories)
        self.verbs = list(verbs) if verbs is not None else list(STD_VERBS)
        self.subresources = set(subresources)
        self.has_generation = has_generation
        self.status_sub = ("status" in self.subresources) if status_sub is None else status_sub
        # field labels usable in fieldSelector besides metadata.name/namespace
        self.field_labels = tuple(field_labels)
        self.all_field_labels = META_FIELDS + self.field_labels
        self.table = table or "default"
        self.storage_id = storage_id or (plural + ("." + group if group else ""))
        self.return_deleted_object = return_deleted_object
        self.allow_create_on_update = allow_create_on_update
        self.allow_unconditional_update = allow_unconditional_update
        self.list_kind = list_kind or kind + "List"
        self.crd = crd  # CRD object (dict) for custom resources
        self.crd_version = crd_version  # the CRD's versions[] entry
        self.storage_version_hash = _hash(self.storage_id + "/" + version)
        self.scale_paths = None  # (specReplicasPath, statusReplicasPath, labelSelectorPath)
        self.schema = None  # structural schema (custom resources)
        self.printer_columns = None  # additionalPrinterColumns (custom resources)
        self.selectable_fields = ()

    @property
    def is_custom(self):
        return self.crd is not None

    @property
    def group_version(self):
        return self.group + "/" + self.version if self.group else self.version

    @property
    def api_version(self):
        return self.group_version

    def gvk(self):
        return {"group": self.group, "version": self.version, "kind": self.kind}

    def __repr__(self):
        return "<ResourceType %s/%s %s>" % (self.group or "core", self.version, self.plural)


def _builtins():
    R = ResourceType
    pod_fields = ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                  "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName")
    event_fields = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                    "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                    "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type")
    ev2_fields = ("regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
                  "regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath", "reason",
                  "reportingController", "deprecatedSource", "type")
    return [
        # core/v1
        R("", "v1", "namespaces", "Namespace", False, short_names=["ns"],
          verbs=["create", "delete", "get", "list", "patch", "update", "watch"],
          subresources=["status", "finalize"], field_labels=("status.phase",), table="namespaces",
          return_deleted_object=True),
        R("", "v1", "pods", "Pod", True, short_names=["po"], categories=["all"],
          subresources=["status", "binding", "eviction", "ephemeralcontainers"], field_labels=pod_fields,
          table="pods", return_deleted_object=True),
        R("", "v1", "nodes", "Node", False, short_names=["no"], subresources=["status"],
          field_labels=("spec.unschedulable",), table="nodes"),
        R("", "v1", "events", "Event", True, short_names=["ev"], field_labels=event_fields, table="events",
          storage_id="events"),
        R("", "v1", "bindings", "Binding", True, verbs=["create"]),
        R("", "v1", "configmaps", "ConfigMap", True, short_names=["cm"], table="configmaps"),
        R("", "v1", "secrets", "Secret", True, field_labels=("type",), table="secrets"),
        R("", "v1", "services", "Service", True, short_names=["svc"], categories=["all"],
          verbs=["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
          subresources=["status"], table="services", return_deleted_object=True,
          allow_create_on_update=True),
        R("", "v1", "endpoints", "Endpoints", True, short_names=["ep"], allow_create_on_update=True,
          list_kind="EndpointsList"),
        R("", "v1", "serviceaccounts", "ServiceAccount", True, short_names=["sa"]),
        R("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, short_names=["pvc"],
          subresources=["status"]),
        R("", "v1", "persistentvolumes", "PersistentVolume", False, short_names=["pv"],
          subresources=["status"]),
        R("", "v1", "resourcequotas", "ResourceQuota", True, short_names=["quota"], subresources=["status"]),
        R("", "v1", "limitranges", "LimitRange", True, short_names=["limits"]),
        R("", "v1", "podtemplates", "PodTemplate", True),
        # apps/v1
        R("apps", "v1", "deployments", "Deployment", True, short_names=["deploy"], categories=["all"],
          subresources=["status", "scale"], has_generation=True, table="deployments"),
        R("apps", "v1", "replicasets", "ReplicaSet", True, short_names=["rs"], categories=["all"],
          subresources=["status", "scale"], has_generation=True, table="replicasets",
          field_labels=("status.replicas",)),
        R("apps", "v1", "daemonsets", "DaemonSet", True, short_names=["ds"], categories=["all"],
          subresources=["status"], has_generation=True, table="daemonsets"),
        R("apps", "v1", "statefulsets", "StatefulSet", True, short_names=["sts"], categories=["all"],
          subresources=["status", "scale"], has_generation=True, table="statefulsets"),
        R("apps", "v1", "controllerrevisions", "ControllerRevision", True),
        # batch/v1
        R("batch", "v1", "jobs", "Job", True, categories=["all"], subresources=["status"],
          has_generation=True, field_labels=("status.successful",), table="jobs"),
        R("batch", "v1", "cronjobs", "CronJob", True, short_names=["cj"], categories=["all"],
          subresources=["status"], has_generation=True),
        # events.k8s.io/v1 (same storage as core events)
        R("events.k8s.io", "v1", "events", "Event", True, short_names=["ev"], field_labels=ev2_fields,
          table="events2", storage_id="events"),
        # policy/v1
        R("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, short_names=["pdb"],
          subresources=["status"], has_generation=True, table="pdbs"),
        # coordination.k8s.io/v1
        R("coordination.k8s.io", "v1", "leases", "Lease", True, table="leases"),
        # apiextensions.k8s.io/v1
        R("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
          short_names=["crd", "crds"], categories=["api-extensions"], subresources=["status"],
          has_generation=True, table="crds"),
        # rbac.authorization.k8s.io/v1
        R("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, table="rbac"),
        R("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False, table="rbac"),
        R("rbac.authorization.k8s.io", "v1", "roles", "Role", True, table="rbac"),
        R("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, table="rbac"),
        # authorization.k8s.io/v1 (virtual, create only)
        R("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False,
          verbs=["create"]),
        R("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False, verbs=["create"]),
        # scheduling.k8s.io/v1
        R("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short_names=["pc"],
          table="priorityclasses"),
        # storage.k8s.io/v1
        R("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, short_names=["sc"]),
        R("storage.k8s.io", "v1", "csinodes", "CSINode", False),
        R("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
        R("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False, subresources=["status"]),
        # node.k8s.io/v1
        R("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False),
    ]


VIRTUAL = {("authorization.k8s.io", "selfsubjectaccessreviews"), ("authorization.k8s.io", "subjectaccessreviews"),
           ("", "bindings")}


class Registry:
    """Thread-safe registry of served resource types."""

    def __init__(self):
        self.lock = threading.RLock()
        self.by_gvr = {}  # (group, version, plural) -> rt
        self.storage = {}  # storage_id -> list of rts
        self.group_order = []  # groups in discovery order
        self.generation = 0  # bumped when the set of types changes
        for rt in _builtins():
            self.add(rt)

    def add(self, rt):
        with self.lock:
            self.by_gvr[(rt.group, rt.version, rt.plural)] = rt
            lst = self.storage.setdefault(rt.storage_id, [])
            lst[:] = [x for x in lst if x.version != rt.version or x.group != rt.group] + [rt]
            if rt.group not in self.group_order:
                self.group_order.append(rt.group)
            self.generation += 1

    def remove_storage(self, storage_id):
        with self.lock:
            for rt in self.storage.pop(storage_id, []):
                self.by_gvr.pop((rt.group, rt.version, rt.plural), None)
            groups = {g for (g, _, _) in self.by_gvr}
            self.group_order = [g for g in self.group_order if g in groups]
            self.generation += 1

    def remove_group_version(self, group, version):
        """Stop serving group/version (an older or trimmed server); True if it was served."""
        with self.lock:
            keys = [k for k in self.by_gvr if k[0] == group and k[1] == version]
            for k in keys:
                rt = self.by_gvr.pop(k)
                lst = self.storage.get(rt.storage_id) or []
                lst[:] = [x for x in lst if x is not rt]
                if not lst:
                    self.storage.pop(rt.storage_id, None)
            groups = {g for (g, _, _) in self.by_gvr}
            self.group_order = [g for g in self.group_order if g in groups]
            self.generation += 1
            return bool(keys)

    def get(self, group, version, plural):
        return self.by_gvr.get((group, version, plural))

    def find_plural(self, group, plural):
        """Any served version of group/plural (preferred first)."""
        with self.lock:
            for (g, v, p), rt in self.by_gvr.items():
                if g == group and p == plural:
                    return rt
        return None

    def for_storage(self, storage_id):
        lst = self.storage.get(storage_id)
        return lst[0] if lst else None

    def storage_rt(self, storage_id):
        """The type whose version is the storage version."""
        lst = self.storage.get(storage_id) or []
        for rt in lst:
            if rt.crd_version is not None and rt.crd_version.get("storage"):
                return rt
        return lst[0] if lst else None

    def groups(self):
        """[(group, [versions], preferred)] for discovery; core group excluded."""
        with self.lock:
            out = []
            for g in self.group_order:
                if g == "":
                    continue
                versions = []
                for (gg, v, _), rt in self.by_gvr.items():
                    if gg == g and v not in versions:
                        versions.append(v)
                if not versions:
                    continue
                versions.sort(key=_version_priority, reverse=True)
                out.append((g, versions, versions[0]))
            return out

    def resources(self, group, version):
        with self.lock:
            return [rt for (g, v, _), rt in self.by_gvr.items() if g == group and v == version]

    def all(self):
        with self.lock:
            return list(self.by_gvr.values())

    def by_kind(self, group, version, kind):
        with self.lock:
            for (g, v, _), rt in self.by_gvr.items():
                if g == group and v == version and rt.kind == kind and (g, rt.plural) not in VIRTUAL:
                    return rt
        return None


def _version_priority(v):
    """Kubernetes version ordering: GA > beta > alpha, higher numbers first."""
    import re
    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", v)
    if not m:
        return (-1, 0, 0, v)
    major = int(m.group(1))
    kind = {"alpha": 0, "beta": 1, None: 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (kind, major, minor, "")


def types_from_crd(crd):
    """ResourceTypes for every served version of a CRD."""
    from . import schema as S
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group")
    namespaced = spec.get("scope") == "Namespaced"
    out = []
    for ver in spec.get("versions") or []:
        if not ver.get("served"):
            continue
        subs = ver.get("subresources") or {}
        subresources = []
        if "status" in subs:
            subresources.append("status")
        if "scale" in subs:
            subresources.append("scale")
        rt = ResourceType(group, ver["name"], names["plural"], names["kind"], namespaced,
                          singular=names.get("singular") or names["kind"].lower(),
                          short_names=names.get("shortNames") or [], categories=names.get("categories") or [],
                          subresources=subresources, has_generation=True,
                          list_kind=names.get("listKind") or names["kind"] + "List",
                          table="custom", storage_id=names["plural"] + "." + group,
                          allow_unconditional_update=False, crd=crd, crd_version=ver)
        if "scale" in subs:
            sc = subs["scale"] or {}
            rt.scale_paths = (sc.get("specReplicasPath"), sc.get("statusReplicasPath"),
                              sc.get("labelSelectorPath"))
        sch = (ver.get("schema") or {}).get("openAPIV3Schema")
        rt.schema = S.Schema(sch) if sch else None
        rt.printer_columns = ver.get("additionalPrinterColumns")
        rt.selectable_fields = tuple(f.get("jsonPath", "").lstrip(".")
                                     for f in (ver.get("selectableFields") or []))
        rt.field_labels = rt.selectable_fields
        rt.all_field_labels = META_FIELDS + rt.field_labels
        out.append(rt)
    return out
