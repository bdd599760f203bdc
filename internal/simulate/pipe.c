/* pipe.c: parsing and decoding a snapshot side by side.
 *
 * Of the time a large snapshot takes to load, about 40 % is parsing the
 * text and 60 % decoding the objects into the caches. Decoding must stay
 * on one thread (it interns strings into tables shared with the caches),
 * but parsing needs nothing shared: a second thread parses (tree.c) into
 * batches and queues them, and the calling thread decodes each as it
 * comes, in file order. At most MAX_BATCHES exist, so memory stays at
 * about a megabyte whatever the file's size - small on purpose: the
 * decoder then reads each tree soon after it was written, while it is
 * still in the cache the cores share (16 batches of 1 MB made loading
 * 150,000 pods 0.2 s slower, most of the decoder's time in misses on the
 * trees). When decoding fails the parser
 * is told to stop; when parsing fails the batches before the error are
 * still decoded first, so the first problem in the file is the one
 * reported. Small files are parsed on the calling thread. */
#include <stdio.h>
#include <string.h>

#include <uv.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "sim_int.h"

#define THREADED_MIN (4 * 1024 * 1024) /* bytes of text */
#define MAX_BATCHES  4

struct pipe {
  const char *file, *text;
  size_t len;
  int json;
  sim_value_fn fn;
  void *arg;
  /* Shared between the threads, under mu. */
  uv_mutex_t mu;
  uv_cond_t cv;
  struct sim_batch *head, *tail; /* parsed, waiting to be decoded */
  struct sim_batch *spare;       /* decoded, to reuse */
  size_t nbatches;               /* in existence */
  int done;                      /* the parser has returned */
  int stop;                      /* the decoder wants no more */
  int parse_rc;
  char err[1024];
};

static int run_batch(struct pipe *p, struct sim_batch *b)
{
  size_t i;
  int rc = 0;
  for (i = 0; i < b->n && !rc; i++)
    rc = p->fn(&b->v[i], p->arg);
  return rc;
}

/* ---- on one thread ---- */

static int inline_take(struct sim_batch *b, void *arg)
{
  struct pipe *p = arg;
  int rc = run_batch(p, b);
  sim_batch_reset(b);
  b->next = p->spare;
  p->spare = b;
  return rc;
}

static struct sim_batch *inline_fresh(void *arg)
{
  struct pipe *p = arg;
  struct sim_batch *b = p->spare;
  if (!b)
    return sim_batch_new();
  p->spare = b->next;
  b->next = NULL;
  return b;
}

static int parse(struct pipe *p, const struct sim_sink *sink, char *err,
                 size_t errsz)
{
  struct sim_tree t;
  int rc;
  sim_tree_init(&t, p->file, sink);
  rc = p->json ? sim_read_json(&t, p->text, p->len, err, errsz)
               : sim_read_yaml(&t, p->text, p->len, err, errsz);
  /* The items complete before a syntax error still go first: a bad
   * object among them is the first problem of the file. */
  if (!rc || rc == CARP_EPARSE) {
    int frc = sim_tree_finish(&t);
    if (frc)
      rc = frc;
  }
  sim_tree_free(&t);
  return rc;
}

/* ---- on two threads ---- */

static int thread_take(struct sim_batch *b, void *arg)
{
  struct pipe *p = arg;
  int stop;
  uv_mutex_lock(&p->mu);
  stop = p->stop;
  if (stop) {
    b->next = p->spare;
    p->spare = b;
  } else {
    b->next = NULL;
    if (p->tail)
      p->tail->next = b;
    else
      p->head = b;
    p->tail = b;
    uv_cond_broadcast(&p->cv);
  }
  uv_mutex_unlock(&p->mu);
  return stop ? CARP_ECANCELED : 0;
}

static struct sim_batch *thread_fresh(void *arg)
{
  struct pipe *p = arg;
  struct sim_batch *b = NULL;
  uv_mutex_lock(&p->mu);
  while (!p->spare && p->nbatches >= MAX_BATCHES && !p->stop)
    uv_cond_wait(&p->cv, &p->mu);
  if (p->spare) {
    b = p->spare;
    p->spare = b->next;
    b->next = NULL;
  } else {
    p->nbatches++;
  }
  uv_mutex_unlock(&p->mu);
  return b ? b : sim_batch_new();
}

static void parser_thread(void *arg)
{
  struct pipe *p = arg;
  struct sim_sink sink = {thread_take, thread_fresh, p};
  char err[sizeof(p->err)];
  int rc;
  err[0] = '\0';
  rc = parse(p, &sink, err, sizeof(err));
  uv_mutex_lock(&p->mu);
  p->done = 1;
  p->parse_rc = rc;
  memcpy(p->err, err, sizeof(err));
  uv_cond_broadcast(&p->cv);
  uv_mutex_unlock(&p->mu);
}

static int decode_all(struct pipe *p)
{
  int rc = 0;
  for (;;) {
    struct sim_batch *b;
    uv_mutex_lock(&p->mu);
    while (!p->head && !p->done)
      uv_cond_wait(&p->cv, &p->mu);
    b = p->head;
    if (b) {
      p->head = b->next;
      if (!p->head)
        p->tail = NULL;
    }
    uv_mutex_unlock(&p->mu);
    if (!b)
      return 0;
    rc = run_batch(p, b);
    sim_batch_reset(b);
    uv_mutex_lock(&p->mu);
    b->next = p->spare;
    p->spare = b;
    if (rc)
      p->stop = 1;
    uv_cond_broadcast(&p->cv);
    uv_mutex_unlock(&p->mu);
    if (rc)
      return rc;
  }
}

static void free_list(struct sim_batch *b)
{
  while (b) {
    struct sim_batch *next = b->next;
    sim_batch_free(b);
    b = next;
  }
}

int sim_parse(const char *file, const char *text, size_t len, int json,
              sim_value_fn fn, void *arg, char *err, size_t errsz)
{
  struct pipe p;
  uv_thread_t th;
  int rc;
  memset(&p, 0, sizeof(p));
  p.file = file;
  p.text = text;
  p.len = len;
  p.json = json;
  p.fn = fn;
  p.arg = arg;
  if (len < THREADED_MIN) {
    struct sim_sink sink = {inline_take, inline_fresh, &p};
    rc = parse(&p, &sink, err, errsz);
    free_list(p.spare);
    return rc;
  }
  uv_mutex_init(&p.mu);
  uv_cond_init(&p.cv);
  if (uv_thread_create(&th, parser_thread, &p)) {
    struct sim_sink sink = {inline_take, inline_fresh, &p};
    uv_cond_destroy(&p.cv);
    uv_mutex_destroy(&p.mu);
    rc = parse(&p, &sink, err, errsz);
    free_list(p.spare);
    return rc;
  }
  rc = decode_all(&p);
  uv_thread_join(&th);
  if (!rc && p.parse_rc) {
    rc = p.parse_rc;
    snprintf(err, errsz, "%s", p.err);
  }
  free_list(p.head);
  free_list(p.spare);
  uv_cond_destroy(&p.cv);
  uv_mutex_destroy(&p.mu);
  return rc;
}
