#!/usr/bin/env python3
"""kube-sim conformance, API level (HTTP client and curl): auth, discovery,
object semantics, writes and their errors, CRD schemas, patches, server-side
apply, lists, selectors, pagination, watches, subresources, eviction."""

import base64
import json
import time

from simlib import SimTestCase, main

W = "/apis/example.com/v1/namespaces/default/widgets"
PODS = "/api/v1/namespaces/default/pods"


def widget(name, **spec):
    spec.setdefault("color", "red")
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def pod(name, labels=None, node=None, **spec):
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
         "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]}}
    if node:
        p["spec"]["nodeName"] = node
    p["spec"].update(spec)
    return p


class AuthDiscovery(SimTestCase):
    def test_token_required(self):
        st = self.assertStatus(self.sim.get(PODS, token=False), 401, "Unauthorized")
        self.assertEqual(st["message"], "Unauthorized")
        self.assertStatus(self.sim.get(PODS, token="wrong"), 401, "Unauthorized")
        self.assertStatus(self.sim.curl("GET", PODS, token="wrong"), 401, "Unauthorized")
        self.assertCode(self.sim.get(PODS), 200)

    def test_health_and_version(self):
        for p in ("/healthz", "/livez", "/readyz"):
            r = self.sim.get(p, token=False)
            self.assertCode(r, 200)
            self.assertEqual(r.body, b"ok")
        v = self.sim.get("/version").json()
        self.assertEqual(v["major"], "1")
        self.assertTrue(v["gitVersion"].startswith("v1."))

    def test_discovery_documents(self):
        api = self.sim.get("/api").json()
        self.assertEqual(api["kind"], "APIVersions")
        self.assertEqual(api["versions"], ["v1"])
        core = self.sim.get("/api/v1").json()
        names = {r["name"]: r for r in core["resources"]}
        for n in ("pods", "pods/status", "pods/binding", "pods/eviction", "nodes", "nodes/status", "namespaces",
                  "events"):
            self.assertIn(n, names)
        self.assertEqual(names["pods/eviction"]["group"], "policy")
        self.assertEqual(names["pods/eviction"]["version"], "v1")
        groups = {g["name"]: g for g in self.sim.get("/apis").json()["groups"]}
        for g in ("apps", "events.k8s.io", "policy", "coordination.k8s.io", "apiextensions.k8s.io", "example.com"):
            self.assertIn(g, groups)
        self.assertEqual(groups["policy"]["preferredVersion"]["version"], "v1")
        apps = {r["name"] for r in self.sim.get("/apis/apps/v1").json()["resources"]}
        self.assertTrue({"deployments", "deployments/scale", "replicasets", "daemonsets"} <= apps)
        ex = self.sim.get("/apis/example.com/v1").json()
        w = next(r for r in ex["resources"] if r["name"] == "widgets")
        self.assertEqual((w["kind"], w["namespaced"], w["shortNames"], w["categories"]),
                         ("Widget", True, ["wg"], ["demo"]))
        subs = {r["name"] for r in ex["resources"]}
        self.assertTrue({"widgets/status", "widgets/scale"} <= subs)
        self.assertStatus(self.sim.get("/apis/nope.example/v1"), 404, "NotFound")
        self.assertStatus(self.sim.get("/api/v1/nopes"), 404, "NotFound")

    def test_crd_added_at_run_time(self):
        crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "things.late.example"},
               "spec": {"group": "late.example", "scope": "Cluster",
                        "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                        "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                                      "schema": {"openAPIV3Schema": {"type": "object",
                                                                     "x-kubernetes-preserve-unknown-fields": True}}}]}}
        self.assertCode(self.sim.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd), 201)
        groups = {g["name"] for g in self.sim.get("/apis").json()["groups"]}
        self.assertIn("late.example", groups)
        rl = self.sim.get("/apis/late.example/v1alpha1").json()
        self.assertEqual(rl["resources"][0]["name"], "things")
        got = self.sim.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.late.example").json()
        conds = {c["type"]: c["status"] for c in got["status"]["conditions"]}
        self.assertEqual(conds, {"NamesAccepted": "True", "Established": "True"})
        r = self.sim.post("/apis/late.example/v1alpha1/things",
                          {"apiVersion": "late.example/v1alpha1", "kind": "Thing", "metadata": {"name": "t1"},
                           "anything": {"goes": 1}})
        self.assertCode(r, 201)
        self.assertEqual(r.json()["anything"], {"goes": 1})
        idx = self.sim.get("/openapi/v3").json()["paths"]
        self.assertIn("apis/late.example/v1alpha1", idx)
        doc = self.sim.get(idx["apis/late.example/v1alpha1"]["serverRelativeURL"]).json()
        self.assertIn("dev.late.v1alpha1.Thing".replace("dev.late", "example.late"), doc["components"]["schemas"])
        # deleting the CRD removes its objects and its API
        self.assertCode(self.sim.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.late.example"),
                        200)
        self.sim.wait_for(lambda: self.sim.get("/apis/late.example/v1alpha1").code == 404, msg="API gone")


    def test_openapi_v2_json_and_protobuf(self):
        """/openapi/v2 as the API server serves it: JSON, or protobuf (gnostic's openapi.v2.Document) to
        kubectl 1.20-1.26 (...spec.v2@v1.0+protobuf) and later (...spec.v2.v1.0+protobuf)."""
        from kubesim.protobuf import _fields
        for accept in ("application/json", "*/*", "application/json, */*"):
            r = self.sim.get("/openapi/v2", accept=accept)
            self.assertCode(r, 200, accept)
            self.assertEqual(r.headers["content-type"], "application/json")
        doc = r.json()
        self.assertEqual(doc["swagger"], "2.0")
        w = doc["definitions"]["com.example.v1.Widget"]
        self.assertEqual(w["x-kubernetes-group-version-kind"],
                         [{"group": "example.com", "kind": "Widget", "version": "v1"}])
        self.assertIn("color", w["properties"]["spec"]["properties"])
        patch = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
        self.assertIn("dryRun", [p["name"] for p in patch["parameters"]])
        self.assertIn("application/merge-patch+json", patch["consumes"])
        # nothing of OpenAPI v3 is left in v2
        self.assertNotIn("#/components/", r.body.decode())
        for accept in ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
                       "application/com.github.proto-openapi.spec.v2.v1.0+protobuf, application/json"):
            r = self.sim.get("/openapi/v2", accept=accept)
            self.assertCode(r, 200, accept)
            self.assertEqual(r.headers["content-type"], "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
            top = {}
            for num, _, v in _fields(r.body):
                top.setdefault(num, []).append(v)
            self.assertEqual(bytes(top[1][0]), b"2.0")
            names = set()
            for _, _, named in _fields(top[9][0]):  # Definitions.additional_properties: NamedSchema
                names.add(bytes(next(v for n, _, v in _fields(named) if n == 1)).decode())
            self.assertEqual(names, set(doc["definitions"]))
        self.assertStatus(self.sim.get("/openapi/v2", accept="text/html"), 406, "NotAcceptable")


class ObjectSemantics(SimTestCase):
    def test_create_metadata_and_already_exists(self):
        r = self.sim.post(W, widget("m1", size=2))
        self.assertCode(r, 201)
        md = r.json()["metadata"]
        for k in ("uid", "resourceVersion", "creationTimestamp"):
            self.assertTrue(md.get(k), k)
        self.assertEqual(md["generation"], 1)
        self.assertRegex(md["creationTimestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        st = self.assertStatus(self.sim.post(W, widget("m1")), 409, "AlreadyExists")
        self.assertEqual(st["details"], {"name": "m1", "group": "example.com", "kind": "widgets"})
        self.assertEqual(st["message"], 'widgets.example.com "m1" already exists')

    def test_generate_name(self):
        body = widget("")
        body["metadata"] = {"generateName": "gen-"}
        r = self.sim.post(W, body)
        self.assertCode(r, 201)
        self.assertRegex(r.json()["metadata"]["name"], r"^gen-[a-z0-9]{5}$")

    def test_resource_version_increases_and_conflict(self):
        a = self.sim.post(W, widget("m2")).json()
        b = self.sim.patch(W + "/m2", {"spec": {"size": 3}}).json()
        self.assertGreater(int(b["metadata"]["resourceVersion"]), int(a["metadata"]["resourceVersion"]))
        stale = dict(a)
        stale["spec"] = {"color": "blue"}
        st = self.assertStatus(self.sim.put(W + "/m2", stale), 409, "Conflict")
        self.assertIn("the object has been modified", st["message"])
        # custom resources refuse unconditional updates
        del stale["metadata"]["resourceVersion"]
        self.assertStatus(self.sim.put(W + "/m2", stale), 422, "Invalid")
        # a no-op update does not bump resourceVersion
        cur = self.sim.get(W + "/m2").json()
        again = self.sim.put(W + "/m2", cur).json()
        self.assertEqual(again["metadata"]["resourceVersion"], cur["metadata"]["resourceVersion"])

    def test_generation_only_for_spec_changes_with_status_subresource(self):
        w = self.sim.post(W, widget("m3")).json()
        w2 = self.sim.patch(W + "/m3", {"metadata": {"labels": {"x": "y"}}}).json()
        self.assertEqual(w2["metadata"]["generation"], 1)
        w3 = self.sim.patch(W + "/m3/status", {"status": {"phase": "Ready"}}).json()
        self.assertEqual(w3["metadata"]["generation"], 1)
        self.assertEqual(w3["status"]["phase"], "Ready")
        w4 = self.sim.patch(W + "/m3", {"spec": {"size": 9}, "status": {"phase": "Ignored"}}).json()
        self.assertEqual(w4["metadata"]["generation"], 2)
        self.assertEqual(w4["status"]["phase"], "Ready", "main endpoint ignores status")
        w5 = self.sim.put(W + "/m3/status", dict(w4, spec={"color": "blue"}, status={"phase": "Done"})).json()
        self.assertEqual(w5["spec"]["color"], "red", "status endpoint ignores spec")
        self.assertEqual(w5["status"]["phase"], "Done")
        self.assertEqual(self.sim.get(W + "/m3/status").json()["status"]["phase"], "Done")

    def test_finalizers_mark_then_delete(self):
        body = widget("m4")
        body["metadata"]["finalizers"] = ["example.com/hold"]
        self.sim.post(W, body)
        r = self.sim.delete(W + "/m4")
        self.assertCode(r, 200)
        md = r.json()["metadata"]
        self.assertIn("deletionTimestamp", md)
        self.assertEqual(md["deletionGracePeriodSeconds"], 0)
        self.assertCode(self.sim.get(W + "/m4"), 200)
        # no new finalizers while terminating
        self.assertStatus(self.sim.patch(W + "/m4", {"metadata": {"finalizers": ["example.com/hold", "x.io/y"]}}),
                          422, "Invalid")
        self.assertCode(self.sim.patch(W + "/m4", {"metadata": {"finalizers": None}}), 200)
        self.assertStatus(self.sim.get(W + "/m4"), 404, "NotFound")

    def test_delete_preconditions_and_status(self):
        w = self.sim.post(W, widget("m5")).json()
        st = self.assertStatus(self.sim.delete(W + "/m5", {"preconditions": {"resourceVersion": "1"}}), 409,
                               "Conflict")
        self.assertIn("the ResourceVersion in the precondition (1) does not match", st["message"])
        self.assertStatus(self.sim.delete(W + "/m5", {"preconditions": {"uid": "nope"}}), 409, "Conflict")
        r = self.sim.delete(W + "/m5", {"preconditions": {"uid": w["metadata"]["uid"]}})
        self.assertCode(r, 200)
        self.assertEqual(r.json()["status"], "Success")
        self.assertEqual(r.json()["details"]["uid"], w["metadata"]["uid"])
        self.assertStatus(self.sim.delete(W + "/m5"), 404, "NotFound")

    def test_dry_run(self):
        r = self.sim.post(W + "?dryRun=All", widget("m6"))
        self.assertCode(r, 201)
        self.assertStatus(self.sim.get(W + "/m6"), 404, "NotFound")

    def test_namespace_checks(self):
        st = self.assertStatus(self.sim.post("/api/v1/namespaces/missing/pods", pod("p")), 404, "NotFound")
        self.assertEqual(st["message"], 'namespaces "missing" not found')
        b = pod("p")
        b["metadata"]["namespace"] = "other"
        self.assertStatus(self.sim.post(PODS, b), 400, "BadRequest")
        self.assertStatus(self.sim.delete("/api/v1/namespaces/default"), 403, "Forbidden")

    def test_malformed_and_wrong_kind(self):
        self.assertStatus(self.sim.post(W, '{"apiVersion":'), 400, "BadRequest")
        self.assertStatus(self.sim.post(W, {"apiVersion": "example.com/v1", "kind": "Gizmo",
                                            "metadata": {"name": "x"}}), 400, "BadRequest")
        self.assertStatus(self.sim.get(PODS, accept="text/html"), 406, "NotAcceptable")
        self.assertStatus(self.sim.get(PODS + "/x/eviction"), 405, "MethodNotAllowed")

    def test_pod_defaults_and_graceful_delete(self):
        p = self.sim.post(PODS, pod("g1")).json()
        spec = p["spec"]
        self.assertEqual(spec["restartPolicy"], "Always")
        self.assertEqual(spec["terminationGracePeriodSeconds"], 30)
        self.assertEqual(spec["containers"][0]["imagePullPolicy"], "IfNotPresent")
        self.assertEqual([t["key"] for t in spec["tolerations"]],
                         ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"])
        self.assertEqual(p["status"], {"phase": "Pending", "qosClass": "BestEffort"})
        # an unscheduled pod goes at once; a bound pod stays Terminating (no kubelet here)
        r = self.sim.delete(PODS + "/g1")
        self.assertEqual(r.json()["metadata"]["deletionGracePeriodSeconds"], 0)
        self.assertStatus(self.sim.get(PODS + "/g1"), 404, "NotFound")
        self.sim.post(PODS, pod("g2", node="somewhere"))
        r = self.sim.delete(PODS + "/g2").json()
        self.assertEqual(r["metadata"]["deletionGracePeriodSeconds"], 30)
        self.assertCode(self.sim.get(PODS + "/g2"), 200)
        self.sim.delete(PODS + "/g2", {"gracePeriodSeconds": 0})
        self.assertStatus(self.sim.get(PODS + "/g2"), 404, "NotFound")

    def test_pod_spec_is_immutable(self):
        p = self.sim.post(PODS, pod("imm")).json()
        p["spec"]["restartPolicy"] = "Never"
        st = self.assertStatus(self.sim.put(PODS + "/imm", p), 422, "Invalid")
        self.assertIn("pod updates may not change fields", st["message"])

    def test_node_provider_id_is_immutable_and_quantities_canonical(self):
        n = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n-imm"},
             "spec": {"providerID": "proxmox://r/1"},
             "status": {"capacity": {"cpu": "4000m", "memory": "8192Mi", "pods": "110"}}}
        got = self.sim.post("/api/v1/nodes", n).json()
        self.assertEqual(got["status"]["capacity"], {"cpu": "4", "memory": "8Gi", "pods": "110"})
        self.assertIn({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}, got["spec"]["taints"])
        self.assertStatus(self.sim.patch("/api/v1/nodes/n-imm", {"spec": {"providerID": "proxmox://r/2"}}), 422,
                          "Invalid")

    def test_lease_microtime_and_conflict(self):
        L = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
        r = self.sim.post(L, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l1"},
                              "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                                       "renewTime": "2026-01-01T00:00:00Z"}}).json()
        self.assertEqual(r["spec"]["renewTime"], "2026-01-01T00:00:00.000000Z")
        r["spec"]["holderIdentity"] = "b"
        self.assertCode(self.sim.put(L + "/l1", r), 200)
        r["spec"]["holderIdentity"] = "c"
        st = self.assertStatus(self.sim.put(L + "/l1", r), 409, "Conflict")
        self.assertEqual(st["details"]["kind"], "leases")
        bad = dict(r, metadata={"name": "l1"}, spec={"renewTime": "yesterday"})
        self.assertStatus(self.sim.put(L + "/l1", bad), 400, "BadRequest")

    def test_events_both_apis(self):
        ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"},
              "eventTime": "2026-01-01T00:00:00.123456Z", "reportingController": "carpenter.dev/controller",
              "reportingInstance": "carpenter-1", "action": "Provisioning", "reason": "Launched", "type": "Normal",
              "note": "launched a VM", "regarding": {"kind": "NodeClaim", "name": "nc1", "apiVersion": "karpenter.sh/v1"}}
        self.assertCode(self.sim.post("/apis/events.k8s.io/v1/namespaces/default/events", ev), 201)
        core = self.sim.get("/api/v1/namespaces/default/events/e1").json()
        self.assertEqual(core["message"], "launched a VM")
        self.assertEqual(core["involvedObject"]["name"], "nc1")
        self.assertEqual(core["reportingComponent"], "carpenter.dev/controller")
        r = self.sim.get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dnc1").json()
        self.assertEqual(len(r["items"]), 1)
        r = self.sim.get("/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Dnc1").json()
        self.assertEqual(r["items"][0]["note"], "launched a VM")
        bad = dict(ev, metadata={"name": "e2"})
        del bad["reportingController"]
        self.assertStatus(self.sim.post("/apis/events.k8s.io/v1/namespaces/default/events", bad), 422, "Invalid")


class Validation(SimTestCase):
    def test_schema_errors(self):
        st = self.assertStatus(self.sim.post(W, widget("v1", color="purple", size=1000)), 422, "Invalid")
        self.assertEqual(st["message"], 'Widget.example.com "v1" is invalid: [spec.color: Unsupported value: '
                                        '"purple": supported values: "red", "green", "blue", spec.size: Invalid '
                                        'value: 1000: spec.size in body should be less than or equal to 100]')
        self.assertEqual([(c["reason"], c["field"]) for c in st["details"]["causes"]],
                         [("FieldValueNotSupported", "spec.color"), ("FieldValueInvalid", "spec.size")])
        cases = [
            ({"spec": {"size": 1}}, "FieldValueRequired", "spec.color"),
            ({"spec": {"color": "red", "size": "big"}}, "FieldValueInvalid", "spec.size"),
            ({"spec": {"color": "red", "owner": "Bad_Owner"}}, "FieldValueInvalid", "spec.owner"),
            ({"spec": {"color": "red", "owner": "a" * 21}}, "FieldValueTooLong", "spec.owner"),
            ({"spec": {"color": "red", "tags": ["a", "b", "c", "d"]}}, "FieldValueTooMany", "spec.tags"),
            ({"spec": {"color": "red", "labels": {"a": "1", "b": "2", "c": "3"}}}, "FieldValueTooMany",
             "spec.labels"),
            ({"spec": {"color": "red", "size": -1}}, "FieldValueInvalid", "spec.size"),
            ({"spec": {"color": "red", "parts": [{"name": "x"}, {"name": "x"}]}}, "FieldValueDuplicate",
             "spec.parts[1]"),
            ({"spec": {"color": "red", "quantity": True}}, "FieldValueInvalid", "spec.quantity"),
        ]
        for i, (body, reason, field) in enumerate(cases):
            b = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "bad%d" % i}}
            b.update(body)
            st = self.assertStatus(self.sim.post(W, b), 422, "Invalid", msg=str(body))
            self.assertIn((reason, field), [(c["reason"], c["field"]) for c in st["details"]["causes"]], st)

    def test_defaults_on_create_and_update(self):
        w = self.sim.post(W, widget("d1", parts=[{"name": "p"}])).json()
        self.assertEqual(w["spec"]["size"], 1)
        self.assertEqual(w["spec"]["parts"], [{"name": "p", "count": 1}])
        w2 = self.sim.patch(W + "/d1", {"spec": {"size": None, "parts": [{"name": "q"}]}}).json()
        self.assertEqual(w2["spec"]["size"], 1)
        self.assertEqual(w2["spec"]["parts"], [{"name": "q", "count": 1}])

    def test_int_or_string_and_cel_ignored(self):
        for i, q in enumerate((3, "10%")):
            self.assertCode(self.sim.post(W, widget("q%d" % i, quantity=q)), 201)

    def test_unknown_fields(self):
        b = widget("u1", extra=1)
        r = self.sim.post(W, b)
        self.assertCode(r, 201)
        self.assertNotIn("extra", r.json()["spec"])
        self.assertIn('unknown field \\"spec.extra\\"', r.headers.get("warning", ""))
        st = self.assertStatus(self.sim.post(W + "?fieldValidation=Strict", widget("u2", extra=1)), 400,
                               "BadRequest")
        self.assertEqual(st["message"], 'strict decoding error: unknown field "spec.extra"')
        r = self.sim.post(W + "?fieldValidation=Ignore", widget("u3", extra=1))
        self.assertNotIn("warning", r.headers)

    def test_metadata_validation(self):
        b = widget("Bad Name")
        self.assertStatus(self.sim.post(W, b), 422, "Invalid")
        b = widget("lbl")
        b["metadata"]["labels"] = {"bad key!": "v"}
        st = self.assertStatus(self.sim.post(W, b), 422, "Invalid")
        self.assertEqual(st["details"]["causes"][0]["field"], "metadata.labels")


class Patches(SimTestCase):
    def test_merge_json_and_smp(self):
        self.sim.post(W, widget("p1", tags=["a"]))
        r = self.sim.patch(W + "/p1", {"metadata": {"labels": {"k": "v"}}, "spec": {"tags": ["x"]}}).json()
        self.assertEqual(r["spec"]["tags"], ["x"])
        r = self.sim.patch(W + "/p1", {"metadata": {"labels": {"k": None}}}).json()
        self.assertNotIn("labels", r["metadata"])
        r = self.sim.patch(W + "/p1", [{"op": "add", "path": "/spec/tags/-", "value": "y"},
                                       {"op": "replace", "path": "/spec/size", "value": 5}],
                           ptype="application/json-patch+json").json()
        self.assertEqual((r["spec"]["tags"], r["spec"]["size"]), (["x", "y"], 5))
        st = self.assertStatus(self.sim.patch(W + "/p1", [{"op": "test", "path": "/spec/size", "value": 9}],
                                              ptype="application/json-patch+json"), 422, "Invalid")
        self.assertEqual(st["details"], {})
        self.assertStatus(self.sim.patch(W + "/p1", {"spec": {"size": 1}},
                                         ptype="application/strategic-merge-patch+json"), 415, "UnsupportedMediaType")
        self.assertStatus(self.sim.patch(W + "/p1", {"spec": {}}, ptype="text/plain"), 415, "UnsupportedMediaType")
        self.assertStatus(self.sim.patch(W + "/nope", {"spec": {}}), 404, "NotFound")

    def test_strategic_merge_patch_keys(self):
        p = pod("smp", labels={"a": "1"})
        p["spec"]["containers"].append({"name": "d", "image": "registry.invalid/d:1"})
        p["metadata"]["finalizers"] = ["x.io/a"]
        self.sim.post(PODS, p)
        SMP = "application/strategic-merge-patch+json"
        r = self.sim.patch(PODS + "/smp", {"metadata": {"finalizers": ["x.io/b"]},
                                           "spec": {"containers": [{"name": "d", "image": "registry.invalid/d:2"}]}},
                           ptype=SMP).json()
        self.assertEqual([(c["name"], c["image"]) for c in r["spec"]["containers"]],
                         [("c", "registry.invalid/x:1"), ("d", "registry.invalid/d:2")])
        self.assertEqual(r["metadata"]["finalizers"], ["x.io/b", "x.io/a"])
        r = self.sim.patch(PODS + "/smp", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x.io/a"]}},
                           ptype=SMP).json()
        self.assertEqual(r["metadata"]["finalizers"], ["x.io/b"])
        # tolerations have no merge key in the real API: the list is replaced
        r = self.sim.patch(PODS + "/smp", {"spec": {"tolerations": [{"key": "k", "operator": "Exists"}]}},
                           ptype=SMP)
        self.assertCode(r, 422)  # ... and pod updates may only add tolerations
        r = self.sim.patch(PODS + "/smp/status", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
                           ptype=SMP).json()
        r = self.sim.patch(PODS + "/smp/status", {"status": {"conditions": [{"type": "Custom", "status": "True"}]}},
                           ptype=SMP).json()
        self.assertEqual([c["type"] for c in r["status"]["conditions"]], ["Custom", "Ready"])
        self.assertIsNone(r["status"]["conditions"][0]["lastProbeTime"])
        n = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "smp-node"},
             "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}
        self.sim.post("/api/v1/nodes", n)
        r = self.sim.patch("/api/v1/nodes/smp-node", {"spec": {"taints": [{"key": "b", "effect": "NoSchedule"}]}},
                           ptype=SMP).json()
        self.assertEqual(r["spec"]["taints"], [{"key": "b", "effect": "NoSchedule"}], "taints are replaced")

    def test_server_side_apply(self):
        A = "application/apply-patch+yaml"
        doc = ("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: ssa\n  labels:\n    owner: ctl\n"
               "spec:\n  color: green\n  size: 1\n")
        r = self.sim.patch(W + "/ssa?fieldManager=ctl", doc, ptype=A)
        self.assertCode(r, 201)
        mf = r.json()["metadata"]["managedFields"]
        self.assertEqual([(m["manager"], m["operation"]) for m in mf], [("ctl", "Apply")])
        self.assertEqual(mf[0]["fieldsV1"], {"f:metadata": {"f:labels": {"f:owner": {}}},
                                             "f:spec": {"f:color": {}, "f:size": {}}})
        other = ("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: ssa\nspec:\n  color: green\n"
                 "  size: 50\n")
        st = self.assertStatus(self.sim.patch(W + "/ssa?fieldManager=other", other, ptype=A), 409, "Conflict")
        self.assertEqual(st["message"], 'Apply failed with 1 conflict: conflict with "ctl": .spec.size')
        self.assertEqual(st["details"]["causes"], [{"reason": "FieldManagerConflict",
                                                    "message": 'conflict with "ctl"', "field": ".spec.size"}])
        r = self.sim.patch(W + "/ssa?fieldManager=other&force=true", other, ptype=A).json()
        self.assertEqual(r["spec"]["size"], 50)
        # ctl stops applying its label: nobody else owns it, so it goes
        body = json.dumps({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "ssa"},
                           "spec": {"color": "green"}})
        r = self.sim.patch(W + "/ssa?fieldManager=ctl", body, ptype=A).json()
        self.assertNotIn("labels", r["metadata"])
        self.assertEqual(r["spec"]["size"], 50)
        st = self.assertStatus(self.sim.patch(W + "/ssa", other, ptype=A), 422, "Invalid")
        self.assertEqual(st["details"]["kind"], "PatchOptions")
        r = self.sim.patch(W + "/ssa/status?fieldManager=ctl-status",
                           "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: ssa\nstatus:\n"
                           "  phase: Ready\n", ptype=A).json()
        self.assertEqual(r["status"], {"phase": "Ready"})
        # update operations conflict too, reported with their API version
        self.sim.patch(W + "/ssa?fieldManager=editor", {"spec": {"color": "blue"}})
        st = self.assertStatus(self.sim.patch(W + "/ssa?fieldManager=other", other, ptype=A), 409, "Conflict")
        self.assertIn('conflict with "editor" using example.com/v1: .spec.color', st["message"])


class ListsAndWatches(SimTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        s = cls.sim
        s.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lw"}})
        P = "/api/v1/namespaces/lw/pods"
        for i in range(6):
            labels = {"app": "a" if i < 3 else "b", "tier": "web" if i % 2 else "db"}
            if i == 5:
                labels["canary"] = "yes"
            s.post(P, pod("lw-%d" % i, labels=labels, node="n%d" % (i % 2)))
        s.patch(P + "/lw-0/status", {"status": {"phase": "Running"}})

    def names(self, path):
        r = self.sim.get(path)
        self.assertCode(r, 200, path)
        return sorted(i["metadata"]["name"] for i in r.json()["items"])

    def test_label_selectors(self):
        P = "/api/v1/namespaces/lw/pods?labelSelector="
        q = __import__("urllib.parse").parse.quote
        self.assertEqual(self.names(P + q("app=a")), ["lw-0", "lw-1", "lw-2"])
        self.assertEqual(self.names(P + q("app==b,tier=web")), ["lw-3", "lw-5"])
        self.assertEqual(self.names(P + q("app!=a")), ["lw-3", "lw-4", "lw-5"])
        self.assertEqual(self.names(P + q("tier in (db)")), ["lw-0", "lw-2", "lw-4"])
        self.assertEqual(self.names(P + q("tier notin (db),app in (a,b)")), ["lw-1", "lw-3", "lw-5"])
        self.assertEqual(self.names(P + q("canary")), ["lw-5"])
        self.assertEqual(self.names(P + q("!canary,app=b")), ["lw-3", "lw-4"])
        self.assertStatus(self.sim.get(P + q("app in a")), 400, "BadRequest")

    def test_field_selectors(self):
        q = __import__("urllib.parse").parse.quote
        P = "/api/v1/namespaces/lw/pods?fieldSelector="
        self.assertEqual(self.names(P + q("metadata.name=lw-2")), ["lw-2"])
        self.assertEqual(self.names(P + q("spec.nodeName=n1")), ["lw-1", "lw-3", "lw-5"])
        self.assertEqual(self.names(P + q("status.phase=Running")), ["lw-0"])
        self.assertEqual(self.names(P + q("status.phase!=Running,spec.nodeName=n0")), ["lw-2", "lw-4"])
        self.assertEqual(self.names("/api/v1/pods?fieldSelector=" + q("metadata.namespace=lw,spec.nodeName=n0")),
                         ["lw-0", "lw-2", "lw-4"])
        st = self.assertStatus(self.sim.get(P + q("spec.providerID=x")), 400, "BadRequest")
        self.assertEqual(st["message"], "field label not supported: spec.providerID")
        self.assertEqual(self.names("/api/v1/nodes?fieldSelector=" + q("spec.unschedulable=false")), [])

    def test_pagination_is_a_consistent_snapshot(self):
        P = "/api/v1/namespaces/lw/pods"
        p1 = self.sim.get(P + "?limit=2").json()
        self.assertEqual([i["metadata"]["name"] for i in p1["items"]], ["lw-0", "lw-1"])
        self.assertEqual(p1["metadata"]["remainingItemCount"], 4)
        tok = p1["metadata"]["continue"]
        d = json.loads(base64.urlsafe_b64decode(tok + "=" * (-len(tok) % 4)))
        self.assertEqual((d["v"], d["start"]), ("meta.k8s.io/v1", "lw-1\x00"))
        self.sim.delete(P + "/lw-2", {"gracePeriodSeconds": 0})
        self.sim.post(P, pod("lw-10"))
        names = []
        while tok:
            page = self.sim.get(P + "?limit=2&continue=" + tok).json()
            self.assertEqual(page["metadata"]["resourceVersion"], p1["metadata"]["resourceVersion"])
            names += [i["metadata"]["name"] for i in page["items"]]
            tok = page["metadata"].get("continue")
        self.assertEqual(names, ["lw-2", "lw-3", "lw-4", "lw-5"], "the list as it was at the first page")
        # restore for the other tests
        self.sim.delete(P + "/lw-10", {"gracePeriodSeconds": 0})
        self.sim.post(P, pod("lw-2", labels={"app": "a", "tier": "db"}, node="n0"))
        self.assertStatus(self.sim.get(P + "?limit=2&continue=garbage"), 400, "BadRequest")
        self.assertStatus(self.sim.get(P + "?limit=2&continue=%s&resourceVersion=5" % p1["metadata"]["continue"]),
                          400, "BadRequest")
        # resourceVersion=0 is served from the cache: limit ignored
        self.assertEqual(len(self.sim.get(P + "?limit=2&resourceVersion=0").json()["items"]), 6)
        self.assertEqual(self.sim.get(W + "?limit=1").json()["metadata"].get("continue", ""), "")

    def test_too_large_resource_version(self):
        rv = int(self.sim.get(PODS).json()["metadata"]["resourceVersion"])
        t = time.time()
        st = self.assertStatus(self.sim.get(PODS + "?resourceVersion=%d&resourceVersionMatch=NotOlderThan"
                                            % (rv + 1000)), 504, "Timeout")
        self.assertGreater(time.time() - t, 2.5)
        self.assertEqual(st["details"]["causes"][0]["reason"], "ResourceVersionTooLarge")

    def test_watch_events_and_selector_transitions(self):
        P = "/api/v1/namespaces/lw/pods"
        rv = self.sim.get(P).json()["metadata"]["resourceVersion"]
        w = self.sim.watch(P + "?watch=true&resourceVersion=%s&labelSelector=app%%3Db" % rv)
        self.assertEqual(w.code, 200)
        self.sim.post(P, pod("lw-w", labels={"app": "b"}))
        self.sim.patch(P + "/lw-w", {"metadata": {"labels": {"app": "c"}}})   # leaves the selector
        self.sim.patch(P + "/lw-w", {"metadata": {"labels": {"app": "b"}}})   # comes back
        self.sim.patch(P + "/lw-w", {"metadata": {"annotations": {"x": "y"}}})
        self.sim.delete(P + "/lw-w")
        evs = w.wait(6, timeout=10)
        w.close()
        self.assertEqual([e["type"] for e in evs], ["ADDED", "DELETED", "ADDED", "MODIFIED", "MODIFIED", "DELETED"])
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
        self.assertEqual(rvs, sorted(rvs))
        self.assertEqual(evs[1]["object"]["metadata"]["labels"]["app"], "b",
                         "leaving the selector: DELETED with the previous state")

    def test_watch_without_rv_lists_first_and_timeout_ends(self):
        t = time.time()
        w = self.sim.watch("/api/v1/namespaces/lw/pods?watch=1&timeoutSeconds=1")
        # ended by the server: well before the client's own 30 s read timeout
        w.done.wait(20)
        self.assertTrue(w.done.is_set())
        self.assertGreaterEqual(time.time() - t, 1)
        self.assertEqual(len([e for e in w.events if e["type"] == "ADDED"]), 6)

    def test_watch_bookmarks_and_410(self):
        rv = self.sim.get(PODS).json()["metadata"]["resourceVersion"]
        w = self.sim.watch(PODS + "?watch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=4" % rv)
        self.sim.post("/api/v1/namespaces/kube-system/configmaps", {"metadata": {"name": "bm-%s" % rv}})
        evs = w.wait(1, timeout=8)
        self.assertEqual(evs[0]["type"], "BOOKMARK")
        self.assertGreater(int(evs[0]["object"]["metadata"]["resourceVersion"]), int(rv))
        self.assertEqual(evs[0]["object"]["kind"], "Pod")
        w.close()
        # history compaction: an older resourceVersion is gone
        self.sim.post("/_sim/compact", {})
        w = self.sim.watch(PODS + "?watch=1&resourceVersion=%s" % rv)
        evs = w.wait(1)
        w.close()
        self.assertEqual(evs[0]["type"], "ERROR")
        st = evs[0]["object"]
        self.assertEqual((st["code"], st["reason"]), (410, "Expired"))
        self.assertRegex(st["message"], r"^too old resource version: \d+ \(\d+\)$")

    def test_send_initial_events(self):
        w = self.sim.watch("/api/v1/namespaces/lw/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
                           "&resourceVersionMatch=NotOlderThan&timeoutSeconds=3")
        evs = w.wait(7, timeout=6)
        w.close()
        self.assertEqual([e["type"] for e in evs[:7]], ["ADDED"] * 6 + ["BOOKMARK"])
        self.assertEqual(evs[6]["object"]["metadata"]["annotations"], {"k8s.io/initial-events-end": "true"})
        r = self.sim.get("/api/v1/namespaces/lw/pods?watch=1&sendInitialEvents=true")
        self.assertStatus(r, 422, "Invalid")

    def test_tables(self):
        acc = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        t = self.sim.get("/api/v1/namespaces/lw/pods?limit=500", accept=acc).json()
        self.assertEqual(t["kind"], "Table")
        self.assertEqual([c["name"] for c in t["columnDefinitions"]],
                         ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node",
                          "Readiness Gates"])
        self.assertEqual([c["priority"] for c in t["columnDefinitions"]], [0, 0, 0, 0, 0, 1, 1, 1, 1])
        self.assertEqual(t["rows"][0]["cells"][:4], ["lw-0", "0/1", "Running", 0])
        self.assertEqual(t["rows"][0]["object"]["kind"], "PartialObjectMetadata")
        self.sim.post(W, widget("tbl", size=7, tags=["a"]))
        self.sim.patch(W + "/tbl/status", {"status": {"phase": "Ready", "conditions": [
            {"type": "Ready", "status": "True"}]}})
        t = self.sim.get(W + "?fieldSelector=metadata.name%3Dtbl&includeObject=None", accept=acc).json()
        self.assertEqual([(c["name"], c["type"], c["priority"]) for c in t["columnDefinitions"]],
                         [("Name", "string", 0), ("Color", "string", 0), ("Size", "integer", 0),
                          ("Phase", "string", 0), ("Ready", "string", 0), ("Tags", "string", 1),
                          ("Age", "date", 0)])
        self.assertEqual(t["rows"][0]["cells"][:6], ["tbl", "red", 7, "Ready", "True", '["a"]'])
        self.assertIsNone(t["rows"][0]["object"])
        pom = self.sim.get(W + "/tbl", accept="application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io").json()
        self.assertEqual(pom["kind"], "PartialObjectMetadata")
        y = self.sim.get(W + "/tbl", accept="application/yaml")
        self.assertEqual(y.headers["content-type"], "application/yaml")
        self.assertIn(b"kind: Widget\n", y.body)


class Subresources(SimTestCase):
    def test_scale_deployment_and_custom_resource(self):
        d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sc"},
             "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "sc"}},
                      "template": {"metadata": {"labels": {"app": "sc"}},
                                   "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]}}}}
        self.assertCode(self.sim.post("/apis/apps/v1/namespaces/default/deployments", d), 201)
        S = "/apis/apps/v1/namespaces/default/deployments/sc/scale"
        sc = self.sim.get(S).json()
        self.assertEqual((sc["kind"], sc["apiVersion"], sc["spec"]["replicas"]), ("Scale", "autoscaling/v1", 2))
        self.assertEqual(sc["status"]["selector"], "app=sc")
        r = self.sim.patch(S, {"spec": {"replicas": 4}}).json()
        self.assertEqual(r["spec"]["replicas"], 4)
        self.assertEqual(self.sim.get("/apis/apps/v1/namespaces/default/deployments/sc").json()["spec"]["replicas"], 4)
        for _ in range(20):  # the deployment controller writes status meanwhile: retry on conflict
            sc = self.sim.get(S).json()
            sc["spec"]["replicas"] = 1
            r = self.sim.put(S, sc)
            if r.code != 409:
                break
        self.assertCode(r, 200)
        sc["metadata"]["resourceVersion"] = "1"
        self.assertStatus(self.sim.put(S, sc), 409, "Conflict")
        self.sim.post(W, widget("scw", size=3))
        r = self.sim.patch(W + "/scw/scale", {"spec": {"replicas": 5}}).json()
        self.assertEqual(r["spec"]["replicas"], 5)
        self.assertEqual(self.sim.get(W + "/scw").json()["spec"]["size"], 5)

    def test_binding(self):
        self.sim.post(PODS, pod("b1"))
        B = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "b1"},
             "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"}}
        r = self.sim.post(PODS + "/b1/binding", B)
        self.assertCode(r, 201)
        self.assertEqual(r.json(), {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                    "code": 201})
        p = self.sim.get(PODS + "/b1").json()
        self.assertEqual(p["spec"]["nodeName"], "node-a")
        self.assertIn("PodScheduled", [c["type"] for c in p["status"]["conditions"]])
        st = self.assertStatus(self.sim.post(PODS + "/b1/binding", B), 409, "Conflict")
        self.assertEqual(st["details"]["kind"], "pods/binding")

    def _ready(self, name, node="node-e"):
        s = self.sim
        s.post(PODS + "/%s/binding" % name, {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                                            "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
        s.patch(PODS + "/%s/status" % name, {"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True"}]}}, ptype="application/strategic-merge-patch+json")

    def _rs_pods(self):
        return sorted(p["metadata"]["name"] for p in self.sim.get(PODS + "?labelSelector=app%3Dev").json()["items"]
                      if not p["metadata"].get("deletionTimestamp"))

    def test_eviction_with_pdb(self):
        s = self.sim
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "ev"},
              "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "ev"}},
                       "template": {"metadata": {"labels": {"app": "ev"}},
                                    "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]}}}}
        self.assertCode(s.post("/apis/apps/v1/namespaces/default/replicasets", rs), 201)
        names = s.wait_for(lambda: (lambda n: n if len(n) == 3 else None)(self._rs_pods()), msg="3 pods")
        for n in names:
            self._ready(n)
        pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "ev"},
               "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "ev"}}}}
        s.post("/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb)
        P = "/apis/policy/v1/namespaces/default/poddisruptionbudgets/ev"
        st = s.wait_for(lambda: (lambda x: x if x.get("observedGeneration") == 1 and x.get("currentHealthy") == 3
                                 else None)(s.get(P).json()["status"]), msg="PDB status")
        self.assertEqual((st["expectedPods"], st["currentHealthy"], st["desiredHealthy"], st["disruptionsAllowed"]),
                         (3, 3, 2, 1))
        E = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": names[0]}}
        self.assertCode(s.post(PODS + "/%s/eviction" % names[0], E), 201)
        p0 = s.get(PODS + "/" + names[0]).json()
        self.assertIn("deletionTimestamp", p0["metadata"])
        self.assertIn({"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"},
                      [{k: c.get(k) for k in ("type", "status", "reason")} for c in p0["status"]["conditions"]])
        st = s.get(P).json()["status"]
        self.assertEqual(st["disruptionsAllowed"], 0)
        # the pod is in disruptedPods until the disruption controller sees it terminating
        self.assertTrue(names[0] in st.get("disruptedPods", {}) or st["currentHealthy"] == 2, st)
        E1 = dict(E, metadata={"name": names[1]})
        err = self.assertStatus(s.post(PODS + "/%s/eviction" % names[1], E1), 429, "TooManyRequests")
        self.assertEqual(err["message"], "Cannot evict pod as it would violate the pod's disruption budget.")
        self.assertEqual(err["details"]["causes"][0]["reason"], "DisruptionBudget")
        self.assertRegex(err["details"]["causes"][0]["message"],
                         r"^The disruption budget ev needs 2 healthy pods and has 2 currently$")
        self.assertStatus(s.post(PODS + "/nope/eviction", dict(E, metadata={"name": "nope"})), 404, "NotFound")
        # the ReplicaSet replaces the evicted pod; once it is ready the budget is back
        s.delete(PODS + "/" + names[0], {"gracePeriodSeconds": 0})
        new = s.wait_for(lambda: [n for n in self._rs_pods() if n not in names], msg="replacement pod")
        # a pending pod is evicted without looking at the budget
        self.assertCode(s.post(PODS + "/%s/eviction" % new[0], dict(E, metadata={"name": new[0]})), 201)
        new = s.wait_for(lambda: [n for n in self._rs_pods() if n not in names and n != new[0]],
                         msg="second replacement")
        self._ready(new[0])
        s.wait_for(lambda: s.get(P).json()["status"]["disruptionsAllowed"] == 1, msg="budget back to 1")
        # percentages
        s.patch(P, {"spec": {"maxUnavailable": None, "minAvailable": "50%"}})
        st = s.wait_for(lambda: (lambda x: x if x.get("observedGeneration") == 2 else None)(
            s.get(P).json()["status"]), msg="PDB status generation 2")
        self.assertEqual((st["expectedPods"], st["desiredHealthy"], st["disruptionsAllowed"]), (3, 2, 1))
        self.assertEqual(st["conditions"][0]["type"], "DisruptionAllowed")

    def test_pdb_without_controllers_fails_safe(self):
        s = self.sim
        for i in range(2):
            s.post(PODS, pod("bare-%d" % i, labels={"app": "bare"}))
            self._ready("bare-%d" % i)
        s.post("/apis/policy/v1/namespaces/default/poddisruptionbudgets",
               {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "bare"},
                "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "bare"}}}})
        P = "/apis/policy/v1/namespaces/default/poddisruptionbudgets/bare"
        # maxUnavailable needs the pods' controllers: the disruption controller fails safe
        st = s.wait_for(lambda: (lambda x: x if x.get("conditions") else None)(s.get(P).json()["status"]),
                        msg="PDB condition")
        self.assertEqual(st["disruptionsAllowed"], 0)
        self.assertEqual(st["conditions"][0]["reason"], "SyncFailed")
        self.assertEqual(st["conditions"][0]["message"], 'found no controllers for pod "bare-0"')
        err = self.assertStatus(s.post(PODS + "/bare-0/eviction", {"apiVersion": "policy/v1", "kind": "Eviction",
                                                                   "metadata": {"name": "bare-0"}}),
                                429, "TooManyRequests")
        self.assertEqual(err["details"]["causes"][0]["message"],
                         "The disruption budget bare is still being processed by the server.")

class OlderServer(SimTestCase):
    """--server-version and --omit-api play a Kubernetes 1.20 server as
    recordings/00-curl-version-and-discovery.txt and 13-curl-eviction.txt
    show it: its /version, no policy/v1 (pods/eviction listed as
    policy/v1beta1) and a 400 for a policy/v1 Eviction."""
    sim_args = ("--server-version", "1.20.2", "--omit-api", "policy/v1")

    def test_version_and_missing_group(self):
        s = self.sim
        v = s.get("/version").json()
        self.assertEqual((v["major"], v["minor"], v["gitVersion"]), ("1", "20", "v1.20.2"))
        self.assertCode(s.get("/apis/policy/v1"), 404)
        groups = {g["name"] for g in s.get("/apis").json()["groups"]}
        self.assertNotIn("policy", groups)
        ev = [r for r in s.get("/api/v1").json()["resources"] if r["name"] == "pods/eviction"][0]
        self.assertEqual((ev["group"], ev["version"]), ("policy", "v1beta1"))
        self.assertCode(s.post("/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "e1"},
            "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]}}), 201)
        st = self.assertStatus(s.post("/api/v1/namespaces/default/pods/e1/eviction", {
            "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "e1"}}), 400, "BadRequest")
        self.assertIn('no kind "Eviction" is registered for version "policy/v1"', st["message"])
        self.assertCode(s.post("/api/v1/namespaces/default/pods/e1/eviction", {
            "apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": "e1"}}), 201)


if __name__ == "__main__":
    main()
