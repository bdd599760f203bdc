/* informer_probe: runs informers against an API server and answers
 * commands on stdin, so integration tests can compare the cache with the
 * server after injecting faults.
 *
 *   informer_probe KUBECONFIG KIND...   (KIND: pods, nodes, pdbs,
 *                                        daemonsets; or pods-scan: the
 *                                        pods' list pages fetched the same
 *                                        way and only run through yajl's
 *                                        parser, the floor a cold sync's
 *                                        decoding is measured against)
 *   stdin "dump\n"  -> one line "kind key resourceVersion" per cached
 *                      object, then "end"
 *   stdin "stats\n" -> "stats kind lists watches events decode_errors synced"
 *                      (pods-scan: "stats pods-scan pages bytes 0 0 done")
 *   stdin "rss\n"   -> "rss <VmRSS kB> <VmHWM kB> <ms since start>"
 *   stdin "quit\n"  -> closes everything and exits 0 (uv_loop_close == 0)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "carpenter/alloc.h"
#include "carpenter/api.h"
#include "carpenter/error.h"
#include "carpenter/http.h"
#include "carpenter/informer.h"
#include "carpenter/jdec.h"
#include "carpenter/kube.h"
#include "carpenter/kubeconfig.h"
#include "carpenter/log.h"

/* pods-scan: the list's pages, parsed for their continue token only. */
struct scan {
  int on;
  struct carp_jdec d;
  char *cont;
  uint64_t pages, bytes;
  int done;
};

struct probe {
  uv_loop_t loop;
  uv_pipe_t in;
  struct carp_kube *kube;
  struct scan scan;
  struct carp_informer *inf[4];
  const char *names[4];
  int n;
  int closing;
  char line[256];
  size_t len;
  uint64_t started;
};

static void on_kube_closed(void *arg)
{
  (void)arg;
}

static void on_inf_closed(void *arg)
{
  struct probe *p = arg;
  if (--p->n == 0)
    carp_kube_close(p->kube, on_kube_closed, p);
}

/* ---- pods-scan ---- */

static int scan_meta(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  struct scan *sc = ctx;
  if (carp_jdec_field(d) == 0 && v->type == CARP_JSTRING && v->len)
    sc->cont = carp_strdup(v->s);
  return 0;
}

static int scan_page(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  static const char *const keys[] = {"continue", NULL};
  if (carp_jdec_field(d) == 0 && v->type == CARP_JOBJECT)
    carp_jdec_enter(d, scan_meta, ctx, keys);
  return 0;
}

static int scan_root(struct carp_jdec *d, void *ctx, const struct carp_jval *v)
{
  static const char *const keys[] = {"metadata", NULL};
  if (v->type == CARP_JOBJECT)
    carp_jdec_enter(d, scan_page, ctx, keys);
  return 0;
}

static void scan_next(struct probe *p);

static void on_scan_page(const struct carp_kube_result *res, void *arg)
{
  struct probe *p = arg;
  struct scan *sc = &p->scan;
  if (res->err) {
    if (res->err != CARP_ECANCELED)
      fprintf(stderr, "pods-scan: %s\n", res->message);
    return;
  }
  CARP_FREE(&sc->cont);
  carp_jdec_parse(&sc->d, res->raw, res->raw_len, NULL);
  sc->pages++;
  sc->bytes += res->raw_len;
  if (sc->cont)
    scan_next(p);
  else
    sc->done = 1;
}

static void scan_next(struct probe *p)
{
  struct carp_buf q;
  struct carp_kube_request r;
  carp_buf_init(&q, 64 * 1024);
  carp_buf_puts(&q, "limit=500");
  if (p->scan.cont) {
    carp_buf_puts(&q, "&continue=");
    carp_http_escape(&q, p->scan.cont);
  }
  memset(&r, 0, sizeof(r));
  r.method = "GET";
  r.path = "/api/v1/pods";
  r.query = carp_buf_cstr(&q);
  r.timeout_ms = 120 * 1000;
  r.raw_body = 1;
  carp_kube_call(p->kube, &r, on_scan_page, p, NULL);
  carp_buf_free(&q);
}

static void print_rss(struct probe *p)
{
  char line[256];
  long rss = -1, hwm = -1;
  FILE *f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof(line), f)) {
    if (!strncmp(line, "VmRSS:", 6))
      rss = strtol(line + 6, NULL, 10);
    else if (!strncmp(line, "VmHWM:", 6))
      hwm = strtol(line + 6, NULL, 10);
  }
  if (f)
    fclose(f);
  printf("rss %ld %ld %llu\nend\n", rss, hwm,
         (unsigned long long)(uv_now(&p->loop) - p->started));
}

static void command(struct probe *p, const char *cmd)
{
  int i;
  if (!strcmp(cmd, "rss")) {
    uv_update_time(&p->loop);
    print_rss(p);
    fflush(stdout);
    return;
  }
  if (!strcmp(cmd, "dump")) {
    for (i = 0; i < p->n; i++) {
      struct carp_store_iter it;
      struct carp_objmeta *m;
      carp_store_iter_init(&it);
      while ((m = carp_store_next(carp_informer_store(p->inf[i]), &it)))
        printf("%s %s %s\n", p->names[i], m->key, m->resource_version);
    }
    printf("end\n");
  } else if (!strcmp(cmd, "stats")) {
    for (i = 0; i < p->n; i++) {
      struct carp_informer_stats s;
      carp_informer_stats(p->inf[i], &s);
      printf("stats %s %llu %llu %llu %llu %d\n", p->names[i],
             (unsigned long long)s.lists, (unsigned long long)s.watches,
             (unsigned long long)s.events, (unsigned long long)s.decode_errors,
             carp_informer_synced(p->inf[i]));
    }
    if (p->scan.on)
      printf("stats pods-scan %llu %llu 0 0 %d\n",
             (unsigned long long)p->scan.pages,
             (unsigned long long)p->scan.bytes, p->scan.done);
    printf("end\n");
  } else if (!strcmp(cmd, "quit") && !p->closing) {
    int n = p->n;
    p->closing = 1;
    uv_close((uv_handle_t *)&p->in, NULL);
    for (i = 0; i < n; i++)
      carp_informer_close(p->inf[i], on_inf_closed, p);
    if (n == 0)
      carp_kube_close(p->kube, on_kube_closed, p);
  }
  fflush(stdout);
}

static void on_alloc(uv_handle_t *h, size_t s, uv_buf_t *b)
{
  static char buf[4096];
  (void)h;
  (void)s;
  *b = uv_buf_init(buf, sizeof(buf));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
  struct probe *p = s->data;
  ssize_t i;
  if (n < 0) {
    command(p, "quit");
    return;
  }
  for (i = 0; i < n; i++) {
    char c = b->base[i];
    if (c == '\n') {
      p->line[p->len] = '\0';
      command(p, p->line);
      p->len = 0;
    } else if (p->len + 1 < sizeof(p->line)) {
      p->line[p->len++] = c;
    }
  }
}

static const struct carp_kind *kind_of(const char *name)
{
  if (!strcmp(name, "pods"))
    return &carp_kind_pod;
  if (!strcmp(name, "nodes"))
    return &carp_kind_node;
  if (!strcmp(name, "pdbs"))
    return &carp_kind_pdb;
  if (!strcmp(name, "daemonsets"))
    return &carp_kind_daemonset;
  return NULL;
}

int main(int argc, char **argv)
{
  struct probe p;
  struct carp_kube_config cfg;
  struct carp_kube_options ko;
  char *err = NULL;
  int i, rc;

  memset(&p, 0, sizeof(p));
  if (argc < 3) {
    fprintf(stderr, "usage: informer_probe KUBECONFIG KIND...\n");
    return 2;
  }
  carp_log_set_level(getenv("PROBE_DEBUG") ? CARP_LOG_DEBUG : CARP_LOG_WARN);
  if (carp_kube_config_load(argv[1], NULL, &cfg, &err)) {
    fprintf(stderr, "%s\n", err);
    return 2;
  }
  carp_http_global_init();
  uv_loop_init(&p.loop);
  memset(&ko, 0, sizeof(ko));
  ko.config = &cfg;
  ko.qps = 1000;
  ko.burst = 1000;
  rc = carp_kube_new(&p.loop, &ko, &p.kube);
  carp_kube_config_free(&cfg);
  if (rc)
    return 1;
  for (i = 2; i < argc && p.n < 4; i++) {
    struct carp_informer_options io;
    const struct carp_kind *k = kind_of(argv[i]);
    if (!strcmp(argv[i], "pods-scan")) {
      p.scan.on = 1;
      continue;
    }
    if (!k) {
      fprintf(stderr, "unknown kind %s\n", argv[i]);
      return 2;
    }
    memset(&io, 0, sizeof(io));
    io.kind = k;
    io.min_watch_seconds = 5; /* exercise rewatching in tests */
    io.max_watch_seconds = 10;
    carp_informer_new(&p.loop, p.kube, &io, &p.inf[p.n]);
    p.names[p.n++] = argv[i];
  }
  p.started = uv_now(&p.loop);
  for (i = 0; i < p.n; i++)
    carp_informer_start(p.inf[i]);
  if (p.scan.on) {
    carp_jdec_init(&p.scan.d, scan_root, &p.scan);
    scan_next(&p);
  }
  uv_pipe_init(&p.loop, &p.in, 0);
  uv_pipe_open(&p.in, 0);
  p.in.data = &p;
  uv_read_start((uv_stream_t *)&p.in, on_alloc, on_read);
  uv_run(&p.loop, UV_RUN_DEFAULT);
  rc = uv_loop_close(&p.loop);
  carp_http_global_cleanup();
  carp_jdec_free(&p.scan.d);
  carp_free(p.scan.cont);
  if (rc) {
    fprintf(stderr, "handles left open\n");
    return 1;
  }
  return 0;
}
