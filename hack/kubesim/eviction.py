"""The pods/eviction subresource (policy/v1 Eviction) with the PDB checks
and answers of the current API server: pending or terminal pods are
deleted without a PDB check, more than one PDB is an error, an unready pod
may go when the budget is already met (IfHealthyBudget) or always
(AlwaysAllow), otherwise disruptionsAllowed must be positive and is
decremented with the pod recorded in status.disruptedPods."""

from . import errors as E
from . import selector as selectors
from . import util

MAX_DISRUPTED_PODS = 2000


def pod_ready(pod):
    for c in util.get_path(pod, "status", "conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def matching_pdbs(api, pod):
    prt = api.registry.get("policy", "v1", "poddisruptionbudgets")
    if prt is None:
        return None, None, []  # --omit-api policy/v1: no PDB can exist
    ns = util.get_path(pod, "metadata", "namespace")
    labels = util.get_path(pod, "metadata", "labels") or {}
    table = api.table_for(prt)
    lo, hi = table.range(ns)
    out = []
    for k in table.keys[lo:hi]:
        e = table.items[k]
        pdb = e.obj()
        try:
            sel = selectors.from_label_selector_object(util.get_path(pdb, "spec", "selector"))
        except ValueError:
            continue
        if sel.matches(labels):
            out.append((e, pdb))
    return prt, table, out


def _too_many(msg):
    return E.too_many_requests("Cannot evict pod as it would violate the pod's disruption budget.", 0,
                               [{"reason": "DisruptionBudget", "message": msg}])


def evict(api, ns, name, body, ctx):
    if not isinstance(body, dict):
        raise E.bad_request("invalid Eviction body")
    av = body.get("apiVersion")
    if av == "policy/v1" and api.registry.get("policy", "v1", "poddisruptionbudgets") is None:
        # --omit-api policy/v1: a 1.20 server's answer (recordings/13-curl-eviction.txt)
        raise E.bad_request('Eviction in version "v1" cannot be handled as a Eviction: no kind "Eviction" is '
                            'registered for version "policy/v1" in scheme '
                            '"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"')
    if av and av not in ("policy/v1", "policy/v1beta1"):
        raise E.bad_request('Eviction in version "%s" cannot be handled as a Eviction: no kind "Eviction" is '
                            'registered for version "%s"' % (av.split("/")[-1], av))
    if body.get("kind") and body["kind"] != "Eviction":
        raise E.bad_request("the kind in the data (%s) does not match the expected kind (Eviction)" % body["kind"])
    bname = util.get_path(body, "metadata", "name")
    if bname and bname != name:
        raise E.bad_request("name in URL does not match name in Eviction object")
    opts = body.get("deleteOptions") or {}
    dry = ctx.dry_run or (opts.get("dryRun") or []) == ["All"]
    prt_pods = api.registry.get("", "v1", "pods")
    with api.lock:
        ptable = api.table_for(prt_pods)
        entry = ptable.items.get(ns + "/" + name)
        if entry is None:
            raise E.not_found(prt_pods, name)
        pod = entry.obj()
        pre = opts.get("preconditions") or {}
        if pre.get("resourceVersion") and pre["resourceVersion"] != str(entry.rv):
            raise E.conflict_kind(prt_pods, name, "the ResourceVersion in the precondition (%s) does not match the "
                                  "ResourceVersion in record (%d). The object might have been modified"
                                  % (pre["resourceVersion"], entry.rv))
        if pre.get("uid") and pre["uid"] != entry.uid:
            raise E.conflict_kind(prt_pods, name, "Precondition failed: UID in precondition: %s, UID in object meta: "
                                  "%s" % (pre["uid"], entry.uid))
        phase = util.get_path(pod, "status", "phase")
        if phase in ("Succeeded", "Failed", "Pending") or util.get_path(pod, "metadata", "deletionTimestamp"):
            if not dry:
                _delete_pod(api, prt_pods, ptable, entry, pod, opts, ctx, mark=False)
            return 201, _success()
        prt, table, pdbs = matching_pdbs(api, pod)
        if len(pdbs) > 1:
            raise E.ApiError(500, "InternalError", "Internal error occurred: This pod has more than one "
                             "PodDisruptionBudget, which the eviction subresource does not support.",
                             {"causes": [{"message": "This pod has more than one PodDisruptionBudget, which the "
                                                     "eviction subresource does not support."}]})
        if pdbs:
            pe, pdb = pdbs[0]
            st = pdb.get("status") or {}
            policy = util.get_path(pdb, "spec", "unhealthyPodEvictionPolicy") or "IfHealthyBudget"
            ready = pod_ready(pod)
            skip = False
            if not ready:
                if policy == "AlwaysAllow":
                    skip = True
                elif st.get("currentHealthy", 0) >= st.get("desiredHealthy", 0) and st.get("desiredHealthy", 0) > 0:
                    skip = True
            if not skip:
                pname = util.get_path(pdb, "metadata", "name")
                if st.get("observedGeneration", 0) < util.get_path(pdb, "metadata", "generation", default=0):
                    raise _too_many("The disruption budget %s is still being processed by the server." % pname)
                allowed = st.get("disruptionsAllowed", 0)
                if allowed < 0:
                    raise E.ApiError(403, "Forbidden", "pdb disruptions allowed is negative")
                if len(st.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
                    raise E.ApiError(403, "Forbidden", "DisruptedPods map too big - too many evictions not confirmed "
                                     "by PDB controller")
                if allowed == 0:
                    raise _too_many("The disruption budget %s needs %d healthy pods and has %d currently"
                                    % (pname, st.get("desiredHealthy", 0), st.get("currentHealthy", 0)))
                if not dry:
                    new = util.deepcopy(pdb)
                    nst = new.setdefault("status", {})
                    nst["disruptionsAllowed"] = allowed - 1
                    nst.setdefault("disruptedPods", {})[name] = util.rfc3339()
                    if nst["disruptionsAllowed"] == 0:
                        _set_condition(nst, util.get_path(pdb, "metadata", "generation", default=1), False)
                    api._raw_update(prt, table, pe, pdb, new, "kube-apiserver", "status")
        if not dry:
            _delete_pod(api, prt_pods, ptable, entry, pod, opts, ctx, mark=True)
    return 201, _success()


def _set_condition(st, gen, allowed):
    conds = [c for c in st.get("conditions") or [] if c.get("type") != "DisruptionAllowed"]
    conds.append({"type": "DisruptionAllowed", "status": "True" if allowed else "False",
                  "observedGeneration": gen, "lastTransitionTime": util.rfc3339(),
                  "reason": "SufficientPods" if allowed else "InsufficientPods", "message": ""})
    st["conditions"] = conds


def _delete_pod(api, prt, table, entry, pod, opts, ctx, mark):
    if mark and not util.get_path(pod, "metadata", "deletionTimestamp"):
        phase = util.get_path(pod, "status", "phase")
        if phase not in ("Succeeded", "Failed"):
            new = util.deepcopy(pod)
            st = new.setdefault("status", {})
            conds = [c for c in st.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
            conds.append({"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                          "lastTransitionTime": util.rfc3339(), "reason": "EvictionByEvictionAPI",
                          "message": "Eviction API: evicting"})
            st["conditions"] = conds
            api._raw_update(prt, table, entry, pod, new, "kube-apiserver", "status")
            entry = table.items.get(entry.key)
    options = {k: v for k, v in opts.items() if k in ("gracePeriodSeconds", "propagationPolicy")}
    api._delete_locked(prt, table, entry, options, ctx)


def _success():
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
