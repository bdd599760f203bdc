"""Decoding of Kubernetes protobuf request bodies (application/
vnd.kubernetes.protobuf) into JSON-shaped objects.

kubectl's typed clients (`kubectl create deployment|namespace|configmap|
secret|...`, `kubectl drain`'s evictions) send protobuf.  The tables below
list the fields of the messages those commands send, by field number (the
Kubernetes wire format); fields not listed are skipped.  Zero values of
non-pointer fields are dropped, as the Go decoder leaves them unset."""

import base64
import struct

from . import util

MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    pass


# (json name, type, flags): flags 'r' repeated, 'p' pointer (keep zero values)
_T = {
    "Unknown": {1: ("typeMeta", "TypeMeta", ""), 2: ("raw", "bytes", ""), 3: ("contentEncoding", "string", ""),
                4: ("contentType", "string", "")},
    "TypeMeta": {1: ("apiVersion", "string", ""), 2: ("kind", "string", "")},
    "Time": {1: ("seconds", "int", ""), 2: ("nanos", "int", "")},
    "ObjectMeta": {1: ("name", "string", ""), 2: ("generateName", "string", ""), 3: ("namespace", "string", ""),
                   5: ("uid", "string", ""), 6: ("resourceVersion", "string", ""), 7: ("generation", "int", ""),
                   8: ("creationTimestamp", "time", ""), 9: ("deletionTimestamp", "time", ""),
                   10: ("deletionGracePeriodSeconds", "int", "p"), 11: ("labels", "map_ss", ""),
                   12: ("annotations", "map_ss", ""), 13: ("ownerReferences", "OwnerReference", "r"),
                   14: ("finalizers", "string", "r")},
    "OwnerReference": {1: ("kind", "string", ""), 3: ("name", "string", ""), 4: ("uid", "string", ""),
                       5: ("apiVersion", "string", ""), 6: ("controller", "bool", "p"),
                       7: ("blockOwnerDeletion", "bool", "p")},
    "LabelSelector": {1: ("matchLabels", "map_ss", ""), 2: ("matchExpressions", "LabelSelectorRequirement", "r")},
    "LabelSelectorRequirement": {1: ("key", "string", ""), 2: ("operator", "string", ""),
                                 3: ("values", "string", "r")},
    "DeleteOptions": {1: ("gracePeriodSeconds", "int", "p"), 2: ("preconditions", "Preconditions", ""),
                      3: ("orphanDependents", "bool", "p"), 4: ("propagationPolicy", "string", ""),
                      5: ("dryRun", "string", "r")},
    "Preconditions": {1: ("uid", "string", ""), 2: ("resourceVersion", "string", "")},
    # apps/v1
    "Deployment": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "DeploymentSpec", ""),
                   3: ("status", "DeploymentStatus", "")},
    "DeploymentSpec": {1: ("replicas", "int", "p"), 2: ("selector", "LabelSelector", ""),
                       3: ("template", "PodTemplateSpec", ""), 4: ("strategy", "DeploymentStrategy", ""),
                       5: ("minReadySeconds", "int", ""), 6: ("revisionHistoryLimit", "int", "p"),
                       7: ("paused", "bool", ""), 9: ("progressDeadlineSeconds", "int", "p")},
    "DeploymentStrategy": {1: ("type", "string", ""), 2: ("rollingUpdate", "RollingUpdateDeployment", "")},
    "RollingUpdateDeployment": {1: ("maxUnavailable", "intstr", ""), 2: ("maxSurge", "intstr", "")},
    "DeploymentStatus": {1: ("observedGeneration", "int", ""), 2: ("replicas", "int", ""),
                         3: ("updatedReplicas", "int", ""), 4: ("availableReplicas", "int", ""),
                         5: ("unavailableReplicas", "int", ""), 7: ("readyReplicas", "int", "")},
    # core/v1
    "PodTemplateSpec": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "PodSpec", "")},
    "PodSpec": {1: ("volumes", "Volume", "r"), 2: ("containers", "Container", "r"),
                3: ("restartPolicy", "string", ""), 4: ("terminationGracePeriodSeconds", "int", "p"),
                5: ("activeDeadlineSeconds", "int", "p"), 6: ("dnsPolicy", "string", ""),
                7: ("nodeSelector", "map_ss", ""), 8: ("serviceAccountName", "string", ""),
                9: ("serviceAccount", "string", ""), 10: ("nodeName", "string", ""), 11: ("hostNetwork", "bool", ""),
                12: ("hostPID", "bool", ""), 13: ("hostIPC", "bool", ""),
                14: ("securityContext", "PodSecurityContext", ""), 15: ("imagePullSecrets", "LocalObjectReference", "r"),
                16: ("hostname", "string", ""), 17: ("subdomain", "string", ""), 19: ("schedulerName", "string", ""),
                20: ("initContainers", "Container", "r"), 21: ("automountServiceAccountToken", "bool", "p"),
                22: ("tolerations", "Toleration", "r"), 24: ("priorityClassName", "string", ""),
                25: ("priority", "int", "p"), 29: ("runtimeClassName", "string", "p"),
                30: ("enableServiceLinks", "bool", "p"), 31: ("preemptionPolicy", "string", "p")},
    "PodSecurityContext": {},
    "LocalObjectReference": {1: ("name", "string", "")},
    "Volume": {1: ("name", "string", "")},
    "Container": {1: ("name", "string", ""), 2: ("image", "string", ""), 3: ("command", "string", "r"),
                  4: ("args", "string", "r"), 5: ("workingDir", "string", ""), 6: ("ports", "ContainerPort", "r"),
                  7: ("env", "EnvVar", "r"), 8: ("resources", "ResourceRequirements", "keep"),
                  9: ("volumeMounts", "VolumeMount", "r"), 13: ("terminationMessagePath", "string", ""),
                  14: ("imagePullPolicy", "string", ""), 16: ("stdin", "bool", ""), 17: ("stdinOnce", "bool", ""),
                  18: ("tty", "bool", ""), 20: ("terminationMessagePolicy", "string", ""),
                  24: ("restartPolicy", "string", "p")},
    "ContainerPort": {1: ("name", "string", ""), 2: ("hostPort", "int", ""), 3: ("containerPort", "int", ""),
                      4: ("protocol", "string", ""), 5: ("hostIP", "string", "")},
    "EnvVar": {1: ("name", "string", ""), 2: ("value", "string", "")},
    "VolumeMount": {1: ("name", "string", ""), 2: ("readOnly", "bool", ""), 3: ("mountPath", "string", ""),
                    4: ("subPath", "string", "")},
    "ResourceRequirements": {1: ("limits", "map_sq", ""), 2: ("requests", "map_sq", "")},
    "Toleration": {1: ("key", "string", ""), 2: ("operator", "string", ""), 3: ("value", "string", ""),
                   4: ("effect", "string", ""), 5: ("tolerationSeconds", "int", "p")},
    "Pod": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "PodSpec", ""), 3: ("status", "Empty", "")},
    "Namespace": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "NamespaceSpec", ""), 3: ("status", "Empty", "")},
    "NamespaceSpec": {1: ("finalizers", "string", "r")},
    "ConfigMap": {1: ("metadata", "ObjectMeta", ""), 2: ("data", "map_ss", ""), 3: ("binaryData", "map_sb", ""),
                  4: ("immutable", "bool", "p")},
    "Secret": {1: ("metadata", "ObjectMeta", ""), 2: ("data", "map_sb", ""), 3: ("type", "string", ""),
               4: ("stringData", "map_ss", ""), 5: ("immutable", "bool", "p")},
    "ServiceAccount": {1: ("metadata", "ObjectMeta", ""), 4: ("automountServiceAccountToken", "bool", "p")},
    "Service": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "ServiceSpec", ""), 3: ("status", "Empty", "")},
    "ServiceSpec": {1: ("ports", "ServicePort", "r"), 2: ("selector", "map_ss", ""), 3: ("clusterIP", "string", ""),
                    4: ("type", "string", ""), 5: ("externalIPs", "string", "r"), 7: ("sessionAffinity", "string", ""),
                    10: ("externalName", "string", "")},
    "ServicePort": {1: ("name", "string", ""), 2: ("protocol", "string", ""), 3: ("port", "int", ""),
                    4: ("targetPort", "intstr", ""), 5: ("nodePort", "int", "")},
    "ResourceQuota": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "ResourceQuotaSpec", ""),
                      3: ("status", "Empty", "")},
    "ResourceQuotaSpec": {1: ("hard", "map_sq", ""), 2: ("scopes", "string", "r")},
    # policy/v1
    "Eviction": {1: ("metadata", "ObjectMeta", ""), 2: ("deleteOptions", "DeleteOptions", "")},
    "PodDisruptionBudget": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "PodDisruptionBudgetSpec", ""),
                            3: ("status", "Empty", "")},
    "PodDisruptionBudgetSpec": {1: ("minAvailable", "intstr", ""), 2: ("selector", "LabelSelector", ""),
                                3: ("maxUnavailable", "intstr", ""),
                                4: ("unhealthyPodEvictionPolicy", "string", "p")},
    # scheduling/v1
    "PriorityClass": {1: ("metadata", "ObjectMeta", ""), 2: ("value", "int", "keep"), 3: ("globalDefault", "bool", ""),
                      4: ("description", "string", ""), 5: ("preemptionPolicy", "string", "p")},
    # batch/v1
    "Job": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "JobSpec", ""), 3: ("status", "Empty", "")},
    "JobSpec": {1: ("parallelism", "int", "p"), 2: ("completions", "int", "p"), 3: ("activeDeadlineSeconds", "int", "p"),
                4: ("selector", "LabelSelector", ""), 5: ("manualSelector", "bool", "p"),
                6: ("template", "PodTemplateSpec", ""), 7: ("backoffLimit", "int", "p"),
                8: ("ttlSecondsAfterFinished", "int", "p"), 9: ("completionMode", "string", "p"),
                10: ("suspend", "bool", "p")},
    # coordination/v1
    "Lease": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "LeaseSpec", "")},
    "LeaseSpec": {1: ("holderIdentity", "string", "p"), 2: ("leaseDurationSeconds", "int", "p"),
                  3: ("acquireTime", "microtime", ""), 4: ("renewTime", "microtime", ""),
                  5: ("leaseTransitions", "int", "p")},
    # rbac/v1
    "ClusterRole": {1: ("metadata", "ObjectMeta", ""), 2: ("rules", "PolicyRule", "r")},
    "Role": {1: ("metadata", "ObjectMeta", ""), 2: ("rules", "PolicyRule", "r")},
    "PolicyRule": {1: ("verbs", "string", "r"), 2: ("apiGroups", "string", "r"), 3: ("resources", "string", "r"),
                   4: ("resourceNames", "string", "r"), 5: ("nonResourceURLs", "string", "r")},
    "ClusterRoleBinding": {1: ("metadata", "ObjectMeta", ""), 2: ("subjects", "Subject", "r"),
                           3: ("roleRef", "RoleRef", "")},
    "RoleBinding": {1: ("metadata", "ObjectMeta", ""), 2: ("subjects", "Subject", "r"), 3: ("roleRef", "RoleRef", "")},
    "Subject": {1: ("kind", "string", ""), 2: ("apiGroup", "string", ""), 3: ("name", "string", ""),
                4: ("namespace", "string", "")},
    "RoleRef": {1: ("apiGroup", "string", ""), 2: ("kind", "string", ""), 3: ("name", "string", "")},
    # authorization/v1 (kubectl auth can-i)
    "SelfSubjectAccessReview": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "SubjectAccessReviewSpec", ""),
                                3: ("status", "Empty", "")},
    "SubjectAccessReview": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "SubjectAccessReviewSpec", ""),
                            3: ("status", "Empty", "")},
    "SubjectAccessReviewSpec": {1: ("resourceAttributes", "ResourceAttributes", ""),
                                2: ("nonResourceAttributes", "NonResourceAttributes", ""),
                                3: ("user", "string", ""), 4: ("groups", "string", "r"), 6: ("uid", "string", "")},
    "ResourceAttributes": {1: ("namespace", "string", ""), 2: ("verb", "string", ""), 3: ("group", "string", ""),
                           4: ("version", "string", ""), 5: ("resource", "string", ""),
                           6: ("subresource", "string", ""), 7: ("name", "string", "")},
    "NonResourceAttributes": {1: ("path", "string", ""), 2: ("verb", "string", "")},
    "Empty": {},
}

KINDS = {"Deployment", "Pod", "Namespace", "ConfigMap", "Secret", "ServiceAccount", "Service", "ResourceQuota",
         "Eviction", "PodDisruptionBudget", "PriorityClass", "Job", "Lease", "ClusterRole", "Role",
         "ClusterRoleBinding", "RoleBinding", "DeleteOptions", "SelfSubjectAccessReview", "SubjectAccessReview"}


def _varint(buf, i):
    shift = 0
    result = 0
    while True:
        if i >= len(buf):
            raise ProtobufError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 70:
            raise ProtobufError("varint too long")


def _fields(buf):
    """Yield (field number, wire type, value) of a message."""
    i = 0
    n = len(buf)
    while i < n:
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            v = buf[i:i + 8]
            i += 8
        elif wt == 2:
            ln, i = _varint(buf, i)
            v = buf[i:i + ln]
            if len(v) != ln:
                raise ProtobufError("truncated field")
            i += ln
        elif wt == 5:
            v = buf[i:i + 4]
            i += 4
        else:
            raise ProtobufError("unsupported wire type %d" % wt)
        yield num, wt, v


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _scalar(kind, wt, v):
    if kind == "string":
        return bytes(v).decode("utf-8")
    if kind == "int":
        if wt == 0:
            return _signed(v)
        raise ProtobufError("int field with wire type %d" % wt)
    if kind == "bool":
        return bool(v)
    if kind == "bytes":
        return bytes(v)
    if kind == "double":
        return struct.unpack("<d", v)[0]
    raise ProtobufError("unknown scalar %s" % kind)


def _time(buf, micro=False):
    secs = 0
    nanos = 0
    for num, wt, v in _fields(buf):
        if num == 1:
            secs = _signed(v)
        elif num == 2:
            nanos = _signed(v)
    if secs == 0 and nanos == 0:
        return None
    ts = secs + nanos / 1e9
    return util.rfc3339_micro(ts) if micro else util.rfc3339(ts)


def _map_entry(buf):
    k = v = None
    for num, wt, val in _fields(buf):
        if num == 1:
            k = bytes(val).decode("utf-8")
        elif num == 2:
            v = val
    return k or "", v


def decode_message(buf, typ):
    spec = _T[typ]
    out = {}
    for num, wt, v in _fields(buf):
        f = spec.get(num)
        if f is None:
            continue
        name, kind, flags = f
        if kind in ("map_ss", "map_sq", "map_sb"):
            k, val = _map_entry(v)
            m = out.setdefault(name, {})
            if kind == "map_ss":
                m[k] = bytes(val or b"").decode("utf-8")
            elif kind == "map_sb":
                m[k] = base64.b64encode(bytes(val or b"")).decode()
            else:
                q = decode_message(val or b"", "Quantity")
                m[k] = q.get("string", "0")
            continue
        if kind == "time" or kind == "microtime":
            t = _time(v, micro=kind == "microtime")
            if t is not None:
                out[name] = t
            continue
        if kind == "intstr":
            d = {}
            for n2, w2, v2 in _fields(v):
                d[n2] = v2
            if d.get(1, 0) == 1:
                out[name] = bytes(d.get(3, b"")).decode("utf-8")
            else:
                out[name] = _signed(d.get(2, 0))
            continue
        if kind in _T:
            val = decode_message(v, kind)
            if "r" in flags:
                out.setdefault(name, []).append(val)
            elif val or "keep" in flags or kind == "Empty":
                out[name] = val
            continue
        if "r" in flags and wt == 2 and kind in ("int", "bool"):
            # packed repeated scalars
            i = 0
            lst = out.setdefault(name, [])
            while i < len(v):
                x, i = _varint(v, i)
                lst.append(_scalar(kind, 0, x))
            continue
        val = _scalar(kind, wt, v)
        if "r" in flags:
            out.setdefault(name, []).append(val)
        elif val in ("", 0, False) and "p" not in flags and "keep" not in flags and val is not True:
            continue
        else:
            out[name] = val
    return out


_T["Quantity"] = {1: ("string", "string", "")}


def decode(body):
    """Envelope + object -> (dict with apiVersion/kind, kind)."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf prefix")
    env = decode_message(memoryview(body)[4:], "Unknown")
    tm = env.get("typeMeta") or {}
    kind = tm.get("kind", "")
    if kind not in KINDS:
        raise ProtobufError('no protobuf decoding for kind "%s" in kube-sim' % kind)
    obj = decode_message(env.get("raw", b""), kind)
    out = {"kind": kind, "apiVersion": tm.get("apiVersion", "")}
    out.update(obj)
    return out
