"""The attach/detach controller: a VolumeAttachment (storage.k8s.io/v1)
for every CSI volume that a pod bound to a node uses through its claim,
and the attachment deleted some time after the last such pod left the node
(--detach-delay), as kube-controller-manager and the CSI external-attacher
do together.  Only claims bound to a PersistentVolume with spec.csi count
(spec.volumeName of the claim names it)."""

import hashlib
import time

from . import util
from .controllers import Controller

MANAGER = "attachdetach-controller"


class _Pod:
    __slots__ = ("ns", "node", "claims", "live")


class AttachDetachController(Controller):
    name = "attachdetach"
    sids = ("pods", "persistentvolumeclaims", "persistentvolumes", "volumeattachments.storage.k8s.io")
    period = 2.0

    def __init__(self, sim):
        super().__init__(sim)
        self.delay = getattr(sim.options, "detach_delay", 2.0)
        self.unwanted = {}  # attachment name -> when it is deleted
        self.dirty = True

    def extract(self, sid, obj, entry):
        if sid != "pods":
            return obj
        spec = obj.get("spec") or {}
        claims = [v["persistentVolumeClaim"]["claimName"] for v in spec.get("volumes") or []
                  if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)
                  and v["persistentVolumeClaim"].get("claimName")]
        if not claims or not spec.get("nodeName"):
            return None
        p = _Pod()
        p.ns = entry.ns
        p.node = spec["nodeName"]
        p.claims = claims
        p.live = util.get_path(obj, "status", "phase") not in ("Succeeded", "Failed")
        return p

    def changed(self, items):
        self.dirty = True

    def resync(self):
        self.dirty = True

    def idle_wait(self):
        if not self.unwanted:
            return 1.0
        return max(0.05, min(self.unwanted.values()) - time.time())

    def _wanted(self):
        """{(node, pv): attacher} for every live pod's CSI claim."""
        out = {}
        pvcs = self.cache["persistentvolumeclaims"]
        pvs = self.cache["persistentvolumes"]
        for p in self.cache["pods"].values():
            if not p.live:
                continue
            for claim in p.claims:
                pvc = pvcs.get(p.ns + "/" + claim)
                pv_name = util.get_path(pvc, "spec", "volumeName") if pvc else None
                pv = pvs.get(pv_name) if pv_name else None
                driver = util.get_path(pv, "spec", "csi", "driver") if pv else None
                if driver:
                    out[(p.node, pv_name)] = driver
        return out

    def work(self):
        now = time.time()
        if self.dirty:
            self.dirty = False
            wanted = self._wanted()
            have = {}
            for va in self.cache["volumeattachments.storage.k8s.io"].values():
                spec = va.get("spec") or {}
                key = (spec.get("nodeName"), util.get_path(spec, "source", "persistentVolumeName"))
                have[key] = va["metadata"]["name"]
            for (node, pv), driver in wanted.items():
                name = have.get((node, pv))
                if name is not None:
                    self.unwanted.pop(name, None)
                    continue
                self._safe(self._attach, node, pv, driver)
            for key, name in have.items():
                if key not in wanted and name not in self.unwanted:
                    self.unwanted[name] = now + self.delay
        if self.sim.faults and self.sim.faults.hold_detach:
            return  # volumes stuck attached (a fault for tests)
        for name, due in list(self.unwanted.items()):
            if due <= now:
                del self.unwanted[name]
                self._safe(self.api.delete_internal, "storage.k8s.io", "volumeattachments", "", name, MANAGER)

    def _attach(self, node, pv, driver):
        name = "csi-" + hashlib.sha256((pv + driver + node).encode()).hexdigest()
        va = {"metadata": {"name": name},
              "spec": {"attacher": driver, "nodeName": node, "source": {"persistentVolumeName": pv}}}
        self.api.create_internal("storage.k8s.io", "volumeattachments", va, MANAGER)
        self.api.patch_internal("storage.k8s.io", "volumeattachments", "", name,
                                {"status": {"attached": True}}, MANAGER, subresource="status")
