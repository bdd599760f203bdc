"""Handlers for the /api2/json paths the simulator serves.

Each handler gets a Ctx (state, token, validated params as strings) and
returns the "data" value, or a (data, {"total": n}) pair for extra envelope
keys.  Routes not listed here but present in apidata.js answer 501.
"""

from .errors import die, param_error, perm_error


class Ctx:
    def __init__(self, sim, token, params, files=None):
        self.sim = sim
        self.token = token
        self.p = params
        self.files = files or {}


def _node(ctx):
    return ctx.p["node"]


def h_version(ctx):
    return ctx.sim.version()


def h_cluster_status(ctx):
    return ctx.sim.cluster_status()


def h_resources(ctx):
    return ctx.sim.resources(ctx.p.get("type"), ctx.token)


def h_nextid(ctx):
    return ctx.sim.nextid(ctx.p.get("vmid"))


def h_nodes(ctx):
    return ctx.sim.nodes_list(ctx.token)


def h_node_status(ctx):
    return ctx.sim.node_status(_node(ctx))


def h_qemu_list(ctx):
    return ctx.sim.qemu_list(_node(ctx), ctx.token)


def h_qemu_index(ctx):
    ctx.sim.load(_node(ctx), ctx.p["vmid"])
    return [{"subdir": s} for s in ("config", "pending", "status", "unlink", "vncproxy",
                                    "termproxy", "migrate", "resize", "move", "rrd", "rrddata",
                                    "monitor", "agent", "snapshot", "spiceproxy", "sendkey",
                                    "firewall", "mtunnel", "remote_migrate")]


def h_config_get(ctx):
    if ctx.p.get("snapshot") and ctx.p.get("current") == "1":
        param_error({"snapshot": "cannot use 'snapshot' parameter with 'current'",
                     "current": "cannot use 'snapshot' parameter with 'current'"})
    if ctx.p.get("snapshot"):
        ctx.sim.load(_node(ctx), ctx.p["vmid"])
        die("snapshot '%s' does not exist" % ctx.p["snapshot"])
    return ctx.sim.config_get(_node(ctx), ctx.p["vmid"], ctx.p.get("current") == "1")


def h_config_post(ctx):
    return ctx.sim.update_config(_node(ctx), ctx.p["vmid"], ctx.p, ctx.token, sync=False)


def h_config_put(ctx):
    ctx.sim.update_config(_node(ctx), ctx.p["vmid"], ctx.p, ctx.token, sync=True)
    return None


def h_pending(ctx):
    return ctx.sim.pending_get(_node(ctx), ctx.p["vmid"])


def h_clone(ctx):
    return ctx.sim.clone(_node(ctx), ctx.p["vmid"], ctx.p, ctx.token)


def h_template(ctx):
    return ctx.sim.make_template(_node(ctx), ctx.p["vmid"], ctx.p, ctx.token)


def h_resize(ctx):
    return ctx.sim.resize(_node(ctx), ctx.p["vmid"], ctx.p, ctx.token)


def h_status_index(ctx):
    ctx.sim.load(_node(ctx), ctx.p["vmid"])
    return [{"subdir": s} for s in ("current", "start", "stop", "reset", "shutdown", "suspend",
                                    "reboot")]


def h_start(ctx):
    return ctx.sim.start(_node(ctx), ctx.p["vmid"], ctx.p, ctx.token)


def h_stop(ctx):
    return ctx.sim.stop(_node(ctx), ctx.p["vmid"], ctx.p, ctx.token)


def h_shutdown(ctx):
    return ctx.sim.stop(_node(ctx), ctx.p["vmid"], ctx.p, ctx.token, shutdown=True)


def h_status_current(ctx):
    return ctx.sim.status_current(_node(ctx), ctx.p["vmid"])


def h_destroy(ctx):
    return ctx.sim.destroy(_node(ctx), ctx.p["vmid"], ctx.p, ctx.token)


def _task(ctx):
    t = ctx.sim.task_get(_node(ctx), ctx.p["upid"])
    if ctx.token is not None and t.user != ctx.token.id and \
            not ctx.sim.has(ctx.token, "Sys.Audit"):
        perm_error("/nodes/%s, Sys.Audit" % _node(ctx))
    return t


def h_task_list(ctx):
    return ctx.sim.task_list(_node(ctx), ctx.p, ctx.token)


def h_task_status(ctx):
    return _task(ctx).as_status()


def h_task_log(ctx):
    t = _task(ctx)
    start = int(ctx.p.get("start", 0))
    limit = int(ctx.p.get("limit", 50))
    lines = [{"n": i + 1, "t": line} for i, line in enumerate(t.lines)]
    total = len(lines)
    if not lines and t.status == "running":
        total = 1
        lines = [{"n": 1, "t": "no content"}]
    sel = lines[start:start + limit] if limit else lines[start:]
    return sel, {"total": total}


def h_task_stop(ctx):
    t = _task(ctx)
    ctx.sim.tasks.stop(t)
    return None


def h_task_index(ctx):
    _task(ctx)
    return [{"name": "log"}, {"name": "status"}]


def h_storage_list(ctx):
    return ctx.sim.storage_list(_node(ctx), ctx.p, ctx.token)


def h_storage_config(ctx):
    return ctx.sim.storage_config(ctx.token)


def h_content_list(ctx):
    return ctx.sim.content_list(_node(ctx), ctx.p["storage"], ctx.p, ctx.token)


def h_content_delete(ctx):
    return ctx.sim.content_delete(_node(ctx), ctx.p.get("storage"), ctx.p["volume"], ctx.p,
                                  ctx.token)


def h_upload(ctx):
    data = ctx.files.get("filename")
    if data is None:
        die("upload failed")
    return ctx.sim.upload(_node(ctx), ctx.p["storage"], ctx.p, data, ctx.token)


def h_pools(ctx):
    return ctx.sim.pools_list(ctx.p, ctx.token)


def h_pool(ctx):
    return ctx.sim.pool_get(ctx.p["poolid"], ctx.p, ctx.token)


def h_permissions(ctx):
    return ctx.sim.permissions(ctx.token, ctx.p.get("path"))


Q = "/nodes/{node}/qemu/{vmid}"
ROUTES = {
    ("GET", "/version"): h_version,
    ("GET", "/cluster/status"): h_cluster_status,
    ("GET", "/cluster/resources"): h_resources,
    ("GET", "/cluster/nextid"): h_nextid,
    ("GET", "/nodes"): h_nodes,
    ("GET", "/nodes/{node}/status"): h_node_status,
    ("GET", "/nodes/{node}/qemu"): h_qemu_list,
    ("GET", Q): h_qemu_index,
    ("GET", Q + "/config"): h_config_get,
    ("POST", Q + "/config"): h_config_post,
    ("PUT", Q + "/config"): h_config_put,
    ("GET", Q + "/pending"): h_pending,
    ("POST", Q + "/clone"): h_clone,
    ("POST", Q + "/template"): h_template,
    ("PUT", Q + "/resize"): h_resize,
    ("GET", Q + "/status"): h_status_index,
    ("POST", Q + "/status/start"): h_start,
    ("POST", Q + "/status/stop"): h_stop,
    ("POST", Q + "/status/shutdown"): h_shutdown,
    ("GET", Q + "/status/current"): h_status_current,
    ("DELETE", Q): h_destroy,
    ("GET", "/nodes/{node}/tasks"): h_task_list,
    ("GET", "/nodes/{node}/tasks/{upid}"): h_task_index,
    ("GET", "/nodes/{node}/tasks/{upid}/status"): h_task_status,
    ("GET", "/nodes/{node}/tasks/{upid}/log"): h_task_log,
    ("DELETE", "/nodes/{node}/tasks/{upid}"): h_task_stop,
    ("GET", "/nodes/{node}/storage"): h_storage_list,
    ("GET", "/nodes/{node}/storage/{storage}/content"): h_content_list,
    ("POST", "/nodes/{node}/storage/{storage}/upload"): h_upload,
    ("DELETE", "/nodes/{node}/storage/{storage}/content/{volume}"): h_content_delete,
    ("GET", "/storage"): h_storage_config,
    ("GET", "/pools"): h_pools,
    ("GET", "/pools/{poolid}"): h_pool,
    ("GET", "/access/permissions"): h_permissions,
}


def perm_ok(sim, token, perm, params):
    """Evaluate a method's 'permissions' from apidata.js; (ok, what)."""
    if not perm or "check" not in perm:
        return True, None
    return _eval(sim, token, perm["check"], params)


def _subst(path, params):
    out = path
    for k, v in params.items():
        if isinstance(v, str):
            out = out.replace("{%s}" % k, v)
    return out


def _eval(sim, token, expr, params):
    op = expr[0]
    if op == "perm":
        path, privs = expr[1], expr[2]
        opts = dict(zip(expr[3::2], expr[4::2])) if len(expr) > 3 else {}
        if opts.get("require_param") and params.get(opts["require_param"]) is None:
            return False, "%s, %s" % (_subst(path, params), "|".join(privs))
        any_of = bool(opts.get("any"))
        ok = sim.has(token, *privs, any_of=any_of)
        return ok, "%s, %s" % (_subst(path, params), "|".join(privs))
    if op == "and":
        for sub in expr[1:]:
            ok, what = _eval(sim, token, sub, params)
            if not ok:
                return False, what
        return True, None
    if op == "or":
        what = None
        for sub in expr[1:]:
            ok, w = _eval(sim, token, sub, params)
            if ok:
                return True, None
            what = what or w
        return False, what
    return True, None  # userid-param, userid-group: not used for tokens here
