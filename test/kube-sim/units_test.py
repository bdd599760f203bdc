#!/usr/bin/env python3
"""Unit tests of kube-sim's building blocks (no server): the YAML subset,
quantities, selectors, JSONPath, patches, structural schemas, managed
fields and the scheduler's backoff."""

import json
import unittest

import simlib  # noqa: F401 - puts hack/ on sys.path
from kubesim import jsonpath, managedfields as MF, patch as P, schema as S, scheduler, selector, util, yamlmini as Y


class YAML(unittest.TestCase):
    def test_block_structures(self):
        doc = Y.load("a: 1\nb:\n  c: [1, 2]\n  d:\n  - x\n  - y: z\n    w: v\ne:\n- - 1\n  - 2\n")
        self.assertEqual(doc, {"a": 1, "b": {"c": [1, 2], "d": ["x", {"y": "z", "w": "v"}]}, "e": [[1, 2]]})

    def test_sequence_at_key_indent_and_empty_values(self):
        self.assertEqual(Y.load("k:\n- a\n- b\nm:\nn: ~\n"), {"k": ["a", "b"], "m": None, "n": None})
        self.assertEqual(Y.load("- \n- a\n"), [None, "a"])

    def test_scalars(self):
        d = Y.load('i: 42\nn: -7\no: 0o17\nh: 0x1F\nf: 1.5\ne: 1e3\nt: true\nyes: yes\nno: no\non: On\n'
                   'nu: null\nti: ~\ns: "1"\nq: \'it\'\'s\'\nv: 1.0\ninf: .inf\nd: 2026-01-02T03:04:05Z\n'
                   'ver: v1.2\nemp: ""\n')
        self.assertEqual(d["i"], 42)
        self.assertEqual(d["n"], -7)
        self.assertEqual(d["o"], 15)
        self.assertEqual(d["h"], 31)
        self.assertEqual(d["f"], 1.5)
        self.assertEqual(d["e"], 1000)
        self.assertIs(d["t"], True)
        self.assertIs(d["yes"], True, "YAML 1.1 booleans, as sigs.k8s.io/yaml")
        self.assertIs(d["no"], False)
        self.assertIs(d["on"], True)
        self.assertIsNone(d["nu"])
        self.assertIsNone(d["ti"])
        self.assertEqual(d["s"], "1")
        self.assertEqual(d["q"], "it's")
        self.assertEqual(d["v"], 1)
        self.assertEqual(d["inf"], float("inf"))
        self.assertEqual(d["d"], "2026-01-02T03:04:05Z")
        self.assertEqual(d["ver"], "v1.2")
        self.assertEqual(d["emp"], "")
        self.assertIn("yes", d, "keys stay strings")

    def test_quoted_escapes_and_multiline(self):
        d = Y.load('a: "tab\\there \\u00e9 \\"q\\""\nb: "line\n  folded"\nc: \'sq\n\n  para\'\n')
        self.assertEqual(d["a"], 'tab\there \u00e9 "q"')
        self.assertEqual(d["b"], "line folded")
        self.assertEqual(d["c"], "sq\npara")

    def test_block_scalars(self):
        d = Y.load("l: |\n  one\n    two\n  three\nk: |-\n  a\n  b\n\nkeep: |+\n  x\n\nf: >\n  a\n  b\n\n  c\n"
                   "ind: |2\n    lead\n  x\nend: 1\n")
        self.assertEqual(d["l"], "one\n  two\nthree\n")
        self.assertEqual(d["k"], "a\nb")
        self.assertEqual(d["keep"], "x\n\n")
        self.assertEqual(d["f"], "a b\nc\n")
        self.assertEqual(d["ind"], "  lead\nx\n")
        self.assertEqual(d["end"], 1)

    def test_plain_multiline_and_comments(self):
        d = Y.load("# head\ndescription: This is\n  a long text   # trailing comment\nurl: http://x:80/#frag\n"
                   "h: a#b\n")
        self.assertEqual(d["description"], "This is a long text")
        self.assertEqual(d["url"], "http://x:80/#frag")
        self.assertEqual(d["h"], "a#b")

    def test_flow_collections(self):
        d = Y.load('a: {x: 1, "y z": [a, b, {c: d}], e: }\nb: [1, [2, 3], {k: v}, "q,r"]\nc: [\n  1,\n  2\n]\n')
        self.assertEqual(d, {"a": {"x": 1, "y z": ["a", "b", {"c": "d"}], "e": None},
                             "b": [1, [2, 3], {"k": "v"}, "q,r"], "c": [1, 2]})

    def test_documents_anchors_and_tags(self):
        docs = Y.load_all("---\na: &x {k: 1}\nb: *x\nc:\n  <<: *x\n  j: 2\n...\n---\n# empty\n---\n- !!str 123\n"
                          "- !!int '7'\n")
        self.assertEqual(docs, [{"a": {"k": 1}, "b": {"k": 1}, "c": {"k": 1, "j": 2}}, ["123", 7]])
        self.assertEqual(Y.load_all(""), [])

    def test_json_is_yaml(self):
        self.assertEqual(Y.load('{"a": [1, {"b": null}]}'), {"a": [1, {"b": None}]})

    def test_errors(self):
        for bad in ("a: 1\na: 2\n", "a: [1, 2\n", "k:\n  - a\n   - b\n", "? complex\n", "a: \"open\n",
                    "a:\n\t- tab\n"):
            with self.assertRaises(Y.YAMLError, msg=bad):
                Y.load(bad)
        try:
            Y.load("a: 1\nb: 2\nb: 3\n")
        except Y.YAMLError as e:
            self.assertIn("line 3", str(e))

    def test_crd_style_document(self):
        text = open(simlib.os.path.join(simlib.TESTDATA, "widget-crd.yaml")).read()
        docs = Y.load_all(text)
        self.assertEqual([d["metadata"]["name"] for d in docs], ["widgets.example.com", "gadgets.example.com"])
        cols = docs[0]["spec"]["versions"][0]["additionalPrinterColumns"]
        self.assertEqual(cols[3]["jsonPath"], '.status.conditions[?(@.type=="Ready")].status')

    def test_dump_round_trip(self):
        obj = {"b": [1, {"x": "yes", "y": "2026-01-01T00:00:00Z", "z": ""}], "a": {"k:{\"n\":1}": {}},
               "m": "multi\nline\n", "n": None, "t": True, "f": 1.5, "s": "- dash", "e": [], "o": {}}
        text = Y.dump(obj)
        self.assertTrue(text.startswith("a:\n"), "keys sorted")
        self.assertIn('x: "yes"', text)
        self.assertIn("m: |\n", text)
        self.assertEqual(Y.load(text), obj)


class Quantities(unittest.TestCase):
    def test_canonical(self):
        for a, b in (("1000m", "1"), ("0.5", "500m"), ("2048Ki", "2Mi"), ("1.5Gi", "1536Mi"), ("1e3", "1e3"),
                     ("2000", "2k"), ("100M", "100M"), ("0.1", "100m"), ("0.0000000001", "1n"), ("512Mi", "512Mi"),
                     ("0.5Ki", "512"), ("0", "0"), ("-1", "-1")):
            self.assertEqual(util.canonical_quantity(a), b, a)

    def test_parse_and_errors(self):
        self.assertEqual(util.parse_quantity("250m") * 4, 1)
        self.assertEqual(util.parse_quantity("1Gi"), 2 ** 30)
        for bad in ("", "1x", "one", "1.2.3", " 1", "Gi"):
            with self.assertRaises(util.QuantityError, msg=bad):
                util.parse_quantity(bad)

    def test_human_duration(self):
        for s, want in ((5, "5s"), (119, "119s"), (150, "2m30s"), (600, "10m"), (3700, "61m"), (11000, "3h3m"),
                        (86400 * 3, "3d"), (86400 * 400, "400d"), (86400 * 800, "2y70d")):
            self.assertEqual(util.human_duration(s), want)


class SchedulerBackoff(unittest.TestCase):
    def test_doubling_and_cap(self):
        # kube-scheduler's defaults: 1 s after the first failure, doubled per failure, at most 10 s
        self.assertEqual([scheduler.backoff_seconds(n, 1, 10) for n in range(1, 8)], [1, 2, 4, 8, 10, 10, 10])
        self.assertEqual(scheduler.backoff_seconds(200, 0.5, 3), 3)
        self.assertEqual(scheduler.backoff_seconds(1, 0, 10), 0)  # no backoff: today's at-once retries
        self.assertEqual(scheduler.backoff_seconds(3, 4, 2), 4)  # a max below the initial: the initial


class SchedulerAmounts(unittest.TestCase):
    def test_requests_as_kube_scheduler_compares_them(self):
        spec = {"containers": [{"resources": {"requests": {"cpu": "250m", "memory": "1.5Gi"}}},
                               {"resources": {"requests": {"cpu": "0.0005", "memory": "1"}}}],
                "initContainers": [{"resources": {"requests": {"cpu": "1n", "nvidia.com/gpu": "1"}}}],
                "overhead": {"cpu": "100m"}}
        # summed exactly, then CPU in millicores and the rest in units, up
        self.assertEqual(scheduler.pod_requests(spec),
                         {"cpu": 351, "memory": 1610612737, "nvidia.com/gpu": 1})
        self.assertEqual(scheduler.pod_requests({"containers": [{"resources": {"requests": {"cpu": "1n"}}}]}),
                         {"cpu": 1})

    def test_fit_in_whole_units(self):
        sch = scheduler.Scheduler.__new__(scheduler.Scheduler)
        sch.used = {"n1": {"cpu": 1500, "memory": 3 << 30, "pods": 2}}
        node = scheduler._node({"metadata": {"name": "n1"}, "status": {"allocatable": {
            "cpu": "2", "memory": "4Gi", "pods": "3"}}})
        pod = scheduler._Pod()
        pod.spec = {}
        pod.req = scheduler.pod_requests({"containers": [{"resources": {"requests": {"cpu": "500m",
                                                                                     "memory": "1Gi"}}}]})
        self.assertIsNone(sch._fit(pod, node, "c"))          # exactly full
        pod.req = dict(pod.req, cpu=501)
        self.assertEqual(sch._fit(pod, node, "c"), ["Insufficient cpu"])
        sch.used["n1"]["pods"] = 3
        self.assertEqual(sch._fit(pod, node, "c"), ["Too many pods", "Insufficient cpu"])
        # placement is remembered per class on the node's record
        node.placement["tainted"] = ["node(s) had untolerated taint {x: }"]
        self.assertEqual(sch._fit(pod, node, "tainted"), ["node(s) had untolerated taint {x: }"])


class Selectors(unittest.TestCase):
    def test_label_selector_strings(self):
        L = {"app": "web", "tier": "fe", "n": "5"}
        for s, want in (("app=web", True), ("app==web,tier!=be", True), ("app in (a,web)", True),
                        ("app notin (web)", False), ("missing", False), ("!missing", True), ("n>4", True),
                        ("n<5", False), ("", True), ("x!=y", True)):
            self.assertEqual(selector.parse_label_selector(s).matches(L), want, s)
        for bad in ("app in web", "=x", "a,", "app in (x"):
            with self.assertRaises(Exception, msg=bad):
                selector.parse_label_selector(bad)

    def test_label_selector_objects(self):
        sel = {"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "In", "values": ["2"]},
                                                               {"key": "c", "operator": "DoesNotExist"}]}
        ls = selector.from_label_selector_object(sel)
        self.assertTrue(ls.matches({"a": "1", "b": "2"}))
        self.assertFalse(ls.matches({"a": "1", "b": "2", "c": ""}))
        self.assertFalse(selector.from_label_selector_object(None).matches({}))
        self.assertTrue(selector.from_label_selector_object({}).matches({}))
        self.assertEqual(selector.selector_to_string(sel), "a=1,b in (2),!c")

    def test_field_selectors(self):
        fs = selector.parse_field_selector("spec.nodeName=n1,status.phase!=Failed,metadata.name==a\\,b")
        self.assertEqual(fs.terms, [("spec.nodeName", "=", "n1"), ("status.phase", "!=", "Failed"),
                                    ("metadata.name", "=", "a,b")])
        with self.assertRaises(Exception):
            selector.parse_field_selector("nonsense")


class JSONPath(unittest.TestCase):
    def test_paths(self):
        o = {"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]},
             "metadata": {"labels": {"karpenter.sh/nodepool": "np"}}, "spec": {"list": [1, 2, 3]}}
        self.assertEqual(jsonpath.compile('.status.conditions[?(@.type=="Ready")].status').find(o), ["True"])
        self.assertEqual(jsonpath.compile(".metadata.labels.karpenter\\.sh/nodepool").find(o), ["np"])
        self.assertEqual(jsonpath.compile(".metadata.labels['karpenter.sh/nodepool']").find(o), ["np"])
        self.assertEqual(jsonpath.compile(".spec.list[-1]").find(o), [3])
        self.assertEqual(jsonpath.compile("{.spec.list[*]}").find(o), [1, 2, 3])
        self.assertEqual(jsonpath.compile(".spec.missing").find(o), [])
        x = {}
        jsonpath.set_path(x, ".spec.replicas", 3)
        self.assertEqual(x, {"spec": {"replicas": 3}})


class Patches(unittest.TestCase):
    def test_merge_patch(self):
        self.assertEqual(P.merge_patch({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": None, "d": 3}, "l": [2]}),
                         {"a": {"c": 2, "d": 3}, "l": [2]})

    def test_json_patch(self):
        doc = {"a": [1, 2], "b": {"c": 1}}
        out = P.json_patch(doc, [{"op": "add", "path": "/a/1", "value": 9}, {"op": "remove", "path": "/b/c"},
                                 {"op": "copy", "from": "/a/0", "path": "/b/d"},
                                 {"op": "move", "from": "/a/2", "path": "/m"},
                                 {"op": "test", "path": "/m", "value": 2},
                                 {"op": "add", "path": "/a~1x", "value": 1}])
        self.assertEqual(out, {"a": [1, 9], "b": {"d": 1}, "m": 2, "a/x": 1})
        self.assertEqual(doc, {"a": [1, 2], "b": {"c": 1}}, "input untouched")
        for ops in ([{"op": "test", "path": "/a/0", "value": 5}], [{"op": "replace", "path": "/nope", "value": 1}],
                    [{"op": "remove", "path": "/a/7"}], [{"op": "bogus", "path": "/a"}]):
            with self.assertRaises(P.PatchError):
                P.json_patch(doc, ops)

    def test_strategic_merge_patch(self):
        orig = {"spec": {"containers": [{"name": "a", "image": "1", "env": [{"name": "X", "value": "1"}]},
                                        {"name": "b", "image": "1"}],
                         "tolerations": [{"key": "t"}], "volumes": [{"name": "v", "emptyDir": {}}]},
                "metadata": {"finalizers": ["f1", "f2"]}}
        patch = {"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]},
                                         {"name": "b", "$patch": "delete"}, {"name": "c", "image": "3"}],
                          "tolerations": [{"key": "u"}],
                          "volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]},
                 "metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"], "finalizers": ["f3"]}}
        out = P.strategic_merge_patch(orig, patch)
        self.assertEqual([c["name"] for c in out["spec"]["containers"]], ["a", "c"])
        self.assertEqual(out["spec"]["containers"][0]["env"], [{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}])
        self.assertEqual(out["spec"]["tolerations"], [{"key": "u"}], "no merge key: replaced")
        self.assertEqual(out["spec"]["volumes"], [{"name": "v", "hostPath": {"path": "/x"}}])
        self.assertEqual(out["metadata"]["finalizers"], ["f3", "f2"])
        self.assertEqual(P.strategic_merge_patch({"spec": {"a": {"b": 1}}}, {"spec": {"a": {"$patch": "replace",
                                                                                          "c": 2}}}),
                         {"spec": {"a": {"c": 2}}})


class Schemas(unittest.TestCase):
    SCHEMA = {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["n"], "properties": {
            "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": True, "maximum": 10},
            "s": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "default": "ab"},
            "l": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"},
                                                                              "d": {"type": "integer",
                                                                                    "default": 7}}},
                  "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"]},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "t": {"type": "string", "format": "date-time"},
            "nul": {"type": "string", "nullable": True},
            "any": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}}}}}

    def test_validate_default_prune(self):
        s = S.Schema(self.SCHEMA)
        obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a", "bogus": 1},
               "spec": {"n": 3, "l": [{"k": "a"}], "free": {"q": {"r": 1}}, "drop": 1, "nul": None}, "extra": 1}
        pruned = s.prune(obj)
        self.assertEqual(sorted(pruned), ["extra", "metadata.bogus", "spec.drop"])
        s.default(obj)
        self.assertEqual(obj["spec"]["s"], "ab")
        self.assertEqual(obj["spec"]["l"], [{"k": "a", "d": 7}])
        self.assertEqual(s.validate(obj), [])
        errs = s.validate({"spec": {"n": 10, "s": "A", "t": "nope", "l": [{"k": "x"}, {"k": "x"}]}})
        got = sorted((e.reason, e.field) for e in errs)
        self.assertEqual(got, [("FieldValueDuplicate", "spec.l[1]"), ("FieldValueInvalid", "spec.n"),
                               ("FieldValueInvalid", "spec.s"), ("FieldValueInvalid", "spec.s"),
                               ("FieldValueInvalid", "spec.t")])
        self.assertEqual([e.text() for e in s.validate({"spec": {}})], ["spec.n: Required value"])
        self.assertEqual(s.list_info(("spec", "l")), ("map", ["k"]))

    def test_structural_errors(self):
        self.assertEqual(S.structural_errors({"type": "object", "properties": {"a": {}}}, "s")[0].field,
                         "s.properties[a].type")


class ManagedFields(unittest.TestCase):
    def test_update_tracks_ownership(self):
        obj = {"metadata": {"name": "x", "labels": {"a": "1"}}, "spec": {"c": 1, "l": [1]}}
        MF.update(None, obj, "m1", "v1", P.BUILTIN, "all", "", "t0")
        f = obj["metadata"]["managedFields"][0]
        self.assertEqual(f["fieldsV1"], {"f:metadata": {"f:labels": {".": {}, "f:a": {}}},
                                         "f:spec": {".": {}, "f:c": {}, "f:l": {}}})
        new = json.loads(json.dumps(obj))
        new["spec"]["c"] = 2
        new["metadata"]["labels"]["b"] = "2"
        MF.update(obj, new, "m2", "v1", P.BUILTIN, "all", "", "t1")
        mf = {m["manager"]: m["fieldsV1"] for m in new["metadata"]["managedFields"]}
        self.assertEqual(mf["m2"], {"f:metadata": {"f:labels": {"f:b": {}}}, "f:spec": {"f:c": {}}})
        self.assertNotIn("f:c", mf["m1"]["f:spec"])

    def test_apply_conflict_force_and_removal(self):
        sem = P.BUILTIN
        live = MF.apply(None, {"metadata": {"name": "x", "labels": {"o": "1"}}, "spec": {"a": 1}}, "ctl", False,
                        "v1", sem, "all", "", "t0")
        with self.assertRaises(Exception) as cm:
            MF.apply(live, {"metadata": {"name": "x"}, "spec": {"a": 2}}, "other", False, "v1", sem, "all", "", "t1")
        self.assertEqual(cm.exception.details["causes"][0]["field"], ".spec.a")
        same = MF.apply(live, {"metadata": {"name": "x"}, "spec": {"a": 1}}, "other", False, "v1", sem, "all", "",
                        "t1")
        self.assertEqual(len(same["metadata"]["managedFields"]), 2, "shared ownership of an equal value")
        forced = MF.apply(live, {"metadata": {"name": "x"}, "spec": {"a": 2}}, "other", True, "v1", sem, "all", "",
                          "t1")
        self.assertEqual(forced["spec"]["a"], 2)
        gone = MF.apply(forced, {"metadata": {"name": "x"}, "spec": {}}, "ctl", False, "v1", sem, "all", "", "t2")
        self.assertNotIn("labels", gone["metadata"])


class NodeLifecycleTaints(unittest.TestCase):
    """The node lifecycle controller replaces spec.taints whole, so a stale
    view of a Node must never write back a taint someone else removed (the
    karpenter.sh/unregistered taint came back this way under load)."""

    def test_stale_view_never_restores_a_removed_taint(self):
        from kubesim import ctrl_nodes, main as M
        sim = M.Sim(M.parse_args(["--listen", "127.0.0.1:0", "--quiet"]))
        ctrl = ctrl_nodes.NodeLifecycleController(sim)
        sim.api.create_internal("", "nodes", {
            "metadata": {"name": "n1"},
            "spec": {"taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}, "kubelet")

        def taints():
            e = sim.store.table_by_sid("nodes").items[sim.store.table_by_sid("nodes").key_of("", "n1")]
            return e, sorted(t["key"] for t in e.obj()["spec"].get("taints", []))

        stale, keys = taints()
        self.assertEqual(keys, ["karpenter.sh/unregistered", "node.kubernetes.io/not-ready"])
        # The registration removes its taint; the controller has not seen it.
        sim.api.patch_internal("", "nodes", "", "n1", {"spec": {"taints": [
            {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}}, "carpenter")
        ctrl._taints(ctrl.extract("nodes", stale.obj(), stale), True)  # on a monitor pass
        _, keys = taints()
        self.assertEqual(keys, ["node.kubernetes.io/not-ready"], "stale write refused")
        self.assertIn("n1", ctrl.dirty, "retried from the fresher cache")
        fresh, _ = taints()
        ctrl._taints(ctrl.extract("nodes", fresh.obj(), fresh), False)
        self.assertEqual(taints()[1], ["node.kubernetes.io/not-ready"], "Ready: kept until the monitor pass")
        self.assertIn("n1", ctrl.untaint)
        ctrl._taints(ctrl.extract("nodes", fresh.obj(), fresh), True)
        self.assertEqual(taints()[1], [], "the Ready node loses not-ready on the pass")


if __name__ == "__main__":
    unittest.main(verbosity=2)
