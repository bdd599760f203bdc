/* report.c: a simulation's result for people (text) and for scripts
 * (JSON, fields described in docs/simulate.md). Both say the same
 * things: the snapshot read, the NodeClaims provisioning would create and
 * the pods it cannot place (with each NodePool's refusal), consolidation's
 * command and every NodeClaim's fate with its reason, and the price per
 * hour before and after. */
#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/api_encode.h"
#include "carpenter/buf.h"
#include "carpenter/json.h"
#include "carpenter/timeutil.h"
#include "sim_int.h"

#define MAX_PODS_SHOWN  5  /* text: pods listed per NodeClaim */
#define MAX_LINES_SHOWN 20 /* text: placed and unplaced pods listed */

static const char *const kind_names[7] = {"pods",
                                          "nodes",
                                          "nodeClaims",
                                          "nodePools",
                                          "proxmoxNodeClasses",
                                          "podDisruptionBudgets",
                                          "daemonSets"};

static const char *const kind_text[7] = {"pods",
                                         "nodes",
                                         "NodeClaims",
                                         "NodePools",
                                         "ProxmoxNodeClasses",
                                         "PodDisruptionBudgets",
                                         "DaemonSets"};

static const char *action_name(enum sim_action a)
{
  switch (a) {
  case SIM_DELETE:
    return "delete";
  case SIM_REPLACE:
    return "replace";
  case SIM_KEEP:
    break;
  }
  return "none";
}

static void price_text(char *out, size_t size, double p)
{
  if (p < 0)
    snprintf(out, size, "?");
  else
    snprintf(out, size, "%.4f", p);
}

/* ---- text ---- */

static void resources_text(struct carp_buf *b, const struct carp_resources *r)
{
  char q[32];
  uint32_t i;
  const char *sep = "";
  if (r->cpu) {
    carp_resource_quantity_format("cpu", r->cpu, q);
    carp_buf_printf(b, "cpu %s", q);
    sep = ", ";
  }
  if (r->memory) {
    carp_resource_quantity_format("memory", r->memory, q);
    carp_buf_printf(b, "%smemory %s", sep, q);
    sep = ", ";
  }
  if (r->ephemeral) {
    carp_resource_quantity_format("ephemeral-storage", r->ephemeral, q);
    carp_buf_printf(b, "%sephemeral-storage %s", sep, q);
    sep = ", ";
  }
  if (r->pods) {
    carp_buf_printf(b, "%spods %lld", sep, (long long)r->pods);
    sep = ", ";
  }
  for (i = 0; i < r->nextended; i++) {
    carp_resource_quantity_format(r->extended[i].name, r->extended[i].value, q);
    carp_buf_printf(b, "%s%s %s", sep, r->extended[i].name, q);
    sep = ", ";
  }
}

static void list_text(struct carp_buf *b, char *const *v, size_t n,
                      const char *sep)
{
  size_t i;
  for (i = 0; i < n; i++)
    carp_buf_printf(b, "%s%s", i ? sep : "", v[i]);
}

/* Same pool, options, price, zones and number of pods. */
static int same_shape(const struct sim_claim *a, const struct sim_claim *b)
{
  size_t i;
  if (strcmp(a->nodepool, b->nodepool) || a->ntypes != b->ntypes ||
      a->nzones != b->nzones || a->npods != b->npods || a->price != b->price)
    return 0;
  for (i = 0; i < a->ntypes; i++)
    if (strcmp(a->types[i], b->types[i]))
      return 0;
  for (i = 0; i < a->nzones; i++)
    if (strcmp(a->zones[i], b->zones[i]))
      return 0;
  return 1;
}

static void provisioning_text(const struct carp_simulation *s,
                              struct carp_buf *b)
{
  char p[32], *shown;
  size_t i, j;
  carp_buf_printf(b, "\nProvisioning: %zu pending pod%s\n", s->pending,
                  s->pending == 1 ? "" : "s");
  if (!s->pending)
    return;
  if (s->nclaims)
    carp_buf_printf(b, "  would create %zu NodeClaim%s:\n", s->nclaims,
                    s->nclaims == 1 ? "" : "s");
  shown = carp_calloc(s->nclaims + 1, 1);
  for (i = 0; i < s->nclaims; i++) {
    const struct sim_claim *c = &s->claims[i];
    size_t same = 0, pods = 0, listed = 0, k;
    if (shown[i])
      continue;
    /* NodeClaims of the same shape are shown once, with their count. */
    for (k = i; k < s->nclaims; k++)
      if (!shown[k] && same_shape(c, &s->claims[k])) {
        shown[k] = 1;
        same++;
        pods += s->claims[k].npods;
      }
    price_text(p, sizeof(p), c->price);
    carp_buf_puts(b, "    ");
    if (same > 1)
      carp_buf_printf(b, "%zu x ", same);
    carp_buf_printf(b, "nodepool %s: %s (cheapest of %zu option%s), %s/h, ",
                    c->nodepool, c->ntypes ? c->types[0] : "?", c->ntypes,
                    c->ntypes == 1 ? "" : "s", p);
    if (c->nzones) {
      carp_buf_puts(b, c->nzones == 1 ? "zone " : "zones ");
      list_text(b, c->zones, c->nzones, ",");
    } else {
      carp_buf_puts(b, "no zone known");
    }
    carp_buf_printf(b, ", %zu pod%s%s\n      requests%s ", c->npods,
                    c->npods == 1 ? "" : "s", same > 1 ? " each" : "",
                    same > 1 ? " (the first)" : "");
    resources_text(b, &c->requests);
    carp_buf_puts(b, "\n      pods ");
    for (k = i; k < s->nclaims && listed < MAX_PODS_SHOWN; k++) {
      if (k != i && !same_shape(c, &s->claims[k]))
        continue;
      for (j = 0; j < s->claims[k].npods && listed < MAX_PODS_SHOWN; j++)
        carp_buf_printf(b, "%s%s", listed++ ? ", " : "",
                        s->claims[k].pods[j]->meta.key);
    }
    if (pods > listed)
      carp_buf_printf(b, " and %zu more", pods - listed);
    carp_buf_putc(b, '\n');
  }
  carp_free(shown);
  if (s->nplaced)
    carp_buf_printf(b, "  would place %zu pod%s on existing capacity:\n",
                    s->nplaced, s->nplaced == 1 ? "" : "s");
  for (i = 0; i < s->nplaced && i < MAX_LINES_SHOWN; i++)
    carp_buf_printf(b, "    %s -> %s %s\n", s->placed[i].pod->meta.key,
                    s->placed[i].in_flight ? "nodeclaim" : "node",
                    s->placed[i].target);
  if (s->nplaced > MAX_LINES_SHOWN)
    carp_buf_printf(b, "    and %zu more (-o json lists every one)\n",
                    s->nplaced - MAX_LINES_SHOWN);
  if (s->nunplaced)
    carp_buf_printf(b, "  cannot place %zu pod%s:\n", s->nunplaced,
                    s->nunplaced == 1 ? "" : "s");
  for (i = 0; i < s->nunplaced && i < MAX_LINES_SHOWN; i++) {
    const struct sim_unplaced *u = &s->unplaced[i];
    carp_buf_printf(b, "    %s\n", u->pod->meta.key);
    if (!u->nrefusals)
      carp_buf_printf(b, "      %s\n", u->message);
    for (j = 0; j < u->nrefusals; j++) {
      const struct sim_refusal *r = &u->refusals[j];
      carp_buf_printf(b, "      nodepool %s: %s", r->nodepool, r->reason);
      if (r->detail[0])
        carp_buf_printf(b, " %s", r->detail);
      if (r->message[0])
        carp_buf_printf(b, ": %s", r->message);
      carp_buf_putc(b, '\n');
    }
  }
  if (s->nunplaced > MAX_LINES_SHOWN)
    carp_buf_printf(b, "    and %zu more (-o json lists every one)\n",
                    s->nunplaced - MAX_LINES_SHOWN);
}

static void consolidation_text(const struct carp_simulation *s,
                               struct carp_buf *b)
{
  size_t i, n = 0;
  char p[32];
  for (i = 0; i < s->nnodes; i++)
    n += s->nodes[i].action != SIM_KEEP;
  if (s->decision == SIM_KEEP) {
    carp_buf_printf(b, "\nConsolidation: nothing to do: %s\n", s->decision_why);
  } else {
    carp_buf_printf(b, "\nConsolidation: %s %zu NodeClaim%s (",
                    action_name(s->decision), n, n == 1 ? "" : "s");
    if (!strcmp(s->method, "empty"))
      carp_buf_puts(b, "emptiness");
    else if (!strcmp(s->method, "drift"))
      carp_buf_puts(b, "drift");
    else
      carp_buf_printf(b, "%s-node consolidation, %s", s->method, s->reason);
    carp_buf_puts(b, "), saving ");
    price_text(p, sizeof(p), s->savings);
    carp_buf_printf(b, "%s/h\n", p);
    if (s->decision == SIM_REPLACE && s->nrepls > 1)
      carp_buf_printf(b, "  %zu replacements:\n", s->nrepls);
    for (i = 0; s->decision == SIM_REPLACE && i < s->nrepls; i++) {
      price_text(p, sizeof(p), s->repls[i].price);
      carp_buf_printf(b, "  %s nodepool %s, %s/h, options ",
                      s->nrepls > 1 ? "  -" : "replacement:", s->repls[i].pool,
                      p);
      list_text(b, s->repls[i].types, s->repls[i].ntypes, ",");
      carp_buf_putc(b, '\n');
    }
  }
  for (i = 0; i < s->nnodes; i++) {
    const struct sim_node *e = &s->nodes[i];
    price_text(p, sizeof(p), e->price);
    carp_buf_printf(b, "  %-8s %s", action_name(e->action),
                    e->nodeclaim ? e->nodeclaim : e->node);
    if (e->nodeclaim && !e->node)
      carp_buf_puts(b, " (no node)");
    else if (!e->nodeclaim)
      carp_buf_puts(b, " (node)");
    carp_buf_printf(
        b, " [%s %s %s %s/h, %zu pod%s]: %s\n", e->nodepool ? e->nodepool : "-",
        e->instance_type ? e->instance_type : "-", e->zone ? e->zone : "-", p,
        e->pods, e->pods == 1 ? "" : "s", e->why);
  }
}

void carp_simulation_report_text(const struct carp_simulation *s,
                                 struct carp_buf *b)
{
  char t[CARP_RFC3339_LEN], p1[32], p2[32];
  size_t i;
  double added = 0;
  carp_buf_puts(b, "Snapshot: ");
  list_text(b, s->files, s->nfiles, ", ");
  carp_buf_puts(b, "\n  ");
  for (i = 0; i < 7; i++)
    carp_buf_printf(b, "%s%zu %s", i ? ", " : "", s->counts[i], kind_text[i]);
  carp_time_format_rfc3339(s->now_ms, 0, t);
  carp_buf_printf(b, "\n  simulated at %s\n", t);
  for (i = 0; i < s->nwarnings; i++)
    carp_buf_printf(b, "  note: %s\n", s->warnings[i]);
  provisioning_text(s, b);
  consolidation_text(s, b);
  for (i = 0; i < s->nclaims; i++)
    added += s->claims[i].price;
  price_text(p1, sizeof(p1), s->price_before);
  price_text(p2, sizeof(p2), s->price_after);
  carp_buf_printf(b, "\nPrice per hour: %s now, %s after", p1, p2);
  if (s->nclaims) {
    price_text(p1, sizeof(p1), added);
    carp_buf_printf(b, " (+%s new NodeClaims", p1);
  }
  if (s->decision != SIM_KEEP) {
    price_text(p1, sizeof(p1), s->savings);
    carp_buf_printf(b, "%s-%s consolidation", s->nclaims ? ", " : " (", p1);
  }
  if (s->nclaims || s->decision != SIM_KEEP)
    carp_buf_putc(b, ')');
  carp_buf_putc(b, '\n');
}

/* ---- JSON ---- */

static void jnum(struct carp_jw *w, const char *key, double v)
{
  char text[48];
  int n = snprintf(text, sizeof(text), "%.6g", v);
  carp_jw_key(w, key);
  if (v < 0)
    carp_jw_null(w);
  else
    carp_jw_number(w, text, (size_t)n);
}

static void jstrs(struct carp_jw *w, const char *key, char *const *v, size_t n)
{
  size_t i;
  carp_jw_key(w, key);
  carp_jw_arr(w);
  for (i = 0; i < n; i++)
    carp_jw_str(w, v[i]);
  carp_jw_arr_end(w);
}

static void jopt(struct carp_jw *w, const char *key, const char *s)
{
  carp_jw_key(w, key);
  if (s)
    carp_jw_str(w, s);
  else
    carp_jw_null(w);
}

static void provisioning_json(const struct carp_simulation *s,
                              struct carp_jw *w)
{
  size_t i, j;
  carp_jw_key(w, "provisioning");
  carp_jw_obj(w);
  carp_jw_kint(w, "pendingPods", (int64_t)s->pending);
  carp_jw_key(w, "nodeClaims");
  carp_jw_arr(w);
  for (i = 0; i < s->nclaims; i++) {
    const struct sim_claim *c = &s->claims[i];
    carp_jw_obj(w);
    carp_jw_kstr(w, "nodePool", c->nodepool);
    jopt(w, "instanceType", c->ntypes ? c->types[0] : NULL);
    jstrs(w, "instanceTypes", c->types, c->ntypes);
    jstrs(w, "zones", c->zones, c->nzones);
    jnum(w, "price", c->price);
    carp_jw_key(w, "requests");
    carp_resources_encode(w, &c->requests, NULL);
    carp_jw_key(w, "pods");
    carp_jw_arr(w);
    for (j = 0; j < c->npods; j++)
      carp_jw_str(w, c->pods[j]->meta.key);
    carp_jw_arr_end(w);
    carp_jw_obj_end(w);
  }
  carp_jw_arr_end(w);
  carp_jw_key(w, "existingCapacity");
  carp_jw_arr(w);
  for (i = 0; i < s->nplaced; i++) {
    carp_jw_obj(w);
    carp_jw_kstr(w, "pod", s->placed[i].pod->meta.key);
    carp_jw_kstr(w, s->placed[i].in_flight ? "nodeClaim" : "node",
                 s->placed[i].target);
    carp_jw_obj_end(w);
  }
  carp_jw_arr_end(w);
  carp_jw_key(w, "unschedulable");
  carp_jw_arr(w);
  for (i = 0; i < s->nunplaced && i < MAX_LINES_SHOWN; i++) {
    const struct sim_unplaced *u = &s->unplaced[i];
    carp_jw_obj(w);
    carp_jw_kstr(w, "pod", u->pod->meta.key);
    carp_jw_kstr(w, "message", u->message);
    carp_jw_key(w, "refusals");
    carp_jw_arr(w);
    for (j = 0; j < u->nrefusals; j++) {
      carp_jw_obj(w);
      carp_jw_kstr(w, "nodePool", u->refusals[j].nodepool);
      carp_jw_kstr(w, "reason", u->refusals[j].reason);
      carp_jw_kstr(w, "detail", u->refusals[j].detail);
      carp_jw_kstr(w, "message", u->refusals[j].message);
      carp_jw_obj_end(w);
    }
    carp_jw_arr_end(w);
    carp_jw_obj_end(w);
  }
  carp_jw_arr_end(w);
  carp_jw_obj_end(w);
}

static void repl_json(struct carp_jw *w, const struct sim_repl *r)
{
  carp_jw_obj(w);
  carp_jw_kstr(w, "nodePool", r->pool);
  jstrs(w, "instanceTypes", r->types, r->ntypes);
  jnum(w, "price", r->price);
  carp_jw_obj_end(w);
}

static void consolidation_json(const struct carp_simulation *s,
                               struct carp_jw *w)
{
  size_t i;
  carp_jw_key(w, "consolidation");
  carp_jw_obj(w);
  carp_jw_kstr(w, "decision", action_name(s->decision));
  jopt(w, "method", s->method);
  jopt(w, "reason", s->reason);
  jopt(w, "why", s->decision == SIM_KEEP ? s->decision_why : NULL);
  jnum(w, "savings", s->savings);
  /* replacement: the first (kept for scripts written when there was only
   * one); replacements: every one. */
  carp_jw_key(w, "replacement");
  if (s->decision == SIM_REPLACE && s->nrepls)
    repl_json(w, &s->repls[0]);
  else
    carp_jw_null(w);
  carp_jw_key(w, "replacements");
  carp_jw_arr(w);
  for (i = 0; s->decision == SIM_REPLACE && i < s->nrepls; i++)
    repl_json(w, &s->repls[i]);
  carp_jw_arr_end(w);
  carp_jw_key(w, "nodes");
  carp_jw_arr(w);
  for (i = 0; i < s->nnodes; i++) {
    const struct sim_node *e = &s->nodes[i];
    carp_jw_obj(w);
    jopt(w, "nodeClaim", e->nodeclaim);
    jopt(w, "node", e->node);
    jopt(w, "nodePool", e->nodepool);
    jopt(w, "instanceType", e->instance_type);
    jopt(w, "zone", e->zone);
    jnum(w, "price", e->price);
    carp_jw_kint(w, "pods", (int64_t)e->pods);
    carp_jw_kstr(w, "action", action_name(e->action));
    carp_jw_kstr(w, "why", e->why);
    carp_jw_obj_end(w);
  }
  carp_jw_arr_end(w);
  carp_jw_obj_end(w);
}

void carp_simulation_report_json(const struct carp_simulation *s,
                                 struct carp_buf *b)
{
  struct carp_jw w;
  char t[CARP_RFC3339_LEN];
  double added = 0;
  size_t i;
  carp_jw_init(&w, b);
  yajl_gen_config(w.gen, yajl_gen_beautify, 1);
  yajl_gen_config(w.gen, yajl_gen_indent_string, "  ");
  carp_jw_obj(&w);
  jstrs(&w, "files", s->files, s->nfiles);
  carp_jw_key(&w, "objects");
  carp_jw_obj(&w);
  for (i = 0; i < 7; i++)
    carp_jw_kint(&w, kind_names[i], (int64_t)s->counts[i]);
  carp_jw_obj_end(&w);
  carp_time_format_rfc3339(s->now_ms, 0, t);
  carp_jw_kstr(&w, "time", t);
  jstrs(&w, "warnings", s->warnings, s->nwarnings);
  provisioning_json(s, &w);
  consolidation_json(s, &w);
  for (i = 0; i < s->nclaims; i++)
    added += s->claims[i].price;
  carp_jw_key(&w, "price");
  carp_jw_obj(&w);
  jnum(&w, "before", s->price_before);
  jnum(&w, "newNodeClaims", added);
  jnum(&w, "consolidationSavings", s->savings);
  jnum(&w, "after", s->price_after);
  carp_jw_obj_end(&w);
  carp_jw_obj_end(&w);
  carp_jw_finish(&w);
  carp_buf_putc(b, '\n');
}
