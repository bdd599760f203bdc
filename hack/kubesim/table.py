"""meta.k8s.io/v1 Table responses: the columns kubectl prints, computed on
the server as kube-apiserver does (pods, nodes, workloads, events, leases,
PDBs, CRDs' additionalPrinterColumns, and a default Name / Created At)."""

import json
import time

from . import jsonpath
from . import selector as selectors
from . import util

NAME_DESC = ("Name must be unique within a namespace. Is required when creating resources, although some "
             "resources may allow a client to request the generation of an appropriate name automatically. "
             "Name is primarily intended for creation idempotence and configuration definition. Cannot be "
             "updated. More info: http://kubernetes.io/docs/user-guide/identifiers#names")
AGE_DESC = ("CreationTimestamp is a timestamp representing the server time when this object was created. It is "
            "not guaranteed to be set in happens-before order across separate operations. Clients may not set "
            "this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. "
            "Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
            "api-conventions.md#metadata")


def col(name, typ="string", desc="", priority=0, fmt=""):
    return {"name": name, "type": typ, "format": fmt, "description": desc, "priority": priority}


NAME_COL = col("Name", "string", NAME_DESC, 0, "name")
AGE_COL = col("Age", "string", AGE_DESC)

_META_ORDER = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
               "ownerReferences", "finalizers", "managedFields")


def partial_metadata(obj):
    md = obj.get("metadata") or {}
    out = {}
    for k in _META_ORDER:
        if k in md:
            out[k] = md[k]
    for k, v in md.items():
        if k not in out:
            out[k] = v
    if "creationTimestamp" not in out:
        out["creationTimestamp"] = None
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": out}


def _none(s):
    return s if s else "<none>"


def _age(obj, now):
    return util.age(util.get_path(obj, "metadata", "creationTimestamp"), now)


# ---------------------------------------------------------------- pods

POD_COLS = [
    NAME_COL,
    col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    col("Status", "string", "The aggregate status of the containers in this pod."),
    col("Restarts", "integer", "The number of times the containers in this pod have been restarted."),
    AGE_COL,
    col("IP", "string", "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet "
                        "allocated.", 1),
    col("Node", "string", "NodeName is a request to schedule this pod onto a specific node. If it is non-empty, "
                          "the scheduler simply schedules this pod onto that node, assuming that it fits resource "
                          "requirements.", 1),
    col("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts other pods on the node, "
        "but it cannot be scheduled right away as preemption victims receive their graceful termination periods. "
        "This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place "
        "the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources "
        "on this node to a higher priority pod that is created after preemption. As a result, this field may be "
        "different than PodSpec.nodeName when the pod is scheduled.", 1),
    col("Readiness Gates", "string", "If specified, all readiness gates will be evaluated for pod readiness. A pod "
        "is ready when all its containers are ready AND all conditions specified in the readiness gates have status "
        "equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/0007-pod-ready%2B%2B.md", 1),
]


def pod_status_reason(pod):
    st = pod.get("status") or {}
    spec = pod.get("spec") or {}
    reason = st.get("phase") or ""
    if st.get("reason"):
        reason = st["reason"]
    for c in st.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    initializing = False
    ics = st.get("initContainerStatuses") or []
    for i, cs in enumerate(ics):
        state = cs.get("state") or {}
        term = state.get("terminated")
        wait = state.get("waiting")
        if term and term.get("exitCode", 0) == 0:
            continue
        if term:
            if term.get("reason"):
                reason = "Init:" + term["reason"]
            elif term.get("signal"):
                reason = "Init:Signal:%d" % term["signal"]
            else:
                reason = "Init:ExitCode:%d" % term.get("exitCode", 0)
        elif wait and wait.get("reason") and wait["reason"] != "PodInitializing":
            reason = "Init:" + wait["reason"]
        else:
            reason = "Init:%d/%d" % (i, len(spec.get("initContainers") or []))
        initializing = True
        break
    if not initializing:
        has_running = False
        for cs in reversed(st.get("containerStatuses") or []):
            state = cs.get("state") or {}
            if state.get("waiting") and state["waiting"].get("reason"):
                reason = state["waiting"]["reason"]
            elif state.get("terminated") and state["terminated"].get("reason"):
                reason = state["terminated"]["reason"]
            elif state.get("terminated"):
                t = state["terminated"]
                reason = "Signal:%d" % t["signal"] if t.get("signal") else "ExitCode:%d" % t.get("exitCode", 0)
            elif cs.get("ready") and state.get("running"):
                has_running = True
        if reason == "Completed" and has_running:
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or [])
            reason = "Running" if ready else "NotReady"
    md = pod.get("metadata") or {}
    if md.get("deletionTimestamp") and st.get("reason") == "NodeLost":
        reason = "Unknown"
    elif md.get("deletionTimestamp"):
        reason = "Terminating"
    return reason


def pod_row(pod, now):
    st = pod.get("status") or {}
    spec = pod.get("spec") or {}
    total = len(spec.get("containers") or [])
    ready = sum(1 for cs in st.get("containerStatuses") or [] if cs.get("ready"))
    restarts = sum(int(cs.get("restartCount") or 0) for cs in st.get("containerStatuses") or [])
    ip = st.get("podIP") or ""
    rg = spec.get("readinessGates") or []
    if rg:
        conds = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
        tr = sum(1 for g in rg if conds.get(g.get("conditionType")) == "True")
        gates = "%d/%d" % (tr, len(rg))
    else:
        gates = "<none>"
    return [util.get_path(pod, "metadata", "name"), "%d/%d" % (ready, total), pod_status_reason(pod), restarts,
            _age(pod, now), _none(ip), _none(spec.get("nodeName")), _none(st.get("nominatedNodeName")), gates]


# ---------------------------------------------------------------- nodes

NODE_COLS = [
    NAME_COL,
    col("Status", "string", "The status of the node"),
    col("Roles", "string", "The roles of the node"),
    AGE_COL,
    col("Version", "string", "Kubelet Version reported by the node."),
    col("Internal-IP", "string", "List of addresses reachable to the node. Queried from cloud provider, if "
                                 "available.", 1),
    col("External-IP", "string", "List of addresses reachable to the node. Queried from cloud provider, if "
                                 "available.", 1),
    col("OS-Image", "string", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 "
                              "(wheezy)).", 1),
    col("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r' (e.g. "
                                    "3.16.0-0.bpo.4-amd64).", 1),
    col("Container-Runtime", "string", "ContainerRuntime Version reported by the node through runtime remote API "
                                       "(e.g. containerd://1.4.2).", 1),
]


def node_status(node):
    conds = {c.get("type"): c for c in util.get_path(node, "status", "conditions") or []}
    r = conds.get("Ready")
    if r is None:
        s = "Unknown"
    elif r.get("status") == "True":
        s = "Ready"
    elif r.get("status") == "False":
        s = "NotReady"
    else:
        s = "Unknown"
    if util.get_path(node, "spec", "unschedulable"):
        s += ",SchedulingDisabled"
    return s


def node_roles(node):
    roles = set()
    for k, v in (util.get_path(node, "metadata", "labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/"):
            r = k[len("node-role.kubernetes.io/"):]
            if r:
                roles.add(r)
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    return ",".join(sorted(roles)) if roles else "<none>"


def node_row(node, now):
    st = node.get("status") or {}
    addrs = st.get("addresses") or []
    internal = next((a.get("address") for a in addrs if a.get("type") == "InternalIP"), None)
    external = next((a.get("address") for a in addrs if a.get("type") == "ExternalIP"), None)
    info = st.get("nodeInfo") or {}
    return [util.get_path(node, "metadata", "name"), node_status(node), node_roles(node), _age(node, now),
            info.get("kubeletVersion") or "", _none(internal), _none(external),
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


# ---------------------------------------------------------------- workloads

def _containers_images(tmpl_spec):
    cs = (tmpl_spec or {}).get("containers") or []
    return ",".join(c.get("name", "") for c in cs), ",".join(c.get("image", "") for c in cs)


CONTAINERS_COL = col("Containers", "string", "Names of each container in the template.", 1)
IMAGES_COL = col("Images", "string", "Images referenced by each container in the template.", 1)

DEPLOY_COLS = [
    NAME_COL,
    col("Ready", "string", "Number of the pod with ready state"),
    col("Up-to-date", "string", "Total number of non-terminated pods targeted by this deployment that have the "
                                "desired template spec."),
    col("Available", "string", "Total number of available pods (ready for at least minReadySeconds) targeted by "
                               "this deployment."),
    AGE_COL, CONTAINERS_COL, IMAGES_COL,
    col("Selector", "string", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will "
                              "be the ones affected by this deployment.", 1),
]


def deploy_row(d, now):
    st = d.get("status") or {}
    spec = d.get("spec") or {}
    c, i = _containers_images(util.get_path(spec, "template", "spec"))
    return [util.get_path(d, "metadata", "name"), "%d/%d" % (st.get("readyReplicas", 0), spec.get("replicas", 0)),
            st.get("updatedReplicas", 0), st.get("availableReplicas", 0), _age(d, now), c, i,
            selectors.selector_to_string(spec.get("selector"))]


RS_COLS = [
    NAME_COL,
    col("Desired", "integer", "Replicas is the number of desired replicas. This is a pointer to distinguish "
                              "between explicit zero and unspecified. Defaults to 1."),
    col("Current", "integer", "Replicas is the most recently observed number of replicas."),
    col("Ready", "integer", "readyReplicas is the number of pods targeted by this ReplicaSet with a Ready "
                            "Condition."),
    AGE_COL, CONTAINERS_COL, IMAGES_COL,
    col("Selector", "string", "Selector is a label query over pods that should match the replica count.", 1),
]


def rs_row(r, now):
    st = r.get("status") or {}
    spec = r.get("spec") or {}
    c, i = _containers_images(util.get_path(spec, "template", "spec"))
    return [util.get_path(r, "metadata", "name"), spec.get("replicas", 0), st.get("replicas", 0),
            st.get("readyReplicas", 0), _age(r, now), c, i, selectors.selector_to_string(spec.get("selector"))]


DS_COLS = [
    NAME_COL,
    col("Desired", "integer", "The total number of nodes that should be running the daemon pod."),
    col("Current", "integer", "The number of nodes that are running at least 1 daemon pod and are supposed to "
                              "run the daemon pod."),
    col("Ready", "integer", "numberReady is the number of nodes that should be running the daemon pod and have one "
                            "or more of the daemon pod running with a Ready Condition."),
    col("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
    col("Available", "integer", "The number of nodes that should be running the daemon pod and have one or more of "
                                "the daemon pod running and available (ready for at least spec.minReadySeconds)"),
    col("Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a node. "
                                   "Selector which must match a node's labels for the pod to be scheduled on that "
                                   "node."),
    AGE_COL, CONTAINERS_COL, IMAGES_COL,
    col("Selector", "string", "A label query over pods that are managed by the daemon set. Must match in order to "
                              "be controlled. It must match the pod template's labels.", 1),
]


def ds_row(d, now):
    st = d.get("status") or {}
    spec = d.get("spec") or {}
    c, i = _containers_images(util.get_path(spec, "template", "spec"))
    ns = util.get_path(spec, "template", "spec", "nodeSelector") or {}
    sel = ",".join("%s=%s" % (k, v) for k, v in sorted(ns.items())) or "<none>"
    return [util.get_path(d, "metadata", "name"), st.get("desiredNumberScheduled", 0),
            st.get("currentNumberScheduled", 0), st.get("numberReady", 0), st.get("updatedNumberScheduled", 0),
            st.get("numberAvailable", 0), sel, _age(d, now), c, i, selectors.selector_to_string(spec.get("selector"))]


STS_COLS = [NAME_COL, col("Ready", "string", "Number of the pod with ready state"), AGE_COL, CONTAINERS_COL,
            IMAGES_COL]


def sts_row(s, now):
    st = s.get("status") or {}
    spec = s.get("spec") or {}
    c, i = _containers_images(util.get_path(spec, "template", "spec"))
    return [util.get_path(s, "metadata", "name"), "%d/%d" % (st.get("readyReplicas", 0), spec.get("replicas", 0)),
            _age(s, now), c, i]


JOB_COLS = [NAME_COL, col("Status", "string", "Status of the job."),
            col("Completions", "string", "The completed job pods and the desired completions."),
            col("Duration", "string", "Time required to complete the job."), AGE_COL, CONTAINERS_COL, IMAGES_COL,
            col("Selector", "string", "A label query over pods that should match the pod count.", 1)]


def job_row(j, now):
    st = j.get("status") or {}
    spec = j.get("spec") or {}
    c, i = _containers_images(util.get_path(spec, "template", "spec"))
    conds = {x.get("type"): x.get("status") for x in st.get("conditions") or []}
    status = "Complete" if conds.get("Complete") == "True" else "Failed" if conds.get("Failed") == "True" \
        else "Running"
    dur = ""
    if st.get("startTime"):
        try:
            end = util.parse_time(st["completionTime"]) if st.get("completionTime") else now
            dur = util.human_duration(end - util.parse_time(st["startTime"]))
        except ValueError:
            pass
    return [util.get_path(j, "metadata", "name"), status,
            "%d/%d" % (st.get("succeeded", 0), spec.get("completions", 1) or 1), dur, _age(j, now), c, i,
            selectors.selector_to_string(spec.get("selector"))]


# ---------------------------------------------------------------- others

NS_COLS = [NAME_COL, col("Status", "string", "The status of the namespace"), AGE_COL]


def ns_row(n, now):
    return [util.get_path(n, "metadata", "name"), util.get_path(n, "status", "phase") or "", _age(n, now)]


EVENT_COLS = [
    col("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
    col("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
    col("Reason", "string", "This should be a short, machine understandable string that gives the reason for the "
                            "transition into the object's current status."),
    col("Object", "string", "The object that this event is about."),
    col("Subobject", "string", "If referring to a piece of an object instead of an entire object, this string "
                               "should contain a valid JSON/Go field access statement, such as "
                               "desiredState.manifest.containers[2].", 1),
    col("Source", "string", "The component reporting this event. Should be a short machine understandable string.",
        1),
    col("Message", "string", "A human-readable description of the status of this operation."),
    col("First Seen", "string", "The time at which the event was first recorded. (Time of server receipt is in "
                                "TypeMeta.)", 1),
    col("Count", "string", "The number of times this event has occurred.", 1),
    col("Name", "string", NAME_DESC, 1, "name"),
]


def event_row(e, now):
    io = e.get("involvedObject") or {}
    last = e.get("lastTimestamp") or util.get_path(e, "series", "lastObservedTime") or e.get("eventTime")
    first = e.get("firstTimestamp") or e.get("eventTime")
    src = e.get("source") or {}
    source = src.get("component") or e.get("reportingComponent") or ""
    if src.get("host"):
        source += ", " + src["host"]
    count = e.get("count") or util.get_path(e, "series", "count") or 1
    obj = "%s/%s" % ((io.get("kind") or "").lower(), io.get("name") or "")
    return [util.age(last, now) if last else "<unknown>", e.get("type") or "", e.get("reason") or "", obj,
            io.get("fieldPath") or "", source, (e.get("message") or "").strip(),
            util.age(first, now) if first else "<unknown>", str(count), util.get_path(e, "metadata", "name")]


LEASE_COLS = [NAME_COL, col("Holder", "string", "The holder of the lease"), AGE_COL]


def lease_row(l, now):
    return [util.get_path(l, "metadata", "name"), util.get_path(l, "spec", "holderIdentity") or "", _age(l, now)]


PDB_COLS = [NAME_COL, col("Min Available", "string", "The minimum number of pods that must be available"),
            col("Max Unavailable", "string", "The maximum number of pods that may be unavailable"),
            col("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time"),
            AGE_COL]


def pdb_row(p, now):
    spec = p.get("spec") or {}
    mn = spec.get("minAvailable")
    mx = spec.get("maxUnavailable")
    return [util.get_path(p, "metadata", "name"), "N/A" if mn is None else str(mn),
            "N/A" if mx is None else str(mx), util.get_path(p, "status", "disruptionsAllowed") or 0, _age(p, now)]


CREATED_COL = col("Created At", "date", AGE_DESC)


def created_row(o, now):
    return [util.get_path(o, "metadata", "name"), util.get_path(o, "metadata", "creationTimestamp")]


CM_COLS = [NAME_COL, col("Data", "integer", "Data contains the configuration data."), AGE_COL]
SECRET_COLS = [NAME_COL, col("Type", "string", "Used to facilitate programmatic handling of secret data."),
               col("Data", "integer", "Data contains the secret data."), AGE_COL]
SVC_COLS = [NAME_COL, col("Type", "string", "type determines how the Service is exposed."),
            col("Cluster-IP", "string", "clusterIP is the IP address of the service."),
            col("External-IP", "string", "List of IP addresses for which nodes in the cluster will also accept "
                                         "traffic for this service."),
            col("Port(s)", "string", "The list of ports that are exposed by this service."), AGE_COL,
            col("Selector", "string", "Route service traffic to pods with label keys and values matching this "
                                      "selector.", 1)]


def svc_row(s, now):
    spec = s.get("spec") or {}
    ports = ",".join("%s/%s" % (p.get("port"), p.get("protocol", "TCP")) for p in spec.get("ports") or [])
    sel = ",".join("%s=%s" % kv for kv in sorted((spec.get("selector") or {}).items())) or "<none>"
    ext = ",".join(spec.get("externalIPs") or []) or "<none>"
    return [util.get_path(s, "metadata", "name"), spec.get("type", "ClusterIP"), spec.get("clusterIP") or "<none>",
            ext, ports or "<none>", _age(s, now), sel]


PC_COLS = [NAME_COL, col("Value", "integer", "value represents the integer value of this priority class."),
           col("Global-Default", "boolean", "globalDefault specifies whether this PriorityClass should be "
                                            "considered as the default priority for pods that do not have any "
                                            "priority class."),
           AGE_COL, col("PreemptionPolicy", "string", "preemptionPolicy is the Policy for preempting pods with lower "
                                                      "priority.", 1)]


def pc_row(p, now):
    return [util.get_path(p, "metadata", "name"), p.get("value", 0), bool(p.get("globalDefault")), _age(p, now),
            p.get("preemptionPolicy") or ""]


# ---------------------------------------------------------------- custom resources

def custom_columns(rt):
    cols = [NAME_COL]
    pcs = rt.printer_columns
    if pcs is None:
        pcs = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    for c in pcs:
        cols.append(col(c.get("name", ""), c.get("type", "string"),
                        c.get("description") or "Custom resource definition column (in JSONPath format): %s"
                        % c.get("jsonPath", ""), c.get("priority", 0), c.get("format", "")))
    return cols


def custom_row(rt, obj, now):
    cells = [util.get_path(obj, "metadata", "name")]
    pcs = rt.printer_columns
    if pcs is None:
        pcs = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    for c in pcs:
        try:
            res = jsonpath.compile(c.get("jsonPath", "")).find(obj)
        except jsonpath.JSONPathError:
            res = []
        if not res:
            cells.append(None)
            continue
        v = res[0]
        t = c.get("type", "string")
        if t == "string":
            if isinstance(v, str):
                cells.append(v)
            elif isinstance(v, bool):
                cells.append("true" if v else "false")
            elif isinstance(v, (int, float)):
                cells.append(json.dumps(v))
            elif isinstance(v, (dict, list)):
                cells.append(json.dumps(v, separators=(",", ":")))
            else:
                cells.append(None)
        elif t == "integer":
            cells.append(int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == int(v)
                         else None)
        elif t == "number":
            cells.append(v if isinstance(v, (int, float)) and not isinstance(v, bool) else None)
        elif t == "boolean":
            cells.append(v if isinstance(v, bool) else None)
        elif t == "date":
            if isinstance(v, str):
                try:
                    cells.append(util.human_duration(now - util.parse_time(v)))
                except ValueError:
                    cells.append(None)
            else:
                cells.append(None)
        else:
            cells.append(None)
    return cells


# ---------------------------------------------------------------- dispatch

_BUILTIN = {
    "pods": (POD_COLS, pod_row),
    "nodes": (NODE_COLS, node_row),
    "namespaces": (NS_COLS, ns_row),
    "deployments": (DEPLOY_COLS, deploy_row),
    "replicasets": (RS_COLS, rs_row),
    "daemonsets": (DS_COLS, ds_row),
    "statefulsets": (STS_COLS, sts_row),
    "jobs": (JOB_COLS, job_row),
    "events": (EVENT_COLS, event_row),
    "events2": (EVENT_COLS, lambda e, now: event_row(_ev2_to_core(e), now)),
    "leases": (LEASE_COLS, lease_row),
    "pdbs": (PDB_COLS, pdb_row),
    "crds": ([NAME_COL, CREATED_COL], created_row),
    "rbac": ([NAME_COL, CREATED_COL], created_row),
    "configmaps": (CM_COLS, lambda o, now: [util.get_path(o, "metadata", "name"),
                                            len(o.get("data") or {}) + len(o.get("binaryData") or {}), _age(o, now)]),
    "secrets": (SECRET_COLS, lambda o, now: [util.get_path(o, "metadata", "name"), o.get("type", ""),
                                             len(o.get("data") or {}), _age(o, now)]),
    "services": (SVC_COLS, svc_row),
    "priorityclasses": (PC_COLS, pc_row),
    "default": ([NAME_COL, CREATED_COL], created_row),
}


def _ev2_to_core(e):
    from .kinds import event_to_core
    return event_to_core(e)


def columns(rt):
    if rt.table == "custom":
        return custom_columns(rt)
    return _BUILTIN.get(rt.table, _BUILTIN["default"])[0]


def row(rt, obj, include_object="Metadata", now=None):
    now = now if now is not None else time.time()
    if rt.table == "custom":
        cells = custom_row(rt, obj, now)
    else:
        cells = _BUILTIN.get(rt.table, _BUILTIN["default"])[1](obj, now)
    if include_object == "None":
        o = None
    elif include_object == "Object":
        o = obj
    else:
        o = partial_metadata(obj)
    return {"cells": cells, "object": o}


def table(rt, objs, list_meta, include_object="Metadata", with_columns=True):
    now = time.time()
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "columnDefinitions": columns(rt) if with_columns else None,
            "rows": [row(rt, o, include_object, now) for o in objs]}
