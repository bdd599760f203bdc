/* snapshot.c: snapshot files into the caches the controllers read.
 *
 * Each file is JSON (it starts with '{' or '[') or YAML; either way it is
 * streamed (tree.c) and each object - an item of a List, or a document of
 * its own - is checked, decoded by its kind's decoder and put straight
 * into the cluster's stores, as the informers would after a list. Nothing
 * is kept but the decoded objects.
 *
 * A bad object stops the load with a message that says where it is (file,
 * document, item, line when known) and what it is (kind namespace/name):
 * not an object, no kind or apiVersion, a kind the simulation does not
 * read, a missing name, a field its decoder refuses, the same object
 * twice. A NodePool given with --nodepool replaces the snapshot's NodePool
 * of that name (or is added) and is taken as Ready when valid, since no
 * controller has looked at it yet; an invalid one is refused.
 *
 * After the load, the offline provider learns which zones each
 * ProxmoxNodeClass's VMs run in and how large their disks are from the
 * snapshot's NodeClaims. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/kube.h"
#include "carpenter/nodeclaim.h"
#include "carpenter/nodeclass.h"
#include "carpenter/nodepool.h"
#include "carpenter/pve.h"
#include "carpenter/scheduling.h"
#include "carpenter/store.h"
#include "carpenter/timeutil.h"
#include "sim_int.h"

/* The kinds a snapshot holds, in cluster->all order. */
static const struct {
  const char *kind;
  const char *api_version;
  const struct carp_kind *decoder;
} kinds[7] = {
    {"Pod", "v1", &carp_kind_pod},
    {"Node", "v1", &carp_kind_node},
    {"NodeClaim", "karpenter.sh/v1", &carp_kind_nodeclaim},
    {"NodePool", "karpenter.sh/v1", &carp_kind_nodepool},
    {"ProxmoxNodeClass", "carpenter.dev/v1alpha1", &carp_kind_proxmoxnodeclass},
    {"PodDisruptionBudget", "policy/v1", &carp_kind_pdb},
    {"DaemonSet", "apps/v1", &carp_kind_daemonset},
};

#define KIND_POD      0
#define KIND_NODEPOOL 3
#define KIND_CLASS    4

struct loader {
  struct carp_simulation *s;
  int overrides;        /* reading --nodepool files */
  size_t uids;          /* uids made up for objects without one */
  size_t snapshot_uids; /* of those, in the snapshot's files */
  size_t unscheduled;
  struct carp_buf err;
};

void sim_warn(struct carp_simulation *s, const char *fmt, ...)
{
  struct carp_buf b;
  va_list ap;
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  va_start(ap, fmt);
  carp_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  s->warnings =
      carp_reallocarray(s->warnings, s->nwarnings + 1, sizeof(char *));
  s->warnings[s->nwarnings++] = carp_buf_steal(&b, NULL);
}

/* "file: document 2, item 17 (line 340)" */
static void where(struct carp_buf *b, const struct sim_where *w)
{
  carp_buf_printf(b, "%s: document %zu", w->file, w->doc);
  if (w->item != SIM_NO_ITEM)
    carp_buf_printf(b, ", item %zu", w->item);
  if (w->line)
    carp_buf_printf(b, " (line %zu)", w->line);
}

/* What an object is, for messages: "kind namespace/name". Only put into
 * words when something is wrong (a snapshot holds 150,000 objects). */
struct ident {
  const char *kind, *ns, *name;
};

static int fail(struct loader *l, const struct sim_where *w,
                const struct ident *id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct loader *l, const struct sim_where *w,
                const struct ident *id, const char *fmt, ...)
{
  va_list ap;
  carp_buf_reset(&l->err);
  where(&l->err, w);
  carp_buf_puts(&l->err, ": ");
  if (id)
    carp_buf_printf(&l->err, "%s %s%s%s: ", id->kind ? id->kind : "object",
                    id->ns ? id->ns : "", id->ns ? "/" : "",
                    id->name ? id->name : "(no name)");
  va_start(ap, fmt);
  carp_buf_vprintf(&l->err, fmt, ap);
  va_end(ap);
  return CARP_EINVALID;
}

/* ---- making up what a manifest leaves out ---- */

/* The metadata members a decoder sees, with one added for the call. */
struct patched {
  yajl_val meta;
  const char **keys;
  yajl_val *values;
  size_t len;
  struct yajl_val_s added;
};

static void patch_add(struct patched *p, const char *key, const char *value)
{
  size_t n = p->meta->u.object.len;
  const char **k = carp_calloc(n + 1, sizeof(char *));
  yajl_val *v = carp_calloc(n + 1, sizeof(yajl_val));
  memcpy(k, p->meta->u.object.keys, n * sizeof(char *));
  memcpy(v, p->meta->u.object.values, n * sizeof(yajl_val));
  memset(&p->added, 0, sizeof(p->added));
  p->added.type = yajl_t_string;
  p->added.u.string = (char *)value;
  k[n] = key;
  v[n] = &p->added;
  p->keys = p->meta->u.object.keys;
  p->values = p->meta->u.object.values;
  p->len = n;
  p->meta->u.object.keys = k;
  p->meta->u.object.values = v;
  p->meta->u.object.len = n + 1;
}

static void patch_undo(struct patched *p)
{
  if (!p->keys)
    return;
  carp_free((void *)p->meta->u.object.keys);
  carp_free(p->meta->u.object.values);
  p->meta->u.object.keys = p->keys;
  p->meta->u.object.values = p->values;
  p->meta->u.object.len = p->len;
  p->keys = NULL;
}

/* Whether the pod's status has a PodScheduled condition. */
static int has_scheduled_condition(yajl_val obj)
{
  yajl_val conds = carp_json_arr(obj, "status", "conditions", NULL);
  size_t i, n = carp_json_len(conds);
  for (i = 0; i < n; i++) {
    const char *type = carp_json_str(carp_json_at(conds, i), "type", NULL);
    if (type && !strcmp(type, "PodScheduled"))
      return 1;
  }
  return 0;
}

/* ---- one object ---- */

static int kind_index(const char *kind)
{
  int i;
  for (i = 0; i < 7; i++)
    if (!strcmp(kinds[i].kind, kind))
      return i;
  return -1;
}

static void name_list(struct carp_buf *b)
{
  int i;
  for (i = 0; i < 7; i++)
    carp_buf_printf(b, "%s%s", i ? (i == 6 ? " and " : ", ") : "",
                    kinds[i].kind);
}

static void mark_ready(struct carp_conditions *c,
                       const struct carp_condset *set, int64_t generation)
{
  carp_conditions_set(c, set, CARP_COND_READY, CARP_COND_TRUE, NULL,
                      "assumed by carpenter simulate", generation, 0);
}

/* Adjusts a freshly decoded object before it goes into the store. */
static int prepare(struct loader *l, int k, struct carp_objmeta *m,
                   yajl_val obj, const struct sim_where *w,
                   const struct ident *what)
{
  struct carp_simulation *s = l->s;
  if (k == KIND_POD) {
    struct carp_pod *p = (struct carp_pod *)m;
    /* A pod no scheduler has looked at yet (a manifest): pending. */
    if (!p->node_name && !p->nominated_node && !has_scheduled_condition(obj) &&
        !carp_pod_is_terminal(p)) {
      p->unschedulable = 1;
      l->unscheduled++;
    }
  } else if (k == KIND_NODEPOOL) {
    struct carp_nodepool *np = (struct carp_nodepool *)m;
    if (l->overrides && !np->valid)
      return fail(l, w, what, "invalid: %s", np->invalid_reason);
    if (l->overrides || !np->status.conditions.n) {
      if (np->valid)
        mark_ready(&np->status.conditions, &carp_condset_nodepool,
                   m->generation);
      if (!l->overrides)
        sim_warn(s,
                 "NodePool %s has no status (never reconciled): taken as "
                 "Ready%s",
                 m->name, np->valid ? "" : " - but it is invalid");
    }
    if (!np->valid)
      sim_warn(s, "NodePool %s is invalid, nothing launches from it: %s",
               m->name, np->invalid_reason);
  } else if (k == KIND_CLASS) {
    struct carp_nodeclass *nc = (struct carp_nodeclass *)m;
    if (!nc->status.conditions.n && nc->valid) {
      mark_ready(&nc->status.conditions, &carp_condset_nodeclass,
                 m->generation);
      sim_warn(s,
               "ProxmoxNodeClass %s has no status (never reconciled): taken "
               "as Ready; its templates and hosts are not checked offline",
               m->name);
    }
    if (!nc->valid)
      sim_warn(s, "ProxmoxNodeClass %s is invalid: %s", m->name,
               nc->invalid_reason);
  }
  return 0;
}

static int put_object(struct loader *l, yajl_val obj, const struct sim_where *w)
{
  struct carp_simulation *s = l->s;
  const char *kind, *api, *name, *ns, *uid;
  yajl_val meta;
  struct carp_objmeta *m = NULL, *old;
  struct carp_store *store;
  struct patched pn, pu;
  struct ident id;
  const struct ident *what = &id;
  char made_uid[48];
  char *err = NULL;
  int k, rc;

  if (!YAJL_IS_OBJECT(obj))
    return fail(l, w, NULL, "not an object");
  kind = carp_json_str(obj, "kind", NULL);
  api = carp_json_str(obj, "apiVersion", NULL);
  meta = carp_json_obj(obj, "metadata", NULL);
  name = carp_json_str(meta, "name", NULL);
  ns = carp_json_str(meta, "namespace", NULL);
  id.kind = kind;
  id.ns = ns;
  id.name = name;
  if (!kind || !*kind)
    return fail(l, w, what, "missing kind");
  if (!api || !*api)
    return fail(l, w, what, "missing apiVersion");
  k = kind_index(kind);
  if (k < 0) {
    struct carp_buf list;
    carp_buf_init(&list, 512);
    name_list(&list);
    rc = fail(l, w, what,
              "kind %s is not part of a snapshot (carpenter simulate "
              "reads %s)",
              kind, carp_buf_cstr(&list));
    carp_buf_free(&list);
    return rc;
  }
  if (strcmp(api, kinds[k].api_version))
    return fail(l, w, what, "apiVersion %s: carpenter simulate reads %s %s",
                api, kinds[k].kind, kinds[k].api_version);
  if (l->overrides && k != KIND_NODEPOOL)
    return fail(l, w, what, "--nodepool files hold NodePools only");
  if (!meta)
    return fail(l, w, what, "missing metadata");
  if (!name || !*name)
    return fail(l, w, what, "missing metadata.name");

  memset(&pn, 0, sizeof(pn));
  memset(&pu, 0, sizeof(pu));
  pn.meta = pu.meta = meta;
  if (kinds[k].decoder->namespaced && (!ns || !*ns))
    patch_add(&pn, "namespace", "default");
  uid = carp_json_str(meta, "uid", NULL);
  if (!uid || !*uid) {
    /* Manifests have none; only the snapshot's are worth a note. */
    snprintf(made_uid, sizeof(made_uid), "simulate-%zu", ++l->uids);
    patch_add(&pu, "uid", made_uid);
    if (!l->overrides)
      l->snapshot_uids++;
  }
  rc = kinds[k].decoder->decode(obj, &m, &err);
  patch_undo(&pu);
  patch_undo(&pn);
  if (rc) {
    rc = fail(l, w, what, "%s", err ? err : carp_strerror(rc));
    carp_free(err);
    return rc;
  }
  rc = prepare(l, k, m, obj, w, what);
  if (rc) {
    carp_obj_unref(m);
    return rc;
  }
  store = carp_informer_store(s->cluster->all[k]);
  old = carp_store_put(store, m);
  if (old) {
    carp_obj_unref(old);
    if (!l->overrides)
      return fail(l, w, what, "appears twice in the snapshot");
    sim_warn(s, "NodePool %s from %s replaces the snapshot's", m->name,
             w->file);
  } else {
    s->counts[k]++;
  }
  return 0;
}

static int is_list(const char *kind)
{
  size_t n = kind ? strlen(kind) : 0;
  return n >= 4 && !strcmp(kind + n - 4, "List");
}

static int on_value(const struct sim_value *x, void *arg)
{
  struct loader *l = arg;
  const char *kind;
  if (!x->doc)
    return put_object(l, x->v, &x->w);
  kind = carp_json_str(x->v, "kind", NULL);
  if (YAJL_IS_NULL(x->v))
    return 0; /* an empty document */
  if (is_list(kind))
    return 0; /* its items went one by one */
  if (x->had_items)
    return fail(l, &x->w, NULL,
                "has items but is not a List (kind %s): a snapshot is a "
                "List or single objects",
                kind ? kind : "missing");
  if (YAJL_IS_ARRAY(x->v))
    return fail(l, &x->w, NULL,
                "a JSON array: a snapshot is a List (kubectl get -o json) "
                "or single objects");
  return put_object(l, x->v, &x->w);
}

/* ---- files ---- */

/* The whole file in memory: mapped when it is a regular file (a snapshot
 * of a large cluster is most of a gigabyte; the page cache holds it
 * already), else read (a pipe). */
struct text {
  const char *ptr;
  size_t len;
  void *map;
  struct carp_buf buf;
};

static int text_open(const char *path, FILE *f, struct text *t)
{
  struct stat st;
  char chunk[65536];
  size_t n;
  memset(t, 0, sizeof(*t));
  if (!fstat(fileno(f), &st) && S_ISREG(st.st_mode) && st.st_size > 0) {
    t->map =
        mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fileno(f), 0);
    if (t->map != MAP_FAILED) {
      madvise(t->map, (size_t)st.st_size, MADV_SEQUENTIAL);
      t->ptr = t->map;
      t->len = (size_t)st.st_size;
      return 0;
    }
    t->map = NULL;
  }
  carp_buf_init(&t->buf, CARP_BUF_UNLIMITED);
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
    carp_buf_append(&t->buf, chunk, n);
  if (ferror(f)) {
    carp_buf_free(&t->buf);
    return CARP_EIO;
  }
  t->ptr = t->buf.ptr ? t->buf.ptr : "";
  t->len = t->buf.len;
  (void)path;
  return 0;
}

static void text_close(struct text *t)
{
  if (t->map)
    munmap(t->map, t->len);
  else
    carp_buf_free(&t->buf);
}

static int load_file(struct loader *l, const char *path, char **err)
{
  struct carp_simulation *s = l->s;
  int std = !strcmp(path, "-");
  const char *name = std ? "<stdin>" : path;
  FILE *f = std ? stdin : fopen(path, "rb");
  char msg[1024];
  struct text text;
  size_t i = 0;
  int rc;

  carp_buf_reset(&l->err);
  if (!f || (rc = text_open(path, f, &text))) {
    rc = f ? CARP_EIO : -errno;
    carp_buf_printf(&l->err, "%s: %s", name, carp_strerror(rc));
    *err = carp_buf_steal(&l->err, NULL);
    if (f && !std)
      fclose(f);
    return rc;
  }
  s->files = carp_reallocarray(s->files, s->nfiles + 1, sizeof(char *));
  s->files[s->nfiles++] = carp_strdup(name);
  if (text.len >= 3 && !memcmp(text.ptr, "\xef\xbb\xbf", 3))
    i = 3; /* a byte order mark */
  while (i < text.len && strchr(" \t\r\n", text.ptr[i]))
    i++;
  msg[0] = '\0';
  rc = sim_parse(s->files[s->nfiles - 1], text.ptr + i, text.len - i,
                 i < text.len && (text.ptr[i] == '{' || text.ptr[i] == '['),
                 on_value, l, msg, sizeof(msg));
  text_close(&text);
  if (!std)
    fclose(f);
  if (rc) {
    if (msg[0]) {
      carp_buf_reset(&l->err);
      carp_buf_puts(&l->err, msg);
    }
    *err = carp_buf_steal(&l->err, NULL);
    return CARP_EINVALID;
  }
  return 0;
}

/* ---- what the offline provider learns from the snapshot ---- */

static void teach_provider(struct carp_simulation *s)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  carp_store_iter_init(&it);
  while (
      (m = carp_store_next(carp_informer_store(s->cluster->nodeclaims), &it))) {
    const struct carp_nodeclaim *nc = (const struct carp_nodeclaim *)m;
    const char *cls = nc->spec.node_class_ref.name;
    const char *zone = carp_kvset_get(m->labels, CARP_LABEL_ZONE);
    const char *region = carp_kvset_get(m->labels, CARP_LABEL_REGION);
    const char *ann = carp_kvset_get(m->annotations, CARP_ANN_VM);
    char r[64], z[64];
    int64_t vmid;
    if (!cls)
      continue;
    if ((!zone || !region) && ann &&
        !carp_provider_vm_annotation_parse(ann, r, sizeof(r), z, sizeof(z),
                                           &vmid)) {
      region = region ? region : r;
      zone = zone ? zone : z;
    }
    if (zone && region)
      carp_pve_offline_add_zone(s->provider, cls, region, zone);
    if (nc->status.capacity.ephemeral)
      carp_pve_offline_set_template_disk(s->provider, cls,
                                         nc->status.capacity.ephemeral);
  }
}

static void check_refs(struct carp_simulation *s)
{
  struct carp_store_iter it;
  struct carp_objmeta *m;
  carp_store_iter_init(&it);
  while (
      (m = carp_store_next(carp_informer_store(s->cluster->nodepools), &it))) {
    const struct carp_nodepool *np = (const struct carp_nodepool *)m;
    const char *cls = np->tmpl.node_class_ref.name;
    if (cls && !carp_cluster_nodeclass(s->cluster, cls))
      sim_warn(s,
               "NodePool %s uses ProxmoxNodeClass %s, which is not in the "
               "snapshot: nothing launches from it",
               m->name, cls);
  }
}

int carp_simulation_load(const char *const *paths, size_t npaths,
                         const char *const *nodepool_paths, size_t nnodepools,
                         struct carp_simulation **out, char **err)
{
  struct carp_simulation *s = CARP_NEW(struct carp_simulation);
  struct carp_kube_config cfg;
  struct carp_kube_options ko;
  struct loader l;
  uint64_t start = carp_time_mono_ms();
  size_t i;
  int rc = 0;

  *out = NULL;
  *err = NULL;
  uv_loop_init(&s->loop);
  /* The caches need a client to exist; it never connects (nothing here
   * starts an informer). */
  memset(&cfg, 0, sizeof(cfg));
  cfg.server = (char *)"http://127.0.0.1:1";
  memset(&ko, 0, sizeof(ko));
  ko.config = &cfg;
  if ((rc = carp_kube_new(&s->loop, &ko, &s->kube)) ||
      (rc = carp_cluster_new(&s->loop, s->kube, NULL, &s->cluster)) ||
      (rc = carp_pve_offline_new(&s->loop, &s->provider))) {
    *err = carp_strdup(carp_strerror(rc));
    carp_simulation_free(s);
    return rc;
  }
  memset(&l, 0, sizeof(l));
  l.s = s;
  carp_buf_init(&l.err, CARP_BUF_UNLIMITED);
  for (i = 0; i < npaths && !rc; i++)
    rc = load_file(&l, paths[i], err);
  l.overrides = 1;
  for (i = 0; i < nnodepools && !rc; i++)
    rc = load_file(&l, nodepool_paths[i], err);
  carp_buf_free(&l.err);
  if (rc) {
    carp_simulation_free(s);
    return rc;
  }
  if (l.unscheduled)
    sim_warn(s,
             "%zu unbound pod(s) had no PodScheduled condition (not yet seen "
             "by a scheduler): taken as pending",
             l.unscheduled);
  if (l.snapshot_uids)
    sim_warn(s, "%zu object(s) had no metadata.uid: one was made up",
             l.snapshot_uids);
  teach_provider(s);
  check_refs(s);
  s->load_ms = carp_time_mono_ms() - start;
  *out = s;
  return 0;
}
