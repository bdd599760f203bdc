"""Strategies of the built-in kinds: defaults and admission on create,
what the main and status endpoints may change on update, validation, and
normalisation of quantities and timestamps as the typed API server does
when it decodes and re-encodes objects."""

import ipaddress
import itertools

from . import errors as E
from . import selector as selectors
from . import util

POD_DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
]
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")


class DecodeError(Exception):
    """The typed decoder would reject the body (400 BadRequest)."""


# ---------------------------------------------------------------- normalisation

def _norm_time(container, key, micro=False):
    v = container.get(key)
    if v is None:
        return
    if not isinstance(v, str):
        raise DecodeError("invalid value for %s: must be a string timestamp" % key)
    if v == "":
        container[key] = None
        return
    try:
        ts = util.parse_time(v)
    except ValueError as e:
        raise DecodeError(str(e))
    container[key] = util.rfc3339_micro(ts) if micro else util.rfc3339(ts)


def _norm_quantities(rl, path):
    if rl is None:
        return
    if not isinstance(rl, dict):
        raise DecodeError("%s: expected a map of quantities" % path)
    for k, v in list(rl.items()):
        try:
            rl[k] = util.canonical_quantity(v)
        except util.QuantityError as e:
            raise DecodeError(str(e))


def _norm_conditions(obj, keys=("lastProbeTime", "lastTransitionTime", "lastHeartbeatTime", "lastUpdateTime")):
    for c in util.get_path(obj, "status", "conditions") or []:
        if isinstance(c, dict):
            for k in keys:
                if k in c:
                    _norm_time(c, k)


def _containers(spec):
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(key) or []):
            if isinstance(c, dict):
                yield key, i, c


def _norm_pod_spec(spec):
    if not isinstance(spec, dict):
        return
    for _, _, c in _containers(spec):
        res = c.get("resources")
        if isinstance(res, dict):
            _norm_quantities(res.get("requests"), "resources.requests")
            _norm_quantities(res.get("limits"), "resources.limits")
    _norm_quantities(spec.get("overhead"), "overhead")


def _norm_template(obj):
    tmpl = util.get_path(obj, "spec", "template")
    if isinstance(tmpl, dict):
        _norm_pod_spec(tmpl.get("spec"))


def normalize(rt, obj):
    """Canonical quantities and timestamps for typed kinds; raises DecodeError."""
    kind = rt.kind
    st = obj.get("status") if isinstance(obj.get("status"), dict) else None
    if kind == "Pod":
        _norm_pod_spec(obj.get("spec"))
        if st:
            _norm_time(st, "startTime")
            for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
                for cs in st.get(key) or []:
                    for sk in ("state", "lastState"):
                        s = cs.get(sk) if isinstance(cs, dict) else None
                        if isinstance(s, dict):
                            for sub in s.values():
                                if isinstance(sub, dict):
                                    _norm_time(sub, "startedAt")
                                    _norm_time(sub, "finishedAt")
            conds = st.get("conditions")
            if isinstance(conds, list):
                for c in conds:
                    if isinstance(c, dict):
                        c.setdefault("lastProbeTime", None)
                        c.setdefault("lastTransitionTime", None)
            if st.get("podIP") and not st.get("podIPs"):
                st["podIPs"] = [{"ip": st["podIP"]}]
            if st.get("hostIP") and not st.get("hostIPs"):
                st["hostIPs"] = [{"ip": st["hostIP"]}]
        _norm_conditions(obj)
    elif kind == "Node":
        if st:
            _norm_quantities(st.get("capacity"), "status.capacity")
            _norm_quantities(st.get("allocatable"), "status.allocatable")
            for c in st.get("conditions") or []:
                if isinstance(c, dict):
                    c.setdefault("lastHeartbeatTime", None)
                    c.setdefault("lastTransitionTime", None)
        _norm_conditions(obj)
    elif kind in ("Deployment", "ReplicaSet", "DaemonSet", "StatefulSet", "Job", "PodTemplate"):
        _norm_template(obj)
        if kind == "PodTemplate":
            _norm_pod_spec(util.get_path(obj, "template", "spec"))
        if kind == "Job" and st:
            _norm_time(st, "startTime")
            _norm_time(st, "completionTime")
        _norm_conditions(obj)
    elif kind == "CronJob":
        tmpl = util.get_path(obj, "spec", "jobTemplate", "spec", "template")
        if isinstance(tmpl, dict):
            _norm_pod_spec(tmpl.get("spec"))
    elif kind == "Event":
        if "regarding" in obj or "note" in obj or "reportingController" in obj or "deprecatedSource" in obj:
            _norm_time(obj, "eventTime", micro=True)
            _norm_time(obj, "deprecatedFirstTimestamp")
            _norm_time(obj, "deprecatedLastTimestamp")
        else:
            _norm_time(obj, "firstTimestamp")
            _norm_time(obj, "lastTimestamp")
            _norm_time(obj, "eventTime", micro=True)
        series = obj.get("series")
        if isinstance(series, dict):
            _norm_time(series, "lastObservedTime", micro=True)
    elif kind == "Lease":
        spec = obj.get("spec")
        if isinstance(spec, dict):
            _norm_time(spec, "acquireTime", micro=True)
            _norm_time(spec, "renewTime", micro=True)
    elif kind == "PodDisruptionBudget":
        if st:
            dp = st.get("disruptedPods")
            if isinstance(dp, dict):
                for k in list(dp):
                    _norm_time(dp, k)
        _norm_conditions(obj)
    elif kind in ("Namespace", "CustomResourceDefinition", "PersistentVolumeClaim"):
        _norm_conditions(obj)
    elif kind == "ResourceQuota":
        _norm_quantities(util.get_path(obj, "spec", "hard"), "spec.hard")
        if st:
            _norm_quantities(st.get("hard"), "status.hard")
            _norm_quantities(st.get("used"), "status.used")


# ---------------------------------------------------------------- pods

def _image_pull_policy(image):
    if not isinstance(image, str):
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    if ":" not in last or last.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def default_container(c):
    c.setdefault("resources", {})
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("imagePullPolicy", _image_pull_policy(c.get("image")))
    for p in c.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
    res = c.get("resources")
    if isinstance(res, dict) and isinstance(res.get("limits"), dict):
        req = res.setdefault("requests", {})
        if isinstance(req, dict):
            for k, v in res["limits"].items():
                req.setdefault(k, v)
    for env in c.get("env") or []:
        fr = util.get_path(env, "valueFrom", "fieldRef")
        if isinstance(fr, dict):
            fr.setdefault("apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        p = c.get(probe)
        if isinstance(p, dict):
            p.setdefault("timeoutSeconds", 1)
            p.setdefault("periodSeconds", 10)
            p.setdefault("successThreshold", 1)
            p.setdefault("failureThreshold", 3)


def default_pod_spec(spec, template=False):
    if not isinstance(spec, dict):
        return
    for _, _, c in _containers(spec):
        default_container(c)
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    if not template:
        spec.setdefault("enableServiceLinks", True)
    for v in spec.get("volumes") or []:
        if isinstance(v, dict) and not any(k for k in v if k != "name"):
            v["emptyDir"] = {}
        if isinstance(v, dict) and isinstance(v.get("secret"), dict):
            v["secret"].setdefault("defaultMode", 420)
        if isinstance(v, dict) and isinstance(v.get("configMap"), dict):
            v["configMap"].setdefault("defaultMode", 420)


def pod_qos(spec):
    req_any = False
    guaranteed = True
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            res = c.get("resources") or {}
            req = res.get("requests") or {}
            lim = res.get("limits") or {}
            for r in ("cpu", "memory"):
                if r in req or r in lim:
                    req_any = True
            for r in ("cpu", "memory"):
                if r not in lim:
                    guaranteed = False
                elif r in req and util.quantity_or_zero(req[r]) != util.quantity_or_zero(lim[r]):
                    guaranteed = False
    if not req_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _tolerates(tols, key, effect):
    for t in tols:
        if not isinstance(t, dict):
            continue
        if t.get("effect") not in (None, "", effect):
            continue
        if t.get("operator") == "Exists" and not t.get("key"):
            return True
        if t.get("key") == key:
            return True
    return False


def admit_pod(api, pod):
    spec = pod.setdefault("spec", {})
    default_pod_spec(spec)
    tols = spec.get("tolerations") or []
    for dt in POD_DEFAULT_TOLERATIONS:
        if not _tolerates(tols, dt["key"], "NoExecute"):
            tols.append(dict(dt))
    spec["tolerations"] = tols
    pcn = spec.get("priorityClassName")
    if pcn:
        value = SYSTEM_PRIORITY_CLASSES.get(pcn)
        policy = "PreemptLowerPriority"
        if value is None:
            pc = api.get_object_internal("scheduling.k8s.io", "priorityclasses", "", pcn)
            if pc is None:
                raise E.ApiError(403, "Forbidden", 'pods "%s" is forbidden: no PriorityClass with name %s was found'
                                 % (util.get_path(pod, "metadata", "name", default=""), pcn),
                                 {"name": util.get_path(pod, "metadata", "name", default=""), "kind": "pods"})
            value = pc.get("value", 0)
            policy = pc.get("preemptionPolicy") or policy
        spec["priority"] = value
        spec.setdefault("preemptionPolicy", policy)
    else:
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    pod["status"] = {"phase": "Pending", "qosClass": pod_qos(spec)}


_POD_MUTABLE_MSG = ("pod updates may not change fields other than `spec.containers[*].image`,"
                    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                    "(allow it to be set to 1 if it was previously negative)")


def pod_update_errors(new, old):
    a = util.deepcopy(new.get("spec") or {})
    b = util.deepcopy(old.get("spec") or {})
    for spec in (a, b):
        for key in ("containers", "initContainers"):
            for c in spec.get(key) or []:
                if isinstance(c, dict):
                    c.pop("image", None)
        spec.pop("activeDeadlineSeconds", None)
        spec.pop("terminationGracePeriodSeconds", None)
        spec.pop("schedulingGates", None)
    old_tols = b.pop("tolerations", None) or []
    new_tols = a.pop("tolerations", None) or []
    errs = []
    if any(t not in new_tols for t in old_tols):
        errs.append(E.forbidden("spec.tolerations", "existing toleration can not be modified except its "
                                "tolerationSeconds"))
    if a != b:
        errs.append(E.forbidden("spec", _POD_MUTABLE_MSG))
    ns = util.get_path(new, "spec", "schedulingGates") or []
    os_ = util.get_path(old, "spec", "schedulingGates") or []
    if ns and ns != os_ and (util.get_path(old, "spec", "nodeName") or any(g not in os_ for g in ns)):
        errs.append(E.forbidden("spec.schedulingGates", "only deletion is allowed, but found new scheduling "
                                "gate"))
    return errs


def _validate_resources(res, path, errs):
    if not isinstance(res, dict):
        return
    req = res.get("requests") or {}
    lim = res.get("limits") or {}
    for name, rl in (("requests", req), ("limits", lim)):
        for k, v in rl.items():
            try:
                q = util.parse_quantity(v)
            except util.QuantityError:
                continue
            if q < 0:
                errs.append(E.invalid("%s.%s[%s]" % (path, name, k), v, "must be greater than or equal to 0"))
    for k, v in req.items():
        if k in lim:
            try:
                if util.parse_quantity(v) > util.parse_quantity(lim[k]):
                    errs.append(E.invalid("%s.requests" % path, v, "must be less than or equal to %s limit of %s"
                                          % (k, lim[k])))
            except util.QuantityError:
                pass


def validate_tolerations(tols, path, errs):
    for i, t in enumerate(tols or []):
        p = "%s[%d]" % (path, i)
        if not isinstance(t, dict):
            errs.append(E.invalid(p, t, "must be an object"))
            continue
        op = t.get("operator") or "Equal"
        if t.get("key"):
            for m in util.qualified_name_errors(t["key"]):
                errs.append(E.invalid(p + ".key", t["key"], m))
        elif op != "Exists":
            errs.append(E.invalid(p + ".operator", op, "operator must be Exists when `key` is empty, which means "
                                  "\"match all values and all keys\""))
        if op not in ("Equal", "Exists"):
            errs.append(E.not_supported(p + ".operator", op, ["Equal", "Exists"]))
        if op == "Exists" and t.get("value"):
            errs.append(E.invalid(p + ".operator", t.get("value"), "value must be empty when `operator` is "
                                  "'Exists'"))
        eff = t.get("effect")
        if eff and eff not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            errs.append(E.not_supported(p + ".effect", eff, ["NoExecute", "NoSchedule", "PreferNoSchedule"]))
        if t.get("tolerationSeconds") is not None and eff != "NoExecute":
            errs.append(E.invalid(p + ".effect", eff, "effect must be 'NoExecute' when `tolerationSeconds` is set"))


def validate_pod_spec(spec, path, errs, template=False):
    if not isinstance(spec, dict):
        errs.append(E.required(path))
        return
    cs = spec.get("containers")
    if not cs:
        errs.append(E.required(path + ".containers"))
    names = set()
    for key, i, c in _containers(spec):
        p = "%s.%s[%d]" % (path, key, i)
        name = c.get("name")
        if not name:
            errs.append(E.required(p + ".name"))
        else:
            for m in util.dns1123_label_errors(name):
                errs.append(E.invalid(p + ".name", name, m))
            if name in names:
                errs.append(E.duplicate(p + ".name", name))
            names.add(name)
        if key != "ephemeralContainers" and not c.get("image"):
            errs.append(E.required(p + ".image"))
        _validate_resources(c.get("resources"), p + ".resources", errs)
        for j, port in enumerate(c.get("ports") or []):
            cp = port.get("containerPort") if isinstance(port, dict) else None
            if not isinstance(cp, int) or not 0 < cp < 65536:
                errs.append(E.invalid("%s.ports[%d].containerPort" % (p, j), cp,
                                      "must be between 1 and 65535, inclusive"))
    rp = spec.get("restartPolicy")
    if rp not in ("Always", "OnFailure", "Never"):
        errs.append(E.not_supported(path + ".restartPolicy", rp, ["Always", "OnFailure", "Never"]))
    dp = spec.get("dnsPolicy")
    if dp not in ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"):
        errs.append(E.not_supported(path + ".dnsPolicy", dp, ["ClusterFirstWithHostNet", "ClusterFirst",
                                                              "Default", "None"]))
    tgp = spec.get("terminationGracePeriodSeconds")
    if tgp is not None and (not isinstance(tgp, int) or isinstance(tgp, bool)):
        errs.append(E.invalid(path + ".terminationGracePeriodSeconds", tgp, "must be an integer"))
    for k, v in (spec.get("nodeSelector") or {}).items():
        for m in util.qualified_name_errors(k):
            errs.append(E.invalid(path + ".nodeSelector", k, m))
        if not isinstance(v, str):
            errs.append(E.invalid(path + ".nodeSelector", v, "must be a string"))
        else:
            for m in util.label_value_errors(v):
                errs.append(E.invalid(path + ".nodeSelector", v, m))
    validate_tolerations(spec.get("tolerations"), path + ".tolerations", errs)
    na = util.get_path(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(na, dict):
        terms = na.get("nodeSelectorTerms")
        if not terms:
            errs.append(E.required(path + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                                   ".nodeSelectorTerms", "must have at least one node selector term"))
        for i, t in enumerate(terms or []):
            for j, ex in enumerate((t or {}).get("matchExpressions") or []):
                op = ex.get("operator")
                ep = "%s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms" \
                     "[%d].matchExpressions[%d]" % (path, i, j)
                if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
                    errs.append(E.not_supported(ep + ".operator", op, ["DoesNotExist", "Exists", "Gt", "In", "Lt",
                                                                        "NotIn"]))
                elif op in ("In", "NotIn") and not ex.get("values"):
                    errs.append(E.required(ep + ".values", "must be specified when `operator` is 'In' or "
                                           "'NotIn'"))
                elif op in ("Exists", "DoesNotExist") and ex.get("values"):
                    errs.append(E.forbidden(ep + ".values", "may not be specified when `operator` is 'Exists' or "
                                            "'DoesNotExist'"))
                elif op in ("Gt", "Lt") and len(ex.get("values") or []) != 1:
                    errs.append(E.required(ep + ".values", "must be specified single value when `operator` is "
                                           "'Lt' or 'Gt'"))


# ---------------------------------------------------------------- nodes

def validate_taints(taints, path, errs):
    seen = set()
    for i, t in enumerate(taints or []):
        p = "%s[%d]" % (path, i)
        if not isinstance(t, dict):
            errs.append(E.invalid(p, t, "must be an object"))
            continue
        key = t.get("key")
        if not key:
            errs.append(E.required(p + ".key"))
        else:
            for m in util.qualified_name_errors(key):
                errs.append(E.invalid(p + ".key", key, m))
        val = t.get("value")
        if val:
            for m in util.label_value_errors(val):
                errs.append(E.invalid(p + ".value", val, m))
        eff = t.get("effect")
        if eff not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            if not eff:
                errs.append(E.required(p + ".effect"))
            else:
                errs.append(E.not_supported(p + ".effect", eff, ["NoSchedule", "PreferNoSchedule", "NoExecute"]))
        k = (key, eff)
        if k in seen:
            errs.append(E.FieldError("FieldValueDuplicate", p, "Duplicate value: map[string]interface {}"
                                     "{\"effect\":%s, \"key\":%s}: taints must be unique by key and effect pair"
                                     % (_q(eff), _q(key))))
        seen.add(k)
        if "timeAdded" in t and t["timeAdded"] is not None:
            try:
                util.parse_time(t["timeAdded"])
            except ValueError as e:
                raise DecodeError(str(e))


def _q(v):
    import json
    return json.dumps(v)


# ---------------------------------------------------------------- hooks

def default_workload(kind, obj):
    """SetDefaults_Deployment / ReplicaSet / DaemonSet / StatefulSet (create and update)."""
    spec = obj.setdefault("spec", {})
    if kind != "DaemonSet":
        spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    if kind == "Deployment":
        strat = spec.setdefault("strategy", {})
        strat.setdefault("type", "RollingUpdate")
        if strat["type"] == "RollingUpdate":
            ru = strat.setdefault("rollingUpdate", {})
            ru.setdefault("maxUnavailable", "25%")
            ru.setdefault("maxSurge", "25%")
        spec.setdefault("progressDeadlineSeconds", 600)
    elif kind == "DaemonSet":
        us = spec.setdefault("updateStrategy", {})
        us.setdefault("type", "RollingUpdate")
        if us["type"] == "RollingUpdate":
            ru = us.setdefault("rollingUpdate", {})
            ru.setdefault("maxUnavailable", 1)
            ru.setdefault("maxSurge", 0)
    elif kind == "StatefulSet":
        spec.setdefault("podManagementPolicy", "OrderedReady")
        us = spec.setdefault("updateStrategy", {})
        us.setdefault("type", "RollingUpdate")
        if us["type"] == "RollingUpdate":
            us.setdefault("rollingUpdate", {}).setdefault("partition", 0)
        spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
    tmpl = spec.get("template")
    if isinstance(tmpl, dict):
        tmpl.setdefault("metadata", {}).setdefault("creationTimestamp", None)
        default_pod_spec(tmpl.setdefault("spec", {}), template=True)


def prepare_create(api, rt, obj):
    """Defaults, admission and status reset for a new object."""
    kind = rt.kind
    md = obj["metadata"]
    if kind == "Pod":
        admit_pod(api, obj)
    elif kind == "Node":
        spec = obj.setdefault("spec", {})
        if spec.get("podCIDR") and not spec.get("podCIDRs"):
            spec["podCIDRs"] = [spec["podCIDR"]]
        taints = spec.get("taints") or []
        if not any(t.get("key") == "node.kubernetes.io/not-ready" and t.get("effect") == "NoSchedule"
                   for t in taints if isinstance(t, dict)):
            taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
        spec["taints"] = taints
        st = obj.setdefault("status", {})
        st.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 0}})
        st.setdefault("nodeInfo", {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                                   "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
                                   "kubeProxyVersion": "", "operatingSystem": "", "architecture": ""})
    elif kind == "Namespace":
        obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
        obj["status"] = {"phase": "Active"}
        md.setdefault("labels", {})["kubernetes.io/metadata.name"] = md.get("name")
    elif kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
        default_workload(kind, obj)
        obj["status"] = {} if kind != "DaemonSet" else {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                                        "desiredNumberScheduled": 0, "numberReady": 0}
        if kind == "ReplicaSet":
            obj["status"] = {"replicas": 0}
        if kind == "StatefulSet":
            obj["status"] = {"replicas": 0, "availableReplicas": 0}
    elif kind == "Job":
        spec = obj.setdefault("spec", {})
        spec.setdefault("parallelism", 1)
        spec.setdefault("completions", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        tmpl = spec.get("template")
        if isinstance(tmpl, dict):
            tmpl.setdefault("metadata", {}).setdefault("creationTimestamp", None)
            default_pod_spec(tmpl.setdefault("spec", {}), template=True)
        obj["status"] = {}
    elif kind == "PodDisruptionBudget":
        obj["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    elif kind == "Service":
        _default_service(api, obj)
    elif kind == "Secret":
        obj.setdefault("type", "Opaque")
        _secret_string_data(obj)
    elif kind == "StorageClass":
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")
    elif kind == "PriorityClass":
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    elif kind == "PersistentVolumeClaim":
        obj["status"] = {"phase": "Pending"}
        obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")


def _secret_string_data(obj):
    import base64
    sd = obj.pop("stringData", None)
    if isinstance(sd, dict):
        data = obj.setdefault("data", {})
        for k, v in sd.items():
            data[k] = base64.b64encode(str(v).encode()).decode()


_svc_counter = itertools.count(1)


def _default_service(api, obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec.get("clusterIP") != "None" and not spec.get("clusterIP"):
        n = next(_svc_counter)
        ip = str(ipaddress.IPv4Address(int(ipaddress.IPv4Address("10.96.0.0")) + 10 + n))
        spec["clusterIP"] = ip
    if spec.get("clusterIP"):
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    for p in spec.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
            p.setdefault("targetPort", p.get("port"))
    obj["status"] = {"loadBalancer": {}}


def prepare_update(rt, new, old, subresource):
    """What each endpoint may change (status vs main)."""
    kind = rt.kind
    if subresource == "status":
        keep_meta = new.get("metadata") or {}
        status = new.get("status")
        base = util.deepcopy(old)
        base["metadata"] = keep_meta
        if status is None:
            base.pop("status", None)
        else:
            base["status"] = status
        new.clear()
        new.update(base)
        md = new["metadata"]
        omd = old.get("metadata") or {}
        # the status endpoint never touches these
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            if k in omd:
                md[k] = omd[k]
            else:
                md.pop(k, None)
        if kind == "Pod":
            if "ownerReferences" in omd:
                md["ownerReferences"] = omd["ownerReferences"]
            else:
                md.pop("ownerReferences", None)
        if kind == "Namespace":
            pass
        return
    if rt.status_sub and "status" in rt.subresources:
        if "status" in old:
            new["status"] = util.deepcopy(old["status"])
        else:
            new.pop("status", None)
    if kind == "Namespace":
        if "spec" in old:
            new["spec"] = util.deepcopy(old["spec"])
        md = new.setdefault("metadata", {})
        md.setdefault("labels", {})["kubernetes.io/metadata.name"] = md.get("name")
    elif kind == "Secret":
        _secret_string_data(new)
    elif kind == "Service":
        spec = new.setdefault("spec", {})
        ospec = old.get("spec") or {}
        if not spec.get("clusterIP") and ospec.get("clusterIP"):
            spec["clusterIP"] = ospec["clusterIP"]
            spec["clusterIPs"] = ospec.get("clusterIPs", [ospec["clusterIP"]])
        for k in ("type", "sessionAffinity", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"):
            if k not in spec and k in ospec:
                spec[k] = ospec[k]


def update_defaults(api, rt, obj):
    """Defaults that also apply to updated objects."""
    kind = rt.kind
    if kind == "Pod":
        default_pod_spec(obj.setdefault("spec", {}))
    elif kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
        default_workload(kind, obj)
    elif kind == "Job":
        tmpl = util.get_path(obj, "spec", "template")
        if isinstance(tmpl, dict):
            tmpl.setdefault("metadata", {}).setdefault("creationTimestamp", None)
            default_pod_spec(tmpl.setdefault("spec", {}), template=True)
    elif kind == "Node":
        spec = obj.setdefault("spec", {})
        if spec.get("podCIDR") and not spec.get("podCIDRs"):
            spec["podCIDRs"] = [spec["podCIDR"]]


def spec_changed(rt, new, old):
    """For metadata.generation: anything but metadata and status."""
    for k in set(new) | set(old):
        if k in ("metadata", "status", "apiVersion", "kind"):
            continue
        if new.get(k) != old.get(k):
            return True
    return False


def validate(api, rt, obj, old, subresource=None):
    """FieldErrors of built-in kinds (create when old is None)."""
    errs = []
    kind = rt.kind
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    if kind == "Pod":
        if subresource is None:
            validate_pod_spec(obj.get("spec"), "spec", errs)
            if old is not None:
                errs.extend(pod_update_errors(obj, old))
        st = obj.get("status") or {}
        ph = st.get("phase")
        if ph and ph not in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
            errs.append(E.not_supported("status.phase", ph, ["Pending", "Running", "Succeeded", "Failed",
                                                             "Unknown"]))
        if old is not None and subresource == "status":
            oph = util.get_path(old, "status", "phase")
            if oph in ("Succeeded", "Failed") and ph != oph:
                errs.append(E.invalid("status.phase", ph, "may not be transitioned to non-terminal state"))
    elif kind == "Node":
        validate_taints(spec.get("taints"), "spec.taints", errs)
        if old is not None:
            ospec = old.get("spec") or {}
            if ospec.get("providerID") and spec.get("providerID") != ospec.get("providerID"):
                errs.append(E.forbidden("spec.providerID", 'node updates may not change providerID except from "" '
                                        "to valid"))
            if ospec.get("podCIDR") and spec.get("podCIDR") != ospec.get("podCIDR"):
                errs.append(E.forbidden("spec.podCIDRs", "node updates may not change podCIDR except from \"\" "
                                        "to valid"))
    elif kind in ("Deployment", "ReplicaSet", "DaemonSet", "StatefulSet"):
        sel = spec.get("selector")
        if sel is None:
            errs.append(E.required("spec.selector"))
        else:
            errs.extend(selectors.label_selector_object_errors(sel, "spec.selector"))
            if not sel.get("matchLabels") and not sel.get("matchExpressions"):
                errs.append(E.invalid("spec.selector", sel, "empty selector is invalid for deployment")
                            if kind == "Deployment" else E.invalid("spec.selector", sel, "empty selector is "
                                                                   "invalid for %s" % kind.lower()))
            else:
                tl = util.get_path(spec, "template", "metadata", "labels") or {}
                try:
                    ok = selectors.from_label_selector_object(sel).matches(tl)
                except ValueError:
                    ok = True
                if not ok:
                    errs.append(E.invalid("spec.template.metadata.labels", tl,
                                          "`selector` does not match template `labels`"))
        if old is not None and util.get_path(old, "spec", "selector") != sel and subresource is None:
            errs.append(E.invalid("spec.selector", sel, "field is immutable"))
        reps = spec.get("replicas")
        if reps is not None and (not isinstance(reps, int) or reps < 0):
            errs.append(E.invalid("spec.replicas", reps, "must be greater than or equal to 0"))
        tmpl = spec.get("template")
        if not isinstance(tmpl, dict):
            errs.append(E.required("spec.template"))
        else:
            validate_pod_spec(tmpl.get("spec"), "spec.template.spec", errs, template=True)
            rp = util.get_path(tmpl, "spec", "restartPolicy")
            if rp and rp != "Always":
                errs.append(E.not_supported("spec.template.spec.restartPolicy", rp, ["Always"]))
    elif kind == "Job":
        tmpl = spec.get("template")
        if isinstance(tmpl, dict):
            validate_pod_spec(tmpl.get("spec"), "spec.template.spec", errs, template=True)
            rp = util.get_path(tmpl, "spec", "restartPolicy")
            if rp not in ("OnFailure", "Never"):
                errs.append(E.not_supported("spec.template.spec.restartPolicy", rp, ["OnFailure", "Never"]))
        else:
            errs.append(E.required("spec.template"))
    elif kind == "PodDisruptionBudget":
        if "minAvailable" in spec and "maxUnavailable" in spec:
            errs.append(E.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"))
        for k in ("minAvailable", "maxUnavailable"):
            if k in spec:
                v = spec[k]
                if isinstance(v, bool) or not isinstance(v, (int, str)):
                    errs.append(E.invalid("spec." + k, v, "must be an integer or percentage"))
                elif isinstance(v, int) and v < 0:
                    errs.append(E.invalid("spec." + k, v, "must be greater than or equal to 0"))
                elif isinstance(v, str):
                    if not v.endswith("%") or not v[:-1].isdigit():
                        errs.append(E.invalid("spec." + k, v, "a valid percent string must be a numeric string "
                                              "followed by an ending '%' (e.g. '1%',  or '93%', regex used for "
                                              "validation is '[0-9]+%')"))
                    elif int(v[:-1]) > 100:
                        errs.append(E.invalid("spec." + k, v, "must not be greater than 100%"))
        errs.extend(selectors.label_selector_object_errors(spec.get("selector"), "spec.selector"))
        uep = spec.get("unhealthyPodEvictionPolicy")
        if uep is not None and uep not in ("IfHealthyBudget", "AlwaysAllow"):
            errs.append(E.not_supported("spec.unhealthyPodEvictionPolicy", uep, ["AlwaysAllow", "IfHealthyBudget"]))
    elif kind == "Lease":
        ld = spec.get("leaseDurationSeconds")
        if ld is not None and (not isinstance(ld, int) or ld <= 0):
            errs.append(E.invalid("spec.leaseDurationSeconds", ld, "must be greater than 0"))
        lt = spec.get("leaseTransitions")
        if lt is not None and (not isinstance(lt, int) or lt < 0):
            errs.append(E.invalid("spec.leaseTransitions", lt, "must be greater than or equal to 0"))
    elif kind == "Event":
        errs.extend(_validate_event(rt, obj))
    elif kind == "Namespace":
        pass
    return errs


def _validate_event(rt, obj):
    errs = []
    ns = util.get_path(obj, "metadata", "namespace") or ""
    if rt.group == "events.k8s.io":
        if "involvedObject" in obj or "message" in obj or "reportingComponent" in obj:
            obj = event_from_core(obj)
        for k in ("eventTime", "reportingController", "reportingInstance", "action", "reason"):
            if not obj.get(k):
                errs.append(E.required(k))
        reg = obj.get("regarding") or {}
        if reg.get("namespace") and reg.get("namespace") != ns:
            errs.append(E.invalid("regarding.namespace", reg.get("namespace"), "does not match event.namespace"))
        note = obj.get("note") or ""
        if len(note) > 1024:
            errs.append(E.too_long("note", 1024))
        t = obj.get("type")
        if t not in ("Normal", "Warning"):
            errs.append(E.not_supported("type", t, ["Normal", "Warning"]))
    else:
        io = obj.get("involvedObject") or {}
        if io.get("namespace") and ns and io.get("namespace") != ns:
            errs.append(E.invalid("involvedObject.namespace", io.get("namespace"), "does not match event.namespace"))
        t = obj.get("type")
        if t and t not in ("Normal", "Warning"):
            errs.append(E.not_supported("type", t, ["Normal", "Warning"]))
    return errs


def name_errors(rt, name):
    """Name validation used by the API server for this kind."""
    if rt.kind == "Namespace":
        return util.dns1123_label_errors(name)
    if rt.kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
        errs = []
        if name in (".", ".."):
            errs.append('may not be \'%s\'' % name)
        for ch in ("/", "%"):
            if ch in name:
                errs.append("may not contain '%s'" % ch)
        if rt.kind == "Lease":
            errs.extend(util.dns1123_subdomain_errors(name))
        return errs
    return util.dns1123_subdomain_errors(name)


# ---------------------------------------------------------------- events.k8s.io conversion

_EV2_TO_CORE = [("regarding", "involvedObject"), ("note", "message"), ("reportingController", "reportingComponent"),
                ("deprecatedSource", "source"), ("deprecatedFirstTimestamp", "firstTimestamp"),
                ("deprecatedLastTimestamp", "lastTimestamp"), ("deprecatedCount", "count")]


def event_to_core(obj):
    out = {}
    for k, v in obj.items():
        out[k] = v
    for a, b in _EV2_TO_CORE:
        if a in out:
            out[b] = out.pop(a)
    series = out.get("series")
    if isinstance(series, dict):
        out["series"] = {k: v for k, v in series.items()}
    out["apiVersion"] = "v1"
    out["kind"] = "Event"
    return out


def event_from_core(obj):
    out = {}
    for k, v in obj.items():
        out[k] = v
    for a, b in _EV2_TO_CORE:
        if b in out:
            v = out.pop(b)
            if b == "count" and not v:
                continue
            if b == "source" and not v:
                continue
            out[a] = v
    out["apiVersion"] = "events.k8s.io/v1"
    out["kind"] = "Event"
    return out


EV2_FIELD_MAP = {"regarding.kind": "involvedObject.kind", "regarding.namespace": "involvedObject.namespace",
                 "regarding.name": "involvedObject.name", "regarding.uid": "involvedObject.uid",
                 "regarding.apiVersion": "involvedObject.apiVersion",
                 "regarding.resourceVersion": "involvedObject.resourceVersion",
                 "regarding.fieldPath": "involvedObject.fieldPath", "reportingController": "reportingComponent",
                 "deprecatedSource": "source"}
