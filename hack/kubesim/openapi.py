"""OpenAPI documents for kubectl: /openapi/v3 (index and one document per
group/version) and /openapi/v2 (Swagger 2.0, in JSON or in protobuf: see
openapi_pb.py).  Custom resources carry their CRD schema (so `kubectl
explain` works); built-in kinds get a small schema.
PATCH operations list the fieldValidation parameter (kubectl then leaves
field validation to the server) and, for built-in kinds, no strategic
merge patch media type, so that kubectl computes strategic merge patches
from its compiled-in types."""

import hashlib
import json

from . import openapi_pb
from .resources import VIRTUAL

OBJECT_META_REF = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

_OBJECT_META = {
    "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects "
                   "users must create.",
    "type": "object",
    "properties": {
        "annotations": {"description": "Annotations is an unstructured key value map stored with a resource that "
                                       "may be set by external tools to store and retrieve arbitrary metadata.",
                        "type": "object", "additionalProperties": {"type": "string", "default": ""}},
        "creationTimestamp": {"description": "CreationTimestamp is a timestamp representing the server time when "
                                             "this object was created.", "type": "string", "format": "date-time"},
        "deletionGracePeriodSeconds": {"description": "Number of seconds allowed for this object to gracefully "
                                                      "terminate before it will be removed from the system.",
                                       "type": "integer", "format": "int64"},
        "deletionTimestamp": {"description": "DeletionTimestamp is RFC 3339 date and time at which this resource "
                                             "will be deleted.", "type": "string", "format": "date-time"},
        "finalizers": {"description": "Must be empty before the object is deleted from the registry.",
                       "type": "array", "items": {"type": "string", "default": ""},
                       "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge"},
        "generateName": {"description": "GenerateName is an optional prefix, used by the server, to generate a "
                                        "unique name ONLY IF the Name field has not been provided.", "type": "string"},
        "generation": {"description": "A sequence number representing a specific generation of the desired state.",
                       "type": "integer", "format": "int64"},
        "labels": {"description": "Map of string keys and values that can be used to organize and categorize "
                                  "(scope and select) objects.", "type": "object",
                   "additionalProperties": {"type": "string", "default": ""}},
        "managedFields": {"description": "ManagedFields maps workflow-id and version to the set of fields that are "
                                         "managed by that workflow.", "type": "array",
                          "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                          "x-kubernetes-list-type": "atomic"},
        "name": {"description": "Name must be unique within a namespace.", "type": "string"},
        "namespace": {"description": "Namespace defines the space within which each name must be unique.",
                      "type": "string"},
        "ownerReferences": {"description": "List of objects depended by this object.", "type": "array",
                            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "x-kubernetes-list-map-keys": ["uid"], "x-kubernetes-list-type": "map",
                            "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge"},
        "resourceVersion": {"description": "An opaque value that represents the internal version of this object.",
                            "type": "string"},
        "selfLink": {"description": "Deprecated: selfLink is a legacy read-only field that is no longer populated "
                                    "by the system.", "type": "string"},
        "uid": {"description": "UID is the unique in time and space value for this object.", "type": "string"},
    },
}

_DESCRIPTIONS = {
    "Pod": "Pod is a collection of containers that can run on a host. This resource is created by clients and "
           "scheduled onto hosts.",
    "Node": "Node is a worker node in Kubernetes. Each node will have a unique identifier in the cache (i.e. in "
            "etcd).",
    "Namespace": "Namespace provides a scope for Names. Use of multiple namespaces is optional.",
    "Deployment": "Deployment enables declarative updates for Pods and ReplicaSets.",
    "ReplicaSet": "ReplicaSet ensures that a specified number of pod replicas are running at any given time.",
    "DaemonSet": "DaemonSet represents the configuration of a daemon set.",
    "Lease": "Lease defines a lease concept.",
    "PodDisruptionBudget": "PodDisruptionBudget is an object to define the max disruption that can be caused to a "
                           "collection of pods",
    "Event": "Event is a report of an event somewhere in the cluster.",
}

_PARAMS_WRITE = [
    {"name": "dryRun", "in": "query", "description": "When present, indicates that modifications should not be "
     "persisted. Valid values are: - All: all dry run stages will be processed", "schema": {"type": "string",
                                                                                            "uniqueItems": True}},
    {"name": "fieldManager", "in": "query", "description": "fieldManager is a name associated with the actor or "
     "entity that is making these changes.", "schema": {"type": "string", "uniqueItems": True}},
    {"name": "fieldValidation", "in": "query", "description": "fieldValidation instructs the server on how to handle "
     "objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - "
     "Warn - Strict", "schema": {"type": "string", "uniqueItems": True}},
]
_PARAM_FORCE = {"name": "force", "in": "query", "description": "Force is going to \"force\" Apply requests.",
                "schema": {"type": "boolean", "uniqueItems": True}}


# Top-level fields of the built-in kinds that have no spec, with their types
# (None: free-form).  kubectl before 1.25 validates manifests itself against
# /openapi/v2 and refuses a field its schema lacks (a Secret's stringData).
_S, _I, _B = "string", "integer", "boolean"
_TOP_FIELDS = {
    ("", "Event"): {"involvedObject": None, "reason": _S, "message": _S, "source": None, "firstTimestamp": _S,
                    "lastTimestamp": _S, "count": _I, "type": _S, "eventTime": _S, "series": None, "action": _S,
                    "related": None, "reportingComponent": _S, "reportingInstance": _S},
    ("events.k8s.io", "Event"): {"eventTime": _S, "series": None, "reportingController": _S,
                                 "reportingInstance": _S, "action": _S, "reason": _S, "regarding": None,
                                 "related": None, "note": _S, "type": _S, "deprecatedSource": None,
                                 "deprecatedFirstTimestamp": _S, "deprecatedLastTimestamp": _S,
                                 "deprecatedCount": _I},
    ("", "ConfigMap"): {"data": None, "binaryData": None, "immutable": _B},
    ("", "Secret"): {"data": None, "stringData": None, "type": _S, "immutable": _B},
    ("", "ServiceAccount"): {"secrets": None, "imagePullSecrets": None, "automountServiceAccountToken": _B},
    ("", "Endpoints"): {"subsets": None},
    ("", "PodTemplate"): {"template": None},
    ("rbac.authorization.k8s.io", "ClusterRole"): {"rules": None, "aggregationRule": None},
    ("rbac.authorization.k8s.io", "Role"): {"rules": None},
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): {"subjects": None, "roleRef": None},
    ("rbac.authorization.k8s.io", "RoleBinding"): {"subjects": None, "roleRef": None},
    ("scheduling.k8s.io", "PriorityClass"): {"value": _I, "globalDefault": _B, "description": _S,
                                             "preemptionPolicy": _S},
    ("storage.k8s.io", "StorageClass"): {"provisioner": _S, "parameters": None, "reclaimPolicy": _S,
                                         "mountOptions": None, "allowVolumeExpansion": _B,
                                         "volumeBindingMode": _S, "allowedTopologies": None},
    ("apps", "ControllerRevision"): {"data": None, "revision": _I},
    ("node.k8s.io", "RuntimeClass"): {"handler": _S, "overhead": None, "scheduling": None},
    ("", "Binding"): {"target": None},
}


def schema_name(rt, kind=None):
    kind = kind or rt.kind
    if rt.is_custom:
        return ".".join(reversed(rt.group.split("."))) + "." + rt.version + "." + kind
    grp = rt.group.split(".")[0] if rt.group else "core"
    if rt.group == "apiextensions.k8s.io":
        return "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions." + rt.version + "." + kind
    return "io.k8s.api." + grp + "." + rt.version + "." + kind


def _kind_schema(rt):
    gvk = [{"group": rt.group, "kind": rt.kind, "version": rt.version}]
    meta = {"allOf": [{"$ref": OBJECT_META_REF}], "default": {},
            "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/"
                           "sig-architecture/api-conventions.md#metadata"}
    base_props = {
        "apiVersion": {"description": "APIVersion defines the versioned schema of this representation of an object.",
                       "type": "string"},
        "kind": {"description": "Kind is a string value representing the REST resource this object represents.",
                 "type": "string"},
        "metadata": meta,
    }
    if rt.is_custom and rt.schema is not None:
        s = json.loads(json.dumps(rt.schema.root))
        props = s.setdefault("properties", {})
        for k, v in base_props.items():
            props[k] = v
        s["type"] = "object"
    else:
        s = {"description": _DESCRIPTIONS.get(rt.kind, "%s is a Kubernetes %s object." % (rt.kind, rt.kind)),
             "type": "object", "properties": dict(base_props)}
        top = _TOP_FIELDS.get((rt.group, rt.kind))
        if top is None:
            s["properties"]["spec"] = {"description": "Specification of the desired behavior of the %s." % rt.kind,
                                       "type": "object", "x-kubernetes-preserve-unknown-fields": True}
        for name, typ in (top or {}).items():
            s["properties"][name] = {"type": typ} if typ else {"x-kubernetes-preserve-unknown-fields": True}
        if "status" in rt.subresources:
            s["properties"]["status"] = {"description": "Most recently observed status of the %s." % rt.kind,
                                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}
    s["x-kubernetes-group-version-kind"] = gvk
    return s


def _list_schema(rt):
    return {"description": "%s is a list of %s" % (rt.list_kind, rt.kind), "type": "object",
            "required": ["items"],
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                           "items": {"type": "array", "items": {"$ref": "#/components/schemas/" + schema_name(rt)}},
                           "metadata": {"type": "object"}},
            "x-kubernetes-group-version-kind": [{"group": rt.group, "kind": rt.list_kind, "version": rt.version}]}


def _op(rt, action, desc, ref, gvk=True, body=None, patch_builtin=False):
    op = {"description": desc, "operationId": action + rt.kind, "tags": [rt.group or "core"],
          "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": ref}}}}},
          "x-kubernetes-action": action}
    if gvk:
        op["x-kubernetes-group-version-kind"] = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    if action in ("post", "put", "patch"):
        op["parameters"] = [dict(p) for p in _PARAMS_WRITE]
    if action == "patch":
        op["parameters"].append(dict(_PARAM_FORCE))
        content = {"application/json-patch+json": {"schema": {"type": "object"}},
                   "application/merge-patch+json": {"schema": {"type": "object"}},
                   "application/apply-patch+yaml": {"schema": {"type": "object"}}}
        op["requestBody"] = {"content": content, "required": True}
    elif body:
        op["requestBody"] = {"content": {"*/*": {"schema": {"$ref": ref}}}, "required": True}
    return op


def gv_document(registry, group, version):
    rts = [rt for rt in registry.resources(group, version) if (rt.group, rt.plural) not in VIRTUAL]
    if not rts and not registry.resources(group, version):
        return None
    schemas = {"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": _OBJECT_META}
    paths = {}
    prefix = "/apis/%s/%s" % (group, version) if group else "/api/" + version
    for rt in sorted(rts, key=lambda r: r.plural):
        sn = schema_name(rt)
        schemas[sn] = _kind_schema(rt)
        schemas[schema_name(rt, rt.list_kind)] = _list_schema(rt)
        ref = "#/components/schemas/" + sn
        lref = "#/components/schemas/" + schema_name(rt, rt.list_kind)
        ns = "/namespaces/{namespace}" if rt.namespaced else ""
        coll = prefix + ns + "/" + rt.plural
        item = coll + "/{name}"
        path_params = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
        if rt.namespaced:
            path_params.append({"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}})
        paths[coll] = {"get": _op(rt, "list", "list or watch objects of kind " + rt.kind, lref),
                       "post": _op(rt, "post", "create a " + rt.kind, ref, body=True),
                       "parameters": path_params[1:]}
        paths[item] = {"get": _op(rt, "get", "read the specified " + rt.kind, ref),
                       "put": _op(rt, "put", "replace the specified " + rt.kind, ref, body=True),
                       "patch": _op(rt, "patch", "partially update the specified " + rt.kind, ref),
                       "delete": _op(rt, "delete", "delete a " + rt.kind, ref),
                       "parameters": path_params}
        if "status" in rt.subresources:
            paths[item + "/status"] = {"get": _op(rt, "get", "read status of the specified " + rt.kind, ref),
                                       "parameters": path_params}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": paths, "components": {"schemas": schemas}}


class OpenAPI:
    def __init__(self, registry):
        self.registry = registry
        self._gen = -1
        self._docs = {}
        self._v2 = None

    def _refresh(self):
        if self._gen == self.registry.generation:
            return
        docs = {}
        with self.registry.lock:
            gvs = {("", "v1")}
            for rt in self.registry.all():
                gvs.add((rt.group, rt.version))
            gen = self.registry.generation
        for g, v in sorted(gvs):
            d = gv_document(self.registry, g, v)
            if d is None:
                continue
            body = json.dumps(d, separators=(",", ":")).encode()
            h = hashlib.sha512(body).hexdigest().upper()
            key = ("apis/%s/%s" % (g, v)) if g else "api/" + v
            docs[key] = (h, body)
        self._docs = docs
        self._gen = gen

    def index(self):
        self._refresh()
        return {"paths": {k: {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (k, h)}
                          for k, (h, _) in sorted(self._docs.items())}}

    def document(self, key):
        self._refresh()
        return self._docs.get(key.strip("/"))

    def swagger_v2(self):
        """The Swagger 2.0 document of every group/version (cached per
        registry generation; the protobuf form is built from it)."""
        self._refresh()
        if self._v2 is None or self._v2[0] != self._gen:
            definitions = {}
            paths = {}
            for _, body in self._docs.values():
                d = json.loads(body)
                for name, s in d["components"]["schemas"].items():
                    definitions[name] = _v2_schema(s)
                for p, item in d["paths"].items():
                    paths[p] = _v2_path_item(item)
            doc = {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
                   "paths": dict(sorted(paths.items())), "definitions": dict(sorted(definitions.items()))}
            self._v2 = (self._gen, doc, None)
        return self._v2[1]

    def swagger_v2_bytes(self, media):
        """(body, content type, etag) of /openapi/v2 in JSON or protobuf."""
        doc = self.swagger_v2()
        gen, _, cache = self._v2
        cache = cache or {}
        if media not in cache:
            if media == "json":
                body = json.dumps(doc, separators=(",", ":")).encode()
            else:
                body = openapi_pb.document(doc)
            cache[media] = (body, '"%s"' % hashlib.sha512(body).hexdigest().upper())
            self._v2 = (gen, doc, cache)
        body, etag = cache[media]
        return body, "application/json" if media == "json" else openapi_pb.CONTENT_TYPE, etag


# ---------------------------------------------------------------- OpenAPI v3 -> Swagger 2.0

# Schema keys Swagger 2.0 has; the rest (anyOf, oneOf, not, nullable...) are
# dropped, as the API server does when it publishes a CRD in v2.
_V2_KEYS = {"$ref", "format", "title", "description", "default", "multipleOf", "maximum", "exclusiveMaximum",
            "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
            "uniqueItems", "maxProperties", "minProperties", "required", "enum", "additionalProperties", "type",
            "items", "allOf", "properties", "discriminator", "readOnly", "example"}


def _v2_schema(s):
    if isinstance(s, list):
        return [_v2_schema(x) for x in s]
    if not isinstance(s, dict):
        return s
    out = {}
    for k, v in s.items():
        if k == "$ref":
            out[k] = v.replace("#/components/schemas/", "#/definitions/")
        elif k == "properties":
            out[k] = {pk: _v2_schema(pv) for pk, pv in v.items()}
        elif k in ("items", "additionalProperties", "allOf"):
            out[k] = _v2_schema(v)
        elif k in _V2_KEYS or k.startswith("x-"):
            out[k] = v
    if s.get("nullable"):
        # kubectl's client-side validation would refuse null for a typed value
        out.pop("type", None)
    if s.get("x-kubernetes-preserve-unknown-fields") and out.get("type") == "object":
        # and unknown fields of a typed object: leave it free-form
        out.pop("type")
        out.pop("properties", None)
    return out


def _v2_parameter(p):
    out = {k: v for k, v in p.items() if k != "schema"}
    out.update(p.get("schema") or {})
    return out


def _v2_operation(op, method):
    out = {k: v for k, v in op.items() if k not in ("requestBody", "responses", "parameters")}
    params = [_v2_parameter(p) for p in op.get("parameters") or ()]
    body = op.get("requestBody")
    if body:
        media = body.get("content") or {}
        first = next(iter(media.values()), {})
        params.insert(0, {"name": "body", "in": "body", "required": True,
                          "schema": _v2_schema(first.get("schema") or {"type": "object"})})
        if method == "patch":
            out["consumes"] = list(media)
        else:
            out["consumes"] = ["*/*"]
    if params:
        out["parameters"] = params
    out["produces"] = ["application/json", "application/yaml"]
    responses = {}
    for code, r in (op.get("responses") or {}).items():
        v2 = {"description": r.get("description", "")}
        sch = ((r.get("content") or {}).get("application/json") or {}).get("schema")
        if sch:
            v2["schema"] = _v2_schema(sch)
        responses[code] = v2
    responses.setdefault("401", {"description": "Unauthorized"})
    out["responses"] = responses
    out["schemes"] = ["https"]
    return out


def _v2_path_item(item):
    out = {}
    for m, op in item.items():
        if m == "parameters":
            out[m] = [_v2_parameter(p) for p in op]
        else:
            out[m] = _v2_operation(op, m)
    return out
