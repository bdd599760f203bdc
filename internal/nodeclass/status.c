/* status.c: the status a ProxmoxNodeClass should have, from what the
 * controller found out (regions, usable hosts, templates, the user-data
 * Secret) - no I/O here. Conditions follow docs/api.md; Ready is the
 * first failing condition in the order ValidationSucceeded, RegionsReady,
 * TemplatesReady, BootstrapReady (carp_condset_nodeclass). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/intern.h"
#include "carpenter/nodeclass_controller.h"

/* The variables the Proxmox provider substitutes (docs/api.md). */
static const char *const userdata_vars[] = {
    "ProviderID", "NodeName",     "Labels",         "Taints",
    "Region",     "Zone",         "InstanceType",   "VMID",
    "MaxPods",    "KubeReserved", "SystemReserved", "EvictionHard",
};

static int ident_char(char c)
{
  return isalnum((unsigned char)c) || c == '_';
}

int carp_userdata_check(const char *text, size_t len, char *bad,
                        size_t bad_size)
{
  size_t i = 0, k;
  if (bad_size)
    bad[0] = '\0';
  while (i + 1 < len) {
    size_t p, ns, nl;
    if (text[i] != '{' || text[i + 1] != '{') {
      i++;
      continue;
    }
    p = i + 2;
    i = p;
    while (p < len && (text[p] == ' ' || text[p] == '\t'))
      p++;
    if (p + 1 >= len || text[p] != '.' ||
        !(isalpha((unsigned char)text[p + 1]) || text[p + 1] == '_'))
      continue;
    ns = p + 1;
    nl = 0;
    while (ns + nl < len && ident_char(text[ns + nl]))
      nl++;
    p = ns + nl;
    while (p < len && (text[p] == ' ' || text[p] == '\t'))
      p++;
    if (p + 1 >= len || text[p] != '}' || text[p + 1] != '}')
      continue; /* not a variable: left as text by the renderer */
    for (k = 0; k < CARP_ARRAY_LEN(userdata_vars); k++)
      if (strlen(userdata_vars[k]) == nl &&
          !strncmp(userdata_vars[k], text + ns, nl))
        break;
    if (k == CARP_ARRAY_LEN(userdata_vars)) {
      if (bad_size)
        snprintf(bad, bad_size, "%.*s", (int)(nl > 100 ? 100 : nl), text + ns);
      return CARP_EINVALID;
    }
    i = p + 2;
  }
  return 0;
}

/* ---- conditions ---- */

static int set(struct carp_nodeclass_status *st, const char *type,
               enum carp_cond_status s, const char *reason, const char *msg,
               int64_t gen, int64_t now)
{
  return carp_conditions_set(&st->conditions, &carp_condset_nodeclass, type, s,
                             reason, msg, gen, now);
}

static void list_join(struct carp_buf *b, const char *const *v, size_t n)
{
  size_t i;
  for (i = 0; i < n; i++)
    carp_buf_printf(b, "%s%s", i ? ", " : "", v[i]);
  if (!n)
    carp_buf_puts(b, "none");
}

static int regions_condition(const struct carp_nodeclass *cls,
                             const struct carp_nodeclass_facts *f, int64_t gen,
                             int64_t now, struct carp_nodeclass_status *st)
{
  struct carp_buf msg;
  const char *reason = NULL;
  enum carp_cond_status s = CARP_COND_TRUE;
  size_t i;
  int changed;
  carp_buf_init(&msg, 16 * 1024);
  if (!f->nregions) {
    s = CARP_COND_FALSE;
    reason = "RegionNotConfigured";
    carp_buf_puts(&msg, "no Proxmox VE region is configured (--pve-config)");
  }
  for (i = 0; i < f->nregions; i++) {
    const struct carp_nodeclass_region_fact *r = &f->regions[i];
    const char *why;
    enum carp_cond_status rs = CARP_COND_FALSE;
    if (!r->status)
      continue;
    if (r->status == CARP_ENOENT) {
      why = "RegionNotConfigured";
    } else if (r->status == CARP_EUNAUTHORIZED ||
               r->status == CARP_EFORBIDDEN) {
      why = "Unauthorized";
    } else if (r->status == CARP_EAGAIN) {
      why = CARP_REASON_AWAITING_REFRESH;
      rs = CARP_COND_UNKNOWN;
    } else {
      why = "RegionUnreachable";
    }
    /* False wins over Unknown; the first of each kind names the reason. */
    if (s == CARP_COND_TRUE ||
        (s == CARP_COND_UNKNOWN && rs == CARP_COND_FALSE)) {
      s = rs;
      reason = why;
      carp_buf_reset(&msg);
    } else if (rs != s) {
      continue;
    }
    if (msg.len)
      carp_buf_puts(&msg, "; ");
    if (r->status == CARP_ENOENT) {
      carp_buf_printf(
          &msg, "region %s is not in --pve-config (configured: ", r->name);
      list_join(&msg, f->configured, f->nconfigured);
      carp_buf_putc(&msg, ')');
    } else if (r->message && *r->message) {
      /* Provider messages usually name the region already. */
      if (strstr(r->message, r->name))
        carp_buf_puts(&msg, r->message);
      else
        carp_buf_printf(&msg, "region %s: %s", r->name, r->message);
    } else {
      carp_buf_printf(&msg, "region %s: %s", r->name, carp_strerror(r->status));
    }
  }
  (void)cls;
  changed = set(st, CARP_COND_REGIONS_READY, s, reason, carp_buf_cstr(&msg),
                gen, now);
  carp_buf_free(&msg);
  return changed;
}

static int templates_condition(const struct carp_nodeclass *cls,
                               const struct carp_nodeclass_facts *f,
                               int64_t gen, int64_t now,
                               struct carp_nodeclass_status *st)
{
  const struct carp_nodeclass_spec *sp = &cls->spec;
  struct carp_buf msg;
  size_t i, ready = 0;
  int changed;
  for (i = 0; i < f->nregions; i++)
    ready += f->regions[i].status == 0;
  if (!ready)
    return set(st, CARP_COND_TEMPLATES_READY, CARP_COND_UNKNOWN,
               CARP_REASON_REGIONS_NOT_READY,
               "templates are looked up once a region answers", gen, now);
  if (f->nzones) {
    if (f->templates_known)
      return set(st, CARP_COND_TEMPLATES_READY, CARP_COND_TRUE, NULL, NULL, gen,
                 now);
    return set(st, CARP_COND_TEMPLATES_READY, CARP_COND_TRUE, NULL,
               "every host in status.zones has a matching template; "
               "whether its storage is shared (scope Shared) is checked at "
               "launch",
               gen, now);
  }
  carp_buf_init(&msg, 16 * 1024);
  carp_buf_puts(&msg, "no online host");
  if (sp->zones.n) {
    carp_buf_puts(&msg, " among zones [");
    list_join(&msg, sp->zones.v, sp->zones.n);
    carp_buf_putc(&msg, ']');
  }
  carp_buf_puts(&msg, " of the ready regions has a template");
  if (sp->template_name)
    carp_buf_printf(&msg, " named %s", sp->template_name);
  if (sp->template_tags.n) {
    carp_buf_printf(&msg, "%s tagged [", sp->template_name ? " and" : "");
    list_join(&msg, sp->template_tags.v, sp->template_tags.n);
    carp_buf_putc(&msg, ']');
  }
  carp_buf_printf(&msg, "%s",
                  sp->template_scope == CARP_SCOPE_SHARED
                      ? " (scope Shared: on any host of the region)"
                      : " on that host (scope PerHost)");
  changed = set(st, CARP_COND_TEMPLATES_READY, CARP_COND_FALSE,
                "TemplateNotFound", carp_buf_cstr(&msg), gen, now);
  carp_buf_free(&msg);
  return changed;
}

static int bootstrap_condition(const struct carp_nodeclass *cls,
                               const struct carp_nodeclass_facts *f,
                               int64_t gen, int64_t now,
                               struct carp_nodeclass_status *st)
{
  const struct carp_nodeclass_spec *sp = &cls->spec;
  const char *key =
      sp->userdata_secret_key ? sp->userdata_secret_key : "user-data";
  const char *ns =
      sp->userdata_secret_namespace ? sp->userdata_secret_namespace : "";
  const char *name = sp->userdata_secret_name ? sp->userdata_secret_name : "";
  char msg[1024], bad[128];
  if (sp->bootstrap_mode != CARP_BOOTSTRAP_USERDATA)
    return set(st, CARP_COND_BOOTSTRAP_READY, CARP_COND_TRUE, NULL, NULL, gen,
               now);
  if (f->secret_status == CARP_ENOTFOUND) {
    snprintf(msg, sizeof(msg), "Secret %s/%s not found", ns, name);
    return set(st, CARP_COND_BOOTSTRAP_READY, CARP_COND_FALSE,
               "UserDataSecretNotFound", msg, gen, now);
  }
  if (f->secret_status) {
    snprintf(msg, sizeof(msg), "cannot read Secret %s/%s: %s", ns, name,
             f->secret_message && *f->secret_message
                 ? f->secret_message
                 : carp_strerror(f->secret_status));
    return set(st, CARP_COND_BOOTSTRAP_READY, CARP_COND_UNKNOWN,
               CARP_REASON_SECRET_UNREADABLE, msg, gen, now);
  }
  if (!f->userdata) {
    snprintf(msg, sizeof(msg),
             "Secret %s/%s has no key %s (or its value is not base64)", ns,
             name, key);
    return set(st, CARP_COND_BOOTSTRAP_READY, CARP_COND_FALSE,
               "UserDataKeyNotFound", msg, gen, now);
  }
  if (carp_userdata_check(f->userdata, f->userdata_len, bad, sizeof(bad))) {
    snprintf(msg, sizeof(msg),
             "key %s of Secret %s/%s uses the unknown variable .%s (known: "
             ".ProviderID .NodeName .Labels .Taints .Region .Zone "
             ".InstanceType .VMID .MaxPods .KubeReserved .SystemReserved "
             ".EvictionHard)",
             key, ns, name, bad);
    return set(st, CARP_COND_BOOTSTRAP_READY, CARP_COND_FALSE,
               "UserDataTemplateInvalid", msg, gen, now);
  }
  snprintf(msg, sizeof(msg),
           "user-data read from Secret %s/%s; ISO storage %s is checked at "
           "launch",
           ns, name, sp->iso_storage ? sp->iso_storage : "(unset)");
  return set(st, CARP_COND_BOOTSTRAP_READY, CARP_COND_TRUE, NULL, msg, gen,
             now);
}

/* ---- status fields ---- */

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void set_lists(const struct carp_nodeclass *cls,
                      const struct carp_nodeclass_facts *f,
                      struct carp_nodeclass_status *st)
{
  struct carp_instance_type *types = NULL;
  size_t ntypes = 0, i, n = 0;
  const char **v;

  carp_strlist_cleanup(&st->regions);
  carp_strlist_cleanup(&st->zones);
  st->regions.v = carp_calloc(f->nregions + 1, sizeof(char *));
  for (i = 0; i < f->nregions; i++)
    if (!f->regions[i].status)
      st->regions.v[st->regions.n++] = carp_interns(f->regions[i].name);

  v = carp_calloc(f->nzones + 1, sizeof(char *));
  for (i = 0; i < f->nzones; i++)
    v[i] = f->zones[i].zone;
  qsort(v, f->nzones, sizeof(char *), cmp_str);
  st->zones.v = carp_calloc(f->nzones + 1, sizeof(char *));
  for (i = 0; i < f->nzones; i++)
    if (!n || strcmp(v[i], v[n - 1]))
      v[n++] = v[i];
  for (i = 0; i < n; i++)
    st->zones.v[st->zones.n++] = carp_interns(v[i]);
  carp_free(v);

  for (i = 0; i < st->ntemplates; i++) {
    carp_intern_release(st->templates[i].region);
    carp_intern_release(st->templates[i].zone);
    carp_intern_release(st->templates[i].name);
    carp_intern_release(st->templates[i].node);
    carp_intern_release(st->templates[i].storage);
  }
  CARP_FREE(&st->templates);
  st->ntemplates = 0;
  if (f->templates_known && f->ntemplates) {
    st->templates = carp_calloc(f->ntemplates, sizeof(*st->templates));
    for (i = 0; i < f->ntemplates; i++) {
      const struct carp_nodeclass_template *t = &f->templates[i];
      st->templates[i] = *t;
      st->templates[i].region = carp_intern_ref(t->region);
      st->templates[i].zone = carp_intern_ref(t->zone);
      st->templates[i].name = carp_intern_ref(t->name);
      st->templates[i].node = carp_intern_ref(t->node);
      st->templates[i].storage = carp_intern_ref(t->storage);
    }
    st->ntemplates = (uint32_t)f->ntemplates;
  }

  CARP_FREE(&st->instance_types);
  st->ninstance_types = 0;
  if (!carp_nodeclass_instance_types(&cls->spec, &types, &ntypes) && ntypes) {
    st->instance_types = types;
    st->ninstance_types = (uint32_t)ntypes;
  } else {
    carp_free(types);
  }
}

static int same_status(const struct carp_nodeclass_status *a,
                       const struct carp_nodeclass_status *b)
{
  struct carp_buf x, y;
  int same;
  carp_buf_init(&x, CARP_BUF_UNLIMITED);
  carp_buf_init(&y, CARP_BUF_UNLIMITED);
  carp_nodeclass_status_patch(a, NULL, &x);
  carp_nodeclass_status_patch(b, NULL, &y);
  same = x.len == y.len && !memcmp(carp_buf_cstr(&x), carp_buf_cstr(&y), x.len);
  carp_buf_free(&x);
  carp_buf_free(&y);
  return same;
}

int carp_nodeclass_status_compute(const struct carp_nodeclass *cls,
                                  const struct carp_nodeclass_facts *f,
                                  int64_t now_ms,
                                  struct carp_nodeclass_status *st)
{
  int64_t gen = cls->meta.generation;
  char hash[CARP_HASH_LEN];

  if (cls->valid)
    set(st, CARP_COND_VALIDATION_SUCCEEDED, CARP_COND_TRUE, NULL, NULL, gen,
        now_ms);
  else
    set(st, CARP_COND_VALIDATION_SUCCEEDED, CARP_COND_FALSE,
        CARP_REASON_INVALID_SPEC,
        cls->invalid_reason ? cls->invalid_reason : "invalid spec", gen,
        now_ms);
  regions_condition(cls, f, gen, now_ms, st);
  templates_condition(cls, f, gen, now_ms, st);
  bootstrap_condition(cls, f, gen, now_ms, st);
  carp_conditions_recompute_root(&st->conditions, &carp_condset_nodeclass, gen,
                                 now_ms);
  st->observed_generation = gen;

  /* The hash moves only on what is known: a Secret that cannot be read
   * now keeps the hash it had. */
  if (cls->spec.bootstrap_mode != CARP_BOOTSTRAP_USERDATA) {
    carp_nodeclass_hash(&cls->spec, NULL, 0, hash);
    carp_free(st->spec_hash);
    st->spec_hash = carp_strdup(hash);
  } else if (!f->secret_status && f->userdata) {
    carp_nodeclass_hash(&cls->spec, f->userdata, f->userdata_len, hash);
    carp_free(st->spec_hash);
    st->spec_hash = carp_strdup(hash);
  }
  set_lists(cls, f, st);
  return !same_status(st, &cls->status);
}
