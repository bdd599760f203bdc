/* A decoded Pod, Node or DaemonSet (or the error that refused it) written
 * out as text, field by field: what test_decode_same compares between
 * decoding paths, and what test/unit/data/decode_golden.txt holds as the
 * tree decoders' output from before decoding went without trees. Only
 * fields that both the old and the new structs have are written, so the
 * same file builds against either (see the top of test_decode_same.c). */
#ifndef CARP_DECODE_DESCRIBE_H
#define CARP_DECODE_DESCRIBE_H

#include <stdio.h>

#include "carpenter/api.h"

static void dd_str(FILE *f, const char *name, const char *s)
{
  fprintf(f, " %s=%s", name, s ? s : "(null)");
}

static void dd_kvset(FILE *f, const char *name, const struct carp_kvset *s)
{
  uint32_t i;
  fprintf(f, " %s={", name);
  for (i = 0; s && i < s->n; i++)
    fprintf(f, "%s%s:%s", i ? "," : "", s->kv[i].key, s->kv[i].value);
  fprintf(f, "}");
}

static void dd_res(FILE *f, const char *name, const struct carp_resources *r)
{
  uint32_t i;
  fprintf(f, " %s=[cpu=%lld mem=%lld eph=%lld pods=%lld", name,
          (long long)r->cpu, (long long)r->memory, (long long)r->ephemeral,
          (long long)r->pods);
  for (i = 0; i < r->nextended; i++)
    fprintf(f, " %s=%lld", r->extended[i].name,
            (long long)r->extended[i].value);
  fprintf(f, "]");
}

static void dd_reqs(FILE *f, const struct carp_requirement *r, uint32_t n)
{
  uint32_t i, j;
  fprintf(f, "(");
  for (i = 0; i < n; i++) {
    fprintf(f, "%s%s op%d min%d:", i ? ";" : "", r[i].key, (int)r[i].op,
            (int)r[i].min_values);
    for (j = 0; j < r[i].nvalues; j++)
      fprintf(f, "%s%s", j ? "," : "", r[i].values[j]);
  }
  fprintf(f, ")");
}

static void dd_selector(FILE *f, const struct carp_label_selector *s)
{
  fprintf(f, " sel%d", s->present);
  dd_kvset(f, "ml", s->match_labels);
  dd_reqs(f, s->exprs, s->nexprs);
}

static void dd_terms(FILE *f, const char *name,
                     const struct carp_pod_affinity_term *t, uint32_t n)
{
  uint32_t i, j;
  fprintf(f, "\n  %s:", name);
  for (i = 0; i < n; i++) {
    fprintf(f, " {w=%d tk=%s all=%d ns=", (int)t[i].weight, t[i].topology_key,
            t[i].all_namespaces);
    for (j = 0; j < t[i].nnamespaces; j++)
      fprintf(f, "%s%s", j ? "," : "", t[i].namespaces[j]);
    dd_selector(f, &t[i].selector);
    fprintf(f, "}");
  }
}

static void dd_spec(FILE *f, const struct carp_podspec *s)
{
  uint32_t i, j;
  if (!s) {
    fprintf(f, "\n  spec=(null)");
    return;
  }
  fprintf(f, "\n ");
  dd_res(f, "requests", &s->requests);
  dd_kvset(f, "nodeSelector", s->node_selector);
  fprintf(f, "\n  required:");
  for (i = 0; i < s->nrequired; i++)
    dd_reqs(f, s->required[i].reqs, s->required[i].n);
  fprintf(f, "\n  preferred:");
  for (i = 0; i < s->npreferred; i++) {
    fprintf(f, " %d", (int)s->preferred[i].weight);
    dd_reqs(f, s->preferred[i].term.reqs, s->preferred[i].term.n);
  }
  dd_terms(f, "affinity", s->affinity, s->naffinity);
  dd_terms(f, "anti", s->anti_affinity, s->nanti_affinity);
  dd_terms(f, "prefAffinity", s->pref_affinity, s->npref_affinity);
  dd_terms(f, "prefAnti", s->pref_anti_affinity, s->npref_anti_affinity);
  fprintf(f, "\n  tolerations:");
  for (i = 0; i < s->ntolerations; i++)
    fprintf(f, " {%s ex%d %s e%d s%lld}", s->tolerations[i].key,
            s->tolerations[i].exists,
            s->tolerations[i].value ? s->tolerations[i].value : "(null)",
            (int)s->tolerations[i].effect,
            (long long)s->tolerations[i].seconds);
  fprintf(f, "\n  spreads:");
  for (i = 0; i < s->nspreads; i++) {
    const struct carp_spread *p = &s->spreads[i];
    fprintf(f, " {skew=%d tk=%s when=%d min=%d hna=%d hnt=%d mlk=",
            (int)p->max_skew, p->topology_key, (int)p->when,
            (int)p->min_domains, p->honor_node_affinity, p->honor_node_taints);
    for (j = 0; j < p->nmatch_label_keys; j++)
      fprintf(f, "%s%s", j ? "," : "", p->match_label_keys[j]);
    dd_selector(f, &p->selector);
    fprintf(f, "}");
  }
  fprintf(f, "\n  hostPorts:");
  for (i = 0; i < s->nhost_ports; i++)
    fprintf(f, " %d/%s/%s", (int)s->host_ports[i].port,
            s->host_ports[i].protocol, s->host_ports[i].host_ip);
  fprintf(f, "\n  prio=%d", (int)s->priority);
  dd_str(f, "pc", s->priority_class);
  dd_str(f, "sched", s->scheduler_name);
  fprintf(f, " grace=%lld pvc=%d", (long long)s->grace_seconds, s->has_pvc);
}

static void dd_meta(FILE *f, const struct carp_objmeta *m)
{
  fprintf(f, " key=%s", m->key);
  dd_str(f, "ns", m->namespace);
  dd_str(f, "name", m->name);
  dd_str(f, "uid", m->uid);
  dd_str(f, "rv", m->resource_version);
  fprintf(f, " gen=%lld created=%lld deleted=%lld", (long long)m->generation,
          (long long)m->creation_ms, (long long)m->deletion_ms);
  fprintf(f, "\n ");
  dd_kvset(f, "labels", m->labels);
  dd_kvset(f, "annotations", m->annotations);
  dd_kvset(f, "finalizers", m->finalizers);
  fprintf(f, "\n  owner:");
  dd_str(f, "av", m->owner.api_version);
  dd_str(f, "kind", m->owner.kind);
  dd_str(f, "name", m->owner.name);
  dd_str(f, "uid", m->owner.uid);
  fprintf(f, " ctl=%d", m->owner.controller);
}

/* rc and err as the kind's decode left them. */
static void dd_object(FILE *f, const char *kind, int rc,
                      const struct carp_objmeta *m, const char *err)
{
  uint32_t i;
  if (rc) {
    fprintf(f, "%s error rc=%d: %s\n", kind, rc, err ? err : "(none)");
    return;
  }
  fprintf(f, "%s", kind);
  dd_meta(f, m);
  if (!strcmp(kind, "Pod")) {
    const struct carp_pod *p = (const struct carp_pod *)m;
    fprintf(f, "\n ");
    dd_str(f, "node", p->node_name);
    dd_str(f, "nominated", p->nominated_node);
    fprintf(f,
            " phase=%d unsched=%d gated=%d ready=%d unsched_ms=%lld "
            "sched_ms=%lld ready_ms=%lld start_ms=%lld pvcs=",
            (int)p->phase, p->unschedulable, p->scheduling_gated, p->ready,
            (long long)p->unschedulable_ms, (long long)p->scheduled_ms,
            (long long)p->ready_ms, (long long)p->start_ms);
    for (i = 0; i < p->npvcs; i++)
      fprintf(f, "%s%s", i ? "," : "", p->pvcs[i]);
    dd_spec(f, p->spec);
  } else if (!strcmp(kind, "Node")) {
    const struct carp_node *n = (const struct carp_node *)m;
    fprintf(f, "\n ");
    dd_str(f, "providerID", n->provider_id);
    fprintf(f, " unsched=%d ready=%d/%lld/%lld taints=", n->unschedulable,
            n->ready.status, (long long)n->ready.transition_ms,
            (long long)n->ready.heartbeat_ms);
    for (i = 0; i < n->ntaints; i++)
      fprintf(f, "%s%s=%s:%d", i ? "," : "", n->taints[i].key,
              n->taints[i].value, (int)n->taints[i].effect);
    fprintf(f, "\n ");
    dd_res(f, "capacity", &n->capacity);
    dd_res(f, "allocatable", &n->allocatable);
  } else {
    const struct carp_daemonset *d = (const struct carp_daemonset *)m;
    fprintf(f, "\n ");
    dd_kvset(f, "templateLabels", d->template_labels);
    dd_spec(f, d->spec);
  }
  fprintf(f, "\n");
}

#endif
